//! Customer access's persistence (D8): one-time passcode challenges and customer sessions.
//! Codes and tokens are stored as keyed hashes only (the caller hashes them with the keyring).
//! A challenge is written in the same transaction as the passcode's notification when there is
//! one. The same challenges serve the reseller portal's sign-in and `otp/send` (D15.4, D16.16).
//! The rules (who gets a code, the limits, what a try opens) are `flows::customer_access`'s; a
//! try runs [`count_wrong_try`] or [`consume_challenge`] inside the transaction that writes what
//! it opens. Both are conditional updates, so a challenge is exchanged once and never tried
//! more than the allowed number of times, whatever the concurrency.
use sqlx::Row;

use super::notifications::{queue_notification, NewNotification};
use super::{Store, StoreError, StoreResult};

/// A challenge to write.
pub struct NewChallenge<'a> {
    pub id: &'a str,
    pub account_id: Option<&'a str>,
    pub campaign_id: Option<&'a str>,
    pub channel: &'a str,
    pub recipient: &'a str,
    pub purpose: &'a str,
    pub code_hash: &'a str,
    pub expires_at: i64,
}

#[derive(Debug, Clone)]
pub struct Challenge {
    pub id: String,
    pub account_id: Option<String>,
    pub campaign_id: Option<String>,
    pub recipient: String,
    pub purpose: String,
    pub code_hash: String,
    pub attempts: i64,
    pub expires_at: i64,
    pub consumed_at: Option<i64>,
}

/// The recipient's recent challenges, for the resend cooldown and the hourly cap.
#[derive(Debug, Clone, Copy)]
pub struct RecentSends {
    /// Challenges for this recipient and purpose in the account within the last hour.
    pub last_hour: i64,
    /// When the newest challenge for this campaign and recipient was made.
    pub newest_in_campaign: Option<i64>,
    /// When the oldest challenge of the last hour was made.
    pub oldest_in_hour: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct CustomerSession {
    pub account_id: String,
    pub campaign_id: String,
    pub email: String,
    pub expires_at: i64,
}

impl Store {
    /// Recent challenges of a recipient for `purpose` (D8.2 limits): in the account when one is
    /// given (my-tickets, `otp/send`), else wherever they were made (portal sign-in, whose
    /// answer must not depend on whether the e-mail belongs to a reseller). The cooldown looks
    /// at the newest challenge of `campaign_id` (my-tickets), or of any campaign when `None`.
    pub async fn recent_challenges(
        &self,
        account_id: Option<&str>,
        campaign_id: Option<&str>,
        purpose: &str,
        recipient: &str,
        now: i64,
    ) -> StoreResult<RecentSends> {
        let account_filter = if account_id.is_some() { " AND account_id = $6" } else { "" };
        let sql = format!(
            "SELECT COUNT(*) AS n, MIN(created_at) AS oldest, \
             MAX(CASE WHEN $1 = '' OR COALESCE(campaign_id, '') = $2 THEN created_at ELSE NULL END) AS newest \
             FROM otp_challenges WHERE purpose = $3 AND recipient = $4 AND created_at > $5{account_filter}"
        );
        let scope = campaign_id.unwrap_or("");
        let mut q = sqlx::query(&sql).bind(scope).bind(scope).bind(purpose).bind(recipient).bind(now - 3_600_000);
        if let Some(a) = account_id {
            q = q.bind(a);
        }
        let row = q.fetch_one(self.writer()).await?;
        Ok(RecentSends {
            last_hour: row.try_get("n")?,
            newest_in_campaign: row.try_get("newest")?,
            oldest_in_hour: row.try_get("oldest")?,
        })
    }

    /// Writes a challenge and, when a code is to be sent, its notification (one transaction).
    pub async fn create_challenge(
        &self,
        c: &NewChallenge<'_>,
        notify: Option<NewNotification<'_>>,
        now: i64,
    ) -> StoreResult<()> {
        let mut tx = self.writer().begin().await?;
        sqlx::query(
            "INSERT INTO otp_challenges (id, account_id, campaign_id, channel, recipient, purpose, code_hash, sent, \
             expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(c.id)
        .bind(c.account_id)
        .bind(c.campaign_id)
        .bind(c.channel)
        .bind(c.recipient)
        .bind(c.purpose)
        .bind(c.code_hash)
        .bind(i64::from(notify.is_some()))
        .bind(c.expires_at)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        if let (Some(n), Some(account)) = (notify, c.account_id) {
            queue_notification(&mut tx, account, &n, now).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// A challenge by id, of the account when one is given (callers check its `purpose`: a
    /// challenge opens only what it was made for, D16.16).
    pub async fn challenge(&self, account_id: Option<&str>, id: &str) -> StoreResult<Challenge> {
        let r = sqlx::query(
            "SELECT id, account_id, campaign_id, recipient, purpose, code_hash, attempts, expires_at, consumed_at \
             FROM otp_challenges WHERE id = $1 AND ($2 = '' OR account_id = $3)",
        )
        .bind(id)
        .bind(account_id.unwrap_or(""))
        .bind(account_id.unwrap_or(""))
        .fetch_optional(self.writer())
        .await?
        .ok_or(StoreError::NotFound("challenge"))?;
        Ok(Challenge {
            id: r.try_get("id")?,
            account_id: r.try_get("account_id")?,
            campaign_id: r.try_get("campaign_id")?,
            recipient: r.try_get("recipient")?,
            purpose: r.try_get("purpose")?,
            code_hash: r.try_get("code_hash")?,
            attempts: r.try_get("attempts")?,
            expires_at: r.try_get("expires_at")?,
            consumed_at: r.try_get("consumed_at")?,
        })
    }

    /// A live session by its token's hash (`None`: unknown or expired, 401).
    pub async fn customer_session(&self, token_hash: &str, now: i64) -> StoreResult<Option<(String, CustomerSession)>> {
        let row = sqlx::query(
            "SELECT token_hash, account_id, campaign_id, email, expires_at FROM customer_sessions \
             WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now)
        .fetch_optional(self.reader())
        .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some((
            r.try_get("token_hash")?,
            CustomerSession {
                account_id: r.try_get("account_id")?,
                campaign_id: r.try_get("campaign_id")?,
                email: r.try_get("email")?,
                expires_at: r.try_get("expires_at")?,
            },
        )))
    }
}

/// Counts a wrong code, unless the challenge is used up or has `max_attempts` tries already.
/// Returns whether it counted.
pub(crate) async fn count_wrong_try(conn: &mut sqlx::AnyConnection, id: &str, max_attempts: i64) -> StoreResult<bool> {
    let n = sqlx::query(
        "UPDATE otp_challenges SET attempts = attempts + 1 WHERE id = $1 AND attempts < $2 AND consumed_at IS NULL",
    )
    .bind(id)
    .bind(max_attempts)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// Consumes a challenge for a right code, unless it is used up or locked. Returns whether it
/// was consumed (by this call).
pub(crate) async fn consume_challenge(
    conn: &mut sqlx::AnyConnection,
    id: &str,
    max_attempts: i64,
    now: i64,
) -> StoreResult<bool> {
    let n = sqlx::query(
        "UPDATE otp_challenges SET consumed_at = $1 WHERE id = $2 AND attempts < $3 AND consumed_at IS NULL",
    )
    .bind(now)
    .bind(id)
    .bind(max_attempts)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// Opens a customer session (token stored hashed) for a consumed my-tickets challenge.
pub(crate) async fn insert_customer_session(
    conn: &mut sqlx::AnyConnection,
    token_hash: &str,
    s: &CustomerSession,
    challenge_id: &str,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO customer_sessions (token_hash, account_id, campaign_id, email, challenge_id, expires_at, \
         created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(token_hash)
    .bind(&s.account_id)
    .bind(&s.campaign_id)
    .bind(&s.email)
    .bind(challenge_id)
    .bind(s.expires_at)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

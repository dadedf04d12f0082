//! Campaigns of an account. Tenant-scoped: every method takes the account id first.
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::audit::{record, Audit};
use super::query::{contains_pattern, Arg, Filter};
use super::sqlite_read::{FromRow, Get};
use super::{unique_to_conflict, Store, StoreError, StoreResult, UpdateError};
pub use crate::domain::campaigns::Campaign;
use crate::domain::campaigns::{search_text, CampaignStatus, CampaignType};
use crate::domain::new_id;
use crate::domain::settings::NotificationsSettings;
use crate::domain::time::now_ms;

/// Which campaigns a list shows (D3.4 visibility plus the query filters).
#[derive(Debug, Default, Clone)]
pub struct CampaignQuery {
    pub search: Option<String>,
    pub status: Option<CampaignStatus>,
    /// Only this campaign (a campaign key).
    pub only_id: Option<String>,
    /// Only approved campaigns (browser keys).
    pub approved_only: bool,
    pub page: u32,
    pub limit: u32,
}

const COLUMNS: &str = "id, title, slug, description, campaign_type, status, start_date, end_date, vote_price, \
    verification_required, metadata, ticket_type_count, participant_count, created_at, updated_at";

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(what.to_string())
}

fn from_row(r: &AnyRow) -> StoreResult<Campaign> {
    Campaign::from_row(r)
}

impl FromRow for Campaign {
    fn from_row(r: &impl Get) -> StoreResult<Campaign> {
        let t: String = r.get("campaign_type")?;
        let s: String = r.get("status")?;
        let m: String = r.get("metadata")?;
        Ok(Campaign {
            id: r.get("id")?,
            title: r.get("title")?,
            slug: r.get("slug")?,
            description: r.get("description")?,
            campaign_type: CampaignType::parse("campaign_type", &t).map_err(|_| corrupt("campaign_type"))?,
            status: CampaignStatus::parse("status", &s).map_err(|_| corrupt("status"))?,
            start_date: r.get("start_date")?,
            end_date: r.get("end_date")?,
            vote_price: r.get("vote_price")?,
            verification_required: r.get::<i64>("verification_required")? != 0,
            metadata: serde_json::from_str(&m).map_err(|_| corrupt("metadata"))?,
            ticket_type_count: r.get("ticket_type_count")?,
            participant_count: r.get("participant_count")?,
            created_at: r.get("created_at")?,
            updated_at: r.get("updated_at")?,
        })
    }
}

/// The fields of a campaign an audit summary shows.
pub fn summary(c: &Campaign) -> Value {
    serde_json::json!({
        "title": c.title, "slug": c.slug, "campaign_type": c.campaign_type.as_str(), "status": c.status.as_str(),
        "start_date": c.start_date, "end_date": c.end_date, "vote_price": c.vote_price,
    })
}

impl Store {
    /// Creates a campaign. A slug made from the title gets `-2`, `-3`, … when taken (retrying
    /// if a concurrent create took the same one); a slug the caller chose that is taken is a
    /// conflict.
    pub async fn create_campaign(
        &self,
        account_id: &str,
        c: Campaign,
        slug_chosen: bool,
        audit: Audit<'_>,
    ) -> StoreResult<Campaign> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.try_create_campaign(account_id, c.clone(), slug_chosen, &audit).await {
                Err(StoreError::Conflict(_)) if !slug_chosen && attempt < 8 => continue,
                other => return other,
            }
        }
    }

    async fn try_create_campaign(
        &self,
        account_id: &str,
        mut c: Campaign,
        slug_chosen: bool,
        audit: &Audit<'_>,
    ) -> StoreResult<Campaign> {
        let mut tx = self.writer().begin().await?;
        if !slug_chosen {
            let taken: Vec<String> =
                sqlx::query("SELECT slug FROM campaigns WHERE account_id = $1 AND (slug = $2 OR slug LIKE $3)")
                    .bind(account_id)
                    .bind(&c.slug)
                    .bind(format!("{}-%", c.slug))
                    .fetch_all(&mut *tx)
                    .await?
                    .iter()
                    .map(|r| r.try_get("slug"))
                    .collect::<Result<_, _>>()?;
            let base = c.slug.clone();
            let mut n = 2;
            while taken.contains(&c.slug) {
                c.slug = format!("{base}-{n}");
                n += 1;
            }
        }
        let now = now_ms();
        c.id = new_id();
        c.created_at = now;
        c.updated_at = now;
        sqlx::query(
            "INSERT INTO campaigns (id, account_id, title, slug, search_text, description, campaign_type, status, start_date, end_date, \
             vote_price, verification_required, metadata, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14)",
        )
        .bind(&c.id)
        .bind(account_id)
        .bind(&c.title)
        .bind(&c.slug)
        .bind(search_text(&c.title, &c.slug))
        .bind(&c.description)
        .bind(c.campaign_type.as_str())
        .bind(c.status.as_str())
        .bind(c.start_date)
        .bind(c.end_date)
        .bind(c.vote_price)
        .bind(c.verification_required as i64)
        .bind(c.metadata.to_string())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|e| unique_to_conflict(e, "a campaign with this slug already exists"))?;
        let entry = Audit {
            entity_id: &c.id,
            summary: serde_json::json!({"after": summary(&c)}),
            request_id: audit.request_id.clone(),
            ..*audit
        };
        record(&mut tx, account_id, &entry).await?;
        tx.commit().await?;
        Ok(c)
    }

    pub async fn campaign(&self, account_id: &str, id: &str) -> StoreResult<Campaign> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM campaigns WHERE account_id = $1 AND id = $2"))
            .bind(account_id)
            .bind(id)
            .fetch_optional(self.reader())
            .await?
            .ok_or(StoreError::NotFound("campaign"))?;
        from_row(&row)
    }

    /// Whether the campaign exists and belongs to the account.
    pub async fn campaign_exists(&self, account_id: &str, campaign_id: &str) -> StoreResult<bool> {
        Ok(sqlx::query("SELECT 1 FROM campaigns WHERE account_id = $1 AND id = $2")
            .bind(account_id)
            .bind(campaign_id)
            .fetch_optional(self.reader())
            .await?
            .is_some())
    }

    /// A page of campaigns, newest first, with the total count.
    pub async fn list_campaigns(&self, account_id: &str, q: &CampaignQuery) -> StoreResult<(Vec<Campaign>, u64)> {
        let mut f = Filter::new();
        f.and("account_id = ?", Arg::Text(account_id.into()));
        if let Some(s) = q.search.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            f.and("search_text LIKE ? ESCAPE '\\'", Arg::Text(contains_pattern(&s.to_lowercase())));
        }
        if let Some(s) = q.status {
            f.and("status = ?", Arg::Text(s.as_str().into()));
        }
        if q.approved_only {
            f.and("status = ?", Arg::Text(CampaignStatus::Approved.as_str().into()));
        }
        if let Some(id) = &q.only_id {
            f.and("id = ?", Arg::Text(id.clone()));
        }
        self.page_of(COLUMNS, "FROM campaigns", "created_at DESC, id DESC", &f, (q.page, q.limit)).await
    }
}

/// Writes `after` over `before` in the caller's transaction, conditional on the row being
/// unchanged since `before` was read (its `updated_at` and counters): `Raced` when it was not,
/// so two concurrent updates cannot both pass the state machine from the same state.
pub(crate) async fn write_in(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    before: &Campaign,
    after: &Campaign,
) -> Result<(), UpdateError> {
    let n = sqlx::query(
        "UPDATE campaigns SET title = $1, slug = $2, search_text = $3, description = $4, campaign_type = $5, status = $6, \
         start_date = $7, end_date = $8, vote_price = $9, verification_required = $10, metadata = $11, updated_at = $12 \
         WHERE account_id = $13 AND id = $14 AND updated_at = $15 AND ticket_type_count = $16 AND participant_count = $17",
    )
    .bind(&after.title)
    .bind(&after.slug)
    .bind(search_text(&after.title, &after.slug))
    .bind(&after.description)
    .bind(after.campaign_type.as_str())
    .bind(after.status.as_str())
    .bind(after.start_date)
    .bind(after.end_date)
    .bind(after.vote_price)
    .bind(after.verification_required as i64)
    .bind(after.metadata.to_string())
    .bind(after.updated_at)
    .bind(account_id)
    .bind(&before.id)
    .bind(before.updated_at)
    .bind(before.ticket_type_count)
    .bind(before.participant_count)
    .execute(conn)
    .await
    .map_err(|e| unique_to_conflict(e, "a campaign with this slug already exists"))?
    .rows_affected();
    if n == 0 {
        return Err(UpdateError::Raced);
    }
    Ok(())
}

/// The account's `notifications.organizerEmail`, when set, in the caller's transaction (D13.2).
pub(crate) async fn organizer_email_in(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
) -> StoreResult<Option<String>> {
    let row = sqlx::query("SELECT config FROM settings WHERE account_id = $1 AND category = 'notifications'")
        .bind(account_id)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(row) = row else { return Ok(None) };
    let config: String = sqlx::Row::try_get(&row, "config")?;
    let config: serde_json::Value = serde_json::from_str(&config).unwrap_or_default();
    Ok(NotificationsSettings::from_value(&config).organizer_email)
}

/// Where a campaign's cancellation stands (D17.37): when it was first cancelled, and whether
/// its refunds were asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancellation {
    pub cancelled_at: Option<i64>,
    pub refunding: bool,
}

/// The campaign's cancellation, in the caller's transaction.
pub(crate) async fn cancellation_in(conn: &mut sqlx::AnyConnection, id: &str) -> StoreResult<Cancellation> {
    let row =
        sqlx::query("SELECT cancelled_at, cancel_refund FROM campaigns WHERE id = $1").bind(id).fetch_one(conn).await?;
    Ok(Cancellation {
        cancelled_at: row.try_get("cancelled_at")?,
        refunding: row.try_get::<i64, _>("cancel_refund")? != 0,
    })
}

/// Archives the campaign as cancelled (the first cancellation's time and reason are kept),
/// noting whether its refunds are asked for, in the caller's transaction.
pub(crate) async fn mark_cancelled(
    conn: &mut sqlx::AnyConnection,
    id: &str,
    reason: Option<&str>,
    refund: bool,
    updated_at: i64,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "UPDATE campaigns SET status = 'archived', cancelled_at = COALESCE(cancelled_at, $1), \
         cancel_reason = COALESCE(cancel_reason, $2), cancel_refund = $3, updated_at = $4 WHERE id = $5",
    )
    .bind(now)
    .bind(reason)
    .bind(i64::from(refund))
    .bind(updated_at)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// The account's campaign inside the caller's transaction, its row locked until that ends on
/// PostgreSQL (SQLite's one writer already holds it): a cancellation reads, decides and moves
/// it there (D17.37), so two at once cannot both answer what the row was before either.
pub(crate) async fn lock_in(tx: &mut super::StoreTx, account_id: &str, id: &str) -> StoreResult<Option<Campaign>> {
    let lock = if tx.backend() == super::Backend::Postgres { " FOR UPDATE" } else { "" };
    sqlx::query(&format!("SELECT {COLUMNS} FROM campaigns WHERE account_id = $1 AND id = $2{lock}"))
        .bind(account_id)
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// The account's campaign inside the caller's transaction (a cancellation reads and moves it
/// there, D17.37).
pub(crate) async fn read_in(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    id: &str,
) -> StoreResult<Option<Campaign>> {
    sqlx::query(&format!("SELECT {COLUMNS} FROM campaigns WHERE account_id = $1 AND id = $2"))
        .bind(account_id)
        .bind(id)
        .fetch_optional(conn)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

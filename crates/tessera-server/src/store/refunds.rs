//! Refunds and campaign cancellations (D17.33–38, D17.42): the rows and the statements the
//! refund flow (`flows::refunds`) runs in its transactions, each guarded in SQL so that it
//! happens once under any concurrency or crash: the claim on the payment
//! (`refund_claimed + X <= amount`, a conditional UPDATE: two refunds racing never exceed what
//! was paid), the voids (`status = 'valid' AND checked_in = 0`, returned: a check-in racing the
//! refund wins or loses whole), the ends (`... WHERE status = 'pending'`), and the reads a plan
//! is made from (the payment as it stands in the transaction, the available balance).
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::ledger::kind;
use super::live::{LiveEvent, LiveKind};
use super::payments::Transaction;
use super::{Store, StoreError, StoreResult, StoreTx};
use crate::domain::payments::{TransactionType, TxStatus};
use crate::domain::refunds::{Paid, PaidTicket, RefundStatus};

/// A stored refund.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refund {
    pub id: String,
    pub account_id: String,
    pub transaction_reference: String,
    pub provider: String,
    /// Pesewas.
    pub amount: i64,
    pub status: RefundStatus,
    pub reason: Option<String>,
    pub ticket_codes: Vec<String>,
    pub votes: i64,
    pub campaign_cancel: bool,
    pub provider_refund_id: Option<String>,
    pub provider_created: bool,
    pub failure_reason: Option<String>,
    pub provider_down_since: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, account_id, transaction_reference, provider, amount, status, reason, ticket_codes, votes, \
    campaign_cancel, provider_refund_id, provider_created, failure_reason, provider_down_since, created_at, updated_at";

fn from_row(r: &AnyRow) -> StoreResult<Refund> {
    let codes: String = r.try_get("ticket_codes")?;
    Ok(Refund {
        id: r.try_get("id")?,
        account_id: r.try_get("account_id")?,
        transaction_reference: r.try_get("transaction_reference")?,
        provider: r.try_get("provider")?,
        amount: r.try_get("amount")?,
        status: RefundStatus::from_stored(&r.try_get::<String, _>("status")?)
            .ok_or_else(|| StoreError::Corrupt("refund status".into()))?,
        reason: r.try_get("reason")?,
        ticket_codes: serde_json::from_str(&codes).map_err(|_| StoreError::Corrupt("refund ticket codes".into()))?,
        votes: r.try_get("votes")?,
        campaign_cancel: r.try_get::<i64, _>("campaign_cancel")? != 0,
        provider_refund_id: r.try_get("provider_refund_id")?,
        provider_created: r.try_get::<i64, _>("provider_created")? != 0,
        failure_reason: r.try_get("failure_reason")?,
        provider_down_since: r.try_get("provider_down_since")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Refund counters of a campaign (D17.37).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefundCounts {
    pub requested: i64,
    pub succeeded: i64,
    pub failed: i64,
}

/// What the account may spend now: settled entries, and every hold whatever its time (as
/// withdrawals count them).
pub(crate) async fn available(conn: &mut sqlx::AnyConnection, account_id: &str, now: i64) -> StoreResult<i64> {
    Ok(sqlx::query(
        "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS available FROM ledger_entries \
         WHERE account_id = $1 AND (settles_at <= $2 OR kind IN ($3, $4))",
    )
    .bind(account_id)
    .bind(crate::domain::time::now_ms().max(now))
    .bind(kind::WITHDRAWAL_HOLD)
    .bind(kind::REFUND_HOLD)
    .fetch_one(conn)
    .await?
    .try_get("available")?)
}

/// The payment as a refund sees it, with its tickets, in the caller's transaction.
pub(crate) async fn paid_in(conn: &mut sqlx::AnyConnection, t: &Transaction) -> StoreResult<(Paid, Vec<PaidTicket>)> {
    let vote_price: Option<i64> = sqlx::query("SELECT vote_price FROM campaigns WHERE id = $1")
        .bind(&t.campaign_id)
        .fetch_optional(&mut *conn)
        .await?
        .map(|r| r.try_get("vote_price"))
        .transpose()?
        .flatten();
    let votes_refunded: i64 = sqlx::query(
        "SELECT CAST(COALESCE(SUM(votes), 0) AS BIGINT) AS n FROM refunds \
         WHERE transaction_reference = $1 AND status IN ('pending', 'succeeded')",
    )
    .bind(&t.reference)
    .fetch_one(&mut *conn)
    .await?
    .try_get("n")?;
    let mut tickets = Vec::new();
    if t.transaction_type == TransactionType::Ticket {
        let rows = sqlx::query(
            "SELECT ticket_code, status, checked_in FROM tickets WHERE transaction_reference = $1 \
             ORDER BY created_at, ticket_code",
        )
        .bind(&t.reference)
        .fetch_all(&mut *conn)
        .await?;
        for r in &rows {
            tickets.push(PaidTicket {
                code: r.try_get("ticket_code")?,
                valid: r.try_get::<String, _>("status")? == "valid",
                checked_in: r.try_get::<i64, _>("checked_in")? != 0,
            });
        }
    }
    let paid = Paid {
        kind: t.transaction_type,
        // A payment flagged `mismatch` was never credited: nothing to give back from the balance.
        success: t.status == TxStatus::Success && t.credited,
        amount: t.amount,
        quantity: t.quantity,
        refund_claimed: t.refund_claimed,
        vote_price,
        votes_refunded,
    };
    Ok((paid, tickets))
}

/// Adds `delta` votes back to (or, negative, takes them from) the purchase's participant, and
/// tells the leaderboards (D17.5).
pub(crate) async fn take_back_votes(conn: &mut StoreTx, t: &Transaction, delta: i64, now: i64) -> StoreResult<()> {
    let Some(participant) = t.participant_id.as_deref().filter(|_| delta != 0) else { return Ok(()) };
    super::participants::add_votes(conn, participant, delta, now).await?;
    let event =
        LiveEvent { account_id: t.account_id.clone(), campaign_id: Some(t.campaign_id.clone()), kind: LiveKind::Votes };
    conn.publish(event).await
}

impl Store {
    /// The account's refund (another account's looks like none: 404).
    pub async fn refund(&self, account_id: &str, id: &str) -> StoreResult<Refund> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM refunds WHERE account_id = $1 AND id = $2"))
            .bind(account_id)
            .bind(id)
            .fetch_optional(self.reader())
            .await?
            .ok_or(StoreError::NotFound("refund"))?;
        from_row(&row)
    }

    /// A refund by id alone, for the refund worker (no tenant yet).
    pub async fn refund_by_id(&self, id: &str) -> StoreResult<Option<Refund>> {
        sqlx::query(&format!("SELECT {COLUMNS} FROM refunds WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.reader())
            .await?
            .as_ref()
            .map(from_row)
            .transpose()
    }

    /// The refunds of the account's payment, newest first (another account's payment: 404).
    pub async fn refunds_of(&self, account_id: &str, reference: &str) -> StoreResult<Vec<Refund>> {
        self.transaction(account_id, reference).await?;
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM refunds WHERE account_id = $1 AND transaction_reference = $2 \
             ORDER BY created_at DESC, id DESC"
        ))
        .bind(account_id)
        .bind(reference)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(from_row).collect()
    }

    /// The provider ids of a charge's refunds other than `except` (a refund step's `taken`,
    /// D18.2): one read, only the ids.
    pub async fn provider_refund_ids_of(&self, reference: &str, except: &str) -> StoreResult<Vec<String>> {
        let rows = sqlx::query(
            "SELECT provider_refund_id FROM refunds WHERE transaction_reference = $1 AND id <> $2 \
             AND provider_refund_id IS NOT NULL",
        )
        .bind(reference)
        .bind(except)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(|r| Ok(r.try_get::<String, _>("provider_refund_id")?)).collect()
    }

    /// The pending refunds of a charge (a refund callback names the charge, D17.36).
    pub async fn pending_refunds_of(&self, reference: &str) -> StoreResult<Vec<Refund>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM refunds WHERE transaction_reference = $1 AND status = 'pending' ORDER BY created_at"
        ))
        .bind(reference)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(from_row).collect()
    }

    /// The provider holds the refund: remembered, so later steps poll instead of creating.
    pub async fn mark_refund_created(&self, id: &str, provider_refund_id: Option<&str>, now: i64) -> StoreResult<()> {
        sqlx::query(
            "UPDATE refunds SET provider_created = 1, provider_refund_id = COALESCE($1, provider_refund_id), \
             provider_down_since = NULL, updated_at = $2 WHERE id = $3",
        )
        .bind(provider_refund_id)
        .bind(now)
        .bind(id)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// A provider call went unanswered: when the outage began (kept if already set).
    pub async fn note_refund_provider_down(&self, id: &str, now: i64) -> StoreResult<i64> {
        let row = sqlx::query(
            "UPDATE refunds SET provider_down_since = COALESCE(provider_down_since, $1) WHERE id = $2 \
             RETURNING provider_down_since",
        )
        .bind(now)
        .bind(id)
        .fetch_optional(self.writer())
        .await?;
        Ok(match row {
            Some(r) => r.try_get::<Option<i64>, _>("provider_down_since")?.unwrap_or(now),
            None => now,
        })
    }

    /// Refund counters of the campaign (D17.37): every refund of its payments.
    pub async fn refund_counts(&self, campaign_id: &str) -> StoreResult<RefundCounts> {
        let mut conn = self.reader().acquire().await?;
        counts_in(&mut conn, campaign_id).await
    }

    /// The campaign's counters when it has any to show: once cancelled, or once one of its
    /// payments has a refund. Other campaigns read as before, so that `campaign.status.updated`
    /// (the campaign as its GET shows it, D17.41) stays equal to the GET.
    pub async fn campaign_refunds(&self, campaign_id: &str) -> StoreResult<Option<RefundCounts>> {
        let mut conn = self.reader().acquire().await?;
        let cancelled = sqlx::query("SELECT cancelled_at FROM campaigns WHERE id = $1")
            .bind(campaign_id)
            .fetch_optional(&mut *conn)
            .await?
            .map(|r| r.try_get::<Option<i64>, _>("cancelled_at"))
            .transpose()?
            .flatten()
            .is_some();
        let counts = counts_in(&mut conn, campaign_id).await?;
        Ok((cancelled || counts.requested > 0).then_some(counts))
    }
}

/// Refund counters of the campaign, in the caller's connection.
pub(crate) async fn counts_in(conn: &mut sqlx::AnyConnection, campaign_id: &str) -> StoreResult<RefundCounts> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS requested, \
         CAST(COALESCE(SUM(CASE WHEN r.status = 'succeeded' THEN 1 ELSE 0 END), 0) AS BIGINT) AS succeeded, \
         CAST(COALESCE(SUM(CASE WHEN r.status = 'failed' THEN 1 ELSE 0 END), 0) AS BIGINT) AS failed \
         FROM refunds r JOIN transactions t ON t.reference = r.transaction_reference WHERE t.campaign_id = $1",
    )
    .bind(campaign_id)
    .fetch_one(conn)
    .await?;
    Ok(RefundCounts {
        requested: row.try_get("requested")?,
        succeeded: row.try_get("succeeded")?,
        failed: row.try_get("failed")?,
    })
}

/// A cancellation's refund that could not be filed: recorded `failed` with why, no effects.
pub(crate) async fn insert_failed(
    conn: &mut StoreTx,
    id: &str,
    t: &Transaction,
    amount: i64,
    reason: &str,
    why: &str,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO refunds (id, account_id, transaction_reference, provider, amount, status, reason, ticket_codes, \
         votes, campaign_cancel, failure_reason, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, 'failed', $6, '[]', 0, 1, $7, $8, $8)",
    )
    .bind(id)
    .bind(&t.account_id)
    .bind(&t.reference)
    .bind(t.provider.as_deref().unwrap_or(""))
    .bind(amount)
    .bind(reason)
    .bind(why)
    .bind(now)
    .execute(&mut **conn)
    .await?;
    Ok(())
}

/// A refund by id in the caller's transaction.
pub(crate) async fn read_in(conn: &mut sqlx::AnyConnection, id: &str) -> StoreResult<Option<Refund>> {
    sqlx::query(&format!("SELECT {COLUMNS} FROM refunds WHERE id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// Claims `amount` of the payment for a refund: `refund_claimed += amount`, only while the
/// payment is a credited success and the claims stay within what was paid. Returns whether it
/// did.
pub(crate) async fn claim_on_payment(
    conn: &mut sqlx::AnyConnection,
    reference: &str,
    amount: i64,
    now: i64,
) -> StoreResult<bool> {
    let claimed = sqlx::query(
        "UPDATE transactions SET refund_claimed = refund_claimed + $1, updated_at = $2 \
         WHERE reference = $3 AND status = 'success' AND credited = 1 AND refund_claimed + $1 <= amount",
    )
    .bind(amount)
    .bind(now)
    .bind(reference)
    .execute(conn)
    .await?
    .rows_affected();
    Ok(claimed == 1)
}

/// A payment's refund figure that a refund's end moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PaymentFigure {
    /// `refund_claimed`: what pending and succeeded refunds claim (a failure gives it back).
    Claimed,
    /// `refunded`: what succeeded refunds gave back.
    Refunded,
}

/// Adds `delta` (negative: takes it off) to the payment's refund `figure`.
pub(crate) async fn add_to_payment(
    conn: &mut sqlx::AnyConnection,
    reference: &str,
    figure: PaymentFigure,
    delta: i64,
    now: i64,
) -> StoreResult<()> {
    let sql = match figure {
        PaymentFigure::Claimed => {
            "UPDATE transactions SET refund_claimed = refund_claimed + $1, updated_at = $2 WHERE reference = $3"
        }
        PaymentFigure::Refunded => {
            "UPDATE transactions SET refunded = refunded + $1, updated_at = $2 WHERE reference = $3"
        }
    };
    sqlx::query(sql).bind(delta).bind(now).bind(reference).execute(conn).await?;
    Ok(())
}

/// Voids those of `codes` among the payment's tickets that are still valid and not checked in,
/// for refund `refund_id`. Returns the codes it voided.
pub(crate) async fn void_tickets(
    conn: &mut sqlx::AnyConnection,
    refund_id: &str,
    t: &Transaction,
    codes: &[String],
) -> StoreResult<Vec<String>> {
    if codes.is_empty() {
        return Ok(Vec::new());
    }
    let list: Vec<String> = (0..codes.len()).map(|i| format!("${}", i + 4)).collect();
    let sql = format!(
        "UPDATE tickets SET status = 'void', void_refund_id = $1 WHERE transaction_reference = $2 \
         AND account_id = $3 AND status = 'valid' AND checked_in = 0 AND ticket_code IN ({}) RETURNING ticket_code",
        list.join(", ")
    );
    let mut q = sqlx::query(&sql).bind(refund_id).bind(&t.reference).bind(&t.account_id);
    for c in codes {
        q = q.bind(c);
    }
    let mut voided = Vec::new();
    for r in q.fetch_all(conn).await? {
        voided.push(r.try_get("ticket_code")?);
    }
    Ok(voided)
}

/// Makes the tickets a failed refund voided valid again.
pub(crate) async fn restore_tickets(conn: &mut sqlx::AnyConnection, refund_id: &str) -> StoreResult<()> {
    sqlx::query("UPDATE tickets SET status = 'valid', void_refund_id = NULL WHERE void_refund_id = $1")
        .bind(refund_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Adds `delta` (negative: takes it off) to the refunded amount of the purchase's donation; a
/// purchase without a donation row is left as it is.
pub(crate) async fn add_donation_refunded(
    conn: &mut sqlx::AnyConnection,
    reference: &str,
    delta: i64,
) -> StoreResult<()> {
    sqlx::query("UPDATE donations SET refunded = refunded + $1 WHERE transaction_reference = $2")
        .bind(delta)
        .bind(reference)
        .execute(conn)
        .await?;
    Ok(())
}

/// Inserts a `pending` refund (`idempotency_key`: the key it was asked under, if any).
pub(crate) async fn insert(
    conn: &mut sqlx::AnyConnection,
    refund: &Refund,
    idempotency_key: Option<&str>,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO refunds (id, account_id, transaction_reference, provider, amount, status, reason, ticket_codes, \
         votes, campaign_cancel, idempotency_key, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $9, $10, $11, $11)",
    )
    .bind(&refund.id)
    .bind(&refund.account_id)
    .bind(&refund.transaction_reference)
    .bind(&refund.provider)
    .bind(refund.amount)
    .bind(&refund.reason)
    .bind(Value::from(refund.ticket_codes.clone()).to_string())
    .bind(refund.votes)
    .bind(i64::from(refund.campaign_cancel))
    .bind(idempotency_key)
    .bind(refund.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Moves the refund `pending → succeeded`, once. Returns the refund as it now is when this call
/// moved it.
pub(crate) async fn mark_succeeded(conn: &mut sqlx::AnyConnection, id: &str, now: i64) -> StoreResult<Option<Refund>> {
    let Some(r) = read_in(conn, id).await? else { return Ok(None) };
    let moved = sqlx::query(
        "UPDATE refunds SET status = 'succeeded', provider_down_since = NULL, updated_at = $1 \
         WHERE id = $2 AND status = 'pending'",
    )
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?
    .rows_affected();
    Ok((moved == 1).then_some(Refund { status: RefundStatus::Succeeded, updated_at: now, ..r }))
}

/// Moves the refund `pending → failed` with why, once. Returns the refund as it was read when
/// this call moved it.
pub(crate) async fn mark_failed(
    conn: &mut sqlx::AnyConnection,
    id: &str,
    why: &str,
    now: i64,
) -> StoreResult<Option<Refund>> {
    let Some(r) = read_in(conn, id).await? else { return Ok(None) };
    let moved = sqlx::query(
        "UPDATE refunds SET status = 'failed', failure_reason = $1, updated_at = $2 WHERE id = $3 AND status = 'pending'",
    )
    .bind(why)
    .bind(now)
    .bind(id)
    .execute(conn)
    .await?
    .rows_affected();
    Ok((moved == 1).then_some(r))
}

/// A campaign whose cancellation asked for refunds: its account and the refunds' reason.
#[derive(Debug, Clone)]
pub struct CancelFiling {
    pub account_id: String,
    pub reason: String,
}

/// The campaign's cancellation refunds to file, when it asked for them, in the caller's
/// transaction.
pub(crate) async fn cancel_filing_in(
    conn: &mut sqlx::AnyConnection,
    campaign_id: &str,
) -> StoreResult<Option<CancelFiling>> {
    let Some(row) = sqlx::query("SELECT account_id, cancel_reason, cancel_refund FROM campaigns WHERE id = $1")
        .bind(campaign_id)
        .fetch_optional(conn)
        .await?
    else {
        return Ok(None);
    };
    if row.try_get::<i64, _>("cancel_refund")? == 0 {
        return Ok(None);
    }
    let reason: Option<String> = row.try_get("cancel_reason")?;
    Ok(Some(CancelFiling {
        account_id: row.try_get("account_id")?,
        reason: reason.unwrap_or_else(|| "campaign cancelled".to_string()),
    }))
}

/// Up to `limit` references of the campaign's successful, credited, paid payments that still
/// have something to give back and no refund from the cancellation yet, oldest first.
pub(crate) async fn cancel_candidates_in(
    conn: &mut sqlx::AnyConnection,
    campaign_id: &str,
    limit: i64,
) -> StoreResult<Vec<String>> {
    let refs = sqlx::query(
        "SELECT t.reference FROM transactions t WHERE t.campaign_id = $1 AND t.status = 'success' AND t.credited = 1 \
         AND t.amount > 0 \
         AND t.provider IS NOT NULL AND t.refund_claimed < t.amount AND NOT EXISTS (SELECT 1 FROM refunds r \
         WHERE r.transaction_reference = t.reference AND r.campaign_cancel = 1) \
         ORDER BY t.created_at, t.reference LIMIT $2",
    )
    .bind(campaign_id)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    refs.iter().map(|r| Ok(r.try_get("reference")?)).collect()
}

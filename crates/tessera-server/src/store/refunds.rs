//! Refunds and campaign cancellations (D17.33–38, D17.42). Every move is one transaction guarded
//! in SQL, so it happens once under any concurrency or crash:
//! - creation claims the idempotency key (`store::idempotency`), plans the refund from the payment
//!   as it stands in the transaction ([`crate::domain::refunds::plan`]), checks the available
//!   balance, and writes the claim on the payment (`refund_claimed + X <= amount`, a conditional
//!   UPDATE: two refunds racing never exceed what was paid), the voids (`status = 'valid' AND
//!   checked_in = 0`, counted: a check-in racing the refund wins or loses whole), the votes taken
//!   back, the donation's refunded amount, the refund, its `refund_hold` and its `refund` job;
//!   any refusal rolls all of it back (and leaves the key free);
//! - an end moves the status from `pending` only: success writes `refund_release` + `refund_debit`
//!   and adds to `refunded`; failure writes `refund_release` and undoes every effect;
//! - a cancellation archives the campaign and, with refunds, queues one `campaign_cancel` job
//!   that files the buyers' refunds in batches, each payment at most once (a unique index on
//!   `campaign_cancel` refunds).
//!
//! On PostgreSQL the account row is locked first (`withdrawals::lock_account`) so refunds and
//! withdrawals of an account see each other's holds; SQLite's one writer serializes them by
//! construction.
use serde_json::{json, Value};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::audit::{self, Audit};
use super::campaigns::{self, Campaign};
use super::idempotency::{self, Ask, KeyState};
use super::jobs::{self, queue};
use super::ledger::{entry as ledger_entry, kind};
use super::live::{LiveEvent, LiveKind};
use super::payments::{self, Transaction};
use super::withdrawals::lock_account;
use super::{Store, StoreError, StoreResult, StoreTx};
use crate::domain::campaigns::CampaignStatus;
use crate::domain::payments::{TransactionType, TxStatus};
use crate::domain::refunds::{self, Paid, PaidTicket, Plan, RefundAsk, RefundStatus};
use crate::domain::webhooks::EventType;
use crate::domain::DomainError;

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

/// A refund asked for over the API, under an idempotency key.
#[derive(Debug, Clone)]
pub struct NewRefund<'a> {
    pub id: &'a str,
    /// The key it was asked under, by whom (its account is the payment's).
    pub ask: &'a Ask,
    /// The payment's reference.
    pub reference: &'a str,
    pub body: &'a RefundAsk,
    pub now: i64,
}

/// What asking for a refund did.
#[derive(Debug)]
pub enum Filed {
    /// Created: the refund and the `data` of the 201 (stored for replays).
    Created(Box<Refund>, Value),
    /// The key was known (a concurrent request with it won, or it holds another body).
    Key(KeyState),
    /// The rules refused it (409 or 400); nothing was written and the key stays free.
    Refused(DomainError),
}

/// Refund counters of a campaign (D17.37).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefundCounts {
    pub requested: i64,
    pub succeeded: i64,
    pub failed: i64,
}

/// A cancellation's outcome: the campaign as it now is and its refund counters.
#[derive(Debug, Clone)]
pub struct Cancelled {
    pub campaign: Campaign,
    pub refunds: RefundCounts,
}

fn insufficient(available: i64, amount: i64) -> DomainError {
    DomainError::Refused {
        status: 409,
        code: "insufficient_balance",
        message: format!(
            "the available balance ({}) does not cover the refund of {}",
            crate::domain::money::to_ghs(available.max(0)),
            crate::domain::money::to_ghs(amount)
        ),
    }
}

/// What the account may spend now: settled entries, and every hold whatever its time (as
/// withdrawals count them).
async fn available(conn: &mut sqlx::AnyConnection, account_id: &str, now: i64) -> StoreResult<i64> {
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
async fn paid_in(conn: &mut sqlx::AnyConnection, t: &Transaction) -> StoreResult<(Paid, Vec<PaidTicket>)> {
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

/// Writes a planned refund and its effects in the caller's transaction. `Err` of the inner
/// result: a guard refused it (the caller rolls back: some effects may already be written).
/// `balance`: what is available, when the caller already knows it under the account's lock (a
/// cancellation's batch reads it once instead of summing the ledger per payment).
#[allow(clippy::too_many_arguments)]
async fn write_plan(
    conn: &mut StoreTx,
    id: &str,
    t: &Transaction,
    plan: &Plan,
    reason: Option<&str>,
    idempotency_key: Option<&str>,
    campaign_cancel: bool,
    balance: Option<i64>,
    now: i64,
) -> StoreResult<Result<Refund, DomainError>> {
    let provider = match t.provider.as_deref() {
        Some(p) if t.amount > 0 => p.to_string(),
        _ => {
            return Ok(Err(DomainError::Refused {
                status: 409,
                code: "not_refundable",
                message: "only a successful, paid transaction can be refunded".into(),
            }))
        }
    };
    let available = match balance {
        Some(b) => b,
        None => available(conn, &t.account_id, now).await?,
    };
    if available < plan.amount {
        return Ok(Err(insufficient(available, plan.amount)));
    }
    let claimed = sqlx::query(
        "UPDATE transactions SET refund_claimed = refund_claimed + $1, updated_at = $2 \
         WHERE reference = $3 AND status = 'success' AND credited = 1 AND refund_claimed + $1 <= amount",
    )
    .bind(plan.amount)
    .bind(now)
    .bind(&t.reference)
    .execute(&mut **conn)
    .await?
    .rows_affected();
    if claimed != 1 {
        return Ok(Err(refunds::exceeds(t.amount - t.refund_claimed - plan.amount)));
    }
    let mut voided: Vec<String> = Vec::new();
    if !plan.ticket_codes.is_empty() {
        let list: Vec<String> = (0..plan.ticket_codes.len()).map(|i| format!("${}", i + 4)).collect();
        let sql = format!(
            "UPDATE tickets SET status = 'void', void_refund_id = $1 WHERE transaction_reference = $2 \
             AND account_id = $3 AND status = 'valid' AND checked_in = 0 AND ticket_code IN ({}) RETURNING ticket_code",
            list.join(", ")
        );
        let mut q = sqlx::query(&sql).bind(id).bind(&t.reference).bind(&t.account_id);
        for c in &plan.ticket_codes {
            q = q.bind(c);
        }
        for r in q.fetch_all(&mut **conn).await? {
            voided.push(r.try_get("ticket_code")?);
        }
        if let Some(lost) = plan.ticket_codes.iter().find(|c| !voided.contains(c)) {
            // A check-in (or another refund) took the ticket after the plan was read.
            return Ok(Err(refunds::ticket_not_refundable(lost)));
        }
    }
    take_back_votes(conn, t, -plan.votes, now).await?;
    if t.transaction_type == TransactionType::Donation {
        sqlx::query("UPDATE donations SET refunded = refunded + $1 WHERE transaction_reference = $2")
            .bind(plan.amount)
            .bind(&t.reference)
            .execute(&mut **conn)
            .await?;
    }
    let refund = Refund {
        id: id.to_string(),
        account_id: t.account_id.clone(),
        transaction_reference: t.reference.clone(),
        provider,
        amount: plan.amount,
        status: RefundStatus::Pending,
        reason: reason.map(str::to_string),
        ticket_codes: plan.ticket_codes.clone(),
        votes: plan.votes,
        campaign_cancel,
        provider_refund_id: None,
        provider_created: false,
        failure_reason: None,
        provider_down_since: None,
        created_at: now,
        updated_at: now,
    };
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
    .bind(i64::from(campaign_cancel))
    .bind(idempotency_key)
    .bind(now)
    .execute(&mut **conn)
    .await?;
    ledger_entry(conn, &refund.account_id, kind::REFUND_HOLD, -refund.amount, &refund.id, now, now).await?;
    jobs::enqueue(conn, queue::REFUND, &refund.id, now, now).await?;
    Ok(Ok(refund))
}

/// Adds `delta` votes back to (or, negative, takes them from) the purchase's participant, and
/// tells the leaderboards (D17.5).
async fn take_back_votes(conn: &mut StoreTx, t: &Transaction, delta: i64, now: i64) -> StoreResult<()> {
    let Some(participant) = t.participant_id.as_deref().filter(|_| delta != 0) else { return Ok(()) };
    super::participants::add_votes(conn, participant, delta, now).await?;
    let event =
        LiveEvent { account_id: t.account_id.clone(), campaign_id: Some(t.campaign_id.clone()), kind: LiveKind::Votes };
    conn.publish(event).await
}

impl Store {
    /// Files a refund of the account's payment under its idempotency key (see the module docs).
    /// `render` makes the 201's `data` (stored for replays). Another account's payment → 404.
    pub async fn create_refund(&self, new: &NewRefund<'_>, render: fn(&Refund) -> Value) -> StoreResult<Filed> {
        let now = new.now;
        let mut tx = self.begin().await?;
        lock_account(&mut tx, self.backend(), &new.ask.account_id).await?;
        if let Some(state) = idempotency::claim(&mut tx, new.ask, now).await? {
            tx.rollback().await?;
            return Ok(Filed::Key(state));
        }
        let t = match payments::read_in(&mut tx, new.reference).await? {
            Some(t) if t.account_id == new.ask.account_id => t,
            _ => return Err(StoreError::NotFound("payment")),
        };
        let (paid, tickets) = paid_in(&mut tx, &t).await?;
        let plan = match refunds::plan(&paid, new.body, &tickets) {
            Ok(p) => p,
            Err(e) => return Ok(Filed::Refused(e)),
        };
        let refund = match write_plan(
            &mut tx,
            new.id,
            &t,
            &plan,
            new.body.reason.as_deref(),
            Some(&new.ask.idempotency_key),
            false,
            None,
            now,
        )
        .await?
        {
            Ok(r) => r,
            Err(e) => return Ok(Filed::Refused(e)),
        };
        let data = render(&refund);
        idempotency::complete(&mut tx, new.ask, "refund.create", "refund", &refund.id, &data).await?;
        tx.commit().await?;
        Ok(Filed::Created(Box::new(refund), data))
    }

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
async fn counts_in(conn: &mut sqlx::AnyConnection, campaign_id: &str) -> StoreResult<RefundCounts> {
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

impl Store {
    /// Cancels the account's campaign (D17.37, D17.38): archived (with its
    /// `campaign.status.updated` event when that moved it), sales stopped (checkout sells only
    /// approved campaigns), and with `refund` a `campaign_cancel` job that files the buyers'
    /// refunds. Cancelling again changes nothing, except that a first `refund: false` followed
    /// by `refund: true` starts the refunds then.
    pub async fn cancel_campaign(
        &self,
        account_id: &str,
        id: &str,
        reason: Option<&str>,
        refund: bool,
        audit: Audit<'_>,
        render: fn(&Campaign) -> Value,
    ) -> StoreResult<Cancelled> {
        let now = crate::domain::time::now_ms();
        let mut tx = self.begin().await?;
        let before = campaigns::read_in(&mut tx, account_id, id).await?.ok_or(StoreError::NotFound("campaign"))?;
        let row = sqlx::query("SELECT cancelled_at, cancel_refund FROM campaigns WHERE id = $1")
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
        let cancelled_at: Option<i64> = row.try_get("cancelled_at")?;
        let refunding = row.try_get::<i64, _>("cancel_refund")? != 0;
        let start_refunds = refund && !refunding;
        if cancelled_at.is_none() || start_refunds {
            let updated_at = now.max(before.updated_at + 1);
            sqlx::query(
                "UPDATE campaigns SET status = 'archived', cancelled_at = COALESCE(cancelled_at, $1), \
                 cancel_reason = COALESCE(cancel_reason, $2), cancel_refund = $3, updated_at = $4 WHERE id = $5",
            )
            .bind(now)
            .bind(reason)
            .bind(i64::from(refund || refunding))
            .bind(updated_at)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            let after = campaigns::read_in(&mut tx, account_id, id).await?.ok_or(StoreError::NotFound("campaign"))?;
            let summary = json!({"before": campaigns::summary(&before), "after": campaigns::summary(&after),
                "reason": reason, "refund": refund});
            let entry = Audit { action: "campaign.cancelled", entity_id: id, summary, ..audit };
            audit::record(&mut tx, account_id, &entry).await?;
            if before.status != CampaignStatus::Archived {
                campaigns::queue_status_notification(&mut tx, account_id, &before, &after).await?;
                // The campaign as its GET now shows it (D17.41): with its refund counters.
                let mut data = render(&after);
                let counts = counts_in(&mut tx, id).await?;
                if let Some(object) = data.as_object_mut() {
                    object.insert(
                        "refunds".into(),
                        json!({"requested": counts.requested, "succeeded": counts.succeeded, "failed": counts.failed}),
                    );
                }
                super::events::record(&mut tx, account_id, EventType::CampaignStatusUpdated, &data, now).await?;
            }
            if start_refunds {
                jobs::enqueue(&mut tx, queue::CAMPAIGN_CANCEL, id, now, now).await?;
            }
        }
        let campaign = campaigns::read_in(&mut tx, account_id, id).await?.ok_or(StoreError::NotFound("campaign"))?;
        tx.commit().await?;
        let refunds = self.refund_counts(id).await?;
        Ok(Cancelled { campaign, refunds })
    }

    /// Files the full refund of up to `limit` successful payments of a cancelled campaign that
    /// have none from the cancellation yet, in one transaction (D17.37). A payment the balance
    /// cannot cover gets a `failed` refund (nothing held, nothing voided) so that the campaign's
    /// counters show it. Returns how many payments it handled: 0 once every one has been.
    pub async fn file_cancel_refunds(&self, campaign_id: &str, limit: i64) -> StoreResult<usize> {
        let now = crate::domain::time::now_ms();
        let mut tx = self.begin().await?;
        let Some(row) = sqlx::query("SELECT account_id, cancel_reason, cancel_refund FROM campaigns WHERE id = $1")
            .bind(campaign_id)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(0);
        };
        if row.try_get::<i64, _>("cancel_refund")? == 0 {
            return Ok(0);
        }
        let account_id: String = row.try_get("account_id")?;
        let reason: Option<String> = row.try_get("cancel_reason")?;
        let reason = reason.unwrap_or_else(|| "campaign cancelled".to_string());
        lock_account(&mut tx, self.backend(), &account_id).await?;
        let refs = sqlx::query(
            "SELECT t.reference FROM transactions t WHERE t.campaign_id = $1 AND t.status = 'success' AND t.credited = 1 \
             AND t.amount > 0 \
             AND t.provider IS NOT NULL AND t.refund_claimed < t.amount AND NOT EXISTS (SELECT 1 FROM refunds r \
             WHERE r.transaction_reference = t.reference AND r.campaign_cancel = 1) \
             ORDER BY t.created_at, t.reference LIMIT $2",
        )
        .bind(campaign_id)
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        let mut handled = 0;
        // Read once under the lock; each refund filed below takes its amount from it.
        let mut balance = available(&mut tx, &account_id, now).await?;
        for r in &refs {
            let reference: String = r.try_get("reference")?;
            let Some(t) = payments::read_in(&mut tx, &reference).await? else { continue };
            handled += 1;
            let (paid, tickets) = paid_in(&mut tx, &t).await?;
            let remainder = t.amount - t.refund_claimed;
            let plan = Plan {
                amount: remainder,
                // Whatever can still be voided; a ticket already used stays as it is.
                ticket_codes: tickets.iter().filter(|k| k.valid && !k.checked_in).map(|k| k.code.clone()).collect(),
                votes: (paid.quantity - paid.votes_refunded).max(0) * i64::from(paid.kind == TransactionType::Vote),
            };
            let id = crate::domain::new_id();
            if balance < plan.amount {
                let why = format!("{}", insufficient(balance, plan.amount));
                insert_failed(&mut tx, &id, &t, plan.amount, &reason, &why, now).await?;
                continue;
            }
            match write_plan(&mut tx, &id, &t, &plan, Some(&reason), None, true, Some(balance), now).await? {
                Ok(_) => balance -= plan.amount,
                // Cannot happen under the account lock (or the single writer) with the plan
                // read in this transaction; refuse the batch rather than write half of one.
                Err(e) => return Err(StoreError::Conflict(e.to_string())),
            }
        }
        if handled == 0 {
            jobs::finish(&mut tx, queue::CAMPAIGN_CANCEL, campaign_id).await?;
        }
        tx.commit().await?;
        Ok(handled)
    }
}

/// A cancellation's refund that could not be filed: recorded `failed` with why, no effects.
async fn insert_failed(
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

/// The provider refunded it (D17.38): `pending → succeeded`, once, with `refund_release` +X and
/// `refund_debit` −X, `refunded` += X on the payment, and the job ended. Returns the refund when
/// this call moved it.
pub(crate) async fn succeed(conn: &mut StoreTx, id: &str, now: i64) -> StoreResult<Option<Refund>> {
    let Some(r) = read_in(conn, id).await? else { return Ok(None) };
    let moved = sqlx::query(
        "UPDATE refunds SET status = 'succeeded', provider_down_since = NULL, updated_at = $1 \
         WHERE id = $2 AND status = 'pending'",
    )
    .bind(now)
    .bind(id)
    .execute(&mut **conn)
    .await?
    .rows_affected();
    if moved != 1 {
        return Ok(None);
    }
    ledger_entry(conn, &r.account_id, kind::REFUND_RELEASE, r.amount, id, now, now).await?;
    ledger_entry(conn, &r.account_id, kind::REFUND_DEBIT, -r.amount, id, now, now).await?;
    sqlx::query("UPDATE transactions SET refunded = refunded + $1, updated_at = $2 WHERE reference = $3")
        .bind(r.amount)
        .bind(now)
        .bind(&r.transaction_reference)
        .execute(&mut **conn)
        .await?;
    jobs::finish(conn, queue::REFUND, id).await?;
    Ok(Some(Refund { status: RefundStatus::Succeeded, updated_at: now, ..r }))
}

/// The provider failed it (D17.35, D17.38): `pending → failed`, once, with `refund_release` +X,
/// the claim on the payment given back, its tickets valid again, its votes and the donation's
/// refunded amount restored, and the job ended. Returns whether this call moved it.
pub(crate) async fn fail(conn: &mut StoreTx, id: &str, why: &str, now: i64) -> StoreResult<bool> {
    let Some(r) = read_in(conn, id).await? else { return Ok(false) };
    let moved = sqlx::query(
        "UPDATE refunds SET status = 'failed', failure_reason = $1, updated_at = $2 WHERE id = $3 AND status = 'pending'",
    )
    .bind(why)
    .bind(now)
    .bind(id)
    .execute(&mut **conn)
    .await?
    .rows_affected();
    if moved != 1 {
        return Ok(false);
    }
    ledger_entry(conn, &r.account_id, kind::REFUND_RELEASE, r.amount, id, now, now).await?;
    sqlx::query("UPDATE transactions SET refund_claimed = refund_claimed - $1, updated_at = $2 WHERE reference = $3")
        .bind(r.amount)
        .bind(now)
        .bind(&r.transaction_reference)
        .execute(&mut **conn)
        .await?;
    sqlx::query("UPDATE tickets SET status = 'valid', void_refund_id = NULL WHERE void_refund_id = $1")
        .bind(id)
        .execute(&mut **conn)
        .await?;
    // Only a donation purchase has a donation row.
    sqlx::query("UPDATE donations SET refunded = refunded - $1 WHERE transaction_reference = $2")
        .bind(r.amount)
        .bind(&r.transaction_reference)
        .execute(&mut **conn)
        .await?;
    if r.votes != 0 {
        if let Some(t) = payments::read_in(conn, &r.transaction_reference).await? {
            take_back_votes(conn, &t, r.votes, now).await?;
        }
    }
    jobs::finish(conn, queue::REFUND, id).await?;
    Ok(true)
}

//! Withdrawals (D9.1, D14, D16.2, D16.12–13); their idempotency keys live in
//! `store::idempotency`, a withdrawal's approval request in `store::approvals` (its decision's
//! effect here). Every move is one transaction guarded in SQL, so it happens once under any
//! concurrency or crash:
//! - creation (`flows::payouts`) claims the idempotency key (`store::idempotency`), checks the
//!   available balance, and writes the withdrawal, its `withdrawal_hold` entry, its payout job
//!   (or its approval request) and the answer to replay, all in one transaction. On PostgreSQL the account row is
//!   locked first (`lock_account`) so concurrent withdrawals (and refunds) of one account see
//!   each other's holds; on SQLite the one writer connection already serializes them;
//! - an end (`completed`, `failed`, `cancelled`) moves the status from an open state only; the
//!   payout flow writes the `withdrawal_release` (and `withdrawal_debit`) entries with it, and
//!   the ledger's unique (kind, reference) refuses a second one whatever happens above.
use serde_json::json;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::jobs::{self, queue};
use super::ledger::kind;
use super::query::{Arg, Filter};
use super::{Backend, Store, StoreError, StoreResult};
use crate::domain::new_id;
use crate::domain::withdrawals::WithdrawalStatus;

/// A stored withdrawal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withdrawal {
    pub id: String,
    pub account_id: String,
    pub status: WithdrawalStatus,
    /// Pesewas.
    pub amount: i64,
    pub currency: String,
    pub bank_name: String,
    pub bank_code: String,
    pub account_number: String,
    pub account_name: String,
    pub provider: String,
    pub failure_reason: Option<String>,
    pub idempotency_key: String,
    pub transfer_created: bool,
    pub provider_down_since: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The console member who asked for it (`None`: asked through the API).
    pub requested_by: Option<String>,
}

const COLUMNS: &str = "id, account_id, status, amount, currency, bank_name, bank_code, account_number, account_name, \
    provider, failure_reason, idempotency_key, transfer_created, provider_down_since, created_at, updated_at, \
    requested_by";

fn from_row(r: &AnyRow) -> StoreResult<Withdrawal> {
    Ok(Withdrawal {
        id: r.try_get("id")?,
        account_id: r.try_get("account_id")?,
        status: WithdrawalStatus::from_stored(&r.try_get::<String, _>("status")?)
            .ok_or_else(|| StoreError::Corrupt("withdrawal status".into()))?,
        amount: r.try_get("amount")?,
        currency: r.try_get("currency")?,
        bank_name: r.try_get("bank_name")?,
        bank_code: r.try_get("bank_code")?,
        account_number: r.try_get("account_number")?,
        account_name: r.try_get("account_name")?,
        provider: r.try_get("provider")?,
        failure_reason: r.try_get("failure_reason")?,
        idempotency_key: r.try_get("idempotency_key")?,
        transfer_created: r.try_get::<i64, _>("transfer_created")? != 0,
        provider_down_since: r.try_get("provider_down_since")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
        requested_by: r.try_get("requested_by")?,
    })
}

/// Serializes the account's money moves (withdrawals and refunds) on PostgreSQL, in the
/// caller's transaction, so that each sees the holds of those before it (SQLite's single writer
/// does this by construction): the one dialect branch. `NO KEY UPDATE`, not `UPDATE`: it
/// serializes these moves just the same, but does not block the `KEY SHARE` lock that every
/// insert referencing the account takes. With `FOR UPDATE` a refund holding the lock and waiting
/// for a ticket's row deadlocked with a check-in holding that row and inserting its audit entry.
pub(crate) async fn lock_account(
    conn: &mut sqlx::AnyConnection,
    backend: Backend,
    account_id: &str,
) -> StoreResult<()> {
    if backend == Backend::Postgres {
        sqlx::query("SELECT id FROM accounts WHERE id = $1 FOR NO KEY UPDATE").bind(account_id).execute(conn).await?;
    }
    Ok(())
}

/// What the account may spend now, for a withdrawal, in the caller's transaction: read after
/// the lock (or the single writer) was won. A withdrawal that waited holds the time it was asked
/// at (`now`), and the holds of those that went before it carry their own, later times. Reading
/// "settled by `now`" missed them, and fifty withdrawals at once could overdraw (seen: 15 × 7 GHS
/// from 100). Holds count whatever their time, so a clock step back cannot hide one either.
pub(crate) async fn available_in(conn: &mut sqlx::AnyConnection, account_id: &str, now: i64) -> StoreResult<i64> {
    Ok(sqlx::query(
        "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS available FROM ledger_entries \
         WHERE account_id = $1 AND (settles_at <= $2 OR kind = $3)",
    )
    .bind(account_id)
    .bind(crate::domain::time::now_ms().max(now))
    .bind(kind::WITHDRAWAL_HOLD)
    .fetch_one(conn)
    .await?
    .try_get("available")?)
}

/// Inserts the withdrawal as it is (its status, key and creation time), in the caller's
/// transaction.
pub(crate) async fn insert(conn: &mut sqlx::AnyConnection, w: &Withdrawal) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO withdrawals (id, account_id, status, amount, currency, bank_name, bank_code, account_number, \
         account_name, provider, idempotency_key, created_at, updated_at, requested_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13)",
    )
    .bind(&w.id)
    .bind(&w.account_id)
    .bind(w.status.as_str())
    .bind(w.amount)
    .bind(&w.currency)
    .bind(&w.bank_name)
    .bind(&w.bank_code)
    .bind(&w.account_number)
    .bind(&w.account_name)
    .bind(&w.provider)
    .bind(&w.idempotency_key)
    .bind(w.created_at)
    .bind(w.requested_by.as_deref())
    .execute(conn)
    .await?;
    Ok(())
}

/// Files Tessera's own approval request for a withdrawal held for approval (D14.2), in the
/// caller's transaction.
pub(crate) async fn request_approval(
    conn: &mut sqlx::AnyConnection,
    w: &Withdrawal,
    reason: &str,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO approval_requests (id, account_id, entity_type, status, reason, request_payload, \
         requested_by, created_at) VALUES ($1, $2, 'withdrawal', 'pending', $3, $4, NULL, $5)",
    )
    .bind(new_id())
    .bind(&w.account_id)
    .bind(reason)
    .bind(json!({ "withdrawalId": w.id }).to_string())
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// The end of an open withdrawal's status, in the caller's transaction: the move to `to` from
/// one of `from` only. Returns its account and amount when this call moved it (the flow writes
/// the ledger entries the end makes).
pub(crate) async fn mark_ended(
    conn: &mut sqlx::AnyConnection,
    id: &str,
    from: &[WithdrawalStatus],
    to: WithdrawalStatus,
    reason: Option<&str>,
    now: i64,
) -> StoreResult<Option<(String, i64)>> {
    let Some(row) = sqlx::query("SELECT account_id, amount, status FROM withdrawals WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?
    else {
        return Ok(None);
    };
    let status: String = row.try_get("status")?;
    if !from.iter().any(|s| s.as_str() == status) {
        return Ok(None);
    }
    let moved = sqlx::query(
        "UPDATE withdrawals SET status = $1, failure_reason = $2, updated_at = $3 WHERE id = $4 AND status = $5",
    )
    .bind(to.as_str())
    .bind(reason)
    .bind(now)
    .bind(id)
    .bind(&status)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if moved != 1 {
        return Ok(None);
    }
    Ok(Some((row.try_get("account_id")?, row.try_get("amount")?)))
}

/// The states a transfer's outcome ends.
pub(crate) const OPEN: [WithdrawalStatus; 2] = [WithdrawalStatus::Pending, WithdrawalStatus::Processing];

impl Store {
    /// The account's withdrawal (another account's looks like none: 404).
    pub async fn withdrawal(&self, account_id: &str, id: &str) -> StoreResult<Withdrawal> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM withdrawals WHERE account_id = $1 AND id = $2"))
            .bind(account_id)
            .bind(id)
            .fetch_optional(self.reader())
            .await?
            .ok_or(StoreError::NotFound("withdrawal"))?;
        from_row(&row)
    }

    /// A withdrawal by id alone, for the payout worker and provider callbacks (no tenant yet).
    pub async fn withdrawal_by_id(&self, id: &str) -> StoreResult<Option<Withdrawal>> {
        sqlx::query(&format!("SELECT {COLUMNS} FROM withdrawals WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.reader())
            .await?
            .as_ref()
            .map(from_row)
            .transpose()
    }

    /// One page of the account's withdrawals, newest first, with the total.
    pub async fn list_withdrawals(
        &self,
        account_id: &str,
        status: Option<WithdrawalStatus>,
        page: (u32, u32),
    ) -> StoreResult<(Vec<Withdrawal>, u64)> {
        let mut f = Filter::new();
        f.and("account_id = ?", Arg::Text(account_id.into()));
        if let Some(s) = status {
            f.and("status = ?", Arg::Text(s.as_str().into()));
        }
        self.page(COLUMNS, "FROM withdrawals", "created_at DESC, id DESC", &f, page, from_row).await
    }

    /// The provider holds the transfer: `pending → processing`, once. Returns whether it moved.
    pub async fn mark_processing(&self, id: &str, now: i64) -> StoreResult<bool> {
        Ok(sqlx::query(
            "UPDATE withdrawals SET status = 'processing', transfer_created = 1, provider_down_since = NULL, \
             updated_at = $1 WHERE id = $2 AND status = 'pending'",
        )
        .bind(now)
        .bind(id)
        .execute(self.writer())
        .await?
        .rows_affected()
            == 1)
    }

    /// A provider call went unanswered: records when the outage began (kept if already set) and
    /// returns it.
    pub async fn note_provider_down(&self, id: &str, now: i64) -> StoreResult<i64> {
        let row = sqlx::query(
            "UPDATE withdrawals SET provider_down_since = COALESCE(provider_down_since, $1) WHERE id = $2 \
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

    /// The provider answered: the outage clock stops.
    pub async fn note_provider_up(&self, id: &str) -> StoreResult<()> {
        sqlx::query(
            "UPDATE withdrawals SET provider_down_since = NULL WHERE id = $1 AND provider_down_since IS NOT NULL",
        )
        .bind(id)
        .execute(self.writer())
        .await?;
        Ok(())
    }
}

/// A withdrawal by id, in the caller's transaction.
pub(crate) async fn read_in(conn: &mut sqlx::AnyConnection, id: &str) -> StoreResult<Option<Withdrawal>> {
    sqlx::query(&format!("SELECT {COLUMNS} FROM withdrawals WHERE id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// Approval of a withdrawal Tessera held for approval (D14.2), in the decision's transaction:
/// `awaiting_approval → pending` with its payout job. Returns whether it moved.
pub(crate) async fn release_awaiting(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    id: &str,
    now: i64,
) -> StoreResult<bool> {
    let n = sqlx::query(
        "UPDATE withdrawals SET status = 'pending', updated_at = $1 \
         WHERE id = $2 AND account_id = $3 AND status = 'awaiting_approval'",
    )
    .bind(now)
    .bind(id)
    .bind(account_id)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if n == 1 {
        jobs::enqueue(conn, queue::PAYOUT, id, now, now).await?;
    }
    Ok(n == 1)
}

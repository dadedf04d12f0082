//! Transactions (payments) as stored (D5, D12, D16.1–6): the row, its reads, and the guarded
//! statements the checkout and fulfilment flows (`flows::checkout`, `flows::fulfilment`) run
//! inside their transactions. Each statement is conditional so that its move happens once under
//! any concurrency or crash:
//! - a credit sets `credited` from 0 to 1 (the one writer of the `charge` and `fee` entries,
//!   which the ledger's unique (kind, reference) also refuses twice);
//! - a release moves `status` from `pending` only, with the reservation it read.
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::query::{Arg, Filter};
use super::{Store, StoreError, StoreResult};
use crate::domain::payments::{Attendee, TransactionType, TxStatus};

/// A stored transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Transaction {
    pub reference: String,
    pub account_id: String,
    pub transaction_type: TransactionType,
    pub status: TxStatus,
    pub amount: i64,
    pub fees: i64,
    pub price: i64,
    pub currency: String,
    pub provider: Option<String>,
    pub channel: String,
    pub email: String,
    pub phone: Option<String>,
    pub full_name: Option<String>,
    pub callback_url: Option<String>,
    pub description: Option<String>,
    pub campaign_id: String,
    pub ticket_type_id: Option<String>,
    pub participant_id: Option<String>,
    pub quantity: i64,
    pub metadata: Value,
    /// One attendee per ticket with their answers (D17.12), kept until the tickets are issued.
    pub attendees: Vec<Attendee>,
    pub authorization_url: Option<String>,
    pub access_code: Option<String>,
    pub reserved: i64,
    pub credited: bool,
    pub fulfilled: bool,
    pub mismatch: bool,
    pub paid_late: bool,
    pub hold_expires_at: i64,
    pub paid_at: Option<i64>,
    pub created_at: i64,
    /// Pesewas that pending and succeeded refunds claim (D17.42: the ceiling counts both).
    pub refund_claimed: i64,
    /// Pesewas that succeeded refunds gave back (D17.38).
    pub refunded: i64,
    /// What the provider said of the paid charge (D18.45): its own id, `card` | `mobile_money`,
    /// the paying number and its network. A refund on some wires needs them.
    pub provider_charge_id: Option<String>,
    pub pay_method: Option<String>,
    pub payer: Option<String>,
    pub payer_network: Option<String>,
}

impl Transaction {
    /// What a refund of this payment's provider may need to know of it.
    pub fn facts(&self) -> crate::providers::payments::ChargeFacts<'_> {
        crate::providers::payments::ChargeFacts {
            provider_charge_id: self.provider_charge_id.as_deref(),
            method: self.pay_method.as_deref(),
            payer: self.payer.as_deref(),
            network: self.payer_network.as_deref(),
        }
    }
}

const COLUMNS: &str = "reference, account_id, transaction_type, status, amount, fees, price, currency, provider, \
    channel, email, phone, full_name, callback_url, description, campaign_id, ticket_type_id, participant_id, \
    quantity, metadata, attendees, authorization_url, access_code, reserved, credited, fulfilled, mismatch, paid_late, \
    hold_expires_at, paid_at, created_at, refund_claimed, refunded, provider_charge_id, pay_method, payer, payer_network";

fn from_row(r: &AnyRow) -> StoreResult<Transaction> {
    let metadata: String = r.try_get("metadata")?;
    let flag = |name: &str| -> StoreResult<bool> { Ok(r.try_get::<i64, _>(name)? != 0) };
    Ok(Transaction {
        reference: r.try_get("reference")?,
        account_id: r.try_get("account_id")?,
        transaction_type: TransactionType::from_stored(&r.try_get::<String, _>("transaction_type")?)
            .ok_or_else(|| StoreError::Corrupt("transaction type".into()))?,
        status: TxStatus::from_stored(&r.try_get::<String, _>("status")?)
            .ok_or_else(|| StoreError::Corrupt("transaction status".into()))?,
        amount: r.try_get("amount")?,
        fees: r.try_get("fees")?,
        price: r.try_get("price")?,
        currency: r.try_get("currency")?,
        provider: r.try_get("provider")?,
        channel: r.try_get("channel")?,
        email: r.try_get("email")?,
        phone: r.try_get("phone")?,
        full_name: r.try_get("full_name")?,
        callback_url: r.try_get("callback_url")?,
        description: r.try_get("description")?,
        campaign_id: r.try_get("campaign_id")?,
        ticket_type_id: r.try_get("ticket_type_id")?,
        participant_id: r.try_get("participant_id")?,
        quantity: r.try_get("quantity")?,
        metadata: serde_json::from_str(&metadata).map_err(|_| StoreError::Corrupt("transaction metadata".into()))?,
        attendees: match r.try_get::<Option<String>, _>("attendees")? {
            None => Vec::new(),
            Some(a) => serde_json::from_str(&a).map_err(|_| StoreError::Corrupt("transaction attendees".into()))?,
        },
        authorization_url: r.try_get("authorization_url")?,
        access_code: r.try_get("access_code")?,
        reserved: r.try_get("reserved")?,
        credited: flag("credited")?,
        fulfilled: flag("fulfilled")?,
        mismatch: flag("mismatch")?,
        paid_late: flag("paid_late")?,
        hold_expires_at: r.try_get("hold_expires_at")?,
        paid_at: r.try_get("paid_at")?,
        created_at: r.try_get("created_at")?,
        refund_claimed: r.try_get("refund_claimed")?,
        refunded: r.try_get("refunded")?,
        provider_charge_id: r.try_get("provider_charge_id")?,
        pay_method: r.try_get("pay_method")?,
        payer: r.try_get("payer")?,
        payer_network: r.try_get("payer_network")?,
    })
}

/// A transaction to open.
#[derive(Debug, Clone)]
pub struct NewTransaction {
    pub reference: String,
    pub account_id: String,
    pub transaction_type: TransactionType,
    pub amount: i64,
    pub fees: i64,
    pub price: i64,
    pub currency: String,
    pub provider: Option<String>,
    pub channel: String,
    pub email: String,
    pub phone: Option<String>,
    pub full_name: Option<String>,
    pub callback_url: Option<String>,
    pub description: Option<String>,
    pub campaign_id: String,
    pub ticket_type_id: Option<String>,
    pub participant_id: Option<String>,
    pub quantity: i64,
    pub metadata: Value,
    /// One attendee per ticket (D17.12); empty when none were sent.
    pub attendees: Vec<Attendee>,
    pub hold_expires_at: i64,
}

/// Which transactions a list shows.
#[derive(Debug, Default, Clone)]
pub struct TransactionQuery {
    pub status: Option<TxStatus>,
    pub campaign_id: Option<String>,
    pub transaction_type: Option<TransactionType>,
    pub page: u32,
    pub limit: u32,
}

/// What confirming a paid charge did (`flows::fulfilment::settle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Credited and fulfilled now.
    Fulfilled,
    /// Credited now, paid after its hold expired and the inventory had no room left: stays
    /// `abandoned` with `paidLate` for the organizer to refund (D16.4).
    CreditedOnly,
    /// Already credited, or final: nothing changed.
    Unchanged,
}

/// Writes a transaction in the caller's transaction: `reserved` seats held for it, and, when
/// `settled`, credited and fulfilled at once (a free purchase).
pub(crate) async fn insert(
    conn: &mut sqlx::AnyConnection,
    t: &NewTransaction,
    status: TxStatus,
    reserved: i64,
    settled: bool,
    now: i64,
) -> StoreResult<()> {
    let flag = i64::from(settled);
    sqlx::query(
        "INSERT INTO transactions (reference, account_id, transaction_type, status, amount, fees, price, currency, \
         provider, channel, email, phone, full_name, callback_url, description, campaign_id, ticket_type_id, \
         participant_id, quantity, metadata, reserved, credited, fulfilled, hold_expires_at, paid_at, created_at, \
         updated_at, attendees) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
         $18, $19, $20, $21, $22, $22, $23, $24, $25, $25, $26)",
    )
    .bind(&t.reference)
    .bind(&t.account_id)
    .bind(t.transaction_type.as_str())
    .bind(status.as_str())
    .bind(t.amount)
    .bind(t.fees)
    .bind(t.price)
    .bind(&t.currency)
    .bind(t.provider.as_deref())
    .bind(&t.channel)
    .bind(&t.email)
    .bind(t.phone.as_deref())
    .bind(t.full_name.as_deref())
    .bind(t.callback_url.as_deref())
    .bind(t.description.as_deref())
    .bind(&t.campaign_id)
    .bind(t.ticket_type_id.as_deref())
    .bind(t.participant_id.as_deref())
    .bind(t.quantity)
    .bind(t.metadata.to_string())
    .bind(reserved)
    .bind(flag)
    .bind(t.hold_expires_at)
    .bind(settled.then_some(now))
    .bind(now)
    .bind((!t.attendees.is_empty()).then(|| serde_json::to_string(&t.attendees).unwrap_or_default()))
    .execute(conn)
    .await?;
    Ok(())
}

/// A transaction read inside the caller's transaction.
pub(crate) async fn read_in(conn: &mut sqlx::AnyConnection, reference: &str) -> StoreResult<Option<Transaction>> {
    sqlx::query(&format!("SELECT {COLUMNS} FROM transactions WHERE reference = $1"))
        .bind(reference)
        .fetch_optional(conn)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// Claims the credit of a transaction still in `from`: `credited` 0 → 1, once. Returns whether
/// this call won it.
pub(crate) async fn claim_credit(
    conn: &mut sqlx::AnyConnection,
    reference: &str,
    from: TxStatus,
    now: i64,
) -> StoreResult<bool> {
    Ok(sqlx::query(
        "UPDATE transactions SET credited = 1, updated_at = $1 WHERE reference = $2 AND credited = 0 AND status = $3",
    )
    .bind(now)
    .bind(reference)
    .bind(from.as_str())
    .execute(conn)
    .await?
    .rows_affected()
        == 1)
}

/// Records a credited payment's end: its status, whether it was fulfilled, whether it came after
/// its hold expired; its reservation is used up.
pub(crate) async fn record_paid(
    conn: &mut sqlx::AnyConnection,
    reference: &str,
    status: TxStatus,
    fulfilled: bool,
    paid_late: bool,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "UPDATE transactions SET status = $1, reserved = 0, fulfilled = $2, paid_late = $3, paid_at = $4, \
         updated_at = $4 WHERE reference = $5",
    )
    .bind(status.as_str())
    .bind(i64::from(fulfilled))
    .bind(i64::from(paid_late))
    .bind(now)
    .bind(reference)
    .execute(conn)
    .await?;
    Ok(())
}

/// Moves a pending, uncredited transaction that still holds `reserved` seats to `to`, its
/// reservation given up. Returns whether it moved.
pub(crate) async fn release(
    conn: &mut sqlx::AnyConnection,
    reference: &str,
    to: TxStatus,
    reserved: i64,
    now: i64,
) -> StoreResult<bool> {
    Ok(sqlx::query(
        "UPDATE transactions SET status = $1, reserved = 0, updated_at = $2 \
         WHERE reference = $3 AND status = 'pending' AND reserved = $4 AND credited = 0",
    )
    .bind(to.as_str())
    .bind(now)
    .bind(reference)
    .bind(reserved)
    .execute(conn)
    .await?
    .rows_affected()
        == 1)
}

/// Deletes a transaction (one no provider took: as if it had never been opened).
pub(crate) async fn delete(conn: &mut sqlx::AnyConnection, reference: &str) -> StoreResult<()> {
    sqlx::query("DELETE FROM transactions WHERE reference = $1").bind(reference).execute(conn).await?;
    Ok(())
}

impl Store {
    /// Records the provider's answer to a new charge.
    pub async fn attach_charge(
        &self,
        reference: &str,
        provider: &str,
        authorization_url: &str,
        access_code: &str,
        now: i64,
    ) -> StoreResult<()> {
        sqlx::query(
            "UPDATE transactions SET provider = $1, authorization_url = $2, access_code = $3, updated_at = $4 \
             WHERE reference = $5",
        )
        .bind(provider)
        .bind(authorization_url)
        .bind(access_code)
        .bind(now)
        .bind(reference)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// The account's transaction (another account's looks like none: 404).
    pub async fn transaction(&self, account_id: &str, reference: &str) -> StoreResult<Transaction> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM transactions WHERE account_id = $1 AND reference = $2"))
            .bind(account_id)
            .bind(reference)
            .fetch_optional(self.reader())
            .await?
            .ok_or(StoreError::NotFound("payment"))?;
        from_row(&row)
    }

    /// The newest pending USSD vote of a phone in the account made since `since` (D17.22): what a
    /// re-dial offers to prompt again or cancel.
    pub async fn pending_ussd_vote(
        &self,
        account_id: &str,
        msisdn: &str,
        since: i64,
    ) -> StoreResult<Option<Transaction>> {
        sqlx::query(&format!(
            "SELECT {COLUMNS} FROM transactions WHERE account_id = $1 AND phone = $2 AND created_at >= $3 \
             AND channel = 'ussd' AND status = 'pending' AND credited = 0 ORDER BY created_at DESC LIMIT 1"
        ))
        .bind(account_id)
        .bind(msisdn)
        .bind(since)
        .fetch_optional(self.reader())
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
    }

    /// A transaction by reference alone, for workers and provider callbacks (no tenant yet).
    pub async fn transaction_by_reference(&self, reference: &str) -> StoreResult<Option<Transaction>> {
        sqlx::query(&format!("SELECT {COLUMNS} FROM transactions WHERE reference = $1"))
            .bind(reference)
            .fetch_optional(self.reader())
            .await?
            .as_ref()
            .map(from_row)
            .transpose()
    }

    /// One page of the account's transactions, newest first, with the total.
    pub async fn list_transactions(
        &self,
        account_id: &str,
        q: &TransactionQuery,
    ) -> StoreResult<(Vec<Transaction>, u64)> {
        let mut f = Filter::new();
        f.and("account_id = ?", Arg::Text(account_id.into()));
        if let Some(s) = q.status {
            f.and("status = ?", Arg::Text(s.as_str().into()));
        }
        if let Some(c) = &q.campaign_id {
            f.and("campaign_id = ?", Arg::Text(c.clone()));
        }
        if let Some(t) = q.transaction_type {
            f.and("transaction_type = ?", Arg::Text(t.as_str().into()));
        }
        self.page(COLUMNS, "FROM transactions", "created_at DESC, reference DESC", &f, (q.page, q.limit), from_row)
            .await
    }

    /// Keeps what the provider said of a charge (D18.45); a member already known stays.
    pub async fn note_charge(
        &self,
        reference: &str,
        facts: crate::providers::payments::ChargeFacts<'_>,
    ) -> StoreResult<()> {
        if facts == crate::providers::payments::ChargeFacts::default() {
            return Ok(());
        }
        sqlx::query(
            "UPDATE transactions SET provider_charge_id = COALESCE(provider_charge_id, $1), \
             pay_method = COALESCE(pay_method, $2), payer = COALESCE(payer, $3), \
             payer_network = COALESCE(payer_network, $4) WHERE reference = $5",
        )
        .bind(facts.provider_charge_id)
        .bind(facts.method)
        .bind(facts.payer)
        .bind(facts.network)
        .bind(reference)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// The provider reported another amount or currency (D5.5): flagged, never credited or
    /// fulfilled; the transaction stays `pending` and keeps its polling job only for the hold's
    /// release at expiry.
    pub async fn flag_mismatch(&self, reference: &str, now: i64) -> StoreResult<bool> {
        Ok(sqlx::query(
            "UPDATE transactions SET mismatch = 1, updated_at = $1 WHERE reference = $2 AND mismatch = 0 AND credited = 0",
        )
        .bind(now)
        .bind(reference)
        .execute(self.writer())
        .await?
        .rows_affected()
            == 1)
    }
}

/// `$1, $2, …, $n` for an `IN (…)` list.
pub(super) fn placeholders(n: usize) -> String {
    (1..=n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

pub(super) fn bind_all<'q>(
    mut q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    values: &'q [String],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for v in values {
        q = q.bind(v.as_str());
    }
    q
}

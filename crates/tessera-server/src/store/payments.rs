//! Transactions and what they fulfil (D5, D12, D16.1–6). Every move is one transaction, and
//! each is guarded in SQL so that it happens once under any concurrency or crash:
//! - a reservation is a conditional update of the ticket type (`sold + held + n <= available`);
//! - a credit sets `credited` from 0 to 1 (the one writer of the `charge` and `fee` entries,
//!   which the ledger's unique (kind, reference) also refuses twice);
//! - a release moves `status` from `pending` only.
use std::collections::HashMap;

use serde_json::{json, Value};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::jobs::{self, queue};
use super::query::{Arg, Filter};
use super::sqlite_read::Get;
use super::{Store, StoreError, StoreResult};
use crate::domain::new_id;
use crate::domain::payments::{new_qr_token, new_ticket_code, TransactionType, TxStatus};
use crate::domain::tickets::TicketStatus;

/// A stored transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Transaction {
    pub reference: String,
    pub account_id: String,
    pub transaction_type: String,
    pub status: String,
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
}

const COLUMNS: &str = "reference, account_id, transaction_type, status, amount, fees, price, currency, provider, \
    channel, email, phone, full_name, callback_url, description, campaign_id, ticket_type_id, participant_id, \
    quantity, metadata, authorization_url, access_code, reserved, credited, fulfilled, mismatch, paid_late, \
    hold_expires_at, paid_at, created_at";

fn from_row(r: &AnyRow) -> StoreResult<Transaction> {
    let metadata: String = r.try_get("metadata")?;
    let flag = |name: &str| -> StoreResult<bool> { Ok(r.try_get::<i64, _>(name)? != 0) };
    Ok(Transaction {
        reference: r.try_get("reference")?,
        account_id: r.try_get("account_id")?,
        transaction_type: r.try_get("transaction_type")?,
        status: r.try_get("status")?,
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
    pub hold_expires_at: i64,
}

/// A ticket as every read shows it (D16.9).
#[derive(Debug, Clone, PartialEq)]
pub struct Ticket {
    pub id: String,
    pub ticket_code: String,
    pub qr_token: String,
    pub status: TicketStatus,
    pub checked_in: bool,
    pub checked_in_at: Option<i64>,
    pub checked_in_by: Option<String>,
    pub ticket_type_id: String,
    pub ticket_type_name: String,
    pub campaign_id: String,
    pub campaign_title: String,
    pub attendee_name: Option<String>,
    pub attendee_email: String,
    pub transaction_reference: String,
    pub created_at: i64,
}

pub(crate) const TICKET_COLUMNS: &str = "k.id, k.ticket_code, k.qr_token, k.status, k.checked_in, k.checked_in_at, \
    k.checked_in_by, k.ticket_type_id, tt.name AS ticket_type_name, k.campaign_id, c.title AS campaign_title, \
    k.attendee_name, k.attendee_email, k.transaction_reference, k.created_at";
pub(crate) const TICKET_FROM: &str =
    "FROM tickets k JOIN ticket_types tt ON tt.id = k.ticket_type_id JOIN campaigns c ON c.id = k.campaign_id";

/// A ticket from a row of either driver (`sqlite_read::Get`).
pub(crate) fn ticket_from_row(r: &impl Get) -> StoreResult<Ticket> {
    Ok(Ticket {
        id: r.get("id")?,
        ticket_code: r.get("ticket_code")?,
        qr_token: r.get("qr_token")?,
        status: TicketStatus::parse("status", &r.get::<String>("status")?)
            .map_err(|_| StoreError::Corrupt("ticket status".into()))?,
        checked_in: r.get::<i64>("checked_in")? != 0,
        checked_in_at: r.get("checked_in_at")?,
        checked_in_by: r.get("checked_in_by")?,
        ticket_type_id: r.get("ticket_type_id")?,
        ticket_type_name: r.get("ticket_type_name")?,
        campaign_id: r.get("campaign_id")?,
        campaign_title: r.get("campaign_title")?,
        attendee_name: r.get("attendee_name")?,
        attendee_email: r.get("attendee_email")?,
        transaction_reference: r.get("transaction_reference")?,
        created_at: r.get("created_at")?,
    })
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

/// What confirming a paid charge did.
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

/// Why a sold-out refusal names the ticket type.
fn sold_out() -> StoreError {
    StoreError::SoldOut("not enough tickets of this type are left for that quantity".into())
}

async fn insert_transaction(
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
         updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, \
         $20, $21, $22, $22, $23, $24, $25, $25)",
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
    .execute(conn)
    .await?;
    Ok(())
}

/// What a fulfilment needs of its transaction.
struct Fulfil<'a> {
    reference: &'a str,
    account_id: &'a str,
    transaction_type: &'a str,
    campaign_id: &'a str,
    ticket_type_id: Option<&'a str>,
    participant_id: Option<&'a str>,
    quantity: i64,
    price: i64,
    amount: i64,
    email: &'a str,
    full_name: Option<&'a str>,
}

/// Issues what was bought (tickets one per unit, votes, the donation) and queues the buyer's
/// notification (D13.2), in the caller's transaction. The inventory was already counted sold.
async fn fulfil(conn: &mut sqlx::AnyConnection, f: &Fulfil<'_>, now: i64) -> StoreResult<()> {
    let event_type = match f.transaction_type {
        "ticket" => {
            let ticket_type = f.ticket_type_id.ok_or_else(|| StoreError::Corrupt("ticket without type".into()))?;
            for _ in 0..f.quantity {
                sqlx::query(
                    "INSERT INTO tickets (id, account_id, campaign_id, ticket_type_id, transaction_reference, \
                     ticket_code, qr_token, status, attendee_name, attendee_email, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, 'valid', $8, $9, $10)",
                )
                .bind(new_id())
                .bind(f.account_id)
                .bind(f.campaign_id)
                .bind(ticket_type)
                .bind(f.reference)
                .bind(new_ticket_code())
                .bind(new_qr_token())
                .bind(f.full_name)
                .bind(f.email)
                .bind(now)
                .execute(&mut *conn)
                .await?;
            }
            "ticket.purchase.confirmed"
        }
        "vote" => {
            let participant = f.participant_id.ok_or_else(|| StoreError::Corrupt("vote without participant".into()))?;
            sqlx::query("UPDATE participants SET votes = votes + $1, updated_at = $2 WHERE id = $3")
                .bind(f.quantity)
                .bind(now)
                .bind(participant)
                .execute(&mut *conn)
                .await?;
            "vote.payment.success"
        }
        _ => {
            sqlx::query(
                "INSERT INTO donations (id, account_id, campaign_id, transaction_reference, amount, email, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(new_id())
            .bind(f.account_id)
            .bind(f.campaign_id)
            .bind(f.reference)
            .bind(f.price)
            .bind(f.email)
            .bind(now)
            .execute(&mut *conn)
            .await?;
            "donation.payment.success"
        }
    };
    let notification = new_id();
    let payload = json!({
        "reference": f.reference,
        "transactionType": f.transaction_type,
        "campaignId": f.campaign_id,
        "quantity": f.quantity,
        "amount": f.amount,
    });
    sqlx::query(
        "INSERT INTO notifications (id, account_id, channel, event_type, recipient, subject, payload, status, \
         created_at, updated_at) VALUES ($1, $2, 'email', $3, $4, NULL, $5, 'queued', $6, $6)",
    )
    .bind(&notification)
    .bind(f.account_id)
    .bind(event_type)
    .bind(f.email)
    .bind(payload.to_string())
    .bind(now)
    .execute(&mut *conn)
    .await?;
    jobs::enqueue(conn, queue::NOTIFICATION, &notification, now, now).await
}

pub(crate) async fn ledger_entry(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    kind: &str,
    amount: i64,
    reference: &str,
    settles_at: i64,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO ledger_entries (id, account_id, kind, amount, reference, settles_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(new_id())
    .bind(account_id)
    .bind(kind)
    .bind(amount)
    .bind(reference)
    .bind(settles_at)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

impl Store {
    /// Opens a paid purchase: the pending transaction, its inventory hold (tickets) and its
    /// verify-polling job, in one transaction. Sold out → `SoldOut`, nothing written.
    pub async fn open_transaction(&self, t: &NewTransaction, first_poll_at: i64, now: i64) -> StoreResult<()> {
        let mut tx = self.writer().begin().await?;
        let mut reserved = 0;
        if let (TransactionType::Ticket, Some(tt)) = (t.transaction_type, &t.ticket_type_id) {
            let held = sqlx::query(
                "UPDATE ticket_types SET quantity_held = quantity_held + $1, updated_at = $2 \
                 WHERE id = $3 AND account_id = $4 AND status = 'active' \
                 AND quantity_sold + quantity_held + $1 <= quantity_available",
            )
            .bind(t.quantity)
            .bind(now)
            .bind(tt)
            .bind(&t.account_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if held != 1 {
                return Err(sold_out());
            }
            reserved = t.quantity;
        }
        insert_transaction(&mut tx, t, TxStatus::Pending, reserved, false, now).await?;
        jobs::enqueue(&mut tx, queue::CHARGE, &t.reference, first_poll_at, now).await?;
        tx.commit().await?;
        Ok(())
    }

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

    /// No provider took the charge (D5.4, D16.6): the transaction, its hold and its job go, as if
    /// it had never been opened.
    pub async fn drop_transaction(&self, reference: &str, now: i64) -> StoreResult<()> {
        let mut tx = self.writer().begin().await?;
        let row = sqlx::query(
            "SELECT ticket_type_id, reserved FROM transactions WHERE reference = $1 AND status = 'pending'",
        )
        .bind(reference)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = row {
            release_hold(&mut tx, row.try_get("ticket_type_id")?, row.try_get("reserved")?, now).await?;
            jobs::finish(&mut tx, queue::CHARGE, reference).await?;
            sqlx::query("DELETE FROM transactions WHERE reference = $1").bind(reference).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// A purchase that costs nothing (D16.6): success at once, no provider, fulfilled in the
    /// same transaction. Sold out → `SoldOut`, nothing written.
    pub async fn complete_free(&self, t: &NewTransaction, now: i64) -> StoreResult<()> {
        let mut tx = self.writer().begin().await?;
        if let (TransactionType::Ticket, Some(tt)) = (t.transaction_type, &t.ticket_type_id) {
            let sold = sqlx::query(
                "UPDATE ticket_types SET quantity_sold = quantity_sold + $1, updated_at = $2 \
                 WHERE id = $3 AND account_id = $4 AND status = 'active' \
                 AND quantity_sold + quantity_held + $1 <= quantity_available",
            )
            .bind(t.quantity)
            .bind(now)
            .bind(tt)
            .bind(&t.account_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if sold != 1 {
                return Err(sold_out());
            }
        }
        insert_transaction(&mut tx, t, TxStatus::Success, 0, true, now).await?;
        fulfil(
            &mut tx,
            &Fulfil {
                reference: &t.reference,
                account_id: &t.account_id,
                transaction_type: t.transaction_type.as_str(),
                campaign_id: &t.campaign_id,
                ticket_type_id: t.ticket_type_id.as_deref(),
                participant_id: t.participant_id.as_deref(),
                quantity: t.quantity,
                price: t.price,
                amount: t.amount,
                email: &t.email,
                full_name: t.full_name.as_deref(),
            },
            now,
        )
        .await?;
        tx.commit().await?;
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

    /// Tickets a transaction issued, in issue order.
    pub async fn tickets_of(&self, reference: &str) -> StoreResult<Vec<Ticket>> {
        let rows = sqlx::query(&format!(
            "SELECT {TICKET_COLUMNS} {TICKET_FROM} WHERE k.transaction_reference = $1 ORDER BY k.created_at, k.id"
        ))
        .bind(reference)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(ticket_from_row).collect()
    }

    /// Tickets of several transactions (list reads), grouped by reference, in issue order.
    pub async fn tickets_of_many(&self, references: &[String]) -> StoreResult<HashMap<String, Vec<Ticket>>> {
        let mut out: HashMap<String, Vec<Ticket>> = HashMap::new();
        if references.is_empty() {
            return Ok(out);
        }
        let sql = format!(
            "SELECT {TICKET_COLUMNS} {TICKET_FROM} WHERE k.transaction_reference IN ({}) ORDER BY k.created_at, k.id",
            placeholders(references.len())
        );
        for row in bind_all(sqlx::query(&sql), references).fetch_all(self.reader()).await? {
            let t = ticket_from_row(&row)?;
            out.entry(t.transaction_reference.clone()).or_default().push(t);
        }
        Ok(out)
    }

    /// The donation ids of several transactions (list reads), by reference.
    pub async fn donations_of_many(&self, references: &[String]) -> StoreResult<HashMap<String, String>> {
        if references.is_empty() {
            return Ok(HashMap::new());
        }
        let sql = format!(
            "SELECT id, transaction_reference FROM donations WHERE transaction_reference IN ({})",
            placeholders(references.len())
        );
        bind_all(sqlx::query(&sql), references)
            .fetch_all(self.reader())
            .await?
            .iter()
            .map(|r| Ok((r.try_get("transaction_reference")?, r.try_get("id")?)))
            .collect()
    }

    /// The id of the donation a transaction recorded.
    pub async fn donation_of(&self, reference: &str) -> StoreResult<Option<String>> {
        Ok(sqlx::query("SELECT id FROM donations WHERE transaction_reference = $1")
            .bind(reference)
            .fetch_optional(self.reader())
            .await?
            .map(|r| r.try_get("id"))
            .transpose()?)
    }

    /// The provider confirmed the charge (amount and currency checked by the caller): credits
    /// the ledger and fulfils, in one transaction with the move to `success` (D6.3, D16.2,
    /// D16.4). Runs at most once per transaction whatever calls it, however often.
    pub async fn settle_success(&self, reference: &str, settle_delay_ms: i64, now: i64) -> StoreResult<Settled> {
        let mut tx = self.writer().begin().await?;
        let Some(row) = sqlx::query(&format!("SELECT {COLUMNS} FROM transactions WHERE reference = $1"))
            .bind(reference)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(Settled::Unchanged);
        };
        let t = from_row(&row)?;
        let was_abandoned = t.status == TxStatus::Abandoned.as_str();
        if t.credited || t.mismatch || !(t.status == TxStatus::Pending.as_str() || was_abandoned) {
            return Ok(Settled::Unchanged);
        }
        let won = sqlx::query(
            "UPDATE transactions SET credited = 1, updated_at = $1 WHERE reference = $2 AND credited = 0 AND status = $3",
        )
        .bind(now)
        .bind(reference)
        .bind(&t.status)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if won != 1 {
            return Ok(Settled::Unchanged);
        }
        // The inventory: a held reservation becomes sold; a late payment takes a seat only if
        // one is still free.
        let room = match (t.transaction_type.as_str(), t.ticket_type_id.as_deref()) {
            ("ticket", Some(tt)) if t.reserved > 0 => {
                sqlx::query(
                    "UPDATE ticket_types SET quantity_held = quantity_held - $1, quantity_sold = quantity_sold + $2, \
                     updated_at = $3 WHERE id = $4",
                )
                .bind(t.reserved)
                .bind(t.quantity)
                .bind(now)
                .bind(tt)
                .execute(&mut *tx)
                .await?;
                true
            }
            ("ticket", Some(tt)) => {
                sqlx::query(
                    "UPDATE ticket_types SET quantity_sold = quantity_sold + $1, updated_at = $2 \
                     WHERE id = $3 AND quantity_sold + quantity_held + $1 <= quantity_available",
                )
                .bind(t.quantity)
                .bind(now)
                .bind(tt)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                    == 1
            }
            _ => true,
        };
        let status = if room { TxStatus::Success } else { TxStatus::Abandoned };
        sqlx::query(
            "UPDATE transactions SET status = $1, reserved = 0, fulfilled = $2, paid_late = $3, paid_at = $4, \
             updated_at = $4 WHERE reference = $5",
        )
        .bind(status.as_str())
        .bind(i64::from(room))
        .bind(i64::from(was_abandoned))
        .bind(now)
        .bind(reference)
        .execute(&mut *tx)
        .await?;
        let settles_at = now + settle_delay_ms;
        ledger_entry(&mut tx, &t.account_id, "charge", t.amount, reference, settles_at, now).await?;
        if t.fees > 0 {
            ledger_entry(&mut tx, &t.account_id, "fee", -t.fees, reference, settles_at, now).await?;
        }
        if room {
            fulfil(
                &mut tx,
                &Fulfil {
                    reference,
                    account_id: &t.account_id,
                    transaction_type: &t.transaction_type,
                    campaign_id: &t.campaign_id,
                    ticket_type_id: t.ticket_type_id.as_deref(),
                    participant_id: t.participant_id.as_deref(),
                    quantity: t.quantity,
                    price: t.price,
                    amount: t.amount,
                    email: &t.email,
                    full_name: t.full_name.as_deref(),
                },
                now,
            )
            .await?;
        }
        jobs::finish(&mut tx, queue::CHARGE, reference).await?;
        tx.commit().await?;
        Ok(if room { Settled::Fulfilled } else { Settled::CreditedOnly })
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

    /// Moves a pending transaction to `failed` or `abandoned` and releases its hold, once
    /// (D6.3, D16.4). A mismatched one keeps `pending` and only releases its hold. Returns
    /// whether anything changed.
    pub async fn close_transaction(&self, reference: &str, to: TxStatus, now: i64) -> StoreResult<bool> {
        let mut tx = self.writer().begin().await?;
        let Some(row) = sqlx::query(
            "SELECT status, reserved, ticket_type_id, mismatch, credited FROM transactions WHERE reference = $1",
        )
        .bind(reference)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(false);
        };
        let status: String = row.try_get("status")?;
        let reserved: i64 = row.try_get("reserved")?;
        let mismatch = row.try_get::<i64, _>("mismatch")? != 0;
        if status != TxStatus::Pending.as_str() || row.try_get::<i64, _>("credited")? != 0 {
            jobs::finish(&mut tx, queue::CHARGE, reference).await?;
            tx.commit().await?;
            return Ok(false);
        }
        let next = if mismatch { TxStatus::Pending } else { to };
        let moved = sqlx::query(
            "UPDATE transactions SET status = $1, reserved = 0, updated_at = $2 \
             WHERE reference = $3 AND status = 'pending' AND reserved = $4 AND credited = 0",
        )
        .bind(next.as_str())
        .bind(now)
        .bind(reference)
        .bind(reserved)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if moved != 1 {
            return Ok(false);
        }
        release_hold(&mut tx, row.try_get("ticket_type_id")?, reserved, now).await?;
        jobs::finish(&mut tx, queue::CHARGE, reference).await?;
        tx.commit().await?;
        Ok(true)
    }
}

/// `$1, $2, …, $n` for an `IN (…)` list.
fn placeholders(n: usize) -> String {
    (1..=n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

fn bind_all<'q>(
    mut q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    values: &'q [String],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for v in values {
        q = q.bind(v.as_str());
    }
    q
}

async fn release_hold(
    conn: &mut sqlx::AnyConnection,
    ticket_type_id: Option<String>,
    reserved: i64,
    now: i64,
) -> StoreResult<()> {
    if let (Some(tt), true) = (ticket_type_id, reserved > 0) {
        sqlx::query("UPDATE ticket_types SET quantity_held = quantity_held - $1, updated_at = $2 WHERE id = $3")
            .bind(reserved)
            .bind(now)
            .bind(tt)
            .execute(conn)
            .await?;
    }
    Ok(())
}

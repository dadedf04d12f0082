//! The ledger (D5.6, D12.4, D16.2–3): append-only entries; a balance is a sum, never a stored
//! number. And the money audit behind `tessera admin ledger check`: every figure the ledger
//! holds must be explained by what was paid, what was fulfilled and what was withdrawn.
use sqlx::Row;

use super::query::{Arg, Filter};
use super::sqlite_read::{FromRow, Get};
use super::{Store, StoreResult};
use crate::domain::withdrawals::WithdrawalStatus;

pub use crate::domain::ledger::kind;

/// Appends one entry in the caller's transaction (the ledger's unique (kind, reference) refuses
/// a second entry of a kind for the same charge or withdrawal, whatever calls this).
pub(crate) async fn entry(
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
    .bind(crate::domain::new_id())
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    pub id: String,
    pub kind: String,
    /// Signed pesewas.
    pub amount: i64,
    pub reference: String,
    pub settles_at: i64,
    pub created_at: i64,
}

/// D16.3, in pesewas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Balance {
    pub available: i64,
    pub pending: i64,
    pub held: i64,
}

/// One broken invariant found by the audit.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Discrepancy {
    pub account: String,
    pub check: &'static str,
    pub subject: String,
    pub expected: i64,
    pub found: i64,
}

impl FromRow for LedgerEntry {
    fn from_row(r: &impl Get) -> StoreResult<LedgerEntry> {
        Ok(LedgerEntry {
            id: r.get("id")?,
            kind: r.get("kind")?,
            amount: r.get("amount")?,
            reference: r.get("reference")?,
            settles_at: r.get("settles_at")?,
            created_at: r.get("created_at")?,
        })
    }
}

pub(super) fn sum(expr: &str) -> String {
    format!("CAST(COALESCE(SUM({expr}), 0) AS BIGINT)")
}

impl Store {
    /// The account's balance at `now`.
    pub async fn balance(&self, account_id: &str, now: i64) -> StoreResult<Balance> {
        let sql = format!(
            "SELECT {} AS pending, {} AS available, {} AS held FROM ledger_entries WHERE account_id = $2",
            sum("CASE WHEN settles_at > $1 THEN amount ELSE 0 END"),
            sum("CASE WHEN settles_at > $1 THEN 0 ELSE amount END"),
            sum("CASE WHEN kind IN ($3, $4, $5, $6) THEN amount ELSE 0 END"),
        );
        let row = sqlx::query(&sql)
            .bind(now)
            .bind(account_id)
            .bind(kind::WITHDRAWAL_HOLD)
            .bind(kind::WITHDRAWAL_RELEASE)
            .bind(kind::REFUND_HOLD)
            .bind(kind::REFUND_RELEASE)
            .fetch_one(self.reader())
            .await?;
        Ok(Balance {
            pending: row.try_get("pending")?,
            available: row.try_get("available")?,
            held: -row.try_get::<i64, _>("held")?,
        })
    }

    /// One page of the account's entries, newest first, of one kind when `kind` is given, with
    /// the total (`GET /ledger` and the console's ledger page).
    pub async fn ledger_entries(
        &self,
        account_id: &str,
        kind: Option<&str>,
        page: (u32, u32),
    ) -> StoreResult<(Vec<LedgerEntry>, u64)> {
        let mut f = Filter::new();
        f.and("account_id = ?", Arg::Text(account_id.into()));
        if let Some(k) = kind {
            f.and("kind = ?", Arg::Text(k.into()));
        }
        self.page_of(
            "id, kind, amount, reference, settles_at, created_at",
            "FROM ledger_entries",
            "created_at DESC, id DESC",
            &f,
            page,
        )
        .await
    }

    /// The money audit of one account (by slug) or of all: every discrepancy between the ledger
    /// and what was paid, and between what was paid and what was fulfilled. Empty = clean.
    pub async fn check_ledger(&self, account_slug: Option<&str>) -> StoreResult<Vec<Discrepancy>> {
        let accounts = sqlx::query("SELECT id, slug FROM accounts ORDER BY slug").fetch_all(self.reader()).await?;
        let mut found = Vec::new();
        for a in &accounts {
            let (id, slug): (String, String) = (a.try_get("id")?, a.try_get("slug")?);
            if account_slug.is_some_and(|s| s != slug) {
                continue;
            }
            self.check_account(&id, &slug, &mut found).await?;
        }
        Ok(found)
    }

    async fn check_account(&self, id: &str, slug: &str, out: &mut Vec<Discrepancy>) -> StoreResult<()> {
        let mut push = |check: &'static str, subject: String, expected: i64, got: i64| {
            if expected != got {
                out.push(Discrepancy { account: slug.to_string(), check, subject, expected, found: got });
            }
        };
        // Totals: charges = what confirmed (credited) transactions were charged; fees likewise.
        let totals = format!(
            "SELECT \
             (SELECT {} FROM ledger_entries WHERE account_id = $1 AND kind = $2) AS charges, \
             (SELECT {} FROM transactions WHERE account_id = $1 AND credited = 1) AS credited, \
             (SELECT {} FROM ledger_entries WHERE account_id = $1 AND kind = $3) AS fee_entries, \
             (SELECT {} FROM transactions WHERE account_id = $1 AND credited = 1) AS credited_fees, \
             (SELECT COUNT(*) FROM ledger_entries l WHERE l.account_id = $1 AND l.kind IN ($2, $3) \
                AND NOT EXISTS (SELECT 1 FROM transactions t WHERE t.reference = l.reference AND t.credited = 1)) AS orphans, \
             (SELECT COUNT(*) FROM ledger_entries WHERE account_id = $1 AND kind NOT IN \
                ($2, $3, $4, $5, $6, $7, $8, $9)) AS unknown_kinds, \
             (SELECT COUNT(*) FROM transactions WHERE account_id = $1 AND mismatch = 1 AND credited = 1) AS mismatched_credits",
            sum("amount"),
            sum("amount"),
            sum("amount"),
            sum("fees"),
        );
        let mut q = sqlx::query(&totals).bind(id);
        for k in kind::ALL {
            q = q.bind(k);
        }
        let t = q.fetch_one(self.reader()).await?;
        push("charges_equal_confirmed_amounts", "ledger".into(), t.try_get("credited")?, t.try_get("charges")?);
        push(
            "fees_equal_confirmed_fees",
            "ledger".into(),
            -t.try_get::<i64, _>("credited_fees")?,
            t.try_get("fee_entries")?,
        );
        push("no_entry_without_confirmed_charge", "ledger".into(), 0, t.try_get("orphans")?);
        push("no_unknown_entry_kind", "ledger".into(), 0, t.try_get("unknown_kinds")?);
        push("mismatch_never_credited", "transactions".into(), 0, t.try_get("mismatched_credits")?);

        // Withdrawals (D16.2): each one's hold, release and debit match its state — open: the
        // hold only; completed: hold, release and debit; failed or cancelled: hold and release.
        let withdrawals = format!(
            "SELECT w.id, w.status, w.amount, \
             (SELECT {} FROM ledger_entries l WHERE l.account_id = w.account_id AND l.reference = w.id AND l.kind = $2) AS hold, \
             (SELECT {} FROM ledger_entries l WHERE l.account_id = w.account_id AND l.reference = w.id AND l.kind = $3) AS released, \
             (SELECT {} FROM ledger_entries l WHERE l.account_id = w.account_id AND l.reference = w.id AND l.kind = $4) AS debited \
             FROM withdrawals w WHERE w.account_id = $1",
            sum("l.amount"),
            sum("l.amount"),
            sum("l.amount"),
        );
        let kinds = [kind::WITHDRAWAL_HOLD, kind::WITHDRAWAL_RELEASE, kind::WITHDRAWAL_DEBIT];
        let rows = sqlx::query(&withdrawals).bind(id).bind(kinds[0]).bind(kinds[1]).bind(kinds[2]);
        for r in &rows.fetch_all(self.reader()).await? {
            let (w, status, amount): (String, String, i64) =
                (r.try_get("id")?, r.try_get("status")?, r.try_get("amount")?);
            let status = WithdrawalStatus::from_stored(&status);
            let ended = status.is_some_and(WithdrawalStatus::is_final);
            push("withdrawal_held_once", w.clone(), -amount, r.try_get("hold")?);
            push("withdrawal_released_when_ended", w.clone(), if ended { amount } else { 0 }, r.try_get("released")?);
            push(
                "withdrawal_debited_when_completed",
                w,
                if status == Some(WithdrawalStatus::Completed) { -amount } else { 0 },
                r.try_get("debited")?,
            );
        }
        let orphans = sqlx::query(
            "SELECT COUNT(*) AS n FROM ledger_entries l WHERE l.account_id = $1 AND l.kind IN ($2, $3, $4) \
             AND NOT EXISTS (SELECT 1 FROM withdrawals w WHERE w.id = l.reference AND w.account_id = l.account_id)",
        )
        .bind(id)
        .bind(kinds[0])
        .bind(kinds[1])
        .bind(kinds[2])
        .fetch_one(self.reader())
        .await?;
        push("no_withdrawal_entry_without_withdrawal", "ledger".into(), 0, orphans.try_get("n")?);
        self.check_refunds(id, &mut push).await?;
        let available = self.balance(id, crate::domain::time::now_ms()).await?.available;
        push("available_never_negative", "balance".into(), 0, available.min(0));

        // Tickets issued = quantity of each fulfilled ticket purchase, and none for the others.
        let rows = sqlx::query(
            "SELECT t.reference, CASE WHEN t.fulfilled = 1 THEN t.quantity ELSE 0 END AS expected, \
             (SELECT COUNT(*) FROM tickets k WHERE k.transaction_reference = t.reference) AS issued \
             FROM transactions t WHERE t.account_id = $1 AND t.transaction_type = 'ticket'",
        )
        .bind(id)
        .fetch_all(self.reader())
        .await?;
        for r in &rows {
            push(
                "tickets_issued_equal_paid_quantity",
                r.try_get("reference")?,
                r.try_get("expected")?,
                r.try_get("issued")?,
            );
        }
        // Inventory: sold = fulfilled quantities; held = what pending transactions reserve.
        let inventory = format!(
            "SELECT tt.id, tt.quantity_sold, tt.quantity_held, \
             (SELECT {} FROM transactions t WHERE t.ticket_type_id = tt.id AND t.fulfilled = 1) AS sold, \
             (SELECT {} FROM transactions t WHERE t.ticket_type_id = tt.id) AS held \
             FROM ticket_types tt WHERE tt.account_id = $1",
            sum("t.quantity"),
            sum("t.reserved"),
        );
        for r in &sqlx::query(&inventory).bind(id).fetch_all(self.reader()).await? {
            let tt: String = r.try_get("id")?;
            push("ticket_type_sold_equals_fulfilled", tt.clone(), r.try_get("sold")?, r.try_get("quantity_sold")?);
            push("ticket_type_held_equals_reserved", tt, r.try_get("held")?, r.try_get("quantity_held")?);
        }
        // Votes: a participant's count = the votes its fulfilled vote purchases bought.
        // Less what pending and succeeded refunds took back (D17.35; issue 26 item 4).
        let votes = format!(
            "SELECT p.id, p.votes, (SELECT {} FROM transactions t WHERE t.participant_id = p.id AND t.fulfilled = 1 \
             AND t.transaction_type = 'vote') - (SELECT {} FROM refunds r JOIN transactions t \
             ON t.reference = r.transaction_reference WHERE t.participant_id = p.id \
             AND r.status IN ('pending', 'succeeded')) AS paid FROM participants p WHERE p.account_id = $1",
            sum("t.quantity"),
            sum("r.votes"),
        );
        for r in &sqlx::query(&votes).bind(id).fetch_all(self.reader()).await? {
            push("votes_equal_paid_votes", r.try_get("id")?, r.try_get("paid")?, r.try_get("votes")?);
        }
        // Votes bought = amount / vote_price of each fulfilled vote purchase.
        let bought = sqlx::query(
            "SELECT t.reference, t.quantity, t.price, c.vote_price FROM transactions t \
             JOIN campaigns c ON c.id = t.campaign_id WHERE t.account_id = $1 AND t.transaction_type = 'vote'",
        )
        .bind(id)
        .fetch_all(self.reader())
        .await?;
        for r in &bought {
            let price: i64 = r.try_get("price")?;
            let vote_price: Option<i64> = r.try_get("vote_price")?;
            let expected = vote_price.filter(|v| *v > 0).map_or(0, |v| price / v);
            push(
                "votes_bought_equal_amount_over_vote_price",
                r.try_get("reference")?,
                expected,
                r.try_get("quantity")?,
            );
        }
        // Donations: one per fulfilled donation purchase, of its price.
        let donations = format!(
            "SELECT t.reference, CASE WHEN t.fulfilled = 1 THEN t.price ELSE 0 END AS expected, \
             (SELECT {} FROM donations d WHERE d.transaction_reference = t.reference) AS recorded \
             FROM transactions t WHERE t.account_id = $1 AND t.transaction_type = 'donation'",
            sum("d.amount"),
        );
        for r in &sqlx::query(&donations).bind(id).fetch_all(self.reader()).await? {
            push(
                "donation_recorded_equals_paid",
                r.try_get("reference")?,
                r.try_get("expected")?,
                r.try_get("recorded")?,
            );
        }
        Ok(())
    }

    /// The refunds' part of the audit (D17.34–38; issue 26 item 4): each refund's hold, release
    /// and debit match its state; each payment's claim and `refunded` match its refunds and stay
    /// within what was paid; voided tickets are those of live refunds, as many as they name; a
    /// donation's refunded amount is its live refunds'.
    async fn check_refunds(&self, id: &str, push: &mut impl FnMut(&'static str, String, i64, i64)) -> StoreResult<()> {
        let refunds = format!(
            "SELECT r.id, r.status, r.amount, r.ticket_codes, \
             (SELECT {} FROM ledger_entries l WHERE l.account_id = r.account_id AND l.reference = r.id AND l.kind = $2) AS hold, \
             (SELECT {} FROM ledger_entries l WHERE l.account_id = r.account_id AND l.reference = r.id AND l.kind = $3) AS released, \
             (SELECT {} FROM ledger_entries l WHERE l.account_id = r.account_id AND l.reference = r.id AND l.kind = $4) AS debited, \
             (SELECT COUNT(*) FROM tickets k WHERE k.void_refund_id = r.id AND k.status = 'void') AS voided \
             FROM refunds r WHERE r.account_id = $1",
            sum("l.amount"),
            sum("l.amount"),
            sum("l.amount"),
        );
        let rows = sqlx::query(&refunds)
            .bind(id)
            .bind(kind::REFUND_HOLD)
            .bind(kind::REFUND_RELEASE)
            .bind(kind::REFUND_DEBIT)
            .fetch_all(self.reader())
            .await?;
        for r in &rows {
            let (refund, status, amount): (String, String, i64) =
                (r.try_get("id")?, r.try_get("status")?, r.try_get("amount")?);
            let hold: i64 = r.try_get("hold")?;
            let codes: String = r.try_get("ticket_codes")?;
            let named = serde_json::from_str::<Vec<String>>(&codes).map_or(-1, |c| c.len() as i64);
            let live = status != "failed";
            // A cancellation's refund the balance could not cover was filed failed, never held.
            let held = live || hold != 0;
            push("refund_held_once", refund.clone(), if held { -amount } else { 0 }, hold);
            push(
                "refund_released_when_ended",
                refund.clone(),
                if status == "pending" || !held { 0 } else { amount },
                r.try_get("released")?,
            );
            push(
                "refund_debited_when_succeeded",
                refund.clone(),
                if status == "succeeded" { -amount } else { 0 },
                r.try_get("debited")?,
            );
            push("voided_tickets_equal_refunded_tickets", refund, if live { named } else { 0 }, r.try_get("voided")?);
        }
        let payments = format!(
            "SELECT t.reference, t.amount, t.refund_claimed, t.refunded, \
             (SELECT {} FROM refunds r WHERE r.transaction_reference = t.reference AND r.status IN ('pending', 'succeeded')) AS claimed, \
             (SELECT {} FROM refunds r WHERE r.transaction_reference = t.reference AND r.status = 'succeeded') AS succeeded, \
             (SELECT {} FROM donations d WHERE d.transaction_reference = t.reference) AS donation_refunded, \
             t.transaction_type FROM transactions t WHERE t.account_id = $1 \
             AND (t.refund_claimed <> 0 OR t.refunded <> 0 OR EXISTS (SELECT 1 FROM refunds r WHERE r.transaction_reference = t.reference))",
            sum("r.amount"),
            sum("r.amount"),
            sum("d.refunded"),
        );
        for r in &sqlx::query(&payments).bind(id).fetch_all(self.reader()).await? {
            let reference: String = r.try_get("reference")?;
            let (amount, claimed, refunded): (i64, i64, i64) =
                (r.try_get("amount")?, r.try_get("refund_claimed")?, r.try_get("refunded")?);
            push("refund_claim_equals_live_refunds", reference.clone(), r.try_get("claimed")?, claimed);
            push("refunded_equals_succeeded_refunds", reference.clone(), r.try_get("succeeded")?, refunded);
            push("refunded_never_above_paid", reference.clone(), 0, (claimed.max(refunded) - amount).max(0));
            if r.try_get::<String, _>("transaction_type")? == "donation" {
                push("donation_refunded_equals_live_refunds", reference, claimed, r.try_get("donation_refunded")?);
            }
        }
        let stray = sqlx::query(
            "SELECT \
             (SELECT COUNT(*) FROM tickets k WHERE k.account_id = $1 AND k.status = 'void' AND NOT EXISTS \
                (SELECT 1 FROM refunds r WHERE r.id = k.void_refund_id AND r.status IN ('pending', 'succeeded'))) AS voids, \
             (SELECT COUNT(*) FROM ledger_entries l WHERE l.account_id = $1 AND l.kind IN ($2, $3, $4) \
                AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.id = l.reference AND r.account_id = l.account_id)) AS entries",
        )
        .bind(id)
        .bind(kind::REFUND_HOLD)
        .bind(kind::REFUND_RELEASE)
        .bind(kind::REFUND_DEBIT)
        .fetch_one(self.reader())
        .await?;
        push("no_void_ticket_without_live_refund", "tickets".into(), 0, stray.try_get("voids")?);
        push("no_refund_entry_without_refund", "ledger".into(), 0, stray.try_get("entries")?);
        Ok(())
    }
}

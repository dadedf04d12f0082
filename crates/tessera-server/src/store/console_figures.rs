//! The console's reads (D17.30): the dashboard's activity figures, the ledger filtered by entry
//! kind, and the payments search. Each is scoped to one account and walks only that account's
//! rows through an index (`ledger_sums`, `tickets_checked_in`, `ticket_types_by_account`,
//! `participants_by_account`, `transactions_by_account`).
use sqlx::Row;

use super::ledger::{kind, sum};
use super::query::{Arg, Filter};
use super::sqlite_read::{FromRow, Get};
use super::{Store, StoreResult};

/// The dashboard's figures that are not the balance (D17.30, D17.43).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Figures {
    /// Sum of the `charge` entries, pesewas.
    pub gross: i64,
    /// Minus the sum of the `fee` entries, pesewas (a positive number).
    pub fees: i64,
    /// Tickets the account's ticket types sold (`quantity_sold`, the API's `quantitySold`).
    pub tickets_sold: i64,
    /// The account's checked-in tickets.
    pub check_ins: i64,
    /// Votes the account's nominees hold (the API's participant `votes`).
    pub votes: i64,
}

/// The account's checked-in tickets (the partial index `tickets_checked_in` holds only those).
const CHECK_INS: &str = "SELECT COUNT(*) FROM tickets k WHERE k.account_id = $1 AND k.checked_in = 1";

/// One row of the payments page: only what it shows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PaymentRow {
    pub reference: String,
    pub created_at: i64,
    pub transaction_type: String,
    pub status: String,
    /// Pesewas the customer was charged.
    pub amount: i64,
    pub email: String,
    /// Pesewas given back by succeeded refunds.
    pub refunded: i64,
}

impl FromRow for PaymentRow {
    fn from_row(r: &impl Get) -> StoreResult<PaymentRow> {
        Ok(PaymentRow {
            reference: r.get("reference")?,
            created_at: r.get("created_at")?,
            transaction_type: r.get("transaction_type")?,
            status: r.get("status")?,
            amount: r.get("amount")?,
            email: r.get("email")?,
            refunded: r.get("refunded")?,
        })
    }
}

impl Store {
    /// Of the account's figures, the money ones (gross, fees: one pass over its ledger entries)
    /// when `money`, the activity ones (tickets sold, check-ins, votes) when `activity`; the
    /// others are 0. One statement.
    pub async fn console_figures(&self, account_id: &str, money: bool, activity: bool) -> StoreResult<Figures> {
        let ledger = if money {
            format!(
                "(SELECT {} AS gross, {} AS fees FROM ledger_entries WHERE account_id = $1)",
                sum("CASE WHEN kind = $2 THEN amount ELSE 0 END"),
                sum("CASE WHEN kind = $3 THEN amount ELSE 0 END"),
            )
        } else {
            "(SELECT 0 AS gross, 0 AS fees)".to_string()
        };
        let counts = if activity {
            format!(
                "(SELECT {} FROM ticket_types WHERE account_id = $1) AS tickets_sold, ({CHECK_INS}) AS check_ins, \
                 (SELECT {} FROM participants WHERE account_id = $1) AS votes",
                sum("quantity_sold"),
                sum("votes"),
            )
        } else {
            "CAST(0 AS BIGINT) AS tickets_sold, CAST(0 AS BIGINT) AS check_ins, CAST(0 AS BIGINT) AS votes".to_string()
        };
        let sql = format!(
            "SELECT CAST(l.gross AS BIGINT) AS gross, CAST(l.fees AS BIGINT) AS fees, {counts} FROM {ledger} l"
        );
        // PostgreSQL refuses a parameter the statement does not use: bind only what it names.
        let mut q = sqlx::query(&sql);
        if money || activity {
            q = q.bind(account_id);
        }
        if money {
            q = q.bind(kind::CHARGE).bind(kind::FEE);
        }
        let r = q.fetch_one(self.reader()).await?;
        Ok(Figures {
            gross: r.try_get("gross")?,
            fees: -r.try_get::<i64, _>("fees")?,
            tickets_sold: r.try_get("tickets_sold")?,
            check_ins: r.try_get("check_ins")?,
            votes: r.try_get("votes")?,
        })
    }

    /// The account's checked-in tickets (D17.32: the dashboard's figure, the gate page's counter
    /// and the live stream's).
    pub async fn checked_in_count(&self, account_id: &str) -> StoreResult<i64> {
        let r = sqlx::query(&format!("SELECT ({CHECK_INS}) AS n")).bind(account_id).fetch_one(self.reader()).await?;
        Ok(r.try_get("n")?)
    }

    /// One page of the account's payments, newest first: all of them when `q` is empty, else
    /// the one whose reference is `q` and those whose customer e-mail is `q` in any case.
    pub async fn console_payments(
        &self,
        account_id: &str,
        q: &str,
        page: (u32, u32),
    ) -> StoreResult<(Vec<PaymentRow>, u64)> {
        let mut f = Filter::new();
        f.and("account_id = ?", Arg::Text(account_id.into()));
        if !q.is_empty() {
            f.and("(reference = ? OR lower(email) = lower(?))", Arg::Text(q.into()));
        }
        self.page_of(
            "reference, created_at, transaction_type, status, amount, email, refunded",
            "FROM transactions",
            "created_at DESC, reference DESC",
            &f,
            page,
        )
        .await
    }
}

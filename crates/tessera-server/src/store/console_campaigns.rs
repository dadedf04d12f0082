//! Reads of the console's campaign and gate pages (D17.30, D17.32) that no API route already
//! makes: the account's checked-in ticket count (the live counter), a campaign's ticket types
//! whatever their status, and its sales per day. Tenant-scoped: every read takes the account id.
use sqlx::Row;

use super::{Store, StoreResult};

/// One ticket type of a campaign as the campaign page shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TicketTypeLine {
    pub id: String,
    pub name: String,
    pub status: String,
    /// Pesewas.
    pub price: i64,
    pub quantity: i64,
    pub sold: i64,
    /// Seats held by checkouts not yet paid.
    pub held: i64,
    /// `quantity − sold`.
    pub remaining: i64,
}

/// The successful payments of one UTC day.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DaySales {
    /// The day's first millisecond (UTC).
    pub day: i64,
    pub payments: i64,
    /// Pesewas: the sum of the payments' `amount` (what the customers were charged).
    pub amount: i64,
}

const DAY_MS: i64 = 86_400_000;

/// Ticket types a campaign page lists at most.
pub const MAX_TICKET_TYPES: i64 = 200;

impl Store {
    /// Every ticket type of the account's campaign (any status), oldest first.
    pub async fn campaign_ticket_types(&self, account_id: &str, campaign_id: &str) -> StoreResult<Vec<TicketTypeLine>> {
        let rows = sqlx::query(
            "SELECT id, name, status, price, quantity_available, quantity_sold, quantity_held FROM ticket_types \
             WHERE account_id = $1 AND campaign_id = $2 ORDER BY created_at, id LIMIT $3",
        )
        .bind(account_id)
        .bind(campaign_id)
        .bind(MAX_TICKET_TYPES)
        .fetch_all(self.reader())
        .await?;
        rows.iter()
            .map(|r| {
                let quantity: i64 = r.try_get("quantity_available")?;
                let sold: i64 = r.try_get("quantity_sold")?;
                Ok(TicketTypeLine {
                    id: r.try_get("id")?,
                    name: r.try_get("name")?,
                    status: r.try_get("status")?,
                    price: r.try_get("price")?,
                    quantity,
                    sold,
                    held: r.try_get("quantity_held")?,
                    remaining: quantity - sold,
                })
            })
            .collect()
    }

    /// The successful payments of the account's campaign per UTC day (by when they were paid),
    /// the newest `days` days that had any, newest first.
    pub async fn campaign_sales_per_day(
        &self,
        account_id: &str,
        campaign_id: &str,
        days: i64,
    ) -> StoreResult<Vec<DaySales>> {
        let day = format!("(COALESCE(paid_at, created_at) / {DAY_MS})");
        let sql = format!(
            "SELECT {day} AS day_n, COUNT(*) AS payments, CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS amount \
             FROM transactions WHERE account_id = $1 AND campaign_id = $2 AND status = 'success' \
             GROUP BY {day} ORDER BY {day} DESC LIMIT $3"
        );
        let rows = sqlx::query(&sql).bind(account_id).bind(campaign_id).bind(days).fetch_all(self.reader()).await?;
        rows.iter()
            .map(|r| {
                let n: i64 = r.try_get("day_n")?;
                Ok(DaySales { day: n * DAY_MS, payments: r.try_get("payments")?, amount: r.try_get("amount")? })
            })
            .collect()
    }
}

//! Donations (D5.1): one row per fulfilled donation payment, written by the fulfilment flow in
//! the transaction that credits the payment.
use std::collections::HashMap;

use sqlx::Row;

use super::payments::{bind_all, placeholders};
use super::{Store, StoreResult};
use crate::domain::new_id;

/// Records a donation of `amount` pesewas in the caller's transaction.
pub(crate) async fn record(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    campaign_id: &str,
    reference: &str,
    amount: i64,
    email: &str,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO donations (id, account_id, campaign_id, transaction_reference, amount, email, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(new_id())
    .bind(account_id)
    .bind(campaign_id)
    .bind(reference)
    .bind(amount)
    .bind(email)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

impl Store {
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
        let mut conn = self.reader().acquire().await?;
        donation_of_in(&mut conn, reference).await
    }
}

/// [`Store::donation_of`] in the caller's transaction (an event's payment, D17.26).
pub(crate) async fn donation_of_in(conn: &mut sqlx::AnyConnection, reference: &str) -> StoreResult<Option<String>> {
    Ok(sqlx::query("SELECT id FROM donations WHERE transaction_reference = $1")
        .bind(reference)
        .fetch_optional(conn)
        .await?
        .map(|r| r.try_get("id"))
        .transpose()?)
}

//! Events (D17.25, D17.41): what happened to an account, recorded in the transaction of the
//! change itself with the account's next gap-free `sequence`, and fanned out in the same
//! transaction to a pending delivery for each enabled endpoint that takes the type. The feed
//! (`GET /events`) reads them back in sequence order.
use sqlx::Row;

use super::{Store, StoreResult};
use crate::domain::new_id;
use crate::domain::webhooks::EventType;

/// A recorded event as the feed and the deliveries show it.
#[derive(Debug, Clone)]
pub struct Event {
    pub id: String,
    pub account_id: String,
    pub sequence: i64,
    pub event_type: String,
    /// The JSON object exactly as delivered.
    pub data: String,
    pub created_at: i64,
}

const EVENT_COLUMNS: &str = "id, account_id, sequence, type, data, created_at";

pub(crate) fn event_from_row(r: &sqlx::any::AnyRow) -> StoreResult<Event> {
    Ok(Event {
        id: r.try_get("id")?,
        account_id: r.try_get("account_id")?,
        sequence: r.try_get("sequence")?,
        event_type: r.try_get("type")?,
        data: r.try_get("data")?,
        created_at: r.try_get("created_at")?,
    })
}

/// Records an event of the account in the caller's transaction and queues its deliveries.
/// Returns the event's id.
pub(crate) async fn record(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    event_type: EventType,
    data: &serde_json::Value,
    now: i64,
) -> StoreResult<String> {
    // The row lock this upsert takes orders the account's concurrent changes: a sequence is
    // given at most once and a rolled-back change gives its number back.
    let sequence: i64 = sqlx::query(
        "INSERT INTO event_sequences (account_id, last) VALUES ($1, 1) \
         ON CONFLICT (account_id) DO UPDATE SET last = event_sequences.last + 1 RETURNING last",
    )
    .bind(account_id)
    .fetch_one(&mut *conn)
    .await?
    .try_get("last")?;
    let id = new_id();
    sqlx::query(
        "INSERT INTO events (id, account_id, sequence, type, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&id)
    .bind(account_id)
    .bind(sequence)
    .bind(event_type.as_str())
    .bind(data.to_string())
    .bind(now)
    .execute(&mut *conn)
    .await?;
    let endpoints =
        sqlx::query("SELECT id, event_types FROM webhook_endpoints WHERE account_id = $1 AND status = 'enabled'")
            .bind(account_id)
            .fetch_all(&mut *conn)
            .await?;
    for row in endpoints {
        let endpoint: String = row.try_get("id")?;
        let types: Option<String> = row.try_get("event_types")?;
        if takes(types.as_deref(), event_type.as_str()) {
            enqueue_delivery(conn, account_id, &endpoint, &id, sequence, now).await?;
        }
    }
    Ok(id)
}

/// Whether an endpoint with the stored `event_types` (a JSON array, NULL for all) takes `t`.
pub(crate) fn takes(types: Option<&str>, t: &str) -> bool {
    match types {
        None => true,
        Some(json) => serde_json::from_str::<Vec<String>>(json).map(|v| v.iter().any(|x| x == t)).unwrap_or(true),
    }
}

/// Queues one event for one endpoint (a new event, or a replay) in the caller's transaction.
pub(crate) async fn enqueue_delivery(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    endpoint_id: &str,
    event_id: &str,
    sequence: i64,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, sequence, status, attempts, next_at, \
         created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 'pending', 0, $6, $6, $6)",
    )
    .bind(new_id())
    .bind(account_id)
    .bind(endpoint_id)
    .bind(event_id)
    .bind(sequence)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Ends an endpoint's parking (D17.41): a replay or a re-enable may have put a delivery that
/// is due now ahead of the retry the endpoint was parked for. A worker holding the endpoint
/// (an owner is set) finds the new head itself.
pub(crate) async fn wake(conn: &mut sqlx::AnyConnection, endpoint_id: &str) -> StoreResult<()> {
    sqlx::query("UPDATE webhook_endpoints SET lease_until = NULL WHERE id = $1 AND lease_owner IS NULL")
        .bind(endpoint_id)
        .execute(conn)
        .await?;
    Ok(())
}

impl Store {
    /// The feed (`GET /events?after=&limit=`): the account's events after `after`, in sequence
    /// order.
    pub async fn events_after(&self, account_id: &str, after: i64, limit: i64) -> StoreResult<Vec<Event>> {
        let rows = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE account_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3"
        ))
        .bind(account_id)
        .bind(after)
        .bind(limit)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(event_from_row).collect()
    }

    /// One event of the account (404 as no event when another account's).
    pub async fn event(&self, account_id: &str, id: &str) -> StoreResult<Event> {
        let row = sqlx::query(&format!("SELECT {EVENT_COLUMNS} FROM events WHERE id = $1 AND account_id = $2"))
            .bind(id)
            .bind(account_id)
            .fetch_optional(self.reader())
            .await?;
        match row {
            Some(r) => event_from_row(&r),
            None => Err(super::StoreError::NotFound("event")),
        }
    }
}

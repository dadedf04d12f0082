//! Live changes (D17.5): the publishing half. A change that other instances' live views (the
//! D17.18 leaderboard, the D17.32 check-in counters) must learn of publishes a small event *in the
//! transaction that makes the change*, so that it is delivered when, and only when, that change
//! commits:
//! - PostgreSQL: `pg_notify('tessera_events', payload)` inside the transaction; PostgreSQL sends
//!   it at commit to every listening session (every instance's `live::Live` listener, this one's
//!   included) and never for a rolled-back transaction.
//! - SQLite (one process, D17.3): the events wait in the transaction and go to the in-process bus
//!   after the commit succeeded.
//!
//! The payload carries ids and a kind only (consumers re-read the store) and the schema, because
//! test servers and separate deployments may share one database in different schemas and a
//! NOTIFY channel is per database.
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::{Backend, StoreResult};

/// The one NOTIFY channel (D17.5).
pub const CHANNEL: &str = "tessera_events";

/// Events buffered per subscriber; a subscriber that falls further behind skips ahead (it
/// re-reads the store anyway, so a lag loses no truth).
const BUS_CAPACITY: usize = 1024;

/// What changed, for whom. Small on purpose: consumers re-read the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveEvent {
    pub account_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign_id: Option<String>,
    pub kind: LiveKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveKind {
    /// Tickets of the campaign were checked in (console counters, D17.32).
    Checkin,
    /// A participant of the campaign received paid votes (leaderboard, D17.18).
    Votes,
}

/// The payload on the wire: the event and the schema it belongs to.
#[derive(Debug, Serialize, Deserialize)]
struct Wire {
    schema: String,
    #[serde(flatten)]
    event: LiveEvent,
}

/// Where this store's events go: the in-process bus, and on PostgreSQL the schema named in
/// each payload. Shared by every clone of the store.
#[derive(Debug)]
pub struct LiveBus {
    sender: broadcast::Sender<LiveEvent>,
    /// PostgreSQL only: `current_schema()` of the store's connections.
    schema: Option<String>,
}

impl LiveBus {
    pub(super) fn new(schema: Option<String>) -> Arc<LiveBus> {
        Arc::new(LiveBus { sender: broadcast::channel(BUS_CAPACITY).0, schema })
    }

    /// A receiver of every event delivered from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
        self.sender.subscribe()
    }

    /// Hands an event to this process's subscribers (none listening is fine).
    pub fn deliver(&self, event: LiveEvent) {
        let _ = self.sender.send(event);
    }

    /// PostgreSQL: the schema this store works in (`None` on SQLite).
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// A NOTIFY payload's event, when it belongs to this store's schema.
    pub fn decode(&self, payload: &str) -> Option<LiveEvent> {
        let wire: Wire = serde_json::from_str(payload).ok()?;
        (Some(wire.schema.as_str()) == self.schema.as_deref()).then_some(wire.event)
    }

    fn encode(&self, event: &LiveEvent) -> String {
        let wire = Wire { schema: self.schema.clone().unwrap_or_default(), event: event.clone() };
        serde_json::to_string(&wire).unwrap_or_default()
    }
}

/// PostgreSQL: queues `events` for delivery at the commit of the transaction on `conn`, in one
/// statement whatever their number. A no-op on SQLite (the caller delivers after its commit).
pub(super) async fn notify_in(
    conn: &mut sqlx::AnyConnection,
    backend: Backend,
    bus: &LiveBus,
    events: &[LiveEvent],
) -> StoreResult<()> {
    if backend != Backend::Postgres || events.is_empty() {
        return Ok(());
    }
    let values: Vec<String> = (1..=events.len()).map(|i| format!("(${i})")).collect();
    // `pg_notify` returns void, which the Any driver cannot decode: count them instead.
    let sql = format!("SELECT count(pg_notify('{CHANNEL}', v.p)) AS n FROM (VALUES {}) v(p)", values.join(", "));
    let mut q = sqlx::query(&sql);
    for e in events {
        q = q.bind(bus.encode(e));
    }
    q.fetch_one(&mut *conn).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_round_trips_only_within_its_schema() {
        let mine = LiveBus::new(Some("t_1".into()));
        let other = LiveBus::new(Some("t_2".into()));
        let e = LiveEvent { account_id: "a".into(), campaign_id: Some("c".into()), kind: LiveKind::Checkin };
        let payload = mine.encode(&e);
        assert!(payload.len() < 200, "small payload: {payload}");
        assert_eq!(mine.decode(&payload), Some(e));
        assert_eq!(other.decode(&payload), None);
        assert_eq!(mine.decode("not json"), None);
    }
}

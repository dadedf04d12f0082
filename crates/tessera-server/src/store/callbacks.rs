//! Stored provider callbacks (D6.2): the verified raw event and its reconciliation job are
//! written in one transaction before the 200 is sent; a second delivery of the same event
//! (same provider and event key, D16.7) writes nothing.
//!
//! Intake is group-committed ([`super::group_commit`]): [`CallbackWriter`] gathers the callbacks that arrive while a
//! commit is under way and writes them together in the next transaction, so each request still waits for
//! its own callback to be durable but a burst pays for one commit, not one per callback.
//!
//! The stored names predate the word "callback" and stay (no migration): the table is
//! `webhook_events` (columns `event_key`, `event`: the callback's key and the provider's event
//! name) and the job queue is `webhook` ([`queue::CALLBACK`]).
use sqlx::Row;

use super::jobs::{self, queue};
use super::{Store, StoreResult};
use crate::domain::new_id;

#[derive(Debug, Clone, PartialEq, Eq)]
/// A stored callback (a row of `webhook_events`).
pub struct StoredCallback {
    pub id: String,
    pub provider: String,
    pub event_key: String,
    pub event: String,
    pub reference: String,
    pub payload: String,
    pub received_at: i64,
    pub processed_at: Option<i64>,
    pub outcome: Option<String>,
}

/// A verified callback to store.
#[derive(Debug, Clone)]
pub struct NewCallback {
    pub provider: &'static str,
    pub event_key: String,
    pub event: String,
    pub reference: String,
    pub payload: String,
}

/// The group-committing writer of callbacks (answers: whether each was new).
pub type CallbackWriter = super::group_commit::GroupCommit<NewCallback, bool>;

/// Starts the callback writer.
pub fn callback_writer(store: Store) -> CallbackWriter {
    CallbackWriter::start(store, |store, callbacks| {
        Box::pin(store.record_callbacks(callbacks, crate::domain::time::now_ms()))
    })
}

impl Store {
    /// Stores verified callbacks and queues their reconciliation, in one transaction of two
    /// statements whatever the batch's size. Returns, per callback, whether it was new (false for
    /// a duplicate, including a second copy within the same batch).
    pub async fn record_callbacks(&self, callbacks: &[NewCallback], now: i64) -> StoreResult<Vec<bool>> {
        if callbacks.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = callbacks.iter().map(|_| new_id()).collect();
        let rows: Vec<String> = (0..callbacks.len())
            .map(|i| {
                let b = i * 6;
                format!(
                    "(${}, ${}, ${}, ${}, ${}, ${}, ${})",
                    b + 1,
                    b + 2,
                    b + 3,
                    b + 4,
                    b + 5,
                    b + 6,
                    callbacks.len() * 6 + 1
                )
            })
            .collect();
        let sql = format!(
            "INSERT INTO webhook_events (id, provider, event_key, event, reference, payload, received_at) VALUES {} \
             ON CONFLICT (provider, event_key) DO NOTHING RETURNING id",
            rows.join(", ")
        );
        let mut insert = sqlx::query(&sql);
        for (id, w) in ids.iter().zip(callbacks) {
            insert =
                insert.bind(id).bind(w.provider).bind(&w.event_key).bind(&w.event).bind(&w.reference).bind(&w.payload);
        }
        let mut tx = self.writer().begin().await?;
        let inserted: std::collections::HashSet<String> = insert
            .bind(now)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| r.try_get::<String, _>("id"))
            .collect::<Result<_, _>>()?;
        if !inserted.is_empty() {
            let new: Vec<&String> = ids.iter().filter(|id| inserted.contains(*id)).collect();
            let rows: Vec<String> = (0..new.len())
                .map(|i| format!("(${}, '{}', ${}, $1, $1)", i * 2 + 2, queue::CALLBACK, i * 2 + 3))
                .collect();
            let sql = format!(
                "INSERT INTO jobs (id, queue, subject, run_at, created_at) VALUES {} ON CONFLICT (queue, subject) DO NOTHING",
                rows.join(", ")
            );
            let mut q = sqlx::query(&sql).bind(now);
            for id in new {
                q = q.bind(new_id()).bind(id);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(ids.iter().map(|id| inserted.contains(id)).collect())
    }

    pub async fn callback_by_id(&self, id: &str) -> StoreResult<Option<StoredCallback>> {
        let row = sqlx::query(
            "SELECT id, provider, event_key, event, reference, payload, received_at, processed_at, outcome \
             FROM webhook_events WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(self.reader())
        .await?;
        row.map(|r| {
            Ok(StoredCallback {
                id: r.try_get("id")?,
                provider: r.try_get("provider")?,
                event_key: r.try_get("event_key")?,
                event: r.try_get("event")?,
                reference: r.try_get("reference")?,
                payload: r.try_get("payload")?,
                received_at: r.try_get("received_at")?,
                processed_at: r.try_get("processed_at")?,
                outcome: r.try_get("outcome")?,
            })
        })
        .transpose()
    }

    /// Records how a callback was reconciled and ends its job, in one transaction.
    pub async fn finish_callback(&self, id: &str, outcome: &str, now: i64) -> StoreResult<()> {
        let mut tx = self.writer().begin().await?;
        sqlx::query("UPDATE webhook_events SET processed_at = $1, outcome = $2 WHERE id = $3")
            .bind(now)
            .bind(outcome)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        jobs::finish(&mut tx, queue::CALLBACK, id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// How many callbacks a provider sent for a reference (tests and operators).
    pub async fn callback_count(&self, reference: &str) -> StoreResult<i64> {
        Ok(sqlx::query("SELECT COUNT(*) AS n FROM webhook_events WHERE reference = $1")
            .bind(reference)
            .fetch_one(self.reader())
            .await?
            .try_get("n")?)
    }
}

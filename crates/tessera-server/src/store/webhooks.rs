//! Stored provider callbacks (D6.2): the verified raw event and its reconciliation job are
//! written in one transaction before the 200 is sent; a second delivery of the same event
//! (same provider and event key, D16.7) writes nothing.
use sqlx::Row;

use super::jobs::{self, queue};
use super::{Store, StoreResult};
use crate::domain::new_id;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEvent {
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

impl Store {
    /// Stores a verified event and queues its reconciliation. Returns false for a duplicate.
    pub async fn record_webhook(
        &self,
        provider: &str,
        event_key: &str,
        event: &str,
        reference: &str,
        payload: &str,
        now: i64,
    ) -> StoreResult<bool> {
        let id = new_id();
        let mut tx = self.writer().begin().await?;
        let inserted = sqlx::query(
            "INSERT INTO webhook_events (id, provider, event_key, event, reference, payload, received_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (provider, event_key) DO NOTHING",
        )
        .bind(&id)
        .bind(provider)
        .bind(event_key)
        .bind(event)
        .bind(reference)
        .bind(payload)
        .bind(now)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if inserted {
            jobs::enqueue(&mut tx, queue::WEBHOOK, &id, now, now).await?;
        }
        tx.commit().await?;
        Ok(inserted)
    }

    pub async fn webhook_event(&self, id: &str) -> StoreResult<Option<WebhookEvent>> {
        let row = sqlx::query(
            "SELECT id, provider, event_key, event, reference, payload, received_at, processed_at, outcome \
             FROM webhook_events WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(self.reader())
        .await?;
        row.map(|r| {
            Ok(WebhookEvent {
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

    /// Records how an event was reconciled and ends its job, in one transaction.
    pub async fn finish_webhook(&self, id: &str, outcome: &str, now: i64) -> StoreResult<()> {
        let mut tx = self.writer().begin().await?;
        sqlx::query("UPDATE webhook_events SET processed_at = $1, outcome = $2 WHERE id = $3")
            .bind(now)
            .bind(outcome)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        jobs::finish(&mut tx, queue::WEBHOOK, id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// How many events a provider sent for a reference (tests and operators).
    pub async fn webhook_count(&self, reference: &str) -> StoreResult<i64> {
        Ok(sqlx::query("SELECT COUNT(*) AS n FROM webhook_events WHERE reference = $1")
            .bind(reference)
            .fetch_one(self.reader())
            .await?
            .try_get("n")?)
    }
}

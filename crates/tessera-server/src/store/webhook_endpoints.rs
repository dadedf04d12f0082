//! Webhook endpoints (D17.24, D17.27, D17.41): an account's endpoints and their changes (each
//! with its audit entry, in one transaction), secret rotation, replays (deliveries queued through
//! [`super::events::enqueue_delivery`] in one transaction) and the attempt log. Every method
//! takes the account id first: another account's endpoint looks like no endpoint.
//!
//! The sealed secrets never leave this module in [`WebhookEndpoint`]; the sender reads them
//! through `store::webhook_deliveries` (`sending_endpoint`).
use serde_json::{json, Value};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::audit::{record, Audit};
use super::events::{enqueue_delivery, takes, wake};
use super::query::{Arg, Filter};
use super::{Store, StoreError, StoreResult};
use crate::domain::webhook_endpoints::{event_types_json, DisabledReason, EndpointPatch, EndpointStatus, NewEndpoint};
use crate::domain::webhooks::ROTATION_GRACE_MS;

/// An endpoint as the API shows it (no secrets, no lease).
#[derive(Debug, Clone)]
pub struct WebhookEndpoint {
    pub id: String,
    pub account_id: String,
    pub url: String,
    pub description: Option<String>,
    /// `None`: every type.
    pub event_types: Option<Vec<String>>,
    pub status: EndpointStatus,
    pub disabled_reason: Option<DisabledReason>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One request made to an endpoint, as `GET /webhook-endpoints/:id/attempts` lists it.
#[derive(Debug, Clone)]
pub struct WebhookAttempt {
    pub id: String,
    pub event_id: String,
    /// `None` when no answer came.
    pub status_code: Option<i64>,
    pub duration_ms: i64,
    pub error: Option<String>,
    pub at: i64,
}

const COLUMNS: &str = "id, account_id, url, description, event_types, status, disabled_reason, created_at, updated_at";

fn from_row(r: &AnyRow) -> StoreResult<WebhookEndpoint> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("webhook endpoint {what}"));
    let types: Option<String> = r.try_get("event_types")?;
    let status: String = r.try_get("status")?;
    let reason: Option<String> = r.try_get("disabled_reason")?;
    Ok(WebhookEndpoint {
        id: r.try_get("id")?,
        account_id: r.try_get("account_id")?,
        url: r.try_get("url")?,
        description: r.try_get("description")?,
        event_types: types
            .map(|t| serde_json::from_str::<Vec<String>>(&t).map_err(|_| corrupt("event_types")))
            .transpose()?,
        status: EndpointStatus::parse("status", &status).map_err(|_| corrupt("status"))?,
        disabled_reason: reason
            .map(|r| DisabledReason::parse("disabled_reason", &r).map_err(|_| corrupt("disabled_reason")))
            .transpose()?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

fn attempt_from_row(r: &AnyRow) -> StoreResult<WebhookAttempt> {
    Ok(WebhookAttempt {
        id: r.try_get("id")?,
        event_id: r.try_get("event_id")?,
        status_code: r.try_get("status_code")?,
        duration_ms: r.try_get("duration_ms")?,
        error: r.try_get("error")?,
        at: r.try_get("at")?,
    })
}

/// What an audit entry shows of an endpoint (never a secret).
fn summary(e: &WebhookEndpoint) -> Value {
    json!({
        "url": e.url, "description": e.description, "eventTypes": e.event_types,
        "status": e.status.as_str(), "disabledReason": e.disabled_reason.map(DisabledReason::as_str),
    })
}

async fn read_one(conn: &mut sqlx::AnyConnection, account_id: &str, id: &str) -> StoreResult<WebhookEndpoint> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM webhook_endpoints WHERE account_id = $1 AND id = $2"))
        .bind(account_id)
        .bind(id)
        .fetch_optional(conn)
        .await?
        .ok_or(StoreError::NotFound("webhook endpoint"))?;
    from_row(&row)
}

impl Store {
    /// `POST /webhook-endpoints`: a new enabled endpoint with its sealed secret (sealed by the
    /// caller under the key id `webhook:<id>`, so `id` is chosen by the caller too).
    pub async fn create_webhook_endpoint(
        &self,
        account_id: &str,
        id: &str,
        e: &NewEndpoint,
        secret_sealed: &str,
        audit: Audit<'_>,
        now: i64,
    ) -> StoreResult<WebhookEndpoint> {
        let mut tx = self.writer().begin().await?;
        sqlx::query(
            "INSERT INTO webhook_endpoints (id, account_id, url, description, event_types, status, secret_sealed, \
             created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 'enabled', $6, $7, $7)",
        )
        .bind(id)
        .bind(account_id)
        .bind(&e.url)
        .bind(e.description.as_deref())
        .bind(event_types_json(e.event_types.as_deref()))
        .bind(secret_sealed)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let created = read_one(&mut tx, account_id, id).await?;
        record(&mut tx, account_id, &Audit { entity_id: id, summary: json!({"after": summary(&created)}), ..audit })
            .await?;
        tx.commit().await?;
        Ok(created)
    }

    /// A page of the account's endpoints, newest first.
    pub async fn webhook_endpoints(
        &self,
        account_id: &str,
        page: (u32, u32),
    ) -> StoreResult<(Vec<WebhookEndpoint>, u64)> {
        let mut f = Filter::new();
        f.and("account_id = ?", Arg::Text(account_id.into()));
        self.page(COLUMNS, "FROM webhook_endpoints", "created_at DESC, id DESC", &f, page, from_row).await
    }

    /// One endpoint of the account.
    pub async fn webhook_endpoint(&self, account_id: &str, id: &str) -> StoreResult<WebhookEndpoint> {
        let mut conn = self.reader().acquire().await?;
        read_one(&mut conn, account_id, id).await
    }

    /// `PATCH /webhook-endpoints/:id` in one statement: each field present is set; enabling a
    /// disabled endpoint clears the disabled reason and the failing run (a fresh start, D17.26;
    /// `status: enabled` sent to an enabled, failing endpoint does not reset its 5-day clock),
    /// disabling records `manual`. The lease is left alone: a worker holding it finds the
    /// endpoint disabled.
    pub async fn update_webhook_endpoint(
        &self,
        account_id: &str,
        id: &str,
        p: &EndpointPatch,
        audit: Audit<'_>,
        now: i64,
    ) -> StoreResult<WebhookEndpoint> {
        let mut tx = self.writer().begin().await?;
        let before = read_one(&mut tx, account_id, id).await?;
        sqlx::query(
            "UPDATE webhook_endpoints SET url = COALESCE($1, url), \
             description = CASE WHEN $2 = 1 THEN $3 ELSE description END, \
             event_types = CASE WHEN $4 = 1 THEN $5 ELSE event_types END, \
             status = COALESCE($6, status), \
             disabled_reason = CASE WHEN $6 = 'enabled' THEN NULL WHEN $6 = 'disabled' THEN 'manual' ELSE disabled_reason END, \
             failing_since = CASE WHEN $6 = 'enabled' AND status = 'disabled' THEN NULL ELSE failing_since END, \
             updated_at = $7 WHERE account_id = $8 AND id = $9",
        )
        .bind(p.url.as_deref())
        .bind(i64::from(p.description.is_some()))
        .bind(p.description.clone().flatten())
        .bind(i64::from(p.event_types.is_some()))
        .bind(p.event_types.as_ref().and_then(|t| event_types_json(t.as_deref())))
        .bind(p.status.map(EndpointStatus::as_str))
        .bind(now)
        .bind(account_id)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let after = read_one(&mut tx, account_id, id).await?;
        if p.status == Some(EndpointStatus::Enabled) {
            wake(&mut tx, id).await?;
        }
        let summary = json!({"before": summary(&before), "after": summary(&after)});
        record(&mut tx, account_id, &Audit { entity_id: id, summary, ..audit }).await?;
        tx.commit().await?;
        Ok(after)
    }

    /// `DELETE /webhook-endpoints/:id`: its deliveries and attempts go with it (the foreign
    /// keys cascade); the events stay in the feed.
    pub async fn delete_webhook_endpoint(&self, account_id: &str, id: &str, audit: Audit<'_>) -> StoreResult<()> {
        let mut tx = self.writer().begin().await?;
        let before = read_one(&mut tx, account_id, id).await?;
        sqlx::query("DELETE FROM webhook_endpoints WHERE account_id = $1 AND id = $2")
            .bind(account_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        record(&mut tx, account_id, &Audit { entity_id: id, summary: json!({"before": summary(&before)}), ..audit })
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// `POST /webhook-endpoints/:id/rotate-secret` (D17.27): `new_sealed` becomes the secret and
    /// the one it replaces keeps signing for 24 h (both columns read their old values in one
    /// UPDATE). A second rotation within the grace drops the oldest.
    pub async fn rotate_webhook_endpoint_secret(
        &self,
        account_id: &str,
        id: &str,
        new_sealed: &str,
        audit: Audit<'_>,
        now: i64,
    ) -> StoreResult<()> {
        let mut tx = self.writer().begin().await?;
        let changed = sqlx::query(
            "UPDATE webhook_endpoints SET previous_secret_sealed = secret_sealed, previous_secret_until = $1, \
             secret_sealed = $2, updated_at = $3 WHERE account_id = $4 AND id = $5",
        )
        .bind(now + ROTATION_GRACE_MS)
        .bind(new_sealed)
        .bind(now)
        .bind(account_id)
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if changed == 0 {
            return Err(StoreError::NotFound("webhook endpoint"));
        }
        let summary = json!({"after": {"previousSecretUntil": now + ROTATION_GRACE_MS}});
        record(&mut tx, account_id, &Audit { entity_id: id, summary, ..audit }).await?;
        tx.commit().await?;
        Ok(())
    }

    /// `POST /webhook-endpoints/:id/replay {eventId}`: queues that event of the account for
    /// the endpoint, whatever its filter (D17.41). Returns how many were queued (1).
    pub async fn replay_webhook_event(
        &self,
        account_id: &str,
        endpoint_id: &str,
        event_id: &str,
        audit: Audit<'_>,
        now: i64,
    ) -> StoreResult<u64> {
        let mut tx = self.writer().begin().await?;
        read_one(&mut tx, account_id, endpoint_id).await?;
        let sequence: i64 = sqlx::query("SELECT sequence FROM events WHERE account_id = $1 AND id = $2")
            .bind(account_id)
            .bind(event_id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound("event"))?
            .try_get("sequence")?;
        enqueue_delivery(&mut tx, account_id, endpoint_id, event_id, sequence, now).await?;
        wake(&mut tx, endpoint_id).await?;
        let summary = json!({"after": {"eventId": event_id, "queued": 1}});
        record(&mut tx, account_id, &Audit { entity_id: endpoint_id, summary, ..audit }).await?;
        tx.commit().await?;
        Ok(1)
    }

    /// `POST /webhook-endpoints/:id/replay {since, until}`: queues, in sequence order, every
    /// event of the account with `created_at` in `[since, until]` that the endpoint's filter
    /// takes, delivered before or not (D17.41). Returns how many were queued.
    pub async fn replay_webhook_range(
        &self,
        account_id: &str,
        endpoint_id: &str,
        (since, until): (i64, i64),
        audit: Audit<'_>,
        now: i64,
    ) -> StoreResult<u64> {
        let mut tx = self.writer().begin().await?;
        let endpoint = read_one(&mut tx, account_id, endpoint_id).await?;
        let filter = endpoint.event_types.as_ref().map(|t| Value::from(t.clone()).to_string());
        let rows = sqlx::query(
            "SELECT id, sequence, type FROM events WHERE account_id = $1 AND created_at >= $2 AND created_at <= $3 \
             ORDER BY sequence",
        )
        .bind(account_id)
        .bind(since)
        .bind(until)
        .fetch_all(&mut *tx)
        .await?;
        let mut queued = 0u64;
        for row in rows {
            let event_type: String = row.try_get("type")?;
            if takes(filter.as_deref(), &event_type) {
                let event_id: String = row.try_get("id")?;
                enqueue_delivery(&mut tx, account_id, endpoint_id, &event_id, row.try_get("sequence")?, now).await?;
                queued += 1;
            }
        }
        if queued > 0 {
            wake(&mut tx, endpoint_id).await?;
        }
        let summary = json!({"after": {"since": since, "until": until, "queued": queued}});
        record(&mut tx, account_id, &Audit { entity_id: endpoint_id, summary, ..audit }).await?;
        tx.commit().await?;
        Ok(queued)
    }

    /// A page of an endpoint's attempts, newest first (404 for another account's endpoint).
    pub async fn webhook_attempts(
        &self,
        account_id: &str,
        endpoint_id: &str,
        page: (u32, u32),
    ) -> StoreResult<(Vec<WebhookAttempt>, u64)> {
        self.webhook_endpoint(account_id, endpoint_id).await?;
        let mut f = Filter::new();
        f.and("account_id = ?", Arg::Text(account_id.into()));
        f.and("endpoint_id = ?", Arg::Text(endpoint_id.into()));
        let columns = "id, event_id, status_code, duration_ms, error, at";
        self.page(columns, "FROM webhook_attempts", "at DESC, id DESC", &f, page, attempt_from_row).await
    }
}

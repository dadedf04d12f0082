//! Idempotency keys (D9.1, D16.12, Stripe's model), for every creation that takes one
//! (withdrawals; refunds, D17.33): the `idempotency_keys` row that binds an account's key to the
//! first body's hash and, once that creation committed, to its stored answer.
//! - [`Store::idempotency_key_state`] reads how a key stands before the body is even checked, so
//!   a reused key is named before anything else;
//! - `claim` takes the key inside the creation's own transaction (`INSERT … ON CONFLICT DO
//!   NOTHING`, after clearing an expired row of it), and `complete` stores the 201 there too:
//!   only a created thing binds a key, and a refusal rolls the claim back with the rest, leaving
//!   the key free for a corrected body.
use serde_json::{json, Value};
use sqlx::Row;

use super::audit::{self, Audit};
use super::{Store, StoreError, StoreResult};
use crate::domain::withdrawals::IDEMPOTENCY_TTL_MS;

/// A creation asked for under an idempotency key.
#[derive(Debug, Clone)]
pub struct Ask {
    pub account_id: String,
    /// The key that asked (audit).
    pub key_id: String,
    pub request_id: String,
    pub idempotency_key: String,
    /// The canonical body's hash the key is bound to.
    pub request_hash: String,
}

/// A stored first answer (D9.1, D16.12).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    pub status: u16,
    pub data: Value,
    pub original_request_id: String,
}

/// What a key already holds.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyState {
    /// Nothing live: the request runs.
    Free,
    /// Same body, finished: replay this.
    Replay(StoredResponse),
    /// Another body, or the first request is still running: 409 `idempotency_key_reused`.
    Reused { in_flight: bool },
}

async fn key_state(conn: &mut sqlx::AnyConnection, ask: &Ask, now: i64) -> StoreResult<KeyState> {
    let Some(row) = sqlx::query(
        "SELECT request_hash, status, response_status, response_body, original_request_id FROM idempotency_keys \
         WHERE account_id = $1 AND idem_key = $2 AND expires_at > $3",
    )
    .bind(&ask.account_id)
    .bind(&ask.idempotency_key)
    .bind(now)
    .fetch_optional(conn)
    .await?
    else {
        return Ok(KeyState::Free);
    };
    let stored_hash: String = row.try_get("request_hash")?;
    let status: String = row.try_get("status")?;
    if stored_hash != ask.request_hash {
        return Ok(KeyState::Reused { in_flight: false });
    }
    if status != "done" {
        return Ok(KeyState::Reused { in_flight: true });
    }
    let body: Option<String> = row.try_get("response_body")?;
    let data = body
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|_| StoreError::Corrupt("idempotent response".into()))?
        .unwrap_or(Value::Null);
    Ok(KeyState::Replay(StoredResponse {
        status: u16::try_from(row.try_get::<Option<i64>, _>("response_status")?.unwrap_or(201)).unwrap_or(201),
        data,
        original_request_id: row.try_get("original_request_id")?,
    }))
}

/// Claims the ask's key in the creation's transaction. `Some`: the key was taken (a concurrent
/// request with it won, or it holds another body) and this is how it stands now; the caller
/// rolls back and answers with it.
pub(crate) async fn claim(conn: &mut sqlx::AnyConnection, ask: &Ask, now: i64) -> StoreResult<Option<KeyState>> {
    // An expired row no longer binds the key: the claim below may take it afresh.
    sqlx::query("DELETE FROM idempotency_keys WHERE account_id = $1 AND idem_key = $2 AND expires_at <= $3")
        .bind(&ask.account_id)
        .bind(&ask.idempotency_key)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    let claimed = sqlx::query(
        "INSERT INTO idempotency_keys (account_id, idem_key, request_hash, status, original_request_id, created_at, \
         expires_at) VALUES ($1, $2, $3, 'in_flight', $4, $5, $6) ON CONFLICT (account_id, idem_key) DO NOTHING",
    )
    .bind(&ask.account_id)
    .bind(&ask.idempotency_key)
    .bind(&ask.request_hash)
    .bind(&ask.request_id)
    .bind(now)
    .bind(now + IDEMPOTENCY_TTL_MS)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if claimed == 1 {
        return Ok(None);
    }
    key_state(conn, ask, now).await.map(Some)
}

/// The creation's last writes, in its transaction: its audit entry (`action` on `entity_type`
/// `entity_id`, by the key that asked, with `{"after": data}`), and `data` stored as the key's
/// 201 to replay.
pub(crate) async fn complete(
    conn: &mut sqlx::AnyConnection,
    ask: &Ask,
    action: &str,
    entity_type: &str,
    entity_id: &str,
    data: &Value,
) -> StoreResult<()> {
    let entry = Audit {
        key_id: Some(&ask.key_id),
        request_id: Some(ask.request_id.clone()),
        action,
        entity_type,
        entity_id,
        summary: json!({"after": data}),
    };
    audit::record(&mut *conn, &ask.account_id, &entry).await?;
    sqlx::query(
        "UPDATE idempotency_keys SET status = 'done', response_status = 201, response_body = $1 \
         WHERE account_id = $2 AND idem_key = $3",
    )
    .bind(data.to_string())
    .bind(&ask.account_id)
    .bind(&ask.idempotency_key)
    .execute(conn)
    .await?;
    Ok(())
}

impl Store {
    /// How the ask's key stands for its body (a read before the request is validated, so a
    /// reused key is named before anything else).
    pub async fn idempotency_key_state(&self, ask: &Ask, now: i64) -> StoreResult<KeyState> {
        let mut conn = self.reader().acquire().await?;
        key_state(&mut conn, ask, now).await
    }
}

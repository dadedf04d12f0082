//! The sandbox's webhook inbox: a Standard Webhooks receiver to point an account's endpoint at
//! (D17.24–27), so a demo or a script sees Tessera's outbound events without a server of its own.
//! It verifies each delivery's `webhook-signature` against the secrets it was given, answers 2xx
//! when one of them verifies it and 401 otherwise, and keeps the last 1,000 deliveries.
//!
//! - `POST /sandbox/webhooks/inbox/secrets {secret}` registers an endpoint's `whsec_…` secret
//!   (several may be registered: endpoints, or both sides of a rotation).
//! - `POST /sandbox/webhooks/inbox` receives a delivery.
//! - `GET /sandbox/webhooks/inbox` lists what it received, newest first:
//!   `{id, type, sequence, verified, receivedAt, body}`.
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use subtle::ConstantTimeEq as _;

use super::{gateway_error, newest_first, now_rfc3339, push_bounded, Shared};
use crate::domain::webhooks::signature;

/// How far a delivery's `webhook-timestamp` may be from now (the Standard Webhooks default).
pub const TOLERANCE_SECS: i64 = 5 * 60;

pub(super) fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/sandbox/webhooks/inbox", get(list).post(receive))
        .route("/sandbox/webhooks/inbox/secrets", post(add_secret))
        .with_state(shared)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretIn {
    secret: String,
}

/// Registers a secret unless it is not a Standard Webhooks secret (`whsec_` and base64).
pub(super) fn register(shared: &Shared, secret: &str) -> Result<usize, String> {
    if !secret.starts_with(crate::domain::webhooks::SECRET_PREFIX) || signature(secret, "x", 0, "").is_none() {
        return Err("secret must be a whsec_ secret (whsec_ and base64)".into());
    }
    let mut db = shared.db();
    if !db.inbox_secrets.iter().any(|s| s == secret) {
        db.inbox_secrets.push(secret.to_string());
    }
    Ok(db.inbox_secrets.len())
}

async fn add_secret(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let input: SecretIn = match serde_json::from_slice(&body) {
        Ok(i) => i,
        Err(e) => {
            return gateway_error(StatusCode::BAD_REQUEST, "malformed_json", format!("body {{\"secret\": …}}: {e}"))
        }
    };
    match register(&shared, &input.secret) {
        Ok(n) => (StatusCode::CREATED, Json(json!({"secrets": n}))).into_response(),
        Err(why) => gateway_error(StatusCode::BAD_REQUEST, "validation_failed", why),
    }
}

async fn list(State(shared): State<Arc<Shared>>) -> Json<Vec<Value>> {
    Json(newest_first(&shared.db().inbox))
}

async fn receive(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let id = header("webhook-id");
    let secrets = shared.db().inbox_secrets.clone();
    let text = String::from_utf8_lossy(&body);
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let verdict = verify(&secrets, &id, &header("webhook-timestamp"), &header("webhook-signature"), &text, now);
    let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.to_string()));
    let entry = json!({
        "id": id,
        "type": parsed.get("type").cloned().unwrap_or(Value::Null),
        "sequence": parsed.get("sequence").cloned().unwrap_or(Value::Null),
        "verified": verdict.is_ok(),
        "receivedAt": now_rfc3339(),
        "body": parsed,
    });
    push_bounded(&mut shared.db().inbox, entry);
    match verdict {
        Ok(()) => Json(json!({"received": id})).into_response(),
        Err(why) => gateway_error(StatusCode::UNAUTHORIZED, "invalid_signature", why),
    }
}

/// Standard Webhooks verification: a `webhook-id`, a timestamp within [`TOLERANCE_SECS`] of
/// `now`, and one of the space-separated `v1,…` signatures made by one of `secrets`.
pub fn verify(
    secrets: &[String],
    id: &str,
    timestamp: &str,
    signatures: &str,
    body: &str,
    now: i64,
) -> Result<(), String> {
    if id.is_empty() {
        return Err("no webhook-id".into());
    }
    let ts: i64 = timestamp.trim().parse().map_err(|_| "webhook-timestamp is not a number of seconds".to_string())?;
    if (now - ts).abs() > TOLERANCE_SECS {
        return Err("webhook-timestamp is too far from now".into());
    }
    let given: Vec<&str> = signatures.split(' ').filter(|s| s.starts_with("v1,")).collect();
    if given.is_empty() {
        return Err("no v1 signature".into());
    }
    let verified = secrets
        .iter()
        .filter_map(|s| signature(s, id, ts, body))
        .any(|expected| given.iter().any(|g| bool::from(g.as_bytes().ct_eq(expected.as_bytes()))));
    if verified {
        Ok(())
    } else if secrets.is_empty() {
        Err("no secret registered (POST /sandbox/webhooks/inbox/secrets)".into())
    } else {
        Err("no signature verifies with a registered secret".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::webhooks::new_secret;

    #[test]
    fn a_delivery_verifies_with_any_registered_secret_and_any_given_signature() {
        let (a, b, other) = (new_secret(), new_secret(), new_secret());
        let sig_b = signature(&b, "msg", 100, "{}").expect("sig");
        let sig_other = signature(&other, "msg", 100, "{}").expect("sig");
        let secrets = vec![a.clone(), b.clone()];
        assert!(verify(&secrets, "msg", "100", &format!("{sig_other} {sig_b}"), "{}", 100).is_ok());
        assert!(verify(&secrets, "msg", "100", &sig_other, "{}", 100).is_err());
        assert!(verify(&secrets, "msg", "100", &sig_b, "{ }", 100).is_err());
        assert!(verify(&secrets, "other", "100", &sig_b, "{}", 100).is_err());
        assert!(verify(&secrets, "msg", "100", &sig_b, "{}", 100 + TOLERANCE_SECS + 1).is_err());
        assert!(verify(&secrets, "msg", "x", &sig_b, "{}", 100).is_err());
        assert!(verify(&[], "msg", "100", &sig_b, "{}", 100).is_err());
    }
}

//! The SMS gateways the sandbox serves under `/sms`, both recording what they accept for
//! `GET /sandbox/sms` (`id, to, from, text, at`, plus `wire` and `username` for Africa's
//! Talking's):
//!
//! - the organization HTTP gateway (D13.3): `POST /sms/messages` with `Authorization: Bearer
//!   <apiKey>` and `{to, from, text}` → 201 `{id}`;
//! - Africa's Talking's wire (D18.4, D18.6): `POST /sms/version1/messaging` with an `apiKey`
//!   header and a form body `username, to, message, from?` → 201 with Africa's Talking's
//!   `SMSMessageData {Message, Recipients: [{statusCode, number, status, cost, messageId}]}`.
//!   A number that is not `+` and 7 to 15 digits is `403 InvalidPhoneNumber`; no `apiKey` → 401
//!   `The supplied authentication is invalid` (plain text, as Africa's Talking answers).
//!
//! `POST /sandbox/sms/refusals {"number": "+233…" | "*", "statusCode": 403 | 405 | … | null}`
//! makes Africa's Talking's wire refuse that number (every number for `*`) with that documented
//! status until it is cleared with `null`. During an `sms` outage both gateways answer 503.
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::api::{object, text};
use super::{bearer, gateway_error, now_rfc3339, push_bounded, Shared};

/// Africa's Talking's recipient statuses (its SMS documentation's table), by `statusCode`.
const STATUSES: [(i64, &str); 14] = [
    (100, "Processed"),
    (101, "Success"),
    (102, "Queued"),
    (401, "RiskHold"),
    (402, "InvalidSenderId"),
    (403, "InvalidPhoneNumber"),
    (404, "UnsupportedNumberType"),
    (405, "InsufficientBalance"),
    (406, "UserInBlacklist"),
    (407, "CouldNotRoute"),
    (409, "DoNotDisturbRejection"),
    (500, "InternalServerError"),
    (501, "GatewayError"),
    (502, "RejectedByGateway"),
];

/// Africa's Talking's sender when a message names none.
const DEFAULT_SENDER: &str = "AFRICASTKNG";

/// The refusals set by the control route: number (or `*`) → `statusCode`.
type Refusals = Arc<Mutex<BTreeMap<String, i64>>>;

#[derive(Clone)]
struct Sms {
    shared: Arc<Shared>,
    refusals: Refusals,
}

pub(super) fn routes(shared: Arc<Shared>) -> Router {
    let sms = Sms { shared, refusals: Refusals::default() };
    Router::new()
        .route("/sms/messages", post(sms_send))
        .route("/sms/version1/messaging", post(at_send))
        .route("/sandbox/sms/refusals", post(refusals_set))
        .with_state(sms)
}

// ---------------------------------------------------------------- the HTTP gateway (D13.3)

/// `POST /sms/messages` with `Authorization: Bearer <apiKey>` and `{to, from, text}` → `{id}`.
async fn sms_send(State(sms): State<Sms>, headers: HeaderMap, body: Bytes) -> Response {
    let shared = sms.shared;
    if shared.is_down("sms") {
        return gateway_error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "sandbox outage");
    }
    if bearer(&headers).is_none() {
        return gateway_error(StatusCode::UNAUTHORIZED, "unauthorized", "a Bearer API key is required");
    }
    let invalid = |m: &str| gateway_error(StatusCode::BAD_REQUEST, "validation_failed", m);
    let Some(o) = object(&body) else { return invalid("the body must be a JSON object") };
    for k in ["to", "from", "text"] {
        if text(&o, k).is_none() {
            return invalid(&format!("{k} is required"));
        }
    }
    let id = format!("sms_{}", shared.db().next_id());
    let entry = json!({
        "id": id,
        "to": text(&o, "to"),
        "from": text(&o, "from"),
        "text": text(&o, "text"),
        "at": now_rfc3339(),
    });
    push_bounded(&mut shared.db().sms, entry);
    (StatusCode::CREATED, Json(json!({"id": id}))).into_response()
}

// ---------------------------------------------------------------- Africa's Talking (D18.4)

/// A plain-text answer, as Africa's Talking gives its request-level refusals.
fn plain(status: StatusCode, text: &str) -> Response {
    (status, [("content-type", "text/plain; charset=UTF-8")], text.to_string()).into_response()
}

/// Whether `n` is a number Africa's Talking would take: `+` then 7 to 15 digits.
fn is_phone_number(n: &str) -> bool {
    n.strip_prefix('+').is_some_and(|d| (7..=15).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()))
}

fn status_name(code: i64) -> &'static str {
    STATUSES.iter().find(|(c, _)| *c == code).map_or("Failed", |(_, s)| s)
}

/// `POST /sms/version1/messaging`: each recipient of the comma-separated `to` answered as
/// Africa's Talking answers it; the ones sent recorded.
async fn at_send(State(sms): State<Sms>, headers: HeaderMap, body: Bytes) -> Response {
    if sms.shared.is_down("sms") {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable");
    }
    if headers.get("apikey").and_then(|v| v.to_str().ok()).is_none_or(|k| k.trim().is_empty()) {
        return plain(StatusCode::UNAUTHORIZED, "The supplied authentication is invalid");
    }
    let form: BTreeMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
    let field = |k: &str| form.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    for k in ["username", "to", "message"] {
        if field(k).is_none() {
            return plain(StatusCode::BAD_REQUEST, &format!("Request is missing required form field '{k}'"));
        }
    }
    let (username, message) = (field("username").unwrap_or_default(), field("message").unwrap_or_default());
    let from = field("from").unwrap_or(DEFAULT_SENDER);
    let refusals = sms.refusals.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut recipients = Vec::new();
    for number in field("to").unwrap_or_default().split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let code = if is_phone_number(number) {
            refusals.get(number).or_else(|| refusals.get("*")).copied().unwrap_or(101)
        } else {
            403
        };
        let sent = (100..=102).contains(&code);
        let id = if sent { format!("ATXid_{}", sms.shared.db().next_id()) } else { "None".to_string() };
        if sent {
            let entry = json!({"id": id, "to": number, "from": from, "text": message, "at": now_rfc3339(),
                               "wire": "africastalking", "username": username});
            push_bounded(&mut sms.shared.db().sms, entry);
        }
        let cost = if sent { "GHS 0.0300" } else { "0" };
        recipients.push(
            json!({"statusCode": code, "number": number, "status": status_name(code), "cost": cost, "messageId": id}),
        );
    }
    let sent = recipients.iter().filter(|r| r["messageId"] != "None").count();
    let total = format!("{}.{:04}", sent * 300 / 10_000, sent * 300 % 10_000);
    let summary = if sent == 0 { "0".to_string() } else { format!("GHS {total}") };
    let data = json!({"Message": format!("Sent to {sent}/{} Total Cost: {summary}", recipients.len()), "Recipients": recipients});
    (StatusCode::CREATED, Json(json!({"SMSMessageData": data}))).into_response()
}

/// `POST /sandbox/sms/refusals {"number", "statusCode"}`: Africa's Talking's wire answers that
/// number (`*`: every number) with that status (one of its documented codes, 100–102 meaning
/// sent), until `statusCode: null` clears it. Answers every refusal in force.
async fn refusals_set(State(sms): State<Sms>, body: Bytes) -> Response {
    let bad = |m: &str| gateway_error(StatusCode::BAD_REQUEST, "validation_failed", m);
    let Some(o) = object(&body) else { return bad("the body must be a JSON object {number, statusCode}") };
    let Some(number) = text(&o, "number").map(str::to_string) else { return bad("number is required (+233… or *)") };
    let mut refusals = sms.refusals.lock().unwrap_or_else(|p| p.into_inner());
    match o.get("statusCode") {
        Some(Value::Null) | None => {
            refusals.remove(&number);
        }
        Some(v) => match v.as_i64().filter(|c| STATUSES.iter().any(|(s, _)| s == c)) {
            Some(code) => {
                refusals.insert(number, code);
            }
            None => return bad("statusCode must be one of Africa's Talking's documented codes, or null"),
        },
    }
    Json(json!(*refusals)).into_response()
}

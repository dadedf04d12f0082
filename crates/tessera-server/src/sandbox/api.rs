//! The provider APIs the sandbox serves (D11.1, D11.3): Paystack's under `/provider_a`, the
//! gateway protocol under `/provider_b` and `/provider_c`, and the SMS gateway under `/sms`
//! (D13.3). Any non-empty Bearer secret is an account: what it creates only it can see.
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use super::{bearer, gateway_error, now_rfc3339, push_bounded, random_token, Charge, Outcome, Shared, Transfer};
use crate::providers::payments::ProviderId;

type Obj = Map<String, Value>;

fn object(body: &Bytes) -> Option<Obj> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

fn text<'a>(o: &'a Obj, k: &str) -> Option<&'a str> {
    o.get(k).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn pesewas(o: &Obj, k: &str) -> Option<i64> {
    o.get(k).and_then(Value::as_i64).filter(|n| *n > 0)
}

// ---------------------------------------------------------------- Paystack (provider_a)

fn ps_error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"status": false, "message": message}))).into_response()
}

fn ps_ok(message: &str, data: Value) -> Response {
    Json(json!({"status": true, "message": message, "data": data})).into_response()
}

/// The Bearer secret, after the outage and auth checks every Paystack route makes.
fn ps_guard(shared: &Shared, headers: &HeaderMap) -> Result<String, Box<Response>> {
    if shared.is_down(ProviderId::A.as_str()) {
        return Err(Box::new(ps_error(StatusCode::SERVICE_UNAVAILABLE, "Service unavailable (sandbox outage)")));
    }
    bearer(headers).ok_or_else(|| Box::new(ps_error(StatusCode::UNAUTHORIZED, "Invalid key")))
}

/// Paystack reports an unpaid charge as `abandoned`.
fn ps_charge_status(c: &Charge) -> &'static str {
    match c.status {
        Outcome::Pending => "abandoned",
        Outcome::Success => "success",
        Outcome::Failed => "failed",
    }
}

fn ps_charge(c: &Charge) -> Value {
    json!({
        "id": c.wire_id(),
        "domain": "test",
        "status": ps_charge_status(c),
        "reference": c.reference,
        "amount": c.amount,
        "currency": c.currency,
        "gateway_response": match c.status {
            Outcome::Pending => "The transaction was not completed",
            Outcome::Success => "Successful",
            Outcome::Failed => "Declined",
        },
        "paid_at": c.paid_at,
        "created_at": c.created_at,
        "channel": "card",
        "fees": c.fees(),
        "metadata": c.metadata,
        "customer": {"email": c.email},
    })
}

fn ps_transfer(t: &Transfer) -> Value {
    json!({
        "id": t.wire_id(),
        "domain": "test",
        "reference": t.reference,
        "amount": t.amount,
        "currency": t.currency,
        "source": "balance",
        "reason": t.reason,
        "status": t.status.as_str(),
        "transfer_code": t.transfer_code,
        "recipient": t.recipient,
        "gateway_response": t.failure_reason,
        "failure_reason": t.failure_reason,
        "createdAt": t.created_at,
        "transferred_at": t.completed_at,
    })
}

pub(super) fn paystack_routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/provider_a/transaction/initialize", post(ps_initialize))
        .route("/provider_a/transaction/verify/{reference}", get(ps_verify))
        .route("/provider_a/transferrecipient", post(ps_recipient))
        .route("/provider_a/transfer", post(ps_transfer_create))
        .route("/provider_a/transfer/verify/{reference}", get(ps_transfer_verify))
        .with_state(shared)
}

async fn ps_initialize(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return ps_error(StatusCode::BAD_REQUEST, "Invalid JSON body") };
    let Some(email) = text(&o, "email") else { return ps_error(StatusCode::BAD_REQUEST, "Email is required") };
    let Some(amount) = pesewas(&o, "amount") else {
        return ps_error(StatusCode::BAD_REQUEST, "Invalid amount: a positive whole number of pesewas is required");
    };
    let reference = text(&o, "reference").map(str::to_string).unwrap_or_else(|| format!("T{}", random_token(15)));
    let charge = {
        let mut db = shared.db();
        if db.charges.contains_key(&reference) {
            return ps_error(StatusCode::BAD_REQUEST, "Duplicate Transaction Reference");
        }
        let id = db.next_id();
        let c = Charge {
            id,
            provider: ProviderId::A,
            secret,
            reference: reference.clone(),
            amount,
            currency: text(&o, "currency").unwrap_or("GHS").to_string(),
            email: email.to_string(),
            callback_url: text(&o, "callback_url").map(str::to_string),
            metadata: o.get("metadata").cloned().unwrap_or(Value::Null),
            access_code: random_token(16),
            status: Outcome::Pending,
            paid_at: None,
            created_at: now_rfc3339(),
        };
        db.charges.insert(reference, c.clone());
        c
    };
    ps_ok(
        "Authorization URL created",
        json!({
            "authorization_url": charge.checkout_url(&shared.base_url),
            "access_code": charge.access_code,
            "reference": charge.reference,
        }),
    )
}

async fn ps_verify(State(shared): State<Arc<Shared>>, headers: HeaderMap, Path(reference): Path<String>) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = shared.db();
    match db.charges.get(&reference).filter(|c| c.provider == ProviderId::A && c.secret == secret) {
        Some(c) => ps_ok("Verification successful", ps_charge(c)),
        None => ps_error(StatusCode::BAD_REQUEST, "Transaction reference not found"),
    }
}

async fn ps_recipient(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return ps_error(StatusCode::BAD_REQUEST, "Invalid JSON body") };
    for k in ["type", "name", "account_number", "bank_code"] {
        if text(&o, k).is_none() {
            return ps_error(StatusCode::BAD_REQUEST, &format!("{k} is required"));
        }
    }
    if !matches!(text(&o, "type"), Some("mobile_money" | "ghipss" | "nuban" | "basa")) {
        return ps_error(StatusCode::BAD_REQUEST, "Invalid recipient type");
    }
    let code = format!("RCP_{}", random_token(15));
    let details = json!({
        "type": text(&o, "type"),
        "name": text(&o, "name"),
        "recipient_code": code,
        "currency": text(&o, "currency").unwrap_or("GHS"),
        "details": {
            "account_number": text(&o, "account_number"),
            "bank_code": text(&o, "bank_code"),
            "account_name": text(&o, "name"),
        },
    });
    shared.db().recipients.insert(code, (secret, details.clone()));
    (
        StatusCode::CREATED,
        Json(json!({"status": true, "message": "Transfer recipient created successfully", "data": details})),
    )
        .into_response()
}

async fn ps_transfer_create(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return ps_error(StatusCode::BAD_REQUEST, "Invalid JSON body") };
    if text(&o, "source") != Some("balance") {
        return ps_error(StatusCode::BAD_REQUEST, "Source must be balance");
    }
    let Some(amount) = pesewas(&o, "amount") else { return ps_error(StatusCode::BAD_REQUEST, "Invalid amount") };
    let Some(code) = text(&o, "recipient") else { return ps_error(StatusCode::BAD_REQUEST, "Recipient is required") };
    let reference = text(&o, "reference").map(str::to_string).unwrap_or_else(|| random_token(20));
    let mut db = shared.db();
    let recipient = match db.recipients.get(code) {
        Some((owner, details)) if *owner == secret => details.clone(),
        _ => return ps_error(StatusCode::BAD_REQUEST, "Recipient specified is invalid"),
    };
    if db.transfers.contains_key(&reference) {
        return ps_error(StatusCode::BAD_REQUEST, "Duplicate Transfer Reference");
    }
    let id = db.next_id();
    let t = Transfer {
        id,
        provider: ProviderId::A,
        secret,
        reference: reference.clone(),
        amount,
        currency: text(&o, "currency").unwrap_or("GHS").to_string(),
        reason: text(&o, "reason").unwrap_or_default().to_string(),
        recipient,
        transfer_code: format!("TRF_{}", random_token(15)),
        status: Outcome::Pending,
        failure_reason: None,
        created_at: now_rfc3339(),
        completed_at: None,
    };
    let data = ps_transfer(&t);
    db.transfers.insert(reference, t);
    ps_ok("Transfer has been queued", data)
}

async fn ps_transfer_verify(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(reference): Path<String>,
) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = shared.db();
    match db.transfers.get(&reference).filter(|t| t.provider == ProviderId::A && t.secret == secret) {
        Some(t) => ps_ok("Transfer retrieved", ps_transfer(t)),
        None => ps_error(StatusCode::NOT_FOUND, "Transfer not found"),
    }
}

// ---------------------------------------------------------------- gateway (provider_b, provider_c)

#[derive(Clone)]
struct Gw {
    shared: Arc<Shared>,
    provider: ProviderId,
}

fn gw_guard(gw: &Gw, headers: &HeaderMap) -> Result<String, Box<Response>> {
    if gw.shared.is_down(gw.provider.as_str()) {
        return Err(Box::new(gateway_error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "sandbox outage")));
    }
    bearer(headers).ok_or_else(|| {
        Box::new(gateway_error(StatusCode::UNAUTHORIZED, "unauthorized", "a Bearer secret key is required"))
    })
}

fn gw_charge(c: &Charge, base: &str) -> Value {
    json!({
        "id": c.wire_id(),
        "reference": c.reference,
        "status": c.status.as_str(),
        "amount": c.amount,
        "currency": c.currency,
        "fees": c.fees(),
        "customer": {"email": c.email},
        "paidAt": c.paid_at,
        "createdAt": c.created_at,
        "checkoutUrl": c.checkout_url(base),
        "accessCode": c.access_code,
        "metadata": c.metadata,
    })
}

fn gw_transfer(t: &Transfer) -> Value {
    json!({
        "id": t.wire_id(),
        "reference": t.reference,
        "status": t.status.as_str(),
        "amount": t.amount,
        "currency": t.currency,
        "reason": t.reason,
        "recipient": t.recipient,
        "failureReason": t.failure_reason,
        "createdAt": t.created_at,
        "completedAt": t.completed_at,
    })
}

pub(super) fn gateway_routes(shared: Arc<Shared>, provider: ProviderId) -> Router {
    Router::new()
        .route("/charges", post(gw_charge_create))
        .route("/charges/{reference}", get(gw_charge_get))
        .route("/transfers", post(gw_transfer_create))
        .route("/transfers/{reference}", get(gw_transfer_get))
        .with_state(Gw { shared, provider })
}

fn invalid(message: &str) -> Response {
    gateway_error(StatusCode::BAD_REQUEST, "validation_failed", message)
}

async fn gw_charge_create(State(gw): State<Gw>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match gw_guard(&gw, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return invalid("the body must be a JSON object") };
    let Some(reference) = text(&o, "reference") else { return invalid("reference is required") };
    let Some(amount) = pesewas(&o, "amount") else {
        return invalid("amount must be a positive whole number of pesewas");
    };
    let Some(email) = text(&o, "email") else { return invalid("email is required") };
    let charge = {
        let mut db = gw.shared.db();
        if db.charges.contains_key(reference) {
            return gateway_error(StatusCode::CONFLICT, "duplicate_reference", "a charge with this reference exists");
        }
        let id = db.next_id();
        let c = Charge {
            id,
            provider: gw.provider,
            secret,
            reference: reference.to_string(),
            amount,
            currency: text(&o, "currency").unwrap_or("GHS").to_string(),
            email: email.to_string(),
            callback_url: text(&o, "callbackUrl").map(str::to_string),
            metadata: o.get("metadata").cloned().unwrap_or(Value::Null),
            access_code: random_token(16),
            status: Outcome::Pending,
            paid_at: None,
            created_at: now_rfc3339(),
        };
        db.charges.insert(reference.to_string(), c.clone());
        c
    };
    (StatusCode::CREATED, Json(gw_charge(&charge, &gw.shared.base_url))).into_response()
}

async fn gw_charge_get(State(gw): State<Gw>, headers: HeaderMap, Path(reference): Path<String>) -> Response {
    let secret = match gw_guard(&gw, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = gw.shared.db();
    match db.charges.get(&reference).filter(|c| c.provider == gw.provider && c.secret == secret) {
        Some(c) => Json(gw_charge(c, &gw.shared.base_url)).into_response(),
        None => gateway_error(StatusCode::NOT_FOUND, "not_found", "no charge with this reference"),
    }
}

async fn gw_transfer_create(State(gw): State<Gw>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match gw_guard(&gw, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return invalid("the body must be a JSON object") };
    let Some(reference) = text(&o, "reference") else { return invalid("reference is required") };
    let Some(amount) = pesewas(&o, "amount") else {
        return invalid("amount must be a positive whole number of pesewas");
    };
    let Some(recipient) = o.get("recipient").and_then(Value::as_object) else {
        return invalid("recipient is required");
    };
    for k in ["name", "accountNumber", "bankCode"] {
        if text(recipient, k).is_none() {
            return invalid(&format!("recipient.{k} is required"));
        }
    }
    let mut db = gw.shared.db();
    if db.transfers.contains_key(reference) {
        return gateway_error(StatusCode::CONFLICT, "duplicate_reference", "a transfer with this reference exists");
    }
    let id = db.next_id();
    let t = Transfer {
        id,
        provider: gw.provider,
        secret,
        reference: reference.to_string(),
        amount,
        currency: text(&o, "currency").unwrap_or("GHS").to_string(),
        reason: text(&o, "reason").unwrap_or_default().to_string(),
        recipient: Value::Object(recipient.clone()),
        transfer_code: format!("tr_{id}"),
        status: Outcome::Pending,
        failure_reason: None,
        created_at: now_rfc3339(),
        completed_at: None,
    };
    let out = gw_transfer(&t);
    db.transfers.insert(reference.to_string(), t);
    (StatusCode::CREATED, Json(out)).into_response()
}

async fn gw_transfer_get(State(gw): State<Gw>, headers: HeaderMap, Path(reference): Path<String>) -> Response {
    let secret = match gw_guard(&gw, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = gw.shared.db();
    match db.transfers.get(&reference).filter(|t| t.provider == gw.provider && t.secret == secret) {
        Some(t) => Json(gw_transfer(t)).into_response(),
        None => gateway_error(StatusCode::NOT_FOUND, "not_found", "no transfer with this reference"),
    }
}

// ---------------------------------------------------------------- SMS gateway (D13.3)

pub(super) fn sms_routes(shared: Arc<Shared>) -> Router {
    Router::new().route("/sms/messages", post(sms_send)).with_state(shared)
}

/// `POST /sms/messages` with `Authorization: Bearer <apiKey>` and `{to, from, text}` → `{id}`.
async fn sms_send(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if shared.is_down("sms") {
        return gateway_error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "sandbox outage");
    }
    if bearer(&headers).is_none() {
        return gateway_error(StatusCode::UNAUTHORIZED, "unauthorized", "a Bearer API key is required");
    }
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

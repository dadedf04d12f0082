//! Flutterwave v3 under `/provider_b` (D18.2, D18.6), as its developer docs show it: every
//! answer is the envelope `{status: "success" | "error", message, data}`, amounts are decimal
//! GHS (`150.5`), calls carry `Authorization: Bearer <secret key>` (any non-empty secret is an
//! account: what it creates only it can see).
//!
//! - `POST /v3/payments {tx_ref, amount, currency, redirect_url, customer: {email, name?,
//!   phonenumber?}, customizations?: {title}, meta?}` → `data.link`, the sandbox's checkout page.
//!   The same `tx_ref` again (same secret, still pending) answers the same link, as a hosted
//!   link is per reference.
//! - `POST /v3/charges?type=mobile_money_ghana {tx_ref, amount, currency, email, phone_number,
//!   network: MTN|VODAFONE|AIRTELTIGO, fullname?, redirect_url?}` →
//!   `meta.authorization.redirect` (the checkout page, where the customer approves); a `tx_ref`
//!   used before is refused.
//! - `GET /v3/transactions/verify_by_reference?tx_ref=` → `data {id, tx_ref, flw_ref, amount,
//!   charged_amount, app_fee, currency, status: successful|failed|pending, payment_type:
//!   card|mobilemoneygh, customer {…}, meta}`; unknown → 400 "No transaction was found for this id".
//! - `POST /v3/transactions/:id/refund {amount?, comments?}` → `data {id, tx_id, amount_refunded,
//!   status: pending|completed|failed, …}`; `GET /v3/refunds?from=&to=&page=` (dates
//!   `YYYY-MM-DD`, inclusive; newest first, 10 a page, `meta.page_info`); `GET /v3/refunds/:id`.
//! - `POST /v3/transfers {account_bank, account_number, amount, currency, beneficiary_name?,
//!   narration?, reference, debit_currency?}` → `data {id, reference, status: NEW, …}`; a
//!   reference used before → 400 "Duplicate reference"; `GET /v3/transfers?page=` (newest first),
//!   `GET /v3/transfers/:id` (`status` NEW, SUCCESSFUL, FAILED; `complete_message`).
//!
//! Callbacks (`charge.completed`, `transfer.completed`, `refund.completed`, each `{event, data}`
//! with the object as the API shows it) go to `<notify_url>/api/white-label/webhooks/provider_b`,
//! signed with D6.1's `x-provider_b-signature` under the secret key the object was made with:
//! the sandbox knows no account's webhook hash (D18.45).
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::api::{object, text};
use super::control::msisdn;
use super::refunds::{open_refund, refunds_of, Ask, Refund, Refused};
use super::{bearer, now_rfc3339, Channel, Charge, Outcome, Shared, Transfer};
use crate::providers::payments::wire::{ghs, pesewas_at};
use crate::providers::payments::ProviderId;

type Obj = Map<String, Value>;

/// Items a listing page holds.
const PAGE: usize = 10;

pub(super) fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v3/payments", post(initialize))
        .route("/v3/charges", post(charge_mobile_money))
        .route("/v3/transactions/verify_by_reference", get(verify))
        .route("/v3/transactions/{id}/refund", post(refund_create))
        .route("/v3/refunds", get(refund_list))
        .route("/v3/refunds/{id}", get(refund_show))
        .route("/v3/transfers", get(transfer_list).post(transfer_create))
        .route("/v3/transfers/{id}", get(transfer_show))
        .with_state(shared)
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"status": "error", "message": message, "data": null}))).into_response()
}

fn ok(message: &str, data: Value) -> Response {
    Json(json!({"status": "success", "message": message, "data": data})).into_response()
}

/// The Bearer secret, after the outage and auth checks every route makes.
fn guard(shared: &Shared, headers: &HeaderMap) -> Result<String, Box<Response>> {
    if shared.is_down(ProviderId::B.as_str()) {
        return Err(Box::new(error(StatusCode::SERVICE_UNAVAILABLE, "An error occurred. Please contact support")));
    }
    bearer(headers).ok_or_else(|| Box::new(error(StatusCode::UNAUTHORIZED, "Invalid authorization key")))
}

/// A positive decimal GHS amount in pesewas.
fn amount_of(o: &Obj) -> Option<i64> {
    pesewas_at(&Value::Object(o.clone()), "amount").filter(|p| *p > 0)
}

/// Flutterwave's Ghana networks, as the sandbox records them (`mtn`, `vod`, `atl`).
fn network_of(n: &str) -> Option<&'static str> {
    match n.to_ascii_uppercase().as_str() {
        "MTN" => Some("mtn"),
        "VODAFONE" | "TELECEL" => Some("vod"),
        "AIRTELTIGO" | "TIGO" | "AIRTEL" => Some("atl"),
        _ => None,
    }
}

fn charge_status(c: &Charge) -> &'static str {
    match c.status {
        Outcome::Pending => "pending",
        Outcome::Success => "successful",
        Outcome::Failed => "failed",
    }
}

/// A transaction as verify and `charge.completed` show it.
fn transaction(c: &Charge) -> Value {
    json!({
        "id": c.id,
        "tx_ref": c.reference,
        "flw_ref": format!("FLW-MOCK-{}", c.access_code),
        "device_fingerprint": "N/A",
        "amount": ghs(c.amount),
        "currency": c.currency,
        "charged_amount": ghs(c.amount),
        "app_fee": ghs(c.fees()),
        "merchant_fee": 0,
        "processor_response": match c.status {
            Outcome::Pending => "Pending",
            Outcome::Success => "Approved",
            Outcome::Failed => "Declined",
        },
        "auth_model": if c.channel == Channel::MobileMoney { "MOBILEMONEY" } else { "PIN" },
        "ip": "127.0.0.1",
        "narration": c.description.clone().unwrap_or_else(|| "Tessera sandbox".into()),
        "status": charge_status(c),
        "payment_type": if c.channel == Channel::MobileMoney { "mobilemoneygh" } else { "card" },
        "created_at": c.created_at,
        "account_id": 1,
        "amount_settled": ghs(c.amount - c.fees()),
        "meta": c.metadata,
        "customer": {
            "id": c.id,
            "name": c.name.clone().unwrap_or_else(|| "Anonymous customer".into()),
            "phone_number": c.payer.clone().or_else(|| c.phone.clone()).unwrap_or_else(|| "N/A".into()),
            "email": c.email,
            "created_at": c.created_at,
        },
    })
}

/// `charge.completed`, for a charge that succeeded or failed.
pub(super) fn charge_callback(c: &Charge) -> Value {
    let kind = if c.channel == Channel::MobileMoney { "MOBILEMONEYGH_TRANSACTION" } else { "CARD_TRANSACTION" };
    json!({"event": "charge.completed", "data": transaction(c), "event.type": kind})
}

fn transfer_status(t: &Transfer) -> &'static str {
    match t.status {
        Outcome::Pending => "NEW",
        Outcome::Success => "SUCCESSFUL",
        Outcome::Failed => "FAILED",
    }
}

fn transfer_object(t: &Transfer) -> Value {
    json!({
        "id": t.id,
        "account_number": t.recipient["account_number"],
        "bank_code": t.recipient["account_bank"],
        "full_name": t.recipient["beneficiary_name"],
        "created_at": t.created_at,
        "currency": t.currency,
        "debit_currency": t.currency,
        "amount": ghs(t.amount),
        "fee": 0,
        "status": transfer_status(t),
        "reference": t.reference,
        "meta": null,
        "narration": t.reason,
        "complete_message": match t.status {
            Outcome::Pending => String::new(),
            Outcome::Success => "Successful".into(),
            Outcome::Failed => t.failure_reason.clone().unwrap_or_else(|| "Transfer failed".into()),
        },
        "requires_approval": 0,
        "is_approved": 1,
        "bank_name": t.recipient["account_bank"],
    })
}

/// `transfer.completed`, for a transfer that succeeded or failed.
pub(super) fn transfer_callback(t: &Transfer) -> Value {
    json!({"event": "transfer.completed", "event.type": "Transfer", "data": transfer_object(t)})
}

fn refund_status(r: &Refund) -> &'static str {
    match r.status {
        Outcome::Pending => "pending",
        Outcome::Success => "completed",
        Outcome::Failed => "failed",
    }
}

fn refund_object(r: &Refund) -> Value {
    json!({
        "id": r.seq,
        "account_id": 1,
        "tx_id": r.charge_id,
        "tx_ref": r.transaction,
        "flw_ref": format!("URF_{}", r.code),
        "wallet_id": 1,
        "amount_refunded": ghs(r.amount),
        "status": refund_status(r),
        "destination": "payment_source",
        "meta": {"source": "availablebalance"},
        "comments": r.note,
        "created_at": r.created_at,
    })
}

/// `refund.completed`, for a refund that completed or failed (`data.status` says which).
pub(super) fn refund_callback(r: &Refund) -> Value {
    json!({"event": "refund.completed", "data": refund_object(r)})
}

async fn initialize(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return error(StatusCode::BAD_REQUEST, "Invalid JSON body") };
    let Some(tx_ref) = text(&o, "tx_ref") else { return error(StatusCode::BAD_REQUEST, "tx_ref is required") };
    let Some(amount) = amount_of(&o) else { return error(StatusCode::BAD_REQUEST, "amount is required") };
    let customer = o.get("customer").and_then(Value::as_object).cloned().unwrap_or_default();
    let Some(email) = text(&customer, "email") else {
        return error(StatusCode::BAD_REQUEST, "customer.email is required");
    };
    let Some(redirect) = text(&o, "redirect_url") else {
        return error(StatusCode::BAD_REQUEST, "redirect_url is required");
    };
    let currency = text(&o, "currency").unwrap_or("NGN");
    let metadata = o.get("meta").cloned().unwrap_or(Value::Null);
    let mut c = Charge::pending(ProviderId::B, secret.clone(), tx_ref, amount, currency, email, metadata);
    c.callback_url = Some(redirect.to_string());
    c.name = text(&customer, "name").map(str::to_string);
    c.phone = text(&customer, "phonenumber").map(str::to_string);
    c.description =
        o.get("customizations").and_then(Value::as_object).and_then(|z| text(z, "title")).map(str::to_string);
    let opened = shared.open_charge(c);
    shared.charge_delay().await;
    let charge = match opened {
        Some(c) => c,
        // A hosted link is per tx_ref: asked again while it is unpaid, the same page.
        None => match shared.db().charge(tx_ref).filter(|c| c.secret == secret && c.provider == ProviderId::B) {
            Some(c) if c.status == Outcome::Pending => c.clone(),
            _ => return error(StatusCode::BAD_REQUEST, "Duplicate transaction reference. Please use a unique tx_ref"),
        },
    };
    ok("Hosted Link", json!({"link": charge.checkout_url(&shared.base_url)}))
}

#[derive(Deserialize)]
struct ChargeQuery {
    #[serde(rename = "type")]
    kind: Option<String>,
}

async fn charge_mobile_money(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(q): Query<ChargeQuery>,
    body: Bytes,
) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if q.kind.as_deref() != Some("mobile_money_ghana") {
        return error(StatusCode::BAD_REQUEST, "Invalid charge type: the sandbox charges type=mobile_money_ghana");
    }
    let bad = |m: &str| error(StatusCode::BAD_REQUEST, m);
    let Some(o) = object(&body) else { return bad("Invalid JSON body") };
    let (Some(tx_ref), Some(amount), Some(email)) = (text(&o, "tx_ref"), amount_of(&o), text(&o, "email")) else {
        return bad("tx_ref, amount and email are required");
    };
    let Some(phone) = text(&o, "phone_number").filter(|p| p.chars().filter(char::is_ascii_digit).count() >= 9) else {
        return bad("phone_number is required");
    };
    let Some(network) = text(&o, "network").and_then(network_of) else {
        return bad("network must be one of MTN, VODAFONE, AIRTELTIGO");
    };
    let currency = text(&o, "currency").unwrap_or("GHS");
    let metadata = o.get("meta").cloned().unwrap_or(Value::Null);
    let mut c = Charge::pending(ProviderId::B, secret, tx_ref, amount, currency, email, metadata);
    c.channel = Channel::MobileMoney;
    c.phone = Some(phone.to_string());
    c.network = Some(network.to_string());
    c.name = text(&o, "fullname").map(str::to_string);
    c.callback_url = text(&o, "redirect_url").map(str::to_string);
    let opened = shared.open_charge(c);
    shared.charge_delay().await;
    let Some(charge) = opened else {
        return bad("Duplicate transaction reference. Please use a unique tx_ref");
    };
    let redirect = charge.checkout_url(&shared.base_url);
    Json(json!({
        "status": "success",
        "message": "Charge initiated",
        "meta": {"authorization": {"redirect": redirect, "mode": "redirect"}},
    }))
    .into_response()
}

#[derive(Deserialize)]
struct VerifyQuery {
    tx_ref: Option<String>,
}

async fn verify(State(shared): State<Arc<Shared>>, headers: HeaderMap, Query(q): Query<VerifyQuery>) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = shared.db();
    let tx_ref = q.tx_ref.unwrap_or_default();
    match db.charges.get(&tx_ref).filter(|c| c.provider == ProviderId::B && c.secret == secret) {
        Some(c) => ok("Transaction fetched successfully", transaction(c)),
        None => error(StatusCode::BAD_REQUEST, "No transaction was found for this id"),
    }
}

/// The first UUID in a refund's `comments` (an adapter may carry Tessera's refund id there).
fn uuid_in(s: &str) -> Option<String> {
    s.split(|c: char| !(c.is_ascii_hexdigit() || c == '-')).find(|w| crate::domain::is_uuid(w)).map(str::to_string)
}

async fn refund_create(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let o = if body.iter().all(u8::is_ascii_whitespace) { Some(Obj::new()) } else { object(&body) };
    let Some(o) = o else { return error(StatusCode::BAD_REQUEST, "Invalid JSON body") };
    if o.contains_key("amount") && amount_of(&o).is_none() {
        return error(StatusCode::BAD_REQUEST, "amount must be a positive amount");
    }
    let mut db = shared.db();
    let Some(reference) = db
        .charges
        .values()
        .find(|c| c.provider == ProviderId::B && c.secret == secret && c.id.to_string() == id)
        .map(|c| c.reference.clone())
    else {
        return error(StatusCode::NOT_FOUND, "Transaction not found");
    };
    let note = text(&o, "comments");
    let tessera_id = note.and_then(uuid_in).filter(|i| !db.refunds.contains_key(i));
    let ask =
        Ask { id: tessera_id.as_deref(), amount: amount_of(&o), note, ..Ask::new(ProviderId::B, secret, &reference) };
    match open_refund(&mut db, ask) {
        Ok(r) => ok("Transaction refund initiated", refund_object(&r)),
        Err(Refused::NotPaid) => error(StatusCode::BAD_REQUEST, "Only successful transactions can be refunded"),
        Err(Refused::Exceeds(_)) => {
            error(StatusCode::BAD_REQUEST, "Refund amount cannot be more than the amount left on the transaction")
        }
        Err(Refused::NoCharge | Refused::Exists) => error(StatusCode::NOT_FOUND, "Transaction not found"),
    }
}

#[derive(Deserialize)]
struct ListQuery {
    from: Option<String>,
    to: Option<String>,
    page: Option<usize>,
}

/// One page of `items` (newest first) with Flutterwave's `meta.page_info`.
fn page_of(message: &str, items: Vec<Value>, page: Option<usize>) -> Response {
    let total = items.len();
    let pages = total.div_ceil(PAGE).max(1);
    let page = page.unwrap_or(1).max(1);
    let data: Vec<Value> = items.into_iter().skip((page - 1) * PAGE).take(PAGE).collect();
    Json(json!({
        "status": "success",
        "message": message,
        "meta": {"page_info": {"total": total, "current_page": page, "total_pages": pages}},
        "data": data,
    }))
    .into_response()
}

async fn refund_list(State(shared): State<Arc<Shared>>, headers: HeaderMap, Query(q): Query<ListQuery>) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    for d in [&q.from, &q.to].into_iter().flatten() {
        let b = d.as_bytes();
        let digits = b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() });
        if b.len() != 10 || !digits {
            return error(StatusCode::BAD_REQUEST, "from and to must be dates as YYYY-MM-DD");
        }
    }
    let day = |r: &Refund| r.created_at.get(..10).unwrap_or_default().to_string();
    let found = refunds_of(&shared.db(), ProviderId::B, &secret, |r| {
        q.from.as_ref().is_none_or(|f| day(r) >= *f) && q.to.as_ref().is_none_or(|t| day(r) <= *t)
    });
    page_of("Refunds fetched", found.iter().map(refund_object).collect(), q.page)
}

async fn refund_show(State(shared): State<Arc<Shared>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    match refunds_of(&shared.db(), ProviderId::B, &secret, |r| r.seq.to_string() == id).first() {
        Some(r) => ok("Refund fetched", refund_object(r)),
        None => error(StatusCode::NOT_FOUND, "Refund not found"),
    }
}

async fn transfer_create(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let bad = |m: &str| error(StatusCode::BAD_REQUEST, m);
    let Some(o) = object(&body) else { return bad("Invalid JSON body") };
    let (Some(bank), Some(number), Some(amount)) =
        (text(&o, "account_bank"), text(&o, "account_number"), amount_of(&o))
    else {
        return bad("account_bank, account_number and amount are required");
    };
    let Some(currency) = text(&o, "currency") else { return bad("currency is required") };
    let Some(reference) = text(&o, "reference") else { return bad("reference is required") };
    // A wallet is a 233… number on MTN, VODAFONE or AIRTELTIGO.
    if network_of(bank).is_some() && !msisdn(number).starts_with("233") {
        return bad("account_number of a mobile money wallet is its 233… number");
    }
    let mut db = shared.db();
    if db.transfers.contains_key(reference) {
        return bad("Duplicate reference");
    }
    let id = db.next_id();
    let t = Transfer {
        id,
        provider: ProviderId::B,
        secret,
        reference: reference.to_string(),
        amount,
        currency: currency.to_string(),
        reason: text(&o, "narration").unwrap_or_default().to_string(),
        recipient: json!({"account_bank": bank, "account_number": number,
                          "beneficiary_name": text(&o, "beneficiary_name")}),
        transfer_code: format!("FLW-TRF-{id}"),
        status: Outcome::Pending,
        failure_reason: None,
        created_at: now_rfc3339(),
        completed_at: None,
        notify_url: None,
    };
    let data = transfer_object(&t);
    db.transfers.insert(reference.to_string(), t);
    ok("Transfer Queued Successfully", data)
}

#[derive(Deserialize)]
struct TransferListQuery {
    page: Option<usize>,
}

async fn transfer_list(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(q): Query<TransferListQuery>,
) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = shared.db();
    let mut mine: Vec<&Transfer> =
        db.transfers.values().filter(|t| t.provider == ProviderId::B && t.secret == secret).collect();
    mine.sort_by_key(|t| std::cmp::Reverse(t.id));
    page_of("Transfers fetched", mine.into_iter().map(transfer_object).collect(), q.page)
}

async fn transfer_show(State(shared): State<Arc<Shared>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = shared.db();
    match db.transfers.values().find(|t| t.provider == ProviderId::B && t.secret == secret && t.id.to_string() == id) {
        Some(t) => ok("Transfer fetched", transfer_object(t)),
        None => error(StatusCode::NOT_FOUND, "Transfer not found"),
    }
}

//! A fake of Flutterwave's v3 API as its developer documentation shows it (D18.2): Bearer
//! secret key (a missing or wrong one → 401 `{"status":"error","message":"Authorization
//! required" | "Invalid authorization key","data":null}`), the `{status, message, data}`
//! envelope, decimal amounts, and
//!
//! - `POST /v3/payments` → `data.link` (Flutterwave Standard);
//! - `POST /v3/charges?type=mobile_money_ghana` → `meta.authorization.redirect`;
//! - `GET /v3/transactions/verify_by_reference?tx_ref=` (400 "No transaction was found for this
//!   id" before a charge exists);
//! - `POST /v3/transactions/{id}/refund`, `GET /v3/refunds?from=&to=&page=`, `GET /v3/refunds/{id}`;
//! - `POST /v3/transfers` (400 "Duplicate reference" for a reused one), `GET /v3/transfers?page=`,
//!   `GET /v3/transfers/{id}`.
//!
//! Controls: settle a charge, set what the verify reports as its amount, fail the next call
//! with a 500 or act and then never answer (the caller's timeout, a lost answer), answer the
//! next call with a raw body, read the requests received; and post a webhook to Tessera signed
//! with `verif-hash` or `flutterwave-signature`.
// A refusal is the answer itself (axum's `Response`), returned as `Err` by the sync helpers.
#![allow(clippy::result_large_err)]
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

/// A request the fake received: method, path with query, JSON body (`Null` when none).
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub body: Value,
}

/// What the next call gets instead of its answer.
#[derive(Debug, Clone)]
pub enum Failure {
    /// A 500 with Flutterwave's server-error body; nothing done.
    Status500,
    /// Done, then never answered: the caller times out (a lost answer).
    DropAfter,
    /// Answered with this status, content type and raw body; nothing done.
    Raw(u16, &'static str, String),
}

#[derive(Debug, Clone)]
struct Charge {
    id: u64,
    tx_ref: String,
    amount: Value,
    currency: String,
    status: String,
    payment_type: String,
    email: String,
    phone: Option<String>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    charges: BTreeMap<String, Charge>,
    /// What the verify reports as a charge's amount instead of what was asked.
    verify_amount: BTreeMap<String, Value>,
    refunds: Vec<Value>,
    transfers: Vec<Value>,
    requests: Vec<Received>,
    fail_next: Option<Failure>,
    /// A failure for the next POST only (GETs before it answer).
    fail_post_next: Option<Failure>,
    /// The status a new refund starts in (`completed` as the docs' example, or `pending`).
    refund_status: String,
}

#[derive(Clone)]
struct Fake {
    secret: String,
    base: String,
    inner: Arc<Mutex<Inner>>,
}

/// A running fake: its base URL (what `[providers.provider_b] base_url` takes) and controls.
pub struct FakeFlutterwave {
    pub base_url: String,
    pub secret: String,
    fake: Fake,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl FakeFlutterwave {
    /// Starts the fake on 127.0.0.1:0 accepting `Bearer <secret>`.
    pub async fn start(secret: &str) -> FakeFlutterwave {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let inner = Inner { next_id: 4_975_363, refund_status: "completed".into(), ..Inner::default() };
        let fake = Fake { secret: secret.to_string(), base: base.clone(), inner: Arc::new(Mutex::new(inner)) };
        let app = Router::new()
            .route("/v3/payments", post(payments))
            .route("/v3/charges", post(charges))
            .route("/v3/transactions/verify_by_reference", get(verify))
            .route("/v3/transactions/{id}/refund", post(refund))
            .route("/v3/refunds", get(refunds))
            .route("/v3/refunds/{id}", get(refund_by_id))
            .route("/v3/transfers", post(transfer).get(transfers))
            .route("/v3/transfers/{id}", get(transfer_by_id))
            .with_state(fake.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        FakeFlutterwave { base_url: base, secret: secret.to_string(), fake, _stop: tx }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.fake.inner.lock().expect("fake state")
    }

    /// Settles the charge of `tx_ref`: `successful` or `failed`.
    pub fn settle(&self, tx_ref: &str, status: &str) {
        let mut i = self.inner();
        let c = i.charges.get_mut(tx_ref).unwrap_or_else(|| panic!("no charge {tx_ref}"));
        c.status = status.to_string();
    }

    /// The Flutterwave id of the charge of `tx_ref`.
    pub fn charge_id(&self, tx_ref: &str) -> u64 {
        self.inner().charges.get(tx_ref).map(|c| c.id).unwrap_or_else(|| panic!("no charge {tx_ref}"))
    }

    /// What the verify reports as the charge's amount from now on (e.g. `"abc"`, `10`).
    pub fn set_verify_amount(&self, tx_ref: &str, amount: Value) {
        self.inner().verify_amount.insert(tx_ref.to_string(), amount);
    }

    /// The next call (any route) fails this way.
    pub fn fail_next(&self, failure: Failure) {
        self.inner().fail_next = Some(failure);
    }

    /// The next POST (any route) fails this way; GETs before it answer as usual.
    pub fn fail_post_next(&self, failure: Failure) {
        self.inner().fail_post_next = Some(failure);
    }

    /// Completes the refund of Flutterwave id `id`.
    pub fn complete_refund(&self, id: &Value) {
        let mut i = self.inner();
        let r = i.refunds.iter_mut().find(|r| r["id"] == *id).expect("refund");
        r["status"] = json!("completed");
    }

    /// The status new refunds start in.
    pub fn set_refund_status(&self, status: &str) {
        self.inner().refund_status = status.to_string();
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Received> {
        self.inner().requests.clone()
    }

    /// The requests received on `path` (the path without its query).
    pub fn requests_to(&self, method: &str, path: &str) -> Vec<Received> {
        self.requests().into_iter().filter(|r| r.method == method && r.path.split('?').next() == Some(path)).collect()
    }

    /// The refunds made, as Flutterwave keeps them.
    pub fn refunds(&self) -> Vec<Value> {
        self.inner().refunds.clone()
    }

    /// The transfers made, as Flutterwave keeps them.
    pub fn transfers(&self) -> Vec<Value> {
        self.inner().transfers.clone()
    }

    /// Settles the transfer of `reference`: `SUCCESSFUL` or `FAILED` with `complete_message`.
    pub fn settle_transfer(&self, reference: &str, status: &str, message: &str) -> Value {
        let mut i = self.inner();
        let t = i.transfers.iter_mut().find(|t| t["reference"] == reference).expect("transfer");
        t["status"] = json!(status);
        t["complete_message"] = json!(message);
        t.clone()
    }

    /// The `charge.completed` webhook body Flutterwave sends for the charge of `tx_ref`.
    pub fn charge_completed(&self, tx_ref: &str, status: &str) -> Value {
        let i = self.inner();
        let c = i.charges.get(tx_ref).unwrap_or_else(|| panic!("no charge {tx_ref}"));
        json!({
            "event": "charge.completed",
            "data": {
                "id": c.id, "tx_ref": c.tx_ref, "flw_ref": format!("FLW-MOCK-{}", c.id), "device_fingerprint": "N/A",
                "amount": c.amount, "currency": c.currency, "charged_amount": c.amount, "app_fee": 0,
                "merchant_fee": 0, "processor_response": "Approved by Financial Institution", "auth_model": "PIN",
                "ip": "::ffff:127.0.0.1", "narration": "CARD Transaction ", "status": status,
                "payment_type": c.payment_type, "created_at": "2026-12-07T10:00:00.000Z", "account_id": 17321,
                "customer": {"id": 215604089, "name": "Ama Mensah", "phone_number": c.phone, "email": c.email,
                             "created_at": "2026-12-07T10:00:00.000Z"}
            },
            "event.type": "CARD_TRANSACTION"
        })
    }

    /// Flutterwave's older flat webhook body for the charge of `tx_ref`.
    pub fn legacy_completed(&self, tx_ref: &str, status: &str) -> Value {
        let i = self.inner();
        let c = i.charges.get(tx_ref).unwrap_or_else(|| panic!("no charge {tx_ref}"));
        json!({
            "id": c.id, "txRef": c.tx_ref, "flwRef": format!("FLW-MOCK-{}", c.id), "orderRef": format!("URF_{}", c.id),
            "paymentPlan": null, "paymentPage": null, "createdAt": "2026-12-07T10:00:00.000Z", "amount": c.amount,
            "charged_amount": c.amount, "status": status, "IP": "127.0.0.1", "currency": c.currency, "appfee": 0,
            "merchantfee": 0, "merchantbearsfee": 1, "charge_type": "normal",
            "customer": {"id": 126950, "phone": c.phone, "fullName": "Ama Mensah", "customertoken": null,
                         "email": c.email, "createdAt": "2026-12-07T10:00:00.000Z"},
            "event.type": "CARD_TRANSACTION"
        })
    }

    /// The `transfer.completed` webhook body for the transfer of `reference`.
    pub fn transfer_completed(&self, reference: &str) -> Value {
        let i = self.inner();
        let t = i.transfers.iter().find(|t| t["reference"] == reference).expect("transfer");
        json!({"event": "transfer.completed", "event.type": "Transfer", "data": t})
    }
}

/// How a webhook to Tessera is authenticated.
pub enum Signed<'a> {
    /// `verif-hash: <hash>` (the dashboard's secret hash, sent as is).
    VerifHash(&'a str),
    /// `flutterwave-signature: base64(HMAC-SHA256(body, hash))`.
    Signature(&'a str),
    /// No header at all.
    None,
}

/// Posts `body` to Tessera's `POST /api/white-label/webhooks/provider_b` as Flutterwave would;
/// returns the status and the answer's JSON.
pub async fn post_webhook(tessera: &str, body: &Value, signed: Signed<'_>) -> (u16, Value) {
    use base64::Engine;
    use hmac::Mac;
    let bytes = serde_json::to_vec(body).expect("json");
    let mut req = reqwest::Client::new()
        .post(format!("{tessera}/api/white-label/webhooks/provider_b"))
        .header("content-type", "application/json");
    req = match signed {
        Signed::VerifHash(h) => req.header("verif-hash", h),
        Signed::Signature(h) => {
            let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(h.as_bytes()).expect("key");
            m.update(&bytes);
            req.header(
                "flutterwave-signature",
                base64::engine::general_purpose::STANDARD.encode(m.finalize().into_bytes()),
            )
        }
        Signed::None => req,
    };
    let r = req.body(bytes).send().await.expect("webhook");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn envelope(message: &str, data: Value) -> Response {
    Json(json!({"status": "success", "message": message, "data": data})).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"status": "error", "message": message, "data": null}))).into_response()
}

/// Records the request, checks the Bearer key and applies a pending failure: `Err` is the
/// answer to give instead; `Ok(drop)` says whether to act and then never answer.
fn intake(fake: &Fake, method: &Method, uri: &Uri, headers: &HeaderMap, body: &Value) -> Result<bool, Response> {
    let mut i = fake.inner.lock().expect("fake state");
    let path = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    i.requests.push(Received { method: method.to_string(), path, body: body.clone() });
    match headers.get("authorization").and_then(|v| v.to_str().ok()) {
        None => return Err(error(StatusCode::UNAUTHORIZED, "Authorization required")),
        Some(v) if v != format!("Bearer {}", fake.secret) => {
            return Err(error(StatusCode::UNAUTHORIZED, "Invalid authorization key"))
        }
        Some(_) => {}
    }
    let failure = match i.fail_next.take() {
        Some(f) => Some(f),
        None if *method == Method::POST => i.fail_post_next.take(),
        None => None,
    };
    match failure {
        None => Ok(false),
        Some(Failure::DropAfter) => Ok(true),
        Some(Failure::Status500) => Err((
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error_id": "ERRNO796977608T1620310828419", "message": "Application error. Please contact support", "code": "app_error"})),
        )
            .into_response()),
        Some(Failure::Raw(status, content_type, text)) => Err((
            StatusCode::from_u16(status).expect("status"),
            [("content-type", content_type)],
            text,
        )
            .into_response()),
    }
}

/// The answer, or never one when the call was to be dropped after acting.
async fn answer(drop: bool, r: Response) -> Response {
    if drop {
        std::future::pending::<()>().await;
    }
    r
}

fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();
    let days = (secs / 86_400) as i64;
    // Civil date of a day count (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn new_charge(
    fake: &Fake,
    body: &Value,
    payment_type: &str,
    phone: Option<String>,
    email: &str,
) -> Result<Charge, Response> {
    let tx_ref = body["tx_ref"].as_str().filter(|s| !s.is_empty());
    let Some(tx_ref) = tx_ref else { return Err(error(StatusCode::BAD_REQUEST, "tx_ref is required")) };
    if !body["amount"].is_number() {
        return Err(error(StatusCode::BAD_REQUEST, "amount is required"));
    }
    let mut i = fake.inner.lock().expect("fake state");
    i.next_id += 1;
    let charge = Charge {
        id: i.next_id,
        tx_ref: tx_ref.to_string(),
        amount: body["amount"].clone(),
        currency: body["currency"].as_str().unwrap_or("NGN").to_string(),
        status: "pending".into(),
        payment_type: payment_type.to_string(),
        email: email.to_string(),
        phone,
    };
    i.charges.insert(tx_ref.to_string(), charge.clone());
    Ok(charge)
}

async fn payments(
    State(fake): State<Fake>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let drop = match intake(&fake, &method, &uri, &headers, &body) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let email = body["customer"]["email"].as_str().unwrap_or_default().to_string();
    if email.is_empty() || body["redirect_url"].as_str().is_none() {
        return error(StatusCode::BAD_REQUEST, "customer.email and redirect_url are required");
    }
    let phone = body["customer"]["phonenumber"].as_str().map(str::to_string);
    let charge = match new_charge(&fake, &body, "card", phone, &email) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let link = format!("{}/v3/hosted/pay/{}", fake.base, charge.id);
    answer(drop, envelope("Hosted Link", json!({"link": link}))).await
}

#[derive(serde::Deserialize)]
struct ChargeType {
    #[serde(rename = "type")]
    kind: Option<String>,
}

async fn charges(
    State(fake): State<Fake>,
    Query(q): Query<ChargeType>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let drop = match intake(&fake, &method, &uri, &headers, &body) {
        Ok(d) => d,
        Err(r) => return r,
    };
    if q.kind.as_deref() != Some("mobile_money_ghana") {
        return error(StatusCode::BAD_REQUEST, "Invalid charge type");
    }
    if !matches!(body["network"].as_str(), Some("MTN" | "VODAFONE" | "AIRTELTIGO")) {
        return error(StatusCode::BAD_REQUEST, "network is required and must be MTN, VODAFONE or AIRTELTIGO");
    }
    let phone = body["phone_number"].as_str().map(str::to_string);
    let email = body["email"].as_str().unwrap_or_default().to_string();
    let charge = match new_charge(&fake, &body, "mobilemoneygh", phone, &email) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let redirect = format!("{}/captcha/verify/lang-en/{}", fake.base, charge.id);
    let r = Json(json!({"status": "success", "message": "Charge initiated",
                        "meta": {"authorization": {"redirect": redirect, "mode": "redirect"}}}));
    answer(drop, r.into_response()).await
}

#[derive(serde::Deserialize)]
struct TxRef {
    tx_ref: Option<String>,
}

async fn verify(
    State(fake): State<Fake>,
    Query(q): Query<TxRef>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let drop = match intake(&fake, &method, &uri, &headers, &Value::Null) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let found = {
        let i = fake.inner.lock().expect("fake state");
        q.tx_ref.and_then(|r| i.charges.get(&r).cloned()).map(|c| {
            let amount = i.verify_amount.get(&c.tx_ref).cloned().unwrap_or(c.amount.clone());
            (c, amount)
        })
    };
    let Some((c, amount)) = found else {
        return answer(drop, error(StatusCode::BAD_REQUEST, "No transaction was found for this id")).await;
    };
    let data = json!({
        "id": c.id, "tx_ref": c.tx_ref, "flw_ref": format!("FLW-MOCK-{}", c.id), "device_fingerprint": "N/A",
        "amount": amount, "currency": c.currency, "charged_amount": amount, "app_fee": 0, "merchant_fee": 0,
        "processor_response": if c.status == "failed" { "Declined" } else { "Approved" }, "auth_model": "PIN",
        "ip": "::ffff:127.0.0.1", "narration": "FLUTTERWAVE V3 DOCS", "status": c.status,
        "payment_type": c.payment_type, "created_at": "2026-12-07T10:00:00.000Z", "account_id": 118468,
        "meta": null, "amount_settled": amount,
        "customer": {"id": 2374551, "name": "Ama Mensah", "phone_number": c.phone.unwrap_or_else(|| "N/A".into()),
                     "email": c.email, "created_at": "2026-12-07T10:00:00.000Z"}
    });
    answer(drop, envelope("Transaction fetched successfully", data)).await
}

fn make_refund(fake: &Fake, id: &str, body: &Value) -> Result<Value, Response> {
    let mut i = fake.inner.lock().expect("fake state");
    let Some(charge) = i.charges.values().find(|c| c.id.to_string() == id).cloned() else {
        return Err(error(StatusCode::BAD_REQUEST, "No transaction was found for this id"));
    };
    if charge.status != "successful" {
        return Err(error(StatusCode::BAD_REQUEST, "Only successful transactions can be refunded"));
    }
    i.next_id += 1;
    let refund = json!({
        "id": i.next_id, "account_id": 73362, "tx_id": charge.id, "flw_ref": format!("URF_{}", i.next_id),
        "wallet_id": 74639, "amount_refunded": body.get("amount").cloned().unwrap_or(charge.amount.clone()),
        "status": i.refund_status, "destination": "payment_source", "meta": {"source": "availablebalance"},
        "comments": body.get("comments").cloned().unwrap_or(Value::Null),
        "created_at": format!("{}T09:00:00.000Z", today()),
    });
    i.refunds.push(refund.clone());
    Ok(refund)
}

fn make_transfer(fake: &Fake, body: &Value) -> Result<Value, Response> {
    let mut i = fake.inner.lock().expect("fake state");
    if i.transfers.iter().any(|t| t["reference"] == body["reference"]) {
        return Err(error(StatusCode::BAD_REQUEST, "Duplicate reference"));
    }
    i.next_id += 1;
    let t = json!({
        "id": i.next_id, "account_number": body["account_number"], "bank_code": body["account_bank"],
        "full_name": body["beneficiary_name"], "created_at": format!("{}T09:00:00.000Z", today()),
        "currency": body["currency"], "debit_currency": body["debit_currency"], "amount": body["amount"], "fee": 1,
        "status": "NEW", "reference": body["reference"], "meta": null, "narration": body["narration"],
        "complete_message": "", "requires_approval": 0, "is_approved": 1, "bank_name": "MTN MOBILE MONEY",
    });
    i.transfers.push(t.clone());
    Ok(t)
}

async fn refund(
    State(fake): State<Fake>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let drop = match intake(&fake, &method, &uri, &headers, &body) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let made = make_refund(&fake, &id, &body);
    let refund = match made {
        Ok(r) => r,
        Err(r) => return r,
    };
    answer(drop, envelope("Transaction refund initiated", refund)).await
}

#[derive(serde::Deserialize)]
struct Listing {
    from: Option<String>,
    to: Option<String>,
    page: Option<u64>,
}

/// A page of 10 (Flutterwave's listings are paged; the fake's pages are small so paging is used).
fn paged(items: Vec<Value>, page: u64, message: &str) -> Response {
    let per = 10usize;
    let total_pages = items.len().div_ceil(per).max(1) as u64;
    let start = ((page.max(1) - 1) as usize) * per;
    let data: Vec<Value> = items.iter().skip(start).take(per).cloned().collect();
    Json(json!({"status": "success", "message": message,
                "meta": {"page_info": {"total": items.len(), "current_page": page.max(1), "total_pages": total_pages}},
                "data": data}))
    .into_response()
}

async fn refunds(
    State(fake): State<Fake>,
    Query(q): Query<Listing>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let drop = match intake(&fake, &method, &uri, &headers, &Value::Null) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let day = |s: &Option<String>| s.as_deref().is_some_and(|d| d.len() == 10 && d.as_bytes()[4] == b'-');
    if !day(&q.from) || !day(&q.to) {
        return error(StatusCode::BAD_REQUEST, "from and to must be dates YYYY-MM-DD");
    }
    let (from, to) = (q.from.unwrap_or_default(), q.to.unwrap_or_default());
    let items: Vec<Value> = fake
        .inner
        .lock()
        .expect("fake state")
        .refunds
        .iter()
        .filter(|r| r["created_at"].as_str().is_some_and(|c| c[..10] >= *from && c[..10] <= *to))
        .cloned()
        .collect();
    answer(drop, paged(items, q.page.unwrap_or(1), "Refunds fetched")).await
}

async fn refund_by_id(
    State(fake): State<Fake>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let drop = match intake(&fake, &method, &uri, &headers, &Value::Null) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let found = fake
        .inner
        .lock()
        .expect("fake state")
        .refunds
        .iter()
        .find(|r| r["id"].as_u64() == id.parse::<u64>().ok())
        .cloned();
    match found {
        Some(r) => answer(drop, envelope("Refund fetched", r)).await,
        None => error(StatusCode::NOT_FOUND, "Refund not found"),
    }
}

async fn transfer(
    State(fake): State<Fake>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let drop = match intake(&fake, &method, &uri, &headers, &body) {
        Ok(d) => d,
        Err(r) => return r,
    };
    for field in ["account_bank", "account_number", "amount", "currency", "reference"] {
        if body.get(field).is_none_or(Value::is_null) {
            return error(StatusCode::BAD_REQUEST, &format!("{field} is required"));
        }
    }
    let t = match make_transfer(&fake, &body) {
        Ok(t) => t,
        Err(r) => return r,
    };
    answer(drop, envelope("Transfer Queued Successfully", t)).await
}

async fn transfers(
    State(fake): State<Fake>,
    Query(q): Query<Listing>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let drop = match intake(&fake, &method, &uri, &headers, &Value::Null) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let items = fake.inner.lock().expect("fake state").transfers.clone();
    answer(drop, paged(items, q.page.unwrap_or(1), "Transfers fetched")).await
}

async fn transfer_by_id(
    State(fake): State<Fake>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let drop = match intake(&fake, &method, &uri, &headers, &Value::Null) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let found = fake
        .inner
        .lock()
        .expect("fake state")
        .transfers
        .iter()
        .find(|t| t["id"].as_u64() == id.parse::<u64>().ok())
        .cloned();
    match found {
        Some(t) => answer(drop, envelope("Transfer fetched", t)).await,
        None => error(StatusCode::NOT_FOUND, "Transfer not found"),
    }
}

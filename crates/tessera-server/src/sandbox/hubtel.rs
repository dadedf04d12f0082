//! Hubtel under `/provider_c` (D18.3, D18.6), as its developer docs show it. Hubtel has five
//! hosts; the adapter's `baseUrl` replaces them all, so every path sits under `/provider_c`.
//! Calls carry `Authorization: Basic base64(apiId:secretKey)`: any non-empty pair is an account,
//! known by its secret key (what it creates only it can see). Amounts are decimal GHS.
//!
//! - Checkout: `POST /items/initiate {totalAmount, description, callbackUrl, returnUrl,
//!   cancellationUrl, merchantAccountNumber, clientReference (≤ 32), payeeName?,
//!   payeeMobileNumber?, payeeEmail?}` → `{responseCode: "0000", status: "Success", data:
//!   {checkoutUrl, checkoutId, clientReference, message, checkoutDirectUrl}}`; the checkout page is
//!   the sandbox's, where the customer pays by mobile money (from `payeeMobileNumber`, else a
//!   number of the sandbox's own, one per charge) unless the control API says `method: card`.
//! - Receive money (a prompt on the handset): `POST /merchantaccount/merchants/{posSalesId}/receive/
//!   mobilemoney {CustomerName, CustomerMsisdn, Channel: mtn-gh|vodafone-gh|tigo-gh, Amount,
//!   PrimaryCallbackURL, Description, ClientReference}` → `ResponseCode: "0001"` (pending: the
//!   handset approves when the control API settles the charge). The same ClientReference again
//!   is accepted again (`0001`, counted in the charge's `prompts`), as Hubtel refuses nothing by it.
//! - Status: `GET /transactions/{posSalesId}/status?clientReference=` → `{message, responseCode:
//!   "0000", data: {date, status: Paid|Unpaid|Failed, transactionId, paymentMethod:
//!   mobilemoney|card, clientReference, currencyCode, amount, charges, amountAfterCharges}}`;
//!   unknown → 404.
//! - Send money: `POST /api/merchants/{prepaidDepositId}/send/mobilemoney {RecipientName,
//!   RecipientMsisdn, Channel, Amount, PrimaryCallbackURL, Description, ClientReference}` and
//!   `POST /api/merchants/{prepaidDepositId}/send/bank/gh/{bankCode} {Amount, PrimaryCallbackURL,
//!   Description, BankAccountNumber, BankAccountName, ClientReference}` → `ResponseCode: "0001"`
//!   with `Data {TransactionId, ClientReference, Amount, …}`; status `GET /api/merchants/
//!   {prepaidDepositId}/transactions/status?clientReference=` → `{ResponseCode: "0000", Data:
//!   {TransactionStatus: pending|success|failed, TransactionId, ClientReference, Amount, …}}`;
//!   unknown → 404. Mobile money sent back to the paying number of a
//!   paid charge of the account, no more than is left of it, is a refund of that charge (the
//!   control API's `/sandbox/refunds`); any other send is a transfer (`/sandbox/transfers`). A
//!   ClientReference the account used before answers that send as it stands.
//!
//! Callbacks go to the URL the request named (`callbackUrl`, `PrimaryCallbackURL`; loopback
//! only) in Hubtel's shapes: the checkout's `{ResponseCode, Status, Data: {CheckoutId,
//! ClientReference, Status, Amount, CustomerPhoneNumber, PaymentDetails}}`, receive money's and
//! send money's `{ResponseCode, Message, Data: {TransactionId, ClientReference, Amount, …}}`
//! (`0000` success; a failure's code, `2001` unless the control API gives one). Hubtel signs
//! nothing; the sandbox adds D6.1's `x-provider_c-signature` (hex HMAC-SHA256 with the secret
//! key, D18.45).
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::api::{object, text};
use super::control::msisdn;
use super::refunds::{left_of, open_refund, Ask, Refund};
use super::{now_rfc3339, random_hex, Channel, Charge, Db, Outcome, Shared, Transfer};
use crate::providers::payments::wire::{ghs, pesewas_at};
use crate::providers::payments::ProviderId;

type Obj = Map<String, Value>;

pub(super) fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/items/initiate", post(initiate))
        .route("/merchantaccount/merchants/{pos}/receive/mobilemoney", post(receive))
        .route("/transactions/{pos}/status", get(status))
        .route("/api/merchants/{deposit}/send/mobilemoney", post(send_mobile_money))
        .route("/api/merchants/{deposit}/send/bank/gh/{bank}", post(send_bank))
        .route("/api/merchants/{deposit}/transactions/status", get(send_status))
        .with_state(shared)
}

/// Hubtel's error answer: `{ResponseCode, Message}` with the HTTP status.
fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (status, Json(json!({"ResponseCode": code, "Message": message, "Data": null}))).into_response()
}

/// A request Hubtel would refuse for its fields (`4010`, validation errors).
fn invalid(message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, "4010", message)
}

/// The account's secret key, after the outage and Basic auth checks every route makes.
fn guard(shared: &Shared, headers: &HeaderMap) -> Result<String, Box<Response>> {
    if shared.is_down(ProviderId::C.as_str()) {
        return Err(Box::new(error(StatusCode::SERVICE_UNAVAILABLE, "5000", "Service unavailable (sandbox outage)")));
    }
    basic(headers).ok_or_else(|| Box::new(error(StatusCode::UNAUTHORIZED, "4101", "Authorization failed")))
}

/// `Authorization: Basic base64(apiId:secretKey)` with both parts non-empty → the secret key.
fn basic(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let plain = base64::engine::general_purpose::STANDARD.decode(token.trim()).ok()?;
    let (id, secret) = std::str::from_utf8(&plain).ok()?.split_once(':')?;
    (!id.is_empty() && !secret.is_empty()).then(|| secret.to_string())
}

/// A positive decimal GHS amount in pesewas.
fn amount_of(o: &Obj, key: &str) -> Option<i64> {
    pesewas_at(&Value::Object(o.clone()), key).filter(|p| *p > 0)
}

/// Hubtel's mobile-money channels, as the sandbox records networks (`mtn`, `vod`, `atl`).
fn network_of(channel: &str) -> Option<&'static str> {
    match channel.to_ascii_lowercase().as_str() {
        "mtn-gh" => Some("mtn"),
        "vodafone-gh" | "telecel-gh" => Some("vod"),
        "tigo-gh" | "airtel-gh" | "airteltigo-gh" => Some("atl"),
        _ => None,
    }
}

fn channel_of(network: &str) -> &'static str {
    match network {
        "vod" => "vodafone-gh",
        "atl" => "tigo-gh",
        _ => "mtn-gh",
    }
}

/// A ClientReference: letters and digits, at most 32 (D18.45).
fn client_reference(o: &Obj, key: &str) -> Result<String, Box<Response>> {
    match text(o, key) {
        Some(r) if r.len() <= 32 && r.bytes().all(|b| b.is_ascii_alphanumeric()) => Ok(r.to_string()),
        Some(_) => Err(Box::new(invalid(&format!("{key} must be at most 32 letters and digits")))),
        None => Err(Box::new(invalid(&format!("{key} is required")))),
    }
}

fn url_of(o: &Obj, key: &str) -> Result<String, Box<Response>> {
    text(o, key).map(str::to_string).ok_or_else(|| Box::new(invalid(&format!("{key} is required"))))
}

/// The payment method of a charge as the status check names it.
fn method_of(c: &Charge) -> &'static str {
    if c.channel == Channel::MobileMoney {
        "mobilemoney"
    } else {
        "card"
    }
}

/// A settled charge's callback: the checkout's shape for a web checkout, receive money's for
/// a prompt.
pub(super) fn charge_callback(c: &Charge) -> Value {
    let paid = c.status == Outcome::Success;
    let code = if paid { "0000" } else { "2001" };
    if c.metadata["hubtel"] == "receive" {
        return json!({
            "ResponseCode": code,
            "Message": if paid { "success" } else { "failed" },
            "Data": {
                "Amount": ghs(c.amount),
                "Charges": ghs(c.fees()),
                "AmountAfterCharges": ghs(c.amount - c.fees()),
                "Description": if paid {
                    "The Mobile Money payment has been approved and processed successfully."
                } else {
                    "The Mobile Money payment was declined."
                },
                "ClientReference": c.reference,
                "TransactionId": c.access_code,
                "ExternalTransactionId": format!("{}", c.id),
                "AmountCharged": ghs(c.amount),
                "OrderId": c.access_code,
            },
        });
    }
    let state = if paid { "Success" } else { "Failed" };
    let payer = c.payer.clone().unwrap_or_default();
    json!({
        "ResponseCode": code,
        "Status": state,
        "Data": {
            "CheckoutId": c.access_code,
            "SalesInvoiceId": format!("{:032x}", c.id),
            "ClientReference": c.reference,
            "Status": state,
            "Amount": ghs(c.amount),
            "CustomerPhoneNumber": payer,
            "PaymentDetails": {
                "MobileMoneyNumber": if c.channel == Channel::MobileMoney { payer.as_str() } else { "" },
                "PaymentType": method_of(c),
                "Channel": if c.channel == Channel::MobileMoney {
                    channel_of(c.network.as_deref().unwrap_or("mtn"))
                } else {
                    "card"
                },
            },
            "Description": if paid { "The payment has been approved and processed successfully." } else { "The payment failed." },
        },
    })
}

/// Money sent out (a transfer or a refund), as its callback and status check show it.
pub(super) struct Send {
    code: String,
    reference: String,
    amount: i64,
    status: Outcome,
    reason: Option<String>,
    description: String,
    recipient: Value,
}

impl Send {
    pub fn of_transfer(t: &Transfer) -> Send {
        Send {
            code: t.transfer_code.clone(),
            reference: t.reference.clone(),
            amount: t.amount,
            status: t.status,
            reason: t.failure_reason.clone(),
            description: t.reason.clone(),
            recipient: t.recipient.clone(),
        }
    }

    pub fn of_refund(r: &Refund) -> Send {
        Send {
            code: r.code.clone(),
            reference: r.id.clone(),
            amount: r.amount,
            status: r.status,
            reason: r.failure_reason.clone(),
            description: r.note.clone().unwrap_or_default(),
            recipient: json!({"RecipientMsisdn": r.recipient, "Channel": r.channel}),
        }
    }

    /// The failure's Hubtel code: the control API's reason when it is one, else `2001`.
    fn failure_code(&self) -> String {
        match self.reason.as_deref() {
            Some(r) if r.len() == 4 && r.bytes().all(|b| b.is_ascii_digit()) => r.to_string(),
            _ => "2001".into(),
        }
    }

    fn data(&self) -> Value {
        json!({
            "AmountDebited": if self.status == Outcome::Failed { json!(0) } else { ghs(self.amount) },
            "TransactionId": self.code,
            "ClientReference": self.reference,
            "Description": self.description,
            "ExternalTransactionId": "",
            "Amount": ghs(self.amount),
            "Charges": 0,
            "Meta": null,
            "RecipientName": self.recipient.get("RecipientName").cloned().unwrap_or(Value::Null),
        })
    }
}

/// A settled send's callback.
pub(super) fn send_callback(s: &Send) -> Value {
    let (code, message) = match s.status {
        Outcome::Success => ("0000".to_string(), "success".to_string()),
        _ => (s.failure_code(), s.reason.clone().unwrap_or_else(|| "The transaction failed".into())),
    };
    json!({"ResponseCode": code, "Message": message, "Data": s.data()})
}

async fn initiate(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return invalid("the body must be a JSON object") };
    let fields = (|| {
        let reference = client_reference(&o, "clientReference")?;
        let urls = (url_of(&o, "callbackUrl")?, url_of(&o, "returnUrl")?, url_of(&o, "cancellationUrl")?);
        Ok::<_, Box<Response>>((reference, urls))
    })();
    let (reference, (callback, back, cancel)) = match fields {
        Ok(f) => f,
        Err(r) => return *r,
    };
    let Some(amount) = amount_of(&o, "totalAmount") else { return invalid("totalAmount is required") };
    let (Some(description), Some(_merchant)) = (text(&o, "description"), text(&o, "merchantAccountNumber")) else {
        return invalid("description and merchantAccountNumber are required");
    };
    let email = text(&o, "payeeEmail").or(text(&o, "PayeeEmail")).unwrap_or_default();
    let mut c = Charge::pending(ProviderId::C, secret, &reference, amount, "GHS", email, Value::Null);
    (c.callback_url, c.cancel_url, c.notify_url) = (Some(back), Some(cancel), Some(callback));
    c.description = Some(description.to_string());
    c.name = text(&o, "payeeName").or(text(&o, "PayeeName")).map(str::to_string);
    c.phone = text(&o, "payeeMobileNumber").or(text(&o, "PayeeMobileNumber")).map(msisdn);
    // Paid at the sandbox's page by mobile money unless the control API says card.
    c.channel = Channel::MobileMoney;
    let opened = shared.open_charge(c);
    shared.charge_delay().await;
    let Some(c) = opened else { return invalid("clientReference has been used: a checkout with it exists") };
    let url = c.checkout_url(&shared.base_url);
    Json(json!({
        "responseCode": "0000",
        "status": "Success",
        "data": {
            "checkoutUrl": url,
            "checkoutId": c.access_code,
            "clientReference": c.reference,
            "message": "",
            "checkoutDirectUrl": format!("{url}/direct"),
        },
    }))
    .into_response()
}

async fn receive(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(_pos): Path<String>,
    body: Bytes,
) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return invalid("the body must be a JSON object") };
    let (reference, callback) = match (client_reference(&o, "ClientReference"), url_of(&o, "PrimaryCallbackURL")) {
        (Ok(r), Ok(u)) => (r, u),
        (Err(e), _) | (_, Err(e)) => return *e,
    };
    let Some(amount) = amount_of(&o, "Amount") else { return invalid("Amount is required") };
    let Some(phone) = text(&o, "CustomerMsisdn").filter(|p| msisdn(p).len() == 12) else {
        return invalid("CustomerMsisdn must be a 233… number");
    };
    let Some(network) = text(&o, "Channel").and_then(network_of) else {
        return invalid("Channel must be one of mtn-gh, vodafone-gh, tigo-gh");
    };
    let email = text(&o, "CustomerEmail").unwrap_or_default();
    let mut c = Charge::pending(ProviderId::C, secret, &reference, amount, "GHS", email, json!({"hubtel": "receive"}));
    c.channel = Channel::MobileMoney;
    (c.phone, c.network) = (Some(phone.to_string()), Some(network.to_string()));
    c.name = text(&o, "CustomerName").map(str::to_string);
    c.description = text(&o, "Description").map(str::to_string);
    c.notify_url = Some(callback);
    let fees = c.amount * 195 / 10_000;
    let opened = shared.open_charge(c);
    shared.charge_delay().await;
    let id = match opened {
        Some(c) => c.access_code,
        // Accepted again, as Hubtel takes it; the prompt is counted on the charge.
        None => shared.db().charge(&reference).map(|c| c.access_code.clone()).unwrap_or_default(),
    };
    Json(json!({
        "Message": "Transaction pending. Expect callback request for final state",
        "ResponseCode": "0001",
        "Data": {
            "TransactionId": id,
            "Description": text(&o, "Description"),
            "ClientReference": reference,
            "Amount": ghs(amount),
            "Charges": ghs(fees),
            "AmountAfterCharges": ghs(amount - fees),
            "AmountCharged": ghs(amount),
            "DeliveryFee": 0,
        },
    }))
    .into_response()
}

#[derive(Deserialize)]
struct StatusQuery {
    #[serde(rename = "clientReference")]
    client_reference: Option<String>,
}

async fn status(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(_pos): Path<String>,
    Query(q): Query<StatusQuery>,
) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = shared.db();
    let reference = q.client_reference.unwrap_or_default();
    let Some(c) = db.charges.get(&reference).filter(|c| c.provider == ProviderId::C && c.secret == secret) else {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Transaction not found", "responseCode": "4040"})))
            .into_response();
    };
    let state = match c.status {
        Outcome::Pending => "Unpaid",
        Outcome::Success => "Paid",
        Outcome::Failed => "Failed",
    };
    Json(json!({
        "message": "Successful",
        "responseCode": "0000",
        "data": {
            "date": c.paid_at.clone().unwrap_or_else(|| c.created_at.clone()),
            "status": state,
            "transactionId": c.access_code,
            "externalTransactionId": c.id.to_string(),
            "paymentMethod": method_of(c),
            "clientReference": c.reference,
            "currencyCode": c.currency,
            "amount": ghs(c.amount),
            "charges": ghs(c.fees()),
            "amountAfterCharges": ghs(c.amount - c.fees()),
            "isFulfilled": null,
        },
    }))
    .into_response()
}

/// What a send asks for, read from its body.
struct Sending {
    reference: String,
    amount: i64,
    callback: String,
    description: String,
    recipient: Value,
}

fn sending(o: &Obj, recipient: Value) -> Result<Sending, Box<Response>> {
    let reference = client_reference(o, "ClientReference")?;
    let callback = url_of(o, "PrimaryCallbackURL")?;
    let amount = amount_of(o, "Amount").ok_or_else(|| Box::new(invalid("Amount is required")))?;
    let description = text(o, "Description").unwrap_or_default().to_string();
    Ok(Sending { reference, amount, callback, description, recipient })
}

/// `0001` with the send's `Data`.
fn accepted(s: &Send) -> Response {
    Json(json!({"ResponseCode": "0001", "Message": "Transaction pending. Expect callback request for final state",
                "Data": s.data()}))
    .into_response()
}

/// The send a ClientReference already names: this account's is answered again as it stands
/// (a repeated call sends nothing twice); another account's refuses the call.
fn taken(db: &Db, secret: &str, reference: &str) -> Option<Response> {
    let mine = |p: ProviderId, s: &str| p == ProviderId::C && s == secret;
    match (db.transfers.get(reference), db.refunds.get(reference)) {
        (Some(t), _) if mine(t.provider, &t.secret) => Some(accepted(&Send::of_transfer(t))),
        (_, Some(r)) if mine(r.provider, &r.secret) => Some(accepted(&Send::of_refund(r))),
        (None, None) => None,
        _ => Some(invalid("ClientReference has been used")),
    }
}

/// The paid mobile-money charge of `secret` whose payer is `msisdn` with at least `amount` left
/// to refund: the one whose reference the description names, else the newest.
fn refundable(db: &Db, secret: &str, msisdn: &str, amount: i64, description: &str) -> Option<String> {
    let mut fits: Vec<&Charge> = db
        .charges
        .values()
        .filter(|c| c.provider == ProviderId::C && c.secret == secret && c.status == Outcome::Success)
        .filter(|c| c.channel == Channel::MobileMoney && c.payer.as_deref() == Some(msisdn))
        .filter(|c| left_of(db, ProviderId::C, &c.reference, c.amount) >= amount)
        .collect();
    fits.sort_by_key(|c| (!description.contains(&c.reference), std::cmp::Reverse(c.id)));
    fits.first().map(|c| c.reference.clone())
}

async fn send_mobile_money(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(_deposit): Path<String>,
    body: Bytes,
) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return invalid("the body must be a JSON object") };
    let Some(number) = text(&o, "RecipientMsisdn").map(msisdn).filter(|n| n.len() == 12) else {
        return invalid("RecipientMsisdn must be a 233… number");
    };
    let Some(channel) = text(&o, "Channel").filter(|c| network_of(c).is_some()) else {
        return invalid("Channel must be one of mtn-gh, vodafone-gh, tigo-gh");
    };
    let recipient = json!({"RecipientName": text(&o, "RecipientName"), "RecipientMsisdn": number, "Channel": channel});
    let s = match sending(&o, recipient) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let mut db = shared.db();
    if let Some(answer) = taken(&db, &secret, &s.reference) {
        return answer;
    }
    if let Some(charge) = refundable(&db, &secret, &number, s.amount, &s.description) {
        let ask = Ask {
            id: Some(&s.reference),
            amount: Some(s.amount),
            note: Some(&s.description),
            notify_url: Some(s.callback.clone()),
            recipient: Some(number.clone()),
            channel: Some(channel.to_string()),
            ..Ask::new(ProviderId::C, secret.clone(), &charge)
        };
        if let Ok(r) = open_refund(&mut db, ask) {
            return accepted(&Send::of_refund(&r));
        }
    }
    let t = open_send(&mut db, secret, s);
    accepted(&Send::of_transfer(&t))
}

async fn send_bank(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path((_deposit, bank)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return invalid("the body must be a JSON object") };
    let (Some(number), Some(name)) = (text(&o, "BankAccountNumber"), text(&o, "BankAccountName")) else {
        return invalid("BankAccountNumber and BankAccountName are required");
    };
    let recipient = json!({"BankCode": bank, "BankAccountNumber": number, "BankAccountName": name});
    let s = match sending(&o, recipient) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let mut db = shared.db();
    if let Some(answer) = taken(&db, &secret, &s.reference) {
        return answer;
    }
    let t = open_send(&mut db, secret, s);
    accepted(&Send::of_transfer(&t))
}

/// Records a send that is not a refund as a transfer.
fn open_send(db: &mut Db, secret: String, s: Sending) -> Transfer {
    let id = db.next_id();
    let t = Transfer {
        id,
        provider: ProviderId::C,
        secret,
        reference: s.reference.clone(),
        amount: s.amount,
        currency: "GHS".into(),
        reason: s.description,
        recipient: s.recipient,
        transfer_code: random_hex(32),
        status: Outcome::Pending,
        failure_reason: None,
        created_at: now_rfc3339(),
        completed_at: None,
        notify_url: Some(s.callback),
    };
    db.transfers.insert(s.reference, t.clone());
    t
}

async fn send_status(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(_deposit): Path<String>,
    Query(q): Query<StatusQuery>,
) -> Response {
    let secret = match guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let reference = q.client_reference.unwrap_or_default();
    let db = shared.db();
    let mine = |p: ProviderId, s: &str| p == ProviderId::C && s == secret;
    let found = match (db.transfers.get(&reference), db.refunds.get(&reference)) {
        (Some(t), _) if mine(t.provider, &t.secret) => Some((Send::of_transfer(t), t.created_at.clone())),
        (_, Some(r)) if mine(r.provider, &r.secret) => Some((Send::of_refund(r), r.created_at.clone())),
        _ => None,
    };
    let Some((s, date)) = found else {
        return (StatusCode::NOT_FOUND, Json(json!({"message": "Transaction not found", "responseCode": "4040"})))
            .into_response();
    };
    let state = match s.status {
        Outcome::Pending => "pending",
        Outcome::Success => "success",
        Outcome::Failed => "failed",
    };
    // Send money's own casing (`ResponseCode`, `Data`, `ClientReference`), as its answers have.
    Json(json!({
        "Message": "Successful",
        "ResponseCode": "0000",
        "Data": {
            "Date": date,
            "TransactionStatus": state,
            "TransactionId": s.code,
            "ClientReference": s.reference,
            "Amount": ghs(s.amount),
            "Charges": 0,
            "Reason": if s.status == Outcome::Failed { Value::from(s.failure_code()) } else { Value::Null },
        },
    }))
    .into_response()
}

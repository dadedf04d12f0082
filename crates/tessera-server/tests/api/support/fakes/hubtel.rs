//! A fake Hubtel built from Hubtel's developer documentation: one loopback server answering the
//! paths of its five APIs (a configured `baseUrl` replaces all five hosts, D18.3) with Basic
//! auth checked, `ResponseCode`s, the casing each API documents (`data` for checkout and the
//! status check, `Data` for receive and send money) and decimal GHS amounts:
//!
//! - `POST /items/initiate` → `{responseCode: "0000", status, data: {checkoutUrl, checkoutId,
//!   clientReference, checkoutDirectUrl}}`;
//! - `POST /merchantaccount/merchants/{posSalesId}/receive/mobilemoney` → `{Message,
//!   ResponseCode: "0001", Data: {TransactionId, ClientReference, Amount, Charges, …}}`;
//! - `GET /transactions/{posSalesId}/status?clientReference=` → `{message, responseCode: "0000",
//!   data: {status: Paid|Unpaid, paymentMethod, amount, clientReference, …}}` (404 unknown);
//! - `POST /api/merchants/{prepaidDepositId}/send/mobilemoney` and `…/send/bank/gh/{bankCode}` →
//!   `{ResponseCode: "0001", Data: {…}}`, or a failure code;
//! - `GET /api/merchants/{prepaidDepositId}/transactions/status?clientReference=` →
//!   `{ResponseCode: "success", Data: {transactionStatus, Amount, ClientReference, …}}`.
//!
//! Test controls: [`FakeHubtel::pay`], [`FakeHubtel::fail_sends`], [`FakeHubtel::answer_500`],
//! [`FakeHubtel::lose_next_send_answer`], [`FakeHubtel::requests`], and callbacks posted to the
//! URL each request named ([`FakeHubtel::charge_callback`], [`FakeHubtel::send_callback`]).
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::Json;
use base64::Engine;
use serde_json::{json, Value};

pub const API_ID: &str = "hubtel-api-id";
pub const API_KEY: &str = "hubtel-api-key";
pub const POS_SALES_ID: &str = "11684";
pub const PREPAID_DEPOSIT_ID: &str = "11691";
pub const CALLBACK_TOKEN: &str = "hubtel-callback-token-0123456789";

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: Value,
    pub authorized: bool,
}

/// A charge Hubtel knows (checkout or receive money), by its ClientReference.
#[derive(Debug, Clone)]
pub struct Charge {
    pub amount: Value,
    pub callback_url: String,
    pub status: String,
    pub method: String,
    pub payer: Option<String>,
    pub channel: Option<String>,
    pub receive: bool,
}

/// Money sent (send money), by its ClientReference.
#[derive(Debug, Clone)]
pub struct Sent {
    pub path: String,
    pub body: Value,
    pub callback_url: String,
    pub status: String,
    pub code: String,
}

#[derive(Default)]
struct Inner {
    charges: HashMap<String, Charge>,
    sends: HashMap<String, Sent>,
    received: Vec<Received>,
    /// Each new send fails with this code and HTTP status.
    fail_sends: Option<(String, u16)>,
    answer_500: bool,
    lose_next_send_answer: bool,
    /// Status checks answer this body instead (malformed answers).
    status_body: Option<Value>,
    seq: u64,
}

#[derive(Clone)]
pub struct FakeHubtel {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    http: reqwest::Client,
}

fn expected_auth() -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{API_ID}:{API_KEY}")))
}

fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|kv| kv.strip_prefix(&format!("{name}="))).map(str::to_string)
}

impl FakeHubtel {
    pub async fn start() -> FakeHubtel {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let fake = FakeHubtel { url: url.clone(), inner: Arc::default(), http: reqwest::Client::new() };
        let served = fake.clone();
        let app = axum::Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let fake = served.clone();
            async move { fake.answer(method, uri, headers, body) }
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        fake
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("fake hubtel")
    }

    fn answer(&self, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> axum::response::Response {
        let path = uri.path().to_string();
        let query = uri.query().unwrap_or_default().to_string();
        let authorized = headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(expected_auth().as_str());
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let mut s = self.lock();
        s.received.push(Received {
            method: method.to_string(),
            path: path.clone(),
            query: query.clone(),
            body: body.clone(),
            authorized,
        });
        if !authorized {
            return (StatusCode::UNAUTHORIZED, Json(json!({"message": "Unauthorized"}))).into_response();
        }
        if s.answer_500 {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"ResponseCode": "5000", "Message": "Something went wrong"})),
            )
                .into_response();
        }
        s.seq += 1;
        let txid = format!("{:032x}", s.seq);
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (method.as_str(), segments.as_slice()) {
            ("POST", ["items", "initiate"]) => {
                let reference = body["clientReference"].as_str().unwrap_or_default().to_string();
                let ok = !reference.is_empty()
                    && reference.len() <= 32
                    && body["totalAmount"].is_number()
                    && body["callbackUrl"].is_string()
                    && body["returnUrl"].is_string()
                    && body["cancellationUrl"].is_string()
                    && body["merchantAccountNumber"] == POS_SALES_ID;
                if !ok {
                    return (StatusCode::BAD_REQUEST, Json(json!({"responseCode": "4000", "status": "Error", "data": null, "message": "Validation errors"}))).into_response();
                }
                s.charges.insert(
                    reference.clone(),
                    Charge {
                        amount: body["totalAmount"].clone(),
                        callback_url: body["callbackUrl"].as_str().unwrap_or_default().to_string(),
                        status: "Unpaid".into(),
                        method: String::new(),
                        payer: None,
                        channel: None,
                        receive: false,
                    },
                );
                Json(json!({
                    "responseCode": "0000",
                    "status": "Success",
                    "data": {
                        "checkoutUrl": format!("{}/checkout/{txid}", self.url),
                        "checkoutId": txid,
                        "clientReference": reference,
                        "message": "",
                        "checkoutDirectUrl": format!("{}/checkout/direct/{txid}", self.url),
                    }
                }))
                .into_response()
            }
            ("POST", ["merchantaccount", "merchants", pos, "receive", "mobilemoney"]) if *pos == POS_SALES_ID => {
                let reference = body["ClientReference"].as_str().unwrap_or_default().to_string();
                let channel = body["Channel"].as_str().unwrap_or_default().to_string();
                let ok = !reference.is_empty()
                    && body["CustomerMsisdn"].as_str().is_some_and(|m| m.starts_with("233"))
                    && ["mtn-gh", "vodafone-gh", "tigo-gh"].contains(&channel.as_str())
                    && body["Amount"].is_number()
                    && body["PrimaryCallbackURL"].is_string();
                if !ok {
                    return (
                        StatusCode::BAD_REQUEST,
                        Json(json!({"ResponseCode": "4000", "Message": "Validation errors", "Data": null})),
                    )
                        .into_response();
                }
                s.charges.insert(
                    reference.clone(),
                    Charge {
                        amount: body["Amount"].clone(),
                        callback_url: body["PrimaryCallbackURL"].as_str().unwrap_or_default().to_string(),
                        status: "Unpaid".into(),
                        method: "mobilemoney".into(),
                        payer: body["CustomerMsisdn"].as_str().map(str::to_string),
                        channel: Some(channel),
                        receive: true,
                    },
                );
                Json(json!({
                    "Message": "Transaction pending. Expect callback request for final state",
                    "ResponseCode": "0001",
                    "Data": {
                        "TransactionId": txid,
                        "Description": body["Description"],
                        "ClientReference": reference,
                        "Amount": body["Amount"],
                        "Charges": 0.0,
                        "AmountAfterCharges": body["Amount"],
                        "AmountCharged": body["Amount"],
                        "DeliveryFee": 0.0,
                    }
                }))
                .into_response()
            }
            ("GET", ["transactions", pos, "status"]) if *pos == POS_SALES_ID => {
                if let Some(b) = &s.status_body {
                    return Json(b.clone()).into_response();
                }
                let reference = query_param(&query, "clientReference").unwrap_or_default();
                let Some(c) = s.charges.get(&reference) else {
                    return (
                        StatusCode::NOT_FOUND,
                        Json(json!({"message": "Transaction not found", "responseCode": "4000", "data": null})),
                    )
                        .into_response();
                };
                Json(json!({
                    "message": "Successful",
                    "responseCode": "0000",
                    "data": {
                        "date": "2026-12-07T15:45:48.4740964Z",
                        "status": c.status,
                        "transactionId": txid,
                        "externalTransactionId": "0000006824852622",
                        "paymentMethod": c.method,
                        "clientReference": reference,
                        "currencyCode": null,
                        "amount": c.amount,
                        "charges": 0.02,
                        "amountAfterCharges": c.amount,
                        "isFulfilled": null,
                    }
                }))
                .into_response()
            }
            ("POST", ["api", "merchants", prepaid, "send", ..]) if *prepaid == PREPAID_DEPOSIT_ID => {
                let reference = body["ClientReference"].as_str().unwrap_or_default().to_string();
                let momo = segments.get(4) == Some(&"mobilemoney");
                let bank = segments.len() == 7 && segments[4] == "bank" && segments[5] == "gh";
                let ok = !reference.is_empty()
                    && body["Amount"].is_number()
                    && body["PrimaryCallbackURL"].is_string()
                    && ((momo
                        && body["RecipientMsisdn"].as_str().is_some_and(|m| m.starts_with("233"))
                        && body["Channel"].is_string())
                        || (bank && body["BankAccountNumber"].is_string() && body["BankAccountName"].is_string()));
                if !ok {
                    return (
                        StatusCode::BAD_REQUEST,
                        Json(json!({"ResponseCode": "4000", "Data": {"Description": "Validation errors"}})),
                    )
                        .into_response();
                }
                let (status, code, http) = match s.fail_sends.clone() {
                    Some((code, http)) => ("failed".to_string(), code, http),
                    None => ("pending".to_string(), "0001".to_string(), 200),
                };
                s.sends.insert(
                    reference.clone(),
                    Sent {
                        path: path.clone(),
                        body: body.clone(),
                        callback_url: body["PrimaryCallbackURL"].as_str().unwrap_or_default().to_string(),
                        status,
                        code: code.clone(),
                    },
                );
                if std::mem::take(&mut s.lose_next_send_answer) {
                    return (StatusCode::BAD_GATEWAY, "upstream timed out").into_response();
                }
                let description = match code.as_str() {
                    "0001" => "Your request has been accepted. We will notify you when the transaction is completed.",
                    "2001" => "Transaction failed due to an error with the Payment Processor.",
                    "3050" => "Mobile Number is not registered for Mobile Payment.",
                    "4075" => "Insufficient prepaid balance.",
                    _ => "Something went wrong while processing this request.",
                };
                let status = StatusCode::from_u16(http).unwrap_or(StatusCode::OK);
                (
                    status,
                    Json(json!({
                        "ResponseCode": code,
                        "Data": {
                            "AmountDebited": 0.0,
                            "TransactionId": txid,
                            "Description": description,
                            "ClientReference": reference,
                            "ExternalTransactionId": "",
                            "Amount": body["Amount"],
                            "Charges": 0.0,
                            "Meta": null,
                            "RecipientName": null,
                        }
                    })),
                )
                    .into_response()
            }
            ("GET", ["api", "merchants", prepaid, "transactions", "status"]) if *prepaid == PREPAID_DEPOSIT_ID => {
                let reference = query_param(&query, "clientReference").unwrap_or_default();
                let Some(sent) = s.sends.get(&reference) else {
                    return (StatusCode::NOT_FOUND, Json(json!({"ResponseCode": "4000", "Data": null})))
                        .into_response();
                };
                Json(json!({
                    "ResponseCode": "success",
                    "Data": {
                        "TransactionId": txid,
                        "networkTransactionId": "142116938399",
                        "Amount": sent.body["Amount"],
                        "Fees": 0.01,
                        "ClientReference": reference,
                        "Channel": sent.body["Channel"],
                        "CustomerNumber": sent.body["RecipientMsisdn"],
                        "transactionStatus": sent.status,
                        "CreatedAt": "2026-12-07 11:31:06",
                    }
                }))
                .into_response()
            }
            _ => (StatusCode::NOT_FOUND, Json(json!({"message": "not found"}))).into_response(),
        }
    }

    /// Marks the charge of Tessera reference `reference` (`tsr_…`) paid (`Paid`) by `method`
    /// (`mobilemoney` | `card`) from `payer`, or sets another status (`Unpaid`).
    pub fn set_charge(&self, reference: &str, status: &str, method: &str, payer: Option<&str>) {
        let mut s = self.lock();
        let c = s.charges.get_mut(&hubtel_ref(reference)).expect("a charge Hubtel was asked for");
        c.status = status.to_string();
        if !method.is_empty() {
            c.method = method.to_string();
        }
        if payer.is_some() {
            c.payer = payer.map(str::to_string);
        }
    }

    pub fn charge(&self, reference: &str) -> Option<Charge> {
        self.lock().charges.get(&hubtel_ref(reference)).cloned()
    }

    /// The send of a refund or withdrawal id.
    pub fn sent(&self, id: &str) -> Option<Sent> {
        self.lock().sends.get(&hubtel_ref(id)).cloned()
    }

    pub fn settle_send(&self, id: &str, status: &str, code: &str) {
        let mut s = self.lock();
        let sent = s.sends.get_mut(&hubtel_ref(id)).expect("a send");
        sent.status = status.to_string();
        sent.code = code.to_string();
    }

    /// New sends fail with `code`, answered with HTTP `http`; `None` ends it.
    pub fn fail_sends(&self, failure: Option<(&str, u16)>) {
        self.lock().fail_sends = failure.map(|(c, h)| (c.to_string(), h));
    }

    pub fn answer_500(&self, on: bool) {
        self.lock().answer_500 = on;
    }

    /// The next send is made, but its answer is lost (a 502).
    pub fn lose_next_send_answer(&self) {
        self.lock().lose_next_send_answer = true;
    }

    /// Status checks answer `body` (malformed answers); `None` ends it.
    pub fn status_answer(&self, body: Option<Value>) {
        self.lock().status_body = body;
    }

    pub fn requests(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    /// The callback Hubtel sends for the charge: the checkout's (with the payer) or the receive
    /// money one, as the docs show them.
    pub fn charge_callback_body(&self, reference: &str, success: bool) -> Value {
        let c = self.charge(reference).expect("charge");
        let client = hubtel_ref(reference);
        let code = if success { "0000" } else { "2001" };
        if c.receive {
            json!({"ResponseCode": code, "Message": if success { "success" } else { "failed" }, "Data": {
                "Amount": c.amount, "Charges": 0.05, "AmountAfterCharges": c.amount,
                "Description": "The MTN Mobile Money payment has been approved and processed successfully",
                "ClientReference": client, "TransactionId": format!("rx{client}"), "ExternalTransactionId": "2116938399",
                "AmountCharged": c.amount, "OrderId": format!("rx{client}"), "PaymentDate": "2026-12-07T00:44:57.5142719Z"}})
        } else {
            let payer = c.payer.clone().unwrap_or_else(|| "233242825109".into());
            json!({"ResponseCode": code, "Status": if success { "Success" } else { "Failed" }, "Data": {
                "CheckoutId": format!("co{client}"), "SalesInvoiceId": format!("si{client}"), "ClientReference": client,
                "Status": if success { "Success" } else { "Failed" }, "Amount": c.amount, "CustomerPhoneNumber": payer,
                "PaymentDetails": {"MobileMoneyNumber": payer, "PaymentType": "mobilemoney", "Channel": "mtn-gh"},
                "Description": "The MTN Mobile Money payment has been approved and processed successfully."}})
        }
    }

    /// POSTs the charge's callback to the callbackUrl / PrimaryCallbackURL it was given (or
    /// `url` instead); the answer's status.
    pub async fn charge_callback(&self, reference: &str, success: bool, url: Option<&str>) -> u16 {
        let c = self.charge(reference).expect("charge");
        let body = self.charge_callback_body(reference, success);
        self.post(url.unwrap_or(&c.callback_url), &body).await
    }

    /// POSTs the send's callback (its code as settled) to the URL it was given.
    pub async fn send_callback(&self, id: &str) -> u16 {
        let sent = self.sent(id).expect("send");
        let code = match sent.status.as_str() {
            "success" => "0000".to_string(),
            _ => sent.code.clone(),
        };
        let body = json!({"ResponseCode": code, "Data": {
            "AmountDebited": sent.body["Amount"], "TransactionId": format!("sx{}", hubtel_ref(id)),
            "ExternalTransactionId": "142116938399", "Description": "sent", "ClientReference": hubtel_ref(id),
            "Amount": sent.body["Amount"], "Charges": 0.01, "Meta": null, "RecipientName": sent.body["RecipientName"]}});
        self.post(&sent.callback_url, &body).await
    }

    pub async fn post(&self, url: &str, body: &Value) -> u16 {
        self.http.post(url).json(body).send().await.expect("callback").status().as_u16()
    }
}

/// A Tessera reference or id as Hubtel knows it (letters and digits, D18.45).
pub fn hubtel_ref(reference: &str) -> String {
    reference.chars().filter(char::is_ascii_alphanumeric).collect()
}

/// A Hubtel ClientReference as Tessera's reference (`tsr…` → `tsr_…`).
pub fn tessera_ref(client: &str) -> String {
    match client.strip_prefix("tsr") {
        Some(rest) => format!("tsr_{rest}"),
        None => client.to_string(),
    }
}

//! A fake of Africa's Talking's SMS API, built from its documentation (Send SMS, D18.4): `POST
//! /version1/messaging` with an `apiKey` header and a form body `username, to, message, from?`.
//! It answers as the documentation shows: 201 with `SMSMessageData {Message, Recipients: [
//! {statusCode, number, status, cost, messageId}]}` (101 `Success`, or a refused recipient such
//! as 403 `InvalidPhoneNumber`, cost `0`, messageId `None`), 401 with the plain text `The
//! supplied authentication is invalid` for a wrong key or username, and 500 when told to fail.
//! Every request is recorded as it came (path, headers, raw body, form fields in order).
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// How the fake answers the requests that follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtAnswer {
    /// 201, every recipient `statusCode` 101, `status` `Success`.
    Success,
    /// 201, every recipient refused with this documented `statusCode` and `status`.
    Refused(i64, &'static str),
    /// 500, as the API answers an internal error.
    ServerError,
}

/// `InvalidPhoneNumber`, as the documentation's table names it.
pub const INVALID_PHONE_NUMBER: AtAnswer = AtAnswer::Refused(403, "InvalidPhoneNumber");
/// `InsufficientBalance`: a refusal that a later attempt may get past.
pub const INSUFFICIENT_BALANCE: AtAnswer = AtAnswer::Refused(405, "InsufficientBalance");

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct AtRequest {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: String,
    /// The form fields, in the order sent.
    pub form: Vec<(String, String)>,
}

impl AtRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

struct Inner {
    username: String,
    api_key: String,
    answer: AtAnswer,
    requests: Vec<AtRequest>,
    seq: u64,
}

/// A running fake; it stops when dropped.
pub struct AtFake {
    /// The base URL Tessera is given (`sms.baseUrl`): `http://127.0.0.1:<port>`.
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl AtFake {
    /// A fake application `username` whose API key is `api_key`, answering [`AtAnswer::Success`].
    pub async fn start(username: &str, api_key: &str) -> AtFake {
        let inner = Arc::new(Mutex::new(Inner {
            username: username.to_string(),
            api_key: api_key.to_string(),
            answer: AtAnswer::Success,
            requests: Vec::new(),
            seq: 0,
        }));
        let app = axum::Router::new().fallback(receive).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the Africa's Talking fake");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        AtFake { url, inner, _stop: tx }
    }

    /// How the requests from now on are answered.
    pub fn answer(&self, answer: AtAnswer) {
        self.inner.lock().expect("lock").answer = answer;
    }

    /// Every request received, oldest first.
    pub fn requests(&self) -> Vec<AtRequest> {
        self.inner.lock().expect("lock").requests.clone()
    }
}

fn plain(status: StatusCode, text: &str) -> Response {
    (status, [("content-type", "text/plain; charset=UTF-8")], text.to_string()).into_response()
}

async fn receive(
    State(inner): State<Arc<Mutex<Inner>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = String::from_utf8_lossy(&body).into_owned();
    let form: Vec<(String, String)> = form_urlencoded::parse(body.as_bytes()).into_owned().collect();
    let request = AtRequest { method: method.clone(), path: uri.path().to_string(), headers, body, form };
    let mut inner = inner.lock().expect("lock");
    inner.requests.push(request.clone());
    if method != Method::POST || request.path != "/version1/messaging" {
        return plain(StatusCode::NOT_FOUND, "The requested resource could not be found.");
    }
    let field = |k: &str| request.form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if request.header("apikey") != Some(inner.api_key.as_str()) || field("username") != Some(inner.username.clone()) {
        return plain(StatusCode::UNAUTHORIZED, "The supplied authentication is invalid");
    }
    let (code, status) = match inner.answer {
        AtAnswer::ServerError => return plain(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"),
        AtAnswer::Success => (101, "Success"),
        AtAnswer::Refused(code, status) => (code, status),
    };
    let numbers: Vec<String> = field("to").unwrap_or_default().split(',').map(|n| n.trim().to_string()).collect();
    let mut recipients = Vec::new();
    for number in &numbers {
        let sent = code == 101;
        inner.seq += 1;
        let (cost, id) =
            if sent { ("KES 0.8000".to_string(), format!("ATXid_{}", inner.seq)) } else { ("0".into(), "None".into()) };
        recipients.push(json!({"statusCode": code, "number": number, "status": status, "cost": cost, "messageId": id}));
    }
    let sent = if code == 101 { numbers.len() } else { 0 };
    let total = if sent == 0 { "0".to_string() } else { format!("KES {:.4}", 0.8 * sent as f64) };
    let message = format!("Sent to {sent}/{} Total Cost: {total}", numbers.len());
    (StatusCode::CREATED, axum::Json(json!({"SMSMessageData": {"Message": message, "Recipients": recipients}})))
        .into_response()
}

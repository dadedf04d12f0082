//! The SDK integrators depend on: an async client that signs every request with
//! [`tessera_sign`], sends it, and decodes the response envelope
//! (`{success, data, requestId}` / `{success: false, error, code, requestId, details}`)
//! into typed results and errors. No server code lives here.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tessera_client::Error> {
//! let client = tessera_client::Client::new("http://127.0.0.1:8080", "wl_prv_…", "secret")?;
//! let ctx: tessera_client::models::Context = client.get("/api/white-label/v1/context").await?.data;
//! println!("{}", ctx.account.platform_name);
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

pub mod models;
pub mod portal;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use rand::RngCore;
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
pub use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// One `details` item of a validation error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub field: String,
    pub message: String,
}

/// The error envelope of a non-2xx answer.
#[derive(Debug, Clone, Deserialize)]
pub struct ApiErrorBody {
    pub error: String,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(rename = "requestId", default)]
    pub request_id: Option<String>,
    #[serde(default)]
    pub details: Vec<ErrorDetail>,
}

/// What can go wrong with a call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with an error envelope.
    #[error("{status} {code}: {message} (requestId {request_id})")]
    Api {
        status: u16,
        code: String,
        message: String,
        request_id: String,
        details: Vec<ErrorDetail>,
        /// Seconds to wait, from `Retry-After` on 429.
        retry_after: Option<u64>,
    },
    /// The request never got an answer (connection refused, timeout, TLS).
    #[error("transport: {0}")]
    Transport(#[from] reqwest::Error),
    /// The answer was not the envelope expected.
    #[error("cannot decode the response (status {status}): {message}")]
    Decode { status: u16, message: String },
    /// The client was configured wrongly (bad base URL or header value).
    #[error("client configuration: {0}")]
    Config(String),
}

impl Error {
    /// The machine-readable error code, when the server sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Api { code, .. } => Some(code),
            _ => None,
        }
    }
    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api { status, .. } | Error::Decode { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// A decoded success: the `data`, the `requestId` and, for lists, the pagination.
#[derive(Debug, Clone)]
pub struct Response<T> {
    pub status: u16,
    pub data: T,
    pub request_id: String,
    pub pagination: Option<models::Pagination>,
}

/// A raw answer, for callers that want the body as sent (the `tessera call` command, tests).
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl RawResponse {
    /// The body as JSON, or `Value::Null` when it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// The signing client. Cheap to clone; share one per process.
///
/// The server accepts each signature once (D2.6). Two identical requests (same method, path and
/// body) signed in the same millisecond carry the same signature, so the second is refused with
/// 401 `replayed_request` before anything runs. [`Client::send_raw`] then signs it again with a
/// fresh timestamp and nonce (up to [`REPLAY_RETRIES`] times): the server executed nothing, so
/// this sends the request the caller asked for exactly once. A 503 `replay_store_unavailable`
/// (several instances whose shared replay store is briefly away, D17.2; nothing ran) is signed
/// again after its `Retry-After`, up to the same number of times.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base_url: String,
    key_id: String,
    secret: std::sync::Arc<SecretString>,
    domain: Option<String>,
    /// The last timestamp given to each recent (method, path, body), shared by clones.
    stamps: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<u64, i64>>>,
}

/// How many times a request refused as a replay is signed again.
pub const REPLAY_RETRIES: usize = 5;

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.base_url)
            .field("key_id", &self.key_id)
            .field("secret", &"[redacted]")
            .finish()
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// A fresh nonce: 128 random bits, url-safe base64 (22 characters).
pub fn new_nonce() -> String {
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Client {
    /// A client for `base_url` (e.g. `https://api.example.com`) signing with a private key.
    pub fn new(base_url: &str, key_id: &str, secret: &str) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| Error::Config(e.to_string()))?;
        Ok(Self::with_http(http, base_url, key_id, secret))
    }

    /// Same as [`Client::new`] with a caller-built `reqwest::Client` (pools, proxies, timeouts).
    pub fn with_http(http: reqwest::Client, base_url: &str, key_id: &str, secret: &str) -> Self {
        Self {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            key_id: key_id.to_string(),
            secret: std::sync::Arc::new(SecretString::from(secret.to_string())),
            domain: None,
            stamps: Default::default(),
        }
    }

    /// Also send `x-white-label-domain` on every request (D2.7).
    pub fn with_domain(mut self, domain: &str) -> Self {
        self.domain = Some(domain.to_string());
        self
    }

    /// The key id this client signs with.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The four signed headers for one request, with a fresh timestamp and nonce.
    ///
    /// Identical requests (same method, path and body) signed by this client, or its clones, in
    /// the same millisecond would carry the same signature, which the server accepts once (D2.6):
    /// the later one gets the next free millisecond instead, so they never collide (the clock
    /// runs ahead only for a burst of identical requests, by one millisecond per request).
    pub fn signed_headers(&self, method: &Method, path: &str, body: &[u8]) -> Result<HeaderMap, Error> {
        self.signed_headers_at(method, path, body, self.timestamp_for(method, path, body), &new_nonce())
    }

    fn timestamp_for(&self, method: &Method, path: &str, body: &[u8]) -> i64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (method.as_str(), path, body).hash(&mut h);
        let request = h.finish();
        let now = now_ms();
        let mut stamps = self.stamps.lock().unwrap_or_else(|p| p.into_inner());
        if stamps.len() >= 4096 {
            stamps.retain(|_, ts| *ts >= now - 1000);
        }
        let ts = match stamps.get(&request) {
            Some(last) if *last >= now => last + 1,
            _ => now,
        };
        stamps.insert(request, ts);
        ts
    }

    /// The signed headers for a given timestamp and nonce (tests and replays use this).
    pub fn signed_headers_at(
        &self,
        method: &Method,
        path: &str,
        body: &[u8],
        timestamp_ms: i64,
        nonce: &str,
    ) -> Result<HeaderMap, Error> {
        let ts = timestamp_ms.to_string();
        let sig = tessera_sign::sign(self.secret.expose_secret().as_bytes(), &ts, method.as_str(), path, body);
        let mut h = HeaderMap::new();
        let val = |s: &str| HeaderValue::from_str(s).map_err(|e| Error::Config(e.to_string()));
        h.insert(tessera_sign::HEADER_KEY_ID, val(&self.key_id)?);
        h.insert(tessera_sign::HEADER_TIMESTAMP, val(&ts)?);
        h.insert(tessera_sign::HEADER_NONCE, val(nonce)?);
        h.insert(tessera_sign::HEADER_SIGNATURE, val(&sig)?);
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(d) = &self.domain {
            h.insert("x-white-label-domain", val(d)?);
        }
        Ok(h)
    }

    /// Signs and sends `body` (raw bytes, sent exactly as signed) and returns the raw answer.
    /// A 401 `replayed_request` (an identical request signed in the same millisecond) is signed
    /// again and resent; see [`Client`].
    pub async fn send_raw(
        &self,
        method: Method,
        path: &str,
        body: Vec<u8>,
        extra: Option<HeaderMap>,
    ) -> Result<RawResponse, Error> {
        let url = format!("{}{}", self.base_url, path);
        // Shared, not copied, across re-signed attempts.
        let body = bytes::Bytes::from(body);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut headers = self.signed_headers(&method, path, &body)?;
            if let Some(extra) = &extra {
                headers.extend(extra.clone());
            }
            let resp = self.http.request(method.clone(), &url).headers(headers).body(body.clone()).send().await?;
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let bytes = resp.bytes().await?.to_vec();
            let raw = RawResponse { status, headers, body: bytes };
            if status == 401 && attempt <= REPLAY_RETRIES && is_replay(&raw.body) {
                // Spread the resends over a few milliseconds so that identical requests refused
                // together do not collide again.
                let wait = rand::thread_rng().next_u32() % 4 + 1;
                tokio::time::sleep(Duration::from_millis(u64::from(wait) * attempt as u64)).await;
                continue;
            }
            if let Some(wait) = replay_store_away(&raw).filter(|_| attempt <= REPLAY_RETRIES) {
                tokio::time::sleep(wait).await;
                continue;
            }
            return Ok(raw);
        }
    }

    /// Signs and sends a JSON request and decodes the envelope.
    pub async fn request<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
        extra: Option<HeaderMap>,
    ) -> Result<Response<T>, Error> {
        let bytes = match body {
            Some(b) => serde_json::to_vec(b).map_err(|e| Error::Config(e.to_string()))?,
            None => Vec::new(),
        };
        decode(self.send_raw(method, path, bytes, extra).await?)
    }

    /// `GET path` (path includes any `?query`).
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<Response<T>, Error> {
        self.request::<(), T>(Method::GET, path, None, None).await
    }

    /// `POST path` with a JSON body.
    pub async fn post<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<Response<T>, Error> {
        self.request(Method::POST, path, Some(body), None).await
    }

    /// `PATCH path` with a JSON body.
    pub async fn patch<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<Response<T>, Error> {
        self.request(Method::PATCH, path, Some(body), None).await
    }

    /// `GET /api/white-label/v1/context`.
    pub async fn context(&self) -> Result<models::Context, Error> {
        Ok(self.get("/api/white-label/v1/context").await?.data)
    }

    /// `POST /api/white-label/v1/payments/initialize` with a Form 1 (`campaign_id`, `ticket_id`,
    /// `email`, `quantity`) or Form 2 (`transactionType`, `amount`, …) body.
    pub async fn initialize_payment<B: Serialize + ?Sized>(&self, body: &B) -> Result<models::PaymentInit, Error> {
        Ok(self.post("/api/white-label/v1/payments/initialize", body).await?.data)
    }

    /// `POST /api/white-label/v1/payments/verify`: asks the provider and fulfils if paid.
    pub async fn verify_payment(&self, reference: &str) -> Result<models::Payment, Error> {
        let body = serde_json::json!({ "reference": reference });
        Ok(self.post("/api/white-label/v1/payments/verify", &body).await?.data)
    }

    /// `GET /api/white-label/v1/payments/:reference`.
    pub async fn payment(&self, reference: &str) -> Result<models::Payment, Error> {
        Ok(self.get(&format!("/api/white-label/v1/payments/{reference}")).await?.data)
    }

    /// `GET /api/white-label/v1/payments?…` (`query` without the `?`, e.g. `status=success`).
    pub async fn payments(&self, query: &str) -> Result<Response<Vec<models::Payment>>, Error> {
        let sep = if query.is_empty() { "" } else { "?" };
        self.get(&format!("/api/white-label/v1/payments{sep}{query}")).await
    }

    /// `GET /api/white-label/v1/balance`.
    pub async fn balance(&self) -> Result<models::Balance, Error> {
        Ok(self.get("/api/white-label/v1/balance").await?.data)
    }

    /// `POST /api/white-label/v1/withdrawals` (a key with the withdrawals capability) under
    /// `idempotency_key`: resending the same body with the same key after a timeout returns the
    /// first answer and never withdraws twice.
    pub async fn create_withdrawal<B: Serialize + ?Sized>(
        &self,
        body: &B,
        idempotency_key: &str,
    ) -> Result<models::Withdrawal, Error> {
        let mut extra = HeaderMap::new();
        extra.insert(
            "x-idempotency-key",
            HeaderValue::from_str(idempotency_key).map_err(|e| Error::Config(e.to_string()))?,
        );
        Ok(self.request(Method::POST, "/api/white-label/v1/withdrawals", Some(body), Some(extra)).await?.data)
    }

    /// `GET /api/white-label/v1/withdrawals/:id`.
    pub async fn withdrawal(&self, id: &str) -> Result<models::Withdrawal, Error> {
        Ok(self.get(&format!("/api/white-label/v1/withdrawals/{id}")).await?.data)
    }

    /// `GET /api/white-label/v1/withdrawals?…` (`query` without the `?`, e.g. `status=pending`).
    pub async fn withdrawals(&self, query: &str) -> Result<Response<Vec<models::Withdrawal>>, Error> {
        let sep = if query.is_empty() { "" } else { "?" };
        self.get(&format!("/api/white-label/v1/withdrawals{sep}{query}")).await
    }

    /// `GET /api/white-label/v1/ledger?…`.
    pub async fn ledger(&self, query: &str) -> Result<Response<Vec<models::LedgerEntry>>, Error> {
        let sep = if query.is_empty() { "" } else { "?" };
        self.get(&format!("/api/white-label/v1/ledger{sep}{query}")).await
    }

    /// `POST /api/white-label/v1/tickets/verify` (Form 2): reads a ticket by its code or QR
    /// token and, with `auto_verify`, checks it in once (`checked_in`, then `already_checked_in`).
    pub async fn verify_ticket(
        &self,
        ticket_code: &str,
        auto_verify: bool,
        checked_in_by: Option<&str>,
    ) -> Result<models::TicketVerification, Error> {
        let mut body = serde_json::json!({ "ticketCode": ticket_code, "autoVerify": auto_verify });
        if let Some(by) = checked_in_by {
            body["checkedInBy"] = by.into();
        }
        Ok(self.post("/api/white-label/v1/tickets/verify", &body).await?.data)
    }

    /// `POST /api/white-label/v1/my-tickets/request-otp`: e-mails a passcode if `email` holds
    /// tickets in the campaign (the answer is the same either way).
    pub async fn my_tickets_request_otp(&self, campaign_id: &str, email: &str) -> Result<models::OtpChallenge, Error> {
        let body = serde_json::json!({ "campaignId": campaign_id, "email": email });
        Ok(self.post("/api/white-label/v1/my-tickets/request-otp", &body).await?.data)
    }

    /// `POST /api/white-label/v1/my-tickets/verify-otp`: the passcode for a 24-hour session.
    pub async fn my_tickets_verify_otp(
        &self,
        challenge_id: &str,
        code: &str,
    ) -> Result<models::CustomerSession, Error> {
        let body = serde_json::json!({ "challengeId": challenge_id, "code": code });
        Ok(self.post("/api/white-label/v1/my-tickets/verify-otp", &body).await?.data)
    }

    /// `POST /api/white-label/v1/my-tickets/list`: the session's tickets, with their QR tokens.
    pub async fn my_tickets_list(&self, session_token: &str) -> Result<Vec<models::MyTicket>, Error> {
        let body = serde_json::json!({ "sessionToken": session_token });
        Ok(self.post("/api/white-label/v1/my-tickets/list", &body).await?.data)
    }

    /// `POST /api/white-label/v1/my-tickets/qr`: one of the session's tickets as SVG and PNG.
    pub async fn my_tickets_qr(&self, session_token: &str, ticket_code: &str) -> Result<models::TicketQr, Error> {
        let body = serde_json::json!({ "sessionToken": session_token, "ticketCode": ticket_code });
        Ok(self.post("/api/white-label/v1/my-tickets/qr", &body).await?.data)
    }

    /// `POST /api/white-label/v1/notifications` (202): `body` has channel, eventType,
    /// recipient, and optionally subject and payload.
    pub async fn send_notification<B: Serialize + ?Sized>(&self, body: &B) -> Result<models::Notification, Error> {
        Ok(self.post("/api/white-label/v1/notifications", body).await?.data)
    }

    /// `GET /api/white-label/v1/notifications/:id`.
    pub async fn notification(&self, id: &str) -> Result<models::Notification, Error> {
        Ok(self.get(&format!("/api/white-label/v1/notifications/{id}")).await?.data)
    }

    /// `GET /api/white-label/v1/notifications?…` (`status`, `channel`, `page`, `limit`).
    pub async fn notifications(&self, query: &str) -> Result<Response<Vec<models::Notification>>, Error> {
        let sep = if query.is_empty() { "" } else { "?" };
        self.get(&format!("/api/white-label/v1/notifications{sep}{query}")).await
    }
}

/// Whether a 401 body is the `replayed_request` error (a substring test: this runs on every 401,
/// and the server writes compact JSON).
fn is_replay(body: &[u8]) -> bool {
    has_code(body, b"\"code\":\"replayed_request\"")
}

fn has_code(body: &[u8], needle: &[u8]) -> bool {
    body.windows(needle.len()).any(|w| w == needle)
}

/// 503 `replay_store_unavailable` (D17.2): the instances' shared replay store is away and the
/// server ran nothing; the answer's `Retry-After` (1 s) says when to sign again.
fn replay_store_away(raw: &RawResponse) -> Option<Duration> {
    if raw.status != 503 || !has_code(&raw.body, b"\"code\":\"replay_store_unavailable\"") {
        return None;
    }
    let secs = raw.headers.get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    Some(Duration::from_secs(secs.unwrap_or(1).clamp(1, 5)))
}

#[derive(Deserialize)]
struct SuccessEnvelope<T> {
    data: T,
    #[serde(rename = "requestId", default)]
    request_id: String,
    #[serde(default)]
    pagination: Option<models::Pagination>,
}

/// Decodes a raw answer into the typed success or the typed error.
pub fn decode<T: DeserializeOwned>(raw: RawResponse) -> Result<Response<T>, Error> {
    let status = raw.status;
    if (200..300).contains(&status) {
        let env: SuccessEnvelope<T> =
            serde_json::from_slice(&raw.body).map_err(|e| Error::Decode { status, message: e.to_string() })?;
        return Ok(Response { status, data: env.data, request_id: env.request_id, pagination: env.pagination });
    }
    let retry_after =
        raw.headers.get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    match serde_json::from_slice::<ApiErrorBody>(&raw.body) {
        Ok(e) => Err(Error::Api {
            status,
            code: e.code.unwrap_or_default(),
            message: e.error,
            request_id: e.request_id.unwrap_or_default(),
            details: e.details,
            retry_after,
        }),
        Err(e) => Err(Error::Decode { status, message: e.to_string() }),
    }
}

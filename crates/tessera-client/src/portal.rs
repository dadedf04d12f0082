//! The reseller portal client (spec Scheme 3, D10.1): a client built with a session token sends
//! `Authorization: Bearer <token>`; nothing is signed. Answers are `{success, data}` and errors
//! `{success: false, error, code, details?}`; the request id comes from the `x-request-id` header.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tessera_client::Error> {
//! use tessera_client::portal::PortalClient;
//! let challenge = PortalClient::start_sign_in("http://127.0.0.1:8080", "ama@example.com").await?;
//! let session = PortalClient::finish_sign_in("http://127.0.0.1:8080", &challenge.challenge_id, "123456").await?;
//! let portal = PortalClient::new("http://127.0.0.1:8080", &session.token)?;
//! let console = portal.reseller().await?;
//! println!("{}", console["profile"]["status"]);
//! # Ok(()) }
//! ```
use std::time::Duration;

use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::{decode, Error, RawResponse, Response};

pub const PREFIX: &str = "/api/white-label/portal";

/// A sign-in or `otp/send` challenge.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Challenge {
    pub challenge_id: String,
    pub expires_at: String,
}

/// A portal session.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub token: String,
    pub expires_at: String,
}

/// A client holding a portal session token. Cheap to clone.
#[derive(Clone)]
pub struct PortalClient {
    http: reqwest::Client,
    base_url: String,
    token: std::sync::Arc<SecretString>,
}

impl std::fmt::Debug for PortalClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortalClient").field("base_url", &self.base_url).field("token", &"[redacted]").finish()
    }
}

fn http() -> Result<reqwest::Client, Error> {
    reqwest::Client::builder().timeout(Duration::from_secs(30)).build().map_err(|e| Error::Config(e.to_string()))
}

/// Decodes a portal answer; the error's request id comes from the header (the body has none).
fn decode_portal<T: serde::de::DeserializeOwned>(raw: RawResponse) -> Result<Response<T>, Error> {
    let id = raw.headers.get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    match decode::<T>(raw) {
        Ok(mut r) => {
            r.request_id = id;
            Ok(r)
        }
        Err(Error::Api { status, code, message, details, retry_after, .. }) => {
            Err(Error::Api { status, code, message, request_id: id, details, retry_after })
        }
        Err(e) => Err(e),
    }
}

async fn send(
    http: &reqwest::Client,
    url: String,
    method: Method,
    token: Option<&str>,
    body: Option<Vec<u8>>,
) -> Result<RawResponse, Error> {
    let mut req = http.request(method, url);
    if let Some(t) = token {
        let mut v = HeaderValue::from_str(&format!("Bearer {t}")).map_err(|e| Error::Config(e.to_string()))?;
        v.set_sensitive(true);
        req = req.header(AUTHORIZATION, v);
    }
    if let Some(b) = body {
        req = req.header(CONTENT_TYPE, "application/json").body(b);
    }
    let resp = req.send().await?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.bytes().await?.to_vec();
    Ok(RawResponse { status, headers, body })
}

impl PortalClient {
    /// A client for `base_url` sending this session token.
    pub fn new(base_url: &str, token: &str) -> Result<Self, Error> {
        Ok(PortalClient {
            http: http()?,
            base_url: base_url.trim_end_matches('/').to_string(),
            token: std::sync::Arc::new(SecretString::from(token.to_string())),
        })
    }

    /// `POST /api/white-label/portal/auth/otp/start {email}`: a passcode goes to the address when
    /// it is a member or invitation of a reseller.
    pub async fn start_sign_in(base_url: &str, email: &str) -> Result<Challenge, Error> {
        let url = format!("{}{PREFIX}/auth/otp/start", base_url.trim_end_matches('/'));
        let body = serde_json::to_vec(&json!({"email": email})).map_err(|e| Error::Config(e.to_string()))?;
        Ok(decode_portal(send(&http()?, url, Method::POST, None, Some(body)).await?)?.data)
    }

    /// `POST /api/white-label/portal/auth/otp/verify {challengeId, code}` → the session.
    pub async fn finish_sign_in(base_url: &str, challenge_id: &str, code: &str) -> Result<Session, Error> {
        let url = format!("{}{PREFIX}/auth/otp/verify", base_url.trim_end_matches('/'));
        let body = serde_json::to_vec(&json!({"challengeId": challenge_id, "code": code}))
            .map_err(|e| Error::Config(e.to_string()))?;
        Ok(decode_portal(send(&http()?, url, Method::POST, None, Some(body)).await?)?.data)
    }

    /// Sends a request with the session and returns the raw answer.
    pub async fn send_raw(&self, method: Method, path: &str, body: Option<Vec<u8>>) -> Result<RawResponse, Error> {
        send(&self.http, format!("{}{path}", self.base_url), method, Some(self.token.expose_secret()), body).await
    }

    /// Sends a JSON request with the session and decodes the portal envelope.
    pub async fn request<B: Serialize + ?Sized, T: serde::de::DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<Response<T>, Error> {
        let bytes = body.map(serde_json::to_vec).transpose().map_err(|e| Error::Config(e.to_string()))?;
        decode_portal(self.send_raw(method, path, bytes).await?)
    }

    /// `GET /portal/reseller`: profile, members, invitations.
    pub async fn reseller(&self) -> Result<Value, Error> {
        Ok(self.request::<(), Value>(Method::GET, &format!("{PREFIX}/reseller"), None).await?.data)
    }

    /// `PATCH /portal/reseller/profile`.
    pub async fn update_profile<B: Serialize + ?Sized>(&self, body: &B) -> Result<Value, Error> {
        Ok(self.request(Method::PATCH, &format!("{PREFIX}/reseller/profile"), Some(body)).await?.data)
    }

    /// `POST /portal/reseller/members` (an invitation with `email`).
    pub async fn create_member<B: Serialize + ?Sized>(&self, body: &B) -> Result<Value, Error> {
        Ok(self.request(Method::POST, &format!("{PREFIX}/reseller/members"), Some(body)).await?.data)
    }

    /// `PATCH /portal/reseller/members/:memberId`.
    pub async fn update_member<B: Serialize + ?Sized>(&self, member_id: &str, body: &B) -> Result<Value, Error> {
        Ok(self.request(Method::PATCH, &format!("{PREFIX}/reseller/members/{member_id}"), Some(body)).await?.data)
    }

    /// `POST /portal/reseller/approval-requests`.
    pub async fn file_approval<B: Serialize + ?Sized>(&self, body: &B) -> Result<Value, Error> {
        Ok(self.request(Method::POST, &format!("{PREFIX}/reseller/approval-requests"), Some(body)).await?.data)
    }

    /// `GET /portal/reseller/approval-requests[?status=…]`.
    pub async fn approvals(&self, status: Option<&str>) -> Result<Vec<Value>, Error> {
        let q = status.map(|s| format!("?status={s}")).unwrap_or_default();
        Ok(self.request::<(), _>(Method::GET, &format!("{PREFIX}/reseller/approval-requests{q}"), None).await?.data)
    }

    /// `PATCH /portal/reseller/approval-requests/:id {status, note}`.
    pub async fn decide_approval(&self, id: &str, status: &str, note: Option<&str>) -> Result<Value, Error> {
        let body = json!({"status": status, "note": note});
        Ok(self.request(Method::PATCH, &format!("{PREFIX}/reseller/approval-requests/{id}"), Some(&body)).await?.data)
    }

    /// `POST /portal/reseller/otp/send {channel, recipient, purpose}`.
    pub async fn send_otp(&self, channel: &str, recipient: &str, purpose: &str) -> Result<Challenge, Error> {
        let body = json!({"channel": channel, "recipient": recipient, "purpose": purpose});
        Ok(self.request(Method::POST, &format!("{PREFIX}/reseller/otp/send"), Some(&body)).await?.data)
    }

    /// `POST /portal/reseller/otp/verify {challengeId, code}` → `{verified, purpose}`.
    pub async fn verify_otp(&self, challenge_id: &str, code: &str) -> Result<Value, Error> {
        let body = json!({"challengeId": challenge_id, "code": code});
        Ok(self.request(Method::POST, &format!("{PREFIX}/reseller/otp/verify"), Some(&body)).await?.data)
    }

    /// `POST /portal/auth/logout`: the token stops working.
    pub async fn logout(&self) -> Result<(), Error> {
        self.request::<Value, Value>(Method::POST, &format!("{PREFIX}/auth/logout"), None).await?;
        Ok(())
    }
}

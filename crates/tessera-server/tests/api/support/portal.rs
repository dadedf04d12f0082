//! The reseller portal: its routes, its answers' two shapes, and signed-in resellers.
use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};
use tessera_server::cli::admin;

use super::client::raw;
use super::mail::{mailed_code, spawn_mailing};
use super::payments::PayApp;
use super::server::{drain, Backend, TestAccount};

pub const START: &str = "/api/white-label/portal/auth/otp/start";
pub const VERIFY: &str = "/api/white-label/portal/auth/otp/verify";
pub const LOGOUT: &str = "/api/white-label/portal/auth/logout";
pub const CONSOLE: &str = "/api/white-label/portal/reseller";

/// A portal request with an optional session token; the raw answer.
pub async fn call(p: &PayApp, token: Option<&str>, method: Method, path: &str, body: Option<Value>) -> RawResponse {
    let mut req = p.http.request(method, p.url(path));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    raw(req.send().await.expect("send")).await
}

/// Asserts a portal error: status, code, `{success: false, error, code}` with no requestId, and
/// the `x-request-id` header (D16.26).
pub fn portal_error(r: &RawResponse, status: u16, code: &str) -> Value {
    let body = r.json();
    assert_eq!(r.status, status, "status; body: {body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert!(body["error"].is_string(), "{body}");
    assert!(body.get("requestId").is_none(), "portal errors carry no requestId: {body}");
    assert!(r.headers.get("x-request-id").is_some(), "x-request-id header");
    body
}

/// Asserts a portal success and returns its data.
pub fn portal_ok(r: &RawResponse, status: u16) -> Value {
    let body = r.json();
    assert_eq!(r.status, status, "{body}");
    assert_eq!(body["success"], true, "{body}");
    assert!(body.get("requestId").is_none(), "portal answers carry no requestId: {body}");
    assert!(r.headers.get("x-request-id").is_some(), "x-request-id header");
    body["data"].clone()
}

/// A sign-in challenge for `email`.
pub async fn start(p: &PayApp, email: &str) -> String {
    let r = call(p, None, Method::POST, START, Some(json!({"email": email}))).await;
    portal_ok(&r, 200)["challengeId"].as_str().expect("challengeId").to_string()
}

/// Signs in with the passcode mailed to `email`; the session token.
pub async fn sign_in(p: &PayApp, email: &str) -> String {
    let challenge = start(p, email).await;
    drain(p).await;
    let code = mailed_code(p, email).expect("a passcode was mailed");
    let r = call(p, None, Method::POST, VERIFY, Some(json!({"challengeId": challenge, "code": code}))).await;
    portal_ok(&r, 200)["token"].as_str().expect("token").to_string()
}

/// A reseller on a fresh account whose mail goes to the sandbox: (account, owner e-mail).
pub async fn reseller(p: &PayApp, account: &TestAccount, owner: &str) -> Value {
    admin::reseller_create(&p.store, &account.slug, owner).await.expect("reseller create")
}

/// A mailing server with a reseller on its default account.
pub async fn spawn_reseller(b: Backend) -> (PayApp, String) {
    let p = spawn_mailing(b).await;
    let owner = format!("owner-{}@reseller.example.com", uuid::Uuid::now_v7().simple());
    reseller(&p, &p.account, &owner).await;
    (p, owner)
}

/// A session for an existing user, as the operator mints it (in process).
pub async fn mint(p: &PayApp, email: &str) -> String {
    let v = admin::session_create(&p.store, &p.keyring, email).await.expect("session create");
    v["token"].as_str().expect("token").to_string()
}

//! Requests to a test server and the assertions on their answers.
//!
//! Two ways to call a signed route: `send` (or `TestApp::signed`) returns the whole answer for
//! a test that looks at it; `Api` (`app.api()`, `app.api_as(&key)`) takes the status the test
//! expects, panics with the body's text when another comes, and returns the body parsed as
//! the type asked for:
//! `let created: Value = app.api().post(CAMPAIGNS, &body, StatusCode::CREATED).await;`.
use std::collections::BTreeSet;

pub use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tessera_client::{Method, RawResponse};

use super::server::{TestApp, TestKey};

/// Signed calls with one key that take the expected status.
pub struct Api<'a> {
    app: &'a TestApp,
    key: &'a TestKey,
}

impl TestApp {
    /// Typed calls signed with the default account's private key.
    pub fn api(&self) -> Api<'_> {
        self.api_as(&self.account.private)
    }

    /// Typed calls signed with `key`.
    pub fn api_as<'a>(&'a self, key: &'a TestKey) -> Api<'a> {
        Api { app: self, key }
    }

    /// A signed request with the default key; returns status and body JSON.
    pub async fn signed(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        self.signed_as(&self.account.private, method, path, body).await
    }

    pub async fn signed_as(&self, key: &TestKey, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let r = send(self, key, method, path, body).await;
        (r.status, r.json())
    }

    /// A domain-key request (public or campaign key) from the account's domain.
    pub async fn public_get(&self, path: &str, key: &TestKey, domain: &str) -> RawResponse {
        let r = self
            .http
            .get(self.url(path))
            .header("x-white-label-domain", domain)
            .header("x-white-label-key", key.header())
            .send()
            .await
            .expect("send");
        raw(r).await
    }
}

impl Api<'_> {
    pub async fn get<O: DeserializeOwned>(&self, path: &str, status: StatusCode) -> O {
        self.call(Method::GET, path, Vec::new(), status).await
    }

    pub async fn post<I: Serialize + ?Sized, O: DeserializeOwned>(
        &self,
        path: &str,
        body: &I,
        status: StatusCode,
    ) -> O {
        self.call(Method::POST, path, to_json(body), status).await
    }

    pub async fn patch<I: Serialize + ?Sized, O: DeserializeOwned>(
        &self,
        path: &str,
        body: &I,
        status: StatusCode,
    ) -> O {
        self.call(Method::PATCH, path, to_json(body), status).await
    }

    pub async fn put<I: Serialize + ?Sized, O: DeserializeOwned>(&self, path: &str, body: &I, status: StatusCode) -> O {
        self.call(Method::PUT, path, to_json(body), status).await
    }

    pub async fn delete<O: DeserializeOwned>(&self, path: &str, status: StatusCode) -> O {
        self.call(Method::DELETE, path, Vec::new(), status).await
    }

    async fn call<O: DeserializeOwned>(&self, method: Method, path: &str, body: Vec<u8>, status: StatusCode) -> O {
        let what = format!("{method} {path}");
        let r = self.app.client_for(self.key).send_raw(method, path, body, None).await.expect("send");
        expect_status(&r, status, &what)
    }
}

fn to_json<I: Serialize + ?Sized>(body: &I) -> Vec<u8> {
    serde_json::to_vec(body).expect("json")
}

/// `r`'s body parsed as `O` (an empty body as JSON `null`) once its status is `status`; panics
/// with the body's text otherwise. `what` names the request in the message.
pub fn expect_status<O: DeserializeOwned>(r: &RawResponse, status: StatusCode, what: &str) -> O {
    let text = String::from_utf8_lossy(&r.body);
    assert_eq!(r.status, status.as_u16(), "{what}: status; body: {text}");
    let body: &[u8] = if r.body.is_empty() { b"null" } else { &r.body };
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{what}: body is not a {}: {e}; body: {text}", std::any::type_name::<O>()))
}

/// A signed request returning the whole response (status, headers, body).
pub async fn send(app: &TestApp, key: &TestKey, method: Method, path: &str, body: Option<Value>) -> RawResponse {
    let bytes = body.map(|b| serde_json::to_vec(&b).expect("json")).unwrap_or_default();
    app.client_for(key).send_raw(method, path, bytes, None).await.expect("send")
}

/// A signed request with the default account's private key.
pub async fn send_default(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> RawResponse {
    send(app, &app.account.private, method, path, body).await
}

pub async fn raw(r: reqwest::Response) -> RawResponse {
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let body = r.bytes().await.expect("body").to_vec();
    RawResponse { status, headers, body }
}

/// Asserts an error envelope: status, code, and a requestId equal to the header.
pub fn assert_error(r: &RawResponse, status: u16, code: &str) -> Value {
    let body = r.json();
    assert_eq!(r.status, status, "status; body: {body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["code"], code, "{body}");
    let header = r.headers.get("x-request-id").and_then(|v| v.to_str().ok()).expect("x-request-id header");
    assert_eq!(body["requestId"], header, "requestId in body equals the header");
    body
}

/// The `field` of every details item.
pub fn detail_fields(body: &Value) -> Vec<String> {
    body["details"]
        .as_array()
        .map(|a| a.iter().filter_map(|d| d["field"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Asserts a 400 `validation_failed` whose details name exactly `fields` (in any order).
pub fn assert_invalid(r: &RawResponse, fields: &[&str]) -> Value {
    let body = assert_error(r, 400, "validation_failed");
    let got: BTreeSet<String> = detail_fields(&body).into_iter().collect();
    let want: BTreeSet<String> = fields.iter().map(|f| f.to_string()).collect();
    assert_eq!(got, want, "details fields; body: {body}");
    body
}

/// `base` with `key` set to `value`, or removed when `value` is `Value::Null`.
pub fn with(base: &Value, key: &str, value: Value) -> Value {
    let mut b = base.clone();
    let o = b.as_object_mut().expect("object");
    if value.is_null() {
        o.remove(key);
    } else {
        o.insert(key.to_string(), value);
    }
    b
}

/// The sorted `name`s of a list of objects.
pub fn names(items: &Value) -> Vec<String> {
    let mut v: Vec<String> =
        items.as_array().expect("array").iter().map(|i| i["name"].as_str().expect("name").to_string()).collect();
    v.sort();
    v
}

pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

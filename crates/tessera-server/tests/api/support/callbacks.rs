//! Inbound provider callbacks: the bodies and signatures a provider sends, and their route.
use serde_json::Value;
use tessera_client::RawResponse;

use super::client::raw;
use super::server::TestApp;

/// The raw body and signature a provider would send for an event.
pub fn signed_event(provider: &str, secret: &str, event: Value) -> (Vec<u8>, String) {
    use hmac::Mac;
    let body = serde_json::to_vec(&event).expect("json");
    let sig = if provider == "provider_a" {
        let mut m = hmac::Hmac::<sha2::Sha512>::new_from_slice(secret.as_bytes()).expect("key");
        m.update(&body);
        hex::encode(m.finalize().into_bytes())
    } else {
        let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("key");
        m.update(&body);
        hex::encode(m.finalize().into_bytes())
    };
    (body, sig)
}

/// Posts `body` to the provider's callback route, signed with `signature` when given.
pub async fn post_callback(app: &TestApp, provider: &str, body: Vec<u8>, signature: Option<&str>) -> RawResponse {
    let mut req = app.http.post(app.url(&format!("/api/white-label/webhooks/{provider}"))).body(body);
    req = req.header("content-type", "application/json");
    if let Some(s) = signature {
        req = req.header(format!("x-{provider}-signature"), s);
    }
    raw(req.send().await.expect("send")).await
}

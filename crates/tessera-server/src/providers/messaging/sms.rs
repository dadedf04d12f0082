//! SMS over an organization's own HTTP gateway (D13.3): `POST {baseUrl}/messages` with a Bearer
//! key and `{"to", "from", "text"}`, through the outbound guard (D16.25: the URL is the
//! account's). The notification flow picks the gateway, key and sender ([`Gateway`]). The key
//! goes into the request only, never into a log line or an error text.
use serde_json::json;

use super::super::outbound::Outbound;

/// An account's gateway and the sender its messages carry.
pub struct Gateway<'a> {
    pub base_url: &'a str,
    pub api_key: String,
    pub from: String,
}

/// Sends one SMS of `text` to `recipient` (E.164).
pub async fn send(outbound: &Outbound, gateway: Gateway<'_>, recipient: &str, text: &str) -> Result<(), String> {
    let url = format!("{}/messages", gateway.base_url.trim_end_matches('/'));
    let client = outbound.client_for(&url, true).map_err(|e| format!("SMS gateway URL refused: {e}"))?;
    let r = client
        .post(&url)
        .bearer_auth(gateway.api_key)
        .json(&json!({"to": recipient, "from": gateway.from, "text": text}))
        .send()
        .await
        .map_err(|e| format!("SMS gateway unreachable: {}", e.without_url()))?;
    if r.status().is_success() {
        Ok(())
    } else {
        Err(format!("SMS gateway answered {}", r.status().as_u16()))
    }
}

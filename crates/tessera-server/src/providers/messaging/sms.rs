//! SMS over one of two wires, through the outbound guard (D16.25: the URL is the account's):
//!
//! - an organization's own HTTP gateway (D13.3, [`send`]): `POST {baseUrl}/messages` with a
//!   Bearer key and `{"to", "from", "text"}`; any 2xx is sent;
//! - Africa's Talking (D18.4, [`send_africastalking`]): `POST {baseUrl}/version1/messaging`,
//!   form-urlencoded `username`, `to`, `message` and `from` (when a sender id is set), headers
//!   `apiKey` and `Accept: application/json`. The answer names each recipient
//!   (`SMSMessageData.Recipients[]`): `statusCode` 100 (Processed), 101 (Sent) or 102 (Queued)
//!   is sent; any other fails with the recipient's `status` (`InvalidPhoneNumber`, …) as the
//!   error, at once for 403 InvalidPhoneNumber (no attempt can get past it), else retried.
//!
//! The notification flow picks the wire, key and sender. The key goes into the request only
//! (a sensitive header), never into a log line or an error text.
use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::{json, Value};

use super::super::outbound::Outbound;
use super::Failure;

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

/// Africa's Talking's live API.
pub const AFRICASTALKING_URL: &str = "https://api.africastalking.com";
/// Africa's Talking's sandbox API, which its documentation pairs with the username `sandbox`.
pub const AFRICASTALKING_SANDBOX_URL: &str = "https://api.sandbox.africastalking.com";

/// Where an Africa's Talking application's SMS go when the account set no `baseUrl`: the
/// sandbox's API for the username `sandbox` (as Africa's Talking's own SDKs choose), else the
/// live API.
pub fn africastalking_default_url(username: &str) -> &'static str {
    if username == "sandbox" {
        AFRICASTALKING_SANDBOX_URL
    } else {
        AFRICASTALKING_URL
    }
}

/// An account's Africa's Talking application.
pub struct AfricasTalking<'a> {
    pub base_url: &'a str,
    pub username: &'a str,
    pub api_key: String,
    /// The registered sender id or short code; Africa's Talking's default sender when `None`.
    pub from: Option<&'a str>,
}

/// A recipient's `statusCode`s that mean the message went out: Processed, Sent, Queued.
const SENT: [i64; 3] = [100, 101, 102];
/// InvalidPhoneNumber: the number itself is refused, so no attempt can get past it.
const INVALID_PHONE_NUMBER: i64 = 403;
/// The longest error text kept from an answer (what a peer says is stored as `lastError`).
const MAX_ERROR_CHARS: usize = 200;

/// Sends one SMS of `text` to `recipient` (E.164) through Africa's Talking.
pub async fn send_africastalking(
    outbound: &Outbound,
    at: AfricasTalking<'_>,
    recipient: &str,
    text: &str,
) -> Result<(), Failure> {
    let url = format!("{}/version1/messaging", at.base_url.trim_end_matches('/'));
    let client = outbound.client_for(&url, true).map_err(|e| format!("Africa's Talking URL refused: {e}"))?;
    let form = {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("username", at.username).append_pair("to", recipient).append_pair("message", text);
        if let Some(from) = at.from {
            form.append_pair("from", from);
        }
        form.finish()
    };
    let mut key =
        HeaderValue::from_str(&at.api_key).map_err(|_| "the Africa's Talking apiKey is not a valid header value")?;
    key.set_sensitive(true);
    let r = client
        .post(&url)
        .header("apiKey", key)
        .header(ACCEPT, "application/json")
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .map_err(|e| format!("Africa's Talking unreachable: {}", e.without_url()))?;
    let status = r.status().as_u16();
    let body = r.text().await.map_err(|e| format!("Africa's Talking's answer was cut off: {}", e.without_url()))?;
    outcome(status, &body).map_err(|f| Failure { error: scrub(&f.error, &at.api_key), ..f })
}

/// What an answer of Africa's Talking means for the message (D18.4). The first recipient decides
/// whatever the HTTP status (Africa's Talking answers a refused recipient inside a 201); an
/// answer naming none is a refusal of the whole request (its `Message` says why).
fn outcome(status: u16, body: &str) -> Result<(), Failure> {
    let answer: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let data = &answer["SMSMessageData"];
    if let Some(recipient) = data["Recipients"].as_array().and_then(|r| r.first()) {
        let code = recipient["statusCode"].as_i64();
        if code.is_some_and(|c| SENT.contains(&c)) {
            return Ok(());
        }
        let why = match recipient["status"].as_str().map(str::trim).filter(|s| !s.is_empty()) {
            Some(s) => s.to_string(),
            None => format!("Africa's Talking refused the recipient (statusCode {})", code.unwrap_or_default()),
        };
        return Err(if code == Some(INVALID_PHONE_NUMBER) { Failure::permanent(why) } else { Failure::retry(why) });
    }
    if !(200..300).contains(&status) {
        let said = body.lines().next().map(str::trim).filter(|s| !s.is_empty());
        return Err(Failure::retry(match said {
            Some(s) => format!("Africa's Talking answered {status}: {s}"),
            None => format!("Africa's Talking answered {status}"),
        }));
    }
    match data["Message"].as_str().map(str::trim).filter(|s| !s.is_empty()) {
        Some("InvalidPhoneNumber") => Err(Failure::permanent("InvalidPhoneNumber")),
        Some(m) => Err(Failure::retry(format!("Africa's Talking sent to no recipient: {m}"))),
        None => Err(Failure::retry(format!("Africa's Talking answered {status} without SMSMessageData.Recipients"))),
    }
}

/// An error text fit for `lastError`: at most [`MAX_ERROR_CHARS`], the key masked should a peer
/// have echoed it.
fn scrub(text: &str, api_key: &str) -> String {
    let text = if api_key.is_empty() { text.to_string() } else { text.replace(api_key, "••••") };
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(code: i64, status: &str) -> String {
        json!({"SMSMessageData": {"Message": "Sent to 0/1 Total Cost: 0", "Recipients": [
            {"statusCode": code, "number": "+233241234567", "status": status, "cost": "0", "messageId": "None"}]}})
        .to_string()
    }

    #[test]
    fn processed_sent_and_queued_are_sent() {
        for code in [100, 101, 102] {
            assert_eq!(outcome(201, &answer(code, "Success")), Ok(()));
        }
    }

    #[test]
    fn an_invalid_number_fails_at_once_and_other_refusals_are_retried() {
        assert_eq!(outcome(201, &answer(403, "InvalidPhoneNumber")), Err(Failure::permanent("InvalidPhoneNumber")));
        assert_eq!(outcome(201, &answer(405, "InsufficientBalance")), Err(Failure::retry("InsufficientBalance")));
        assert_eq!(outcome(406, &answer(406, "UserInBlacklist")), Err(Failure::retry("UserInBlacklist")));
        let none = json!({"SMSMessageData": {"Message": "InvalidPhoneNumber", "Recipients": []}}).to_string();
        assert_eq!(outcome(201, &none), Err(Failure::permanent("InvalidPhoneNumber")));
    }

    #[test]
    fn http_refusals_are_retried_with_what_the_peer_said() {
        let f = outcome(401, "The supplied authentication is invalid").expect_err("refused");
        assert_eq!(f, Failure::retry("Africa's Talking answered 401: The supplied authentication is invalid"));
        assert_eq!(outcome(500, ""), Err(Failure::retry("Africa's Talking answered 500")));
        assert!(outcome(201, "{}").is_err_and(|f| !f.permanent));
    }

    #[test]
    fn errors_never_carry_the_key_and_stay_short() {
        assert_eq!(scrub("bad key atsk_secret_123", "atsk_secret_123"), "bad key ••••");
        assert_eq!(scrub(&"x".repeat(500), "k").chars().count(), MAX_ERROR_CHARS + 1);
    }

    #[test]
    fn the_sandbox_username_goes_to_the_sandbox_host() {
        assert_eq!(africastalking_default_url("sandbox"), "https://api.sandbox.africastalking.com");
        assert_eq!(africastalking_default_url("akwaaba"), "https://api.africastalking.com");
    }
}

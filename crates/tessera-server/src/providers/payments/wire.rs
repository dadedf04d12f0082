//! What every adapter's wire shares: one JSON call with the Bearer secret (or Basic auth) through
//! [`Outbound`] (D16.25), the mapping of transport failures and 5xx to
//! [`ProviderError::Unreachable`], and constant-time callback signature checks (D6.1).
use hmac::{Mac, SimpleHmac};
use secrecy::ExposeSecret;
use serde_json::{Map, Value};

use super::{ChargeRequest, Credentials, ProviderError, ProviderResult};
use crate::providers::outbound::{is_blocked, Outbound};

/// An answer below 500: its status and its body as JSON (`Null` when it is not JSON).
pub(super) struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A path segment with everything outside `[A-Za-z0-9._~-]` percent-encoded.
pub(crate) fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A new charge's body: both wires name its fields as Paystack does (the gateway protocol copied
/// them) except the callback URL, `callback_key`.
pub(super) fn charge_body(req: &ChargeRequest<'_>, callback_key: &str) -> Value {
    let mut body = Map::new();
    body.insert("reference".into(), req.reference.into());
    body.insert("amount".into(), req.amount.into());
    body.insert("currency".into(), req.currency.into());
    body.insert("email".into(), req.email.into());
    if let Some(cb) = req.callback_url {
        body.insert(callback_key.into(), cb.into());
    }
    body.insert("metadata".into(), req.metadata.clone());
    Value::Object(body)
}

/// The digits of an MSISDN (`233241234567`, `+233241234567`) in Ghana's local form
/// `0241234567`, as Paystack's `mobile_money.phone` takes it; other numbers are left as digits.
pub(super) fn local_phone(msisdn: &str) -> String {
    let digits: String = msisdn.chars().filter(char::is_ascii_digit).collect();
    match digits.strip_prefix("233") {
        Some(rest) if rest.len() == 9 => format!("0{rest}"),
        _ => digits,
    }
}

/// How a call authenticates: the secret as a Bearer token (Paystack, Flutterwave),
/// or Basic `user:password` (Hubtel's `apiId:secretKey`).
pub(super) enum Auth<'a> {
    Bearer(&'a str),
    Basic(&'a str, &'a str),
}

/// Sends `method {base}{path}` with the Bearer secret and an optional JSON body. Network errors,
/// timeouts and 5xx are `Unreachable`; a guard refusal is `Blocked`.
pub(super) async fn call(
    http: &Outbound,
    creds: &Credentials,
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> ProviderResult<Answer> {
    let url = format!("{}{}", creds.base_url.trim_end_matches('/'), path);
    let auth = Auth::Bearer(creds.secret_key.expose_secret());
    call_url(http, &url, creds.account_supplied, auth, method, body).await
}

/// Sends `method url` with `auth` and an optional JSON body (`account_supplied`: the URL goes
/// through the private-address guard); errors as [`call`]'s.
pub(super) async fn call_url(
    http: &Outbound,
    url: &str,
    account_supplied: bool,
    auth: Auth<'_>,
    method: reqwest::Method,
    body: Option<&Value>,
) -> ProviderResult<Answer> {
    let client = http.client_for(url, account_supplied).map_err(ProviderError::Blocked)?;
    let req = client.request(method, url).header(reqwest::header::ACCEPT, "application/json");
    let mut req = match auth {
        Auth::Bearer(token) => req.bearer_auth(token),
        Auth::Basic(user, password) => req.basic_auth(user, Some(password)),
    };
    if let Some(b) = body {
        req = req.json(b);
    }
    let resp = req.send().await.map_err(transport)?;
    let status = resp.status().as_u16();
    if status >= 500 {
        return Err(ProviderError::Unreachable(format!("HTTP {status}")));
    }
    let bytes = resp.bytes().await.map_err(transport)?;
    Ok(Answer { status, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null) })
}

fn transport(e: reqwest::Error) -> ProviderError {
    if is_blocked(&e) {
        ProviderError::Blocked(e.to_string())
    } else if e.is_timeout() {
        ProviderError::Unreachable("timed out".into())
    } else {
        ProviderError::Unreachable(e.to_string())
    }
}

/// `Rejected` with the status and the provider's own message.
pub(super) fn rejected(a: &Answer, message: Option<&str>) -> ProviderError {
    match message {
        Some(m) => ProviderError::Rejected(format!("HTTP {}: {m}", a.status)),
        None => ProviderError::Rejected(format!("HTTP {}", a.status)),
    }
}

/// A 2xx whose body lacks what we need.
pub(super) fn unreadable(what: &str) -> ProviderError {
    ProviderError::Rejected(format!("unreadable answer: no {what}"))
}

pub(super) fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// An integer amount (pesewas); providers send whole numbers.
pub(super) fn amount_at(v: &Value, key: &str) -> Option<i64> {
    let n = v.get(key)?;
    n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.is_finite()).map(|f| f as i64))
}

/// Pesewas as the decimal GHS Flutterwave and Hubtel take (D18.1): `15050` → `150.5`. Every
/// whole number of pesewas below 2^53 has an exact shortest decimal form with two places at
/// most, which is what serde_json prints.
pub(crate) fn ghs(pesewas: i64) -> Value {
    if pesewas % 100 == 0 {
        return Value::from(pesewas / 100);
    }
    serde_json::Number::from_f64(pesewas as f64 / 100.0).map(Value::Number).unwrap_or(Value::Null)
}

/// A decimal GHS amount as pesewas (D18.1): a number or a numeric string with at most two
/// places (`150.5`, `"150.50"`, `150`); anything else, or a third place that is not zero, is
/// unreadable (`None`).
pub(crate) fn pesewas_at(v: &Value, key: &str) -> Option<i64> {
    pesewas_in(v.get(key)?)
}

/// [`pesewas_at`] of a value already found.
pub(crate) fn pesewas_in(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => pesewas_of(&n.to_string()),
        Value::String(s) => pesewas_of(s.trim()),
        _ => None,
    }
}

/// `"150.50"` → 15050; at most two non-zero decimal places, no sign, no exponent.
pub(crate) fn pesewas_of(s: &str) -> Option<i64> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac = frac.trim_end_matches('0');
    if frac.len() > 2 {
        return None;
    }
    let cents = format!("{frac:0<2}").parse::<i64>().ok()?;
    whole.parse::<i64>().ok()?.checked_mul(100)?.checked_add(cents)
}

/// Hex HMAC over `body`, compared in constant time (D6.1).
pub(super) fn verify_hmac<D>(secret: &[u8], body: &[u8], signature: &str) -> bool
where
    D: hmac::digest::Digest + hmac::digest::core_api::BlockSizeUser,
{
    let Ok(expected) = hex::decode(signature.trim()) else { return false };
    let Ok(mut mac) = <SimpleHmac<D> as Mac>::new_from_slice(secret) else { return false };
    mac.update(body);
    mac.verify_slice(&expected).is_ok()
}

/// Hex HMAC of `body`, as a provider signs its callbacks (the sandbox and tests use it).
pub fn sign_hmac_hex<D>(secret: &[u8], body: &[u8]) -> String
where
    D: hmac::digest::Digest + hmac::digest::core_api::BlockSizeUser,
{
    // HMAC takes keys of any length: this never fails.
    let Ok(mut mac) = <SimpleHmac<D> as Mac>::new_from_slice(secret) else { return String::new() };
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// Reads the D6 body `{event, data: {id, reference, …}}`; `data.id` may be a number or a string.
/// A refund event (`refund.*`) names the refunded charge instead: Paystack in
/// `data.transaction_reference`, the gateway in `data.transaction` (a reference, or an object
/// with one); that charge reference is the event's `reference` (contract of issue 26), so the
/// callback can reconcile every pending refund of the charge.
pub(super) fn parse_callback(body: &[u8]) -> Result<super::ProviderCallback, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let event = str_at(&v, "event").filter(|s| !s.is_empty()).ok_or("no event")?.to_string();
    let data = v.get("data").filter(|d| d.is_object()).ok_or("no data object")?;
    let reference = if event.starts_with("refund.") {
        refunded_charge(data).ok_or("no data.transaction_reference or data.transaction")?
    } else {
        str_at(data, "reference").filter(|s| !s.is_empty()).ok_or("no data.reference")?
    }
    .to_string();
    let id = match data.get("id") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let kind = match event.split('.').next() {
        Some("charge") => super::CallbackKind::Charge,
        Some("transfer") => super::CallbackKind::Transfer,
        Some("refund") => super::CallbackKind::Refund,
        _ => super::CallbackKind::Other,
    };
    Ok(super::ProviderCallback { kind, event, id, reference, payer: None })
}

/// The charge reference a refund callback names: `transaction_reference`, then `transaction` as
/// a string or as an object's `reference`.
fn refunded_charge(data: &Value) -> Option<&str> {
    let nonempty = |s: &&str| !s.is_empty();
    str_at(data, "transaction_reference")
        .filter(nonempty)
        .or_else(|| str_at(data, "transaction").filter(nonempty))
        .or_else(|| data.get("transaction").and_then(|t| str_at(t, "reference")).filter(nonempty))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_only_with_the_same_secret_and_body() {
        let sig = sign_hmac_hex::<sha2::Sha512>(b"sk_1", b"{}");
        assert!(verify_hmac::<sha2::Sha512>(b"sk_1", b"{}", &sig));
        assert!(!verify_hmac::<sha2::Sha512>(b"sk_2", b"{}", &sig));
        assert!(!verify_hmac::<sha2::Sha512>(b"sk_1", b"{ }", &sig));
        assert!(!verify_hmac::<sha2::Sha256>(b"sk_1", b"{}", &sig));
        assert!(!verify_hmac::<sha2::Sha512>(b"sk_1", b"{}", "not hex"));
    }

    #[test]
    fn event_ids_may_be_numbers_or_strings() {
        let e = parse_callback(br#"{"event":"charge.success","data":{"id":42,"reference":"r1"}}"#).expect("event");
        assert_eq!((e.id.as_deref(), e.reference.as_str()), (Some("42"), "r1"));
        let e = parse_callback(br#"{"event":"charge.success","data":{"id":"ch_1","reference":"r1"}}"#).expect("event");
        assert_eq!(e.id.as_deref(), Some("ch_1"));
        let e = parse_callback(br#"{"event":"transfer.failed","data":{"reference":"r2"}}"#).expect("event");
        assert_eq!(e.event_key(), "transfer.failed:ref:r2");
        assert!(parse_callback(br#"{"event":"charge.success","data":{}}"#).is_err());
        assert!(parse_callback(b"nope").is_err());
    }

    #[test]
    fn refund_events_name_the_refunded_charge_on_both_wires() {
        let e = parse_callback(
            br#"{"event":"refund.processed","data":{"id":7,"transaction_reference":"T-1","merchant_note":"R-1"}}"#,
        )
        .expect("paystack");
        assert_eq!((e.event.as_str(), e.id.as_deref(), e.reference.as_str()), ("refund.processed", Some("7"), "T-1"));
        let e =
            parse_callback(br#"{"event":"refund.failed","data":{"id":"R-2","reference":"R-2","transaction":"T-2"}}"#)
                .expect("gateway");
        assert_eq!((e.id.as_deref(), e.reference.as_str()), (Some("R-2"), "T-2"));
        let e = parse_callback(br#"{"event":"refund.success","data":{"id":"R-3","transaction":{"reference":"T-3"}}}"#)
            .expect("object");
        assert_eq!(e.reference, "T-3");
        assert!(parse_callback(br#"{"event":"refund.success","data":{"id":"R-4","reference":"R-4"}}"#).is_err());
    }

    #[test]
    fn phones_take_the_local_form() {
        assert_eq!(local_phone("233241234567"), "0241234567");
        assert_eq!(local_phone("+233241234567"), "0241234567");
        assert_eq!(local_phone("0241234567"), "0241234567");
    }

    #[test]
    fn ghs_decimals_cross_the_boundary_exactly() {
        assert_eq!(ghs(15050).to_string(), "150.5");
        assert_eq!(ghs(1001).to_string(), "10.01");
        assert_eq!(ghs(500).to_string(), "5");
        for (text, pesewas) in [
            ("150.50", Some(15050)),
            ("150.5", Some(15050)),
            ("150", Some(15000)),
            ("0.07", Some(7)),
            ("10.010", Some(1001)),
            ("1.005", None),
            ("-1", None),
            ("1e3", None),
            ("", None),
            ("abc", None),
        ] {
            assert_eq!(pesewas_of(text), pesewas, "{text}");
        }
        assert_eq!(pesewas_at(&serde_json::json!({"amount": 150.5}), "amount"), Some(15050));
        assert_eq!(pesewas_at(&serde_json::json!({"amount": "20.00"}), "amount"), Some(2000));
        assert_eq!(pesewas_at(&serde_json::json!({"amount": true}), "amount"), None);
        for pesewas in [1, 7, 10, 99, 15050, 123_456_789, 99_999_999_999] {
            assert_eq!(pesewas_of(&ghs(pesewas).to_string()), Some(pesewas), "{pesewas}");
        }
    }

    #[test]
    fn references_are_encoded_as_one_path_segment() {
        assert_eq!(seg("T-1_a.b~c"), "T-1_a.b~c");
        assert_eq!(seg("a/b?c"), "a%2Fb%3Fc");
    }
}

//! `provider_b`: Flutterwave's v3 API, client side (D18.2, D18.45). Every call carries
//! `Authorization: Bearer <secret key>`; amounts are decimal GHS (`150.5`, [`wire::ghs`]) and
//! every answer is the envelope `{status: "success" | "error", message, data}`.
//!
//! - Charges: `POST /v3/payments` (Flutterwave Standard: `data.link` is the checkout page), or
//!   for a web mobile-money checkout `POST /v3/charges?type=mobile_money_ghana` (the page that
//!   asks the handset is `meta.authorization.redirect`). Verify is
//!   `GET /v3/transactions/verify_by_reference?tx_ref=`; its 400 "No transaction was found" is
//!   [`ProviderError::NotFound`] (the flow treats it as pending). `data.id` is kept: refunds
//!   name the charge by it.
//! - Refunds: `POST /v3/transactions/{id}/refund {amount}`, polled at `GET /v3/refunds/{id}`.
//!   Flutterwave takes no reference of ours for a refund, so before creating one Tessera lists
//!   `GET /v3/refunds?from=&to=` since the refund was filed and adopts one of this charge and
//!   amount that no other refund of the charge already holds: a lost answer never refunds twice.
//! - Transfers: `POST /v3/transfers` with the withdrawal id as `reference`; Flutterwave is
//!   asked about a transfer by its own id, so Tessera finds it by listing `GET /v3/transfers`
//!   and matching `reference`, then reads `GET /v3/transfers/{id}`.
//! - Callbacks: `verif-hash` equal to the webhook hash, or `flutterwave-signature` (base64
//!   HMAC-SHA256 of the raw body under it); D6.1's `x-provider_b-signature` stays accepted.
//!   Bodies are `{event, data}` (`charge.completed`, `transfer.completed`, `refund.completed`)
//!   or the legacy flat `{id, txRef, status, …}` of Flutterwave's older webhooks.
use base64::Engine;
use hmac::{Mac, SimpleHmac};
use reqwest::Method;
use secrecy::ExposeSecret;
use serde_json::{json, Map, Value};
use subtle::ConstantTimeEq;

use super::wire::{self, seg, str_at, Answer};
use super::*;

pub struct Flutterwave;

/// Pages a listing is read through at most (100 a page would be 2 000 refunds or transfers).
const MAX_PAGES: u64 = 20;

/// `verify_by_reference`'s `data.status`: `successful` is paid, `failed` final, anything else
/// (`pending`, a new word) is not settled.
pub fn map_charge_status(s: &str) -> RemoteStatus {
    match s.to_ascii_lowercase().as_str() {
        "successful" => RemoteStatus::Success,
        "failed" | "cancelled" => RemoteStatus::Failed,
        _ => RemoteStatus::Pending,
    }
}

/// A refund's `status`: `completed` is done, `failed` final, else pending.
pub fn map_refund_status(s: &str) -> RemoteStatus {
    match s.to_ascii_lowercase().as_str() {
        "completed" | "successful" => RemoteStatus::Success,
        "failed" => RemoteStatus::Failed,
        _ => RemoteStatus::Pending,
    }
}

/// A transfer's `status`: `SUCCESSFUL`, `FAILED`, else (`NEW`, `PENDING`) pending.
pub fn map_transfer_status(s: &str) -> RemoteStatus {
    match s.to_ascii_uppercase().as_str() {
        "SUCCESSFUL" => RemoteStatus::Success,
        "FAILED" => RemoteStatus::Failed,
        _ => RemoteStatus::Pending,
    }
}

/// Flutterwave's Ghana mobile-money networks for Tessera's `mtn`, `vod`, `atl` (and the bank
/// codes a withdrawal names a wallet with); `None` for a bank.
pub fn network_of(code: &str) -> Option<&'static str> {
    match code.to_ascii_uppercase().as_str() {
        "MTN" => Some("MTN"),
        "VOD" | "VODAFONE" | "TELECEL" => Some("VODAFONE"),
        "ATL" | "AIRTELTIGO" | "TIGO" | "AIRTEL" => Some("AIRTELTIGO"),
        _ => None,
    }
}

/// The network of a Ghanaian number by its prefix (`024…` MTN), for a checkout that named none.
pub fn network_of_phone(phone: &str) -> Option<&'static str> {
    let msisdn = msisdn(phone)?;
    match &msisdn[3..5] {
        "24" | "25" | "53" | "54" | "55" | "59" => Some("MTN"),
        "20" | "50" => Some("VODAFONE"),
        "26" | "27" | "56" | "57" => Some("AIRTELTIGO"),
        _ => None,
    }
}

/// A Ghanaian number as `233XXXXXXXXX` (from `0…`, `+233…`, `233…`); `None` when it is not one.
pub fn msisdn(phone: &str) -> Option<String> {
    let digits: String = phone.chars().filter(char::is_ascii_digit).collect();
    let national = match digits.strip_prefix("233") {
        Some(rest) if rest.len() == 9 => rest.to_string(),
        _ => digits.strip_prefix('0').filter(|r| r.len() == 9)?.to_string(),
    };
    Some(format!("233{national}"))
}

/// The `data` of a `{status: "success"}` 2xx (`Null` when absent), or the error it stands for:
/// 400 "No transaction was found" → NotFound, "duplicate"/"already exists" → Duplicate, other
/// answers → Rejected with Flutterwave's message.
fn payload(a: Answer) -> ProviderResult<Value> {
    if a.is_success() && str_at(&a.body, "status") == Some("success") {
        return Ok(a.body.get("data").cloned().unwrap_or(Value::Null));
    }
    let message = str_at(&a.body, "message");
    let lower = message.unwrap_or_default().to_ascii_lowercase();
    if a.status == 404 || lower.contains("no transaction was found") || lower.contains("not found") {
        return Err(ProviderError::NotFound);
    }
    if lower.contains("duplicate") || lower.contains("already exist") {
        return Err(ProviderError::Duplicate);
    }
    if a.is_success() {
        let why = message.map(|m| format!("status is not success: {m}"));
        return Err(ProviderError::Rejected(format!(
            "unreadable answer: {}",
            why.unwrap_or_else(|| "no status success".into())
        )));
    }
    Err(wire::rejected(&a, message))
}

fn object(d: Value, what: &str) -> ProviderResult<Value> {
    Some(d).filter(Value::is_object).ok_or_else(|| wire::unreadable(what))
}

/// An id Flutterwave sends as a number (or a string).
fn id_at(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// `POST /v3/payments`'s body (Flutterwave Standard).
fn payment_body(req: &ChargeRequest<'_>, redirect_url: &str) -> Value {
    let mut customer = Map::new();
    customer.insert("email".into(), req.email.into());
    if let Some(name) = req.name {
        customer.insert("name".into(), name.into());
    }
    if let Some(phone) = req.phone {
        customer.insert("phonenumber".into(), phone.into());
    }
    json!({
        "tx_ref": req.reference,
        "amount": wire::ghs(req.amount),
        "currency": req.currency,
        "redirect_url": redirect_url,
        "customer": customer,
        "customizations": {"title": req.description.unwrap_or("Tessera")},
        "meta": req.metadata,
    })
}

/// `POST /v3/charges?type=mobile_money_ghana`'s body.
fn mobile_money_body(req: &ChargeRequest<'_>, phone: &str, network: &str, redirect_url: &str) -> Value {
    let mut body = json!({
        "tx_ref": req.reference,
        "amount": wire::ghs(req.amount),
        "currency": req.currency,
        "email": req.email,
        "phone_number": phone,
        "network": network,
        "redirect_url": redirect_url,
    });
    if let (Some(name), Some(o)) = (req.name, body.as_object_mut()) {
        o.insert("fullname".into(), name.into());
    }
    body
}

/// Where the customer comes back to (D18.45): the checkout's callback URL, else Tessera's own
/// "being confirmed" page.
fn redirect_url(creds: &Credentials, req: &ChargeRequest<'_>) -> String {
    if let Some(url) = req.callback_url {
        return url.to_string();
    }
    let base = creds.extra.public_url.as_deref().unwrap_or_default().trim_end_matches('/');
    format!("{base}/pay/done?reference={}", seg(req.reference))
}

/// The web mobile-money charge of this checkout, when it asked for one and its number is
/// Ghanaian: `(233… number, network)`.
fn mobile_money_of(req: &ChargeRequest<'_>) -> Option<(String, &'static str)> {
    if req.method != Some("mobile_money") {
        return None;
    }
    let phone = msisdn(req.phone?)?;
    let network = req.network.and_then(network_of).or_else(|| network_of_phone(&phone))?;
    Some((phone, network))
}

/// `card` or `mobile_money` from `payment_type` (`card`, `mobilemoneygh`, `mobile_money_ghana`).
fn method_of(payment_type: &str) -> Option<&'static str> {
    let t = payment_type.to_ascii_lowercase();
    if t == "card" {
        Some("card")
    } else if t.replace('_', "").starts_with("mobilemoney") {
        Some("mobile_money")
    } else {
        None
    }
}

/// A verify answer's `data` as the charge's state; its `tx_ref` must be the one asked.
fn charge_state(d: &Value, reference: &str) -> ProviderResult<ChargeState> {
    let tx_ref = str_at(d, "tx_ref").ok_or_else(|| wire::unreadable("data.tx_ref"))?;
    if tx_ref != reference {
        return Err(ProviderError::Rejected(format!("the verify answered for tx_ref {tx_ref}, not {reference}")));
    }
    let status = map_charge_status(str_at(d, "status").ok_or_else(|| wire::unreadable("data.status"))?);
    let customer = d.get("customer").unwrap_or(&Value::Null);
    let reason = match status {
        RemoteStatus::Failed => str_at(d, "processor_response").map(str::to_string),
        _ => None,
    };
    Ok(ChargeState {
        reference: tx_ref.to_string(),
        status,
        amount: wire::pesewas_at(d, "amount").ok_or_else(|| wire::unreadable("data.amount in GHS"))?,
        currency: str_at(d, "currency").ok_or_else(|| wire::unreadable("data.currency"))?.to_string(),
        provider_id: id_at(d, "id"),
        method: str_at(d, "payment_type").and_then(method_of).map(str::to_string),
        payer: str_at(customer, "phone_number").and_then(msisdn),
        reason,
    })
}

/// A refund object (`{id, tx_id, amount_refunded, status, comments}`) as the state of `req`.
fn refund_state(d: &Value, req: &RefundRequest<'_>) -> ProviderResult<RefundState> {
    let status = map_refund_status(str_at(d, "status").ok_or_else(|| wire::unreadable("data.status"))?);
    Ok(RefundState {
        refund_id: req.refund_id.to_string(),
        provider_id: Some(id_at(d, "id").ok_or_else(|| wire::unreadable("data.id"))?),
        status,
        amount: wire::pesewas_at(d, "amount_refunded").unwrap_or(req.amount),
        reason: str_at(d, "comments").or(req.reason).map(str::to_string),
    })
}

/// A transfer object as its state (`complete_message` is a failure's reason).
fn transfer_state(d: &Value, fallback: Option<&TransferRequest<'_>>) -> ProviderResult<TransferState> {
    let status = map_transfer_status(str_at(d, "status").ok_or_else(|| wire::unreadable("data.status"))?);
    let reason = match status {
        RemoteStatus::Failed => {
            Some(str_at(d, "complete_message").filter(|m| !m.is_empty()).unwrap_or("the transfer failed").to_string())
        }
        _ => None,
    };
    Ok(TransferState {
        reference: str_at(d, "reference")
            .or(fallback.map(|r| r.reference))
            .ok_or_else(|| wire::unreadable("data.reference"))?
            .to_string(),
        status,
        amount: wire::pesewas_at(d, "amount")
            .or(fallback.map(|r| r.amount))
            .ok_or_else(|| wire::unreadable("data.amount in GHS"))?,
        currency: str_at(d, "currency").or(fallback.map(|r| r.currency)).unwrap_or("GHS").to_string(),
        reason,
    })
}

/// `POST /v3/transfers`'s body: a wallet is `account_bank` MTN|VODAFONE|AIRTELTIGO and a 233…
/// number; a bank keeps its code and account number.
fn transfer_body(req: &TransferRequest<'_>) -> Value {
    let (bank, number) = match network_of(req.bank_code) {
        Some(network) => {
            (network.to_string(), msisdn(req.account_number).unwrap_or_else(|| req.account_number.to_string()))
        }
        None => (req.bank_code.to_string(), req.account_number.to_string()),
    };
    json!({
        "account_bank": bank,
        "account_number": number,
        "amount": wire::ghs(req.amount),
        "currency": "GHS",
        "beneficiary_name": req.account_name,
        "narration": req.reason,
        "reference": req.reference,
        "debit_currency": "GHS",
    })
}

/// A UTC date `YYYY-MM-DD` of Unix milliseconds.
fn utc_date(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000)).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!("{:04}-{:02}-{:02}", t.year(), u8::from(t.month()), t.day())
}

/// Reads a paged listing (`meta.page_info.total_pages`) until `pick` finds an item.
async fn find_in_listing(
    http: &Outbound,
    creds: &Credentials,
    path: &str,
    pick: impl Fn(&Value) -> bool,
) -> ProviderResult<Option<Value>> {
    let sep = if path.contains('?') { '&' } else { '?' };
    for page in 1..=MAX_PAGES {
        let a = wire::call(http, creds, Method::GET, &format!("{path}{sep}page={page}"), None).await?;
        let pages = a.body.pointer("/meta/page_info/total_pages").and_then(Value::as_u64).unwrap_or(1);
        let items = match payload(a) {
            Ok(Value::Array(items)) => items,
            Ok(_) => return Err(wire::unreadable("data list")),
            Err(ProviderError::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        };
        if let Some(found) = items.into_iter().find(|i| pick(i)) {
            return Ok(Some(found));
        }
        if page >= pages {
            break;
        }
    }
    Ok(None)
}

/// The refund of this charge and amount made since the refund was filed that no other refund
/// of the charge holds: the one a lost create answer made.
async fn find_refund(
    http: &Outbound,
    creds: &Credentials,
    req: &RefundRequest<'_>,
    tx_id: &str,
) -> ProviderResult<Option<Value>> {
    let today = utc_date(time::OffsetDateTime::now_utc().unix_timestamp() * 1000);
    let path = format!("/v3/refunds?from={}&to={today}", utc_date(req.filed_at));
    find_in_listing(http, creds, &path, |r| {
        id_at(r, "tx_id").as_deref() == Some(tx_id)
            && wire::pesewas_at(r, "amount_refunded") == Some(req.amount)
            && id_at(r, "id").is_some_and(|id| !req.taken.contains(&id))
    })
    .await
}

/// Flutterwave's id of the transfer whose `reference` is Tessera's.
async fn transfer_id(http: &Outbound, creds: &Credentials, reference: &str) -> ProviderResult<String> {
    let found = find_in_listing(http, creds, "/v3/transfers", |t| str_at(t, "reference") == Some(reference)).await?;
    found.as_ref().and_then(|t| id_at(t, "id")).ok_or(ProviderError::NotFound)
}

/// The header's value as text, when present.
fn header<'a>(callback: &CallbackAuth<'a>, name: &str) -> Option<&'a str> {
    callback.headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether `signature` is the base64 HMAC-SHA256 of `body` under `secret` (constant time).
fn verify_base64_hmac(secret: &[u8], body: &[u8], signature: &str) -> bool {
    let Ok(expected) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else { return false };
    let Ok(mut mac) = <SimpleHmac<sha2::Sha256> as Mac>::new_from_slice(secret) else { return false };
    mac.update(body);
    mac.verify_slice(&expected).is_ok()
}

/// `flutterwave-signature`'s value for `body` under the webhook hash (tests and fakes sign so).
pub fn sign_base64(secret: &[u8], body: &[u8]) -> String {
    let Ok(mut mac) = <SimpleHmac<sha2::Sha256> as Mac>::new_from_slice(secret) else { return String::new() };
    mac.update(body);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Reads a webhook body: `{event, data}` or the legacy flat `{id, txRef, status, …}`.
pub fn parse(body: &[u8]) -> Result<ProviderCallback, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let Some(event) = str_at(&v, "event").filter(|e| !e.is_empty()) else { return legacy(&v) };
    let data = v.get("data").filter(|d| d.is_object()).ok_or("no data object")?;
    let nonempty = |k: &str| str_at(data, k).filter(|s| !s.is_empty()).map(str::to_string);
    let (kind, reference) = match event.split('.').next() {
        Some("charge") => (CallbackKind::Charge, nonempty("tx_ref").ok_or("no data.tx_ref")?),
        Some("transfer") => (CallbackKind::Transfer, nonempty("reference").ok_or("no data.reference")?),
        // A refund names its charge by tx_ref when it says; otherwise nothing of ours.
        Some("refund") => match nonempty("tx_ref") {
            Some(r) => (CallbackKind::Refund, r),
            None => (CallbackKind::Other, id_at(data, "id").unwrap_or_default()),
        },
        _ => (CallbackKind::Other, nonempty("tx_ref").or_else(|| nonempty("reference")).unwrap_or_default()),
    };
    // The event key (D16.7) is the event and Flutterwave's id of the object: each attempt at a
    // charge is a transaction of its own id.
    Ok(ProviderCallback { kind, event: event.to_string(), id: id_at(data, "id"), reference, payer: None })
}

/// Flutterwave's older webhook shape: the transaction's fields at the top (`txRef`, `flwRef`,
/// `status`, `id`, `event.type`).
fn legacy(v: &Value) -> Result<ProviderCallback, String> {
    let reference = str_at(v, "txRef").filter(|s| !s.is_empty()).ok_or("no event and no txRef")?;
    Ok(ProviderCallback {
        kind: CallbackKind::Charge,
        // The same report as `charge.completed`: both shapes of one charge are one event.
        event: "charge.completed".into(),
        id: id_at(v, "id"),
        reference: reference.to_string(),
        payer: None,
    })
}

#[async_trait::async_trait]
impl PaymentProvider for Flutterwave {
    fn id(&self) -> ProviderId {
        ProviderId::B
    }

    fn default_base_url(&self) -> &'static str {
        "https://api.flutterwave.com"
    }

    /// A Flutterwave charge needs a page: USSD votes never route here (D18.5).
    fn can_push(&self) -> bool {
        false
    }

    fn authenticate(&self, creds: &Credentials, callback: &CallbackAuth<'_>) -> bool {
        let Some(hash) = creds.extra.webhook_hash.as_ref().map(|h| h.expose_secret().as_bytes()) else {
            return false;
        };
        if hash.is_empty() {
            return false;
        }
        let by_hash = header(callback, "verif-hash").is_some_and(|v| bool::from(v.as_bytes().ct_eq(hash)));
        by_hash
            || header(callback, "flutterwave-signature").is_some_and(|sig| verify_base64_hmac(hash, callback.body, sig))
    }

    fn carries_authentication(&self, callback: &CallbackAuth<'_>) -> bool {
        header(callback, "verif-hash").is_some() || header(callback, "flutterwave-signature").is_some()
    }

    async fn initialize(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &ChargeRequest<'_>,
    ) -> ProviderResult<ChargeInit> {
        let redirect = redirect_url(creds, req);
        if let Some((phone, network)) = mobile_money_of(req) {
            let body = mobile_money_body(req, &phone, network, &redirect);
            let a = wire::call(http, creds, Method::POST, "/v3/charges?type=mobile_money_ghana", Some(&body)).await?;
            let meta = a.body.get("meta").cloned().unwrap_or(Value::Null);
            payload(a)?;
            let url = meta.pointer("/authorization/redirect").and_then(Value::as_str);
            let url = url.filter(|u| !u.is_empty()).ok_or_else(|| wire::unreadable("meta.authorization.redirect"))?;
            return Ok(ChargeInit { authorization_url: url.to_string(), access_code: String::new() });
        }
        let body = payment_body(req, &redirect);
        let d = object(payload(wire::call(http, creds, Method::POST, "/v3/payments", Some(&body)).await?)?, "data")?;
        let link = str_at(&d, "link").filter(|l| !l.is_empty()).ok_or_else(|| wire::unreadable("data.link"))?;
        Ok(ChargeInit { authorization_url: link.to_string(), access_code: String::new() })
    }

    /// Flutterwave's Ghana mobile money needs a page the customer opens: no push (D18.5).
    async fn charge_mobile_money(
        &self,
        _http: &Outbound,
        _creds: &Credentials,
        _req: &MobileMoneyCharge<'_>,
    ) -> ProviderResult<()> {
        Err(ProviderError::Rejected("Flutterwave cannot push a mobile-money prompt without a page".into()))
    }

    async fn verify_charge(
        &self,
        http: &Outbound,
        creds: &Credentials,
        reference: &str,
    ) -> ProviderResult<ChargeState> {
        let path = format!("/v3/transactions/verify_by_reference?tx_ref={}", seg(reference));
        let d = object(payload(wire::call(http, creds, Method::GET, &path, None).await?)?, "data")?;
        charge_state(&d, reference)
    }

    async fn create_transfer(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &TransferRequest<'_>,
    ) -> ProviderResult<TransferState> {
        let body = transfer_body(req);
        let d = object(payload(wire::call(http, creds, Method::POST, "/v3/transfers", Some(&body)).await?)?, "data")?;
        transfer_state(&d, Some(req))
    }

    async fn verify_transfer(
        &self,
        http: &Outbound,
        creds: &Credentials,
        reference: &str,
    ) -> ProviderResult<TransferState> {
        let id = transfer_id(http, creds, reference).await?;
        let path = format!("/v3/transfers/{}", seg(&id));
        transfer_state(&object(payload(wire::call(http, creds, Method::GET, &path, None).await?)?, "data")?, None)
    }

    /// Adopts the refund a lost answer made (see the module docs), else creates it.
    async fn create_refund(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &RefundRequest<'_>,
    ) -> ProviderResult<RefundState> {
        let Some(tx_id) = req.charge.provider_charge_id else {
            return Err(ProviderError::Rejected(
                "no Flutterwave transaction id is known for this charge: it cannot be refunded there".into(),
            ));
        };
        if let Some(existing) = find_refund(http, creds, req, tx_id).await? {
            return refund_state(&existing, req);
        }
        let mut body = json!({"amount": wire::ghs(req.amount)});
        if let (Some(reason), Some(o)) = (req.reason, body.as_object_mut()) {
            o.insert("comments".into(), reason.into());
        }
        let path = format!("/v3/transactions/{}/refund", seg(tx_id));
        refund_state(&object(payload(wire::call(http, creds, Method::POST, &path, Some(&body)).await?)?, "data")?, req)
    }

    async fn verify_refund(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &RefundRequest<'_>,
    ) -> ProviderResult<RefundState> {
        let id = req.provider_refund_id.ok_or(ProviderError::NotFound)?;
        let path = format!("/v3/refunds/{}", seg(id));
        refund_state(&object(payload(wire::call(http, creds, Method::GET, &path, None).await?)?, "data")?, req)
    }

    /// D6.1's `x-provider_b-signature`: hex HMAC-SHA256 with the secret key (the sandbox signs
    /// so, D18.45).
    fn verify_signature(&self, secret: &[u8], body: &[u8], signature: &str) -> bool {
        wire::verify_hmac::<sha2::Sha256>(secret, body, signature)
    }

    fn parse_callback(&self, body: &[u8]) -> Result<ProviderCallback, String> {
        parse(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::SecretString;

    fn creds(hash: Option<&str>) -> Credentials {
        Credentials {
            base_url: "http://fake".into(),
            secret_key: SecretString::from("FLWSECK_TEST-1".to_string()),
            account_supplied: false,
            extra: Extra {
                webhook_hash: hash.map(|h| SecretString::from(h.to_string())),
                public_url: Some("https://tessera.example/".into()),
                ..Extra::default()
            },
        }
    }

    fn charge<'a>(metadata: &'a Value) -> ChargeRequest<'a> {
        ChargeRequest {
            reference: "tsr_1",
            amount: 15050,
            currency: "GHS",
            email: "ama@example.com",
            name: Some("Ama"),
            phone: Some("0241234567"),
            description: Some("Gala night"),
            callback_url: None,
            metadata,
            method: None,
            network: None,
        }
    }

    #[test]
    fn a_payment_is_flutterwave_standards_body_in_decimal_ghs() {
        let meta = json!({});
        let req = charge(&meta);
        let redirect = redirect_url(&creds(None), &req);
        assert_eq!(redirect, "https://tessera.example/pay/done?reference=tsr_1");
        assert_eq!(
            payment_body(&req, &redirect),
            json!({
                "tx_ref": "tsr_1",
                "amount": 150.5,
                "currency": "GHS",
                "redirect_url": "https://tessera.example/pay/done?reference=tsr_1",
                "customer": {"email": "ama@example.com", "name": "Ama", "phonenumber": "0241234567"},
                "customizations": {"title": "Gala night"},
                "meta": {},
            })
        );
        let with_callback = ChargeRequest { callback_url: Some("https://shop.example/thanks"), ..req };
        assert_eq!(redirect_url(&creds(None), &with_callback), "https://shop.example/thanks");
    }

    #[test]
    fn web_mobile_money_names_the_network_and_the_233_number() {
        let meta = json!({});
        assert_eq!(mobile_money_of(&charge(&meta)), None, "a card checkout stays Standard");
        let req = ChargeRequest { method: Some("mobile_money"), ..charge(&meta) };
        assert_eq!(mobile_money_of(&req), Some(("233241234567".to_string(), "MTN")));
        let vod = ChargeRequest { network: Some("vod"), ..req.clone() };
        assert_eq!(mobile_money_of(&vod).map(|m| m.1), Some("VODAFONE"));
        let body = mobile_money_body(&req, "233241234567", "MTN", "https://x/pay/done");
        assert_eq!(body["amount"], json!(150.5));
        assert_eq!((body["tx_ref"].as_str(), body["network"].as_str()), (Some("tsr_1"), Some("MTN")));
        assert_eq!(body["phone_number"], "233241234567");
        let no_phone = ChargeRequest { phone: Some("12"), ..req };
        assert_eq!(mobile_money_of(&no_phone), None);
        assert_eq!(network_of_phone("0501234567"), Some("VODAFONE"));
        assert_eq!(network_of_phone("+233271234567"), Some("AIRTELTIGO"));
    }

    #[test]
    fn statuses_map_to_three_outcomes() {
        assert_eq!(map_charge_status("successful"), RemoteStatus::Success);
        assert_eq!(map_charge_status("failed"), RemoteStatus::Failed);
        for s in ["pending", "new", "something"] {
            assert_eq!(map_charge_status(s), RemoteStatus::Pending, "{s}");
        }
        assert_eq!(map_refund_status("completed"), RemoteStatus::Success);
        assert_eq!(map_refund_status("failed"), RemoteStatus::Failed);
        assert_eq!(map_refund_status("pending"), RemoteStatus::Pending);
        assert_eq!(map_transfer_status("SUCCESSFUL"), RemoteStatus::Success);
        assert_eq!(map_transfer_status("FAILED"), RemoteStatus::Failed);
        assert_eq!(map_transfer_status("NEW"), RemoteStatus::Pending);
    }

    #[test]
    fn a_verify_answer_is_read_exactly_and_only_for_its_reference() {
        let d = json!({"id": 4975363, "tx_ref": "tsr_1", "amount": 150.5, "currency": "GHS", "status": "successful",
                       "payment_type": "mobilemoneygh", "customer": {"phone_number": "0241234567"}});
        let s = charge_state(&d, "tsr_1").expect("state");
        assert_eq!((s.status, s.amount, s.provider_id.as_deref()), (RemoteStatus::Success, 15050, Some("4975363")));
        assert_eq!((s.method.as_deref(), s.payer.as_deref()), (Some("mobile_money"), Some("233241234567")));
        assert!(charge_state(&d, "tsr_2").is_err());
        let abc = json!({"tx_ref": "tsr_1", "amount": "abc", "currency": "GHS", "status": "successful"});
        assert!(matches!(charge_state(&abc, "tsr_1"), Err(ProviderError::Rejected(_))));
        let card = json!({"tx_ref": "tsr_1", "amount": "20.00", "currency": "GHS", "status": "pending",
                          "payment_type": "card", "customer": {"phone_number": "N/A"}});
        let s = charge_state(&card, "tsr_1").expect("card");
        assert_eq!((s.amount, s.method.as_deref(), s.payer), (2000, Some("card"), None));
    }

    #[test]
    fn envelopes_map_to_errors() {
        let answer = |status, body| payload(Answer { status, body });
        assert_eq!(answer(200, json!({"status": "success", "data": {"a": 1}})), Ok(json!({"a": 1})));
        let none = json!({"status": "error", "message": "No transaction was found for this id", "data": null});
        assert_eq!(answer(400, none), Err(ProviderError::NotFound));
        let dup = json!({"status": "error", "message": "Duplicate reference", "data": null});
        assert_eq!(answer(400, dup), Err(ProviderError::Duplicate));
        let auth = json!({"status": "error", "message": "Authorization required", "data": null});
        assert!(matches!(answer(401, auth), Err(ProviderError::Rejected(m)) if m.contains("Authorization required")));
        assert!(matches!(answer(200, Value::Null), Err(ProviderError::Rejected(m)) if m.contains("unreadable")));
    }

    #[test]
    fn transfers_to_wallets_name_the_network_and_the_233_number() {
        let req = TransferRequest {
            reference: "w-1",
            amount: 1250,
            currency: "GHS",
            account_name: "Ama Mensah",
            account_number: "0241234567",
            bank_code: "MTN",
            bank_name: "MTN Mobile Money",
            reason: "Tessera withdrawal",
        };
        assert_eq!(
            transfer_body(&req),
            json!({"account_bank": "MTN", "account_number": "233241234567", "amount": 12.5, "currency": "GHS",
                   "beneficiary_name": "Ama Mensah", "narration": "Tessera withdrawal", "reference": "w-1",
                   "debit_currency": "GHS"})
        );
        let bank = TransferRequest { bank_code: "GH280100", account_number: "0011223344", ..req.clone() };
        assert_eq!(transfer_body(&bank)["account_bank"], "GH280100");
        assert_eq!(transfer_body(&bank)["account_number"], "0011223344");
        let failed = json!({"id": 9, "reference": "w-1", "status": "FAILED", "amount": 12.5, "currency": "GHS",
                            "complete_message": "Insufficient funds"});
        let s = transfer_state(&failed, None).expect("state");
        assert_eq!((s.status, s.amount, s.reason.as_deref()), (RemoteStatus::Failed, 1250, Some("Insufficient funds")));
    }

    #[test]
    fn callbacks_authenticate_by_hash_or_base64_signature() {
        let body = br#"{"event":"charge.completed","data":{"id":1,"tx_ref":"tsr_1","status":"successful"}}"#;
        let c = creds(Some("my-hash"));
        let check = |name: &str, value: &str, creds: &Credentials| {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(
                reqwest::header::HeaderName::from_bytes(name.as_bytes()).expect("name"),
                value.parse().expect("value"),
            );
            let auth = CallbackAuth { headers: &headers, body, token: None };
            (Flutterwave.carries_authentication(&auth), Flutterwave.authenticate(creds, &auth))
        };
        assert_eq!(check("verif-hash", "my-hash", &c), (true, true));
        assert_eq!(check("verif-hash", "my-hasH", &c), (true, false));
        assert_eq!(check("verif-hash", "my-hash", &creds(None)), (true, false));
        let sig = sign_base64(b"my-hash", body);
        assert_eq!(check("flutterwave-signature", &sig, &c), (true, true));
        assert_eq!(check("flutterwave-signature", &sign_base64(b"other", body), &c), (true, false));
        assert_eq!(check("x-other", "my-hash", &c), (false, false));
        let d61 = wire::sign_hmac_hex::<sha2::Sha256>(b"FLWSECK_TEST-1", body);
        assert!(Flutterwave.verify_signature(b"FLWSECK_TEST-1", body, &d61));
        assert!(!Flutterwave.verify_signature(b"FLWSECK_TEST-2", body, &d61));
    }

    #[test]
    fn webhook_bodies_new_and_legacy_name_what_they_are_about() {
        let e =
            parse(br#"{"event":"charge.completed","data":{"id":285959875,"tx_ref":"tsr_1","status":"successful"}}"#)
                .expect("charge");
        assert_eq!((e.kind, e.reference.as_str()), (CallbackKind::Charge, "tsr_1"));
        assert_eq!(e.event_key(), "charge.completed:id:285959875");
        let legacy = parse(br#"{"id":285959875,"txRef":"tsr_1","flwRef":"FLW-MOCK","status":"successful","event.type":"CARD_TRANSACTION"}"#)
            .expect("legacy");
        assert_eq!((legacy.kind, legacy.reference.as_str()), (CallbackKind::Charge, "tsr_1"));
        assert_eq!(legacy.event_key(), e.event_key(), "the same charge's report is one event in both shapes");
        let t = parse(br#"{"event":"transfer.completed","event.type":"Transfer","data":{"id":7,"reference":"w-1","status":"FAILED"}}"#)
            .expect("transfer");
        assert_eq!((t.kind, t.reference.as_str()), (CallbackKind::Transfer, "w-1"));
        let r = parse(br#"{"event":"refund.completed","data":{"id":75923,"tx_ref":"tsr_1","status":"completed"}}"#)
            .expect("refund");
        assert_eq!((r.kind, r.reference.as_str()), (CallbackKind::Refund, "tsr_1"));
        let other = parse(br#"{"event":"subscription.cancelled","data":{"id":1}}"#).expect("other");
        assert_eq!(other.kind, CallbackKind::Other);
        assert!(parse(br#"{"event":"charge.completed","data":{"id":1}}"#).is_err());
        assert!(parse(br#"{"status":"successful"}"#).is_err());
        assert!(parse(b"<html>").is_err());
    }

    #[test]
    fn listing_dates_are_utc_days() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(1_796_601_600_000 + 86_399_999), "2026-12-07");
    }

    #[test]
    fn refund_objects_are_read_in_decimal_ghs() {
        let facts = ChargeFacts { provider_charge_id: Some("1"), ..ChargeFacts::default() };
        assert_eq!(Flutterwave.refund_refusal(&facts), None);
        let d = json!({"id": 75923, "tx_id": 908790, "amount_refunded": 69, "status": "completed"});
        let meta: [String; 0] = [];
        let req = RefundRequest {
            refund_id: "r-1",
            transaction_reference: "tsr_1",
            amount: 6900,
            currency: "GHS",
            reason: None,
            charge: facts,
            filed_at: 0,
            provider_refund_id: None,
            taken: &meta,
        };
        let s = refund_state(&d, &req).expect("state");
        assert_eq!((s.status, s.amount, s.provider_id.as_deref()), (RemoteStatus::Success, 6900, Some("75923")));
    }
}

//! `provider_c` speaks Hubtel (D18.3, D18.5, D18.45): Basic auth `apiId:secretKey`, decimal GHS,
//! five hosts (checkout, receive money, status check, send money, send-money status) that a
//! configured `baseUrl` replaces all at once (sandbox, tests).
//!
//! - Checkout: `POST /items/initiate` → `data.checkoutUrl` when `responseCode` is `0000`.
//! - Push (USSD votes): `POST /merchantaccount/merchants/{posSalesId}/receive/mobilemoney` →
//!   `ResponseCode` `0001` (pending; `0000` is as good).
//! - Verify: `GET /transactions/{posSalesId}/status?clientReference=` → `data.status` `Paid`,
//!   `Unpaid`, `Refunded`…; `data.paymentMethod` says card or mobile money.
//! - Send money (refunds of mobile-money payments, withdrawals):
//!   `POST /api/merchants/{prepaidDepositId}/send/mobilemoney` or `…/send/bank/gh/{bankCode}`;
//!   status `GET /api/merchants/{prepaidDepositId}/transactions/status?clientReference=`.
//!
//! Hubtel signs nothing: its callbacks come to the tokened path Tessera gives it
//! (`/api/white-label/webhooks/provider_c/{callbackToken}`) and only trigger the status check.
//! Hubtel references are letters and digits: a payment's reference loses its `_`, a refund's or a
//! withdrawal's id its dashes ([`to_hubtel`]); answers and callbacks are mapped back
//! ([`from_hubtel`]).
use reqwest::Method;
use secrecy::ExposeSecret;
use serde_json::{json, Map, Value};
use subtle::ConstantTimeEq;

use super::wire::{self, seg, Answer, Auth};
use super::*;
use crate::domain::ussd::Network;

/// Hubtel's hosts (D18.3).
const CHECKOUT: &str = "https://payproxyapi.hubtel.com";
const RECEIVE: &str = "https://rmp.hubtel.com";
const STATUS: &str = "https://api-txnstatus.hubtel.com";
const SEND: &str = "https://smp.hubtel.com";
const SEND_STATUS: &str = "https://smrsc.hubtel.com";

/// The Hubtel adapter of `provider_c`.
pub struct Hubtel;

/// A Tessera reference or id as Hubtel takes it (letters and digits): `tsr_x…` → `tsrx…`, a
/// UUID without its dashes.
pub fn to_hubtel(reference: &str) -> String {
    reference.chars().filter(char::is_ascii_alphanumeric).collect()
}

/// A reference as Hubtel gives it back, as Tessera's: 32 hex digits → the UUID, `tsr…` →
/// `tsr_…`; anything else as it is.
pub fn from_hubtel(reference: &str) -> String {
    let r = reference.trim();
    if r.len() == 32 && r.bytes().all(|b| b.is_ascii_hexdigit()) {
        return format!("{}-{}-{}-{}-{}", &r[..8], &r[8..12], &r[12..16], &r[16..20], &r[20..]).to_ascii_lowercase();
    }
    match r.strip_prefix("tsr") {
        Some(rest) if !rest.is_empty() && !rest.starts_with('_') => format!("tsr_{rest}"),
        _ => r.to_string(),
    }
}

/// A phone number as Hubtel takes it, `233…` (a local `0…` number is taken as Ghana's).
fn msisdn(phone: &str) -> String {
    let digits: String = phone.chars().filter(char::is_ascii_digit).collect();
    match digits.strip_prefix('0') {
        Some(rest) if rest.len() == 9 => format!("233{rest}"),
        _ => digits,
    }
}

/// Hubtel's mobile-money channel of a network.
fn channel(network: Network) -> &'static str {
    match network {
        Network::Mtn => "mtn-gh",
        Network::Vodafone => "vodafone-gh",
        Network::AirtelTigo => "tigo-gh",
    }
}

/// The network of a number: the one Tessera noted (`mtn`, `vod`, `atl`, or a wire's name), else
/// the number's prefix.
fn network_of(noted: Option<&str>, number: &str) -> Option<Network> {
    noted.and_then(Network::from_gateway).or_else(|| Network::from_msisdn(number))
}

/// The host of one of Hubtel's APIs: `baseUrl` when configured, else Hubtel's own.
fn host<'a>(creds: &'a Credentials, own: &'a str) -> &'a str {
    let base = creds.base_url.trim_end_matches('/');
    if base.is_empty() {
        own
    } else {
        base
    }
}

fn need<'a>(v: &'a Option<String>, what: &str) -> ProviderResult<&'a str> {
    v.as_deref()
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| ProviderError::Rejected(format!("no {what} configured")))
}

/// The URL Hubtel calls back: Tessera's tokened callback path (D18.3).
fn callback_url(creds: &Credentials) -> ProviderResult<String> {
    let public = need(&creds.extra.public_url, "http.public_url")?;
    let token = creds.extra.callback_token.as_ref().map(|t| t.expose_secret().to_string()).unwrap_or_default();
    if token.is_empty() {
        return Err(ProviderError::Rejected("no callbackToken configured".into()));
    }
    Ok(format!("{}/api/white-label/webhooks/provider_c/{}", public.trim_end_matches('/'), seg(&token)))
}

/// Where the customer returns after the checkout (D18.45): the request's callback URL, else
/// Tessera's `/pay/done` page; the cancellation URL adds `cancelled=1`.
fn return_urls(creds: &Credentials, req: &ChargeRequest<'_>) -> ProviderResult<(String, String)> {
    let back = match req.callback_url.filter(|u| !u.trim().is_empty()) {
        Some(u) => u.to_string(),
        None => {
            let public = need(&creds.extra.public_url, "http.public_url")?;
            format!("{}/pay/done?reference={}", public.trim_end_matches('/'), seg(req.reference))
        }
    };
    let cancel = format!("{back}{}cancelled=1", if back.contains('?') { '&' } else { '?' });
    Ok((back, cancel))
}

async fn call(
    http: &Outbound,
    creds: &Credentials,
    url: &str,
    method: Method,
    body: Option<&Value>,
) -> ProviderResult<Answer> {
    let api_id = need(&creds.extra.api_id, "apiId")?;
    let auth = Auth::Basic(api_id, creds.secret_key.expose_secret());
    wire::call_url(http, url, creds.account_supplied, auth, method, body).await
}

/// A member by either casing Hubtel uses (`Data` / `data`, `ResponseCode` / `responseCode`).
fn at<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    let mut lower = key.to_string();
    if let Some(first) = lower.get_mut(..1) {
        first.make_ascii_lowercase();
    }
    v.get(key).or_else(|| v.get(&lower)).filter(|x| !x.is_null())
}

/// A decimal GHS amount by either casing (`Amount` / `amount`), as pesewas.
fn amount(v: &Value, key: &str) -> Option<i64> {
    at(v, key).and_then(wire::pesewas_in)
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    at(v, key).and_then(Value::as_str)
}

fn code(v: &Value) -> Option<&str> {
    text(v, "ResponseCode")
}

/// The answer's own words: `Message`, else `Data.Description`.
fn message(v: &Value) -> Option<&str> {
    text(v, "Message").or_else(|| at(v, "Data").and_then(|d| text(d, "Description")))
}

/// A refusal naming Hubtel's code and words.
fn refused(a: &Answer) -> ProviderError {
    match (code(&a.body), message(&a.body)) {
        (Some(c), Some(m)) => wire::rejected(a, Some(&format!("{c} {m}"))),
        (Some(c), None) => wire::rejected(a, Some(c)),
        (None, m) => wire::rejected(a, m),
    }
}

/// The body of a new checkout (D18.3).
fn checkout_body(creds: &Credentials, req: &ChargeRequest<'_>) -> ProviderResult<Value> {
    let (back, cancel) = return_urls(creds, req)?;
    let mut body = Map::new();
    body.insert("totalAmount".into(), wire::ghs(req.amount));
    body.insert("description".into(), req.description.unwrap_or("Payment").into());
    body.insert("callbackUrl".into(), callback_url(creds)?.into());
    body.insert("returnUrl".into(), back.into());
    body.insert("cancellationUrl".into(), cancel.into());
    body.insert("merchantAccountNumber".into(), need(&creds.extra.pos_sales_id, "posSalesId")?.into());
    body.insert("clientReference".into(), to_hubtel(req.reference).into());
    if let Some(name) = req.name.filter(|n| !n.is_empty()) {
        body.insert("PayeeName".into(), name.into());
    }
    if let Some(phone) = req.phone.filter(|p| !p.is_empty()) {
        body.insert("PayeeMobileNumber".into(), msisdn(phone).into());
    }
    if !req.email.is_empty() {
        body.insert("PayeeEmail".into(), req.email.into());
    }
    Ok(Value::Object(body))
}

/// The body of a receive-money prompt (USSD votes).
fn receive_body(creds: &Credentials, req: &MobileMoneyCharge<'_>) -> ProviderResult<Value> {
    let number = msisdn(req.msisdn);
    let network = network_of(Some(req.network), &number).unwrap_or(Network::Mtn);
    Ok(json!({
        "CustomerName": req.name.filter(|n| !n.is_empty()).unwrap_or(&number),
        "CustomerMsisdn": number,
        "Channel": channel(network),
        "Amount": wire::ghs(req.amount),
        "PrimaryCallbackURL": callback_url(creds)?,
        "Description": req.description.unwrap_or("Payment"),
        "ClientReference": to_hubtel(req.reference),
    }))
}

/// `data.status` of the status check (Hubtel's transaction states).
pub fn charge_status(s: &str) -> RemoteStatus {
    match s.to_ascii_lowercase().as_str() {
        "paid" | "success" | "successful" | "settled" => RemoteStatus::Success,
        "failed" | "cancelled" | "canceled" | "rejected" | "error" | "expired" | "refunded" => RemoteStatus::Failed,
        // Unpaid, Pending, Acknowledged and anything newer stay pending until the hold ends.
        _ => RemoteStatus::Pending,
    }
}

/// `data.paymentMethod` as Tessera's method (`card` or `mobile_money`).
pub fn method(s: &str) -> String {
    let s = s.trim().to_ascii_lowercase();
    if s.contains("mobile") || s == "momo" {
        "mobile_money".into()
    } else if s.contains("card") || s == "visa" || s == "mastercard" {
        "card".into()
    } else {
        s
    }
}

/// A status check's answer as the state of the charge `reference`.
fn charge_state(a: Answer, reference: &str) -> ProviderResult<ChargeState> {
    if a.status == 404 {
        return Err(ProviderError::NotFound);
    }
    if !a.is_success() {
        return Err(refused(&a));
    }
    let Some(data) = at(&a.body, "Data").filter(|d| d.is_object()) else {
        return match code(&a.body) {
            Some("0000") | None if a.body.is_object() => Err(ProviderError::NotFound),
            _ => Err(refused(&a)),
        };
    };
    let status_text = text(data, "Status").ok_or_else(|| wire::unreadable("data.status"))?;
    let status = charge_status(status_text);
    let amount = amount(data, "Amount").ok_or_else(|| wire::unreadable("data.amount"))?;
    Ok(ChargeState {
        reference: text(data, "ClientReference").map(from_hubtel).unwrap_or_else(|| reference.to_string()),
        status,
        amount,
        currency: text(data, "CurrencyCode").unwrap_or("GHS").to_string(),
        provider_id: text(data, "TransactionId").map(str::to_string),
        method: text(data, "PaymentMethod").map(method),
        payer: None,
        reason: (status == RemoteStatus::Failed).then(|| format!("Hubtel status {status_text}")),
    })
}

/// What one send (or its status check) says, Tessera's way.
struct Sent {
    status: RemoteStatus,
    amount: Option<i64>,
    reason: Option<String>,
}

/// A send-money answer: `ResponseCode` `0001` pending, `0000` success, any other code failed
/// with the code in the reason (`2001`, `3050`, `4075`, `5000`…; D18.3). A 5xx never gets here
/// (unreachable, retried).
fn sent(a: &Answer) -> ProviderResult<Sent> {
    let Some(c) = code(&a.body) else {
        return Err(if a.is_success() { wire::unreadable("ResponseCode") } else { refused(a) });
    };
    let data = at(&a.body, "Data");
    let amount = data.and_then(|d| amount(d, "Amount"));
    let status = match c {
        "0001" => RemoteStatus::Pending,
        "0000" => RemoteStatus::Success,
        _ => RemoteStatus::Failed,
    };
    let reason = (status == RemoteStatus::Failed)
        .then(|| format!("Hubtel {c}: {}", message(&a.body).unwrap_or("the send failed")));
    Ok(Sent { status, amount, reason })
}

/// The send-money status check's `Data.transactionStatus`.
pub fn send_status(s: &str) -> RemoteStatus {
    match s.to_ascii_lowercase().as_str() {
        "success" | "successful" | "paid" | "sendok" => RemoteStatus::Success,
        "failed" | "sendfailed" | "rejected" | "error" | "cancelled" => RemoteStatus::Failed,
        _ => RemoteStatus::Pending,
    }
}

/// A send-money status check's answer.
fn send_state(a: &Answer) -> ProviderResult<Sent> {
    if a.status == 404 {
        return Err(ProviderError::NotFound);
    }
    if !a.is_success() {
        return Err(refused(a));
    }
    let Some(data) = at(&a.body, "Data").filter(|d| d.is_object()) else {
        return if a.body.is_object() { Err(ProviderError::NotFound) } else { Err(wire::unreadable("Data")) };
    };
    let s = text(data, "TransactionStatus").ok_or_else(|| wire::unreadable("Data.transactionStatus"))?;
    let status = send_status(s);
    Ok(Sent {
        status,
        amount: amount(data, "Amount"),
        reason: (status == RemoteStatus::Failed).then(|| format!("Hubtel reports the send {s}")),
    })
}

fn prepaid(creds: &Credentials) -> ProviderResult<&str> {
    need(&creds.extra.prepaid_deposit_id, "prepaidDepositId")
}

/// Asks how the send `reference` (a refund or withdrawal id) stands.
async fn check_send(http: &Outbound, creds: &Credentials, reference: &str) -> ProviderResult<Sent> {
    let url = format!(
        "{}/api/merchants/{}/transactions/status?clientReference={}",
        host(creds, SEND_STATUS),
        seg(prepaid(creds)?),
        seg(&to_hubtel(reference))
    );
    send_state(&call(http, creds, &url, Method::GET, None).await?)
}

/// The body of a send to a mobile-money wallet (a refund, a withdrawal).
fn momo_send_body(
    creds: &Credentials,
    number: &str,
    name: Option<&str>,
    network: Network,
    amount: i64,
    description: &str,
    reference: &str,
) -> ProviderResult<Value> {
    Ok(json!({
        "RecipientName": name.filter(|n| !n.trim().is_empty()).unwrap_or(number),
        "RecipientMsisdn": number,
        "Channel": channel(network),
        "Amount": wire::ghs(amount),
        "PrimaryCallbackURL": callback_url(creds)?,
        "Description": description,
        "ClientReference": to_hubtel(reference),
    }))
}

/// POSTs a send, once: the status is asked first, so a send whose answer was lost is adopted
/// rather than made again (Hubtel refuses nothing by ClientReference that Tessera could rely on).
async fn send_once(
    http: &Outbound,
    creds: &Credentials,
    path: &str,
    body: &Value,
    reference: &str,
) -> ProviderResult<Sent> {
    match check_send(http, creds, reference).await {
        Ok(s) => return Ok(s),
        Err(ProviderError::NotFound) => {}
        Err(e) => return Err(e),
    }
    let url = format!("{}/api/merchants/{}{path}", host(creds, SEND), seg(prepaid(creds)?));
    sent(&call(http, creds, &url, Method::POST, Some(body)).await?)
}

/// Reads a Hubtel callback body: `{ResponseCode, Status?, Data: {ClientReference, …}}`.
pub fn read_callback(body: &[u8]) -> Result<ProviderCallback, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let data = at(&v, "Data").filter(|d| d.is_object()).ok_or("no Data object")?;
    let client = text(data, "ClientReference").filter(|s| !s.is_empty()).ok_or("no Data.ClientReference")?;
    let reference = from_hubtel(client);
    let response = code(&v).unwrap_or("");
    let kind = if reference.starts_with("tsr_") {
        CallbackKind::Charge
    } else if crate::domain::is_uuid(&reference) {
        CallbackKind::Send
    } else {
        CallbackKind::Other
    };
    let payer = text(data, "CustomerPhoneNumber")
        .or_else(|| at(data, "PaymentDetails").and_then(|p| text(p, "MobileMoneyNumber")))
        .map(msisdn)
        .filter(|p| !p.is_empty());
    let state = text(data, "Status").or_else(|| text(&v, "Status")).unwrap_or("");
    let event = match kind {
        CallbackKind::Charge => "hubtel.receive",
        CallbackKind::Send => "hubtel.send",
        _ => "hubtel.other",
    };
    // One key per callback whatever its delivery: the reference, the outcome and Hubtel's id.
    let id = text(data, "TransactionId").or_else(|| text(data, "CheckoutId")).unwrap_or("");
    Ok(ProviderCallback {
        kind,
        event: event.to_string(),
        id: Some(format!("{reference}:{response}:{state}:{id}")),
        reference,
        payer,
    })
}

#[async_trait::async_trait]
impl PaymentProvider for Hubtel {
    fn id(&self) -> ProviderId {
        ProviderId::C
    }

    /// None: Hubtel has five hosts, picked per call.
    fn default_base_url(&self) -> &'static str {
        ""
    }

    /// The API id, the POS sales account, the callback token and the public address (D18.3).
    fn configured(&self, creds: &Credentials) -> bool {
        let set = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.trim().is_empty());
        set(&creds.extra.api_id)
            && set(&creds.extra.pos_sales_id)
            && set(&creds.extra.public_url)
            && creds.extra.callback_token.as_ref().is_some_and(|t| !t.expose_secret().trim().is_empty())
    }

    /// Hubtel refunds by sending mobile money back to the payer (D18.3, D18.45).
    fn refund_refusal(&self, charge: &ChargeFacts<'_>) -> Option<String> {
        if charge.method != Some("mobile_money") {
            return Some("Hubtel refunds only mobile-money payments (this one was not paid by mobile money)".into());
        }
        match charge.payer.filter(|p| !p.is_empty()) {
            None => Some("Hubtel refunds by sending money back to the payer, and no paying number is known".into()),
            Some(p) if network_of(charge.network, p).is_none() => {
                Some("the paying number's mobile-money network is not known".into())
            }
            Some(_) => None,
        }
    }

    /// The path token equals `callbackToken` (constant time).
    fn authenticate(&self, creds: &Credentials, callback: &CallbackAuth<'_>) -> bool {
        let (Some(token), Some(expected)) = (callback.token, creds.extra.callback_token.as_ref()) else {
            return false;
        };
        let expected = expected.expose_secret();
        !expected.is_empty() && bool::from(token.as_bytes().ct_eq(expected.as_bytes()))
    }

    fn carries_authentication(&self, callback: &CallbackAuth<'_>) -> bool {
        callback.token.is_some_and(|t| !t.is_empty())
    }

    async fn initialize(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &ChargeRequest<'_>,
    ) -> ProviderResult<ChargeInit> {
        let body = checkout_body(creds, req)?;
        let url = format!("{}/items/initiate", host(creds, CHECKOUT));
        let a = call(http, creds, &url, Method::POST, Some(&body)).await?;
        let data = at(&a.body, "Data");
        let checkout = data.and_then(|d| text(d, "CheckoutUrl"));
        match (a.is_success(), code(&a.body), checkout) {
            (true, Some("0000"), Some(link)) => Ok(ChargeInit {
                authorization_url: link.to_string(),
                access_code: data.and_then(|d| text(d, "CheckoutId")).unwrap_or_default().to_string(),
            }),
            (true, Some("0000"), None) => Err(wire::unreadable("data.checkoutUrl")),
            (true, None, _) => Err(wire::unreadable("responseCode")),
            _ => Err(refused(&a)),
        }
    }

    /// `0001` (pending) or `0000`; any other code is a refusal naming it.
    async fn charge_mobile_money(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &MobileMoneyCharge<'_>,
    ) -> ProviderResult<()> {
        let body = receive_body(creds, req)?;
        let url = format!(
            "{}/merchantaccount/merchants/{}/receive/mobilemoney",
            host(creds, RECEIVE),
            seg(need(&creds.extra.pos_sales_id, "posSalesId")?)
        );
        let a = call(http, creds, &url, Method::POST, Some(&body)).await?;
        match code(&a.body) {
            Some("0001" | "0000") if a.is_success() => Ok(()),
            None if a.is_success() => Err(wire::unreadable("ResponseCode")),
            _ => Err(refused(&a)),
        }
    }

    async fn verify_charge(
        &self,
        http: &Outbound,
        creds: &Credentials,
        reference: &str,
    ) -> ProviderResult<ChargeState> {
        let url = format!(
            "{}/transactions/{}/status?clientReference={}",
            host(creds, STATUS),
            seg(need(&creds.extra.pos_sales_id, "posSalesId")?),
            seg(&to_hubtel(reference))
        );
        charge_state(call(http, creds, &url, Method::GET, None).await?, reference)
    }

    /// Mobile money when the bank code names a network (`MTN`, `VODAFONE`, `AIRTELTIGO`…), else
    /// a bank transfer to `bankCode`.
    async fn create_transfer(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &TransferRequest<'_>,
    ) -> ProviderResult<TransferState> {
        let (path, body) = match Network::from_gateway(req.bank_code) {
            Some(network) => {
                let number = msisdn(req.account_number);
                let body = momo_send_body(
                    creds,
                    &number,
                    Some(req.account_name),
                    network,
                    req.amount,
                    req.reason,
                    req.reference,
                )?;
                ("/send/mobilemoney".to_string(), body)
            }
            None => {
                let body = json!({
                    "Amount": wire::ghs(req.amount),
                    "PrimaryCallbackURL": callback_url(creds)?,
                    "Description": req.reason,
                    "BankAccountNumber": req.account_number,
                    "BankAccountName": req.account_name,
                    "ClientReference": to_hubtel(req.reference),
                });
                (format!("/send/bank/gh/{}", seg(req.bank_code)), body)
            }
        };
        let s = send_once(http, creds, &path, &body, req.reference).await?;
        Ok(TransferState {
            reference: req.reference.to_string(),
            status: s.status,
            amount: s.amount.unwrap_or(req.amount),
            currency: req.currency.to_string(),
            reason: s.reason,
        })
    }

    async fn verify_transfer(
        &self,
        http: &Outbound,
        creds: &Credentials,
        reference: &str,
    ) -> ProviderResult<TransferState> {
        let s = check_send(http, creds, reference).await?;
        let amount = s.amount.ok_or_else(|| wire::unreadable("Data.Amount"))?;
        Ok(TransferState {
            reference: reference.to_string(),
            status: s.status,
            amount,
            currency: "GHS".into(),
            reason: s.reason,
        })
    }

    /// Sends the money back to the paying number (D18.3); the status first, so a send whose
    /// answer was lost is never made twice.
    async fn create_refund(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &RefundRequest<'_>,
    ) -> ProviderResult<RefundState> {
        if let Some(why) = self.refund_refusal(&req.charge) {
            return Err(ProviderError::Rejected(why));
        }
        let number = msisdn(req.charge.payer.unwrap_or_default());
        let network = network_of(req.charge.network, &number).unwrap_or(Network::Mtn);
        let description = req.reason.unwrap_or("Refund");
        let body = momo_send_body(creds, &number, None, network, req.amount, description, req.refund_id)?;
        let s = send_once(http, creds, "/send/mobilemoney", &body, req.refund_id).await?;
        Ok(refund_state(req, s))
    }

    async fn verify_refund(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &RefundRequest<'_>,
    ) -> ProviderResult<RefundState> {
        Ok(refund_state(req, check_send(http, creds, req.refund_id).await?))
    }

    /// D6.1's hex HMAC-SHA256 of the raw body with the secret key (the sandbox signs so, D18.45).
    fn verify_signature(&self, secret: &[u8], body: &[u8], signature: &str) -> bool {
        wire::verify_hmac::<sha2::Sha256>(secret, body, signature)
    }

    fn parse_callback(&self, body: &[u8]) -> Result<ProviderCallback, String> {
        read_callback(body)
    }
}

fn refund_state(req: &RefundRequest<'_>, s: Sent) -> RefundState {
    RefundState {
        refund_id: req.refund_id.to_string(),
        provider_id: Some(to_hubtel(req.refund_id)),
        status: s.status,
        amount: s.amount.unwrap_or(req.amount),
        reason: match s.status {
            RemoteStatus::Failed => s.reason,
            _ => req.reason.map(str::to_string),
        },
    }
}

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use super::*;

    fn creds() -> Credentials {
        Credentials {
            base_url: String::new(),
            secret_key: SecretString::from("key".to_string()),
            account_supplied: false,
            extra: Extra {
                api_id: Some("id".into()),
                pos_sales_id: Some("11684".into()),
                prepaid_deposit_id: Some("11691".into()),
                callback_token: Some(SecretString::from("tok".to_string())),
                public_url: Some("https://t.example".into()),
                ..Extra::default()
            },
        }
    }

    fn answer(status: u16, body: Value) -> Answer {
        Answer { status, body }
    }

    #[test]
    fn references_map_both_ways() {
        assert_eq!(to_hubtel("tsr_01hx2abc"), "tsr01hx2abc");
        assert_eq!(from_hubtel("tsr01hx2abc"), "tsr_01hx2abc");
        let id = "0190f6f2-7c3a-7b1e-8f00-0123456789ab";
        assert_eq!(to_hubtel(id), "0190f6f27c3a7b1e8f000123456789ab");
        assert_eq!(from_hubtel("0190f6f27c3a7b1e8f000123456789ab"), id);
        assert_eq!(from_hubtel("0190F6F27C3A7B1E8F000123456789AB"), id);
        assert_eq!(from_hubtel("Kaks545253"), "Kaks545253");
        assert!(to_hubtel("tsr_0123456789abcdefghjkmnpqrs").len() <= 32);
    }

    #[test]
    fn the_checkout_body_is_hubtels() {
        let meta = json!({});
        let req = ChargeRequest {
            reference: "tsr_abc",
            amount: 15050,
            currency: "GHS",
            email: "a@b.example",
            name: None,
            phone: Some("0241234567"),
            description: Some("Gala"),
            callback_url: None,
            method: None,
            network: None,
            metadata: &meta,
        };
        let b = checkout_body(&creds(), &req).expect("body");
        assert_eq!(b["totalAmount"].to_string(), "150.5");
        assert_eq!(b["clientReference"], "tsrabc");
        assert_eq!(b["merchantAccountNumber"], "11684");
        assert_eq!(b["callbackUrl"], "https://t.example/api/white-label/webhooks/provider_c/tok");
        assert_eq!(b["returnUrl"], "https://t.example/pay/done?reference=tsr_abc");
        assert_eq!(b["cancellationUrl"], "https://t.example/pay/done?reference=tsr_abc&cancelled=1");
        assert_eq!(b["PayeeMobileNumber"], "233241234567");
        let shop = ChargeRequest { callback_url: Some("https://shop.example/back"), ..req };
        let b = checkout_body(&creds(), &shop).expect("body");
        assert_eq!(b["returnUrl"], "https://shop.example/back");
        assert_eq!(b["cancellationUrl"], "https://shop.example/back?cancelled=1");
    }

    #[test]
    fn the_receive_money_body_names_the_channel() {
        let meta = json!({});
        let req = MobileMoneyCharge {
            reference: "tsr_v1",
            amount: 200,
            currency: "GHS",
            email: "x@ussd.invalid",
            msisdn: "233201234567",
            network: "vod",
            name: None,
            description: Some("2 votes"),
            metadata: &meta,
        };
        let b = receive_body(&creds(), &req).expect("body");
        assert_eq!(
            b,
            json!({
                "CustomerName": "233201234567",
                "CustomerMsisdn": "233201234567",
                "Channel": "vodafone-gh",
                "Amount": 2,
                "PrimaryCallbackURL": "https://t.example/api/white-label/webhooks/provider_c/tok",
                "Description": "2 votes",
                "ClientReference": "tsrv1",
            })
        );
    }

    #[test]
    fn status_checks_map_to_three_outcomes() {
        let paid = json!({"message": "Successful", "responseCode": "0000", "data": {"status": "Paid",
            "transactionId": "7fd0", "paymentMethod": "mobilemoney", "clientReference": "tsrabc",
            "currencyCode": null, "amount": 150.5, "charges": 0.02}});
        let s = charge_state(answer(200, paid), "tsr_abc").expect("state");
        assert_eq!((s.status, s.amount, s.reference.as_str()), (RemoteStatus::Success, 15050, "tsr_abc"));
        assert_eq!((s.method.as_deref(), s.currency.as_str()), (Some("mobile_money"), "GHS"));
        assert_eq!(charge_status("Unpaid"), RemoteStatus::Pending);
        assert_eq!(charge_status("Refunded"), RemoteStatus::Failed);
        assert_eq!(method("card"), "card");
        assert_eq!(charge_state(answer(404, Value::Null), "tsr_a"), Err(ProviderError::NotFound));
        assert!(matches!(charge_state(answer(200, json!("nope")), "tsr_a"), Err(ProviderError::Rejected(_))));
        let no_amount = json!({"responseCode": "0000", "data": {"status": "Paid"}});
        assert!(matches!(charge_state(answer(200, no_amount), "tsr_a"), Err(ProviderError::Rejected(_))));
    }

    #[test]
    fn send_status_answers_read_in_either_casing() {
        let pascal = json!({"ResponseCode": "success", "Data": {"TransactionStatus": "success", "Amount": 12.5}});
        let camel = json!({"responseCode": "success", "data": {"transactionStatus": "failed", "amount": "12.50"}});
        let a = send_state(&answer(200, pascal)).expect("pascal");
        assert_eq!((a.status, a.amount), (RemoteStatus::Success, Some(1250)));
        let b = send_state(&answer(200, camel)).expect("camel");
        assert_eq!((b.status, b.amount), (RemoteStatus::Failed, Some(1250)));
        let c = sent(&answer(200, json!({"responseCode": "0001", "data": {"amount": 0.8}}))).expect("camel send");
        assert_eq!((c.status, c.amount), (RemoteStatus::Pending, Some(80)));
    }

    #[test]
    fn send_codes_map_and_failures_name_the_code() {
        let pending = sent(&answer(200, json!({"ResponseCode": "0001", "Data": {"Amount": 0.8}}))).expect("sent");
        assert_eq!((pending.status, pending.amount), (RemoteStatus::Pending, Some(80)));
        assert_eq!(
            sent(&answer(200, json!({"ResponseCode": "0000", "Data": {}}))).expect("ok").status,
            RemoteStatus::Success
        );
        for c in ["2001", "3050", "4075", "5000"] {
            let s = sent(&answer(400, json!({"ResponseCode": c, "Data": {"Description": "no"}}))).expect("failed");
            assert_eq!(s.status, RemoteStatus::Failed);
            assert!(s.reason.as_deref().is_some_and(|r| r.contains(c)), "{c}");
        }
        assert!(sent(&answer(200, json!({}))).is_err());
        assert_eq!(send_status("success"), RemoteStatus::Success);
        assert_eq!(send_status("failed"), RemoteStatus::Failed);
        assert_eq!(send_status("pending"), RemoteStatus::Pending);
    }

    #[test]
    fn callbacks_name_their_reference_kind_and_payer() {
        let checkout = br#"{"ResponseCode":"0000","Status":"Success","Data":{"CheckoutId":"59e2","ClientReference":"tsrabc","Status":"Success","Amount":0.5,"CustomerPhoneNumber":"233242825109","PaymentDetails":{"MobileMoneyNumber":"233242825109","PaymentType":"mobilemoney","Channel":"mtn-gh"}}}"#;
        let c = read_callback(checkout).expect("callback");
        assert_eq!(
            (c.kind, c.reference.as_str(), c.payer.as_deref()),
            (CallbackKind::Charge, "tsr_abc", Some("233242825109"))
        );
        assert_eq!(read_callback(checkout).expect("again").event_key(), c.event_key());
        let send = br#"{"ResponseCode":"4075","Data":{"ClientReference":"0190f6f27c3a7b1e8f000123456789ab","TransactionId":"08f8"}}"#;
        let s = read_callback(send).expect("send");
        assert_eq!((s.kind, s.reference.as_str()), (CallbackKind::Send, "0190f6f2-7c3a-7b1e-8f00-0123456789ab"));
        assert!(read_callback(b"{}").is_err());
        assert!(read_callback(b"nope").is_err());
    }

    #[test]
    fn refunds_need_mobile_money_and_a_payer() {
        let momo = ChargeFacts { method: Some("mobile_money"), payer: Some("233241234567"), ..ChargeFacts::default() };
        assert_eq!(Hubtel.refund_refusal(&momo), None);
        assert!(Hubtel.refund_refusal(&ChargeFacts { method: Some("card"), ..momo }).is_some());
        assert!(Hubtel.refund_refusal(&ChargeFacts { payer: None, ..momo }).is_some());
    }

    #[test]
    fn configured_needs_the_ids_token_and_public_url() {
        assert!(Hubtel.configured(&creds()));
        let mut c = creds();
        c.extra.public_url = None;
        assert!(!Hubtel.configured(&c));
        let auth = CallbackAuth { headers: &reqwest::header::HeaderMap::new(), body: b"{}", token: Some("tok") };
        assert!(Hubtel.authenticate(&creds(), &auth));
        assert!(!Hubtel.authenticate(&creds(), &CallbackAuth { token: Some("bad"), ..auth }));
        assert!(!Hubtel.authenticate(&creds(), &CallbackAuth { token: None, ..auth }));
    }
}

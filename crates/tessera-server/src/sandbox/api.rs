//! Paystack's API under `/provider_a` (D11.1, D11.3) and the SMS gateway under `/sms` (D13.3);
//! Flutterwave's and Hubtel's wires are [`super::flutterwave`] and [`super::hubtel`]. Any
//! non-empty Bearer secret is an account: what it creates only it can see.
//!
//! Mobile-money charges (D17.21, D17.23) are Paystack's `POST /charge`; they wait, as card
//! charges do, until the control API settles them. Every charge-creating call counts in its
//! charge's `prompts` (a refused duplicate too) and waits the faults' `chargeDelayMs` before
//! answering.
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use super::{bearer, now_rfc3339, random_token, Channel, Charge, Outcome, Shared, Transfer};
use crate::providers::payments::ProviderId;

type Obj = Map<String, Value>;

pub(super) fn object(body: &Bytes) -> Option<Obj> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

pub(super) fn text<'a>(o: &'a Obj, k: &str) -> Option<&'a str> {
    o.get(k).and_then(Value::as_str).filter(|s| !s.is_empty())
}

pub(super) fn pesewas(o: &Obj, k: &str) -> Option<i64> {
    o.get(k).and_then(Value::as_i64).filter(|n| *n > 0)
}

// ---------------------------------------------------------------- Paystack (provider_a)

pub(super) fn ps_error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"status": false, "message": message}))).into_response()
}

pub(super) fn ps_ok(message: &str, data: Value) -> Response {
    Json(json!({"status": true, "message": message, "data": data})).into_response()
}

/// The Bearer secret, after the outage and auth checks every Paystack route makes.
pub(super) fn ps_guard(shared: &Shared, headers: &HeaderMap) -> Result<String, Box<Response>> {
    if shared.is_down(ProviderId::A.as_str()) {
        return Err(Box::new(ps_error(StatusCode::SERVICE_UNAVAILABLE, "Service unavailable (sandbox outage)")));
    }
    bearer(headers).ok_or_else(|| Box::new(ps_error(StatusCode::UNAUTHORIZED, "Invalid key")))
}

/// Paystack reports an unpaid charge as `abandoned`, a mobile-money one waiting for the
/// handset's approval as `pay_offline`.
fn ps_charge_status(c: &Charge) -> &'static str {
    match c.status {
        Outcome::Pending if c.channel == Channel::MobileMoney => "pay_offline",
        Outcome::Pending => "abandoned",
        Outcome::Success => "success",
        Outcome::Failed => "failed",
    }
}

fn ps_charge(c: &Charge) -> Value {
    json!({
        "id": c.wire_id(),
        "domain": "test",
        "status": ps_charge_status(c),
        "reference": c.reference,
        "amount": c.amount,
        "currency": c.currency,
        "gateway_response": match c.status {
            Outcome::Pending => "The transaction was not completed",
            Outcome::Success => "Successful",
            Outcome::Failed => "Declined",
        },
        "paid_at": c.paid_at,
        "created_at": c.created_at,
        "channel": c.channel.as_str(),
        "fees": c.fees(),
        "metadata": c.metadata,
        "customer": {"email": c.email},
    })
}

fn ps_transfer(t: &Transfer) -> Value {
    json!({
        "id": t.wire_id(),
        "domain": "test",
        "reference": t.reference,
        "amount": t.amount,
        "currency": t.currency,
        "source": "balance",
        "reason": t.reason,
        "status": t.status.as_str(),
        "transfer_code": t.transfer_code,
        "recipient": t.recipient,
        "gateway_response": t.failure_reason,
        "failure_reason": t.failure_reason,
        "createdAt": t.created_at,
        "transferred_at": t.completed_at,
    })
}

pub(super) fn paystack_routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/provider_a/transaction/initialize", post(ps_initialize))
        .route("/provider_a/transaction/verify/{reference}", get(ps_verify))
        .route("/provider_a/charge", post(ps_charge_mobile_money))
        .route("/provider_a/transferrecipient", post(ps_recipient))
        .route("/provider_a/transfer", post(ps_transfer_create))
        .route("/provider_a/transfer/verify/{reference}", get(ps_transfer_verify))
        .with_state(shared)
}

/// What a Paystack charge-creating call (`/transaction/initialize`, `/charge`) asks for, after
/// the outage and auth checks: its body and the pending charge it describes.
fn ps_charge_asked(shared: &Shared, headers: &HeaderMap, body: &Bytes) -> Result<(Obj, Charge), Box<Response>> {
    let secret = ps_guard(shared, headers)?;
    let bad = |m: &str| Box::new(ps_error(StatusCode::BAD_REQUEST, m));
    let o = object(body).ok_or_else(|| bad("Invalid JSON body"))?;
    let email = text(&o, "email").ok_or_else(|| bad("Email is required"))?;
    let amount =
        pesewas(&o, "amount").ok_or_else(|| bad("Invalid amount: a positive whole number of pesewas is required"))?;
    let reference = text(&o, "reference").map(str::to_string).unwrap_or_else(|| format!("T{}", random_token(15)));
    let currency = text(&o, "currency").unwrap_or("GHS");
    let metadata = o.get("metadata").cloned().unwrap_or(Value::Null);
    let c = Charge::pending(ProviderId::A, secret, &reference, amount, currency, email, metadata);
    Ok((o, c))
}

async fn ps_initialize(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let (o, mut c) = match ps_charge_asked(&shared, &headers, &body) {
        Ok(asked) => asked,
        Err(r) => return *r,
    };
    c.callback_url = text(&o, "callback_url").map(str::to_string);
    let charge = shared.open_charge(c);
    shared.charge_delay().await;
    let Some(charge) = charge else {
        return ps_error(StatusCode::BAD_REQUEST, "Duplicate Transaction Reference");
    };
    ps_ok(
        "Authorization URL created",
        json!({
            "authorization_url": charge.checkout_url(&shared.base_url),
            "access_code": charge.access_code,
            "reference": charge.reference,
        }),
    )
}

/// Paystack's mobile-money operators (`tgo` is AirtelTigo's older name).
fn ps_network(provider: &str) -> Option<&'static str> {
    match provider.to_ascii_lowercase().as_str() {
        "mtn" => Some("mtn"),
        "vod" => Some("vod"),
        "atl" | "tgo" => Some("atl"),
        _ => None,
    }
}

/// `POST /provider_a/charge` with `mobile_money {phone, provider}`: the prompt goes to the
/// handset and the charge waits (`pay_offline`) until the control API settles it.
async fn ps_charge_mobile_money(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let (o, mut c) = match ps_charge_asked(&shared, &headers, &body) {
        Ok(asked) => asked,
        Err(r) => return *r,
    };
    let Some(momo) = o.get("mobile_money").and_then(Value::as_object) else {
        return ps_error(StatusCode::BAD_REQUEST, "Please provide a valid payment channel: mobile_money is required");
    };
    let Some(phone) = text(momo, "phone").filter(|p| p.len() >= 9 && p.chars().all(|c| c.is_ascii_digit() || c == '+'))
    else {
        return ps_error(StatusCode::BAD_REQUEST, "mobile_money.phone is required");
    };
    let Some(network) = text(momo, "provider").and_then(ps_network) else {
        return ps_error(StatusCode::BAD_REQUEST, "mobile_money.provider must be one of mtn, vod, atl");
    };
    let reference = c.reference.clone();
    c.channel = Channel::MobileMoney;
    c.phone = Some(phone.to_string());
    c.network = Some(network.to_string());
    let created = shared.open_charge(c).is_some();
    shared.charge_delay().await;
    if !created {
        return ps_error(StatusCode::BAD_REQUEST, "Duplicate Transaction Reference");
    }
    ps_ok(
        "Charge attempted",
        json!({
            "reference": reference,
            "status": "pay_offline",
            "display_text": "Please complete authorization process on your mobile phone",
        }),
    )
}

async fn ps_verify(State(shared): State<Arc<Shared>>, headers: HeaderMap, Path(reference): Path<String>) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = shared.db();
    match db.charges.get(&reference).filter(|c| c.provider == ProviderId::A && c.secret == secret) {
        Some(c) => ps_ok("Verification successful", ps_charge(c)),
        None => ps_error(StatusCode::BAD_REQUEST, "Transaction reference not found"),
    }
}

async fn ps_recipient(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return ps_error(StatusCode::BAD_REQUEST, "Invalid JSON body") };
    for k in ["type", "name", "account_number", "bank_code"] {
        if text(&o, k).is_none() {
            return ps_error(StatusCode::BAD_REQUEST, &format!("{k} is required"));
        }
    }
    if !matches!(text(&o, "type"), Some("mobile_money" | "ghipss" | "nuban" | "basa")) {
        return ps_error(StatusCode::BAD_REQUEST, "Invalid recipient type");
    }
    let code = format!("RCP_{}", random_token(15));
    let details = json!({
        "type": text(&o, "type"),
        "name": text(&o, "name"),
        "recipient_code": code,
        "currency": text(&o, "currency").unwrap_or("GHS"),
        "details": {
            "account_number": text(&o, "account_number"),
            "bank_code": text(&o, "bank_code"),
            "account_name": text(&o, "name"),
        },
    });
    shared.db().recipients.insert(code, (secret, details.clone()));
    (
        StatusCode::CREATED,
        Json(json!({"status": true, "message": "Transfer recipient created successfully", "data": details})),
    )
        .into_response()
}

async fn ps_transfer_create(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return ps_error(StatusCode::BAD_REQUEST, "Invalid JSON body") };
    if text(&o, "source") != Some("balance") {
        return ps_error(StatusCode::BAD_REQUEST, "Source must be balance");
    }
    let Some(amount) = pesewas(&o, "amount") else { return ps_error(StatusCode::BAD_REQUEST, "Invalid amount") };
    let Some(code) = text(&o, "recipient") else { return ps_error(StatusCode::BAD_REQUEST, "Recipient is required") };
    let reference = text(&o, "reference").map(str::to_string).unwrap_or_else(|| random_token(20));
    let mut db = shared.db();
    let recipient = match db.recipients.get(code) {
        Some((owner, details)) if *owner == secret => details.clone(),
        _ => return ps_error(StatusCode::BAD_REQUEST, "Recipient specified is invalid"),
    };
    if db.transfers.contains_key(&reference) {
        return ps_error(StatusCode::BAD_REQUEST, "Duplicate Transfer Reference");
    }
    let id = db.next_id();
    let t = Transfer {
        id,
        provider: ProviderId::A,
        secret,
        reference: reference.clone(),
        amount,
        currency: text(&o, "currency").unwrap_or("GHS").to_string(),
        reason: text(&o, "reason").unwrap_or_default().to_string(),
        recipient,
        transfer_code: format!("TRF_{}", random_token(15)),
        status: Outcome::Pending,
        failure_reason: None,
        created_at: now_rfc3339(),
        completed_at: None,
        notify_url: None,
    };
    let data = ps_transfer(&t);
    db.transfers.insert(reference, t);
    ps_ok("Transfer has been queued", data)
}

async fn ps_transfer_verify(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(reference): Path<String>,
) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = shared.db();
    match db.transfers.get(&reference).filter(|t| t.provider == ProviderId::A && t.secret == secret) {
        Some(t) => ps_ok("Transfer retrieved", ps_transfer(t)),
        None => ps_error(StatusCode::NOT_FOUND, "Transfer not found"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use secrecy::SecretString;

    use crate::providers::outbound::Outbound;
    use crate::providers::payments::{adapter, Credentials, MobileMoneyCharge, ProviderError};
    use crate::sandbox::{Faults, Sandbox, SandboxHandle, SandboxOptions};

    use super::*;

    async fn sandbox() -> SandboxHandle {
        Sandbox::start(SandboxOptions {
            listen: "127.0.0.1:0".parse().expect("addr"),
            smtp_listen: None,
            notify_url: None,
        })
        .await
        .expect("sandbox")
    }

    async fn call(method: reqwest::Method, url: &str, body: Option<Value>) -> (u16, Value) {
        let mut r = reqwest::Client::new().request(method, url).bearer_auth("sk_test_momo");
        if let Some(b) = body {
            r = r.json(&b);
        }
        let r = r.send().await.expect("send");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    fn momo_paystack(reference: &str) -> Value {
        json!({"email": "233241234567@ussd.invalid", "amount": 875, "currency": "GHS", "reference": reference,
               "mobile_money": {"phone": "0241234567", "provider": "vod"}, "metadata": {"channel": "ussd"}})
    }

    #[tokio::test]
    async fn paystack_mobile_money_charges_wait_offline_and_count_duplicate_prompts() {
        let sb = sandbox().await;
        let a = sb.provider_url("provider_a");
        let (st, b) = call(reqwest::Method::POST, &format!("{a}/charge"), Some(momo_paystack("U-1"))).await;
        assert_eq!(st, 200, "{b}");
        assert_eq!((b["status"].as_bool(), b["message"].as_str()), (Some(true), Some("Charge attempted")));
        assert_eq!((b["data"]["reference"].as_str(), b["data"]["status"].as_str()), (Some("U-1"), Some("pay_offline")));
        assert!(b["data"]["display_text"].as_str().is_some_and(|t| !t.is_empty()));

        let (st, b) = call(reqwest::Method::POST, &format!("{a}/charge"), Some(momo_paystack("U-1"))).await;
        assert_eq!(st, 400);
        assert_eq!(
            (b["status"].as_bool(), b["message"].as_str()),
            (Some(false), Some("Duplicate Transaction Reference"))
        );

        let rec = sb.charge("U-1").expect("record");
        assert_eq!(rec["channel"], "mobile_money");
        assert_eq!((rec["phone"].as_str(), rec["network"].as_str()), (Some("0241234567"), Some("vod")));
        assert_eq!((rec["prompts"].as_u64(), rec["status"].as_str()), (Some(2), Some("pending")));

        let (_, v) = call(reqwest::Method::GET, &format!("{a}/transaction/verify/U-1"), None).await;
        assert_eq!(
            (v["data"]["status"].as_str(), v["data"]["channel"].as_str()),
            (Some("pay_offline"), Some("mobile_money"))
        );

        // The settle route works on it as on a card charge.
        let base = sb.base_url().to_string();
        let (st, rec) = call(reqwest::Method::POST, &format!("{base}/sandbox/charges/U-1/succeed"), None).await;
        assert_eq!((st, rec["status"].as_str()), (200, Some("success")));
        let (_, v) = call(reqwest::Method::GET, &format!("{a}/transaction/verify/U-1"), None).await;
        assert_eq!(v["data"]["status"], "success");

        let bad = json!({"email": "x@ussd.invalid", "amount": 100, "reference": "U-2",
                         "mobile_money": {"phone": "0241234567", "provider": "xyz"}});
        let (st, _) = call(reqwest::Method::POST, &format!("{a}/charge"), Some(bad)).await;
        assert_eq!(st, 400);
        // A card charge still counts one prompt and shows its channel.
        let card = json!({"email": "ama@example.com", "amount": 500, "reference": "U-3"});
        let (st, _) = call(reqwest::Method::POST, &format!("{a}/transaction/initialize"), Some(card)).await;
        assert_eq!(st, 200);
        let rec = sb.charge("U-3").expect("record");
        assert_eq!(
            (rec["channel"].as_str(), rec["prompts"].as_u64(), &rec["phone"]),
            (Some("card"), Some(1), &Value::Null)
        );
    }

    #[tokio::test]
    async fn charges_are_listed_by_phone_across_providers_newest_first() {
        let sb = sandbox().await;
        let a = sb.provider_url("provider_a");
        let (st, _) = call(reqwest::Method::POST, &format!("{a}/charge"), Some(momo_paystack("G-1"))).await;
        assert_eq!(st, 200);
        let b = sb.provider_url("provider_b");
        let body = json!({"tx_ref": "G-3", "amount": 2, "currency": "GHS", "email": "ama@example.com",
                          "phone_number": "233241234567", "network": "MTN"});
        let (st, c) = call(reqwest::Method::POST, &format!("{b}/v3/charges?type=mobile_money_ghana"), Some(body)).await;
        assert_eq!(st, 200, "{c}");
        let base = sb.base_url().to_string();
        let (st, list) = call(reqwest::Method::GET, &format!("{base}/sandbox/charges?phone=241234567"), None).await;
        assert_eq!(st, 200);
        let refs: Vec<&str> =
            list.as_array().map(|l| l.iter().filter_map(|c| c["reference"].as_str()).collect()).unwrap_or_default();
        assert_eq!(refs, ["G-3", "G-1"]);
        let (_, list) = call(reqwest::Method::GET, &format!("{base}/sandbox/charges?phone=200000000"), None).await;
        assert_eq!(list, json!([]));
        assert_eq!(sb.charges_for_phone("4567").len(), 2);
    }

    #[tokio::test]
    async fn the_adapters_charge_mobile_money_once_per_reference() {
        let sb = sandbox().await;
        let http = Outbound::new(Duration::from_secs(5), true).expect("outbound");
        let metadata = json!({"channel": "ussd"});
        // Flutterwave cannot push (D18.5); Hubtel's wire is tested in its own module.
        for (provider, reference, phone) in [(ProviderId::A, "M-A", "0241234567")] {
            let creds = Credentials {
                base_url: sb.provider_url(provider.as_str()),
                secret_key: SecretString::from("sk_test_momo".to_string()),
                account_supplied: false,
                extra: Default::default(),
            };
            let req = MobileMoneyCharge {
                reference,
                amount: 875,
                currency: "GHS",
                email: "233241234567@ussd.invalid",
                msisdn: "233241234567",
                network: "atl",
                name: None,
                description: None,
                metadata: &metadata,
            };
            let p = adapter(provider);
            assert_eq!(p.charge_mobile_money(&http, &creds, &req).await, Ok(()), "{provider:?}");
            assert_eq!(p.charge_mobile_money(&http, &creds, &req).await, Err(ProviderError::Duplicate), "{provider:?}");
            let rec = sb.charge(reference).expect("record");
            assert_eq!(
                (rec["phone"].as_str(), rec["network"].as_str(), rec["prompts"].as_u64()),
                (Some(phone), Some("atl"), Some(2))
            );
            let state = p.verify_charge(&http, &creds, reference).await.expect("verify");
            assert_eq!(state.status, crate::providers::payments::RemoteStatus::Pending);
        }
    }

    #[tokio::test]
    async fn faults_delay_charges_and_drop_or_duplicate_callbacks() {
        let sb = sandbox().await;
        let base = sb.base_url().to_string();
        let (st, f) =
            call(reqwest::Method::POST, &format!("{base}/sandbox/faults"), Some(json!({"chargeDelayMs": 300}))).await;
        assert_eq!(st, 200);
        assert_eq!(f, json!({"webhookDropPercent": 0, "webhookDuplicatePercent": 0, "chargeDelayMs": 300}));
        let started = Instant::now();
        let (st, _) = call(
            reqwest::Method::POST,
            &format!("{}/charge", sb.provider_url("provider_a")),
            Some(momo_paystack("F-1")),
        )
        .await;
        assert_eq!(st, 200);
        assert!(started.elapsed() >= Duration::from_millis(300));
        let (st, _) =
            call(reqwest::Method::POST, &format!("{base}/sandbox/faults"), Some(json!({"webhookDropPercent": 101})))
                .await;
        assert_eq!(st, 400);

        sb.set_faults(Faults { callback_drop_percent: 100, ..Faults::default() });
        let (_, f) = call(reqwest::Method::GET, &format!("{base}/sandbox/faults"), None).await;
        assert_eq!(f["webhookDropPercent"], 100);
        sb.set_notify_url("http://127.0.0.1:9");
        let (st, _) = call(reqwest::Method::POST, &format!("{base}/sandbox/charges/F-1/succeed"), None).await;
        assert_eq!(st, 200);
        let hooks = sb.callbacks();
        assert_eq!(hooks.len(), 1, "dropped, so never retried: {hooks:?}");
        assert_eq!((hooks[0]["dropped"].as_bool(), &hooks[0]["status"]), (Some(true), &Value::Null));

        sb.set_faults(Faults { callback_duplicate_percent: 100, ..Faults::default() });
        let (st, _) = call(
            reqwest::Method::POST,
            &format!("{}/charge", sb.provider_url("provider_a")),
            Some(momo_paystack("F-2")),
        )
        .await;
        assert_eq!(st, 200);
        let (st, _) = call(reqwest::Method::POST, &format!("{base}/sandbox/charges/F-2/fail"), None).await;
        assert_eq!(st, 200);
        let f2: Vec<Value> = sb.callbacks().into_iter().filter(|h| h["reference"] == "F-2").collect();
        assert!(f2.len() >= 2, "sent twice: {f2:?}");
        assert!(f2.iter().all(|h| h["dropped"] == false));
    }
}

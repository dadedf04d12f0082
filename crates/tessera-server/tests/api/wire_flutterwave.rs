//! Integration tests: provider_b speaks Flutterwave v3 (D18.2, D18.45), against a fake built
//! from Flutterwave's documentation (`support::fakes::flutterwave`), through Tessera's HTTP API
//! with the platform's credentials pointing at the fake. Workers are off; each test drains.
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::catalogue::{participant, running_campaign, ticket_type};
use crate::support::client::{assert_error, send, StatusCode};
use crate::support::fakes::flutterwave::{post_webhook, Failure, FakeFlutterwave, Signed};
use crate::support::ledger::{assert_ledger_clean, ledger, ledger_kinds};
use crate::support::payments::{checkout_body, initialize, payment, INITIALIZE, PAYMENTS, WITHDRAWALS};
use crate::support::server::{drain, spawn_with, Backend, TestApp, ALL_PRIVATE_SCOPES};

const SECRET: &str = "FLWSECK_TEST-tessera-platform-X";
const HASH: &str = "tessera-dashboard-secret-hash";
const PUBLIC: &str = "https://pay.tessera.example";

struct Wire {
    app: TestApp,
    fw: FakeFlutterwave,
}

impl std::ops::Deref for Wire {
    type Target = TestApp;
    fn deref(&self) -> &TestApp {
        &self.app
    }
}

/// A server whose only provider is provider_b on the fake (no fees, so amounts are exact).
async fn spawn(b: Backend) -> Wire {
    spawn_tweaked(b, |_| {}).await
}

async fn spawn_tweaked(b: Backend, tweak: impl FnOnce(&mut tessera_server::config::Config)) -> Wire {
    let fw = FakeFlutterwave::start(SECRET).await;
    let base = fw.base_url.clone();
    let app = spawn_with(b, |c| {
        for name in ["provider_a", "provider_c"] {
            let p = c.providers.get_mut(name).expect("provider");
            p.base_url = "http://127.0.0.1:9".into();
            p.secret_key = String::new().into();
        }
        let p = c.providers.get_mut("provider_b").expect("provider_b");
        p.base_url = base;
        p.secret_key = SECRET.to_string().into();
        p.webhook_hash = HASH.to_string().into();
        c.http.public_url = format!("{PUBLIC}/");
        c.providers.timeout_ms = 1_500;
        c.payments.fee_percent = 0.0;
        c.payments.fee_fixed = 0.0;
        c.security.rate_limit_per_account = 0;
        c.security.rate_limit_per_ip = 0;
        c.workers.enabled = false;
        c.payments.verify_interval_seconds = 0.001;
        tweak(c);
    })
    .await;
    Wire { app, fw }
}

fn reference_of(data: &Value) -> String {
    data["reference"].as_str().expect("reference").to_string()
}

/// A ticket purchase of one seat at `price`; its initialize data.
async fn buy_one(w: &Wire, price: f64) -> Value {
    let c = running_campaign(w, &w.account.private, "ticketing").await;
    let t = ticket_type(w, &w.account.private, &c, price, 5).await;
    let r = initialize(w, checkout_body(w, &c, &t, 1)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    r.json()["data"].clone()
}

/// The ledger entry of `kind` for `reference`, in GHS.
async fn entry(w: &Wire, reference: &str, kind: &str) -> Option<f64> {
    ledger_kinds(&ledger(w).await, reference).into_iter().find(|(k, _)| k == kind).map(|(_, a)| a)
}

async fn callback_count(w: &Wire, reference: &str) -> i64 {
    w.store.callback_count(reference).await.expect("count")
}

// ---------------------------------------------------------------------------------------------

async fn a_ticket_purchase_is_paid_through_flutterwave_to_the_pesewa(b: Backend) {
    let w = spawn(b).await;
    let data = buy_one(&w, 150.50).await;
    let reference = reference_of(&data);
    assert_eq!(data["provider"], "provider_b");
    let sent = w.fw.requests_to("POST", "/v3/payments");
    assert_eq!(sent.len(), 1);
    let body = &sent[0].body;
    assert_eq!(body["tx_ref"], reference.as_str());
    assert_eq!(body["amount"], json!(150.5), "decimal GHS: {body}");
    assert_eq!(body["currency"], "GHS");
    assert_eq!(body["redirect_url"], format!("https://{}/thanks", w.account.domain), "Form 1's callbackUrl");
    assert_eq!(body["customer"]["email"], "buyer@example.com");
    assert_eq!(body["customer"]["name"], "Ama Mensah");
    assert!(body["customizations"]["title"].is_string(), "{body}");
    let link = data["authorizationUrl"].as_str().expect("url");
    assert!(link.starts_with(&w.fw.base_url), "data.link is the checkout page: {data}");
    // Not paid yet: a drain asks the verify, which says pending; nothing credited.
    drain(&w).await;
    assert_eq!(payment(&w, &reference).await["status"], "pending");
    assert_eq!(entry(&w, &reference, "charge").await, None);
    // Paid: Flutterwave's webhook with verif-hash triggers the verify, which confirms it.
    w.fw.settle(&reference, "successful");
    let (status, ack) =
        post_webhook(&w.base_url, &w.fw.charge_completed(&reference, "successful"), Signed::VerifHash(HASH)).await;
    assert_eq!(status, 200, "{ack}");
    drain(&w).await;
    let paid = payment(&w, &reference).await;
    assert_eq!(paid["status"], "success", "{paid}");
    assert_eq!(paid["tickets"].as_array().map(Vec::len), Some(1));
    assert_eq!(entry(&w, &reference, "charge").await, Some(150.5), "150.50 exactly in the ledger");
    let verifies = w.fw.requests_to("GET", "/v3/transactions/verify_by_reference");
    assert!(verifies.iter().all(|r| r.path.ends_with(&format!("tx_ref={reference}"))), "{verifies:?}");
    assert_ledger_clean(&w);
}

async fn a_vote_and_a_donation_are_paid_through_flutterwave(b: Backend) {
    let w = spawn(b).await;
    let voting = running_campaign(&w, &w.account.private, "voting").await;
    let nominee = participant(&w, &w.account.private, &voting).await;
    let vote = json!({"transactionType": "vote", "amount": 10, "email": "fan@example.com", "phoneNumber": "0241234567",
                      "callbackUrl": format!("https://{}/voted", w.account.domain),
                      "metadata": {"campaignId": voting, "participantId": nominee}});
    let giving = running_campaign(&w, &w.account.private, "donation").await;
    let gift = json!({"transactionType": "donation", "amount": 75.25, "email": "giver@example.com",
                      "phoneNumber": "+233201234567", "callbackUrl": format!("https://{}/thanks", w.account.domain),
                      "metadata": {"campaignId": giving}});
    let mut references = Vec::new();
    for body in [vote, gift] {
        let r = send(&w, &w.account.private, Method::POST, INITIALIZE, Some(body)).await;
        assert_eq!(r.status, 200, "{}", r.json());
        references.push(reference_of(&r.json()["data"]));
    }
    let sent = w.fw.requests_to("POST", "/v3/payments");
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].body["redirect_url"], format!("https://{}/voted", w.account.domain));
    assert_eq!(sent[0].body["amount"], json!(10));
    assert_eq!(sent[0].body["customer"]["phonenumber"], "+233241234567");
    assert_eq!(sent[1].body["amount"], json!(75.25));
    for reference in &references {
        w.fw.settle(reference, "successful");
        let event = w.fw.charge_completed(reference, "successful");
        let (status, ack) = post_webhook(&w.base_url, &event, Signed::Signature(HASH)).await;
        assert_eq!(status, 200, "flutterwave-signature: {ack}");
    }
    drain(&w).await;
    for (reference, ghs) in references.iter().zip([10.0, 75.25]) {
        assert_eq!(payment(&w, reference).await["status"], "success");
        assert_eq!(entry(&w, reference, "charge").await, Some(ghs), "{reference}");
    }
    assert_ledger_clean(&w);
}

async fn a_web_mobile_money_checkout_uses_the_ghana_charge_page(b: Backend) {
    let w = spawn(b).await;
    let giving = running_campaign(&w, &w.account.private, "donation").await;
    let gift = json!({"transactionType": "donation", "amount": 20, "email": "giver@example.com",
                      "phoneNumber": "0501234567", "callbackUrl": format!("https://{}/thanks", w.account.domain),
                      "metadata": {"campaignId": giving, "paymentMethod": "mobile_money"}});
    let r = send(&w, &w.account.private, Method::POST, INITIALIZE, Some(gift)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let data = r.json()["data"].clone();
    let reference = reference_of(&data);
    let sent = w.fw.requests_to("POST", "/v3/charges");
    assert_eq!(sent.len(), 1, "{:?}", w.fw.requests());
    assert!(sent[0].path.ends_with("?type=mobile_money_ghana"), "{}", sent[0].path);
    let body = &sent[0].body;
    assert_eq!((body["network"].as_str(), body["phone_number"].as_str()), (Some("VODAFONE"), Some("233501234567")));
    assert_eq!((body["tx_ref"].as_str(), body["amount"].clone()), (Some(reference.as_str()), json!(20)));
    let url = data["authorizationUrl"].as_str().expect("url");
    assert!(url.contains("/captcha/verify/"), "meta.authorization.redirect: {data}");
    w.fw.settle(&reference, "successful");
    post_webhook(&w.base_url, &w.fw.charge_completed(&reference, "successful"), Signed::VerifHash(HASH)).await;
    drain(&w).await;
    assert_eq!(payment(&w, &reference).await["status"], "success");
    assert_eq!(entry(&w, &reference, "charge").await, Some(20.0));
}

async fn without_a_callback_url_the_customer_returns_to_tesseras_page(b: Backend) {
    let w = spawn(b).await;
    let c = running_campaign(&w, &w.account.private, "ticketing").await;
    let t = ticket_type(&w, &w.account.private, &c, 5.0, 5).await;
    let mut body = checkout_body(&w, &c, &t, 1);
    body.as_object_mut().expect("object").remove("callbackUrl");
    let r = initialize(&w, body).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let reference = reference_of(&r.json()["data"]);
    let sent = w.fw.requests_to("POST", "/v3/payments");
    assert_eq!(sent[0].body["redirect_url"], format!("{PUBLIC}/pay/done?reference={reference}"), "D18.45");
}

async fn a_wrong_or_missing_authentication_is_a_401_and_credits_nothing(b: Backend) {
    let w = spawn(b).await;
    let reference = reference_of(&buy_one(&w, 10.0).await);
    // The webhook claims success; the verify (the charge is still pending) never confirms it.
    let event = w.fw.charge_completed(&reference, "successful");
    let (status, body) = post_webhook(&w.base_url, &event, Signed::None).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["code"], "missing_auth");
    for signed in [Signed::VerifHash("not-the-hash"), Signed::Signature("not-the-hash"), Signed::VerifHash(SECRET)] {
        let (status, body) = post_webhook(&w.base_url, &event, signed).await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(body["code"], "invalid_signature", "{body}");
    }
    assert_eq!(callback_count(&w, &reference).await, 0, "nothing stored");
    drain(&w).await;
    assert_eq!(payment(&w, &reference).await["status"], "pending");
    assert_eq!(entry(&w, &reference, "charge").await, None);
}

async fn a_callback_claiming_success_is_believed_only_after_the_verify(b: Backend) {
    let w = spawn(b).await;
    // Verify says failed.
    let failed = reference_of(&buy_one(&w, 10.0).await);
    w.fw.settle(&failed, "failed");
    let (status, _) =
        post_webhook(&w.base_url, &w.fw.charge_completed(&failed, "successful"), Signed::VerifHash(HASH)).await;
    assert_eq!(status, 200);
    // Verify says successful but for less than the price.
    let short = reference_of(&buy_one(&w, 10.0).await);
    w.fw.settle(&short, "successful");
    w.fw.set_verify_amount(&short, json!(9.99));
    post_webhook(&w.base_url, &w.fw.charge_completed(&short, "successful"), Signed::VerifHash(HASH)).await;
    // Verify answers an amount that is not a number.
    let abc = reference_of(&buy_one(&w, 10.0).await);
    w.fw.settle(&abc, "successful");
    w.fw.set_verify_amount(&abc, json!("abc"));
    post_webhook(&w.base_url, &w.fw.charge_completed(&abc, "successful"), Signed::VerifHash(HASH)).await;
    drain(&w).await;
    assert_eq!(payment(&w, &failed).await["status"], "failed");
    for reference in [&failed, &short, &abc] {
        assert_ne!(payment(&w, reference).await["status"], "success", "{reference}");
        assert_eq!(entry(&w, reference, "charge").await, None, "nothing credited for {reference}");
    }
    assert_ledger_clean(&w);
}

async fn the_legacy_flat_webhook_triggers_the_verify(b: Backend) {
    let w = spawn(b).await;
    let reference = reference_of(&buy_one(&w, 25.0).await);
    w.fw.settle(&reference, "successful");
    let (status, ack) =
        post_webhook(&w.base_url, &w.fw.legacy_completed(&reference, "successful"), Signed::VerifHash(HASH)).await;
    assert_eq!(status, 200, "{ack}");
    drain(&w).await;
    assert_eq!(payment(&w, &reference).await["status"], "success");
    assert_eq!(entry(&w, &reference, "charge").await, Some(25.0));
}

async fn a_callback_delivered_many_times_has_one_effect(b: Backend) {
    let w = spawn(b).await;
    let reference = reference_of(&buy_one(&w, 12.0).await);
    w.fw.settle(&reference, "successful");
    let event = w.fw.charge_completed(&reference, "successful");
    for i in 0..6 {
        let signed = if i % 2 == 0 { Signed::VerifHash(HASH) } else { Signed::Signature(HASH) };
        let (status, _) = post_webhook(&w.base_url, &event, signed).await;
        assert_eq!(status, 200);
    }
    // The legacy shape of the same charge is the same event.
    post_webhook(&w.base_url, &w.fw.legacy_completed(&reference, "successful"), Signed::VerifHash(HASH)).await;
    assert_eq!(callback_count(&w, &reference).await, 1);
    drain(&w).await;
    let paid = payment(&w, &reference).await;
    assert_eq!(paid["tickets"].as_array().map(Vec::len), Some(1));
    assert_eq!(entry(&w, &reference, "charge").await, Some(12.0));
    assert_ledger_clean(&w);
}

/// A paid ticket purchase at `price`, confirmed.
async fn paid(w: &Wire, price: f64) -> String {
    let reference = reference_of(&buy_one(w, price).await);
    w.fw.settle(&reference, "successful");
    post_webhook(&w.base_url, &w.fw.charge_completed(&reference, "successful"), Signed::VerifHash(HASH)).await;
    drain(w).await;
    assert_eq!(payment(w, &reference).await["status"], "success");
    reference
}

async fn refund(w: &Wire, reference: &str) -> Value {
    let mut h = HeaderMap::new();
    h.insert("x-idempotency-key", HeaderValue::from_str(&uuid::Uuid::now_v7().to_string()).expect("header"));
    let body = serde_json::to_vec(&json!({"reason": "Buyer asked"})).expect("json");
    let path = format!("{PAYMENTS}/{reference}/refunds");
    let r = w.client().send_raw(Method::POST, &path, body, Some(h)).await.expect("refund");
    assert_eq!(r.status, 201, "{}", r.json());
    r.json()["data"].clone()
}

async fn refund_status(w: &Wire, id: &str) -> Value {
    let b: Value = w.api().get(&format!("/api/white-label/v1/refunds/{id}"), StatusCode::OK).await;
    b["data"]["status"].clone()
}

async fn a_refund_is_made_on_the_charges_transaction_id(b: Backend) {
    let w = spawn(b).await;
    let reference = paid(&w, 150.50).await;
    let r = refund(&w, &reference).await;
    let id = r["id"].as_str().expect("id").to_string();
    drain(&w).await;
    let tx_id = w.fw.charge_id(&reference);
    let made = w.fw.requests_to("POST", &format!("/v3/transactions/{tx_id}/refund"));
    assert_eq!(made.len(), 1, "{:?}", w.fw.requests());
    assert_eq!(made[0].body["amount"], json!(150.5));
    // The listing was asked first, by UTC dates.
    let listed = w.fw.requests_to("GET", "/v3/refunds");
    assert!(!listed.is_empty() && listed[0].path.contains("from=") && listed[0].path.contains("&to="), "{listed:?}");
    assert_eq!(refund_status(&w, &id).await, "succeeded");
    assert_eq!(entry(&w, &id, "refund_debit").await, Some(-150.5));
    assert_ledger_clean(&w);
}

async fn a_refund_whose_answer_was_lost_is_adopted_not_made_twice(b: Backend) {
    let w = spawn(b).await;
    let reference = paid(&w, 40.0).await;
    w.fw.set_refund_status("pending");
    let r = refund(&w, &reference).await;
    let id = r["id"].as_str().expect("id").to_string();
    // Flutterwave down at the first attempt: the listing gets a 500 and nothing is sent.
    w.fw.fail_next(Failure::Status500);
    drain(&w).await;
    assert_eq!(w.fw.refunds().len(), 0, "a 500 on the listing: nothing sent blindly");
    due_now(&w).await;
    // Now the listing passes and the create acts without answering.
    lose_answer_of_next_post(&w).await;
    assert_eq!(w.fw.refunds().len(), 1, "the refund was made once at Flutterwave");
    due_now(&w).await;
    drain(&w).await;
    assert_eq!(w.fw.refunds().len(), 1, "the retry adopted it from the listing");
    assert_eq!(refund_status(&w, &id).await, "pending");
    // Flutterwave completes it; the poll reads GET /v3/refunds/{id}.
    let flw_id = w.fw.refunds()[0]["id"].clone();
    w.fw.complete_refund(&flw_id);
    for _ in 0..50 {
        due_now(&w).await;
        drain(&w).await;
        if refund_status(&w, &id).await != "pending" {
            break;
        }
    }
    assert_eq!(refund_status(&w, &id).await, "succeeded");
    assert!(!w.fw.requests_to("GET", &format!("/v3/refunds/{flw_id}")).is_empty());
    assert_eq!(w.fw.refunds().len(), 1);
    assert_eq!(entry(&w, &id, "refund_debit").await, Some(-40.0));
    assert_ledger_clean(&w);
}

/// Makes the refund jobs due now (their retry waits otherwise).
async fn due_now(w: &Wire) {
    use sqlx::Executor;
    let mut conn = crate::support::db::connect(w).await;
    conn.execute("UPDATE jobs SET run_at = 0 WHERE queue = 'refund'").await.expect("sql");
}

/// Drains with the next POST's answer lost: the listing (a GET) answers, the POST acts and
/// never answers (Tessera times out).
async fn lose_answer_of_next_post(w: &Wire) {
    w.fw.fail_post_next(Failure::DropAfter);
    drain(w).await;
}

/// Files a withdrawal (201 asserted); its id.
async fn withdraw(w: &Wire, key: &crate::support::server::TestKey, body: &Value) -> String {
    let mut h = HeaderMap::new();
    h.insert("x-idempotency-key", HeaderValue::from_str(&uuid::Uuid::now_v7().to_string()).expect("header"));
    let client = w.client_for(key);
    let r = client.send_raw(Method::POST, WITHDRAWALS, serde_json::to_vec(body).expect("json"), Some(h)).await;
    let r = r.expect("send");
    assert_eq!(r.status, 201, "{}", r.json());
    r.json()["data"]["id"].as_str().expect("id").to_string()
}

async fn a_withdrawal_is_a_flutterwave_transfer_to_the_wallet(b: Backend) {
    let w = spawn(b).await;
    paid(&w, 100.0).await;
    let key = w.create_key(&w.account.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    let body = json!({"amount": 40.5, "bank_name": "MTN Mobile Money", "bank_code": "MTN",
                      "account_number": "0241234567", "account_name": "Ama Mensah"});
    let id = withdraw(&w, &key, &body).await;
    drain(&w).await;
    let sent = w.fw.requests_to("POST", "/v3/transfers");
    assert_eq!(sent.len(), 1, "{:?}", w.fw.requests());
    assert_eq!(
        sent[0].body,
        json!({"account_bank": "MTN", "account_number": "233241234567", "amount": 40.5, "currency": "GHS",
               "beneficiary_name": "Ama Mensah", "narration": "Tessera withdrawal", "reference": id,
               "debit_currency": "GHS"})
    );
    w.fw.settle_transfer(&id, "SUCCESSFUL", "Transaction was successful");
    let (status, ack) = post_webhook(&w.base_url, &w.fw.transfer_completed(&id), Signed::VerifHash(HASH)).await;
    assert_eq!(status, 200, "{ack}");
    drain(&w).await;
    let b: Value = w.api_as(&key).get(&format!("{WITHDRAWALS}/{id}"), StatusCode::OK).await;
    assert_eq!(b["data"]["status"], "completed", "{b}");
    assert_eq!(entry(&w, &id, "withdrawal_debit").await, Some(-40.5));
    assert_eq!(w.fw.transfers().len(), 1, "one transfer");
    assert_ledger_clean(&w);
}

async fn a_failed_transfer_fails_the_withdrawal_with_flutterwaves_reason(b: Backend) {
    let w = spawn(b).await;
    paid(&w, 30.0).await;
    let key = w.create_key(&w.account.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    let body = json!({"amount": 30, "bank_name": "Telecel Cash", "bank_code": "VOD",
                      "account_number": "0201234567", "account_name": "Kofi Boateng"});
    let id = withdraw(&w, &key, &body).await;
    drain(&w).await;
    assert_eq!(w.fw.transfers()[0]["bank_code"], "VODAFONE");
    w.fw.settle_transfer(&id, "FAILED", "DISBURSE FAILED: Insufficient funds in customer wallet");
    post_webhook(&w.base_url, &w.fw.transfer_completed(&id), Signed::Signature(HASH)).await;
    drain(&w).await;
    let b: Value = w.api_as(&key).get(&format!("{WITHDRAWALS}/{id}"), StatusCode::OK).await;
    assert_eq!(b["data"]["status"], "failed", "{b}");
    assert!(b["data"]["failureReason"].as_str().is_some_and(|r| r.contains("Insufficient funds")), "{b}");
    assert_eq!(entry(&w, &id, "withdrawal_debit").await, None);
    assert_ledger_clean(&w);
}

async fn provider_a_unreachable_falls_back_to_flutterwave(b: Backend) {
    let w = spawn_tweaked(b, |c| {
        let a = c.providers.get_mut("provider_a").expect("provider_a");
        a.base_url = "http://127.0.0.1:9".into();
        a.secret_key = "sk_test_closed_port".to_string().into();
    })
    .await;
    let routing = json!({"config": {"defaultProvider": "provider_a", "fallbackProvider": "provider_b"}});
    let _: Value = w.api().patch("/api/white-label/v1/settings/payments", &routing, StatusCode::OK).await;
    let data = buy_one(&w, 15.0).await;
    assert_eq!(data["provider"], "provider_b", "{data}");
    let reference = reference_of(&data);
    assert_eq!(w.fw.requests_to("POST", "/v3/payments").len(), 1);
    w.fw.settle(&reference, "successful");
    post_webhook(&w.base_url, &w.fw.charge_completed(&reference, "successful"), Signed::VerifHash(HASH)).await;
    drain(&w).await;
    assert_eq!(entry(&w, &reference, "charge").await, Some(15.0));
}

async fn a_refusal_is_not_retried_elsewhere_and_a_5xx_is(b: Backend) {
    let w = spawn(b).await;
    let c = running_campaign(&w, &w.account.private, "ticketing").await;
    let t = ticket_type(&w, &w.account.private, &c, 10.0, 5).await;
    // Flutterwave's 5xx: unreachable, no other provider configured → 502, nothing reserved.
    w.fw.fail_next(Failure::Status500);
    let r = initialize(&w, checkout_body(&w, &c, &t, 1)).await;
    assert_error(&r, 502, "provider_unavailable");
    // A wrong key is Flutterwave's 401: a refusal, named.
    let wrong = spawn_tweaked(Backend::Sqlite, |c| {
        c.providers.get_mut("provider_b").expect("b").secret_key = "FLWSECK_TEST-wrong".to_string().into();
    })
    .await;
    let c2 = running_campaign(&wrong, &wrong.account.private, "ticketing").await;
    let t2 = ticket_type(&wrong, &wrong.account.private, &c2, 10.0, 5).await;
    let r = initialize(&wrong, checkout_body(&wrong, &c2, &t2, 1)).await;
    let body = assert_error(&r, 502, "provider_unavailable");
    assert!(body["error"].as_str().is_some_and(|m| m.contains("Invalid authorization key")), "{body}");
}

async fn malformed_answers_are_clear_errors_and_move_no_money(b: Backend) {
    let w = spawn(b).await;
    let c = running_campaign(&w, &w.account.private, "ticketing").await;
    let t = ticket_type(&w, &w.account.private, &c, 10.0, 5).await;
    for failure in [
        Failure::Raw(200, "application/json", r#"{"status":"success","message":"Hosted Link","data":{}}"#.into()),
        Failure::Raw(200, "text/html", "<html><body>Bad gateway</body></html>".into()),
        Failure::Raw(200, "application/json", r#"{"status":"error","message":"Something","data":null}"#.into()),
    ] {
        w.fw.fail_next(failure.clone());
        let r = initialize(&w, checkout_body(&w, &c, &t, 1)).await;
        let body = assert_error(&r, 502, "provider_unavailable");
        assert!(body["error"].as_str().is_some_and(|m| m.contains("unreadable")), "{failure:?}: {body}");
    }
    let listed: Value = w.api().get(PAYMENTS, StatusCode::OK).await;
    let pending = listed["data"].as_array().map(|a| a.iter().filter(|p| p["status"] == "pending").count());
    assert_eq!(pending, Some(0), "nothing left open: {listed}");
    assert!(ledger(&w).await["data"].as_array().is_some_and(Vec::is_empty), "no money moved");
    // A verify answering HTML: the payment stays pending, never a 500.
    let reference = reference_of(&buy_one(&w, 10.0).await);
    w.fw.settle(&reference, "successful");
    w.fw.fail_next(Failure::Raw(200, "text/html", "<html>oops</html>".into()));
    let (status, _) =
        post_webhook(&w.base_url, &w.fw.charge_completed(&reference, "successful"), Signed::VerifHash(HASH)).await;
    assert_eq!(status, 200);
    drain(&w).await;
    assert_ne!(payment(&w, &reference).await["status"], "failed");
    assert_ledger_clean(&w);
}

async fn the_webhook_hash_setting_is_write_only(b: Backend) {
    let w = spawn(b).await;
    let path = "/api/white-label/v1/settings/payments";
    let body = json!({"config": {"useSharedDefaults": false, "defaultProvider": "provider_b", "providers": {"provider_b": {
        "secretKey": "FLWSECK_TEST-account-own-9876", "webhookHash": "account-hash-5432"}}}});
    let r = send(&w, &w.account.private, Method::PATCH, path, Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let shown = r.json()["data"]["config"]["providers"]["provider_b"].clone();
    assert_ne!(shown["webhookHash"], "account-hash-5432", "{shown}");
    assert!(!r.json().to_string().contains("account-hash-5432"), "never read back in clear");
    let read: Value = w.api().get("/api/white-label/v1/settings", StatusCode::OK).await;
    assert!(read.to_string().contains("webhookHash"), "listed, masked: {read}");
    assert!(!read.to_string().contains("account-hash-5432"), "{read}");
    let wrong = json!({"config": {"providers": {"provider_b": {"webhookHash": 42}}}});
    let r = send(&w, &w.account.private, Method::PATCH, path, Some(wrong)).await;
    assert_eq!(r.status, 400, "{}", r.json());
    assert!(r.json().to_string().contains("webhookHash"), "{}", r.json());
}

on_both!(
    a_ticket_purchase_is_paid_through_flutterwave_to_the_pesewa,
    a_vote_and_a_donation_are_paid_through_flutterwave,
    a_web_mobile_money_checkout_uses_the_ghana_charge_page,
    without_a_callback_url_the_customer_returns_to_tesseras_page,
    a_wrong_or_missing_authentication_is_a_401_and_credits_nothing,
    a_callback_claiming_success_is_believed_only_after_the_verify,
    the_legacy_flat_webhook_triggers_the_verify,
    a_callback_delivered_many_times_has_one_effect,
    a_refund_is_made_on_the_charges_transaction_id,
    a_refund_whose_answer_was_lost_is_adopted_not_made_twice,
    a_withdrawal_is_a_flutterwave_transfer_to_the_wallet,
    a_failed_transfer_fails_the_withdrawal_with_flutterwaves_reason,
    provider_a_unreachable_falls_back_to_flutterwave,
    a_refusal_is_not_retried_elsewhere_and_a_5xx_is,
    malformed_answers_are_clear_errors_and_move_no_money,
    the_webhook_hash_setting_is_write_only,
);

//! provider_c speaks Hubtel (D18.3, D18.5, D18.45), end to end through Tessera's HTTP API with
//! the platform's credentials, against a fake built from Hubtel's developer documentation
//! (`support::fakes::hubtel`): checkouts, USSD pushes, tokened callbacks that only trigger the
//! status check, refunds sent back to the paying number, withdrawals to wallets and banks. On
//! SQLite and PostgreSQL; workers off, each test drains the queues itself.
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};

use crate::support::catalogue::{participant, running_campaign, ticket_type};
use crate::support::client::{assert_error, detail_fields, send, StatusCode};
use crate::support::fakes::hubtel::{
    hubtel_ref, FakeHubtel, API_ID, API_KEY, CALLBACK_TOKEN, POS_SALES_ID, PREPAID_DEPOSIT_ID,
};
use crate::support::ledger::{assert_ledger_clean, kinds, ledger, ledger_kinds};
use crate::support::payments::{buy, initialize, payment, BALANCE, PAYMENTS, WITHDRAWALS};
use crate::support::server::{drain, spawn_with, Backend, TestApp, TestKey, ALL_PRIVATE_SCOPES};

const V1: &str = "/api/white-label/v1";
const WEBHOOK: &str = "/api/white-label/webhooks/provider_c";

struct Rig {
    app: TestApp,
    hubtel: FakeHubtel,
}

impl std::ops::Deref for Rig {
    type Target = TestApp;
    fn deref(&self) -> &TestApp {
        &self.app
    }
}

/// A server whose provider_c is the fake Hubtel with the platform's credentials, and whose
/// `http.public_url` is its own address (the URLs Hubtel calls back).
async fn rig(b: Backend) -> Rig {
    let hubtel = FakeHubtel::start().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let fake_url = hubtel.url.clone();
    let app = spawn_with(b, |c| {
        c.listen = format!("127.0.0.1:{port}").parse().expect("addr");
        c.http.public_url = format!("http://127.0.0.1:{port}");
        let p = c.providers.get_mut("provider_c").expect("[providers.provider_c]");
        p.base_url = fake_url;
        p.secret_key = API_KEY.to_string().into();
        p.api_id = API_ID.into();
        p.pos_sales_id = POS_SALES_ID.into();
        p.prepaid_deposit_id = PREPAID_DEPOSIT_ID.into();
        p.callback_token = CALLBACK_TOKEN.to_string().into();
        c.security.rate_limit_per_account = 0;
        c.security.rate_limit_per_ip = 0;
        c.workers.enabled = false;
        c.payments.verify_interval_seconds = 0.001;
    })
    .await;
    let body = json!({"config": {"defaultProvider": "provider_c"}});
    let _: Value = app.api().patch(&format!("{V1}/settings/payments"), &body, StatusCode::OK).await;
    Rig { app, hubtel }
}

fn token_url(r: &Rig, token: &str) -> String {
    format!("{}{WEBHOOK}/{token}", r.base_url)
}

fn reference_of(data: &Value) -> String {
    data["reference"].as_str().expect("reference").to_string()
}

/// A ticket purchase of one ticket at `price` GHS through Hubtel's checkout: its reference.
async fn checkout(r: &Rig, price: f64) -> String {
    let c = running_campaign(r, &r.account.private, "ticketing").await;
    let t = ticket_type(r, &r.account.private, &c, price, 100).await;
    let data = buy(r, &c, &t, 1).await;
    let reference = reference_of(&data);
    let charge = r.hubtel.charge(&reference).expect("Hubtel was asked for a checkout");
    assert!(data["authorizationUrl"].as_str().is_some_and(|u| u.starts_with(&r.hubtel.url)), "{data}");
    assert!(charge.callback_url.ends_with(&format!("{WEBHOOK}/{CALLBACK_TOKEN}")), "{}", charge.callback_url);
    reference
}

/// Pays `reference` at Hubtel (`mobilemoney` from `payer`, or `card`) and delivers the
/// checkout callback with the right token: the payment as the API then shows it.
async fn pay(r: &Rig, reference: &str, method: &str, payer: &str) -> Value {
    r.hubtel.set_charge(reference, "Paid", method, Some(payer));
    assert_eq!(r.hubtel.charge_callback(reference, true, None).await, 200);
    drain(r).await;
    payment(r, reference).await
}

async fn balance(r: &Rig) -> f64 {
    let b: Value = r.api().get(BALANCE, StatusCode::OK).await;
    b["data"]["available"].as_f64().expect("available")
}

async fn post_idem(r: &Rig, path: &str, body: &Value) -> RawResponse {
    post_idem_as(r, &r.account.private, path, body).await
}

async fn post_idem_as(r: &Rig, key: &TestKey, path: &str, body: &Value) -> RawResponse {
    let mut h = HeaderMap::new();
    h.insert("x-idempotency-key", HeaderValue::from_str(&uuid::Uuid::now_v7().to_string()).expect("header"));
    let bytes = serde_json::to_vec(body).expect("json");
    r.client_for(key).send_raw(Method::POST, path, bytes, Some(h)).await.expect("send")
}

async fn show(r: &Rig, path: &str) -> Value {
    show_as(r, &r.account.private, path).await
}

async fn show_as(r: &Rig, key: &TestKey, path: &str) -> Value {
    let b: Value = r.api_as(key).get(path, StatusCode::OK).await;
    b["data"].clone()
}

async fn wire_hubtel_checkout_credits_after_the_status_check(b: Backend) {
    let r = rig(b).await;
    let reference = checkout(&r, 150.50).await;
    let asked = r.hubtel.requests();
    let init = asked.iter().find(|q| q.path == "/items/initiate").expect("initiate");
    assert!(init.authorized, "Basic base64(apiId:secretKey)");
    assert_eq!(init.body["totalAmount"].to_string(), "150.5", "{}", init.body);
    assert_eq!(init.body["clientReference"], hubtel_ref(&reference));
    assert_eq!(init.body["merchantAccountNumber"], POS_SALES_ID);
    assert_eq!(init.body["returnUrl"], format!("https://{}/thanks", r.account.domain));

    // A callback that says success while the status check says Unpaid credits nothing.
    assert_eq!(r.hubtel.charge_callback(&reference, true, None).await, 200);
    drain(&r).await;
    assert_eq!(payment(&r, &reference).await["status"], "pending");

    // Wrong or missing token: 401, and not even the status check is asked.
    r.hubtel.set_charge(&reference, "Paid", "mobilemoney", Some("233241234567"));
    let checks = |r: &Rig| r.hubtel.requests().iter().filter(|q| q.path.ends_with("/status")).count();
    let before = checks(&r);
    assert_eq!(r.hubtel.charge_callback(&reference, true, Some(&token_url(&r, "not-the-token"))).await, 401);
    let bare = format!("{}{WEBHOOK}", r.base_url);
    assert_eq!(r.hubtel.charge_callback(&reference, true, Some(&bare)).await, 401);
    assert_eq!(checks(&r), before, "an unauthenticated callback triggers nothing");
    assert_eq!(payment(&r, &reference).await["status"], "pending", "an unauthenticated callback credits nothing");

    // The right token triggers the status check: paid, 150.50 exactly; twice is one effect.
    assert_eq!(r.hubtel.charge_callback(&reference, true, None).await, 200);
    assert_eq!(r.hubtel.charge_callback(&reference, true, None).await, 200);
    drain(&r).await;
    assert_eq!(payment(&r, &reference).await["status"], "success");
    let status_checks = r.hubtel.requests().iter().filter(|q| q.path.ends_with("/status")).count();
    assert!(status_checks >= 1);
    let l = ledger(&r).await;
    let credits: Vec<(String, f64)> = ledger_kinds(&l, &reference);
    assert_eq!(credits, kinds(&[("charge", 150.5)]), "one credit of exactly 150.50");
    assert_ledger_clean(&r);
}

async fn wire_hubtel_votes_and_donations_are_paid_and_card_payments_are_not_refunded(b: Backend) {
    let r = rig(b).await;
    let c = running_campaign(&r, &r.account.private, "voting").await;
    let nominee = participant(&r, &r.account.private, &c).await;
    let vote = initialize(
        &r,
        json!({"transactionType": "vote", "amount": 6, "email": "fan@example.com", "phoneNumber": "0241234567",
            "callbackUrl": format!("https://{}/voted", r.account.domain),
            "metadata": {"campaignId": c, "participantId": nominee}}),
    )
    .await;
    assert_eq!(vote.status, 200, "{}", vote.json());
    let vote_ref = reference_of(&vote.json()["data"]);
    // The customer comes back to the callbackUrl; cancelling adds `cancelled=1`.
    let init = r.hubtel.requests().into_iter().rev().find(|q| q.path == "/items/initiate").expect("initiate");
    let back = format!("https://{}/voted", r.account.domain);
    assert_eq!(init.body["returnUrl"], back.as_str());
    assert_eq!(init.body["cancellationUrl"], format!("{back}?cancelled=1").as_str());
    // Tessera's own landing page (the return address when none is given), public.
    let done = format!("{}/pay/done?reference={vote_ref}", r.config.http.public_url);
    let page = r.http.get(&done).send().await.expect("page");
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.expect("html").contains("being confirmed"));
    let page = r.http.get(format!("{done}&cancelled=1")).send().await.expect("page");
    assert!(page.text().await.expect("html").contains("cancelled"));

    assert_eq!(pay(&r, &vote_ref, "card", "233241234567").await["status"], "success");
    let board: Value = r.api().get(&format!("{V1}/participants?campaignId={c}"), StatusCode::OK).await;
    assert_eq!(board["data"][0]["votes"], 3, "{board}");

    // A donation confirmed by the status-check poll, no callback at all.
    let d = running_campaign(&r, &r.account.private, "donation").await;
    let gift = initialize(
        &r,
        json!({"transactionType": "donation", "amount": 25.75, "email": "giver@example.com",
            "phoneNumber": "0241234567", "callbackUrl": format!("https://{}/gave", r.account.domain),
            "metadata": {"campaignId": d}}),
    )
    .await;
    assert_eq!(gift.status, 200, "{}", gift.json());
    let gift_ref = reference_of(&gift.json()["data"]);
    r.hubtel.set_charge(&gift_ref, "Paid", "mobilemoney", None);
    drain(&r).await;
    assert_eq!(payment(&r, &gift_ref).await["status"], "success");

    // A card payment on Hubtel cannot be refunded; a mobile-money one of unknown payer neither.
    let before = balance(&r).await;
    for reference in [&vote_ref, &gift_ref] {
        let refused = post_idem(&r, &format!("{PAYMENTS}/{reference}/refunds"), &json!({})).await;
        assert_error(&refused, 409, "refund_not_supported");
        assert_eq!(payment(&r, reference).await["status"], "success");
    }
    assert_eq!(balance(&r).await, before, "nothing held");
    let board: Value = r.api().get(&format!("{V1}/participants?campaignId={c}"), StatusCode::OK).await;
    assert_eq!(board["data"][0]["votes"], 3, "no vote taken back: {board}");
    assert!(!r.hubtel.requests().iter().any(|q| q.path.contains("/send/")), "nothing sent");
    assert_ledger_clean(&r);
}

async fn wire_hubtel_refunds_send_mobile_money_back_to_the_payer_once(b: Backend) {
    let r = rig(b).await;
    let first = checkout(&r, 40.0).await;
    assert_eq!(pay(&r, &first, "mobilemoney", "233201234567").await["status"], "success");

    let filed = post_idem(&r, &format!("{PAYMENTS}/{first}/refunds"), &json!({"reason": "changed plans"})).await;
    assert_eq!(filed.status, 201, "{}", filed.json());
    let id = filed.json()["data"]["id"].as_str().expect("id").to_string();
    drain(&r).await;
    let sent = r.hubtel.sent(&id).expect("the refund was sent");
    assert_eq!(sent.path, format!("/api/merchants/{PREPAID_DEPOSIT_ID}/send/mobilemoney"));
    assert_eq!(sent.body["RecipientMsisdn"], "233201234567", "the payer from the callback");
    assert_eq!(sent.body["Channel"], "vodafone-gh");
    assert_eq!(sent.body["Amount"], json!(40));
    assert_eq!(sent.body["ClientReference"], hubtel_ref(&id));
    r.hubtel.settle_send(&id, "success", "0000");
    assert_eq!(r.hubtel.send_callback(&id).await, 200);
    drain(&r).await;
    assert_eq!(show(&r, &format!("{V1}/refunds/{id}")).await["status"], "succeeded");
    let l = ledger(&r).await;
    assert_eq!(
        ledger_kinds(&l, &id),
        kinds(&[("refund_debit", -40.0), ("refund_hold", -40.0), ("refund_release", 40.0)]),
        "{l}"
    );

    // A refund whose answer is lost is never sent twice: the status is asked first.
    let second = checkout(&r, 12.5).await;
    assert_eq!(pay(&r, &second, "mobilemoney", "233241234567").await["status"], "success");
    r.hubtel.lose_next_send_answer();
    let filed = post_idem(&r, &format!("{PAYMENTS}/{second}/refunds"), &json!({})).await;
    assert_eq!(filed.status, 201, "{}", filed.json());
    let lost = filed.json()["data"]["id"].as_str().expect("id").to_string();
    drain(&r).await;
    assert!(r.hubtel.sent(&lost).is_some(), "the send was made, its answer lost");
    r.hubtel.settle_send(&lost, "success", "0000");
    assert_eq!(r.hubtel.send_callback(&lost).await, 200);
    drain(&r).await;
    assert_eq!(show(&r, &format!("{V1}/refunds/{lost}")).await["status"], "succeeded");
    let posts = r
        .hubtel
        .requests()
        .iter()
        .filter(|q| q.method == "POST" && q.body["ClientReference"] == hubtel_ref(&lost).as_str())
        .count();
    assert_eq!(posts, 1, "one send for the refund");
    assert_ledger_clean(&r);
}

async fn wire_hubtel_withdrawals_go_to_wallets_and_banks_with_failure_codes(b: Backend) {
    let r = rig(b).await;
    let funded = checkout(&r, 200.0).await;
    assert_eq!(pay(&r, &funded, "mobilemoney", "233241234567").await["status"], "success");

    let payouts = r.create_key(&r.account.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    let wallet = json!({"amount": 50.25, "bank_name": "MTN Mobile Money", "bank_code": "MTN",
        "account_number": "0241234567", "account_name": "Ama Mensah"});
    let w = post_idem_as(&r, &payouts, WITHDRAWALS, &wallet).await;
    assert_eq!(w.status, 201, "{}", w.json());
    let wallet_id = w.json()["data"]["id"].as_str().expect("id").to_string();
    drain(&r).await;
    let sent = r.hubtel.sent(&wallet_id).expect("sent to the wallet");
    assert!(sent.path.ends_with("/send/mobilemoney"), "{}", sent.path);
    assert_eq!(
        (sent.body["RecipientMsisdn"].clone(), sent.body["Channel"].clone()),
        (json!("233241234567"), json!("mtn-gh"))
    );
    assert_eq!(sent.body["Amount"].to_string(), "50.25");
    r.hubtel.settle_send(&wallet_id, "success", "0000");
    assert_eq!(r.hubtel.send_callback(&wallet_id).await, 200);
    drain(&r).await;
    assert_eq!(show_as(&r, &payouts, &format!("{WITHDRAWALS}/{wallet_id}")).await["status"], "completed");

    // A bank transfer Hubtel refuses for its prepaid balance: the code reaches failureReason.
    r.hubtel.fail_sends(Some(("4075", 400)));
    let bank = json!({"amount": 20, "bank_name": "GCB Bank", "bank_code": "300304",
        "account_number": "1234567890", "account_name": "Ama Mensah"});
    let w = post_idem_as(&r, &payouts, WITHDRAWALS, &bank).await;
    assert_eq!(w.status, 201, "{}", w.json());
    let bank_id = w.json()["data"]["id"].as_str().expect("id").to_string();
    drain(&r).await;
    let sent = r.hubtel.sent(&bank_id).expect("sent to the bank");
    assert_eq!(sent.path, format!("/api/merchants/{PREPAID_DEPOSIT_ID}/send/bank/gh/300304"));
    assert_eq!(sent.body["BankAccountNumber"], "1234567890");
    let failed = show_as(&r, &payouts, &format!("{WITHDRAWALS}/{bank_id}")).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(failed["failureReason"].as_str().is_some_and(|f| f.contains("4075")), "{failed}");
    // Hubtel's 5000 with an HTTP 5xx is unreachable: retried, not failed.
    r.hubtel.fail_sends(Some(("5000", 500)));
    let w = post_idem_as(&r, &payouts, WITHDRAWALS, &bank).await;
    assert_eq!(w.status, 201, "{}", w.json());
    let later_id = w.json()["data"]["id"].as_str().expect("id").to_string();
    drain(&r).await;
    let later = show_as(&r, &payouts, &format!("{WITHDRAWALS}/{later_id}")).await;
    assert!(matches!(later["status"].as_str(), Some("pending" | "processing")), "{later}");
    assert_eq!(later["failureReason"], Value::Null, "{later}");
    r.hubtel.fail_sends(None);
    let l = ledger(&r).await;
    assert_eq!(ledger_kinds(&l, &bank_id).iter().map(|(_, a)| a).sum::<f64>(), 0.0, "the hold is released: {l}");
    assert_ledger_clean(&r);
}

/// One Hubtel-gateway USSD request (the USSD wire, not the payment wire): the screen and
/// whether it ended.
async fn ussd(r: &Rig, session: &str, first: bool, message: &str, seq: u32) -> (String, bool) {
    let url = format!("{}/api/white-label/ussd/hubtel/{}?token=ussd-token-hubtel-01", r.base_url, r.account.slug);
    let body = json!({"Type": if first { "Initiation" } else { "Response" }, "Message": message,
        "SessionId": session, "Mobile": "233201234567", "Operator": "vodafone", "Sequence": seq});
    let a = r.http.post(url).json(&body).send().await.expect("ussd");
    assert_eq!(a.status().as_u16(), 200);
    let v: Value = a.json().await.expect("json");
    (v["Message"].as_str().unwrap_or_default().to_string(), v["Type"] == "Release")
}

async fn wire_hubtel_a_ussd_vote_is_pushed_and_counted(b: Backend) {
    let r = rig(b).await;
    let ussd_settings = json!({"config": {"enabled": true, "callbackToken": "ussd-token-hubtel-01",
        "serviceCode": "*920*44#", "maxVotes": 50}});
    let _: Value = r.api().patch(&format!("{V1}/settings/ussd"), &ussd_settings, StatusCode::OK).await;
    let c = running_campaign(&r, &r.account.private, "voting").await;
    let body = json!({"campaignId": c, "name": "Ama Mensah", "code": "AMA", "status": "active"});
    let _: Value = r.api().post(&format!("{V1}/participants"), &body, StatusCode::CREATED).await;

    let session = format!("s{}", uuid::Uuid::now_v7().simple());
    let (_, ended) = ussd(&r, &session, true, "*920*44#", 1).await;
    assert!(!ended);
    ussd(&r, &session, false, "AMA", 2).await;
    ussd(&r, &session, false, "2", 3).await;
    let (_, ended) = ussd(&r, &session, false, "1", 4).await;
    assert!(ended, "confirmed");
    drain(&r).await;
    let push = r.hubtel.requests().into_iter().find(|q| q.path.ends_with("/receive/mobilemoney")).expect("pushed");
    assert!(push.authorized);
    assert_eq!(push.path, format!("/merchantaccount/merchants/{POS_SALES_ID}/receive/mobilemoney"));
    assert_eq!(
        (push.body["CustomerMsisdn"].clone(), push.body["Channel"].clone()),
        (json!("233201234567"), json!("vodafone-gh"))
    );
    assert_eq!(push.body["Amount"], json!(4));
    let reference = crate::support::fakes::hubtel::tessera_ref(push.body["ClientReference"].as_str().expect("ref"));
    assert_eq!(payment(&r, &reference).await["status"], "pending");
    r.hubtel.set_charge(&reference, "Paid", "", None);
    assert_eq!(r.hubtel.charge_callback(&reference, true, None).await, 200);
    drain(&r).await;
    assert_eq!(payment(&r, &reference).await["status"], "success");
    let board: Value = r.api().get(&format!("{V1}/participants?campaignId={c}"), StatusCode::OK).await;
    assert_eq!(board["data"][0]["votes"], 2, "{board}");
    assert_ledger_clean(&r);
}

async fn wire_hubtel_ussd_refuses_a_provider_that_cannot_push(b: Backend) {
    let r = rig(b).await;
    for (path, body, field) in [
        ("ussd", json!({"config": {"provider": "provider_b"}}), "config.provider"),
        (
            "payments",
            json!({"config": {"channels": {"ussd": {"provider": "provider_b"}}}}),
            "config.channels.ussd.provider",
        ),
    ] {
        let a = send(&r, &r.account.private, Method::PATCH, &format!("{V1}/settings/{path}"), Some(body)).await;
        let e = assert_error(&a, 400, "validation_failed");
        assert!(detail_fields(&e).contains(&field.to_string()), "{e}");
    }
    let ok = json!({"config": {"provider": "provider_c"}});
    let _: Value = r.api().patch(&format!("{V1}/settings/ussd"), &ok, StatusCode::OK).await;
}

/// A cancellation's refund of a card payment on Hubtel is recorded failed with why, never sent
/// (D18.3); the mobile-money one beside it is sent back.
async fn wire_hubtel_a_cancellation_records_a_card_refund_failed(b: Backend) {
    let r = rig(b).await;
    let c = running_campaign(&r, &r.account.private, "ticketing").await;
    let t = ticket_type(&r, &r.account.private, &c, 15.0, 100).await;
    let card = reference_of(&buy(&r, &c, &t, 1).await);
    assert_eq!(pay(&r, &card, "card", "233241234567").await["status"], "success");
    let momo = reference_of(&buy(&r, &c, &t, 1).await);
    assert_eq!(pay(&r, &momo, "mobilemoney", "233551234567").await["status"], "success");
    let a = send(
        &r,
        &r.account.private,
        Method::POST,
        &format!("{V1}/campaigns/{c}/cancel"),
        Some(json!({"reason": "Venue flooded", "refund": true})),
    )
    .await;
    assert_eq!(a.status, 202, "{}", a.json());
    drain(&r).await;
    let refunds = |reference: String| {
        let r = &r;
        async move { show(r, &format!("{PAYMENTS}/{reference}/refunds")).await }
    };
    let card_refunds = refunds(card.clone()).await;
    let items = card_refunds.as_array().expect("refunds");
    assert_eq!(items.len(), 1, "{card_refunds}");
    assert_eq!(items[0]["status"], "failed", "{card_refunds}");
    assert!(items[0]["failureReason"].as_str().is_some_and(|w| w.contains("mobile money")), "{card_refunds}");
    let momo_refunds = refunds(momo.clone()).await;
    let id = momo_refunds[0]["id"].as_str().expect("id").to_string();
    let sent = r.hubtel.sent(&id).expect("the mobile-money refund was sent");
    assert_eq!(sent.body["RecipientMsisdn"], "233551234567");
    let sends = r.hubtel.requests().iter().filter(|q| q.method == "POST" && q.path.contains("/send/")).count();
    assert_eq!(sends, 1, "only the mobile-money payment was sent back");
    assert_eq!(payment(&r, &card).await["refunded"], json!(0));
    assert_ledger_clean(&r);
}

/// With no provider that can push configured, a USSD dial ends at once (D18.5, D18.45).
async fn wire_hubtel_a_ussd_dial_without_a_push_provider_is_not_available(b: Backend) {
    let r = rig(b).await;
    let ussd_settings = json!({"config": {"enabled": true, "callbackToken": "ussd-token-hubtel-01",
        "serviceCode": "*920*44#", "maxVotes": 50}});
    let _: Value = r.api().patch(&format!("{V1}/settings/ussd"), &ussd_settings, StatusCode::OK).await;
    let own = json!({"config": {"useSharedDefaults": false}});
    let _: Value = r.api().patch(&format!("{V1}/settings/payments"), &own, StatusCode::OK).await;
    let (screen, ended) = ussd(&r, &format!("s{}", uuid::Uuid::now_v7().simple()), true, "*920*44#", 1).await;
    assert!(ended, "{screen}");
    assert!(screen.contains("not available"), "{screen}");
}

async fn wire_hubtel_malformed_answers_fail_cleanly(b: Backend) {
    let r = rig(b).await;
    let reference = checkout(&r, 10.0).await;
    r.hubtel.status_answer(Some(json!({"responseCode": "0000", "data": {"status": "Paid", "amount": "ten"}})));
    assert_eq!(r.hubtel.charge_callback(&reference, true, None).await, 200);
    drain(&r).await;
    assert_eq!(payment(&r, &reference).await["status"], "pending", "an unreadable status credits nothing");
    r.hubtel.status_answer(Some(json!("not an object")));
    drain(&r).await;
    assert_eq!(payment(&r, &reference).await["status"], "pending");
    r.hubtel.status_answer(None);

    // Hubtel down: the checkout answers 502 provider_unavailable, never a 500.
    r.hubtel.answer_500(true);
    let c = running_campaign(&r, &r.account.private, "ticketing").await;
    let t = ticket_type(&r, &r.account.private, &c, 5.0, 10).await;
    let a = initialize(&r, crate::support::payments::checkout_body(&r, &c, &t, 1)).await;
    assert_error(&a, 502, "provider_unavailable");
    r.hubtel.answer_500(false);
    // A callback body that is not Hubtel's: 400, nothing stored.
    let bad = r.hubtel.post(&token_url(&r, CALLBACK_TOKEN), &json!({"hello": "world"})).await;
    assert_eq!(bad, 400);
    assert_ledger_clean(&r);
}

on_both!(
    wire_hubtel_checkout_credits_after_the_status_check,
    wire_hubtel_votes_and_donations_are_paid_and_card_payments_are_not_refunded,
    wire_hubtel_refunds_send_mobile_money_back_to_the_payer_once,
    wire_hubtel_withdrawals_go_to_wallets_and_banks_with_failure_codes,
    wire_hubtel_a_ussd_vote_is_pushed_and_counted,
    wire_hubtel_ussd_refuses_a_provider_that_cannot_push,
    wire_hubtel_malformed_answers_fail_cleanly,
    wire_hubtel_a_cancellation_records_a_card_refund_failed,
    wire_hubtel_a_ussd_dial_without_a_push_provider_is_not_available,
);

//! Integration tests of the refunds core (D17.33–38, D17.42), enough to prove its pieces: a
//! partial ticket refund end to end through the sandbox, a failed vote refund restoring
//! everything, refunds racing for one donation, and a campaign cancellation. The full matrix is
//! `tests/api/refunds.rs` (R3). Workers are off; each test drains the queues itself and ends
//! with a clean money audit.
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};

use crate::support::catalogue::{participant, running_campaign, ticket_type};
use crate::support::client::{assert_error, detail_fields};
use crate::support::ledger::assert_ledger_clean;
use crate::support::payments::{buy, initialize, payment, sandbox_settle, spawn_paid, PayApp};
use crate::support::server::{drain, Backend, TestApp};

const V1: &str = "/api/white-label/v1";

async fn refund_raw(app: &TestApp, reference: &str, key: Option<&str>, body: &Value) -> RawResponse {
    let mut h = HeaderMap::new();
    if let Some(k) = key {
        h.insert("x-idempotency-key", HeaderValue::from_str(k).expect("header"));
    }
    let path = format!("{V1}/payments/{reference}/refunds");
    let bytes = serde_json::to_vec(body).expect("json");
    app.client_for(&app.account.private).send_raw(Method::POST, &path, bytes, Some(h)).await.expect("send")
}

async fn refund(app: &TestApp, reference: &str, body: &Value) -> RawResponse {
    refund_raw(app, reference, Some(&uuid::Uuid::now_v7().to_string()), body).await
}

async fn get(app: &TestApp, path: &str) -> Value {
    let (s, b) = app.signed(Method::GET, &format!("{V1}{path}"), None).await;
    assert_eq!(s, 200, "{path}: {b}");
    b["data"].clone()
}

async fn settle_refund(p: &PayApp, id: &str, outcome: &str) {
    let url = format!("{}/sandbox/refunds/{id}/{outcome}", p.sandbox.base_url());
    let r = p.http.post(url).json(&json!({})).send().await.expect("sandbox");
    assert_eq!(r.status().as_u16(), 200, "sandbox refund {outcome}");
}

/// A paid purchase: its reference once the sandbox settled it and the queues ran.
async fn paid(p: &PayApp, body: Value) -> String {
    let r = initialize(p, body).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let reference = r.json()["data"]["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
    reference
}

/// Money on the account beyond what the refunds take (the platform keeps its fees, D17.38).
async fn fund(p: &PayApp) {
    let c = running_campaign(p, &p.account.private, "ticketing").await;
    let t = ticket_type(p, &p.account.private, &c, 100.0, 5).await;
    let reference = buy(p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
}

async fn ticket_status(p: &PayApp, code: &str) -> Value {
    let (s, b) = p
        .signed(Method::POST, &format!("{V1}/tickets/verify"), Some(json!({"ticketCode": code, "autoVerify": true})))
        .await;
    assert_eq!(s, 200, "{b}");
    b["data"].clone()
}

async fn a_partial_ticket_refund_voids_its_ticket_and_succeeds_through_the_provider(b: Backend) {
    let p = spawn_paid(b).await;
    fund(&p).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 10).await;
    let reference = buy(&p, &c, &t, 3).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    drain(&p).await;
    let before = payment(&p, &reference).await;
    assert_eq!(before["refunded"], json!(0), "{before}");
    let codes: Vec<String> = before["tickets"]
        .as_array()
        .expect("tickets")
        .iter()
        .map(|t| t["ticketCode"].as_str().expect("code").to_string())
        .collect();
    let unit = before["amount"].as_f64().expect("amount") / 3.0;

    // Refused whole, nothing written: no key, too much, part of a ticket purchase by amount.
    assert_error(&refund_raw(&p, &reference, None, &json!({})).await, 400, "idempotency_key_required");
    assert_error(&refund(&p, &reference, &json!({"amount": 100000})).await, 409, "refund_exceeds_payment");
    let r = refund(&p, &reference, &json!({"amount": 1})).await;
    assert_error(&r, 400, "ticket_codes_required");
    assert_eq!(detail_fields(&r.json()), vec!["ticketCodes"]);
    let r = refund(&p, &reference, &json!({"reason": 5, "ticketCodes": "x"})).await;
    assert_error(&r, 400, "validation_failed");

    let body = json!({"ticketCodes": [codes[0]], "reason": "Cannot come"});
    let r = refund_raw(&p, &reference, Some("rf-1"), &body).await;
    assert_eq!(r.status, 201, "{}", r.json());
    let created = r.json()["data"].clone();
    assert_eq!(created["status"], "pending");
    assert_eq!(created["reference"], json!(reference));
    assert_eq!(created["ticketCodes"], json!([codes[0]]));
    assert_eq!(created["amount"].as_f64(), Some(unit));
    let id = created["id"].as_str().expect("id").to_string();
    // The same key and body replay the first answer; another body is refused.
    let again = refund_raw(&p, &reference, Some("rf-1"), &body).await;
    assert_eq!((again.status, again.json()["data"]["id"].clone()), (201, json!(id)));
    assert_eq!(again.headers.get("idempotent-replayed").and_then(|v| v.to_str().ok()), Some("true"));
    let other = refund_raw(&p, &reference, Some("rf-1"), &json!({"ticketCodes": [codes[1]]})).await;
    assert_error(&other, 409, "idempotency_key_reused");
    // The ticket is void at once: the gate refuses it, and it cannot be refunded twice.
    let gate = ticket_status(&p, &codes[0]).await;
    assert_eq!((gate["result"].clone(), gate["checkedIn"].clone()), (json!("void"), json!(false)), "{gate}");
    assert_error(&refund(&p, &reference, &json!({"ticketCodes": [codes[0]]})).await, 409, "ticket_not_refundable");
    assert_eq!(get(&p, "/balance").await["held"].as_f64(), Some(unit));
    assert_ledger_clean(&p);

    // The worker creates it at the provider once; the provider's success ends it.
    drain(&p).await;
    drain(&p).await;
    let at_provider: Vec<Value> = p.sandbox.refunds().into_iter().filter(|r| r["id"] == json!(id)).collect();
    assert_eq!(at_provider.len(), 1, "{at_provider:?}");
    assert_eq!(get(&p, &format!("/refunds/{id}")).await["status"], "pending");
    settle_refund(&p, &id, "succeed").await;
    drain(&p).await;
    let done = get(&p, &format!("/refunds/{id}")).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let after = payment(&p, &reference).await;
    assert_eq!(after["refunded"].as_f64(), Some(unit), "{after}");
    assert_eq!(get(&p, &format!("/payments/{reference}/refunds")).await.as_array().map(Vec::len), Some(1));
    assert_eq!(get(&p, "/balance").await["held"], json!(0));
    let events = get(&p, "/events?limit=100").await;
    let refunded: Vec<&Value> =
        events.as_array().expect("events").iter().filter(|e| e["type"] == "payment.refunded").collect();
    assert_eq!(refunded.len(), 1, "{events}");
    assert_eq!(refunded[0]["data"]["refunded"].as_f64(), Some(unit));
    // The buyer's e-mail is queued with the success, and its subject says what it is.
    let mail = get(&p, "/notifications?limit=100").await;
    let queued = mail.as_array().expect("notifications").iter().find(|n| n["eventType"] == "payment.refunded");
    let queued = queued.unwrap_or_else(|| panic!("the refund e-mail is queued: {mail}"));
    assert_eq!(queued["recipient"], "buyer@example.com", "{queued}");
    let id = queued["id"].as_str().expect("id");
    let n = p.store.notification_by_id(id).await.expect("read").expect("notification");
    let rendered = tessera_server::flows::notifications::render(&p.state, &n).await.expect("rendered");
    assert!(rendered.subject.contains("Refund"), "{}", rendered.subject);
    assert_ledger_clean(&p);
}

async fn a_refund_racing_a_check_in_of_the_same_ticket_has_one_winner(b: Backend) {
    let p = spawn_paid(b).await;
    fund(&p).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 10).await;
    let reference = buy(&p, &c, &t, 6).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    drain(&p).await;
    let tickets = payment(&p, &reference).await["tickets"].clone();
    let client = p.client_for(&p.account.private);
    let (mut refunded, mut checked_in) = (0, 0);
    for (i, ticket) in tickets.as_array().expect("tickets").iter().enumerate() {
        let code = ticket["ticketCode"].as_str().expect("code").to_string();
        let (a, b) = (client.clone(), client.clone());
        let verify = serde_json::to_vec(&json!({"ticketCode": code, "autoVerify": true})).expect("json");
        let body = serde_json::to_vec(&json!({"ticketCodes": [code]})).expect("json");
        let path = format!("{V1}/payments/{reference}/refunds");
        let gate =
            tokio::spawn(async move { a.send_raw(Method::POST, &format!("{V1}/tickets/verify"), verify, None).await });
        let back = tokio::spawn(async move {
            let mut h = HeaderMap::new();
            h.insert("x-idempotency-key", HeaderValue::from_str(&format!("gate-race-{i}")).expect("header"));
            b.send_raw(Method::POST, &path, body, Some(h)).await
        });
        let (gate, back) = (gate.await.expect("join").expect("send"), back.await.expect("join").expect("send"));
        let won_gate = gate.json()["data"]["result"] == "checked_in";
        let won_refund = back.status == 201;
        assert!(won_gate != won_refund, "exactly one wins: {} {} / {}", back.status, back.json(), gate.json());
        if won_refund {
            assert_eq!(gate.json()["data"]["result"], "void", "{}", gate.json());
            refunded += 1;
        } else {
            assert_error(&back, 409, "ticket_not_refundable");
            checked_in += 1;
        }
    }
    assert_eq!(refunded + checked_in, 6);
    assert_ledger_clean(&p);
}

async fn a_failed_vote_refund_gives_the_votes_and_the_claim_back(b: Backend) {
    let p = spawn_paid(b).await;
    fund(&p).await;
    let c = running_campaign(&p, &p.account.private, "voting").await;
    let nominee = participant(&p, &p.account.private, &c).await;
    let reference = paid(
        &p,
        json!({"transactionType": "vote", "amount": 10, "email": "fan@example.com", "phoneNumber": "0241234567",
               "callbackUrl": format!("https://{}/voted", p.account.domain),
               "metadata": {"campaignId": c, "participantId": nominee}}),
    )
    .await;
    let votes = || async { get(&p, &format!("/participants?campaignId={c}")).await[0]["votes"].clone() };
    assert_eq!(votes().await, json!(5));
    // 3 GHS is not a whole number of 2 GHS votes.
    let r = refund(&p, &reference, &json!({"amount": 3})).await;
    assert_error(&r, 400, "validation_failed");
    assert_eq!(detail_fields(&r.json()), vec!["amount"]);
    let r = refund(&p, &reference, &json!({"amount": 4})).await;
    assert_eq!(r.status, 201, "{}", r.json());
    let id = r.json()["data"]["id"].as_str().expect("id").to_string();
    assert_eq!(votes().await, json!(3));
    assert_ledger_clean(&p);
    drain(&p).await;
    settle_refund(&p, &id, "fail").await;
    drain(&p).await;
    let failed = get(&p, &format!("/refunds/{id}")).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(votes().await, json!(5));
    assert_eq!(get(&p, "/balance").await["held"], json!(0));
    assert_eq!(payment(&p, &reference).await["refunded"], json!(0));
    // The claim came back: the whole payment can be refunded now.
    let r = refund(&p, &reference, &json!({})).await;
    assert_eq!(r.status, 201, "{}", r.json());
    assert_eq!(r.json()["data"]["amount"], payment(&p, &reference).await["amount"]);
    assert_eq!(votes().await, json!(0));
    assert_ledger_clean(&p);
}

async fn refunds_racing_for_one_donation_never_exceed_what_was_paid(b: Backend) {
    let p = spawn_paid(b).await;
    fund(&p).await;
    let c = running_campaign(&p, &p.account.private, "donation").await;
    let reference = paid(
        &p,
        json!({"transactionType": "donation", "amount": 20, "email": "giver@example.com", "phoneNumber": "0241234567",
               "callbackUrl": format!("https://{}/thanks", p.account.domain), "metadata": {"campaignId": c}}),
    )
    .await;
    let client = p.client_for(&p.account.private);
    let path = format!("{V1}/payments/{reference}/refunds");
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let (client, path) = (client.clone(), path.clone());
            tokio::spawn(async move {
                let mut h = HeaderMap::new();
                h.insert("x-idempotency-key", HeaderValue::from_str(&format!("race-{i}")).expect("header"));
                client.send_raw(Method::POST, &path, br#"{"amount": 15}"#.to_vec(), Some(h)).await
            })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.expect("join").expect("send"));
    }
    let created = answers.iter().filter(|r| r.status == 201).count();
    let refused = answers.iter().filter(|r| r.status == 409 && r.json()["code"] == "refund_exceeds_payment").count();
    assert_eq!((created, refused), (1, 11), "{:?}", answers.iter().map(|r| r.json()).collect::<Vec<_>>());
    assert_error(&refund(&p, &reference, &json!({"amount": 5.01})).await, 409, "refund_exceeds_payment");
    let r = refund(&p, &reference, &json!({})).await;
    assert_eq!((r.status, r.json()["data"]["amount"].clone()), (201, json!(5)), "{}", r.json());
    assert_ledger_clean(&p);
}

async fn cancelling_a_campaign_refunds_every_buyer_once_and_answers_the_same_again(b: Backend) {
    let p = spawn_paid(b).await;
    fund(&p).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 5.0, 20).await;
    let mut references = Vec::new();
    for n in 1..=3 {
        let reference = buy(&p, &c, &t, n).await["reference"].as_str().expect("reference").to_string();
        sandbox_settle(&p, &reference, "succeed", json!({})).await;
        references.push(reference);
    }
    drain(&p).await;
    let cancel = |body: Value| {
        let p = &p;
        let path = format!("{V1}/campaigns/{c}/cancel");
        async move { p.signed(Method::POST, &path, Some(body)).await }
    };
    let (s, first) = cancel(json!({"reason": "Venue closed", "refund": true})).await;
    assert_eq!(s, 202, "{first}");
    assert_eq!((first["data"]["id"].clone(), first["data"]["status"].clone()), (json!(c), json!("archived")));
    let (s, again) = cancel(json!({"reason": "Venue closed", "refund": true})).await;
    assert_eq!((s, again["data"]["status"].clone()), (202, json!("archived")), "{again}");
    // Sales stopped.
    let r = initialize(&p, crate::support::payments::checkout_body(&p, &c, &t, 1)).await;
    assert!(r.status >= 400, "{}", r.json());
    drain(&p).await;
    drain(&p).await;
    let (s, _) = cancel(json!({"refund": true})).await;
    assert_eq!(s, 202);
    drain(&p).await;
    let campaign = get(&p, &format!("/campaigns/{c}")).await;
    assert_eq!(campaign["refunds"], json!({"requested": 3, "succeeded": 0, "failed": 0}), "{campaign}");
    for reference in &references {
        let pay = payment(&p, reference).await;
        assert!(pay["tickets"].as_array().expect("tickets").iter().all(|t| t["status"] == "void"), "{pay}");
        let list = get(&p, &format!("/payments/{reference}/refunds")).await;
        assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
        assert_eq!(list[0]["amount"], pay["amount"]);
        settle_refund(&p, list[0]["id"].as_str().expect("id"), "succeed").await;
    }
    assert_ledger_clean(&p);
    drain(&p).await;
    let campaign = get(&p, &format!("/campaigns/{c}")).await;
    assert_eq!(campaign["refunds"], json!({"requested": 3, "succeeded": 3, "failed": 0}), "{campaign}");
    assert_eq!(p.sandbox.refunds().len(), 3);
    assert_ledger_clean(&p);
    // The audit sees refunds: a voided ticket made valid behind the refund's back is reported.
    sql(&p, "UPDATE tickets SET status = 'valid' WHERE transaction_reference = $1", &references[0]).await;
    let out = p.cli(&["admin", "ledger", "check", "--json"]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success() && report.contains("voided_tickets_equal_refunded_tickets"), "{report}");
}

async fn sql(p: &PayApp, statement: &str, arg: &str) {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let url = if p.database_url.is_empty() { p.config.effective_database_url() } else { p.database_url.clone() };
    let mut conn = sqlx::AnyConnection::connect(&url).await.expect("connect");
    sqlx::query(statement).bind(arg).execute(&mut conn).await.expect("sql");
}

async fn refund_callbacks_signed_with_an_accounts_own_secret_are_accepted(b: Backend) {
    for provider in ["provider_a", "provider_b"] {
        let p =
            crate::support::payments::spawn_paid_with(b.clone(), |c| c.security.allow_private_endpoints = true).await;
        let own = p.sandbox.provider_url(provider);
        let config = json!({"config": {"useSharedDefaults": false, "defaultProvider": provider,
            "providers": {provider: {"baseUrl": own, "secretKey": format!("sk_live_own_{provider}")}}}});
        let (s, set) = p.signed(Method::PATCH, &format!("{V1}/settings/payments"), Some(config)).await;
        assert_eq!(s, 200, "{set}");
        fund(&p).await;
        let c = running_campaign(&p, &p.account.private, "ticketing").await;
        let t = ticket_type(&p, &p.account.private, &c, 10.0, 10).await;
        let reference = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
        sandbox_settle(&p, &reference, "succeed", json!({})).await;
        drain(&p).await;
        assert_eq!(payment(&p, &reference).await["provider"], provider);
        let r = refund(&p, &reference, &json!({})).await;
        assert_eq!(r.status, 201, "{}", r.json());
        let id = r.json()["data"]["id"].as_str().expect("id").to_string();
        drain(&p).await;
        // Flutterwave's refund is known at the sandbox by its own id (its wire carries none of
        // Tessera's, D18.2): found there by the charge it refunds.
        let at = match provider {
            "provider_b" => p
                .sandbox
                .refunds()
                .into_iter()
                .find(|r| r["transaction"] == reference.as_str())
                .expect("at the sandbox")["providerId"]
                .to_string(),
            _ => id.clone(),
        };
        settle_refund(&p, &at, "succeed").await;
        let delivered = p.sandbox.callbacks();
        assert_eq!(delivered[0]["status"], 200, "{provider}: signed with the account's own secret: {delivered:?}");
        drain(&p).await;
        assert_eq!(get(&p, &format!("/refunds/{id}")).await["status"], "succeeded");
        assert_ledger_clean(&p);
    }
}

/// How long filing a cancellation's refunds takes: `TESSERA_CANCEL_PAYMENTS` payments (default
/// 300), one ticket each. Ignored by default (it measures; run with `--run-ignored only`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn cancellation_filing_throughput() {
    let n: usize = std::env::var("TESSERA_CANCEL_PAYMENTS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let b = Backend::postgres().unwrap_or(Backend::Sqlite);
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 5.0, n as i64 + 1).await;
    for _ in 0..n {
        let reference = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
        sandbox_settle(&p, &reference, "succeed", json!({"deliver": false})).await;
    }
    drain(&p).await;
    fund(&p).await;
    let started = std::time::Instant::now();
    let (s, b) = p.signed(Method::POST, &format!("{V1}/campaigns/{c}/cancel"), Some(json!({"refund": true}))).await;
    assert_eq!(s, 202, "{b}");
    let answered = started.elapsed();
    while tessera_server::workers::refunds::try_file_one(&p.state).await.expect("file") {}
    let filed = started.elapsed();
    let campaign = get(&p, &format!("/campaigns/{c}")).await;
    eprintln!(
        "cancel of {n} payments: answered in {answered:?}, {} refunds filed in {filed:?} ({:.0}/s)",
        campaign["refunds"]["requested"],
        n as f64 / filed.as_secs_f64()
    );
    assert_eq!(campaign["refunds"]["requested"], json!(n));
    assert_ledger_clean(&p);
}

on_both!(
    refund_callbacks_signed_with_an_accounts_own_secret_are_accepted,
    a_partial_ticket_refund_voids_its_ticket_and_succeeds_through_the_provider,
    a_failed_vote_refund_gives_the_votes_and_the_claim_back,
    refunds_racing_for_one_donation_never_exceed_what_was_paid,
    a_refund_racing_a_check_in_of_the_same_ticket_has_one_winner,
    cancelling_a_campaign_refunds_every_buyer_once_and_answers_the_same_again,
);

//! Integration tests: refunds and cancelled campaigns end to end (issue 26; D17.33–38, D17.42)
//! through the real server and the sandbox's refund API, on SQLite and PostgreSQL. Workers are
//! off; each test drains the queues itself. Every test ends with a clean money audit.
use std::collections::BTreeSet;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};

use crate::support::catalogue::{participant, running_campaign, ticket_type};
use crate::support::client::{assert_error, detail_fields, send, StatusCode};
use crate::support::ledger::{assert_ledger_clean, kinds, ledger, ledger_kinds};
use crate::support::mail::point_mail_at_sandbox;
use crate::support::payments::{
    buy, customer_pays_fees, initialize, payment, sandbox_settle, spawn_paid_with, PayApp, BALANCE, LEDGER, PAYMENTS,
};
use crate::support::server::{drain, Backend, TestApp, TestKey};
use crate::support::tickets::{code_of, VERIFY};

const V1: &str = "/api/white-label/v1";

fn refunds_path(reference: &str) -> String {
    format!("{PAYMENTS}/{reference}/refunds")
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().expect("id").to_string()
}

/// A signed server with the sandbox's SMTP sink as the account's mail relay.
async fn spawn(b: Backend) -> PayApp {
    let p = spawn_paid_with(b, |c| c.security.allow_private_endpoints = true).await;
    point_mail_at_sandbox(&p, &p.account.private).await;
    p
}

async fn refund_raw(app: &TestApp, key: &TestKey, reference: &str, idem: Option<&str>, bytes: Vec<u8>) -> RawResponse {
    let mut h = HeaderMap::new();
    if let Some(k) = idem {
        h.insert("x-idempotency-key", HeaderValue::from_str(k).expect("header"));
    }
    app.client_for(key).send_raw(Method::POST, &refunds_path(reference), bytes, Some(h)).await.expect("send")
}

async fn refund(app: &TestApp, reference: &str, idem: &str, body: &Value) -> RawResponse {
    refund_raw(app, &app.account.private, reference, Some(idem), serde_json::to_vec(body).expect("json")).await
}

/// Files a refund (201 asserted) under a fresh idempotency key; its data.
async fn refunded(app: &TestApp, reference: &str, body: Value) -> Value {
    let r = refund(app, reference, &uuid::Uuid::now_v7().to_string(), &body).await;
    assert_eq!(r.status, 201, "{}", r.json());
    r.json()["data"].clone()
}

async fn show(app: &TestApp, id: &str) -> Value {
    let b: Value = app.api().get(&format!("{V1}/refunds/{id}"), StatusCode::OK).await;
    b["data"].clone()
}

async fn list(app: &TestApp, reference: &str) -> Value {
    let b: Value = app.api().get(&refunds_path(reference), StatusCode::OK).await;
    b
}

async fn available(app: &TestApp) -> f64 {
    let b: Value = app.api().get(BALANCE, StatusCode::OK).await;
    num(&b["data"]["available"])
}

/// The sandbox's record of a refund (`GET /sandbox/refunds/:id`), or None on 404.
async fn sandbox_refund(p: &PayApp, id: &str) -> Option<Value> {
    let r = p.http.get(format!("{}/sandbox/refunds/{id}", p.sandbox.base_url())).send().await.expect("sandbox");
    match r.status().as_u16() {
        200 => Some(r.json().await.expect("json")),
        404 => None,
        other => panic!("sandbox refund read answered {other}"),
    }
}

/// Every refund the sandbox holds (newest first).
async fn sandbox_refunds(p: &PayApp) -> Vec<Value> {
    let r = p.http.get(format!("{}/sandbox/refunds", p.sandbox.base_url())).send().await.expect("sandbox");
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.expect("json");
    // A bare array, or the list under `data`.
    v.as_array().cloned().or_else(|| v["data"].as_array().cloned()).expect("a list of refunds")
}

async fn settle_refund(p: &PayApp, id: &str, outcome: &str, body: Value) {
    let r = p
        .http
        .post(format!("{}/sandbox/refunds/{id}/{outcome}", p.sandbox.base_url()))
        .json(&body)
        .send()
        .await
        .expect("sandbox");
    assert_eq!(r.status().as_u16(), 200, "sandbox refund {outcome}: {}", r.text().await.unwrap_or_default());
}

/// Drains until the refund leaves `pending`.
async fn until_ended(p: &PayApp, id: &str) -> Value {
    for _ in 0..400 {
        drain(p).await;
        let r = show(p, id).await;
        if r["status"] != "pending" {
            return r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("refund {id} did not end");
}

/// The worker creates the refund at the provider; the sandbox then settles it (callback on) and
/// the server reconciles it. Returns the refund as GET shows it.
async fn settle(p: &PayApp, id: &str, outcome: &str, body: Value) -> Value {
    drain(p).await;
    assert!(sandbox_refund(p, id).await.is_some(), "the worker created refund {id} at the provider");
    settle_refund(p, id, outcome, body).await;
    until_ended(p, id).await
}

/// A paid ticket purchase: `quantity` tickets at `price` GHS, confirmed. (campaign, reference,
/// ticket codes).
async fn paid_tickets(p: &PayApp, price: f64, quantity: i64) -> (String, String, Vec<String>) {
    let c = running_campaign(p, &p.account.private, "ticketing").await;
    let (reference, codes) = paid_tickets_of(p, &c, price, quantity).await;
    (c, reference, codes)
}

async fn paid_tickets_of(p: &PayApp, campaign: &str, price: f64, quantity: i64) -> (String, Vec<String>) {
    let t = ticket_type(p, &p.account.private, campaign, price, 100).await;
    let reference = buy(p, campaign, &t, quantity).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
    let paid = payment(p, &reference).await;
    assert_eq!(paid["status"], "success", "{paid}");
    let codes: Vec<String> = paid["tickets"].as_array().expect("tickets").iter().map(code_of).collect();
    assert_eq!(codes.len() as i64, quantity);
    (reference, codes)
}

/// A paid vote of `count` votes (2 GHS each): (campaign, nominee, reference).
async fn paid_votes(p: &PayApp, count: i64) -> (String, String, String) {
    let c = running_campaign(p, &p.account.private, "voting").await;
    let nominee = participant(p, &p.account.private, &c).await;
    let r = initialize(
        p,
        json!({"transactionType": "vote", "amount": 2 * count, "email": "fan@example.com", "phoneNumber": "0241234567",
            "callbackUrl": format!("https://{}/voted", p.account.domain),
            "metadata": {"campaignId": c, "participantId": nominee}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let reference = r.json()["data"]["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
    assert_eq!(payment(p, &reference).await["status"], "success");
    (c, nominee, reference)
}

async fn votes_of(p: &PayApp, campaign: &str) -> i64 {
    let list: Value = p.api().get(&format!("{V1}/participants?campaignId={campaign}"), StatusCode::OK).await;
    list["data"][0]["votes"].as_i64().expect("votes")
}

/// A paid donation of `amount` GHS by giver@example.com: its reference.
async fn paid_donation(p: &PayApp, amount: f64) -> String {
    let c = running_campaign(p, &p.account.private, "donation").await;
    let r = initialize(
        p,
        json!({"transactionType": "donation", "amount": amount, "email": "giver@example.com",
            "phoneNumber": "+233201234567", "callbackUrl": format!("https://{}/thanks", p.account.domain),
            "metadata": {"campaignId": c}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let reference = r.json()["data"]["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
    assert_eq!(payment(p, &reference).await["status"], "success");
    reference
}

fn ticket_statuses(paid: &Value) -> Vec<(String, String)> {
    paid["tickets"]
        .as_array()
        .expect("tickets")
        .iter()
        .map(|t| (code_of(t), t["status"].as_str().unwrap_or_default().to_string()))
        .collect()
}

fn status_of(paid: &Value, code: &str) -> String {
    ticket_statuses(paid).into_iter().find(|(c, _)| c == code).map(|(_, s)| s).expect("ticket of the purchase")
}

/// A signed check-in attempt: the verify answer's `data`.
async fn check_in(p: &PayApp, code: &str) -> Value {
    let r =
        send(p, &p.account.private, Method::POST, VERIFY, Some(json!({"ticketCode": code, "autoVerify": true}))).await;
    assert_eq!(r.status, 200, "{}", r.json());
    r.json()["data"].clone()
}

async fn feed(p: &PayApp) -> Vec<Value> {
    let v: Value = p.api().get(&format!("{V1}/events?limit=100"), StatusCode::OK).await;
    v["data"].as_array().cloned().unwrap_or_default()
}

async fn campaign(p: &PayApp, id: &str) -> Value {
    let b: Value = p.api().get(&format!("{V1}/campaigns/{id}"), StatusCode::OK).await;
    b["data"].clone()
}

async fn cancel(p: &PayApp, id: &str, body: Value) -> RawResponse {
    send(p, &p.account.private, Method::POST, &format!("{V1}/campaigns/{id}/cancel"), Some(body)).await
}

// ---------------------------------------------------------------------------------------------

async fn a_whole_ticket_refund_voids_every_ticket_and_completes_with_ledger_event_and_email(b: Backend) {
    let p = spawn(b).await;
    let (_, reference, codes) = paid_tickets(&p, 25.0, 2).await;
    assert_eq!(num(&payment(&p, &reference).await["refunded"]), 0.0);
    let r = refunded(&p, &reference, json!({"reason": "Buyer asked"})).await;
    let id = id_of(&r);
    assert_eq!(r["status"], "pending");
    assert_eq!(r["reference"], reference.as_str());
    assert_eq!(num(&r["amount"]), 50.0, "the whole remainder: {r}");
    assert_eq!(r["reason"], "Buyer asked");
    let listed: BTreeSet<String> = r["ticketCodes"]
        .as_array()
        .expect("ticketCodes")
        .iter()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    assert_eq!(listed, codes.iter().cloned().collect::<BTreeSet<_>>(), "a whole refund names every ticket");
    assert!(r["createdAt"].as_str().is_some(), "{r}");
    // Effects at creation: the gate stops at once, the money is held.
    let paid = payment(&p, &reference).await;
    assert!(ticket_statuses(&paid).iter().all(|(_, s)| s == "void"), "{paid}");
    let at_gate = check_in(&p, &codes[0]).await;
    assert_eq!(at_gate["result"], "void", "{at_gate}");
    assert_eq!(at_gate["checkedIn"], false);
    assert_eq!(available(&p).await, 0.0);
    assert_eq!(num(&paid["refunded"]), 0.0, "refunded sums succeeded refunds only");
    assert_eq!(ledger_kinds(&ledger(&p).await, &id), kinds(&[("refund_hold", -50.0)]));
    // Reads.
    assert_eq!(show(&p, &id).await, r);
    let l = list(&p, &reference).await;
    assert_eq!(l["data"].as_array().map(Vec::len), Some(1), "{l}");
    assert_eq!(l["data"][0]["id"], id.as_str());
    // The worker files it at the provider, in pesewas, under the refund's id.
    drain(&p).await;
    let at_provider = sandbox_refund(&p, &id).await.expect("sandbox refund");
    assert_eq!(at_provider["amount"], 5000, "{at_provider}");
    assert_eq!(at_provider["transaction"], reference.as_str());
    assert_eq!(at_provider["provider"], "provider_a");
    assert_eq!(show(&p, &id).await["status"], "pending");
    // The provider refunds; its callback is confirmed and applied.
    settle_refund(&p, &id, "succeed", json!({})).await;
    let done = until_ended(&p, &id).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let paid = payment(&p, &reference).await;
    assert_eq!(num(&paid["refunded"]), 50.0, "{paid}");
    assert!(ticket_statuses(&paid).iter().all(|(_, s)| s == "void"));
    assert_eq!(available(&p).await, 0.0);
    assert_eq!(
        ledger_kinds(&ledger(&p).await, &id),
        kinds(&[("refund_debit", -50.0), ("refund_hold", -50.0), ("refund_release", 50.0)])
    );
    // Nothing more can be refunded (which 409 a whole refund of nothing gets is left open).
    let r = refund(&p, &reference, "again", &json!({})).await;
    assert_eq!(r.status, 409, "{}", r.json());
    // A void ticket of a fully refunded purchase: either reason is a 409 (D17.33 orders neither).
    let r = refund(&p, &reference, "more", &json!({"ticketCodes": [codes[0]]})).await;
    assert_eq!(r.status, 409, "{}", r.json());
    assert!(
        matches!(r.json()["code"].as_str(), Some("ticket_not_refundable" | "refund_exceeds_payment")),
        "{}",
        r.json()
    );
    // The buyer's e-mail and the outbound event.
    drain(&p).await;
    let mail: Vec<Value> = p
        .sandbox
        .mail()
        .into_iter()
        .filter(|m| m["to"].as_str().is_some_and(|t| t.contains("buyer@example.com")))
        .filter(|m| m["subject"].as_str().is_some_and(|s| s.contains("Refund")))
        .collect();
    assert_eq!(mail.len(), 1, "one refund e-mail to the buyer: {:?}", p.sandbox.mail());
    let events: Vec<Value> = feed(&p).await.into_iter().filter(|e| e["type"] == "payment.refunded").collect();
    assert_eq!(events.len(), 1, "one payment.refunded event");
    assert_eq!(events[0]["data"]["reference"], reference.as_str());
    assert_eq!(num(&events[0]["data"]["refunded"]), 50.0, "the payment as GET shows it: {}", events[0]);
    assert_ledger_clean(&p);
}

async fn a_partial_ticket_refund_by_ticket_codes_voids_only_those(b: Backend) {
    let p = spawn(b).await;
    let (_, reference, codes) = paid_tickets(&p, 20.0, 3).await;
    let r = refunded(&p, &reference, json!({"ticketCodes": [codes[1]]})).await;
    assert_eq!(num(&r["amount"]), 20.0, "the amount is the ticket's price: {r}");
    assert_eq!(r["ticketCodes"], json!([codes[1]]));
    let paid = payment(&p, &reference).await;
    assert_eq!(status_of(&paid, &codes[1]), "void");
    assert_eq!(status_of(&paid, &codes[0]), "valid");
    assert_eq!(status_of(&paid, &codes[2]), "valid");
    assert_eq!(check_in(&p, &codes[0]).await["result"], "checked_in");
    let done = settle(&p, &id_of(&r), "succeed", json!({})).await;
    assert_eq!(done["status"], "succeeded");
    assert_eq!(num(&payment(&p, &reference).await["refunded"]), 20.0);
    // A void ticket, a checked-in ticket and a stranger's code are not refundable.
    for bad in [codes[1].clone(), codes[0].clone(), "NOSUCHTICKETCODE00000000".to_string()] {
        let r = refund(&p, &reference, &format!("bad-{bad}"), &json!({"ticketCodes": [bad]})).await;
        assert_error(&r, 409, "ticket_not_refundable");
    }
    // Another purchase's ticket is not this purchase's.
    let (_, other_ref, other_codes) = paid_tickets(&p, 20.0, 1).await;
    let r = refund(&p, &reference, "theirs", &json!({"ticketCodes": [other_codes[0]]})).await;
    assert_error(&r, 409, "ticket_not_refundable");
    // An amount alone less than the remainder: the tickets must be named.
    let r = refund(&p, &reference, "amount-only", &json!({"amount": 20})).await;
    assert_error(&r, 400, "ticket_codes_required");
    // The last refundable ticket, by its code.
    let rest = refunded(&p, &reference, json!({"ticketCodes": [codes[2]]})).await;
    assert_eq!(num(&rest["amount"]), 20.0, "{rest}");
    let paid = payment(&p, &reference).await;
    assert_eq!(status_of(&paid, &codes[2]), "void");
    assert_eq!(status_of(&paid, &codes[0]), "valid", "a checked-in ticket is never voided");
    assert_eq!(status_of(&payment(&p, &other_ref).await, &other_codes[0]), "valid");
    settle(&p, &id_of(&rest), "succeed", json!({})).await;
    assert_eq!(num(&payment(&p, &reference).await["refunded"]), 40.0);
    assert_ledger_clean(&p);
}

async fn vote_refunds_take_back_whole_votes(b: Backend) {
    let p = spawn(b).await;
    let (c, _, reference) = paid_votes(&p, 10).await;
    assert_eq!(votes_of(&p, &c).await, 10);
    // Not a whole number of 2 GHS votes.
    let r = refund(&p, &reference, "odd", &json!({"amount": 3})).await;
    assert_eq!(r.status, 400, "{}", r.json());
    assert!(detail_fields(&r.json()).contains(&"amount".to_string()), "{}", r.json());
    // Ticket codes on a vote: nothing to void.
    let r = refund(&p, &reference, "codes", &json!({"ticketCodes": ["X"]})).await;
    assert!(matches!(r.status, 400 | 409), "{}", r.json());
    let part = refunded(&p, &reference, json!({"amount": 6})).await;
    assert_eq!(votes_of(&p, &c).await, 7, "votes drop at creation");
    assert_eq!(settle(&p, &id_of(&part), "succeed", json!({})).await["status"], "succeeded");
    assert_eq!(votes_of(&p, &c).await, 7);
    let paid = payment(&p, &reference).await;
    assert_eq!(num(&paid["refunded"]), 6.0);
    let rest = refunded(&p, &reference, json!({})).await;
    assert_eq!(num(&rest["amount"]), 14.0, "{rest}");
    assert_eq!(votes_of(&p, &c).await, 0);
    assert_eq!(settle(&p, &id_of(&rest), "succeed", json!({})).await["status"], "succeeded");
    assert_eq!(num(&payment(&p, &reference).await["refunded"]), 20.0);
    assert_eq!(available(&p).await, 0.0);
    assert_ledger_clean(&p);
}

async fn donation_refunds_whole_and_partial(b: Backend) {
    let p = spawn(b).await;
    let reference = paid_donation(&p, 75.25).await;
    let part = refunded(&p, &reference, json!({"amount": 25.25, "reason": "Duplicate"})).await;
    assert_eq!(num(&part["amount"]), 25.25);
    assert!(part["ticketCodes"].is_null() || part["ticketCodes"] == json!([]), "{part}");
    assert_eq!(available(&p).await, 50.0);
    let r = refund(&p, &reference, "too-much", &json!({"amount": 50.01})).await;
    assert_error(&r, 409, "refund_exceeds_payment");
    assert_eq!(settle(&p, &id_of(&part), "succeed", json!({})).await["status"], "succeeded");
    let rest = refunded(&p, &reference, json!({})).await;
    assert_eq!(num(&rest["amount"]), 50.0);
    assert_eq!(settle(&p, &id_of(&rest), "succeed", json!({})).await["status"], "succeeded");
    let paid = payment(&p, &reference).await;
    assert_eq!(num(&paid["refunded"]), 75.25, "{paid}");
    assert_eq!(available(&p).await, 0.0);
    let l = list(&p, &reference).await;
    assert_eq!(l["data"].as_array().map(Vec::len), Some(2), "{l}");
    // The money is gone to the givers: the ledger algebra nets −X per refund.
    let ledger = ledger(&p).await;
    for id in [id_of(&part), id_of(&rest)] {
        let sum: f64 = ledger_kinds(&ledger, &id).iter().map(|(_, a)| a).sum();
        let amount = if id == id_of(&part) { 25.25 } else { 50.0 };
        assert!((sum + amount).abs() < 1e-9, "{id} nets −{amount}: {ledger}");
    }
    assert_ledger_clean(&p);
}

async fn the_ceiling_is_what_the_customer_paid_fees_included(b: Backend) {
    let p = spawn(b).await;
    customer_pays_fees(&p).await;
    // A second purchase funds the balance so the fee-inclusive refund fits.
    let (_, reference, _) = paid_tickets(&p, 100.0, 1).await;
    let paid = payment(&p, &reference).await;
    assert_eq!(num(&paid["amount"]), 103.0, "{paid}");
    paid_tickets(&p, 100.0, 1).await;
    let r = refund(&p, &reference, "over", &json!({"amount": 103.01})).await;
    assert_error(&r, 409, "refund_exceeds_payment");
    let whole = refunded(&p, &reference, json!({})).await;
    assert_eq!(num(&whole["amount"]), 103.0, "the customer's whole payment, fees included: {whole}");
    assert_eq!(available(&p).await, 97.0, "the platform keeps its fee: the balance pays it all");
    assert_eq!(settle(&p, &id_of(&whole), "succeed", json!({})).await["status"], "succeeded");
    assert_ledger_clean(&p);
}

async fn a_failed_refund_restores_tickets_votes_donation_and_balance(b: Backend) {
    let p = spawn(b).await;
    // Tickets.
    let (_, tickets_ref, codes) = paid_tickets(&p, 15.0, 2).await;
    let t = refunded(&p, &tickets_ref, json!({"ticketCodes": [codes[0]]})).await;
    assert_eq!(status_of(&payment(&p, &tickets_ref).await, &codes[0]), "void");
    // Votes.
    let (c, _, votes_ref) = paid_votes(&p, 5).await;
    let v = refunded(&p, &votes_ref, json!({})).await;
    assert_eq!(votes_of(&p, &c).await, 0);
    // A donation.
    let donation_ref = paid_donation(&p, 40.0).await;
    let d = refunded(&p, &donation_ref, json!({"amount": 40})).await;
    assert_eq!(available(&p).await, 30.0 + 10.0 + 40.0 - 15.0 - 10.0 - 40.0);
    // The provider fails each of them (one by callback, two found by polling).
    let failed = settle(&p, &id_of(&t), "fail", json!({"reason": "Card closed"})).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    drain(&p).await;
    settle_refund(&p, &id_of(&v), "fail", json!({"deliver": false})).await;
    settle_refund(&p, &id_of(&d), "fail", json!({"deliver": false})).await;
    assert_eq!(until_ended(&p, &id_of(&v)).await["status"], "failed");
    assert_eq!(until_ended(&p, &id_of(&d)).await["status"], "failed");
    // Everything is as it was.
    let paid = payment(&p, &tickets_ref).await;
    assert_eq!(status_of(&paid, &codes[0]), "valid", "{paid}");
    assert_eq!(num(&paid["refunded"]), 0.0);
    assert_eq!(check_in(&p, &codes[0]).await["result"], "checked_in", "a restored ticket admits again");
    assert_eq!(votes_of(&p, &c).await, 5);
    assert_eq!(num(&payment(&p, &donation_ref).await["refunded"]), 0.0);
    assert_eq!(available(&p).await, 80.0);
    let ledger = ledger(&p).await;
    assert_eq!(ledger_kinds(&ledger, &id_of(&t)), kinds(&[("refund_hold", -15.0), ("refund_release", 15.0)]));
    assert_eq!(ledger_kinds(&ledger, &id_of(&v)), kinds(&[("refund_hold", -10.0), ("refund_release", 10.0)]));
    assert_eq!(ledger_kinds(&ledger, &id_of(&d)), kinds(&[("refund_hold", -40.0), ("refund_release", 40.0)]));
    // No e-mail and no event for a failure; the ceiling is free again.
    drain(&p).await;
    assert!(
        !p.sandbox.mail().iter().any(|m| m["subject"].as_str().is_some_and(|s| s.contains("Refund"))),
        "no refund e-mail for a failed refund"
    );
    assert!(!feed(&p).await.iter().any(|e| e["type"] == "payment.refunded"));
    let again = refunded(&p, &donation_ref, json!({})).await;
    assert_eq!(num(&again["amount"]), 40.0);
    assert_ledger_clean(&p);
}

async fn only_a_successful_payment_is_refundable(b: Backend) {
    let p = spawn(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 10).await;
    let pending = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    assert_error(&refund(&p, &pending, "pending", &json!({})).await, 409, "not_refundable");
    let failed = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &failed, "fail", json!({})).await;
    drain(&p).await;
    assert_eq!(payment(&p, &failed).await["status"], "failed");
    assert_error(&refund(&p, &failed, "failed", &json!({})).await, 409, "not_refundable");
    assert_error(&refund(&p, "tsr_nosuchreference", "unknown", &json!({})).await, 404, "not_found");
    assert!(list(&p, &pending).await["data"].as_array().is_some_and(Vec::is_empty));
    assert_ledger_clean(&p);
}

/// Money still settling is not available: a refund above the available balance is refused.
async fn a_refund_above_the_available_balance_is_409_and_writes_nothing(b: Backend) {
    let p = spawn_paid_with(b, |c| c.payments.settlement_delay_seconds = 3600).await;
    let reference = paid_donation(&p, 30.0).await;
    let r = refund(&p, &reference, "unsettled", &json!({})).await;
    assert_error(&r, 409, "insufficient_balance");
    assert!(list(&p, &reference).await["data"].as_array().is_some_and(Vec::is_empty), "nothing half-written");
    assert_ledger_clean(&p);
}

async fn each_refund_rule_is_a_400_naming_its_field(b: Backend) {
    let p = spawn(b).await;
    let reference = paid_donation(&p, 50.0).await;
    let r = refund_raw(&p, &p.account.private, &reference, None, b"{}".to_vec()).await;
    let e = assert_error(&r, 400, "idempotency_key_required");
    assert_eq!(detail_fields(&e), ["X-Idempotency-Key"]);
    let r = refund(&p, &reference, &"k".repeat(256), &json!({})).await;
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), ["X-Idempotency-Key"]);
    let cases: Vec<(Value, &str)> = vec![
        (json!({"amount": 0}), "amount"),
        (json!({"amount": -5}), "amount"),
        (json!({"amount": 1.005}), "amount"),
        (json!({"amount": "10"}), "amount"),
        (json!({"reason": 5}), "reason"),
        (json!({"ticketCodes": "ABC"}), "ticketCodes"),
        (json!({"ticketCodes": [1]}), "ticketCodes"),
        (json!({"amount": 10, "fee": 0}), "fee"),
    ];
    for (i, (bad, field)) in cases.into_iter().enumerate() {
        let r = refund(&p, &reference, &format!("rule-{i}"), &bad).await;
        let e = assert_error(&r, 400, "validation_failed");
        // An item is named by its index (`ticketCodes[0]`).
        assert!(detail_fields(&e).iter().any(|f| f == field || f.starts_with(&format!("{field}["))), "{field}: {e}");
    }
    let r = refund_raw(&p, &p.account.private, &reference, Some("not-json"), b"[1]".to_vec()).await;
    assert_error(&r, 400, "malformed_json");
    // An invalid body binds nothing: the same key then files the refund.
    let r = refund(&p, &reference, "rule-0", &json!({"amount": 10})).await;
    assert_eq!(r.status, 201, "{}", r.json());
    assert_eq!(list(&p, &reference).await["data"].as_array().map(Vec::len), Some(1));
    assert_ledger_clean(&p);
}

async fn the_same_key_and_body_replay_and_another_body_is_409(b: Backend) {
    let p = spawn(b).await;
    let reference = paid_donation(&p, 50.0).await;
    let first = refund(&p, &reference, "rf-42", &json!({"amount": 12.5, "reason": "Double charge"})).await;
    assert_eq!(first.status, 201, "{}", first.json());
    let first_rid = first.headers.get("x-request-id").and_then(|v| v.to_str().ok()).expect("rid").to_string();
    let same = br#"{ "reason": "Double charge",  "amount": 12.5 }"#;
    let again = refund_raw(&p, &p.account.private, &reference, Some("rf-42"), same.to_vec()).await;
    assert_eq!(again.status, 201, "{}", again.json());
    assert_eq!(again.json()["data"], first.json()["data"]);
    assert_eq!(again.headers.get("idempotent-replayed").and_then(|v| v.to_str().ok()), Some("true"));
    assert_eq!(again.headers.get("original-request").and_then(|v| v.to_str().ok()), Some(first_rid.as_str()));
    let r = refund(&p, &reference, "rf-42", &json!({"amount": 13})).await;
    assert_error(&r, 409, "idempotency_key_reused");
    assert_eq!(list(&p, &reference).await["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(available(&p).await, 37.5);
    // Fifty at once with one new key: one refund, identical answers.
    let client = p.client();
    let bytes = serde_json::to_vec(&json!({"amount": 5})).expect("json");
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (client, bytes, path) = (client.clone(), bytes.clone(), refunds_path(&reference));
        tasks.push(tokio::spawn(async move {
            let mut h = HeaderMap::new();
            h.insert("x-idempotency-key", HeaderValue::from_static("rf-burst"));
            client.send_raw(Method::POST, &path, bytes, Some(h)).await
        }));
    }
    let mut datas = Vec::new();
    for t in tasks {
        let r = t.await.expect("join").expect("send");
        assert_eq!(r.status, 201, "{}", r.json());
        datas.push(r.json()["data"].clone());
    }
    assert!(datas.iter().all(|d| *d == datas[0]), "identical answers");
    assert_eq!(list(&p, &reference).await["data"].as_array().map(Vec::len), Some(2));
    assert_eq!(available(&p).await, 32.5);
    drain(&p).await;
    assert_eq!(sandbox_refunds(&p).await.len(), 2, "one provider refund each");
    assert_ledger_clean(&p);
}

async fn concurrent_refunds_never_exceed_what_was_paid(b: Backend) {
    let p = spawn(b).await;
    let reference = paid_donation(&p, 100.0).await;
    let client = p.client();
    let mut tasks = Vec::new();
    for i in 0..40 {
        let (client, path) = (client.clone(), refunds_path(&reference));
        let bytes = serde_json::to_vec(&json!({"amount": 7})).expect("json");
        tasks.push(tokio::spawn(async move {
            let mut h = HeaderMap::new();
            h.insert("x-idempotency-key", HeaderValue::from_str(&format!("race-{i}")).expect("header"));
            client.send_raw(Method::POST, &path, bytes, Some(h)).await
        }));
    }
    let (mut accepted, mut refused) = (0, 0);
    for t in tasks {
        let r = t.await.expect("join").expect("send");
        match r.status {
            201 => accepted += 1,
            409 => {
                assert_eq!(r.json()["code"], "refund_exceeds_payment", "{}", r.json());
                refused += 1;
            }
            other => panic!("unexpected {other}: {}", r.json()),
        }
    }
    assert_eq!((accepted, refused), (14, 26), "14 × 7 GHS fit in 100 GHS");
    // Whole-remainder refunds racing: exactly one takes the 2 GHS left.
    let mut tasks = Vec::new();
    for i in 0..10 {
        let (client, path) = (client.clone(), refunds_path(&reference));
        tasks.push(tokio::spawn(async move {
            let mut h = HeaderMap::new();
            h.insert("x-idempotency-key", HeaderValue::from_str(&format!("rest-{i}")).expect("header"));
            client.send_raw(Method::POST, &path, b"{}".to_vec(), Some(h)).await
        }));
    }
    let mut created = Vec::new();
    for t in tasks {
        let r = t.await.expect("join").expect("send");
        match r.status {
            201 => created.push(r.json()["data"].clone()),
            409 => assert_eq!(r.json()["code"], "refund_exceeds_payment", "{}", r.json()),
            other => panic!("unexpected {other}: {}", r.json()),
        }
    }
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(num(&created[0]["amount"]), 2.0);
    assert_eq!(available(&p).await, 0.0);
    // Whatever the provider does, the total at the provider is what was paid.
    drain(&p).await;
    let at_provider: i64 = sandbox_refunds(&p)
        .await
        .iter()
        .filter(|r| r["transaction"] == reference.as_str())
        .filter_map(|r| r["amount"].as_i64())
        .sum();
    assert_eq!(at_provider, 10_000);
    assert_ledger_clean(&p);
}

async fn a_refund_racing_a_check_in_of_the_same_ticket_has_exactly_one_winner(b: Backend) {
    let p = spawn(b).await;
    let (_, reference, codes) = paid_tickets(&p, 10.0, 10).await;
    let client = p.client();
    let mut tasks = Vec::new();
    for code in &codes {
        let (c1, c2, code, path) = (client.clone(), client.clone(), code.clone(), refunds_path(&reference));
        let refund_body = serde_json::to_vec(&json!({"ticketCodes": [code]})).expect("json");
        let verify_body = serde_json::to_vec(&json!({"ticketCode": code, "autoVerify": true})).expect("json");
        let key = format!("gate-{code}");
        let refund = tokio::spawn(async move {
            let mut h = HeaderMap::new();
            h.insert("x-idempotency-key", HeaderValue::from_str(&key).expect("header"));
            c1.send_raw(Method::POST, &path, refund_body, Some(h)).await.expect("send")
        });
        let gate =
            tokio::spawn(async move { c2.send_raw(Method::POST, VERIFY, verify_body, None).await.expect("send") });
        tasks.push((code, refund, gate));
    }
    let (mut refunds_won, mut gates_won) = (0, 0);
    for (code, refund, gate) in tasks {
        let (r, g) = (refund.await.expect("join"), gate.await.expect("join"));
        let result = g.json()["data"]["result"].as_str().unwrap_or_default().to_string();
        match (r.status, result.as_str()) {
            (201, "void") => refunds_won += 1,
            (409, "checked_in") => {
                assert_eq!(r.json()["code"], "ticket_not_refundable", "{}", r.json());
                gates_won += 1;
            }
            other => panic!("{code}: both or neither won: {other:?} {} {}", r.json(), g.json()),
        }
    }
    assert_eq!(refunds_won + gates_won, 10);
    let paid = payment(&p, &reference).await;
    let voids = ticket_statuses(&paid).iter().filter(|(_, s)| s == "void").count();
    assert_eq!(voids, refunds_won, "{paid}");
    let l = list(&p, &reference).await;
    assert_eq!(l["data"].as_array().map(Vec::len), Some(refunds_won));
    assert_eq!(available(&p).await, 10.0 * gates_won as f64);
    drain(&p).await;
    assert_ledger_clean(&p);
}

async fn refunds_need_the_scope_and_stay_in_their_account(b: Backend) {
    let p = spawn(b).await;
    let (c, reference, codes) = paid_tickets(&p, 5.0, 4).await;
    let id = id_of(&refunded(&p, &reference, json!({"ticketCodes": [codes[0]]})).await);
    let reader = p.create_key(&p.account.slug, "private", None, "campaigns:read,tickets:read,settings:read", &[]).await;
    let r = refund_raw(&p, &reader, &reference, Some("no-scope"), b"{}".to_vec()).await;
    assert_error(&r, 403, "insufficient_scope");
    for path in [refunds_path(&reference), format!("{V1}/refunds/{id}")] {
        assert_error(&send(&p, &reader, Method::GET, &path, None).await, 403, "insufficient_scope");
    }
    let cancel_path = format!("{V1}/campaigns/{c}/cancel");
    let r = send(&p, &reader, Method::POST, &cancel_path, Some(json!({"reason": "x", "refund": true}))).await;
    assert_error(&r, 403, "insufficient_scope");
    // Another account sees none of it.
    let other = p.new_account("other").await;
    let r = refund_raw(&p, &other.private, &reference, Some("theirs"), b"{}".to_vec()).await;
    assert_error(&r, 404, "not_found");
    let r = send(&p, &other.private, Method::POST, &cancel_path, Some(json!({"reason": "x", "refund": true}))).await;
    assert_error(&r, 404, "not_found");
    for path in [refunds_path(&reference), format!("{V1}/refunds/{id}")] {
        assert_error(&send(&p, &other.private, Method::GET, &path, None).await, 404, "not_found");
    }
    assert_error(
        &send(&p, &p.account.private, Method::GET, &format!("{V1}/refunds/nope"), None).await,
        404,
        "not_found",
    );
    assert_eq!(list(&p, &reference).await["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(available(&p).await, 15.0);
    assert_eq!(campaign(&p, &c).await["status"], "approved", "nothing was cancelled");
    assert_ledger_clean(&p);
}

async fn cancelling_a_campaign_refunds_every_buyer_once_and_voids_every_ticket(b: Backend) {
    let p = spawn(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 12.0, 200).await;
    // 12 buyers: 10 paid (one of them checked in), 1 pending, 1 failed.
    let mut paid = Vec::new();
    for i in 0..12 {
        let mut body = crate::support::payments::checkout_body(&p, &c, &t, 2);
        body["email"] = json!(format!("buyer{i}@example.com"));
        let r = initialize(&p, body).await;
        assert_eq!(r.status, 200, "{}", r.json());
        let reference = r.json()["data"]["reference"].as_str().expect("reference").to_string();
        match i {
            10 => {}
            11 => {
                sandbox_settle(&p, &reference, "fail", json!({})).await;
            }
            _ => {
                sandbox_settle(&p, &reference, "succeed", json!({})).await;
                paid.push(reference);
            }
        }
    }
    drain(&p).await;
    let before = available(&p).await;
    assert_eq!(before, 240.0);
    // Cancel with refunds: 202, archived, the same answer on a retry.
    let r = cancel(&p, &c, json!({"reason": "Venue flooded", "refund": true})).await;
    assert_eq!(r.status, 202, "{}", r.json());
    let d = r.json()["data"].clone();
    assert_eq!(d["id"], c.as_str());
    assert_eq!(d["status"], "archived");
    assert!(d["refunds"].is_object(), "{d}");
    let again = cancel(&p, &c, json!({"reason": "Venue flooded", "refund": true})).await;
    assert_eq!(again.status, 202, "{}", again.json());
    assert_eq!(again.json()["data"]["status"], "archived");
    drain(&p).await;
    // Sales stop.
    let r = initialize(&p, crate::support::payments::checkout_body(&p, &c, &t, 1)).await;
    assert_eq!(r.status, 409, "{}", r.json());
    // One full refund per paid purchase, every ticket void.
    for reference in &paid {
        let l = list(&p, reference).await;
        let items = l["data"].as_array().expect("refunds");
        assert_eq!(items.len(), 1, "{reference}: {l}");
        let shown = payment(&p, reference).await;
        assert!(ticket_statuses(&shown).iter().all(|(_, s)| s == "void"), "{shown}");
    }
    let shown = campaign(&p, &c).await;
    assert_eq!(shown["status"], "archived");
    assert_eq!(shown["refunds"]["requested"], 10, "{shown}");
    assert_eq!(shown["refunds"]["succeeded"], 0);
    assert_eq!(check_in(&p, &code_of(&payment(&p, &paid[5]).await["tickets"][0])).await["checkedIn"], false);
    assert_eq!(available(&p).await, 0.0);
    // A retried cancel files nothing more.
    let r = cancel(&p, &c, json!({"reason": "Venue flooded", "refund": true})).await;
    assert_eq!(r.status, 202);
    drain(&p).await;
    let all = sandbox_refunds(&p).await;
    assert_eq!(all.len(), 10, "one provider refund per buyer");
    // The provider refunds all but one.
    let ids: Vec<String> = {
        let mut v = Vec::new();
        for reference in &paid {
            v.push(id_of(&list(&p, reference).await["data"][0]));
        }
        v
    };
    for (i, id) in ids.iter().enumerate() {
        settle_refund(&p, id, if i == 9 { "fail" } else { "succeed" }, json!({})).await;
    }
    for id in &ids {
        until_ended(&p, id).await;
    }
    let shown = campaign(&p, &c).await;
    assert_eq!(shown["refunds"], json!({"requested": 10, "succeeded": 9, "failed": 1}), "{shown}");
    assert_eq!(num(&payment(&p, &paid[9]).await["refunded"]), 0.0);
    assert_eq!(available(&p).await, 24.0, "the failed one's money is back");
    drain(&p).await;
    let mails = p.sandbox.mail();
    for (i, _) in paid.iter().enumerate() {
        let to = format!("buyer{i}@example.com");
        let n = mails
            .iter()
            .filter(|m| m["to"].as_str().is_some_and(|t| t.contains(&to)))
            .filter(|m| m["subject"].as_str().is_some_and(|s| s.contains("Refund")))
            .count();
        assert_eq!(n, usize::from(i != 9), "{to}");
    }
    let events = feed(&p).await.into_iter().filter(|e| e["type"] == "payment.refunded").count();
    assert_eq!(events, 9);
    assert_ledger_clean(&p);
}

async fn cancelling_without_refunds_archives_and_files_none(b: Backend) {
    let p = spawn(b).await;
    let (c, reference, codes) = paid_tickets(&p, 10.0, 2).await;
    let r = cancel(&p, &c, json!({"reason": "Postponed", "refund": false})).await;
    assert_eq!(r.status, 202, "{}", r.json());
    assert_eq!(r.json()["data"]["status"], "archived");
    drain(&p).await;
    assert!(list(&p, &reference).await["data"].as_array().is_some_and(Vec::is_empty));
    assert_eq!(campaign(&p, &c).await["refunds"], json!({"requested": 0, "succeeded": 0, "failed": 0}));
    assert_eq!(available(&p).await, 20.0);
    // Bad bodies and another account's campaign.
    for bad in [json!({"reason": "x", "refund": "yes"}), json!({"refund": true, "reason": 5})] {
        let r = cancel(&p, &c, bad.clone()).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.json());
    }
    // Refunds of an archived campaign's payments still work one by one.
    let one = refunded(&p, &reference, json!({"ticketCodes": [codes[0]]})).await;
    assert_eq!(settle(&p, &id_of(&one), "succeed", json!({})).await["status"], "succeeded");
    assert_ledger_clean(&p);
}

/// A cancellation's refund the available balance does not cover (money still settling) is
/// recorded `failed` with why, never sent to the provider, and changes nothing else (D17.37).
async fn a_cancellation_refund_the_balance_cannot_cover_is_failed_and_never_sent(b: Backend) {
    let p = spawn_paid_with(b, |c| c.payments.settlement_delay_seconds = 3600).await;
    let (c, reference, codes) = paid_tickets(&p, 10.0, 2).await;
    let r = cancel(&p, &c, json!({"reason": "Venue flooded", "refund": true})).await;
    assert_eq!(r.status, 202, "{}", r.json());
    drain(&p).await;
    let l = list(&p, &reference).await;
    let items = l["data"].as_array().expect("refunds");
    assert_eq!(items.len(), 1, "{l}");
    assert_eq!(items[0]["status"], "failed", "{l}");
    let why = items[0]["failureReason"].as_str().unwrap_or_default();
    assert!(why.starts_with("the available balance"), "{why}");
    assert!(sandbox_refunds(&p).await.is_empty(), "nothing was asked of the provider");
    assert_eq!(campaign(&p, &c).await["refunds"], json!({"requested": 1, "succeeded": 0, "failed": 1}));
    let shown = payment(&p, &reference).await;
    assert_eq!(num(&shown["refunded"]), 0.0);
    assert_eq!(ticket_statuses(&shown).len(), codes.len());
    assert!(ticket_statuses(&shown).iter().all(|(_, s)| s != "void"), "{shown}");
    assert_ledger_clean(&p);
}

async fn provider_b_flutterwave_refunds_too(b: Backend) {
    let p = spawn(b).await;
    let own = p.sandbox.provider_url("provider_b");
    let _: Value = p
        .api()
        .patch(
            "/api/white-label/v1/settings/payments",
            &json!({"config": {"useSharedDefaults": false, "defaultProvider": "provider_b",
                "providers": {"provider_b": {"baseUrl": own, "secretKey": "FLWSECK_TEST-account-own-b"}}}}),
            StatusCode::OK,
        )
        .await;
    let reference = paid_donation(&p, 30.0).await;
    assert_eq!(payment(&p, &reference).await["provider"], "provider_b");
    let r = refunded(&p, &reference, json!({"amount": 10})).await;
    drain(&p).await;
    // Flutterwave refunds the charge by its transaction id and knows the refund by its own id:
    // the sandbox's record names the charge (D18.2).
    let at: Vec<Value> =
        sandbox_refunds(&p).await.into_iter().filter(|s| s["transaction"] == reference.as_str()).collect();
    assert_eq!(at.len(), 1, "{at:?}");
    assert_eq!((at[0]["provider"].as_str(), at[0]["amount"].as_i64()), (Some("provider_b"), Some(1000)));
    settle_refund(&p, &at[0]["providerId"].to_string(), "succeed", json!({})).await;
    assert_eq!(until_ended(&p, &id_of(&r)).await["status"], "succeeded");
    assert_eq!(num(&payment(&p, &reference).await["refunded"]), 10.0);
    assert_ledger_clean(&p);
}

/// A SIGKILL the moment the provider holds the refund, before (or at best just as) the server
/// records the answer: after a restart the worker adopts the one refund at the provider (never
/// files another) and follows it to its end; the money audit is clean throughout.
async fn a_sigkill_between_the_refund_call_and_its_result_refunds_once(b: Backend) {
    use crate::support::process::{buy_three_seats, call, succeed, Rig};
    use std::time::{Duration, Instant};
    let rig = Rig::start(
        &b,
        "refund",
        "Refund Crash",
        "campaigns:write,tickets:write,payments:write,withdrawals:write",
        None,
    )
    .await;
    let env = rig.fast_claims();
    let Rig { sandbox, server, addr, client, .. } = &rig;
    let http = reqwest::Client::new();
    let at_provider = |id: String| {
        let (http, base) = (http.clone(), sandbox.base_url().to_string());
        async move {
            let r = http.get(format!("{base}/sandbox/refunds/{id}")).send().await.expect("sandbox");
            r.status().as_u16() == 200
        }
    };

    // First life, no workers: a paid purchase of three 30 GHS seats and a refund of all of it.
    let mut first = server.start_with(addr, false, &env);
    let reference = buy_three_seats(client, "Refund Night", "refund@example.com").await;
    succeed(sandbox, "charges", &reference, json!({"deliver": false})).await;
    let (s, paid) =
        call(client, Method::POST, "/api/white-label/v1/payments/verify", Some(json!({"reference": reference}))).await;
    assert_eq!((s, paid["data"]["status"].as_str()), (200, Some("success")), "{paid}");
    let mut h = HeaderMap::new();
    h.insert("x-idempotency-key", HeaderValue::from_static("crash-refund-1"));
    let r = client
        .send_raw(
            Method::POST,
            &refunds_path(&reference),
            serde_json::to_vec(&json!({"reason": "Crash"})).expect("json"),
            Some(h),
        )
        .await
        .expect("send");
    assert_eq!(r.status, 201, "{}", r.json());
    let id = r.json()["data"]["id"].as_str().expect("id").to_string();
    first.kill().expect("SIGKILL");
    first.wait().expect("reaped");

    // Second life, with workers: killed the moment the sandbox holds the refund.
    let mut second = server.start_with(addr, true, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !at_provider(id.clone()).await {
        assert!(Instant::now() < deadline, "the refund worker never called the provider");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    second.kill().expect("SIGKILL");
    second.wait().expect("reaped");
    let audit = server.cmd().args(["admin", "ledger", "check", "--json"]).output().expect("ledger check");
    assert!(audit.status.success(), "held, nothing else, nothing wrong: {}", String::from_utf8_lossy(&audit.stdout));

    // Whether or not the kill beat the record, make the answer lost: the row says the provider
    // was never reached, so the next life must find the one refund rather than file another.
    let url =
        server.db.clone().unwrap_or_else(|| format!("sqlite://{}?mode=rwc", server.dir.join("tessera.db").display()));
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&url).await.expect("connect");
    sqlx::query("UPDATE refunds SET provider_created = 0, provider_refund_id = NULL WHERE id = $1")
        .bind(&id)
        .execute(&mut conn)
        .await
        .expect("forget the provider's answer");
    drop(conn);

    // The provider refunds it while the server is down (no callback reaches anyone).
    succeed(sandbox, "refunds", &id, json!({"deliver": false})).await;

    // Third life: the worker adopts the one refund and follows it to the sandbox's state.
    let mut third = server.start_with(addr, true, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (s, v) = call(client, Method::GET, &format!("{V1}/refunds/{id}"), None).await;
        assert_eq!(s, 200, "{v}");
        if v["data"]["status"] == "succeeded" {
            break;
        }
        assert!(Instant::now() < deadline, "not succeeded after restart: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let all: Value = http
        .get(format!("{}/sandbox/refunds", sandbox.base_url()))
        .send()
        .await
        .expect("sandbox")
        .json()
        .await
        .expect("json");
    let all = all.as_array().cloned().or_else(|| all["data"].as_array().cloned()).expect("list");
    let ours: Vec<&Value> = all.iter().filter(|r| r["transaction"] == reference.as_str()).collect();
    assert_eq!(ours.len(), 1, "one refund at the provider: {all:?}");
    assert_eq!((ours[0]["amount"].as_i64(), ours[0]["id"].as_str()), (Some(9000), Some(id.as_str())));
    let (s, ledger) = call(client, Method::GET, &format!("{LEDGER}?limit=100"), None).await;
    assert_eq!(s, 200, "{ledger}");
    assert_eq!(
        ledger_kinds(&ledger, &id),
        kinds(&[("refund_debit", -90.0), ("refund_hold", -90.0), ("refund_release", 90.0)]),
        "{ledger}"
    );
    let (_, shown) = call(client, Method::GET, &format!("{PAYMENTS}/{reference}"), None).await;
    assert_eq!(num(&shown["data"]["refunded"]), 90.0, "{shown}");
    assert!(ticket_statuses(&shown["data"]).iter().all(|(_, s)| s == "void"), "{shown}");
    let (_, balance) = call(client, Method::GET, BALANCE, None).await;
    assert_eq!(num(&balance["data"]["available"]), 0.0, "{balance}");
    third.kill().expect("stop");
    third.wait().expect("reaped");
    server.assert_ledger_clean();
}

on_both!(
    a_whole_ticket_refund_voids_every_ticket_and_completes_with_ledger_event_and_email,
    a_partial_ticket_refund_by_ticket_codes_voids_only_those,
    vote_refunds_take_back_whole_votes,
    donation_refunds_whole_and_partial,
    the_ceiling_is_what_the_customer_paid_fees_included,
    a_failed_refund_restores_tickets_votes_donation_and_balance,
    only_a_successful_payment_is_refundable,
    a_refund_above_the_available_balance_is_409_and_writes_nothing,
    each_refund_rule_is_a_400_naming_its_field,
    the_same_key_and_body_replay_and_another_body_is_409,
    concurrent_refunds_never_exceed_what_was_paid,
    a_refund_racing_a_check_in_of_the_same_ticket_has_exactly_one_winner,
    refunds_need_the_scope_and_stay_in_their_account,
    cancelling_a_campaign_refunds_every_buyer_once_and_voids_every_ticket,
    cancelling_without_refunds_archives_and_files_none,
    a_cancellation_refund_the_balance_cannot_cover_is_failed_and_never_sent,
    provider_b_flutterwave_refunds_too,
    a_sigkill_between_the_refund_call_and_its_result_refunds_once,
);

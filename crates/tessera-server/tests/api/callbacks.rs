//! Integration tests: provider callbacks (spec "POST /api/white-label/webhooks/:provider", D6,
//! D16.7): the provider is checked first, the signature before anything is stored, duplicates
//! change nothing, and one charge is fulfilled once however many times it is delivered.
use serde_json::json;

use crate::support::callbacks::{post_callback, signed_event};
use crate::support::catalogue::{running_campaign, ticket_type};
use crate::support::client::assert_error;
use crate::support::ledger::assert_ledger_clean;
use crate::support::payments::{buy, payment, platform_secret, spawn_paid};
use crate::support::server::{drain, Backend};

async fn an_unsupported_provider_is_a_400_before_anything_else(b: Backend) {
    let p = spawn_paid(b).await;
    let r = post_callback(&p, "provider_z", b"{not json".to_vec(), None).await;
    let body = assert_error(&r, 400, "validation_failed");
    assert_eq!(body["details"][0]["field"], "provider");
}

async fn a_missing_or_wrong_signature_is_a_401_and_nothing_is_stored(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 5).await;
    let reference = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    let event = json!({"event": "charge.success", "data": {"id": 1, "reference": reference, "status": "success"}});
    let (body, _) = signed_event("provider_a", &platform_secret("provider_a"), event.clone());
    assert_error(&post_callback(&p, "provider_a", body.clone(), None).await, 401, "missing_auth");
    let (_, wrong) = signed_event("provider_a", "sk_not_the_secret", event.clone());
    assert_error(&post_callback(&p, "provider_a", body.clone(), Some(&wrong)).await, 401, "invalid_signature");
    // provider_b's secret signing a provider_a event, and a SHA-256 signature where SHA-512 is due.
    let (_, other) = signed_event("provider_a", &platform_secret("provider_b"), event.clone());
    assert_error(&post_callback(&p, "provider_a", body.clone(), Some(&other)).await, 401, "invalid_signature");
    let (_, sha256) = signed_event("provider_b", &platform_secret("provider_a"), event.clone());
    assert_error(&post_callback(&p, "provider_a", body.clone(), Some(&sha256)).await, 401, "invalid_signature");
    // A valid signature over other bytes.
    let (_, good) = signed_event("provider_a", &platform_secret("provider_a"), event);
    let mut tampered = body.clone();
    tampered.push(b' ');
    assert_error(&post_callback(&p, "provider_a", tampered, Some(&good)).await, 401, "invalid_signature");
    assert_eq!(p.store.callback_count(&reference).await.expect("count"), 0, "nothing stored");
    drain(&p).await;
    assert_eq!(payment(&p, &reference).await["status"], "pending");
}

async fn a_signed_body_that_is_not_an_event_is_a_400(b: Backend) {
    let p = spawn_paid(b).await;
    let (body, sig) = signed_event("provider_b", &platform_secret("provider_b"), json!({"hello": "world"}));
    assert_error(&post_callback(&p, "provider_b", body, Some(&sig)).await, 400, "malformed_json");
}

async fn a_callback_is_acknowledged_in_the_specs_shape(b: Backend) {
    let p = spawn_paid(b).await;
    let (body, sig) = signed_event(
        "provider_c",
        &platform_secret("provider_c"),
        // Hubtel's checkout callback (D18.3), signed with D6.1's HMAC (D18.45).
        json!({"ResponseCode": "0000", "Status": "Success", "Data": {"CheckoutId": "ch77",
               "ClientReference": "tsrunknown", "Status": "Success", "Amount": 1}}),
    );
    let r = post_callback(&p, "provider_c", body, Some(&sig)).await;
    assert_eq!(r.status, 200);
    let ack = r.json();
    assert_eq!(ack["success"], true);
    assert_eq!(ack["processed"], true);
    assert_eq!(ack["provider"], "provider_c");
    let header = r.headers.get("x-request-id").and_then(|v| v.to_str().ok()).expect("x-request-id");
    assert_eq!(ack["requestId"], header);
    // An event for a reference Tessera never issued is stored, then reconciled as unknown.
    drain(&p).await;
    assert_eq!(p.store.callback_count("tsr_unknown").await.expect("count"), 1);
    // Operators see intake by provider and outcome, never a reference as a label.
    let metrics = p.http.get(p.url("/metrics")).send().await.expect("metrics").text().await.expect("text");
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("tessera_webhooks_received_total")
                && l.contains("provider=\"provider_c\"")
                && l.contains("outcome=\"stored\"")
        })
        .unwrap_or_else(|| panic!("no intake series in {metrics}"));
    assert!(!line.contains("tsr_"), "{line}");
}

async fn the_same_event_delivered_a_hundred_times_has_one_effect(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 5).await;
    let reference = buy(&p, &c, &t, 2).await["reference"].as_str().expect("reference").to_string();
    crate::support::payments::sandbox_settle(&p, &reference, "succeed", json!({"deliver": false})).await;
    let charge = p.sandbox.charge(&reference).expect("charge");
    let event = json!({"event": "charge.success", "data": {"id": charge["id"], "reference": reference, "status": "success",
        "amount": 2000, "currency": "GHS"}});
    let (body, sig) = signed_event("provider_a", &platform_secret("provider_a"), event);
    // Half one after another, half at once (so copies share one group commit).
    for _ in 0..50 {
        let r = post_callback(&p, "provider_a", body.clone(), Some(&sig)).await;
        assert_eq!(r.status, 200, "{}", r.json());
    }
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (http, url, body, sig) =
            (p.http.clone(), p.url("/api/white-label/webhooks/provider_a"), body.clone(), sig.clone());
        tasks.push(tokio::spawn(async move {
            http.post(url).header("x-provider_a-signature", sig).body(body).send().await.map(|r| r.status().as_u16())
        }));
    }
    for t in tasks {
        assert_eq!(t.await.expect("join").expect("send"), 200);
    }
    assert_eq!(p.store.callback_count(&reference).await.expect("count"), 1);
    drain(&p).await;
    let paid = payment(&p, &reference).await;
    assert_eq!(paid["status"], "success");
    assert_eq!(paid["tickets"].as_array().map(Vec::len), Some(2));
    assert_ledger_clean(&p);
}

async fn sixty_four_concurrent_deliveries_issue_each_ticket_once(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 10).await;
    let reference = buy(&p, &c, &t, 3).await["reference"].as_str().expect("reference").to_string();
    crate::support::payments::sandbox_settle(&p, &reference, "succeed", json!({"deliver": false})).await;
    // 64 deliveries at once, each with its own event id (as a provider retrying with new ids
    // might), so dedup by event key cannot help: the settle-once guard must.
    let mut tasks = Vec::new();
    for i in 0..64 {
        let event =
            json!({"event": "charge.success", "data": {"id": 10_000 + i, "reference": reference, "status": "success"}});
        let (body, sig) = signed_event("provider_a", &platform_secret("provider_a"), event);
        let (http, url) = (p.http.clone(), p.url("/api/white-label/webhooks/provider_a"));
        tasks.push(tokio::spawn(async move {
            http.post(url).header("x-provider_a-signature", sig).body(body).send().await.map(|r| r.status().as_u16())
        }));
    }
    for task in tasks {
        assert_eq!(task.await.expect("join").expect("send"), 200);
    }
    // Eight workers reconcile the 64 events at once.
    let mut workers = Vec::new();
    for _ in 0..8 {
        let state = p.state.clone();
        workers.push(tokio::spawn(async move { tessera_server::workers::drain(&state).await.map(|_| ()) }));
    }
    for w in workers {
        w.await.expect("join").expect("drain");
    }
    let paid = payment(&p, &reference).await;
    assert_eq!(paid["status"], "success");
    assert_eq!(paid["tickets"].as_array().map(Vec::len), Some(3), "{paid}");
    let tt = p.store.ticket_type(&p.account.id, &t).await.expect("type");
    assert_eq!((tt.quantity_sold, tt.quantity_held), (3, 0));
    let (_, ledger) = p.signed(tessera_client::Method::GET, crate::support::payments::LEDGER, None).await;
    assert_eq!(ledger["pagination"]["total"], 1, "one charge entry: {ledger}");
    assert_ledger_clean(&p);
}

/// D17.9: a real Paystack callback signs in `x-paystack-signature`; provider_a accepts it there
/// with the same check, and no other provider does.
async fn provider_a_accepts_paystacks_own_signature_header(b: Backend) {
    let p = spawn_paid(b).await;
    let event =
        json!({"event": "charge.success", "data": {"id": "ch_ps", "reference": "tsr_paystack", "status": "success"}});
    let (body, sig) = signed_event("provider_a", &platform_secret("provider_a"), event.clone());
    let post = |provider: &str, header: &str, sig: &str| {
        let req = p
            .http
            .post(p.url(&format!("/api/white-label/webhooks/{provider}")))
            .header("content-type", "application/json")
            .header(header, sig)
            .body(body.clone());
        async move { crate::support::client::raw(req.send().await.expect("send")).await }
    };
    let (_, wrong) = signed_event("provider_a", "sk_not_the_secret", event.clone());
    assert_error(&post("provider_a", "x-paystack-signature", &wrong).await, 401, "invalid_signature");
    assert_eq!(p.store.callback_count("tsr_paystack").await.expect("count"), 0);
    let r = post("provider_a", "x-paystack-signature", &sig).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["provider"], "provider_a");
    assert_eq!(p.store.callback_count("tsr_paystack").await.expect("count"), 1);
    // Another provider does not read Paystack's header.
    let (body_b, sig_b) = signed_event("provider_b", &platform_secret("provider_b"), event);
    let r = crate::support::client::raw(
        p.http
            .post(p.url("/api/white-label/webhooks/provider_b"))
            .header("x-paystack-signature", sig_b)
            .body(body_b)
            .send()
            .await
            .expect("send"),
    )
    .await;
    assert_error(&r, 401, "missing_auth");
}

/// D17.16: provider callbacks are outside the per-IP limit; the API routes keep it.
async fn callbacks_are_outside_the_per_ip_rate_limit(b: Backend) {
    let p = crate::support::payments::spawn_paid_with(b, |c| {
        c.security.rate_limit_per_ip = 1;
        c.security.rate_limit_per_ip_burst = 2;
    })
    .await;
    for i in 0..6 {
        let event = json!({"ResponseCode": "0000", "Message": "success",
                           "Data": {"TransactionId": format!("ip{i}"), "ClientReference": "tsrip", "Amount": 1}});
        let (body, sig) = signed_event("provider_c", &platform_secret("provider_c"), event);
        let r = post_callback(&p, "provider_c", body, Some(&sig)).await;
        assert_eq!(r.status, 200, "delivery {i}: {}", r.json());
        assert!(r.headers.get("ratelimit-limit").is_none(), "no per-IP budget on callbacks");
    }
    let statuses: Vec<u16> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            v.push(p.signed(tessera_client::Method::GET, "/api/white-label/v1/context", None).await.0);
        }
        v
    };
    assert_eq!(statuses, [200, 200, 429], "the API keeps the per-IP limit");
}

on_both!(
    provider_a_accepts_paystacks_own_signature_header,
    callbacks_are_outside_the_per_ip_rate_limit,
    an_unsupported_provider_is_a_400_before_anything_else,
    a_missing_or_wrong_signature_is_a_401_and_nothing_is_stored,
    a_signed_body_that_is_not_an_event_is_a_400,
    a_callback_is_acknowledged_in_the_specs_shape,
    the_same_event_delivered_a_hundred_times_has_one_effect,
    sixty_four_concurrent_deliveries_issue_each_ticket_once,
);

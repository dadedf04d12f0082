//! The sandbox's webhook inbox (D17.26): it verifies what Tessera sends with the secrets it was
//! given, refuses anything else with 401, and lists what it received, newest first. Tessera's
//! side is real: an endpoint of the account, signed by the delivery code (a test event).
use serde_json::{json, Value};
use tessera_server::domain::time::now_ms;
use tessera_server::domain::webhooks::{new_secret, signature, EventType};
use tessera_server::flows::webhooks::send_test;

use crate::support::payments::start_sandbox;
use crate::support::server::{spawn_with, Backend};

on_both!(the_inbox_verifies_deliveries_refuses_forgeries_and_lists_them_newest_first);

async fn the_inbox_verifies_deliveries_refuses_forgeries_and_lists_them_newest_first(b: Backend) {
    let sandbox = start_sandbox().await;
    // The inbox is on loopback: the platform must allow private endpoints (as `serve --demo`).
    let app = spawn_with(b, |c| c.security.allow_private_endpoints = true).await;
    let http = reqwest::Client::new();
    let inbox = sandbox.inbox_url();
    let register = |secret: &str| http.post(format!("{inbox}/secrets")).json(&json!({ "secret": secret })).send();

    let refused = register("not-a-secret").await.expect("secrets");
    assert_eq!(refused.status().as_u16(), 400);

    let secret = new_secret();
    let keyring = app.state.keyring();
    let seal = |id: &str| keyring.encrypt(&format!("webhook:{id}"), &secret);
    let endpoint = app
        .store
        .ensure_demo_webhook_endpoint(&app.account.id, &inbox, "inbox test", seal, now_ms())
        .await
        .expect("endpoint");
    let added = register(&secret).await.expect("secrets");
    assert_eq!(added.status().as_u16(), 201);
    assert_eq!(added.json::<Value>().await.expect("json"), json!({"secrets": 1}));

    // Tessera's own signed request verifies.
    let test = send_test(&app.state, &app.account.id, &endpoint.id, EventType::TicketPurchaseConfirmed)
        .await
        .expect("test event");
    assert_eq!(test.status_code, Some(200), "{test:?}");
    assert_eq!(test.error, None);

    // A forgery (another secret) and a tampered body are refused; a delivery signed by hand
    // with the registered secret, as any Standard Webhooks sender would, is taken.
    let body = r#"{"type":"payment.failed","timestamp":"2026-01-01T00:00:00Z","sequence":3,"data":{}}"#;
    let ts = now_ms() / 1000;
    let post = |id: &str, sig: String, body: &'static str| {
        http.post(&inbox)
            .header("webhook-id", id)
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", sig)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let forged = post("evt_forged", signature(&new_secret(), "evt_forged", ts, body).expect("sig"), body);
    assert_eq!(forged.await.expect("post").status().as_u16(), 401);
    let tampered_sig = signature(&secret, "evt_tampered", ts, body).expect("sig");
    let tampered = post("evt_tampered", tampered_sig, r#"{"type":"payment.failed","sequence":4}"#);
    assert_eq!(tampered.await.expect("post").status().as_u16(), 401);
    let good = post("evt_by_hand", signature(&secret, "evt_by_hand", ts, body).expect("sig"), body);
    assert_eq!(good.await.expect("post").status().as_u16(), 200);

    let listed: Vec<Value> = http.get(&inbox).send().await.expect("list").json().await.expect("json");
    let summary: Vec<(String, bool)> = listed
        .iter()
        .map(|e| (e["id"].as_str().unwrap_or_default().to_string(), e["verified"].as_bool().unwrap_or_default()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("evt_by_hand".to_string(), true),
            ("evt_tampered".to_string(), false),
            ("evt_forged".to_string(), false),
            (test.event_id.clone(), true),
        ]
    );
    assert_eq!(listed[0]["type"], "payment.failed");
    assert_eq!(listed[0]["sequence"], 3);
    let sent = &listed[3];
    assert_eq!(sent["type"], "ticket.purchase.confirmed");
    assert_eq!(sent["sequence"], Value::Null);
    assert_eq!(sent["body"]["data"]["transactionType"], "ticket");
    assert!(sent["receivedAt"].is_string());
    assert_eq!(sandbox.inbox(), listed, "the handle shows what the route shows");
}

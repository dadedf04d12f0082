//! Integration tests: the real wires' settings and callback route (D18.2–3, D18.45): the new
//! provider members are validated by path and their secrets are write-only, and Hubtel's tokened
//! callback path refuses what it cannot authenticate before anything is stored.
use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};

use crate::support::catalogue::{running_campaign, ticket_type};
use crate::support::client::{assert_error, assert_invalid, raw, send_default};
use crate::support::payments::{checkout_body, initialize, spawn_paid};
use crate::support::server::{spawn, Backend, TestApp};

const PAYMENTS: &str = "/api/white-label/v1/settings/payments";
const READ: &str = "/api/white-label/v1/settings?categories=payments";

async fn patch(app: &TestApp, config: Value) -> RawResponse {
    send_default(app, Method::PATCH, PAYMENTS, Some(json!({ "config": config }))).await
}

fn text(r: &RawResponse) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

async fn the_wires_provider_members_are_validated_by_path(b: Backend) {
    let app = spawn(b).await;
    let cases = [
        (json!({"providers": {"provider_c": {"apiId": "x".repeat(129)}}}), "config.providers.provider_c.apiId"),
        (json!({"providers": {"provider_c": {"posSalesId": 2017101}}}), "config.providers.provider_c.posSalesId"),
        (
            json!({"providers": {"provider_c": {"prepaidDepositId": ""}}}),
            "config.providers.provider_c.prepaidDepositId",
        ),
        (json!({"providers": {"provider_c": {"callbackToken": "short"}}}), "config.providers.provider_c.callbackToken"),
        (
            json!({"providers": {"provider_c": {"callbackToken": "has/a/slash/in/it/0123456789"}}}),
            "config.providers.provider_c.callbackToken",
        ),
        (
            json!({"providers": {"provider_c": {"callbackToken": 1234567890123456_i64}}}),
            "config.providers.provider_c.callbackToken",
        ),
        (json!({"providers": {"provider_b": {"webhookHash": ""}}}), "config.providers.provider_b.webhookHash"),
        (
            json!({"providers": {"provider_b": {"webhookHash": "h".repeat(513)}}}),
            "config.providers.provider_b.webhookHash",
        ),
    ];
    for (config, field) in cases {
        let r = patch(&app, config.clone()).await;
        assert_invalid(&r, &[field]);
    }
    // Nothing of the refused patches was kept.
    let r = send_default(&app, Method::GET, READ, None).await;
    assert_eq!(r.status, 200, "{}", text(&r));
    assert_eq!(r.json()["data"]["payments"], json!({}), "{}", text(&r));
}

async fn the_webhook_hash_and_the_callback_token_are_write_only(b: Backend) {
    let app = spawn(b).await;
    let hash = "flw-webhook-hash-0001";
    let token = "hubtel-path-token-0002";
    let r = patch(
        &app,
        json!({"providers": {
            "provider_b": {"secretKey": "FLWSECK_TEST-abc-X", "webhookHash": hash},
            "provider_c": {"secretKey": "hubtel-key-9", "apiId": "api-id-1", "posSalesId": "2017101",
                "prepaidDepositId": "2017102", "callbackToken": token},
        }}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", text(&r));
    let shown = text(&r);
    assert!(!shown.contains(hash) && !shown.contains(token), "a secret echoed: {shown}");
    let config = &r.json()["data"]["config"];
    assert_eq!(config["providers"]["provider_b"]["webhookHash"], "••••0001");
    assert_eq!(config["providers"]["provider_c"]["callbackToken"], "••••0002");
    assert_eq!(config["providers"]["provider_c"]["apiId"], "api-id-1", "ids are not secrets");
    assert_eq!(config["providers"]["provider_c"]["posSalesId"], "2017101");

    // Read back: masked; stored: sealed, never in clear.
    let r = send_default(&app, Method::GET, READ, None).await;
    assert_eq!(r.status, 200, "{}", text(&r));
    assert_eq!(r.json()["data"]["payments"]["providers"]["provider_c"]["callbackToken"], "••••0002");
    assert!(!text(&r).contains(hash) && !text(&r).contains(token), "{}", text(&r));
    let stored = app
        .store
        .settings(&app.account.id)
        .await
        .expect("settings")
        .into_iter()
        .find(|(c, _)| c == "payments")
        .map(|(_, v)| v)
        .expect("payments stored");
    let raw_text = stored.to_string();
    assert!(!raw_text.contains(hash) && !raw_text.contains(token), "stored in clear: {raw_text}");
    assert!(stored["providers"]["provider_b"]["webhookHash"]["$sealed"].is_string(), "{stored}");
    assert!(stored["providers"]["provider_c"]["callbackToken"]["$sealed"].is_string(), "{stored}");

    // The masked value sent back keeps the stored secret.
    let r = patch(&app, json!({"providers": {"provider_b": {"webhookHash": "••••0001"}}})).await;
    assert_eq!(r.status, 200, "{}", text(&r));
    assert_eq!(r.json()["data"]["config"]["providers"]["provider_b"]["webhookHash"], "••••0001");
}

async fn post(app: &TestApp, path: &str, body: &[u8]) -> RawResponse {
    let req = app.http.post(app.url(path)).header("content-type", "application/json").body(body.to_vec());
    raw(req.send().await.expect("send")).await
}

async fn the_tokened_callback_path_refuses_what_it_cannot_authenticate(b: Backend) {
    let app = spawn(b).await;
    let body = serde_json::to_vec(&json!({
        "ResponseCode": "0000", "Status": "Success",
        "Data": {"ClientReference": "tsrx0000000000000000000000000", "Amount": 10.5},
    }))
    .expect("json");
    // An unknown provider is a 400 naming it, before anything else.
    let r = post(&app, "/api/white-label/webhooks/provider_z/some-token-0123456789", &body).await;
    let e = assert_error(&r, 400, "validation_failed");
    assert_eq!(e["details"][0]["field"], "provider", "{e}");
    // No token and no signature: missing; a token nobody holds: refused. Nothing is stored.
    assert_error(&post(&app, "/api/white-label/webhooks/provider_c", &body).await, 401, "missing_auth");
    let r = post(&app, "/api/white-label/webhooks/provider_c/not-the-token-0123456789", &body).await;
    assert_error(&r, 401, "invalid_signature");
    assert_eq!(app.store.callback_count("tsr_x0000000000000000000000000").await.expect("count"), 0);
    assert_eq!(app.store.callback_count("tsrx0000000000000000000000000").await.expect("count"), 0);
}

/// D18.45: a checkout that names no return address sends the customer to the account's
/// `payments.callbackUrl`; one that names its own keeps it.
async fn a_checkout_without_a_callback_url_returns_to_the_accounts(b: Backend) {
    let p = spawn_paid(b).await;
    let r = patch(&p, json!({"callbackUrl": "not a url"})).await;
    assert_invalid(&r, &["config.callbackUrl"]);
    let home = format!("https://{}/paid", p.account.domain);
    let r = patch(&p, json!({"callbackUrl": home})).await;
    assert_eq!(r.status, 200, "{}", text(&r));
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 5).await;
    let mut body = checkout_body(&p, &c, &t, 1);
    let own = body["callbackUrl"].clone();
    let named = initialize(&p, body.clone()).await;
    assert_eq!(named.status, 200, "{}", text(&named));
    body.as_object_mut().expect("object").remove("callbackUrl");
    let unnamed = initialize(&p, body).await;
    assert_eq!(unnamed.status, 200, "{}", text(&unnamed));
    let charge = |r: &RawResponse| {
        let reference = r.json()["data"]["reference"].as_str().expect("reference").to_string();
        let url = format!("{}/sandbox/charges/{reference}", p.sandbox.base_url());
        let http = p.http.clone();
        async move { http.get(url).send().await.expect("sandbox").json::<Value>().await.expect("json") }
    };
    assert_eq!(charge(&named).await["callbackUrl"], own, "the checkout's own address wins");
    assert_eq!(charge(&unnamed).await["callbackUrl"], json!(home), "else the account's");
}

on_both!(
    a_checkout_without_a_callback_url_returns_to_the_accounts,
    the_wires_provider_members_are_validated_by_path,
    the_webhook_hash_and_the_callback_token_are_write_only,
    the_tokened_callback_path_refuses_what_it_cannot_authenticate,
);

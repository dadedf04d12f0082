//! Integration tests: withdrawals end to end (spec "POST /withdrawals", D9.1, D14, D16.2,
//! D16.8, D16.12–13, D16.19) through the real server and the sandbox's transfer API. Workers
//! are off; each test drains the queues itself. Every test ends with a clean money audit.
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};

use crate::support::callbacks::{post_callback, signed_event};
use crate::support::catalogue::{running_campaign, ticket_type};
use crate::support::client::{assert_error, detail_fields, StatusCode};
use crate::support::db::now_ms;
use crate::support::ledger::{assert_ledger_clean, ledger_kinds};
use crate::support::payments::{
    buy, platform_secret, sandbox_settle, spawn_paid, PayApp, BALANCE, LEDGER, WITHDRAWALS,
};
use crate::support::server::{drain, Backend, TestApp, TestKey, ALL_PRIVATE_SCOPES};

/// A paid-up account: one ticket of `ghs` bought and confirmed, so `ghs` is available; and a
/// private key with the withdrawals capability.
async fn funded(b: Backend, ghs: f64) -> (PayApp, TestKey) {
    let p = spawn_paid(b).await;
    fund(&p, ghs).await;
    let key = p.create_key(&p.account.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    (p, key)
}

async fn fund(p: &PayApp, ghs: f64) {
    let c = running_campaign(p, &p.account.private, "ticketing").await;
    let t = ticket_type(p, &p.account.private, &c, ghs, 5).await;
    let reference = buy(p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
}

fn body(amount: f64) -> Value {
    json!({"amount": amount, "bank_name": "MTN Mobile Money", "bank_code": "MTN", "account_number": "0241234567",
        "account_name": "Ama Mensah"})
}

async fn withdraw_raw(app: &TestApp, key: &TestKey, idem: Option<&str>, bytes: Vec<u8>) -> RawResponse {
    let mut h = HeaderMap::new();
    if let Some(k) = idem {
        h.insert("x-idempotency-key", HeaderValue::from_str(k).expect("header"));
    }
    app.client_for(key).send_raw(Method::POST, WITHDRAWALS, bytes, Some(h)).await.expect("send")
}

async fn withdraw(app: &TestApp, key: &TestKey, idem: &str, body: &Value) -> RawResponse {
    withdraw_raw(app, key, Some(idem), serde_json::to_vec(body).expect("json")).await
}

/// Creates a withdrawal (201 asserted) and returns its data.
async fn created(app: &TestApp, key: &TestKey, amount: f64) -> Value {
    let r = withdraw(app, key, &uuid::Uuid::now_v7().to_string(), &body(amount)).await;
    assert_eq!(r.status, 201, "{}", r.json());
    r.json()["data"].clone()
}

async fn show(app: &TestApp, key: &TestKey, id: &str) -> Value {
    let b: Value = app.api_as(key).get(&format!("{WITHDRAWALS}/{id}"), StatusCode::OK).await;
    b["data"].clone()
}

async fn balance(app: &TestApp, key: &TestKey) -> Value {
    let b: Value = app.api_as(key).get(BALANCE, StatusCode::OK).await;
    b["data"].clone()
}

async fn settle_transfer(p: &PayApp, id: &str, outcome: &str, body: Value) -> Value {
    let url = format!("{}/sandbox/transfers/{id}/{outcome}", p.sandbox.base_url());
    let r = p.http.post(url).json(&body).send().await.expect("sandbox");
    assert_eq!(r.status().as_u16(), 200, "sandbox transfer {outcome}");
    r.json().await.expect("json")
}

/// Drains until the withdrawal leaves `processing` (polling doubles from 1 ms in these tests).
async fn until_ended(p: &PayApp, key: &TestKey, id: &str) -> Value {
    for _ in 0..400 {
        drain(p).await;
        let w = show(p, key, id).await;
        if !matches!(w["status"].as_str(), Some("pending" | "processing")) {
            return w;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("withdrawal {id} did not end");
}

/// Runs SQL against the test's database (for making a job due now, or aging an outage).
async fn sql(app: &TestApp, statement: &str, bind: Option<i64>) {
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&app.database_url).await.expect("connect");
    let mut q = sqlx::query(statement);
    if let Some(v) = bind {
        q = q.bind(v);
    }
    q.execute(&mut conn).await.expect("sql");
}

// ---------------------------------------------------------------------------------------------

async fn a_withdrawal_holds_its_amount_and_completes_when_the_transfer_callback_is_confirmed(b: Backend) {
    let (p, key) = funded(b, 100.0).await;
    let w = created(&p, &key, 40.5).await;
    let id = w["id"].as_str().expect("id").to_string();
    assert_eq!(w["status"], "pending");
    assert_eq!(w["amount"], json!(40.5));
    assert_eq!((w["bank_code"].as_str(), w["account_number"].as_str()), (Some("MTN"), Some("0241234567")));
    assert_eq!(w["failureReason"], Value::Null);
    assert_eq!(balance(&p, &key).await, json!({"available": 59.5, "pending": 0, "held": 40.5, "currency": "GHS"}));
    assert!(p.sandbox.transfer(&id).is_none(), "nothing is paid before the worker runs");
    drain(&p).await;
    // The worker created the transfer under the withdrawal's id and moved it to processing.
    let transfer = p.sandbox.transfer(&id).expect("sandbox transfer");
    assert_eq!(transfer["amount"], 4050);
    assert_eq!(transfer["status"], "pending");
    assert_eq!(show(&p, &key, &id).await["status"], "processing");
    // The provider pays; its callback is stored, confirmed with the verify API and applied.
    settle_transfer(&p, &id, "succeed", json!({})).await;
    assert_eq!(p.store.callback_count(&id).await.expect("count"), 1);
    drain(&p).await;
    let done = show(&p, &key, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(balance(&p, &key).await, json!({"available": 59.5, "pending": 0, "held": 0, "currency": "GHS"}));
    let (_, ledger) = p.signed_as(&key, Method::GET, LEDGER, None).await;
    assert_eq!(
        ledger_kinds(&ledger, &id),
        vec![
            ("withdrawal_debit".to_string(), -40.5),
            ("withdrawal_hold".to_string(), -40.5),
            ("withdrawal_release".to_string(), 40.5)
        ]
    );
    // A later, contrary event (signed, so stored) is only a trigger: the provider still says
    // success, and a final state is never undone.
    let event = json!({"event": "transfer.failed", "data": {"id": 987_654, "reference": id, "status": "failed",
        "amount": 4050, "currency": "GHS"}});
    let (bytes, sig) = signed_event("provider_a", &platform_secret("provider_a"), event);
    assert_eq!(post_callback(&p, "provider_a", bytes, Some(&sig)).await.status, 200);
    drain(&p).await;
    assert_eq!(show(&p, &key, &id).await["status"], "completed");
    assert_ledger_clean(&p);
}

async fn a_failed_transfer_fails_the_withdrawal_and_releases_its_hold(b: Backend) {
    let (p, key) = funded(b, 100.0).await;
    let id = created(&p, &key, 30.0).await["id"].as_str().expect("id").to_string();
    drain(&p).await;
    settle_transfer(&p, &id, "fail", json!({"reason": "Account number does not exist"})).await;
    drain(&p).await;
    let w = show(&p, &key, &id).await;
    assert_eq!(w["status"], "failed", "{w}");
    assert_eq!(w["failureReason"], "Account number does not exist");
    assert_eq!(balance(&p, &key).await, json!({"available": 100, "pending": 0, "held": 0, "currency": "GHS"}));
    let (_, ledger) = p.signed_as(&key, Method::GET, LEDGER, None).await;
    assert_eq!(
        ledger_kinds(&ledger, &id),
        vec![("withdrawal_hold".to_string(), -30.0), ("withdrawal_release".to_string(), 30.0)]
    );
    assert_ledger_clean(&p);
}

async fn polling_ends_withdrawals_whose_transfer_callback_never_comes(b: Backend) {
    let (p, key) = funded(b, 100.0).await;
    let paid = created(&p, &key, 20.0).await["id"].as_str().expect("id").to_string();
    let failed = created(&p, &key, 25.0).await["id"].as_str().expect("id").to_string();
    drain(&p).await;
    settle_transfer(&p, &paid, "succeed", json!({"deliver": false})).await;
    settle_transfer(&p, &failed, "fail", json!({"deliver": false})).await;
    assert_eq!(p.store.callback_count(&paid).await.expect("count"), 0, "no callback was sent");
    assert_eq!(until_ended(&p, &key, &paid).await["status"], "completed");
    let w = until_ended(&p, &key, &failed).await;
    assert_eq!(w["status"], "failed");
    assert_eq!(w["failureReason"], "Declined by the sandbox");
    assert_eq!(balance(&p, &key).await["available"], json!(80));
    assert_ledger_clean(&p);
}

async fn each_withdrawal_rule_is_a_400_naming_its_field(b: Backend) {
    let (p, key) = funded(b, 100.0).await;
    let r = withdraw_raw(&p, &key, None, serde_json::to_vec(&body(10.0)).expect("json")).await;
    let e = assert_error(&r, 400, "idempotency_key_required");
    assert_eq!(detail_fields(&e), ["X-Idempotency-Key"]);
    let long = "k".repeat(256);
    let r = withdraw(&p, &key, &long, &body(10.0)).await;
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), ["X-Idempotency-Key"]);
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"bank_name": "B", "bank_code": "MTN", "account_number": "0241234567", "account_name": "Ama"}),
            "amount",
        ),
        (
            json!({"amount": 0, "bank_name": "B", "bank_code": "MTN", "account_number": "0241234567", "account_name": "Ama"}),
            "amount",
        ),
        (
            json!({"amount": -5, "bank_name": "B", "bank_code": "MTN", "account_number": "0241234567", "account_name": "Ama"}),
            "amount",
        ),
        (
            json!({"amount": 1.005, "bank_name": "B", "bank_code": "MTN", "account_number": "0241234567", "account_name": "Ama"}),
            "amount",
        ),
        (
            json!({"amount": "10", "bank_name": "B", "bank_code": "MTN", "account_number": "0241234567", "account_name": "Ama"}),
            "amount",
        ),
        (json!({"amount": 10, "bank_code": "MTN", "account_number": "0241234567", "account_name": "Ama"}), "bank_name"),
        (
            json!({"amount": 10, "bank_name": "B", "bank_code": "M", "account_number": "0241234567", "account_name": "Ama"}),
            "bank_code",
        ),
        (
            json!({"amount": 10, "bank_name": "B", "bank_code": "MT N", "account_number": "0241234567", "account_name": "Ama"}),
            "bank_code",
        ),
        (
            json!({"amount": 10, "bank_name": "B", "bank_code": "MTN", "account_number": "12", "account_name": "Ama"}),
            "account_number",
        ),
        (json!({"amount": 10, "bank_name": "B", "bank_code": "MTN", "account_number": "0241234567"}), "account_name"),
        (
            json!({"amount": 10, "bank_name": "B", "bank_code": "MTN", "account_number": "0241234567", "account_name": "Ama", "fee": 0}),
            "fee",
        ),
    ];
    for (i, (bad, field)) in cases.into_iter().enumerate() {
        let r = withdraw(&p, &key, &format!("rule-{i}"), &bad).await;
        let e = assert_error(&r, 400, "validation_failed");
        assert!(detail_fields(&e).contains(&field.to_string()), "{field}: {e}");
    }
    let r = withdraw_raw(&p, &key, Some("not-json"), b"[1]".to_vec()).await;
    assert_error(&r, 400, "malformed_json");
    // An invalid body binds nothing: the same key then creates the withdrawal.
    let r = withdraw(&p, &key, "rule-0", &body(10.0)).await;
    assert_eq!(r.status, 201, "{}", r.json());
    let (s, list) = p.signed_as(&key, Method::GET, WITHDRAWALS, None).await;
    assert_eq!(s, 200);
    assert_eq!(list["pagination"]["total"], 1, "{list}");
    assert_ledger_clean(&p);
}

async fn withdrawals_need_the_scope_and_the_capability_and_stay_in_their_account(b: Backend) {
    let (p, key) = funded(b, 100.0).await;
    let id = created(&p, &key, 10.0).await["id"].as_str().expect("id").to_string();
    // withdrawals:write without the capability (the account's default private key).
    let r = withdraw(&p, &p.account.private, "no-cap", &body(5.0)).await;
    let e = assert_error(&r, 403, "insufficient_scope");
    assert!(e["error"].as_str().is_some_and(|m| m.contains("withdrawals capability")), "{e}");
    // The capability without the scope.
    let no_scope = p.create_key(&p.account.slug, "private", None, "payments:write", &["withdrawals"]).await;
    let r = withdraw(&p, &no_scope, "no-scope", &body(5.0)).await;
    assert_error(&r, 403, "insufficient_scope");
    let r = p.client_for(&no_scope).send_raw(Method::GET, WITHDRAWALS, Vec::new(), None).await.expect("send");
    assert_error(&r, 403, "insufficient_scope");
    // Another account sees none of it.
    let other = p.new_account("other").await;
    let r = p
        .client_for(&other.private)
        .send_raw(Method::GET, &format!("{WITHDRAWALS}/{id}"), Vec::new(), None)
        .await
        .expect("send");
    assert_error(&r, 404, "not_found");
    let (s, list) = p.signed_as(&other.private, Method::GET, WITHDRAWALS, None).await;
    assert_eq!(s, 200);
    assert_eq!(list["data"], json!([]));
    let r =
        p.client_for(&key).send_raw(Method::GET, &format!("{WITHDRAWALS}/nope"), Vec::new(), None).await.expect("send");
    assert_error(&r, 404, "not_found");
    // Lists filter and page.
    created(&p, &key, 5.0).await;
    let (_, page) = p.signed_as(&key, Method::GET, &format!("{WITHDRAWALS}?status=pending&limit=1"), None).await;
    assert_eq!(page["pagination"], json!({"page": 1, "limit": 1, "total": 2, "hasMore": true}));
    let r = p
        .client_for(&key)
        .send_raw(Method::GET, &format!("{WITHDRAWALS}?status=paid"), Vec::new(), None)
        .await
        .expect("send");
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), ["status"]);
    assert_ledger_clean(&p);
}

async fn the_same_key_and_body_replay_the_first_answer_and_another_body_is_409(b: Backend) {
    let (p, key) = funded(b, 100.0).await;
    let first = withdraw(&p, &key, "order-42", &body(12.5)).await;
    assert_eq!(first.status, 201, "{}", first.json());
    let first_rid = first.headers.get("x-request-id").and_then(|v| v.to_str().ok()).expect("rid").to_string();
    assert!(first.headers.get("idempotent-replayed").is_none());
    // The same JSON value, keys reordered and spaced: the first answer again.
    let same = br#"{ "account_name": "Ama Mensah", "account_number": "0241234567", "bank_code": "MTN",
        "bank_name": "MTN Mobile Money", "amount": 12.5 }"#;
    let again = withdraw_raw(&p, &key, Some("order-42"), same.to_vec()).await;
    assert_eq!(again.status, 201, "{}", again.json());
    assert_eq!(again.json()["data"], first.json()["data"]);
    assert_eq!(again.headers.get("idempotent-replayed").and_then(|v| v.to_str().ok()), Some("true"));
    assert_eq!(again.headers.get("original-request").and_then(|v| v.to_str().ok()), Some(first_rid.as_str()));
    let again_rid = again.headers.get("x-request-id").and_then(|v| v.to_str().ok()).expect("rid");
    assert_ne!(again_rid, first_rid, "a replay has its own requestId");
    assert_eq!(again.json()["requestId"], again_rid);
    // Another body under the key: 409, nothing written.
    let r = withdraw(&p, &key, "order-42", &body(13.0)).await;
    assert_error(&r, 409, "idempotency_key_reused");
    // Keys are scoped to the account: another account may use the same key.
    let other = p.new_account("other").await;
    let other_key = p.create_key(&other.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    let r = withdraw(&p, &other_key, "order-42", &body(12.5)).await;
    assert_error(&r, 409, "insufficient_balance");
    let (_, list) = p.signed_as(&key, Method::GET, WITHDRAWALS, None).await;
    assert_eq!(list["pagination"]["total"], 1);
    assert_eq!(balance(&p, &key).await["held"], json!(12.5));
    // The replay still holds after the withdrawal moved on: the first answer, as it was.
    drain(&p).await;
    let later = withdraw(&p, &key, "order-42", &body(12.5)).await;
    assert_eq!(later.json()["data"]["status"], "pending");
    assert_ledger_clean(&p);
}

async fn an_amount_above_the_available_balance_is_409_and_holds_nothing(b: Backend) {
    let (p, key) = funded(b, 50.0).await;
    let r = withdraw(&p, &key, "too-much", &body(50.01)).await;
    let e = assert_error(&r, 409, "insufficient_balance");
    assert!(e["error"].as_str().is_some_and(|m| m.contains("50")), "{e}");
    assert_eq!(balance(&p, &key).await["held"], json!(0));
    // The key stays free: once the amount fits, the same key creates it.
    let r = withdraw(&p, &key, "too-much", &body(50.0)).await;
    assert_eq!(r.status, 201, "{}", r.json());
    assert_eq!(balance(&p, &key).await, json!({"available": 0, "pending": 0, "held": 50, "currency": "GHS"}));
    // Held money is not available: nothing more can be withdrawn.
    let r = withdraw(&p, &key, "more", &body(0.01)).await;
    assert_error(&r, 409, "insufficient_balance");
    assert_ledger_clean(&p);
}

async fn fifty_concurrent_requests_with_one_key_make_one_withdrawal_and_one_transfer(b: Backend) {
    let (p, key) = funded(b, 100.0).await;
    let client = p.client_for(&key);
    let bytes = serde_json::to_vec(&body(25.0)).expect("json");
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (client, bytes) = (client.clone(), bytes.clone());
        tasks.push(tokio::spawn(async move {
            let mut h = HeaderMap::new();
            h.insert("x-idempotency-key", HeaderValue::from_static("payout-2026-11"));
            client.send_raw(Method::POST, WITHDRAWALS, bytes, Some(h)).await
        }));
    }
    let mut datas = Vec::new();
    for t in tasks {
        let r = t.await.expect("join").expect("send");
        assert_eq!(r.status, 201, "{}", r.json());
        datas.push(r.json()["data"].clone());
    }
    assert!(datas.iter().all(|d| *d == datas[0]), "identical answers");
    let id = datas[0]["id"].as_str().expect("id").to_string();
    let (_, list) = p.signed_as(&key, Method::GET, WITHDRAWALS, None).await;
    assert_eq!(list["pagination"]["total"], 1, "one withdrawal: {list}");
    assert_eq!(balance(&p, &key).await["held"], json!(25));
    drain(&p).await;
    assert!(p.sandbox.transfer(&id).is_some(), "one transfer under the withdrawal's id");
    assert_eq!(show(&p, &key, &id).await["status"], "processing");
    assert_ledger_clean(&p);
}

async fn fifty_concurrent_withdrawals_never_overdraw_the_balance(b: Backend) {
    let (p, key) = funded(b, 100.0).await;
    let client = p.client_for(&key);
    let mut tasks = Vec::new();
    for i in 0..50 {
        let client = client.clone();
        let bytes = serde_json::to_vec(&body(7.0)).expect("json");
        tasks.push(tokio::spawn(async move {
            let mut h = HeaderMap::new();
            h.insert("x-idempotency-key", HeaderValue::from_str(&format!("w-{i}")).expect("header"));
            client.send_raw(Method::POST, WITHDRAWALS, bytes, Some(h)).await
        }));
    }
    let (mut accepted, mut refused) = (0, 0);
    for t in tasks {
        let r = t.await.expect("join").expect("send");
        match r.status {
            201 => accepted += 1,
            409 => {
                assert_eq!(r.json()["code"], "insufficient_balance");
                refused += 1;
            }
            other => panic!("unexpected {other}: {}", r.json()),
        }
    }
    assert!(accepted * 7 <= 100, "{accepted} × 7 GHS accepted from 100 GHS");
    assert_eq!(accepted, 14, "every withdrawal that fits is accepted");
    assert_eq!(refused, 36);
    assert_eq!(balance(&p, &key).await, json!({"available": 2, "pending": 0, "held": 98, "currency": "GHS"}));
    drain(&p).await;
    assert_ledger_clean(&p);
}

async fn a_provider_outage_is_retried_and_a_payout_down_for_24_hours_fails_and_releases(b: Backend) {
    let (p, key) = funded(b, 100.0).await;
    let id = created(&p, &key, 10.0).await["id"].as_str().expect("id").to_string();
    p.sandbox.set_outage("provider_a", true);
    drain(&p).await;
    assert_eq!(show(&p, &key, &id).await["status"], "pending", "retried later, not failed");
    assert!(p.sandbox.transfer(&id).is_none());
    // The provider is back: the retry (made due now) pays it out.
    p.sandbox.set_outage("provider_a", false);
    sql(&p, "UPDATE jobs SET run_at = 0 WHERE queue = 'payout'", None).await;
    drain(&p).await;
    assert_eq!(show(&p, &key, &id).await["status"], "processing");
    assert!(p.sandbox.transfer(&id).is_some());
    // Another one meets a provider that has been down for 25 hours: failed, released.
    let stuck = created(&p, &key, 15.0).await["id"].as_str().expect("id").to_string();
    p.sandbox.set_outage("provider_a", true);
    drain(&p).await;
    sql(
        &p,
        "UPDATE withdrawals SET provider_down_since = $1 WHERE provider_down_since IS NOT NULL",
        Some(now_ms() - 25 * 3600 * 1000),
    )
    .await;
    sql(&p, "UPDATE jobs SET run_at = 0 WHERE queue = 'payout'", None).await;
    drain(&p).await;
    let w = show(&p, &key, &stuck).await;
    assert_eq!(w["status"], "failed", "{w}");
    assert!(w["failureReason"].as_str().is_some_and(|r| r.contains("24 hours")), "{w}");
    assert!(p.sandbox.transfer(&stuck).is_none());
    p.sandbox.set_outage("provider_a", false);
    assert_eq!(balance(&p, &key).await, json!({"available": 90, "pending": 0, "held": 10, "currency": "GHS"}));
    assert_ledger_clean(&p);
}

async fn an_accounts_own_payout_provider_pays_and_signs_its_transfer_callbacks(b: Backend) {
    let p = crate::support::payments::spawn_paid_with(b, |c| c.security.allow_private_endpoints = true).await;
    fund(&p, 70.0).await;
    let key = p.create_key(&p.account.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    let own = p.sandbox.provider_url("provider_b");
    let (s, set) = p
        .signed(
            Method::PATCH,
            "/api/white-label/v1/settings/payments",
            Some(json!({"config": {"useSharedDefaults": false, "payoutProvider": "provider_b",
                "providers": {"provider_b": {"baseUrl": own, "secretKey": "sk_live_account_own_b"}}}})),
        )
        .await;
    assert_eq!(s, 200, "{set}");
    let id = created(&p, &key, 20.0).await["id"].as_str().expect("id").to_string();
    drain(&p).await;
    assert_eq!(p.sandbox.transfer(&id).expect("transfer")["provider"], "provider_b");
    settle_transfer(&p, &id, "succeed", json!({})).await;
    let delivered = p.sandbox.callbacks();
    assert_eq!(delivered[0]["status"], 200, "signed with the account's own secret and accepted: {delivered:?}");
    drain(&p).await;
    assert_eq!(show(&p, &key, &id).await["status"], "completed");
    // A transfer event signed with an unknown secret is refused before anything is stored.
    let (bytes, sig) = signed_event(
        "provider_b",
        "sk_wrong",
        json!({"event": "transfer.failed", "data": {"id": "x", "reference": id}}),
    );
    assert_error(&post_callback(&p, "provider_b", bytes, Some(&sig)).await, 401, "invalid_signature");
    assert_ledger_clean(&p);
}

async fn approval_cli(app: &TestApp, args: &[&str]) -> Value {
    let mut all = vec!["admin", "approval"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = app.cli(&all);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

async fn withdrawals_above_the_threshold_wait_for_an_approval_decided_with_the_cli(b: Backend) {
    let (p, key) = funded(b, 200.0).await;
    let _: Value = p
        .api()
        .patch(
            "/api/white-label/v1/settings/operations",
            &json!({"config": {"withdrawalApprovalAbove": 50}}),
            StatusCode::OK,
        )
        .await;
    let _: Value = p
        .api()
        .patch(
            "/api/white-label/v1/settings/operations",
            &json!({"config": {"withdrawalApprovalAbove": -1}}),
            StatusCode::BAD_REQUEST,
        )
        .await;
    // At the threshold: no approval needed.
    assert_eq!(created(&p, &key, 50.0).await["status"], "pending");
    let big = created(&p, &key, 60.0).await;
    let id = big["id"].as_str().expect("id").to_string();
    assert_eq!(big["status"], "awaiting_approval");
    let small = created(&p, &key, 55.0).await["id"].as_str().expect("id").to_string();
    assert_eq!(balance(&p, &key).await["held"], json!(165), "awaiting approval holds its amount");
    drain(&p).await;
    assert!(p.sandbox.transfer(&id).is_none(), "nothing is paid before the approval");
    let listed = approval_cli(&p, &["list", "--account", &p.account.slug]).await;
    let requests = listed["approvals"].as_array().expect("approvals");
    assert_eq!(requests.len(), 2, "{listed}");
    let request = requests.iter().find(|r| r["requestPayload"]["withdrawalId"] == id.as_str()).expect("request");
    assert_eq!(request["entityType"], "withdrawal");
    assert_eq!(request["status"], "pending");
    assert_eq!(request["requestedBy"], Value::Null);
    let request_id = request["id"].as_str().expect("id").to_string();
    let other = requests.iter().find(|r| r["requestPayload"]["withdrawalId"] == small.as_str()).expect("request");
    let other_id = other["id"].as_str().expect("id").to_string();
    // Approved: pending, then paid out.
    let decided = approval_cli(&p, &["decide", "--id", &request_id, "--status", "approved", "--note", "checked"]).await;
    assert_eq!((decided["status"].as_str(), decided["note"].as_str()), (Some("approved"), Some("checked")));
    assert_eq!(decided["decidedBy"], "operator");
    assert_eq!(show(&p, &key, &id).await["status"], "pending");
    drain(&p).await;
    assert_eq!(show(&p, &key, &id).await["status"], "processing");
    assert!(p.sandbox.transfer(&id).is_some());
    // Rejected: cancelled and released.
    approval_cli(&p, &["decide", "--id", &other_id, "--status", "rejected"]).await;
    let w = show(&p, &key, &small).await;
    assert_eq!(w["status"], "cancelled", "{w}");
    assert_eq!(balance(&p, &key).await["held"], json!(110));
    // A decided request cannot be decided again.
    let out = p.cli(&["admin", "approval", "decide", "--id", &other_id, "--status", "approved", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("conflict"));
    let out = p.cli(&["admin", "approval", "decide", "--id", &other_id, "--status", "maybe", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let (_, cancelled) = p.signed_as(&key, Method::GET, &format!("{WITHDRAWALS}?status=cancelled"), None).await;
    assert_eq!(cancelled["pagination"]["total"], 1);
    let audit = p.cli(&["admin", "audit", "list", "--account", &p.account.slug, "--json"]);
    assert!(String::from_utf8_lossy(&audit.stdout).contains("approval.reject"));
    assert_ledger_clean(&p);
}

async fn the_sdk_creates_and_reads_withdrawals(b: Backend) {
    let (p, key) = funded(b, 80.0).await;
    let sdk = p.client_for(&key);
    let w = sdk.create_withdrawal(&body(30.0), "sdk-1").await.expect("create");
    assert_eq!((w.status.as_str(), w.amount, w.bank_code.as_str()), ("pending", 30.0, "MTN"));
    let again = sdk.create_withdrawal(&body(30.0), "sdk-1").await.expect("replay");
    assert_eq!(again, w);
    assert_eq!(sdk.withdrawal(&w.id).await.expect("show").id, w.id);
    let list = sdk.withdrawals("status=pending").await.expect("list");
    assert_eq!(list.data.len(), 1);
    let err = sdk.create_withdrawal(&body(31.0), "sdk-1").await.expect_err("reused");
    assert_eq!((err.status(), err.code()), (Some(409), Some("idempotency_key_reused")));
    let balance = sdk.balance().await.expect("balance");
    assert_eq!((balance.available, balance.held), (50.0, 30.0));
    assert_ledger_clean(&p);
}

on_both!(
    a_withdrawal_holds_its_amount_and_completes_when_the_transfer_callback_is_confirmed,
    a_failed_transfer_fails_the_withdrawal_and_releases_its_hold,
    polling_ends_withdrawals_whose_transfer_callback_never_comes,
    each_withdrawal_rule_is_a_400_naming_its_field,
    withdrawals_need_the_scope_and_the_capability_and_stay_in_their_account,
    the_same_key_and_body_replay_the_first_answer_and_another_body_is_409,
    an_amount_above_the_available_balance_is_409_and_holds_nothing,
    fifty_concurrent_requests_with_one_key_make_one_withdrawal_and_one_transfer,
    fifty_concurrent_withdrawals_never_overdraw_the_balance,
    a_provider_outage_is_retried_and_a_payout_down_for_24_hours_fails_and_releases,
    withdrawals_above_the_threshold_wait_for_an_approval_decided_with_the_cli,
    an_accounts_own_payout_provider_pays_and_signs_its_transfer_callbacks,
    the_sdk_creates_and_reads_withdrawals,
);

//! Webhook endpoint routes and the event feed (D17.24, D17.27, D17.41): every route's answer,
//! each input rule by the field it names, the scopes, and another account's ids (404). Delivery
//! itself (signatures, retries, order) is tested in `webhooks_out.rs`.
//!
//! Events are written here with SQL, as `store::events::record` writes them (the account's next
//! sequence, then the row), so the feed and replays are tested without the flows that emit them.
use base64::Engine as _;
use serde_json::{json, Value};
use sqlx::Row;
use tessera_client::Method;

use crate::support::client::{detail_fields, StatusCode};
use crate::support::db::{connect, now_ms, record_event};
use crate::support::server::{spawn, spawn_with, Backend, TestApp, TestKey};

const V1: &str = "/api/white-label/v1";
const ENDPOINTS: &str = "/api/white-label/v1/webhook-endpoints";
/// A public-looking host that never resolves (`.invalid`, RFC 2606): nothing is ever delivered.
const URL: &str = "https://hooks.tessera.invalid/in";

async fn count(app: &TestApp, sql: &str, id: &str) -> i64 {
    let mut conn = connect(app).await;
    sqlx::query(sql).bind(id).fetch_one(&mut conn).await.expect("count").get::<i64, _>(0)
}

/// Creates an endpoint as the default account; returns the answer's `data`.
pub(crate) async fn create(app: &TestApp, body: Value) -> Value {
    let v: Value = app.api().post(ENDPOINTS, &body, StatusCode::CREATED).await;
    v["data"].clone()
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().expect("id").to_string()
}

/// A 400 `validation_failed`; returns the fields its details name.
fn refused(s: u16, v: &Value) -> Vec<String> {
    assert_eq!((s, v["code"].as_str()), (400, Some("validation_failed")), "{v}");
    detail_fields(v)
}

fn plain_secret(app: &TestApp, id: &str, sealed: &str) -> String {
    use secrecy::ExposeSecret;
    let opened = app.keyring.decrypt(&format!("webhook:{id}"), sealed).expect("opens");
    String::from_utf8(opened.expose_secret().clone()).expect("utf-8")
}

async fn sealed_secrets(app: &TestApp, id: &str) -> (String, Option<String>, Option<i64>) {
    let mut conn = connect(app).await;
    let r = sqlx::query(
        "SELECT secret_sealed, previous_secret_sealed, previous_secret_until FROM webhook_endpoints WHERE id = $1",
    )
    .bind(id)
    .fetch_one(&mut conn)
    .await
    .expect("endpoint row");
    (r.get(0), r.get(1), r.get(2))
}

async fn an_endpoint_is_created_with_its_secret_shown_once_and_sealed_at_rest(b: Backend) {
    let app = spawn(b).await;
    let body = json!({"url": URL, "eventTypes": ["payment.failed", "ticket.checked_in"], "description": " Orders "});
    let created = create(&app, body).await;
    let id = id_of(&created);
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{created}");
    assert_eq!(created["url"], URL);
    assert_eq!(created["description"], "Orders");
    assert_eq!(created["eventTypes"], json!(["payment.failed", "ticket.checked_in"]));
    assert_eq!((created["status"].as_str(), created["disabledReason"].is_null()), (Some("enabled"), true));
    assert!(created["createdAt"].as_str().is_some_and(|t| t.ends_with('Z')), "{created}");
    let secret = created["secret"].as_str().expect("secret").to_string();
    let key = base64::engine::general_purpose::STANDARD.decode(secret.strip_prefix("whsec_").expect("whsec_"));
    assert_eq!(key.expect("base64").len(), 32);

    // Sealed under `webhook:<id>`, never stored or shown in the clear afterwards.
    let (sealed, previous, _) = sealed_secrets(&app, &id).await;
    assert!(!sealed.contains(&secret) && previous.is_none());
    assert_eq!(plain_secret(&app, &id, &sealed), secret);
    let shown: Value = app.api().get(&format!("{ENDPOINTS}/{id}"), StatusCode::OK).await;
    let mut expected = created.clone();
    expected.as_object_mut().expect("object").remove("secret");
    assert_eq!(shown["data"], expected);
    let list: Value = app.api().get(ENDPOINTS, StatusCode::OK).await;
    assert_eq!(list["data"], json!([expected]));
    assert_eq!(list["pagination"], json!({"page": 1, "limit": 20, "total": 1, "hasMore": false}));
    assert!(!list.to_string().contains(&secret));

    // Audited like other settings writes, without the secret.
    let audit = app.store.audit_entries(&app.account.id, 5).await.expect("audit");
    let entry = audit.iter().find(|e| e.action == "webhook_endpoint.created").expect("audit entry");
    assert_eq!((entry.entity_type.as_str(), entry.entity_id.as_str()), ("webhook_endpoint", id.as_str()));
    assert!(!entry.summary.to_string().contains(&secret), "{}", entry.summary);

    // No eventTypes, or null: every type. Two endpoints have two secrets.
    let all = create(&app, json!({"url": URL})).await;
    assert!(all["eventTypes"].is_null() && all["description"].is_null(), "{all}");
    assert_ne!(all["secret"], secret);
    let nulls = create(&app, json!({"url": URL, "eventTypes": null})).await;
    assert!(nulls["eventTypes"].is_null(), "{nulls}");
    let (_, list) = app.signed(Method::GET, &format!("{ENDPOINTS}?limit=2"), None).await;
    let ids: Vec<&str> = list["data"].as_array().expect("items").iter().filter_map(|e| e["id"].as_str()).collect();
    assert_eq!(ids, [nulls["id"].as_str().expect("id"), all["id"].as_str().expect("id")], "newest first");
    assert_eq!(list["pagination"]["hasMore"], true);
}

async fn the_url_must_be_https_and_public_unless_private_endpoints_are_allowed(b: Backend) {
    let app = spawn_with(b.clone(), |c| c.security.allow_private_endpoints = false).await;
    let long = format!("https://hooks.example.com/{}", "a".repeat(2048));
    for url in [
        "http://hooks.example.com/in",
        "https://127.0.0.1/in",
        "https://10.1.2.3/in",
        "https://[::1]/in",
        "https://localhost/in",
        "ftp://hooks.example.com/in",
        "not a url",
        long.as_str(),
    ] {
        let (s, v) = app.signed(Method::POST, ENDPOINTS, Some(json!({"url": url}))).await;
        assert_eq!(refused(s, &v), ["url"], "{url}: {v}");
    }
    let (s, v) = app.signed(Method::POST, ENDPOINTS, Some(json!({"eventTypes": null}))).await;
    assert_eq!(refused(s, &v), ["url"], "{v}");
    let (s, v) = app.signed(Method::POST, ENDPOINTS, Some(json!({"url": 7}))).await;
    assert_eq!(refused(s, &v), ["url"], "{v}");
    let id = id_of(&create(&app, json!({"url": URL})).await);
    let (s, v) =
        app.signed(Method::PATCH, &format!("{ENDPOINTS}/{id}"), Some(json!({"url": "http://127.0.0.1/x"}))).await;
    assert_eq!(refused(s, &v), ["url"], "{v}");

    let open = spawn_with(b, |c| c.security.allow_private_endpoints = true).await;
    let local = create(&open, json!({"url": "http://127.0.0.1:9/in"})).await;
    assert_eq!(local["url"], "http://127.0.0.1:9/in");
}

async fn event_types_description_and_unknown_fields_are_refused_by_field(b: Backend) {
    let app = spawn(b).await;
    let cases = [
        (
            json!({"url": URL, "eventTypes": ["payment.failed", "payment.nope", 3]}),
            vec!["eventTypes[1]", "eventTypes[2]"],
        ),
        (json!({"url": URL, "eventTypes": "payment.failed"}), vec!["eventTypes"]),
        (json!({"url": URL, "eventTypes": []}), vec!["eventTypes"]),
        (json!({"url": URL, "description": "d".repeat(256)}), vec!["description"]),
        (json!({"url": URL, "status": "enabled"}), vec!["status"]),
        (json!({"url": URL, "secret": "whsec_mine"}), vec!["secret"]),
        (json!({"url": "http://x.example.com", "eventTypes": ["x"]}), vec!["url", "eventTypes[0]"]),
    ];
    for (body, fields) in cases {
        let (s, v) = app.signed(Method::POST, ENDPOINTS, Some(body.clone())).await;
        assert_eq!(refused(s, &v), fields, "{body}: {v}");
    }
    let id = id_of(&create(&app, json!({"url": URL})).await);
    let path = format!("{ENDPOINTS}/{id}");
    for (body, fields) in [
        (json!({"eventTypes": ["nope"]}), vec!["eventTypes[0]"]),
        (json!({"status": "paused"}), vec!["status"]),
        (json!({"description": 5}), vec!["description"]),
        (json!({"disabledReason": "manual"}), vec!["disabledReason"]),
    ] {
        let (s, v) = app.signed(Method::PATCH, &path, Some(body.clone())).await;
        assert_eq!(refused(s, &v), fields, "{body}: {v}");
    }
    let (_, v) = app.signed(Method::GET, ENDPOINTS, None).await;
    assert_eq!(v["pagination"]["total"], 1, "nothing refused was stored: {v}");
}

async fn a_patch_changes_what_it_names_and_a_status_change_records_why(b: Backend) {
    let app = spawn(b).await;
    let created = create(&app, json!({"url": URL, "eventTypes": ["payment.failed"], "description": "first"})).await;
    let id = id_of(&created);
    let path = format!("{ENDPOINTS}/{id}");
    let (s, v) = app.signed(Method::PATCH, &path, Some(json!({"eventTypes": ["withdrawal.failed"]}))).await;
    assert_eq!(s, 200, "{v}");
    let d = &v["data"];
    assert_eq!((d["eventTypes"].clone(), d["description"].clone()), (json!(["withdrawal.failed"]), json!("first")));
    assert_eq!((d["url"].as_str(), d["createdAt"].clone()), (Some(URL), created["createdAt"].clone()));
    assert!(d.get("secret").is_none(), "{d}");

    let other = "https://elsewhere.tessera.invalid/hook";
    let v: Value =
        app.api().patch(&path, &json!({"url": other, "eventTypes": null, "description": null}), StatusCode::OK).await;
    assert_eq!(v["data"]["url"], other);
    assert!(v["data"]["eventTypes"].is_null() && v["data"]["description"].is_null(), "{v}");

    let (s, v) = app.signed(Method::PATCH, &path, Some(json!({"status": "disabled"}))).await;
    assert_eq!(
        (s, v["data"]["status"].as_str(), v["data"]["disabledReason"].as_str()),
        (200, Some("disabled"), Some("manual"))
    );

    // The delivery disabled it for failing (D17.26): enabling starts afresh.
    let mut conn = connect(&app).await;
    sqlx::query("UPDATE webhook_endpoints SET disabled_reason = 'failing', failing_since = 1 WHERE id = $1")
        .bind(&id)
        .execute(&mut conn)
        .await
        .expect("failing");
    let (_, v) = app.signed(Method::GET, &path, None).await;
    assert_eq!(v["data"]["disabledReason"], "failing");
    let (s, v) = app.signed(Method::PATCH, &path, Some(json!({"status": "enabled"}))).await;
    assert_eq!(s, 200, "{v}");
    assert!(v["data"]["status"] == "enabled" && v["data"]["disabledReason"].is_null(), "{v}");
    let fresh = "SELECT COUNT(*) FROM webhook_endpoints WHERE id = $1 AND failing_since IS NULL";
    assert_eq!(count(&app, fresh, &id).await, 1, "the failing run is cleared");
    // An enabled endpoint that is failing keeps its clock when told `enabled` again.
    sqlx::query("UPDATE webhook_endpoints SET failing_since = 5 WHERE id = $1")
        .bind(&id)
        .execute(&mut conn)
        .await
        .expect("failing");
    let _: Value = app.api().patch(&path, &json!({"status": "enabled"}), StatusCode::OK).await;
    assert_eq!(count(&app, fresh, &id).await, 0, "still failing since 5");

    let audit = app.store.audit_entries(&app.account.id, 10).await.expect("audit");
    let updates: Vec<_> = audit.iter().filter(|e| e.action == "webhook_endpoint.updated").collect();
    assert_eq!(updates.len(), 5);
    let enabling = |e: &&&tessera_server::store::audit::AuditEntry| {
        e.summary["before"]["disabledReason"] == "failing" && e.summary["after"]["status"] == "enabled"
    };
    assert!(updates.iter().any(|e| enabling(&e)), "before and after in the entry: {updates:?}");
}

async fn delete_answers_204_and_takes_the_deliveries_and_attempts_with_it(b: Backend) {
    let app = spawn(b).await;
    let id = id_of(&create(&app, json!({"url": URL})).await);
    let (event, _) = record_event(&app, &app.account.id, "payment.failed", r#"{"reference":"r1"}"#, now_ms()).await;
    let _: Value =
        app.api().post(&format!("{ENDPOINTS}/{id}/replay"), &json!({"eventId": event}), StatusCode::ACCEPTED).await;
    let mut conn = connect(&app).await;
    sqlx::query(
        "INSERT INTO webhook_attempts (id, account_id, endpoint_id, event_id, status_code, duration_ms, error, at) \
         VALUES ($1, $2, $3, $4, 500, 12, 'HTTP 500', $5)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(&app.account.id)
    .bind(&id)
    .bind(&event)
    .bind(now_ms())
    .execute(&mut conn)
    .await
    .expect("attempt");

    let r = app.client().send_raw(Method::DELETE, &format!("{ENDPOINTS}/{id}"), Vec::new(), None).await.expect("send");
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.body.is_empty());
    let (s, v) = app.signed(Method::GET, &format!("{ENDPOINTS}/{id}"), None).await;
    assert_eq!((s, v["code"].as_str()), (404, Some("not_found")), "{v}");
    let left = count(&app, "SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = $1", &id).await
        + count(&app, "SELECT COUNT(*) FROM webhook_attempts WHERE endpoint_id = $1", &id).await;
    assert_eq!(left, 0, "deliveries and attempts cascade");
    assert_eq!(count(&app, "SELECT COUNT(*) FROM events WHERE id = $1", &event).await, 1, "the event stays");
    let (s, _) = app.signed(Method::DELETE, &format!("{ENDPOINTS}/{id}"), None).await;
    assert_eq!(s, 404);
    let audit = app.store.audit_entries(&app.account.id, 5).await.expect("audit");
    assert!(audit.iter().any(|e| e.action == "webhook_endpoint.deleted" && e.entity_id == id));
}

async fn rotation_answers_a_new_secret_and_keeps_the_previous_one_for_a_day(b: Backend) {
    let app = spawn(b).await;
    let created = create(&app, json!({"url": URL})).await;
    let (id, first) = (id_of(&created), created["secret"].as_str().expect("secret").to_string());
    let path = format!("{ENDPOINTS}/{id}/rotate-secret");
    let before = now_ms();
    let (s, v) = app.signed(Method::POST, &path, None).await;
    assert_eq!(s, 200, "{v}");
    let second = v["data"]["secret"].as_str().expect("secret").to_string();
    assert!(second.starts_with("whsec_") && second != first, "{v}");
    assert_eq!(v["data"].as_object().map(|o| o.len()), Some(1), "only the secret: {v}");
    let (current, previous, until) = sealed_secrets(&app, &id).await;
    assert_eq!(plain_secret(&app, &id, &current), second);
    assert_eq!(plain_secret(&app, &id, &previous.expect("previous kept")), first);
    let until = until.expect("until");
    assert!((before + 86_400_000..=now_ms() + 86_400_000).contains(&until), "24 h grace: {until}");

    let _: Value = app.api().post(&path, &json!({}), StatusCode::OK).await;
    let (_, previous, _) = sealed_secrets(&app, &id).await;
    assert_eq!(plain_secret(&app, &id, &previous.expect("previous")), second, "the oldest is dropped");
    let (s, v) = app.signed(Method::POST, &path, Some(json!({"secret": "whsec_mine"}))).await;
    assert_eq!(refused(s, &v), ["secret"], "{v}");
    let (_, shown) = app.signed(Method::GET, &format!("{ENDPOINTS}/{id}"), None).await;
    assert!(shown["data"].get("secret").is_none(), "{shown}");
    let audit = app.store.audit_entries(&app.account.id, 5).await.expect("audit");
    let rotations = audit.iter().filter(|e| e.action == "webhook_endpoint.secret_rotated").count();
    assert_eq!(rotations, 2);
    assert!(audit.iter().all(|e| !e.summary.to_string().contains("whsec_")));
}

async fn deliveries(app: &TestApp, endpoint: &str) -> Vec<(String, i64)> {
    let mut conn = connect(app).await;
    sqlx::query(
        "SELECT event_id, sequence FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending' \
         ORDER BY created_at, sequence",
    )
    .bind(endpoint)
    .fetch_all(&mut conn)
    .await
    .expect("deliveries")
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

async fn a_replay_queues_one_event_or_the_events_of_a_range_the_filter_takes(b: Backend) {
    let app = spawn(b).await;
    let id = id_of(&create(&app, json!({"url": URL, "eventTypes": ["payment.failed"]})).await);
    let path = format!("{ENDPOINTS}/{id}/replay");
    let account = app.account.id.clone();
    let t0 = now_ms() - 3_600_000;
    let (e1, s1) = record_event(&app, &account, "payment.failed", "{}", t0).await;
    let (e2, _) = record_event(&app, &account, "ticket.checked_in", "{}", t0 + 1_000).await;
    let (e3, s3) = record_event(&app, &account, "payment.failed", "{}", t0 + 2_000).await;
    record_event(&app, &account, "payment.failed", "{}", t0 + 3_000).await;

    // One event goes whatever the filter.
    let (s, v) = app.signed(Method::POST, &path, Some(json!({"eventId": e2}))).await;
    assert_eq!((s, v["data"].clone()), (202, json!({"queued": 1})), "{v}");
    assert_eq!(deliveries(&app, &id).await.len(), 1);

    // A range: the filter's events in it, ends included, in sequence order.
    let range = json!({"since": rfc3339(t0), "until": rfc3339(t0 + 2_000)});
    let (s, v) = app.signed(Method::POST, &path, Some(range)).await;
    assert_eq!((s, v["data"].clone()), (202, json!({"queued": 2})), "{v}");
    let queued = deliveries(&app, &id).await;
    assert_eq!(queued[1..], [(e1.clone(), s1), (e3, s3)], "{queued:?}");
    let (s, v) = app.signed(Method::POST, &path, Some(json!({"eventId": e1}))).await;
    assert_eq!((s, v["data"]["queued"].as_i64()), (202, Some(1)), "delivered or not, it goes again: {v}");
    let (s, v) =
        app.signed(Method::POST, &path, Some(json!({"since": rfc3339(t0 - 9_000), "until": rfc3339(t0 - 1)}))).await;
    assert_eq!((s, v["data"]["queued"].as_i64()), (202, Some(0)), "{v}");
    let audit = app.store.audit_entries(&account, 10).await.expect("audit");
    assert_eq!(audit.iter().filter(|e| e.action == "webhook_endpoint.replayed").count(), 4);

    let day = 86_400_000;
    let cases = [
        (json!({}), vec!["eventId"]),
        (json!({"eventId": e2, "since": rfc3339(t0), "until": rfc3339(t0)}), vec!["eventId"]),
        (json!({"since": rfc3339(t0)}), vec!["until"]),
        (json!({"until": rfc3339(t0)}), vec!["since"]),
        (json!({"since": "yesterday", "until": rfc3339(t0)}), vec!["since"]),
        (json!({"since": rfc3339(t0), "until": "2026-13-01T00:00:00Z"}), vec!["until"]),
        (json!({"since": rfc3339(t0), "until": rfc3339(t0 - 1)}), vec!["until"]),
        (json!({"since": rfc3339(t0), "until": rfc3339(t0 + 31 * day + 1)}), vec!["until"]),
        (json!({"eventId": e2, "extra": 1}), vec!["extra"]),
    ];
    for (body, fields) in cases {
        let (s, v) = app.signed(Method::POST, &path, Some(body.clone())).await;
        assert_eq!(refused(s, &v), fields, "{body}: {v}");
    }
    let (s, v) =
        app.signed(Method::POST, &path, Some(json!({"since": rfc3339(t0), "until": rfc3339(t0 + 31 * day)}))).await;
    assert_eq!(s, 202, "31 days is allowed: {v}");

    // An event that is not the account's, or no event at all: 404.
    let other = app.new_account("other").await;
    let (theirs, _) = record_event(&app, &other.id, "payment.failed", "{}", t0).await;
    for event in [theirs.as_str(), "0190f1d2-8c4b-7cc3-9a41-2f4b8e6d5a10", "not-an-id"] {
        let (s, v) = app.signed(Method::POST, &path, Some(json!({"eventId": event}))).await;
        assert_eq!((s, v["code"].as_str()), (404, Some("not_found")), "{event}: {v}");
    }
}

async fn attempts_are_listed_newest_first_and_paginated(b: Backend) {
    let app = spawn(b).await;
    let id = id_of(&create(&app, json!({"url": URL})).await);
    let mut conn = connect(&app).await;
    let t0 = now_ms() - 60_000;
    let rows: [(Option<i64>, Option<&str>, i64); 3] = [
        (Some(500), Some("HTTP 500"), t0),
        (None, Some("timed out after 10000 ms"), t0 + 1_000),
        (Some(204), None, t0 + 2_000),
    ];
    let mut events = Vec::new();
    for (n, (status, error, at)) in rows.into_iter().enumerate() {
        let event = uuid::Uuid::now_v7().to_string();
        sqlx::query(
            "INSERT INTO webhook_attempts (id, account_id, endpoint_id, event_id, status_code, duration_ms, error, \
             response, at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'body', $8)",
        )
        .bind(uuid::Uuid::now_v7().to_string())
        .bind(&app.account.id)
        .bind(&id)
        .bind(&event)
        .bind(status)
        .bind(10 + n as i64)
        .bind(error)
        .bind(at)
        .execute(&mut conn)
        .await
        .expect("attempt");
        events.push(event);
    }
    let (s, v) = app.signed(Method::GET, &format!("{ENDPOINTS}/{id}/attempts?limit=2"), None).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["data"],
        json!([
            {"eventId": events[2], "statusCode": 204, "durationMs": 12, "error": null, "at": rfc3339(t0 + 2_000)},
            {"eventId": events[1], "statusCode": null, "durationMs": 11, "error": "timed out after 10000 ms", "at": rfc3339(t0 + 1_000)},
        ])
    );
    assert_eq!(v["pagination"], json!({"page": 1, "limit": 2, "total": 3, "hasMore": true}));
    let (_, v) = app.signed(Method::GET, &format!("{ENDPOINTS}/{id}/attempts?limit=2&page=2"), None).await;
    assert_eq!(v["data"][0]["eventId"], events[0].as_str());
    let (s, v) = app.signed(Method::GET, &format!("{ENDPOINTS}/{id}/attempts?limit=0&since=1"), None).await;
    assert_eq!(refused(s, &v), ["since"], "{v}");
    let (s, v) = app.signed(Method::GET, &format!("{ENDPOINTS}/{id}/attempts?limit=0"), None).await;
    assert_eq!(refused(s, &v), ["limit"], "{v}");
}

fn rfc3339(ms: i64) -> String {
    tessera_server::domain::time::rfc3339(ms)
}

async fn the_feed_lists_events_after_a_sequence_with_their_data_as_stored(b: Backend) {
    let app = spawn(b).await;
    let account = app.account.id.clone();
    let t0 = now_ms() - 10_000;
    // Key order and spacing a re-serialization would change.
    let data = r#"{"zeta":1,"alpha":[1,2.50],"nested":{"b":true,"a":null}}"#;
    let (e1, s1) = record_event(&app, &account, "payment.refunded", data, t0).await;
    let (e2, _) = record_event(&app, &account, "withdrawal.succeeded", r#"{"id":"w1"}"#, t0 + 1).await;
    let (e3, _) = record_event(&app, &account, "ticket.checked_in", r#"{"id":"t1"}"#, t0 + 2).await;
    let other = app.new_account("other").await;
    record_event(&app, &other.id, "payment.failed", r#"{"id":"theirs"}"#, t0).await;

    let r = app.client().send_raw(Method::GET, &format!("{V1}/events"), Vec::new(), None).await.expect("send");
    assert_eq!(r.status, 200);
    let raw = String::from_utf8(r.body.clone()).expect("utf-8");
    assert!(raw.contains(&format!(r#""data":{data}"#)), "data byte for byte: {raw}");
    let v = r.json();
    assert_eq!(
        v["data"][0],
        json!({"id": e1, "type": "payment.refunded", "sequence": s1, "timestamp": rfc3339(t0),
               "data": serde_json::from_str::<Value>(data).expect("json")})
    );
    let ids: Vec<&str> = v["data"].as_array().expect("items").iter().filter_map(|e| e["id"].as_str()).collect();
    assert_eq!(ids, [e1.as_str(), e2.as_str(), e3.as_str()], "in sequence order, only the account's");

    let (s, v) = app.signed(Method::GET, &format!("{V1}/events?after={s1}&limit=1"), None).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!((v["data"].as_array().map(Vec::len), v["data"][0]["id"].as_str()), (Some(1), Some(e2.as_str())));
    let (_, v) = app.signed(Method::GET, &format!("{V1}/events?after={}", s1 + 2), None).await;
    assert_eq!(v["data"], json!([]));
    for (query, fields) in [
        ("after=-1", vec!["after"]),
        ("after=x&limit=101", vec!["after", "limit"]),
        ("limit=0", vec!["limit"]),
        ("page=2", vec!["page"]),
    ] {
        let (s, v) = app.signed(Method::GET, &format!("{V1}/events?{query}"), None).await;
        assert_eq!(refused(s, &v), fields, "{query}: {v}");
    }
}

/// A key of the default account with only these scopes.
async fn key_with(app: &TestApp, scopes: &str) -> TestKey {
    app.create_key(&app.account.slug, "private", None, scopes, &[]).await
}

async fn every_route_asks_for_its_scope(b: Backend) {
    let app = spawn(b).await;
    let id = id_of(&create(&app, json!({"url": URL})).await);
    let one = format!("{ENDPOINTS}/{id}");
    let reader = key_with(&app, "settings:read").await;
    let writes = [
        (Method::POST, ENDPOINTS.to_string(), Some(json!({"url": URL}))),
        (Method::PATCH, one.clone(), Some(json!({"status": "disabled"}))),
        (Method::DELETE, one.clone(), None),
        (Method::POST, format!("{one}/rotate-secret"), None),
        (Method::POST, format!("{one}/test"), Some(json!({"type": "payment.failed"}))),
        (Method::POST, format!("{one}/replay"), Some(json!({"eventId": id}))),
    ];
    for (method, path, body) in writes {
        let (s, v) = app.signed_as(&reader, method.clone(), &path, body).await;
        assert_eq!((s, v["code"].as_str()), (403, Some("insufficient_scope")), "{method} {path}: {v}");
    }
    let stranger = key_with(&app, "campaigns:read").await;
    for path in [ENDPOINTS.to_string(), one.clone(), format!("{one}/attempts"), format!("{V1}/events")] {
        let (s, v) = app.signed_as(&stranger, Method::GET, &path, None).await;
        assert_eq!((s, v["code"].as_str()), (403, Some("insufficient_scope")), "GET {path}: {v}");
        let (s, v) = app.signed_as(&reader, Method::GET, &path, None).await;
        assert_eq!(s, 200, "settings:read reads GET {path}: {v}");
    }
    let (_, v) = app.signed(Method::GET, &one, None).await;
    assert_eq!(v["data"]["status"], "enabled", "nothing refused was applied");
}

async fn another_accounts_endpoint_is_not_found_on_every_route(b: Backend) {
    let app = spawn(b).await;
    let created = create(&app, json!({"url": URL})).await;
    let id = id_of(&created);
    let one = format!("{ENDPOINTS}/{id}");
    let other = app.new_account("other").await;
    let probes = [
        (Method::GET, one.clone(), None),
        (Method::PATCH, one.clone(), Some(json!({"status": "disabled"}))),
        (Method::DELETE, one.clone(), None),
        (Method::POST, format!("{one}/rotate-secret"), None),
        (Method::POST, format!("{one}/test"), Some(json!({"type": "payment.failed"}))),
        (Method::POST, format!("{one}/replay"), Some(json!({"since": rfc3339(0), "until": rfc3339(1)}))),
        (Method::GET, format!("{one}/attempts"), None),
        (Method::GET, format!("{ENDPOINTS}/not-an-id"), None),
    ];
    for (method, path, body) in probes {
        let (s, v) = app.signed_as(&other.private, method.clone(), &path, body).await;
        assert_eq!((s, v["code"].as_str()), (404, Some("not_found")), "{method} {path}: {v}");
        assert!(!v.to_string().contains(URL), "{v}");
    }
    let (_, v) = app.signed_as(&other.private, Method::GET, ENDPOINTS, None).await;
    assert_eq!(v["data"], json!([]));
    let (_, v) = app.signed(Method::GET, &one, None).await;
    let mut expected = created;
    expected.as_object_mut().expect("object").remove("secret");
    assert_eq!(v["data"], expected, "A's endpoint is unchanged");
    let (current, previous, _) = sealed_secrets(&app, &id).await;
    assert!(previous.is_none() && !current.is_empty(), "not rotated");
}

async fn a_test_event_refuses_a_missing_or_unknown_type(b: Backend) {
    let app = spawn(b).await;
    let id = id_of(&create(&app, json!({"url": URL})).await);
    let path = format!("{ENDPOINTS}/{id}/test");
    for (body, fields) in [
        (json!({}), vec!["type"]),
        (json!({"type": "payment.nope"}), vec!["type"]),
        (json!({"type": "payment.failed", "data": {}}), vec!["data"]),
    ] {
        let (s, v) = app.signed(Method::POST, &path, Some(body.clone())).await;
        assert_eq!(refused(s, &v), fields, "{body}: {v}");
    }
    let missing = format!("{ENDPOINTS}/0190f1d2-8c4b-7cc3-9a41-2f4b8e6d5a10/test");
    let (s, v) = app.signed(Method::POST, &missing, Some(json!({"type": "payment.failed"}))).await;
    assert_eq!((s, v["code"].as_str()), (404, Some("not_found")), "{v}");
}

async fn a_recorded_change_is_in_the_feed_and_queued_for_the_endpoints_that_take_it(b: Backend) {
    let app = spawn(b).await;
    let takes = id_of(&create(&app, json!({"url": URL, "eventTypes": ["campaign.status.updated"]})).await);
    let skips = id_of(&create(&app, json!({"url": URL, "eventTypes": ["payment.failed"]})).await);
    let body = json!({"title": "Feed night", "description": "An evening to read the feed.", "campaign_type": "ticketing",
        "start_date": "2027-03-01T18:00:00Z", "end_date": "2027-03-02T02:00:00Z"});
    let (s, v) = app.signed(Method::POST, &format!("{V1}/campaigns"), Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let campaign = v["data"]["id"].as_str().expect("id").to_string();
    let at = format!("{V1}/campaigns/{campaign}");
    let _: Value = app.api().patch(&at, &json!({"status": "pending_approval"}), StatusCode::OK).await;

    let (_, feed) = app.signed(Method::GET, &format!("{V1}/events"), None).await;
    let events = feed["data"].as_array().expect("items");
    let event = events.iter().find(|e| e["type"] == "campaign.status.updated").expect("the change is in the feed");
    let (_, shown) = app.signed(Method::GET, &at, None).await;
    assert_eq!(event["data"], shown["data"], "data is the campaign as GET /campaigns/:id shows it");
    let id = event["id"].as_str().expect("id");
    assert_eq!(deliveries(&app, &takes).await, [(id.to_string(), event["sequence"].as_i64().expect("sequence"))]);
    assert!(deliveries(&app, &skips).await.is_empty(), "the filter leaves it out");
    // Replayed by time for the endpoint that skipped it: its filter still applies; by id it goes.
    let replay = format!("{ENDPOINTS}/{skips}/replay");
    let timestamp = event["timestamp"].as_str().expect("timestamp");
    let (_, v) = app.signed(Method::POST, &replay, Some(json!({"since": timestamp, "until": timestamp}))).await;
    assert_eq!(v["data"]["queued"], 0, "{v}");
    let (_, v) = app.signed(Method::POST, &replay, Some(json!({"eventId": id}))).await;
    assert_eq!(v["data"]["queued"], 1, "{v}");
}

/// A loopback receiver that answers 200 and counts what it was sent.
async fn receiver() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>, tokio::sync::oneshot::Sender<()>) {
    let got = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sink = got.clone();
    let app = axum::Router::new().fallback(move || {
        sink.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async { "ok" }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/in", listener.local_addr().expect("addr"));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = rx.await;
            })
            .await;
    });
    (url, got, tx)
}

async fn a_test_event_answers_202_with_its_attempt_and_stays_out_of_the_feed(b: Backend) {
    let app = spawn_with(b, |c| c.security.allow_private_endpoints = true).await;
    let (url, got, _stop) = receiver().await;
    // The filter does not apply to test events (D17.41).
    let id = id_of(&create(&app, json!({"url": url, "eventTypes": ["payment.failed"]})).await);
    let v: Value = app
        .api()
        .post(&format!("{ENDPOINTS}/{id}/test"), &json!({"type": "ticket.checked_in"}), StatusCode::ACCEPTED)
        .await;
    let d = &v["data"];
    let event = d["eventId"].as_str().expect("eventId").to_string();
    assert!(uuid::Uuid::parse_str(&event).is_ok(), "{v}");
    assert_eq!((d["statusCode"].as_i64(), d["error"].is_null()), (Some(200), true), "{v}");
    assert!(d["durationMs"].as_i64().is_some_and(|ms| ms >= 0), "{v}");
    assert_eq!(d.as_object().map(|o| o.len()), Some(4), "{v}");
    assert_eq!(got.load(std::sync::atomic::Ordering::SeqCst), 1);
    let (_, log) = app.signed(Method::GET, &format!("{ENDPOINTS}/{id}/attempts"), None).await;
    assert_eq!(log["data"][0]["eventId"], event.as_str(), "{log}");
    assert_eq!(log["data"][0]["statusCode"], 200, "{log}");
    let (_, feed) = app.signed(Method::GET, &format!("{V1}/events"), None).await;
    assert!(!feed.to_string().contains(&event), "a test event is not in the feed: {feed}");
}

on_both!(
    an_endpoint_is_created_with_its_secret_shown_once_and_sealed_at_rest,
    the_url_must_be_https_and_public_unless_private_endpoints_are_allowed,
    event_types_description_and_unknown_fields_are_refused_by_field,
    a_patch_changes_what_it_names_and_a_status_change_records_why,
    delete_answers_204_and_takes_the_deliveries_and_attempts_with_it,
    rotation_answers_a_new_secret_and_keeps_the_previous_one_for_a_day,
    a_replay_queues_one_event_or_the_events_of_a_range_the_filter_takes,
    attempts_are_listed_newest_first_and_paginated,
    the_feed_lists_events_after_a_sequence_with_their_data_as_stored,
    every_route_asks_for_its_scope,
    another_accounts_endpoint_is_not_found_on_every_route,
    a_test_event_refuses_a_missing_or_unknown_type,
    a_recorded_change_is_in_the_feed_and_queued_for_the_endpoints_that_take_it,
    a_test_event_answers_202_with_its_attempt_and_stays_out_of_the_feed,
);

//! Integration tests: submissions (volunteer, vendor and partner applications).
use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::catalogue::{create_campaign, create_campaign_as};
use crate::support::client::{assert_error, assert_invalid, send, send_default, with, StatusCode};
use crate::support::server::{key_with, spawn, Backend, TestApp};

const SUBMISSIONS: &str = "/api/white-label/v1/submissions";

fn body(kind: &str, name: &str) -> Value {
    json!({"type": kind, "name": name, "email": "ama@example.com"})
}

async fn create(app: &TestApp, b: Value) -> Value {
    let (s, r) = app.signed(Method::POST, SUBMISSIONS, Some(b)).await;
    assert_eq!(s, 201, "submission create: {r}");
    r["data"].clone()
}

async fn list(app: &TestApp, query: &str) -> Value {
    let (s, b) = app.signed(Method::GET, &format!("{SUBMISSIONS}{query}"), None).await;
    assert_eq!(s, 200, "list {query}: {b}");
    b
}

/// The names of a list's items, in the order served.
fn names_in_order(list: &Value) -> Vec<String> {
    list["data"].as_array().expect("data").iter().map(|i| i["name"].as_str().expect("name").to_string()).collect()
}

async fn a_submission_is_received_with_its_phone_normalized(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "approved").await;
    let (s, r) = app
        .signed(
            Method::POST,
            SUBMISSIONS,
            Some(json!({
                "type": "volunteer", "campaignId": c, "name": "Ama Mensah", "email": "Ama@Example.COM",
                "phone": "0241234567", "message": "I can help at the gate.", "fields": {"shirt": "M", "days": [1, 2]},
            })),
        )
        .await;
    assert_eq!(s, 201, "{r}");
    assert!(r["requestId"].is_string());
    let d = &r["data"];
    assert!(uuid::Uuid::try_parse(d["id"].as_str().expect("id")).is_ok(), "{d}");
    assert_eq!(d["type"], "volunteer");
    assert_eq!(d["status"], "received");
    assert_eq!(d["name"], "Ama Mensah");
    assert_eq!(d["email"], "Ama@example.com");
    assert_eq!(d["phone"], "+233241234567");
    assert_eq!(d["campaignId"], c.as_str());
    assert_eq!(d["message"], "I can help at the gate.");
    assert_eq!(d["fields"], json!({"shirt": "M", "days": [1, 2]}));

    let minimal = create(&app, body("partner", "Kofi")).await;
    assert_eq!(minimal["type"], "partner");
    assert_eq!(minimal["status"], "received");
    assert_eq!(minimal["phone"], Value::Null);
    assert_eq!(minimal["campaignId"], Value::Null);
    assert_eq!(minimal["fields"], json!({}));
    let e164 = create(&app, with(&body("vendor", "Esi"), "phone", json!("+233 24 123 4567"))).await;
    assert_eq!(e164["phone"], "+233241234567");
}

async fn each_broken_submission_rule_is_a_400_naming_its_field(b: Backend) {
    let app = spawn(b).await;
    let base = body("volunteer", "Ama");
    let cases: Vec<(&str, Value, &str)> = vec![
        ("type", Value::Null, "type"),
        ("type", json!("sponsor"), "type"),
        ("name", Value::Null, "name"),
        ("name", json!("   "), "name"),
        ("email", Value::Null, "email"),
        ("email", json!("nope"), "email"),
        ("phone", json!("12"), "phone"),
        ("message", json!("m".repeat(5001)), "message"),
        ("fields", json!([1, 2]), "fields"),
        ("fields", json!("answers"), "fields"),
        ("website", json!("https://example.com"), "website"),
        ("status", json!("accepted"), "status"),
    ];
    for (key, value, field) in cases {
        eprintln!("{key}");
        let r = send_default(&app, Method::POST, SUBMISSIONS, Some(with(&base, key, value))).await;
        assert_invalid(&r, &[field]);
    }
    // 5000 characters is still fine, and nothing refused was stored.
    create(&app, with(&base, "message", json!("m".repeat(5000)))).await;
    assert_eq!(list(&app, "").await["pagination"]["total"], 1);
}

async fn a_submission_for_another_accounts_campaign_is_404(b: Backend) {
    let app = spawn(b).await;
    let other = app.new_account("other").await;
    let theirs = create_campaign_as(&app, &other.private, "ticketing", "approved").await;
    for id in [theirs.as_str(), "not-a-uuid"] {
        let r =
            send_default(&app, Method::POST, SUBMISSIONS, Some(with(&body("vendor", "A"), "campaignId", json!(id))))
                .await;
        assert_error(&r, 404, "not_found");
    }
    assert_eq!(list(&app, "").await["pagination"]["total"], 0);
    let (_, theirs_list) = app.signed_as(&other.private, Method::GET, SUBMISSIONS, None).await;
    assert_eq!(theirs_list["pagination"]["total"], 0, "{theirs_list}");
}

async fn submission_routes_need_submissions_write(b: Backend) {
    let app = spawn(b).await;
    let key = key_with(&app, "private", None, "campaigns:read,campaigns:write,settings:read").await;
    let r = send(&app, &key, Method::POST, SUBMISSIONS, Some(body("volunteer", "A"))).await;
    assert_error(&r, 403, "insufficient_scope");
    let r = send(&app, &key, Method::GET, SUBMISSIONS, None).await;
    assert_error(&r, 403, "insufficient_scope");
    assert_eq!(list(&app, "").await["pagination"]["total"], 0);
}

async fn submissions_are_listed_newest_first_with_pagination_and_a_type_filter(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "donation", "approved").await;
    create(&app, body("volunteer", "First")).await;
    create(&app, body("vendor", "Second")).await;
    create(&app, with(&body("volunteer", "Third"), "campaignId", json!(c))).await;
    create(&app, body("partner", "Fourth")).await;
    let other = app.new_account("other").await;
    let _: Value =
        app.api_as(&other.private).post(SUBMISSIONS, &body("volunteer", "Theirs"), StatusCode::CREATED).await;

    let all = list(&app, "").await;
    assert_eq!(names_in_order(&all), ["Fourth", "Third", "Second", "First"]);
    assert_eq!(all["pagination"], json!({"page": 1, "limit": 20, "total": 4, "hasMore": false}));

    let volunteers = list(&app, "?type=volunteer").await;
    assert_eq!(names_in_order(&volunteers), ["Third", "First"]);
    assert_eq!(volunteers["pagination"]["total"], 2);
    let by_campaign = list(&app, &format!("?campaignId={c}")).await;
    assert_eq!(names_in_order(&by_campaign), ["Third"]);

    let p1 = list(&app, "?limit=3").await;
    assert_eq!(names_in_order(&p1), ["Fourth", "Third", "Second"]);
    assert_eq!(p1["pagination"], json!({"page": 1, "limit": 3, "total": 4, "hasMore": true}));
    let p2 = list(&app, "?limit=3&page=2").await;
    assert_eq!(names_in_order(&p2), ["First"]);
    assert_eq!(p2["pagination"], json!({"page": 2, "limit": 3, "total": 4, "hasMore": false}));

    // The other account sees only its own.
    let (_, theirs) = app.signed_as(&other.private, Method::GET, SUBMISSIONS, None).await;
    assert_eq!(names_in_order(&theirs), ["Theirs"]);

    let r = send_default(&app, Method::GET, &format!("{SUBMISSIONS}?type=sponsor"), None).await;
    assert_invalid(&r, &["type"]);
    let theirs_campaign = create_campaign_as(&app, &other.private, "donation", "approved").await;
    let r = send_default(&app, Method::GET, &format!("{SUBMISSIONS}?campaignId={theirs_campaign}"), None).await;
    assert_error(&r, 404, "not_found");
}

on_both!(
    a_submission_is_received_with_its_phone_normalized,
    each_broken_submission_rule_is_a_400_naming_its_field,
    a_submission_for_another_accounts_campaign_is_404,
    submission_routes_need_submissions_write,
    submissions_are_listed_newest_first_with_pagination_and_a_type_filter,
);

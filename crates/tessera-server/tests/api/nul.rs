//! Integration tests: text means the same on both databases. U+0000 (which PostgreSQL cannot
//! store in text and SQLite cuts strings at) is refused with 400 `validation_failed` naming the
//! field, in every text field, query value and free-form object, before anything is stored;
//! and an unreadable (non-UTF-8) `x-white-label-domain` is a 403 (D2.7), never ignored.
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::catalogue::{campaign_body, create_campaign};
use crate::support::client::{assert_error, assert_invalid, raw, send_default, with, StatusCode};
use crate::support::server::{spawn, Backend, TestApp};

const V1: &str = "/api/white-label/v1";

/// The number of campaigns the default account has.
async fn campaign_count(app: &TestApp) -> u64 {
    let b: Value = app.api().get(&format!("{V1}/campaigns"), StatusCode::OK).await;
    b["pagination"]["total"].as_u64().expect("total")
}

async fn a_nul_in_a_campaign_title_or_description_is_refused_and_nothing_is_stored(b: Backend) {
    let app = spawn(b).await;
    let base = campaign_body("donation", "draft");
    let r = send_default(
        &app,
        Method::POST,
        &format!("{V1}/campaigns"),
        Some(with(&base, "title", json!("Jazz\u{0}Night"))),
    )
    .await;
    assert_invalid(&r, &["title"]);
    let both = with(&with(&base, "title", json!("\u{0}abc")), "description", json!("ten chars \u{0} and more"));
    let r = send_default(&app, Method::POST, &format!("{V1}/campaigns"), Some(both)).await;
    let body = assert_invalid(&r, &["title", "description"]);
    assert!(body["details"][0]["message"].as_str().is_some_and(|m| m.contains("U+0000")), "{body}");
    assert_eq!(campaign_count(&app).await, 0, "nothing stored");
}

async fn a_nul_in_a_campaign_update_is_refused_and_the_campaign_is_unchanged(b: Backend) {
    let app = spawn(b).await;
    let id = create_campaign(&app, "donation", "draft").await;
    let path = format!("{V1}/campaigns/{id}");
    let r = send_default(&app, Method::PATCH, &path, Some(json!({"title": "New\u{0}title"}))).await;
    assert_invalid(&r, &["title"]);
    let shown: Value = app.api().get(&path, StatusCode::OK).await;
    assert!(shown["data"]["title"].as_str().is_some_and(|t| t.starts_with("Test donation campaign")), "{shown}");
}

async fn a_nul_anywhere_in_metadata_is_refused_naming_its_path(b: Backend) {
    let app = spawn(b).await;
    let base = campaign_body("donation", "draft");
    let cases = [
        (json!({"note": "a\u{0}b"}), "metadata.note"),
        (json!({"outer": {"inner": ["ok", "bad\u{0}"]}}), "metadata.outer.inner[1]"),
        (json!({"ke\u{0}y": 1}), "metadata.ke\\u0000y"),
    ];
    for (metadata, field) in cases {
        let r =
            send_default(&app, Method::POST, &format!("{V1}/campaigns"), Some(with(&base, "metadata", metadata))).await;
        assert_invalid(&r, &[field]);
    }
    assert_eq!(campaign_count(&app).await, 0, "nothing stored");
}

async fn a_nul_in_a_participant_name_is_refused(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "voting", "draft").await;
    let r = send_default(
        &app,
        Method::POST,
        &format!("{V1}/participants"),
        Some(json!({"campaignId": c, "name": "Ama\u{0}"})),
    )
    .await;
    assert_invalid(&r, &["name"]);
    let list: Value = app.api().get(&format!("{V1}/participants?campaignId={c}"), StatusCode::OK).await;
    assert_eq!(list["pagination"]["total"], 0, "{list}");
}

async fn a_nul_in_a_submission_message_or_its_fields_is_refused(b: Backend) {
    let app = spawn(b).await;
    let base = json!({"type": "volunteer", "name": "Kofi", "email": "kofi@example.com"});
    let r =
        send_default(&app, Method::POST, &format!("{V1}/submissions"), Some(with(&base, "message", json!("hi\u{0}"))))
            .await;
    assert_invalid(&r, &["message"]);
    let r = send_default(
        &app,
        Method::POST,
        &format!("{V1}/submissions"),
        Some(with(&base, "fields", json!({"size": "\u{0}"}))),
    )
    .await;
    assert_invalid(&r, &["fields.size"]);
    let list: Value = app.api().get(&format!("{V1}/submissions"), StatusCode::OK).await;
    assert_eq!(list["pagination"]["total"], 0, "{list}");
}

async fn a_nul_in_a_bootstrap_item_or_a_settings_config_is_refused_naming_its_path(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "draft").await;
    let items = json!([{"name": "Regular", "price": 1, "quantity_available": 5}, {"name": "V\u{0}IP", "price": 2, "quantity_available": 5}]);
    let r = send_default(
        &app,
        Method::POST,
        &format!("{V1}/ticket-types/bootstrap"),
        Some(json!({"campaignId": c, "ticketTypes": items})),
    )
    .await;
    assert_invalid(&r, &["ticketTypes[1].name"]);
    let r = send_default(
        &app,
        Method::POST,
        &format!("{V1}/ticket-types"),
        Some(json!({"campaignId": c, "name": "A\u{0}", "price": 1, "quantity_available": 1})),
    )
    .await;
    assert_invalid(&r, &["name"]);
    let r = send_default(
        &app,
        Method::PATCH,
        &format!("{V1}/settings/branding"),
        Some(json!({"config": {"platformName": "Acme\u{0}"}})),
    )
    .await;
    assert_invalid(&r, &["config.platformName"]);
    let settings: Value = app.api().get(&format!("{V1}/settings?categories=branding"), StatusCode::OK).await;
    assert_eq!(settings["data"]["branding"], json!({}), "nothing stored: {settings}");
}

async fn a_nul_in_a_query_value_is_refused_naming_the_parameter(b: Backend) {
    let app = spawn(b).await;
    for (path, field) in [
        ("/campaigns?search=a%00b", "search"),
        ("/campaigns?status=draft%00", "status"),
        ("/participants?search=%00", "search"),
        ("/submissions?type=vendor%00", "type"),
        ("/settings?categories=payments%00", "categories"),
    ] {
        let r = send_default(&app, Method::GET, &format!("{V1}{path}"), None).await;
        assert_invalid(&r, &[field]);
    }
    // The domain-key forms too.
    for (path, field) in [("/campaigns?search=a%00b", "search"), ("/ticket-types?campaignId=%00", "campaignId")] {
        let r = app.public_get(&format!("{V1}{path}"), &app.account.public, &app.account.domain).await;
        assert_invalid(&r, &[field]);
    }
}

async fn a_search_without_nul_still_finds_by_title_on_both_databases(b: Backend) {
    let app = spawn(b).await;
    let id = create_campaign(&app, "donation", "draft").await;
    let list: Value = app.api().get(&format!("{V1}/campaigns?search=donation%20campaign"), StatusCode::OK).await;
    assert_eq!(list["data"][0]["id"], id.as_str(), "{list}");
}

fn non_utf8_domain() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("x-white-label-domain", HeaderValue::from_bytes(b"acme\xff.example.com").expect("opaque header bytes"));
    h
}

async fn a_non_utf8_domain_header_on_a_signed_route_is_refused_with_403(b: Backend) {
    let app = spawn(b).await;
    let r = app
        .client()
        .send_raw(Method::GET, &format!("{V1}/context"), Vec::new(), Some(non_utf8_domain()))
        .await
        .expect("send");
    assert_error(&r, 403, "domain_not_allowed");
    // The approved domain itself is still fine.
    let mut ok = HeaderMap::new();
    ok.insert("x-white-label-domain", HeaderValue::from_str(&app.account.domain).expect("domain"));
    let r = app.client().send_raw(Method::GET, &format!("{V1}/context"), Vec::new(), Some(ok)).await.expect("send");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

async fn a_non_utf8_domain_or_origin_on_a_domain_key_route_is_refused_with_403(b: Backend) {
    let app = spawn(b).await;
    let r = app
        .http
        .get(app.url(&format!("{V1}/config")))
        .headers(non_utf8_domain())
        .header("x-white-label-key", app.account.public.header())
        .send()
        .await
        .expect("send");
    assert_error(&raw(r).await, 403, "domain_not_allowed");
    let r = app
        .http
        .get(app.url(&format!("{V1}/config")))
        .header("x-white-label-domain", &app.account.domain)
        .header("x-white-label-key", app.account.public.header())
        .header("origin", HeaderValue::from_bytes(b"https://acme\xff.example.com").expect("opaque header bytes"))
        .send()
        .await
        .expect("send");
    assert_error(&raw(r).await, 403, "domain_not_allowed");
}

on_both!(
    a_nul_in_a_campaign_title_or_description_is_refused_and_nothing_is_stored,
    a_nul_in_a_campaign_update_is_refused_and_the_campaign_is_unchanged,
    a_nul_anywhere_in_metadata_is_refused_naming_its_path,
    a_nul_in_a_participant_name_is_refused,
    a_nul_in_a_submission_message_or_its_fields_is_refused,
    a_nul_in_a_bootstrap_item_or_a_settings_config_is_refused_naming_its_path,
    a_nul_in_a_query_value_is_refused_naming_the_parameter,
    a_search_without_nul_still_finds_by_title_on_both_databases,
    a_non_utf8_domain_header_on_a_signed_route_is_refused_with_403,
    a_non_utf8_domain_or_origin_on_a_domain_key_route_is_refused_with_403,
);

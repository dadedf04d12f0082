//! Integration tests: the storefront (Domain-key; campaigns:read and tickets:read): approved
//! campaigns with their active ticket types, the key's campaign scope, domain checks and CORS.
use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::support::catalogue::{create_campaign, create_campaign_as, create_ticket_type, ticket_type_body};
use crate::support::client::{assert_error, names, raw, strings, with, StatusCode};
use crate::support::server::{key_with, spawn, Backend, TestApp};

const STOREFRONT: &str = "/api/white-label/v1/storefront";

struct Shop {
    approved: String,
    second: String,
}

/// An approved ticketing campaign with an active (quantity 120), an inactive and an archived
/// type; a second approved (donation) campaign; a draft and an archived ticketing campaign,
/// each with an active type.
async fn shop(app: &TestApp) -> Shop {
    let approved = create_campaign(app, "ticketing", "approved").await;
    create_ticket_type(app, with(&ticket_type_body(&approved, "Regular"), "quantity_available", json!(120))).await;
    create_ticket_type(app, with(&ticket_type_body(&approved, "Hidden"), "status", json!("inactive"))).await;
    create_ticket_type(app, with(&ticket_type_body(&approved, "Gone"), "status", json!("archived"))).await;
    let second = create_campaign(app, "donation", "approved").await;
    let draft = create_campaign(app, "ticketing", "draft").await;
    create_ticket_type(app, ticket_type_body(&draft, "Draft type")).await;
    // Archive a campaign that had a type while it was approved.
    let archived = create_campaign(app, "ticketing", "approved").await;
    create_ticket_type(app, ticket_type_body(&archived, "Archived type")).await;
    let _: Value = app
        .api()
        .patch(&format!("/api/white-label/v1/campaigns/{archived}"), &json!({"status": "archived"}), StatusCode::OK)
        .await;
    Shop { approved, second }
}

fn campaign<'a>(body: &'a Value, id: &str) -> &'a Value {
    body["data"]["campaigns"].as_array().expect("campaigns").iter().find(|c| c["id"] == id).expect("campaign listed")
}

fn campaign_ids(body: &Value) -> BTreeSet<String> {
    body["data"]["campaigns"]
        .as_array()
        .expect("campaigns")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_string())
        .collect()
}

async fn the_storefront_shows_approved_campaigns_with_their_active_ticket_types(b: Backend) {
    let app = spawn(b).await;
    let s = shop(&app).await;
    let r = app.public_get(STOREFRONT, &app.account.public, &app.account.domain).await;
    let body = r.json();
    assert_eq!(r.status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert!(body["requestId"].is_string());
    assert_eq!(body["data"]["domain"], app.account.domain.as_str());
    assert_eq!(campaign_ids(&body), BTreeSet::from([s.approved.clone(), s.second.clone()]), "{body}");

    let shown = campaign(&body, &s.approved);
    assert_eq!(shown["status"], "approved");
    assert_eq!(shown["campaign_type"], "ticketing");
    assert!(shown.get("metadata").is_none(), "metadata is for signed callers only: {shown}");
    assert_eq!(names(&shown["ticketTypes"]), strings(&["Regular"]));
    let t = &shown["ticketTypes"][0];
    assert_eq!(t["quantity_available"], 120);
    assert_eq!(t["remaining"], 120);
    assert_eq!(t["price"], json!(450.5));
    assert_eq!(t["status"], "active");
    assert_eq!(campaign(&body, &s.second)["ticketTypes"], json!([]));
}

async fn a_campaign_key_sees_only_its_campaign_in_the_storefront(b: Backend) {
    let app = spawn(b).await;
    let s = shop(&app).await;
    let key = key_with(&app, "campaign", Some(&s.approved), "campaigns:read,tickets:read").await;
    let r = app.public_get(STOREFRONT, &key, &app.account.domain).await;
    let body = r.json();
    assert_eq!(r.status, 200, "{body}");
    assert_eq!(campaign_ids(&body), BTreeSet::from([s.approved.clone()]));
    assert_eq!(names(&campaign(&body, &s.approved)["ticketTypes"]), strings(&["Regular"]));
    // A campaign key of a draft campaign sees nothing.
    let draft = create_campaign(&app, "ticketing", "draft").await;
    create_ticket_type(&app, ticket_type_body(&draft, "Soon")).await;
    let key = key_with(&app, "campaign", Some(&draft), "campaigns:read,tickets:read").await;
    let r = app.public_get(STOREFRONT, &key, &app.account.domain).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["data"]["campaigns"], json!([]));
}

async fn the_storefront_needs_campaigns_read_and_tickets_read(b: Backend) {
    let app = spawn(b).await;
    shop(&app).await;
    for (scopes, missing) in [("campaigns:read,settings:read", "tickets:read"), ("tickets:read", "campaigns:read")] {
        let key = key_with(&app, "public", None, scopes).await;
        let r = app.public_get(STOREFRONT, &key, &app.account.domain).await;
        let body = assert_error(&r, 403, "insufficient_scope");
        assert_eq!(body["details"], json!([{"field": "scope", "message": format!("requires {missing}")}]), "{body}");
    }
}

async fn the_storefront_refuses_a_domain_that_is_not_approved_for_the_key(b: Backend) {
    let app = spawn(b).await;
    shop(&app).await;
    let r = app.public_get(STOREFRONT, &app.account.public, "unknown-shop.example.org").await;
    assert_error(&r, 403, "domain_not_allowed");
    // Registered but not verified.
    let pending = format!("pending-{}", app.account.domain);
    tessera_server::cli::admin::domain_add(&app.store, &app.account.slug, &pending, false, false)
        .await
        .expect("domain");
    app.refresh().await;
    let r = app.public_get(STOREFRONT, &app.account.public, &pending).await;
    assert_error(&r, 403, "domain_not_allowed");
    // Another account's key with this account's domain, and this account's key with theirs.
    let other = app.new_account("other").await;
    create_campaign_as(&app, &other.private, "ticketing", "approved").await;
    let r = app.public_get(STOREFRONT, &other.public, &app.account.domain).await;
    assert_error(&r, 403, "domain_not_allowed");
    let r = app.public_get(STOREFRONT, &app.account.public, &other.domain).await;
    assert_error(&r, 403, "domain_not_allowed");
    // Each key on its own domain sees only its own campaigns.
    let mine = app.public_get(STOREFRONT, &app.account.public, &app.account.domain).await.json();
    let theirs = app.public_get(STOREFRONT, &other.public, &other.domain).await.json();
    assert_eq!(campaign_ids(&mine).len(), 2, "{mine}");
    assert_eq!(campaign_ids(&theirs).len(), 1, "{theirs}");
    assert!(campaign_ids(&mine).is_disjoint(&campaign_ids(&theirs)));
}

async fn a_cors_preflight_from_an_approved_origin_is_answered_204(b: Backend) {
    let app = spawn(b).await;
    let origin = format!("https://{}", app.account.domain);
    let preflight = |origin: String| {
        app.http
            .request(reqwest::Method::OPTIONS, app.url(STOREFRONT))
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "x-white-label-domain, x-white-label-key")
            .send()
    };
    let r = raw(preflight(origin.clone()).await.expect("send")).await;
    assert_eq!(r.status, 204);
    let header = |name: &str| r.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    assert_eq!(header("access-control-allow-origin"), origin);
    assert!(header("access-control-allow-methods").contains("GET"), "{:?}", r.headers);
    let allowed = header("access-control-allow-headers");
    assert!(allowed.contains("x-white-label-domain") && allowed.contains("x-white-label-key"), "{allowed}");

    let r = raw(preflight("https://evil.example.net".into()).await.expect("send")).await;
    assert_error(&r, 403, "domain_not_allowed");
    assert!(r.headers.get("access-control-allow-origin").is_none());
}

async fn with_ticketing_off_the_storefront_lists_no_ticket_types(b: Backend) {
    let app = spawn(b).await;
    let s = shop(&app).await;
    let off = json!({"config": {"modules": {"ticketing": false}}});
    let _: Value = app.api().patch("/api/white-label/v1/settings/operations", &off, StatusCode::OK).await;
    // The ticket-type routes answer 403 module_disabled (D17.44); the storefront does not serve
    // what they would, and still lists the campaigns.
    let r = app.public_get(STOREFRONT, &app.account.public, &app.account.domain).await;
    let body = r.json();
    assert_eq!(r.status, 200, "{body}");
    assert_eq!(campaign_ids(&body), BTreeSet::from([s.approved.clone(), s.second.clone()]), "{body}");
    assert_eq!(campaign(&body, &s.approved)["ticketTypes"], json!([]), "{body}");
    let on = json!({"config": {"modules": {"ticketing": true}}});
    let _: Value = app.api().patch("/api/white-label/v1/settings/operations", &on, StatusCode::OK).await;
    let r = app.public_get(STOREFRONT, &app.account.public, &app.account.domain).await;
    assert_eq!(names(&campaign(&r.json(), &s.approved)["ticketTypes"]), strings(&["Regular"]));
}

on_both!(
    with_ticketing_off_the_storefront_lists_no_ticket_types,
    the_storefront_shows_approved_campaigns_with_their_active_ticket_types,
    a_campaign_key_sees_only_its_campaign_in_the_storefront,
    the_storefront_needs_campaigns_read_and_tickets_read,
    the_storefront_refuses_a_domain_that_is_not_approved_for_the_key,
    a_cors_preflight_from_an_approved_origin_is_answered_204,
);

//! Integration tests: ticket types (spec "Ticket type", D3.5–D3.6), their bootstrap and the public
//! list. Also the catalogue helpers the participants, settings, storefront and submissions tests
//! share (`create_campaign`, `send`, `assert_invalid`, …).
use std::collections::BTreeSet;

use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::catalogue::{
    create_campaign, create_campaign_as, create_ticket_type, ticket_type_body, BOOTSTRAP, CAMPAIGNS, TICKET_TYPES,
};
use crate::support::client::{assert_error, assert_invalid, names, send, send_default, strings, with, StatusCode};
use crate::support::server::{audit_actions, key_with, spawn, Backend, TestApp, TestKey};

async fn public_list(app: &TestApp, path: &str, key: &TestKey) -> Value {
    let r = app.public_get(path, key, &app.account.domain).await;
    let body = r.json();
    assert_eq!(r.status, 200, "{path}: {body}");
    body
}

// ---------------------------------------------------------------------------------------------
// POST /ticket-types

async fn a_ticket_type_is_created_with_its_full_shape_and_defaults(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "draft").await;
    let (status, body) = app.signed(Method::POST, TICKET_TYPES, Some(ticket_type_body(&c, "Regular"))).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["success"], true);
    assert!(body["requestId"].is_string(), "{body}");
    let t = &body["data"];
    assert!(uuid::Uuid::try_parse(t["id"].as_str().expect("id")).is_ok(), "{t}");
    assert_eq!(t["campaignId"], c.as_str());
    assert_eq!(t["name"], "Regular");
    assert_eq!(t["ticket_type"], "paid");
    assert_eq!(t["price"], json!(450.5));
    assert_eq!(t["quantity_available"], 200);
    assert_eq!(t["remaining"], 200);
    assert_eq!(t["is_free"], false);
    assert_eq!(t["max_per_person"], 10);
    assert_eq!(t["status"], "active");
    assert_eq!(t["required_attendee_fields"], json!([]));

    // A free type with every optional field given.
    let free = json!({
        "campaignId": c, "name": "Student pass", "description": "For students", "ticket_type": "student",
        "price": 0, "is_free": true, "quantity_available": 0, "max_per_person": 100, "status": "inactive",
        "required_attendee_fields": [
            {"key": "full_name", "label": "Full name", "type": "text", "required": true},
            {"key": "size", "label": "T-shirt size", "type": "select", "options": ["S", "M"]},
        ],
    });
    let t = create_ticket_type(&app, free).await;
    assert_eq!(t["price"], json!(0));
    assert_eq!(t["is_free"], true);
    assert_eq!(t["ticket_type"], "student");
    assert_eq!(t["quantity_available"], 0);
    assert_eq!(t["remaining"], 0);
    assert_eq!(t["max_per_person"], 100);
    assert_eq!(t["status"], "inactive");
    assert_eq!(t["description"], "For students");
    assert_eq!(
        t["required_attendee_fields"],
        json!([
            {"key": "full_name", "label": "Full name", "type": "text", "required": true},
            {"key": "size", "label": "T-shirt size", "type": "select", "required": false, "options": ["S", "M"]},
        ])
    );
}

async fn each_broken_ticket_type_field_rule_is_a_400_naming_that_field(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "approved").await;
    let base = ticket_type_body(&c, "Regular");
    let cases: Vec<(&str, Value, &str)> = vec![
        ("campaignId", Value::Null, "campaignId"),
        ("name", Value::Null, "name"),
        ("name", json!("n".repeat(256)), "name"),
        ("price", Value::Null, "price"),
        ("price", json!(-1), "price"),
        ("price", json!(12.345), "price"),
        ("price", json!("12"), "price"),
        ("quantity_available", Value::Null, "quantity_available"),
        ("quantity_available", json!(-1), "quantity_available"),
        ("quantity_available", json!(1_000_001), "quantity_available"),
        ("max_per_person", json!(0), "max_per_person"),
        ("max_per_person", json!(101), "max_per_person"),
        ("ticket_type", json!("platinum"), "ticket_type"),
        ("status", json!("sold_out"), "status"),
        ("is_free", json!(true), "is_free"),
        ("colour", json!("red"), "colour"),
    ];
    for (key, value, field) in cases {
        let r = send_default(&app, Method::POST, TICKET_TYPES, Some(with(&base, key, value.clone()))).await;
        eprintln!("{key} = {value}");
        assert_invalid(&r, &[field]);
    }
    // is_free must agree with the price, both ways.
    for (price, is_free) in [(json!(5), true), (json!(0), false)] {
        let body = with(&with(&base, "price", price), "is_free", json!(is_free));
        let r = send_default(&app, Method::POST, TICKET_TYPES, Some(body)).await;
        assert_invalid(&r, &["is_free"]);
    }
    // The bounds themselves are accepted.
    let edge = json!({"campaignId": c, "name": "n".repeat(255), "price": 0.01, "quantity_available": 1_000_000, "max_per_person": 1});
    let t = create_ticket_type(&app, edge).await;
    assert_eq!(t["price"], json!(0.01));
    assert_eq!(t["quantity_available"], 1_000_000);
    // Nothing invalid was stored: only the edge type exists.
    let listed = public_list(&app, &format!("{TICKET_TYPES}?campaignId={c}"), &app.account.public).await;
    assert_eq!(listed["pagination"]["total"], 1, "{listed}");
    assert_eq!(listed["data"][0]["id"], t["id"]);
}

async fn each_broken_attendee_field_rule_is_a_400_naming_the_item_field(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "draft").await;
    let base = ticket_type_body(&c, "Regular");
    let ok = |key: &str| json!({"key": key, "label": "Label", "type": "text", "required": true});
    let cases: Vec<(Value, &str)> = vec![
        (json!({"key": "a"}), "required_attendee_fields"),
        (json!("full_name"), "required_attendee_fields"),
        (json!([ok("email"), ok("email")]), "required_attendee_fields[1].key"),
        (json!([{"key": "Bad Key", "label": "L", "type": "text"}]), "required_attendee_fields[0].key"),
        (json!([{"key": "fav", "label": "L", "type": "colour"}]), "required_attendee_fields[0].type"),
        (json!([ok("a"), {"key": "size", "label": "Size", "type": "select"}]), "required_attendee_fields[1].options"),
        (
            json!([{"key": "size", "label": "Size", "type": "select", "options": []}]),
            "required_attendee_fields[0].options",
        ),
        (json!([{"key": "name", "type": "text"}]), "required_attendee_fields[0].label"),
        (json!([{"key": "name", "label": "Name", "type": "text", "hint": "x"}]), "required_attendee_fields[0].hint"),
        (
            json!([{"key": "name", "label": "Name", "type": "text", "required": "yes"}]),
            "required_attendee_fields[0].required",
        ),
    ];
    for (fields, field) in cases {
        eprintln!("required_attendee_fields = {fields}");
        let r =
            send_default(&app, Method::POST, TICKET_TYPES, Some(with(&base, "required_attendee_fields", fields))).await;
        assert_invalid(&r, &[field]);
    }
}

async fn a_400_names_every_broken_field_at_once(b: Backend) {
    let app = spawn(b).await;
    let r = send_default(
        &app,
        Method::POST,
        TICKET_TYPES,
        Some(json!({"price": -3, "quantity_available": 2_000_000, "ticket_type": "x"})),
    )
    .await;
    assert_invalid(&r, &["campaignId", "name", "price", "quantity_available", "ticket_type"]);
}

async fn a_ticket_type_for_a_campaign_of_another_account_or_a_non_uuid_id_is_404(b: Backend) {
    let app = spawn(b).await;
    let other = app.new_account("other").await;
    let theirs = create_campaign_as(&app, &other.private, "ticketing", "approved").await;
    let r = send_default(&app, Method::POST, TICKET_TYPES, Some(ticket_type_body(&theirs, "Stolen"))).await;
    assert_error(&r, 404, "not_found");
    let r = send_default(&app, Method::POST, TICKET_TYPES, Some(ticket_type_body("not-a-uuid", "X"))).await;
    assert_error(&r, 404, "not_found");
    let r =
        send_default(&app, Method::POST, TICKET_TYPES, Some(ticket_type_body(&uuid::Uuid::now_v7().to_string(), "X")))
            .await;
    assert_error(&r, 404, "not_found");
    // The other account's campaign got nothing.
    let r = app.public_get(&format!("{TICKET_TYPES}?campaignId={theirs}"), &other.public, &other.domain).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["pagination"]["total"], 0, "{}", r.json());
}

async fn ticket_types_on_a_voting_or_archived_campaign_are_a_409_conflict(b: Backend) {
    let app = spawn(b).await;
    for (kind, status) in [("voting", "approved"), ("donation", "draft"), ("ticketing", "archived")] {
        let c = create_campaign(&app, kind, status).await;
        let r = send_default(&app, Method::POST, TICKET_TYPES, Some(ticket_type_body(&c, "Regular"))).await;
        assert_error(&r, 409, "conflict");
        let r = send_default(
            &app,
            Method::POST,
            BOOTSTRAP,
            Some(json!({"campaignId": c, "ticketTypes": [{"name": "A", "price": 1, "quantity_available": 1}]})),
        )
        .await;
        assert_error(&r, 409, "conflict");
    }
}

async fn creating_ticket_types_without_tickets_write_is_403(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "draft").await;
    let key = key_with(&app, "private", None, "campaigns:read,campaigns:write,tickets:read").await;
    let r = send(&app, &key, Method::POST, TICKET_TYPES, Some(ticket_type_body(&c, "Regular"))).await;
    assert_error(&r, 403, "insufficient_scope");
    let r = send(
        &app,
        &key,
        Method::POST,
        BOOTSTRAP,
        Some(json!({"campaignId": c, "ticketTypes": [{"name": "A", "price": 1, "quantity_available": 1}]})),
    )
    .await;
    assert_error(&r, 403, "insufficient_scope");
}

// ---------------------------------------------------------------------------------------------
// POST /ticket-types/bootstrap

fn item(name: &str, price: Value) -> Value {
    json!({"name": name, "price": price, "quantity_available": 50})
}

async fn a_bootstrap_creates_every_ticket_type_of_an_empty_campaign(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "approved").await;
    let body = json!({"campaignId": c, "ticketTypes": [
        item("Early bird", json!(100)),
        {"name": "VIP", "price": 999.99, "quantity_available": 10, "ticket_type": "vip", "max_per_person": 2},
        {"name": "Free", "price": 0, "quantity_available": 5, "is_free": true},
    ]});
    let r: Value = app.api().post(BOOTSTRAP, &body, StatusCode::CREATED).await;
    assert_eq!(r["data"]["campaignId"], c.as_str());
    let types = r["data"]["ticketTypes"].as_array().expect("ticketTypes");
    assert_eq!(types.len(), 3, "{r}");
    assert_eq!(types[0]["name"], "Early bird");
    assert_eq!(types[0]["price"], json!(100));
    assert_eq!(types[1]["name"], "VIP");
    assert_eq!(types[1]["price"], json!(999.99));
    assert_eq!(types[1]["ticket_type"], "vip");
    assert_eq!(types[1]["max_per_person"], 2);
    assert_eq!(types[2]["is_free"], true);
    for t in types {
        assert_eq!(t["campaignId"], c.as_str());
        assert_eq!(t["status"], "active");
        assert_eq!(t["remaining"], t["quantity_available"]);
    }
    let listed = public_list(&app, &format!("{TICKET_TYPES}?campaignId={c}"), &app.account.public).await;
    assert_eq!(names(&listed["data"]), strings(&["Early bird", "Free", "VIP"]));
    assert_eq!(listed["pagination"]["total"], 3);
}

async fn a_second_bootstrap_or_one_after_a_single_create_is_a_409(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "approved").await;
    let first = json!({"campaignId": c, "ticketTypes": [item("A", json!(1))]});
    let _: Value = app.api().post(BOOTSTRAP, &first, StatusCode::CREATED).await;
    let again = json!({"campaignId": c, "ticketTypes": [item("B", json!(1))]});
    let r = send_default(&app, Method::POST, BOOTSTRAP, Some(again.clone())).await;
    assert_error(&r, 409, "conflict");

    let d = create_campaign(&app, "ticketing", "approved").await;
    create_ticket_type(&app, ticket_type_body(&d, "Single")).await;
    let r = send_default(
        &app,
        Method::POST,
        BOOTSTRAP,
        Some(json!({"campaignId": d, "ticketTypes": [item("B", json!(1))]})),
    )
    .await;
    assert_error(&r, 409, "conflict");

    // Neither refused bootstrap created anything.
    let listed = public_list(&app, TICKET_TYPES, &app.account.public).await;
    assert_eq!(names(&listed["data"]), strings(&["A", "Single"]));
    // A single create after a bootstrap is still allowed.
    create_ticket_type(&app, ticket_type_body(&c, "Late addition")).await;
}

async fn an_invalid_bootstrap_item_is_a_400_naming_it_and_creates_nothing(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "draft").await;
    let body =
        json!({"campaignId": c, "ticketTypes": [item("A", json!(10)), item("B", json!(1.234)), item("C", json!(5))]});
    let r = send_default(&app, Method::POST, BOOTSTRAP, Some(body)).await;
    assert_invalid(&r, &["ticketTypes[1].price"]);

    // Approve the campaign so the public list would show anything that had been stored.
    for status in ["pending_approval", "approved"] {
        let _: Value = app.api().patch(&format!("{CAMPAIGNS}/{c}"), &json!({"status": status}), StatusCode::OK).await;
    }
    let listed = public_list(&app, &format!("{TICKET_TYPES}?campaignId={c}"), &app.account.public).await;
    assert_eq!(listed["data"], json!([]));
    assert_eq!(listed["pagination"]["total"], 0);
    // And the campaign still counts as empty: a valid bootstrap now succeeds.
    let _: Value = app
        .api()
        .post(BOOTSTRAP, &json!({"campaignId": c, "ticketTypes": [item("A", json!(10))]}), StatusCode::CREATED)
        .await;
}

async fn a_bootstrap_with_no_items_or_a_campaign_id_inside_an_item_is_a_400(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "draft").await;
    let r = send_default(&app, Method::POST, BOOTSTRAP, Some(json!({"campaignId": c, "ticketTypes": []}))).await;
    assert_invalid(&r, &["ticketTypes"]);
    let r = send_default(&app, Method::POST, BOOTSTRAP, Some(json!({"campaignId": c}))).await;
    assert_invalid(&r, &["ticketTypes"]);
    let r = send_default(&app, Method::POST, BOOTSTRAP, Some(json!({"ticketTypes": [item("A", json!(1))]}))).await;
    assert_invalid(&r, &["campaignId"]);
    let mut inner = item("A", json!(1));
    inner["campaignId"] = json!(c);
    let r = send_default(&app, Method::POST, BOOTSTRAP, Some(json!({"campaignId": c, "ticketTypes": [inner]}))).await;
    assert_invalid(&r, &["ticketTypes[0].campaignId"]);
    let r = send_default(
        &app,
        Method::POST,
        BOOTSTRAP,
        Some(json!({"campaignId": c, "ticketTypes": [item("A", json!(1))], "x": 1})),
    )
    .await;
    assert_invalid(&r, &["x"]);
    let too_many: Vec<Value> = (0..51).map(|i| item(&format!("T{i}"), json!(1))).collect();
    let r = send_default(&app, Method::POST, BOOTSTRAP, Some(json!({"campaignId": c, "ticketTypes": too_many}))).await;
    assert_invalid(&r, &["ticketTypes"]);
    // Another account's campaign, or a non-UUID id: 404.
    let other = app.new_account("other").await;
    let theirs = create_campaign_as(&app, &other.private, "ticketing", "draft").await;
    for id in [theirs.as_str(), "nope"] {
        let r = send_default(
            &app,
            Method::POST,
            BOOTSTRAP,
            Some(json!({"campaignId": id, "ticketTypes": [item("A", json!(1))]})),
        )
        .await;
        assert_error(&r, 404, "not_found");
    }
}

async fn concurrent_bootstraps_of_one_campaign_create_exactly_one_set(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "approved").await;
    let calls = (0..8).map(|i| {
        let body = json!({"campaignId": c, "ticketTypes": [item(&format!("Set {i} A"), json!(1)), item(&format!("Set {i} B"), json!(2))]});
        app.signed(Method::POST, BOOTSTRAP, Some(body))
    });
    let results = futures_util::future::join_all(calls).await;
    let statuses: Vec<u16> = results.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 7, "{statuses:?}");
    for (s, body) in &results {
        if *s == 409 {
            assert_eq!(body["code"], "conflict", "{body}");
        }
    }
    let (_, winner) = results.iter().find(|(s, _)| *s == 201).expect("one winner");
    let winner_names = names(&winner["data"]["ticketTypes"]);
    assert_eq!(winner_names.len(), 2);
    let listed = public_list(&app, &format!("{TICKET_TYPES}?campaignId={c}"), &app.account.public).await;
    assert_eq!(names(&listed["data"]), winner_names);
    assert_eq!(listed["pagination"]["total"], 2);
}

// ---------------------------------------------------------------------------------------------
// GET /ticket-types (domain key)

/// An approved campaign with an active and an inactive type, a draft campaign with a type and a
/// second approved campaign with a type: returns (approved, draft, second).
async fn catalogue(app: &TestApp) -> (String, String, String) {
    let a = create_campaign(app, "ticketing", "approved").await;
    let d = create_campaign(app, "ticketing", "draft").await;
    let second = create_campaign(app, "ticketing", "approved").await;
    create_ticket_type(app, ticket_type_body(&a, "A active")).await;
    create_ticket_type(app, with(&ticket_type_body(&a, "A inactive"), "status", json!("inactive"))).await;
    create_ticket_type(app, with(&ticket_type_body(&a, "A archived"), "status", json!("archived"))).await;
    create_ticket_type(app, ticket_type_body(&d, "Draft type")).await;
    create_ticket_type(app, ticket_type_body(&second, "Second active")).await;
    (a, d, second)
}

async fn the_public_list_shows_only_active_types_of_approved_campaigns(b: Backend) {
    let app = spawn(b).await;
    let (a, _, second) = catalogue(&app).await;
    let r = app.public_get(TICKET_TYPES, &app.account.public, &app.account.domain).await;
    let body = r.json();
    assert_eq!(r.status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(names(&body["data"]), strings(&["A active", "Second active"]));
    assert_eq!(body["pagination"], json!({"page": 1, "limit": 20, "total": 2, "hasMore": false}));
    let campaigns: BTreeSet<&str> =
        body["data"].as_array().expect("data").iter().map(|t| t["campaignId"].as_str().expect("campaignId")).collect();
    assert_eq!(campaigns, BTreeSet::from([a.as_str(), second.as_str()]));

    let page1 = public_list(&app, &format!("{TICKET_TYPES}?limit=1"), &app.account.public).await;
    assert_eq!(page1["data"].as_array().expect("data").len(), 1);
    assert_eq!(page1["pagination"], json!({"page": 1, "limit": 1, "total": 2, "hasMore": true}));
    let page2 = public_list(&app, &format!("{TICKET_TYPES}?limit=1&page=2"), &app.account.public).await;
    assert_eq!(page2["pagination"], json!({"page": 2, "limit": 1, "total": 2, "hasMore": false}));
    assert_ne!(page1["data"][0]["id"], page2["data"][0]["id"]);

    let r = app.public_get(&format!("{TICKET_TYPES}?limit=101"), &app.account.public, &app.account.domain).await;
    assert_invalid(&r, &["limit"]);
}

async fn the_public_list_filters_by_an_approved_campaign_of_the_account_only(b: Backend) {
    let app = spawn(b).await;
    let (a, d, _) = catalogue(&app).await;
    let listed = public_list(&app, &format!("{TICKET_TYPES}?campaignId={a}"), &app.account.public).await;
    assert_eq!(names(&listed["data"]), strings(&["A active"]));
    assert_eq!(listed["pagination"]["total"], 1);

    let r = app.public_get(&format!("{TICKET_TYPES}?campaignId={d}"), &app.account.public, &app.account.domain).await;
    assert_error(&r, 404, "not_found");
    let other = app.new_account("other").await;
    let theirs = create_campaign_as(&app, &other.private, "ticketing", "approved").await;
    let (s1, _) =
        app.signed_as(&other.private, Method::POST, TICKET_TYPES, Some(ticket_type_body(&theirs, "Theirs"))).await;
    assert_eq!(s1, 201);
    let r =
        app.public_get(&format!("{TICKET_TYPES}?campaignId={theirs}"), &app.account.public, &app.account.domain).await;
    assert_error(&r, 404, "not_found");
    let r = app.public_get(&format!("{TICKET_TYPES}?campaignId=nope"), &app.account.public, &app.account.domain).await;
    assert_error(&r, 404, "not_found");
    // The other account's types never show in this account's list.
    let all = public_list(&app, TICKET_TYPES, &app.account.public).await;
    assert!(!names(&all["data"]).contains(&"Theirs".to_string()), "{all}");
}

async fn a_campaign_key_sees_only_its_campaigns_types(b: Backend) {
    let app = spawn(b).await;
    let (a, _, second) = catalogue(&app).await;
    let key = key_with(&app, "campaign", Some(&a), "tickets:read").await;
    let listed = public_list(&app, TICKET_TYPES, &key).await;
    assert_eq!(names(&listed["data"]), strings(&["A active"]));
    assert_eq!(listed["pagination"]["total"], 1);
    let listed = public_list(&app, &format!("{TICKET_TYPES}?campaignId={a}"), &key).await;
    assert_eq!(names(&listed["data"]), strings(&["A active"]));
    let r = app.public_get(&format!("{TICKET_TYPES}?campaignId={second}"), &key, &app.account.domain).await;
    assert_error(&r, 404, "not_found");
}

async fn the_public_list_refuses_a_private_key_and_a_key_without_tickets_read(b: Backend) {
    let app = spawn(b).await;
    catalogue(&app).await;
    let r = app.public_get(TICKET_TYPES, &app.account.private, &app.account.domain).await;
    assert_error(&r, 401, "invalid_key");
    let settings_only = key_with(&app, "public", None, "settings:read").await;
    let r = app.public_get(TICKET_TYPES, &settings_only, &app.account.domain).await;
    assert_error(&r, 403, "insufficient_scope");
    // A signed request is not the scheme of this route.
    let r = send_default(&app, Method::GET, TICKET_TYPES, None).await;
    assert_error(&r, 401, "missing_auth");
}

// ---------------------------------------------------------------------------------------------
// PATCH /ticket-types/:id (D17.15)

fn type_path(id: &str) -> String {
    format!("{TICKET_TYPES}/{id}")
}

async fn a_ticket_type_patch_changes_only_the_fields_given(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "draft").await;
    let t = create_ticket_type(&app, ticket_type_body(&c, "Regular")).await;
    let id = t["id"].as_str().expect("id");
    let r = send_default(&app, Method::PATCH, &type_path(id), Some(json!({"name": "Early", "price": 0}))).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let d = &r.json()["data"];
    assert_eq!(
        (d["id"].as_str(), d["name"].as_str(), &d["price"], &d["is_free"]),
        (Some(id), Some("Early"), &json!(0), &json!(true))
    );
    assert_eq!((d["quantity_available"].as_i64(), d["status"].as_str()), (Some(200), Some("active")), "{d}");
    let body =
        json!({"description": "Doors at six", "quantity_available": 20, "max_per_person": 2, "status": "archived"});
    let r = send_default(&app, Method::PATCH, &type_path(id), Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let d = &r.json()["data"];
    assert_eq!((d["name"].as_str(), d["description"].as_str()), (Some("Early"), Some("Doors at six")));
    assert_eq!(
        (d["quantity_available"].as_i64(), d["remaining"].as_i64(), d["max_per_person"].as_i64()),
        (Some(20), Some(20), Some(2))
    );
    assert_eq!(d["status"], "archived");
    // A refused change writes nothing; the two changes are audited, the status move as such.
    let r = send_default(&app, Method::PATCH, &type_path(id), Some(json!({"price": -1}))).await;
    assert_eq!(r.status, 400);
    let actions = audit_actions(&app, id);
    assert_eq!(
        actions.iter().map(|e| e["action"].as_str().unwrap_or("")).collect::<Vec<_>>(),
        ["ticket_type.status_changed", "ticket_type.updated", "ticket_type.created"]
    );
    assert_eq!(actions[0]["summary"]["before"]["status"], "active", "{}", actions[0]);
    assert_eq!(actions[0]["summary"]["after"]["quantity_available"], 20, "{}", actions[0]);
    assert_eq!(actions[1]["keyId"], app.account.private.key_id.as_str(), "{}", actions[1]);
}

async fn each_broken_ticket_type_patch_rule_is_a_400_naming_that_field(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "ticketing", "draft").await;
    let id = create_ticket_type(&app, ticket_type_body(&c, "Regular")).await["id"].as_str().expect("id").to_string();
    let cases: Vec<(Value, &str)> = vec![
        (json!({"name": ""}), "name"),
        (json!({"name": "n".repeat(256)}), "name"),
        (json!({"description": "d".repeat(5001)}), "description"),
        (json!({"price": -1}), "price"),
        (json!({"price": 1.234}), "price"),
        (json!({"quantity_available": -1}), "quantity_available"),
        (json!({"quantity_available": 1_000_001}), "quantity_available"),
        (json!({"max_per_person": 0}), "max_per_person"),
        (json!({"status": "sold_out"}), "status"),
        (json!({"campaignId": c}), "campaignId"),
        (json!({"colour": "red"}), "colour"),
    ];
    for (body, field) in cases {
        let r = send_default(&app, Method::PATCH, &type_path(&id), Some(body.clone())).await;
        eprintln!("{body}");
        assert_invalid(&r, &[field]);
    }
    let r = send_default(&app, Method::PATCH, &type_path(&id), Some(json!({"price": -1, "status": "gone"}))).await;
    assert_invalid(&r, &["price", "status"]);
    // Nothing was written.
    let r = send_default(&app, Method::PATCH, &type_path(&id), Some(json!({}))).await;
    assert_eq!(r.json()["data"]["price"], json!(450.5), "{}", r.json());
}

async fn a_ticket_type_patch_of_another_account_a_bad_id_or_without_tickets_write_is_refused(b: Backend) {
    let app = spawn(b).await;
    let other = app.new_account("other").await;
    let theirs = create_campaign_as(&app, &other.private, "ticketing", "draft").await;
    let t: Value =
        app.api_as(&other.private).post(TICKET_TYPES, &ticket_type_body(&theirs, "Theirs"), StatusCode::CREATED).await;
    let theirs_id = t["data"]["id"].as_str().expect("id").to_string();
    for id in [theirs_id.as_str(), "not-a-uuid", &uuid::Uuid::now_v7().to_string()] {
        let r = send_default(&app, Method::PATCH, &type_path(id), Some(json!({"name": "Mine"}))).await;
        assert_error(&r, 404, "not_found");
    }
    let c = create_campaign(&app, "ticketing", "draft").await;
    let id = create_ticket_type(&app, ticket_type_body(&c, "Regular")).await["id"].as_str().expect("id").to_string();
    let key = key_with(&app, "private", None, "campaigns:read,campaigns:write,tickets:read").await;
    let r = send(&app, &key, Method::PATCH, &type_path(&id), Some(json!({"name": "X"}))).await;
    assert_error(&r, 403, "insufficient_scope");
}

async fn the_quantity_never_goes_below_sold_and_held_and_an_inactive_type_sells_nothing(b: Backend) {
    use crate::support::catalogue::{running_campaign, ticket_type};
    use crate::support::payments::{checkout_body, initialize, spawn_paid};
    let p = spawn_paid(b).await;
    let key = &p.account.private;
    let c = running_campaign(&p, key, "ticketing").await;
    let t = ticket_type(&p, key, &c, 10.0, 5).await;
    let r = initialize(&p, checkout_body(&p, &c, &t, 3)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    // Three seats are held: 2 is below, 3 is the floor.
    let r = send_default(&p, Method::PATCH, &type_path(&t), Some(json!({"quantity_available": 2, "name": "Renamed"})))
        .await;
    assert_error(&r, 409, "quantity_below_sold");
    let r = send_default(&p, Method::PATCH, &type_path(&t), Some(json!({"quantity_available": 3}))).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!((r.json()["data"]["remaining"].as_i64(), r.json()["data"]["name"].as_str()), (Some(0), Some("General")));
    let r =
        send_default(&p, Method::PATCH, &type_path(&t), Some(json!({"quantity_available": 10, "status": "inactive"})))
            .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let r = initialize(&p, checkout_body(&p, &c, &t, 1)).await;
    assert_error(&r, 409, "conflict");
    let listed = p.public_get(&format!("{TICKET_TYPES}?campaignId={c}"), &p.account.public, &p.account.domain).await;
    assert_eq!(listed.json()["pagination"]["total"], 0, "{}", listed.json());
    let r = send_default(&p, Method::PATCH, &type_path(&t), Some(json!({"status": "archived"}))).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_error(&initialize(&p, checkout_body(&p, &c, &t, 1)).await, 409, "conflict");
    let r = send_default(&p, Method::PATCH, &type_path(&t), Some(json!({"status": "active"}))).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let r = initialize(&p, checkout_body(&p, &c, &t, 1)).await;
    assert_eq!(r.status, 200, "{}", r.json());
}

async fn concurrent_checkouts_and_a_quantity_cut_never_oversell(b: Backend) {
    use crate::support::catalogue::{running_campaign, ticket_type};
    use crate::support::payments::{checkout_body, initialize, spawn_paid};
    let p = spawn_paid(b).await;
    let key = &p.account.private;
    let c = running_campaign(&p, key, "ticketing").await;
    let t = ticket_type(&p, key, &c, 10.0, 20).await;
    let buys = (0..6).map(|_| initialize(&p, checkout_body(&p, &c, &t, 2)));
    let path = type_path(&t);
    let cut = send_default(&p, Method::PATCH, &path, Some(json!({"quantity_available": 6})));
    let (held, cut) = tokio::join!(futures_util::future::join_all(buys), cut);
    let held = 2 * held.iter().filter(|r| r.status == 200).count() as i64;
    let (_, now) = p.signed(Method::PATCH, &type_path(&t), Some(json!({}))).await;
    let quantity = now["data"]["quantity_available"].as_i64().expect("quantity");
    if cut.status == 200 {
        assert_eq!(quantity, 6);
    } else {
        assert_error(&cut, 409, "quantity_below_sold");
        assert!(held > 6, "the cut was refused with only {held} seats held");
    }
    assert!(held <= quantity, "held {held} > quantity {quantity}");
    assert_eq!(now["data"]["remaining"].as_i64(), Some(quantity - held), "{now}");
}

on_both!(
    a_ticket_type_is_created_with_its_full_shape_and_defaults,
    each_broken_ticket_type_field_rule_is_a_400_naming_that_field,
    each_broken_attendee_field_rule_is_a_400_naming_the_item_field,
    a_400_names_every_broken_field_at_once,
    a_ticket_type_for_a_campaign_of_another_account_or_a_non_uuid_id_is_404,
    ticket_types_on_a_voting_or_archived_campaign_are_a_409_conflict,
    creating_ticket_types_without_tickets_write_is_403,
    a_bootstrap_creates_every_ticket_type_of_an_empty_campaign,
    a_second_bootstrap_or_one_after_a_single_create_is_a_409,
    an_invalid_bootstrap_item_is_a_400_naming_it_and_creates_nothing,
    a_bootstrap_with_no_items_or_a_campaign_id_inside_an_item_is_a_400,
    concurrent_bootstraps_of_one_campaign_create_exactly_one_set,
    the_public_list_shows_only_active_types_of_approved_campaigns,
    the_public_list_filters_by_an_approved_campaign_of_the_account_only,
    a_campaign_key_sees_only_its_campaigns_types,
    the_public_list_refuses_a_private_key_and_a_key_without_tickets_read,
    a_ticket_type_patch_changes_only_the_fields_given,
    each_broken_ticket_type_patch_rule_is_a_400_naming_that_field,
    a_ticket_type_patch_of_another_account_a_bad_id_or_without_tickets_write_is_refused,
    the_quantity_never_goes_below_sold_and_held_and_an_inactive_type_sells_nothing,
    concurrent_checkouts_and_a_quantity_cut_never_oversell,
);

//! Campaigns over real HTTP (spec "Campaign", D1.3–D1.8, D3.1–D3.4): create, read, update, the
//! moderation state machine (also under concurrency), the list in both forms, visibility of
//! browser keys, tenant scoping and the audit trail.
use std::collections::BTreeSet;

use futures_util::future::join_all;
use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};

use crate::support::client::{assert_error, detail_fields, raw, StatusCode};
use crate::support::db::now_ms;
use crate::support::server::{spawn, Backend, TestApp, TestKey};

const CAMPAIGNS: &str = "/api/white-label/v1/campaigns";

fn at(id: &str) -> String {
    format!("{CAMPAIGNS}/{id}")
}

/// A valid ticketing campaign body.
fn body(title: &str) -> Value {
    json!({
        "title": title,
        "description": "An evening of live highlife and jazz in Accra.",
        "campaign_type": "ticketing",
        "start_date": "2027-03-01T18:00:00Z",
        "end_date": "2027-03-02T02:00:00Z",
    })
}

/// `base` with the keys of `changes` set (a `null` removes the key).
fn with(mut base: Value, changes: Value) -> Value {
    let obj = base.as_object_mut().expect("object body");
    for (k, v) in changes.as_object().expect("object changes") {
        if v.is_null() {
            obj.remove(k);
        } else {
            obj.insert(k.clone(), v.clone());
        }
    }
    base
}

/// A signed request with raw body bytes as the given key sends them.
async fn send_bytes(app: &TestApp, key: &TestKey, method: Method, path: &str, bytes: Vec<u8>) -> RawResponse {
    app.client_for(key).send_raw(method, path, bytes, None).await.expect("send")
}

/// A signed request with the default private key.
async fn call(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> RawResponse {
    call_as(app, &app.account.private, method, path, body).await
}

async fn call_as(app: &TestApp, key: &TestKey, method: Method, path: &str, body: Option<Value>) -> RawResponse {
    let bytes = body.map(|b| serde_json::to_vec(&b).expect("json")).unwrap_or_default();
    send_bytes(app, key, method, path, bytes).await
}

/// A signed request with the given timestamp. Identical requests signed in the same millisecond
/// carry the same signature, which is single-use (D2.6), so concurrent identical requests each
/// take their own timestamp (`base - i`).
async fn call_at(app: &TestApp, method: Method, path: &str, body: Value, ts: i64) -> RawResponse {
    let bytes = serde_json::to_vec(&body).expect("json");
    let headers =
        app.client().signed_headers_at(&method, path, &bytes, ts, &tessera_client::new_nonce()).expect("headers");
    raw(app.http.request(method, app.url(path)).headers(headers).body(bytes).send().await.expect("send")).await
}

fn request_id_header(r: &RawResponse) -> String {
    r.headers.get("x-request-id").and_then(|v| v.to_str().ok()).expect("x-request-id header").to_string()
}

/// Creates a campaign (expecting 201) and returns `data`.
async fn create(app: &TestApp, body: Value) -> Value {
    let resp: Value = app.api().post(CAMPAIGNS, &body, StatusCode::CREATED).await;
    assert_eq!(resp["success"], true, "{resp}");
    resp["data"].clone()
}

/// Creates a campaign titled `title` in `status` and returns its id.
async fn create_in(app: &TestApp, title: &str, status: &str) -> String {
    let data = create(app, with(body(title), json!({ "status": status }))).await;
    assert_eq!(data["status"], status, "{data}");
    data["id"].as_str().expect("id").to_string()
}

/// GET /campaigns/:id (expecting 200) and returns `data`.
async fn show(app: &TestApp, id: &str) -> Value {
    let resp: Value = app.api().get(&at(id), StatusCode::OK).await;
    resp["data"].clone()
}

/// Asserts a 400 `validation_failed` whose details name exactly the fields in `fields`.
fn assert_invalid(r: &RawResponse, fields: &[&str], case: &str) {
    let body = r.json();
    assert_eq!(r.status, 400, "{case}: {body}");
    let body = assert_error(r, 400, "validation_failed");
    let got: BTreeSet<String> = detail_fields(&body).into_iter().collect();
    let want: BTreeSet<String> = fields.iter().map(|f| f.to_string()).collect();
    assert_eq!(got, want, "{case}: details fields; body: {body}");
    for d in body["details"].as_array().expect("details") {
        assert!(d["message"].as_str().is_some_and(|m| !m.is_empty()), "{case}: every detail has a message: {body}");
    }
}

async fn assert_create_invalid(app: &TestApp, body: Value, fields: &[&str], case: &str) {
    let r = call(app, Method::POST, CAMPAIGNS, Some(body)).await;
    assert_invalid(&r, fields, case);
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() })
}

fn ids(list: &Value) -> Vec<String> {
    list["data"].as_array().expect("data array").iter().map(|c| c["id"].as_str().expect("id").to_string()).collect()
}

fn titles(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .expect("data array")
        .iter()
        .map(|c| c["title"].as_str().expect("title").to_string())
        .collect()
}

/// The signed list at `query` (e.g. `?limit=2`), expecting 200.
async fn list(app: &TestApp, query: &str) -> Value {
    let (status, resp) = app.signed(Method::GET, &format!("{CAMPAIGNS}{query}"), None).await;
    assert_eq!(status, 200, "{query}: {resp}");
    assert_eq!(resp["success"], true, "{resp}");
    resp
}

/// A private key of the default account with only these scopes.
async fn key_with(app: &TestApp, scopes: &str) -> TestKey {
    app.create_key(&app.account.slug, "private", None, scopes, &[]).await
}

// ---------------------------------------------------------------------------------------------
// Create
// ---------------------------------------------------------------------------------------------

async fn creating_a_campaign_returns_201_with_id_title_type_draft_status_and_a_slug_from_the_title(b: Backend) {
    let app = spawn(b).await;
    let r = call(&app, Method::POST, CAMPAIGNS, Some(body("Miss Ghana 2027"))).await;
    let resp = r.json();
    assert_eq!(r.status, 201, "{resp}");
    assert_eq!(resp["success"], true);
    assert_eq!(resp["requestId"], request_id_header(&r).as_str());
    let data = &resp["data"];
    assert!(data["id"].as_str().is_some_and(is_uuid), "id is a UUID: {data}");
    assert_eq!(data["title"], "Miss Ghana 2027");
    assert_eq!(data["campaign_type"], "ticketing");
    assert_eq!(data["status"], "draft", "status defaults to draft (D3.1)");
    assert_eq!(data["slug"], "miss-ghana-2027");
}

async fn a_second_campaign_with_the_same_title_gets_a_numbered_slug(b: Backend) {
    let app = spawn(b).await;
    let first = create(&app, body("Miss Ghana 2027")).await;
    let second = create(&app, body("Miss Ghana 2027")).await;
    let third = create(&app, body("Miss Ghana 2027")).await;
    assert_eq!(first["slug"], "miss-ghana-2027");
    assert_eq!(second["slug"], "miss-ghana-2027-2");
    assert_eq!(third["slug"], "miss-ghana-2027-3");
    assert_ne!(first["id"], second["id"]);
}

async fn concurrent_creations_with_the_same_title_all_succeed_with_distinct_slugs(b: Backend) {
    let app = spawn(b).await;
    let base = now_ms();
    let results =
        join_all((0..6).map(|i| call_at(&app, Method::POST, CAMPAIGNS, body("Accra Food Fair"), base - i))).await;
    let mut slugs = BTreeSet::new();
    for r in &results {
        let resp = r.json();
        assert_eq!(r.status, 201, "the caller chose no slug, so a generated-slug race is not its conflict: {resp}");
        slugs.insert(resp["data"]["slug"].as_str().expect("slug").to_string());
    }
    assert_eq!(slugs.len(), 6, "distinct slugs: {slugs:?}");
    assert!(slugs.contains("accra-food-fair"), "{slugs:?}");
}

async fn a_status_supplied_on_create_stands(b: Backend) {
    let app = spawn(b).await;
    for status in ["approved", "pending_approval", "rejected", "archived", "draft"] {
        let data = create(&app, with(body("Status On Create"), json!({ "status": status }))).await;
        assert_eq!(data["status"], status, "{data}");
        let id = data["id"].as_str().expect("id");
        assert_eq!(show(&app, id).await["status"], status);
    }
}

async fn boundary_lengths_and_depths_are_accepted(b: Backend) {
    let app = spawn(b).await;
    let mut deep = json!(1);
    for _ in 0..8 {
        deep = json!({ "a": deep });
    }
    let data = create(
        &app,
        with(
            body("abc"),
            json!({
                "description": "0123456789",
                "slug": "abc",
                "metadata": deep,
            }),
        ),
    )
    .await;
    assert_eq!(data["title"], "abc");
    assert_eq!(data["slug"], "abc");
    let long = create(
        &app,
        with(
            body(&"t".repeat(255)),
            json!({
                "description": "d".repeat(5000),
                "slug": "s".repeat(100),
                "metadata": { "blob": "x".repeat(16 * 1024 - 20) },
            }),
        ),
    )
    .await;
    let full = show(&app, long["id"].as_str().expect("id")).await;
    assert_eq!(full["title"].as_str().map(str::len), Some(255));
    assert_eq!(full["description"].as_str().map(str::len), Some(5000));
    assert_eq!(full["slug"].as_str().map(str::len), Some(100));
}

async fn title_rules_are_400_naming_title(b: Backend) {
    let app = spawn(b).await;
    assert_create_invalid(&app, with(body("x"), json!({ "title": null })), &["title"], "title missing").await;
    assert_create_invalid(&app, body("ab"), &["title"], "title of 2 characters").await;
    assert_create_invalid(&app, body(&"t".repeat(256)), &["title"], "title of 256 characters").await;
    assert_create_invalid(&app, body("   ab   "), &["title"], "title of 2 characters after trimming").await;
}

async fn description_rules_are_400_naming_description(b: Backend) {
    let app = spawn(b).await;
    let b0 = body("Accra Jazz Night");
    assert_create_invalid(&app, with(b0.clone(), json!({ "description": null })), &["description"], "missing").await;
    assert_create_invalid(&app, with(b0.clone(), json!({ "description": "123456789" })), &["description"], "9 chars")
        .await;
    assert_create_invalid(&app, with(b0, json!({ "description": "d".repeat(5001) })), &["description"], "5001 chars")
        .await;
}

async fn campaign_type_rules_are_400_naming_campaign_type(b: Backend) {
    let app = spawn(b).await;
    let b0 = body("Accra Jazz Night");
    assert_create_invalid(&app, with(b0.clone(), json!({ "campaign_type": null })), &["campaign_type"], "missing")
        .await;
    assert_create_invalid(&app, with(b0.clone(), json!({ "campaign_type": "raffle" })), &["campaign_type"], "raffle")
        .await;
    assert_create_invalid(&app, with(b0, json!({ "campaign_type": "Voting" })), &["campaign_type"], "case matters")
        .await;
}

async fn date_rules_are_400_naming_the_date(b: Backend) {
    let app = spawn(b).await;
    let b0 = body("Accra Jazz Night");
    assert_create_invalid(&app, with(b0.clone(), json!({ "start_date": null })), &["start_date"], "start missing")
        .await;
    assert_create_invalid(
        &app,
        with(b0.clone(), json!({ "start_date": "2027-03-01 18:00" })),
        &["start_date"],
        "start not RFC 3339",
    )
    .await;
    assert_create_invalid(
        &app,
        with(b0.clone(), json!({ "start_date": "2027-03-01" })),
        &["start_date"],
        "a date without a time",
    )
    .await;
    assert_create_invalid(&app, with(b0.clone(), json!({ "end_date": null })), &["end_date"], "end missing").await;
    assert_create_invalid(&app, with(b0.clone(), json!({ "end_date": "tomorrow" })), &["end_date"], "end not RFC 3339")
        .await;
    assert_create_invalid(
        &app,
        with(b0.clone(), json!({ "start_date": "2027-03-02T02:00:00Z", "end_date": "2027-03-01T18:00:00Z" })),
        &["end_date"],
        "start after end",
    )
    .await;
    assert_create_invalid(
        &app,
        with(b0.clone(), json!({ "start_date": "2027-03-01T18:00:00Z", "end_date": "2027-03-01T18:00:00Z" })),
        &["end_date"],
        "start equal to end",
    )
    .await;
    // The same instant written with another offset is still equal.
    assert_create_invalid(
        &app,
        with(b0, json!({ "start_date": "2027-03-01T18:00:00Z", "end_date": "2027-03-01T19:00:00+01:00" })),
        &["end_date"],
        "start equal to end across offsets",
    )
    .await;
}

async fn slug_rules_are_400_naming_slug(b: Backend) {
    let app = spawn(b).await;
    let b0 = body("Accra Jazz Night");
    for (slug, case) in [
        ("AB", "upper case, 2 chars"),
        ("ab", "2 chars"),
        ("has space", "a space"),
        ("Accra-Jazz", "upper case"),
        ("accra_jazz", "underscore"),
    ] {
        assert_create_invalid(&app, with(b0.clone(), json!({ "slug": slug })), &["slug"], case).await;
    }
    assert_create_invalid(&app, with(b0, json!({ "slug": "s".repeat(101) })), &["slug"], "101 chars").await;
}

async fn voting_campaigns_need_a_positive_vote_price_with_at_most_two_decimals(b: Backend) {
    let app = spawn(b).await;
    let voting = with(body("Miss Ghana 2027"), json!({ "campaign_type": "voting" }));
    assert_create_invalid(&app, voting.clone(), &["vote_price"], "voting without vote_price").await;
    assert_create_invalid(&app, with(voting.clone(), json!({ "vote_price": 0 })), &["vote_price"], "vote_price 0")
        .await;
    assert_create_invalid(&app, with(voting.clone(), json!({ "vote_price": -1 })), &["vote_price"], "negative").await;
    assert_create_invalid(&app, with(voting.clone(), json!({ "vote_price": 1.005 })), &["vote_price"], "3 decimals")
        .await;
    assert_create_invalid(&app, with(voting.clone(), json!({ "vote_price": "2.5" })), &["vote_price"], "a string")
        .await;
    let ok = create(&app, with(voting, json!({ "vote_price": 2.5 }))).await;
    assert_eq!(show(&app, ok["id"].as_str().expect("id")).await["vote_price"], json!(2.5));
    // Other types ignore vote_price.
    let donation =
        create(&app, with(body("Clean Water Drive"), json!({ "campaign_type": "donation", "vote_price": 3 }))).await;
    assert_eq!(show(&app, donation["id"].as_str().expect("id")).await["vote_price"], Value::Null);
}

async fn metadata_must_be_a_bounded_object(b: Backend) {
    let app = spawn(b).await;
    let b0 = body("Accra Jazz Night");
    assert_create_invalid(&app, with(b0.clone(), json!({ "metadata": [1, 2] })), &["metadata"], "an array").await;
    assert_create_invalid(&app, with(b0.clone(), json!({ "metadata": "ext-1" })), &["metadata"], "a string").await;
    assert_create_invalid(
        &app,
        with(b0.clone(), json!({ "metadata": { "blob": "x".repeat(16 * 1024 + 1) } })),
        &["metadata"],
        "over 16 KiB",
    )
    .await;
    let mut deep = json!(1);
    for _ in 0..9 {
        deep = json!({ "a": deep });
    }
    assert_create_invalid(&app, with(b0, json!({ "metadata": deep })), &["metadata"], "nesting depth 9").await;
}

async fn an_unknown_status_on_create_is_400_naming_status(b: Backend) {
    let app = spawn(b).await;
    assert_create_invalid(&app, with(body("Accra Jazz Night"), json!({ "status": "live" })), &["status"], "live").await;
}

async fn an_unknown_field_is_400_naming_that_field(b: Backend) {
    let app = spawn(b).await;
    assert_create_invalid(&app, with(body("Accra Jazz Night"), json!({ "bogus": 1 })), &["bogus"], "bogus").await;
    // Mass assignment of server-owned fields is refused too.
    assert_create_invalid(&app, with(body("Accra Jazz Night"), json!({ "id": "x" })), &["id"], "id").await;
    let (_, list) = app.signed(Method::GET, CAMPAIGNS, None).await;
    assert_eq!(list["pagination"]["total"], 0, "nothing was created: {list}");
}

async fn a_field_of_the_wrong_type_is_400_naming_that_field(b: Backend) {
    let app = spawn(b).await;
    assert_create_invalid(&app, with(body("x"), json!({ "title": 5 })), &["title"], "title: 5").await;
    assert_create_invalid(
        &app,
        with(body("Accra Jazz Night"), json!({ "verification_required": "yes" })),
        &["verification_required"],
        "verification_required: \"yes\"",
    )
    .await;
}

async fn a_body_that_is_not_a_json_object_is_400_malformed_json(b: Backend) {
    let app = spawn(b).await;
    let key = app.account.private.clone();
    for (bytes, case) in [
        (b"{\"title\": \"Accra".to_vec(), "truncated JSON"),
        (b"title=Accra".to_vec(), "not JSON"),
        (b"[{\"title\": \"Accra Jazz Night\"}]".to_vec(), "a JSON array"),
        (b"\"Accra\"".to_vec(), "a JSON string"),
        (Vec::new(), "an empty body"),
    ] {
        let r = send_bytes(&app, &key, Method::POST, CAMPAIGNS, bytes).await;
        assert_eq!(r.status, 400, "{case}: {}", r.json());
        assert_error(&r, 400, "malformed_json");
    }
}

async fn several_broken_fields_are_all_named_in_one_400(b: Backend) {
    let app = spawn(b).await;
    let broken = json!({
        "title": "ab",
        "description": "short",
        "campaign_type": "raffle",
        "start_date": "soon",
        "end_date": "2027-03-02T02:00:00Z",
        "slug": "Has Space",
        "status": "live",
        "metadata": [],
    });
    let r = call(&app, Method::POST, CAMPAIGNS, Some(broken)).await;
    assert_invalid(
        &r,
        &["title", "description", "campaign_type", "start_date", "slug", "status", "metadata"],
        "several broken fields",
    );
}

async fn a_chosen_slug_taken_in_the_account_is_409_but_free_in_another_account(b: Backend) {
    let app = spawn(b).await;
    let first = create(&app, with(body("Accra Jazz Night"), json!({ "slug": "accra-jazz" }))).await;
    assert_eq!(first["slug"], "accra-jazz");
    let r =
        call(&app, Method::POST, CAMPAIGNS, Some(with(body("Another Night"), json!({ "slug": "accra-jazz" })))).await;
    assert_error(&r, 409, "conflict");
    let other = app.new_account("other").await;
    let r = call_as(
        &app,
        &other.private,
        Method::POST,
        CAMPAIGNS,
        Some(with(body("Their Night"), json!({ "slug": "accra-jazz" }))),
    )
    .await;
    let resp = r.json();
    assert_eq!(r.status, 201, "{resp}");
    assert_eq!(resp["data"]["slug"], "accra-jazz");
    // A generated slug also does not look at other accounts.
    let (status, theirs) = app.signed_as(&other.private, Method::POST, CAMPAIGNS, Some(body("Miss Ghana 2027"))).await;
    assert_eq!(status, 201, "{theirs}");
    assert_eq!(create(&app, body("Miss Ghana 2027")).await["slug"], "miss-ghana-2027");
    let (_, theirs2) = app.signed_as(&other.private, Method::POST, CAMPAIGNS, Some(body("Miss Ghana 2027"))).await;
    assert_eq!(theirs["data"]["slug"], "miss-ghana-2027");
    assert_eq!(theirs2["data"]["slug"], "miss-ghana-2027-2");
}

async fn creating_without_campaigns_write_is_403_insufficient_scope(b: Backend) {
    let app = spawn(b).await;
    let reader = key_with(&app, "campaigns:read").await;
    let r = call_as(&app, &reader, Method::POST, CAMPAIGNS, Some(body("Accra Jazz Night"))).await;
    assert_error(&r, 403, "insufficient_scope");
    let (_, list) = app.signed(Method::GET, CAMPAIGNS, None).await;
    assert_eq!(list["pagination"]["total"], 0, "nothing was created: {list}");
}

async fn listing_without_campaigns_read_is_403_insufficient_scope(b: Backend) {
    let app = spawn(b).await;
    let settings_only = key_with(&app, "settings:read").await;
    let r = call_as(&app, &settings_only, Method::GET, CAMPAIGNS, None).await;
    assert_error(&r, 403, "insufficient_scope");
    let id = create_in(&app, "Accra Jazz Night", "draft").await;
    let r = call_as(&app, &settings_only, Method::GET, &at(&id), None).await;
    assert_error(&r, 403, "insufficient_scope");
    let writer_only = key_with(&app, "campaigns:write").await;
    let r = call_as(&app, &writer_only, Method::GET, CAMPAIGNS, None).await;
    assert_error(&r, 403, "insufficient_scope");
}

// ---------------------------------------------------------------------------------------------
// Read
// ---------------------------------------------------------------------------------------------

async fn reading_a_campaign_returns_the_whole_record(b: Backend) {
    let app = spawn(b).await;
    let metadata = json!({ "externalId": "mg-2027", "tags": ["pageant", "tv"], "partner": { "id": 7 } });
    let created = create(
        &app,
        json!({
            "title": "Miss Ghana 2027",
            "description": "The national pageant, decided by public vote.",
            "campaign_type": "voting",
            "status": "pending_approval",
            "start_date": "2027-03-01T19:00:00+01:00",
            "end_date": "2027-04-01T18:00:00Z",
            "slug": "mg-2027",
            "vote_price": 2.5,
            "verification_required": true,
            "metadata": metadata,
        }),
    )
    .await;
    let id = created["id"].as_str().expect("id");
    let r = call(&app, Method::GET, &at(id), None).await;
    let resp = r.json();
    assert_eq!(r.status, 200, "{resp}");
    assert_eq!(resp["success"], true);
    assert_eq!(resp["requestId"], request_id_header(&r).as_str());
    let c = &resp["data"];
    assert_eq!(c["id"], id);
    assert_eq!(c["title"], "Miss Ghana 2027");
    assert_eq!(c["description"], "The national pageant, decided by public vote.");
    assert_eq!(c["campaign_type"], "voting");
    assert_eq!(c["status"], "pending_approval");
    assert_eq!(c["slug"], "mg-2027");
    assert_eq!(c["start_date"], "2027-03-01T18:00:00Z", "RFC 3339 UTC (D1.6)");
    assert_eq!(c["end_date"], "2027-04-01T18:00:00Z");
    assert_eq!(c["vote_price"], json!(2.5), "GHS as a JSON number (D1.5)");
    assert_eq!(c["verification_required"], true);
    assert_eq!(c["metadata"], metadata);
    for f in ["created_at", "updated_at"] {
        let t = c[f].as_str().unwrap_or_else(|| panic!("{f}: {c}"));
        assert!(t.ends_with('Z') && t.contains('T'), "{f} is RFC 3339 UTC: {t}");
    }
}

async fn reading_another_accounts_campaign_is_404(b: Backend) {
    let app = spawn(b).await;
    let other = app.new_account("other").await;
    let (status, theirs) = app.signed_as(&other.private, Method::POST, CAMPAIGNS, Some(body("Their Night"))).await;
    assert_eq!(status, 201, "{theirs}");
    let their_id = theirs["data"]["id"].as_str().expect("id");
    let r = call(&app, Method::GET, &at(their_id), None).await;
    assert_error(&r, 404, "not_found");
    // The owner still sees it.
    let (status, _) = app.signed_as(&other.private, Method::GET, &at(their_id), None).await;
    assert_eq!(status, 200);
}

async fn reading_an_unknown_or_malformed_campaign_id_is_404(b: Backend) {
    let app = spawn(b).await;
    for id in ["not-a-uuid", "0191e7a0-0000-7000-8000-000000000000", "1"] {
        let r = call(&app, Method::GET, &at(id), None).await;
        assert_error(&r, 404, "not_found");
    }
}

// ---------------------------------------------------------------------------------------------
// Update
// ---------------------------------------------------------------------------------------------

async fn patching_a_title_updates_only_the_title(b: Backend) {
    let app = spawn(b).await;
    let created = create(&app, with(body("Accra Jazz Night"), json!({ "metadata": { "externalId": "ajn" } }))).await;
    let id = created["id"].as_str().expect("id");
    let before = show(&app, id).await;
    let r = call(&app, Method::PATCH, &at(id), Some(json!({ "title": "Accra Jazz Night II" }))).await;
    let resp = r.json();
    assert_eq!(r.status, 200, "{resp}");
    assert_eq!(resp["success"], true);
    assert_eq!(resp["data"]["id"], id);
    let after = show(&app, id).await;
    assert_eq!(after["title"], "Accra Jazz Night II");
    for f in ["description", "campaign_type", "status", "start_date", "end_date", "slug", "metadata", "created_at"] {
        assert_eq!(after[f], before[f], "{f} unchanged");
    }
    assert_ne!(after["updated_at"], before["updated_at"], "updated_at moves");
}

async fn patching_other_fields_applies_them(b: Backend) {
    let app = spawn(b).await;
    let id = create_in(&app, "Accra Jazz Night", "draft").await;
    let (status, resp) = app
        .signed(
            Method::PATCH,
            &at(&id),
            Some(json!({
                "description": "Now with a second stage and a food court.",
                "end_date": "2027-03-02T04:00:00Z",
                "slug": "ajn-2027",
                "metadata": { "externalId": "ajn-2" },
                "verification_required": true,
            })),
        )
        .await;
    assert_eq!(status, 200, "{resp}");
    let c = show(&app, &id).await;
    assert_eq!(c["description"], "Now with a second stage and a food court.");
    assert_eq!(c["end_date"], "2027-03-02T04:00:00Z");
    assert_eq!(c["start_date"], "2027-03-01T18:00:00Z");
    assert_eq!(c["slug"], "ajn-2027");
    assert_eq!(c["metadata"], json!({ "externalId": "ajn-2" }));
    assert_eq!(c["verification_required"], true);
    // An empty patch changes nothing and is fine.
    let _: Value = app.api().patch(&at(&id), &json!({}), StatusCode::OK).await;
    assert_eq!(show(&app, &id).await["slug"], "ajn-2027");
}

async fn patch_validation_follows_the_create_rules(b: Backend) {
    let app = spawn(b).await;
    let id = create_in(&app, "Accra Jazz Night", "draft").await;
    let path = at(&id);
    let cases: Vec<(Value, &[&str], &str)> = vec![
        (json!({ "title": "ab" }), &["title"], "title of 2 characters"),
        (json!({ "title": "t".repeat(256) }), &["title"], "title of 256 characters"),
        (json!({ "description": "too short" }), &["description"], "description of 9 characters"),
        (json!({ "campaign_type": "raffle" }), &["campaign_type"], "campaign_type raffle"),
        (json!({ "end_date": "2027-02-01T00:00:00Z" }), &["end_date"], "end_date before the stored start_date"),
        (json!({ "start_date": "2027-04-01T00:00:00Z" }), &["end_date"], "start_date after the stored end_date"),
        (json!({ "start_date": "March 1st" }), &["start_date"], "start_date not RFC 3339"),
        (json!({ "slug": "has space" }), &["slug"], "slug with a space"),
        (json!({ "campaign_type": "voting" }), &["vote_price"], "turning voting without vote_price"),
        (json!({ "campaign_type": "voting", "vote_price": 0.001 }), &["vote_price"], "vote_price 3 decimals"),
        (json!({ "metadata": [] }), &["metadata"], "metadata not an object"),
        (json!({ "status": "live" }), &["status"], "status live"),
        (json!({ "bogus": true }), &["bogus"], "unknown field"),
        (json!({ "title": 5 }), &["title"], "title of the wrong type"),
        (json!({ "id": "0191e7a0-0000-7000-8000-000000000000" }), &["id"], "id is not writable"),
    ];
    for (patch, fields, case) in cases {
        let r = call(&app, Method::PATCH, &path, Some(patch)).await;
        assert_invalid(&r, fields, case);
    }
    let r = send_bytes(&app, &app.account.private, Method::PATCH, &path, b"[]".to_vec()).await;
    assert_error(&r, 400, "malformed_json");
    let c = show(&app, &id).await;
    assert_eq!(c["title"], "Accra Jazz Night", "no rejected patch changed anything");
    assert_eq!(c["campaign_type"], "ticketing");
    assert_eq!(c["end_date"], "2027-03-02T02:00:00Z");
}

async fn patching_to_a_slug_taken_in_the_account_is_409(b: Backend) {
    let app = spawn(b).await;
    create(&app, with(body("Accra Jazz Night"), json!({ "slug": "accra-jazz" }))).await;
    let id = create_in(&app, "Kumasi Food Fair", "draft").await;
    let r = call(&app, Method::PATCH, &at(&id), Some(json!({ "slug": "accra-jazz" }))).await;
    assert_error(&r, 409, "conflict");
    assert_eq!(show(&app, &id).await["slug"], "kumasi-food-fair");
}

async fn patching_another_accounts_or_an_unknown_campaign_is_404(b: Backend) {
    let app = spawn(b).await;
    let other = app.new_account("other").await;
    let theirs: Value = app.api_as(&other.private).post(CAMPAIGNS, &body("Their Night"), StatusCode::CREATED).await;
    let their_id = theirs["data"]["id"].as_str().expect("id");
    let r = call(&app, Method::PATCH, &at(their_id), Some(json!({ "title": "Hijacked" }))).await;
    assert_error(&r, 404, "not_found");
    let (_, still) = app.signed_as(&other.private, Method::GET, &at(their_id), None).await;
    assert_eq!(still["data"]["title"], "Their Night");
    for id in ["not-a-uuid", "0191e7a0-0000-7000-8000-000000000000"] {
        let r = call(&app, Method::PATCH, &at(id), Some(json!({ "title": "Nobody" }))).await;
        assert_error(&r, 404, "not_found");
    }
}

async fn patching_without_campaigns_write_is_403_insufficient_scope(b: Backend) {
    let app = spawn(b).await;
    let id = create_in(&app, "Accra Jazz Night", "draft").await;
    let reader = key_with(&app, "campaigns:read").await;
    let r = call_as(&app, &reader, Method::PATCH, &at(&id), Some(json!({ "title": "Renamed" }))).await;
    assert_error(&r, 403, "insufficient_scope");
    assert_eq!(show(&app, &id).await["title"], "Accra Jazz Night");
}

// ---------------------------------------------------------------------------------------------
// State machine (D3.1)
// ---------------------------------------------------------------------------------------------

async fn every_legal_status_move_is_accepted(b: Backend) {
    let app = spawn(b).await;
    for (from, to) in [
        ("draft", "pending_approval"),
        ("pending_approval", "approved"),
        ("approved", "archived"),
        ("draft", "archived"),
        ("pending_approval", "rejected"),
        ("rejected", "draft"),
        ("rejected", "archived"),
        ("pending_approval", "draft"),
    ] {
        let id = create_in(&app, "Moving Campaign", from).await;
        let r = call(&app, Method::PATCH, &at(&id), Some(json!({ "status": to }))).await;
        let resp = r.json();
        assert_eq!(r.status, 200, "{from} -> {to}: {resp}");
        assert_eq!(resp["data"]["id"], id.as_str());
        assert_eq!(resp["data"]["status"], to, "{from} -> {to}");
        assert_eq!(show(&app, &id).await["status"], to, "{from} -> {to} is stored");
    }
}

async fn a_campaign_walks_the_whole_moderation_path(b: Backend) {
    let app = spawn(b).await;
    let id = create(&app, body("Accra Jazz Night")).await["id"].as_str().expect("id").to_string();
    for to in ["pending_approval", "rejected", "draft", "pending_approval", "approved", "archived"] {
        let (status, resp) = app.signed(Method::PATCH, &at(&id), Some(json!({ "status": to }))).await;
        assert_eq!(status, 200, "-> {to}: {resp}");
        assert_eq!(show(&app, &id).await["status"], to);
    }
}

async fn every_illegal_status_move_is_409_invalid_transition(b: Backend) {
    let app = spawn(b).await;
    for (from, to) in [
        ("approved", "draft"),
        ("approved", "pending_approval"),
        ("approved", "rejected"),
        ("archived", "draft"),
        ("archived", "approved"),
        ("archived", "pending_approval"),
        ("draft", "approved"),
        ("draft", "rejected"),
        ("rejected", "approved"),
        ("rejected", "pending_approval"),
    ] {
        let id = create_in(&app, "Stuck Campaign", from).await;
        let r = call(&app, Method::PATCH, &at(&id), Some(json!({ "status": to, "title": "Renamed Campaign" }))).await;
        assert_eq!(r.status, 409, "{from} -> {to}: {}", r.json());
        assert_error(&r, 409, "invalid_transition");
        let c = show(&app, &id).await;
        assert_eq!(c["status"], from, "{from} -> {to} left the status alone");
        assert_eq!(c["title"], "Stuck Campaign", "{from} -> {to} applied nothing else either");
    }
}

async fn a_validation_error_wins_over_an_illegal_move(b: Backend) {
    let app = spawn(b).await;
    let id = create_in(&app, "Accra Jazz Night", "approved").await;
    let r = call(&app, Method::PATCH, &at(&id), Some(json!({ "status": "draft", "title": "ab" }))).await;
    assert_invalid(&r, &["title"], "bad title with an illegal move");
}

async fn concurrent_approvals_of_one_campaign_end_approved(b: Backend) {
    let app = spawn(b).await;
    let id = create_in(&app, "Accra Jazz Night", "pending_approval").await;
    let path = at(&id);
    let base = now_ms();
    let results =
        join_all((0..10).map(|i| call_at(&app, Method::PATCH, &path, json!({ "status": "approved" }), base - i))).await;
    let mut ok = 0;
    for r in &results {
        match r.status {
            200 => {
                ok += 1;
                assert_eq!(r.json()["data"]["status"], "approved");
            }
            409 => {
                let body = r.json();
                assert!(body["code"] == "conflict" || body["code"] == "invalid_transition", "{body}");
            }
            other => panic!("unexpected status {other}: {}", r.json()),
        }
    }
    assert!(ok >= 1, "at least one approval succeeded");
    assert_eq!(show(&app, &id).await["status"], "approved");
    let out = app.cli(&["admin", "audit", "list", "--account", &app.account.slug, "--json"]);
    let changes = audit_entries(&out)
        .into_iter()
        .filter(|e| e["entityId"] == id.as_str() && e["action"] == "campaign.status_changed")
        .count();
    assert_eq!(changes, 1, "the status changed exactly once");
}

async fn racing_approve_and_reject_leaves_exactly_one_outcome(b: Backend) {
    let app = spawn(b).await;
    let id = create_in(&app, "Miss Ghana 2027", "pending_approval").await;
    let path = at(&id);
    let wanted: Vec<&str> = (0..10).map(|i| if i % 2 == 0 { "approved" } else { "rejected" }).collect();
    let base = now_ms();
    let results = join_all(
        wanted.iter().zip(0..).map(|(to, i)| call_at(&app, Method::PATCH, &path, json!({ "status": to }), base - i)),
    )
    .await;
    let final_status = show(&app, &id).await["status"].as_str().expect("status").to_string();
    assert!(final_status == "approved" || final_status == "rejected", "final: {final_status}");
    let mut winners = 0;
    for (to, r) in wanted.iter().zip(&results) {
        let body = r.json();
        if *to == final_status {
            assert!(r.status == 200 || r.status == 409, "{to}: {} {body}", r.status);
            if r.status == 200 {
                winners += 1;
            }
        } else {
            assert_eq!(r.status, 409, "a request for the losing outcome {to} must fail: {body}");
            assert!(body["code"] == "conflict" || body["code"] == "invalid_transition", "{body}");
        }
    }
    assert!(winners >= 1, "someone moved it to {final_status}");
    let out = app.cli(&["admin", "audit", "list", "--account", &app.account.slug, "--json"]);
    let changes: Vec<Value> = audit_entries(&out)
        .into_iter()
        .filter(|e| e["entityId"] == id.as_str() && e["action"] == "campaign.status_changed")
        .collect();
    assert_eq!(changes.len(), 1, "one status change: {changes:?}");
    assert_eq!(changes[0]["summary"]["after"]["status"], final_status.as_str());
}

// ---------------------------------------------------------------------------------------------
// List, signed form
// ---------------------------------------------------------------------------------------------

async fn the_signed_list_shows_every_status_of_the_account(b: Backend) {
    let app = spawn(b).await;
    let mut created = BTreeSet::new();
    for status in ["draft", "pending_approval", "approved", "rejected", "archived"] {
        created.insert(create_in(&app, &format!("Campaign {status}"), status).await);
    }
    let resp = list(&app, "").await;
    let listed: BTreeSet<String> = ids(&resp).into_iter().collect();
    assert_eq!(listed, created);
    let statuses: BTreeSet<&str> =
        resp["data"].as_array().expect("data").iter().map(|c| c["status"].as_str().expect("status")).collect();
    assert_eq!(statuses.len(), 5, "{statuses:?}");
    assert_eq!(resp["pagination"], json!({ "page": 1, "limit": 20, "total": 5, "hasMore": false }));
    let first = &resp["data"][0];
    for f in ["id", "title", "campaign_type", "status", "slug", "metadata"] {
        assert!(first.get(f).is_some(), "signed items carry {f}: {first}");
    }
}

async fn the_list_pages_newest_first(b: Backend) {
    let app = spawn(b).await;
    for i in 1..=5 {
        create(&app, body(&format!("Campaign {i}"))).await;
    }
    let p1 = list(&app, "?limit=2").await;
    assert_eq!(titles(&p1), ["Campaign 5", "Campaign 4"]);
    assert_eq!(p1["pagination"], json!({ "page": 1, "limit": 2, "total": 5, "hasMore": true }));
    let p2 = list(&app, "?limit=2&page=2").await;
    assert_eq!(titles(&p2), ["Campaign 3", "Campaign 2"]);
    assert_eq!(p2["pagination"], json!({ "page": 2, "limit": 2, "total": 5, "hasMore": true }));
    let p3 = list(&app, "?limit=2&page=3").await;
    assert_eq!(titles(&p3), ["Campaign 1"]);
    assert_eq!(p3["pagination"], json!({ "page": 3, "limit": 2, "total": 5, "hasMore": false }));
    let p4 = list(&app, "?page=4&limit=2").await;
    assert_eq!(titles(&p4), Vec::<String>::new());
    assert_eq!(p4["pagination"], json!({ "page": 4, "limit": 2, "total": 5, "hasMore": false }));
    let all = list(&app, "?limit=100").await;
    assert_eq!(all["data"].as_array().map(Vec::len), Some(5));
    assert_eq!(all["pagination"]["limit"], 100);
}

async fn bad_list_parameters_are_400_naming_the_parameter(b: Backend) {
    let app = spawn(b).await;
    for (query, field) in [
        ("?limit=0", "limit"),
        ("?limit=101", "limit"),
        ("?limit=-1", "limit"),
        ("?limit=ten", "limit"),
        ("?page=0", "page"),
        ("?page=x", "page"),
        ("?status=bogus", "status"),
        ("?status=Approved", "status"),
        ("?foo=1", "foo"),
    ] {
        let r = call(&app, Method::GET, &format!("{CAMPAIGNS}{query}"), None).await;
        assert_invalid(&r, &[field], query);
    }
    let r = call(&app, Method::GET, &format!("{CAMPAIGNS}?page=0&limit=0&status=bogus"), None).await;
    assert_invalid(&r, &["page", "limit", "status"], "three bad parameters at once");
}

async fn the_status_filter_shows_only_that_status(b: Backend) {
    let app = spawn(b).await;
    let approved = create_in(&app, "Approved One", "approved").await;
    create_in(&app, "Draft One", "draft").await;
    create_in(&app, "Pending One", "pending_approval").await;
    let resp = list(&app, "?status=approved").await;
    assert_eq!(ids(&resp), [approved]);
    assert_eq!(resp["pagination"]["total"], 1);
    let resp = list(&app, "?status=rejected").await;
    assert_eq!(ids(&resp), Vec::<String>::new());
    assert_eq!(resp["pagination"]["total"], 0);
}

async fn search_matches_title_case_insensitively_and_slug(b: Backend) {
    let app = spawn(b).await;
    let jazz = create(&app, body("Accra Jazz Night")).await["id"].as_str().expect("id").to_string();
    let fair = create(&app, with(body("Kumasi Food Fair"), json!({ "slug": "kff-harvest-2027" }))).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    create(&app, body("Tamale Marathon")).await;
    assert_eq!(ids(&list(&app, "?search=JAZZ").await), [jazz.as_str()], "upper-case search matches the title");
    assert_eq!(ids(&list(&app, "?search=accra%20jazz").await), [jazz.as_str()], "a phrase with a space");
    assert_eq!(ids(&list(&app, "?search=jazz-nig").await), [jazz.as_str()], "a slug fragment");
    assert_eq!(ids(&list(&app, "?search=harvest").await), [fair], "a slug-only match");
    let resp = list(&app, "?search=jazz&status=draft&limit=1").await;
    assert_eq!(ids(&resp), [jazz]);
    assert_eq!(resp["pagination"]["total"], 1, "search counts only matches");
    assert_eq!(list(&app, "?search=opera").await["pagination"]["total"], 0);
}

async fn search_wildcards_are_literal(b: Backend) {
    let app = spawn(b).await;
    create(&app, body("Accra Jazz Night")).await;
    create(&app, body("Kumasi Food Fair")).await;
    for query in ["?search=%25", "?search=_", "?search=%25a%25", "?search=%5C"] {
        let resp = list(&app, query).await;
        assert_eq!(resp["pagination"]["total"], 0, "{query} matches nothing: {resp}");
    }
    let pct = create(&app, body("100% Highlife")).await["id"].as_str().expect("id").to_string();
    assert_eq!(ids(&list(&app, "?search=100%25").await), [pct], "a literal % still matches itself");
}

async fn another_accounts_campaigns_never_appear_in_the_list(b: Backend) {
    let app = spawn(b).await;
    let mine = create_in(&app, "Accra Jazz Night", "approved").await;
    let other = app.new_account("other").await;
    for status in ["draft", "approved"] {
        let _: Value = app
            .api_as(&other.private)
            .post(
                CAMPAIGNS,
                &with(body("Accra Jazz Night Elsewhere"), json!({ "status": status })),
                StatusCode::CREATED,
            )
            .await;
    }
    for query in ["", "?search=jazz", "?status=approved"] {
        let resp = list(&app, query).await;
        assert_eq!(ids(&resp), [mine.as_str()], "{query}");
        assert_eq!(resp["pagination"]["total"], 1, "{query}");
    }
    let public = app.public_get(CAMPAIGNS, &app.account.public, &app.account.domain).await;
    assert_eq!(public.status, 200, "{}", public.json());
    assert_eq!(ids(&public.json()), [mine]);
}

// ---------------------------------------------------------------------------------------------
// List, domain-key form (D3.4)
// ---------------------------------------------------------------------------------------------

async fn a_public_key_sees_only_approved_campaigns_without_metadata(b: Backend) {
    let app = spawn(b).await;
    create(&app, with(body("Draft Night"), json!({ "metadata": { "secret": "internal" } }))).await;
    create_in(&app, "Pending Night", "pending_approval").await;
    let approved = create(
        &app,
        with(body("Approved Night"), json!({ "status": "approved", "metadata": { "secret": "internal" } })),
    )
    .await["id"]
        .as_str()
        .expect("id")
        .to_string();
    let r = app.public_get(CAMPAIGNS, &app.account.public, &app.account.domain).await;
    let resp = r.json();
    assert_eq!(r.status, 200, "{resp}");
    assert_eq!(resp["success"], true);
    assert_eq!(ids(&resp), [approved.as_str()]);
    assert_eq!(resp["pagination"]["total"], 1);
    let item = &resp["data"][0];
    assert!(item.get("metadata").is_none(), "no metadata for browser keys: {item}");
    assert_eq!(item["title"], "Approved Night");
    assert_eq!(item["status"], "approved");
    assert_eq!(item["campaign_type"], "ticketing");
    // Asking for drafts through the public key shows nothing.
    let r = app.public_get(&format!("{CAMPAIGNS}?status=draft"), &app.account.public, &app.account.domain).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["pagination"]["total"], 0);
    // Archiving removes it from the public list.
    let _: Value = app.api().patch(&at(&approved), &json!({ "status": "archived" }), StatusCode::OK).await;
    let r = app.public_get(CAMPAIGNS, &app.account.public, &app.account.domain).await;
    assert_eq!(ids(&r.json()), Vec::<String>::new());
}

async fn a_campaign_key_sees_only_its_own_campaign_and_only_when_approved(b: Backend) {
    let app = spawn(b).await;
    let mine = create_in(&app, "Miss Ghana 2027", "pending_approval").await;
    let other = create_in(&app, "Accra Jazz Night", "approved").await;
    let key = app
        .create_key(&app.account.slug, "campaign", Some(&mine), "campaigns:read,tickets:read,settings:read", &[])
        .await;
    let r = app.public_get(CAMPAIGNS, &key, &app.account.domain).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(ids(&r.json()), Vec::<String>::new(), "its campaign is not approved yet; the other is not its own");
    let _: Value = app.api().patch(&at(&mine), &json!({ "status": "approved" }), StatusCode::OK).await;
    let r = app.public_get(CAMPAIGNS, &key, &app.account.domain).await;
    let resp = r.json();
    assert_eq!(r.status, 200, "{resp}");
    assert_eq!(ids(&resp), [mine.as_str()]);
    assert_eq!(resp["pagination"]["total"], 1);
    assert!(resp["data"][0].get("metadata").is_none(), "{resp}");
    // The public key of the same account sees both.
    let r = app.public_get(CAMPAIGNS, &app.account.public, &app.account.domain).await;
    let listed: BTreeSet<String> = ids(&r.json()).into_iter().collect();
    assert_eq!(listed, BTreeSet::from([mine, other]));
}

async fn a_campaign_key_on_a_draft_campaign_lists_nothing(b: Backend) {
    let app = spawn(b).await;
    let draft = create_in(&app, "Draft Night", "draft").await;
    create_in(&app, "Approved Night", "approved").await;
    let key = app
        .create_key(&app.account.slug, "campaign", Some(&draft), "campaigns:read,tickets:read,settings:read", &[])
        .await;
    let r = app.public_get(CAMPAIGNS, &key, &app.account.domain).await;
    let resp = r.json();
    assert_eq!(r.status, 200, "{resp}");
    assert_eq!(resp["data"], json!([]));
    assert_eq!(resp["pagination"]["total"], 0);
}

async fn the_config_of_a_campaign_key_shows_campaign_scope_and_its_campaign(b: Backend) {
    let app = spawn(b).await;
    let id = create_in(&app, "Miss Ghana 2027", "approved").await;
    let key = app
        .create_key(&app.account.slug, "campaign", Some(&id), "campaigns:read,tickets:read,settings:read", &[])
        .await;
    let r = app.public_get("/api/white-label/v1/config", &key, &app.account.domain).await;
    let resp = r.json();
    assert_eq!(r.status, 200, "{resp}");
    assert_eq!(resp["data"]["scope"], "campaign");
    assert_eq!(resp["data"]["campaignId"], id.as_str());
    let r = app.public_get("/api/white-label/v1/config", &app.account.public, &app.account.domain).await;
    let resp = r.json();
    assert_eq!(r.status, 200, "{resp}");
    assert_eq!(resp["data"]["scope"], "account");
    assert_eq!(resp["data"]["campaignId"], Value::Null);
}

async fn a_campaign_key_for_another_accounts_campaign_cannot_be_created(b: Backend) {
    let app = spawn(b).await;
    let other = app.new_account("other").await;
    let theirs: Value = app.api_as(&other.private).post(CAMPAIGNS, &body("Their Night"), StatusCode::CREATED).await;
    let their_id = theirs["data"]["id"].as_str().expect("id");
    let out = app.cli(&[
        "admin",
        "key",
        "create",
        "--account",
        &app.account.slug,
        "--kind",
        "campaign",
        "--campaign",
        their_id,
        "--scopes",
        "campaigns:read",
        "--json",
    ]);
    assert!(!out.status.success(), "stdout: {}", String::from_utf8_lossy(&out.stdout));
    assert!(out.stdout.is_empty(), "no key printed: {}", String::from_utf8_lossy(&out.stdout));
    let err: Value = serde_json::from_slice(&out.stderr)
        .unwrap_or_else(|e| panic!("stderr is JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(err["code"], "not_found", "{err}");
    // The same through the admin function the CLI wraps.
    let direct = tessera_server::cli::admin::key_create(
        &app.store,
        &app.keyring,
        &app.account.slug,
        "campaign",
        Some(their_id),
        "campaigns:read",
        &[],
    )
    .await;
    assert_eq!(direct.map_err(|e| e.code).err(), Some("not_found"));
    // Its owner can.
    let key = app.create_key(&other.slug, "campaign", Some(their_id), "campaigns:read", &[]).await;
    assert!(key.key_id.starts_with("wl_cmp_"), "{}", key.key_id);
}

// ---------------------------------------------------------------------------------------------
// Audit
// ---------------------------------------------------------------------------------------------

fn audit_entries(out: &std::process::Output) -> Vec<Value> {
    assert!(out.status.success(), "audit list: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    v["entries"].as_array().expect("entries").clone()
}

async fn create_update_and_status_change_are_audited_with_key_and_request_id(b: Backend) {
    let app = spawn(b).await;
    let created = call(&app, Method::POST, CAMPAIGNS, Some(body("Accra Jazz Night"))).await;
    assert_eq!(created.status, 201, "{}", created.json());
    let id = created.json()["data"]["id"].as_str().expect("id").to_string();
    let updated = call(&app, Method::PATCH, &at(&id), Some(json!({ "title": "Accra Jazz Night II" }))).await;
    assert_eq!(updated.status, 200, "{}", updated.json());
    let moved = call(&app, Method::PATCH, &at(&id), Some(json!({ "status": "pending_approval" }))).await;
    assert_eq!(moved.status, 200, "{}", moved.json());
    // A refused change leaves no trace.
    let refused = call(&app, Method::PATCH, &at(&id), Some(json!({ "status": "archived", "title": "ab" }))).await;
    assert_eq!(refused.status, 400, "{}", refused.json());

    let out = app.cli(&["admin", "audit", "list", "--account", &app.account.slug, "--json"]);
    let mut entries: Vec<Value> = audit_entries(&out).into_iter().filter(|e| e["entityId"] == id.as_str()).collect();
    entries.reverse(); // oldest first
    let actions: Vec<&str> = entries.iter().map(|e| e["action"].as_str().expect("action")).collect();
    assert_eq!(actions, ["campaign.created", "campaign.updated", "campaign.status_changed"], "{entries:?}");
    for (entry, r) in entries.iter().zip([&created, &updated, &moved]) {
        assert_eq!(entry["entityType"], "campaign", "{entry}");
        assert_eq!(entry["keyId"], app.account.private.key_id.as_str(), "{entry}");
        let rid = request_id_header(r);
        assert_eq!(entry["requestId"], rid.as_str(), "{entry}");
        assert_eq!(r.json()["requestId"], rid.as_str());
    }
    assert_eq!(entries[1]["summary"]["after"]["title"], "Accra Jazz Night II", "{}", entries[1]);
    assert_eq!(entries[2]["summary"]["before"]["status"], "draft", "{}", entries[2]);
    assert_eq!(entries[2]["summary"]["after"]["status"], "pending_approval", "{}", entries[2]);
}

/// List pages are served as rendered while the database is unchanged (SQLite), so a list must
/// show every change the moment it commits: through the API, through a ticket type (which moves
/// `updatedAt`), and through a write the server did not make (another process, as the operator
/// CLI is), here a raw UPDATE on a connection of its own.
async fn a_list_shows_every_committed_change_at_once_even_from_another_connection(b: Backend) {
    let app = spawn(b).await;
    let first = create_in(&app, "First of the list", "draft").await;
    let before = list(&app, "?limit=5").await;
    assert_eq!(titles(&before), ["First of the list"]);
    // The same page again: the same answer, with its own request id.
    let again = list(&app, "?limit=5").await;
    assert_eq!(again["data"], before["data"]);
    assert_eq!(again["pagination"], before["pagination"]);
    assert_ne!(again["requestId"], before["requestId"]);

    create_in(&app, "Second of the list", "draft").await;
    let after_create = list(&app, "?limit=5").await;
    assert_eq!(titles(&after_create), ["Second of the list", "First of the list"]);
    assert_eq!(after_create["pagination"]["total"], 2);

    // A write on a connection the server does not own.
    let other = sqlx::AnyPool::connect(&app.database_url).await.expect("second connection");
    sqlx::query("UPDATE campaigns SET title = $1 WHERE id = $2")
        .bind("Renamed elsewhere")
        .bind(&first)
        .execute(&other)
        .await
        .expect("outside update");
    other.close().await;
    let after_outside = list(&app, "?limit=5").await;
    assert_eq!(titles(&after_outside), ["Second of the list", "Renamed elsewhere"]);
    // Another page size is another page.
    assert_eq!(titles(&list(&app, "?limit=1").await), ["Second of the list"]);
}

on_both!(
    a_list_shows_every_committed_change_at_once_even_from_another_connection,
    creating_a_campaign_returns_201_with_id_title_type_draft_status_and_a_slug_from_the_title,
    a_second_campaign_with_the_same_title_gets_a_numbered_slug,
    concurrent_creations_with_the_same_title_all_succeed_with_distinct_slugs,
    a_status_supplied_on_create_stands,
    boundary_lengths_and_depths_are_accepted,
    title_rules_are_400_naming_title,
    description_rules_are_400_naming_description,
    campaign_type_rules_are_400_naming_campaign_type,
    date_rules_are_400_naming_the_date,
    slug_rules_are_400_naming_slug,
    voting_campaigns_need_a_positive_vote_price_with_at_most_two_decimals,
    metadata_must_be_a_bounded_object,
    an_unknown_status_on_create_is_400_naming_status,
    an_unknown_field_is_400_naming_that_field,
    a_field_of_the_wrong_type_is_400_naming_that_field,
    a_body_that_is_not_a_json_object_is_400_malformed_json,
    several_broken_fields_are_all_named_in_one_400,
    a_chosen_slug_taken_in_the_account_is_409_but_free_in_another_account,
    creating_without_campaigns_write_is_403_insufficient_scope,
    listing_without_campaigns_read_is_403_insufficient_scope,
    reading_a_campaign_returns_the_whole_record,
    reading_another_accounts_campaign_is_404,
    reading_an_unknown_or_malformed_campaign_id_is_404,
    patching_a_title_updates_only_the_title,
    patching_other_fields_applies_them,
    patch_validation_follows_the_create_rules,
    patching_to_a_slug_taken_in_the_account_is_409,
    patching_another_accounts_or_an_unknown_campaign_is_404,
    patching_without_campaigns_write_is_403_insufficient_scope,
    every_legal_status_move_is_accepted,
    a_campaign_walks_the_whole_moderation_path,
    every_illegal_status_move_is_409_invalid_transition,
    a_validation_error_wins_over_an_illegal_move,
    concurrent_approvals_of_one_campaign_end_approved,
    racing_approve_and_reject_leaves_exactly_one_outcome,
    the_signed_list_shows_every_status_of_the_account,
    the_list_pages_newest_first,
    bad_list_parameters_are_400_naming_the_parameter,
    the_status_filter_shows_only_that_status,
    search_matches_title_case_insensitively_and_slug,
    search_wildcards_are_literal,
    another_accounts_campaigns_never_appear_in_the_list,
    a_public_key_sees_only_approved_campaigns_without_metadata,
    a_campaign_key_sees_only_its_own_campaign_and_only_when_approved,
    a_campaign_key_on_a_draft_campaign_lists_nothing,
    the_config_of_a_campaign_key_shows_campaign_scope_and_its_campaign,
    a_campaign_key_for_another_accounts_campaign_cannot_be_created,
    create_update_and_status_change_are_audited_with_key_and_request_id,
);

//! Integration tests: participants (voting nominees, D3.7): create and the signed list.
use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::catalogue::{create_campaign, create_campaign_as};
use crate::support::client::{assert_error, assert_invalid, names, send, send_default, strings, with, StatusCode};
use crate::support::server::{key_with, spawn, Backend, TestApp};

const PARTICIPANTS: &str = "/api/white-label/v1/participants";

/// Creates a participant (201 asserted) and returns its `data`.
async fn create(app: &TestApp, body: Value) -> Value {
    let (s, b) = app.signed(Method::POST, PARTICIPANTS, Some(body)).await;
    assert_eq!(s, 201, "participant create: {b}");
    b["data"].clone()
}

async fn list(app: &TestApp, query: &str) -> Value {
    let (s, b) = app.signed(Method::GET, &format!("{PARTICIPANTS}{query}"), None).await;
    assert_eq!(s, 200, "list {query}: {b}");
    assert_eq!(b["success"], true);
    b
}

async fn a_participant_is_created_active_with_no_votes_and_a_generated_code(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "voting", "draft").await;
    let (s, body) = app.signed(Method::POST, PARTICIPANTS, Some(json!({"campaignId": c, "name": "Ama Mensah"}))).await;
    assert_eq!(s, 201, "{body}");
    assert!(body["requestId"].is_string());
    let p = &body["data"];
    assert!(uuid::Uuid::try_parse(p["id"].as_str().expect("id")).is_ok(), "{p}");
    assert_eq!(p["campaignId"], c.as_str());
    assert_eq!(p["name"], "Ama Mensah");
    assert_eq!(p["code"], "001");
    assert_eq!(p["status"], "active");
    assert_eq!(p["votes"], 0);
    let second = create(&app, json!({"campaignId": c, "name": "Kofi Boateng"})).await;
    assert_eq!(second["code"], "002");
    // Every optional field.
    let full = create(
        &app,
        json!({"campaignId": c, "name": "Esi", "code": "esi7", "description": "Nominee", "imageUrl": "https://cdn.example.com/esi.png", "status": "hidden"}),
    )
    .await;
    assert_eq!(full["code"], "ESI7");
    assert_eq!(full["description"], "Nominee");
    assert_eq!(full["imageUrl"], "https://cdn.example.com/esi.png");
    assert_eq!(full["status"], "hidden");
}

async fn a_given_code_is_upper_cased_and_unique_per_campaign(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "voting", "draft").await;
    let other = create_campaign(&app, "voting", "draft").await;
    let p = create(&app, json!({"campaignId": c, "name": "A", "code": "ab1"})).await;
    assert_eq!(p["code"], "AB1");
    for code in ["AB1", "ab1", " Ab1 "] {
        let r =
            send_default(&app, Method::POST, PARTICIPANTS, Some(json!({"campaignId": c, "name": "B", "code": code})))
                .await;
        assert_error(&r, 409, "conflict");
    }
    // The same code in another campaign is fine.
    let q = create(&app, json!({"campaignId": other, "name": "B", "code": "AB1"})).await;
    assert_eq!(q["code"], "AB1");
    assert_eq!(q["campaignId"], other.as_str());
    // The refused duplicates were not stored.
    let listed = list(&app, &format!("?campaignId={c}")).await;
    assert_eq!(listed["pagination"]["total"], 1, "{listed}");
}

async fn a_generated_code_skips_codes_already_taken(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "voting", "draft").await;
    assert_eq!(create(&app, json!({"campaignId": c, "name": "A"})).await["code"], "001");
    assert_eq!(create(&app, json!({"campaignId": c, "name": "B", "code": "003"})).await["code"], "003");
    assert_eq!(create(&app, json!({"campaignId": c, "name": "C"})).await["code"], "004");
    assert_eq!(create(&app, json!({"campaignId": c, "name": "D"})).await["code"], "005");
}

async fn each_broken_participant_rule_is_a_400_naming_its_field(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "voting", "draft").await;
    let base = json!({"campaignId": c, "name": "Ama"});
    let cases: Vec<(&str, Value, &str)> = vec![
        ("campaignId", Value::Null, "campaignId"),
        ("name", Value::Null, "name"),
        ("name", json!(""), "name"),
        ("code", json!("A-1"), "code"),
        ("code", json!("ABCDEFGHIJKLMNOPQ"), "code"),
        ("imageUrl", json!("http://x"), "imageUrl"),
        ("status", json!("winner"), "status"),
        ("votes", json!(100), "votes"),
    ];
    for (key, value, field) in cases {
        eprintln!("{key} = {value}");
        let r = send_default(&app, Method::POST, PARTICIPANTS, Some(with(&base, key, value))).await;
        assert_invalid(&r, &[field]);
    }
    let listed = list(&app, &format!("?campaignId={c}")).await;
    assert_eq!(listed["pagination"]["total"], 0, "{listed}");
}

async fn participants_need_a_voting_campaign_of_the_account(b: Backend) {
    let app = spawn(b).await;
    let ticketing = create_campaign(&app, "ticketing", "draft").await;
    let r = send_default(&app, Method::POST, PARTICIPANTS, Some(json!({"campaignId": ticketing, "name": "A"}))).await;
    assert_error(&r, 409, "conflict");
    let archived = create_campaign(&app, "voting", "archived").await;
    let r = send_default(&app, Method::POST, PARTICIPANTS, Some(json!({"campaignId": archived, "name": "A"}))).await;
    assert_error(&r, 409, "conflict");
    let other = app.new_account("other").await;
    let theirs = create_campaign_as(&app, &other.private, "voting", "approved").await;
    let r = send_default(&app, Method::POST, PARTICIPANTS, Some(json!({"campaignId": theirs, "name": "A"}))).await;
    assert_error(&r, 404, "not_found");
    let r =
        send_default(&app, Method::POST, PARTICIPANTS, Some(json!({"campaignId": "not-a-uuid", "name": "A"}))).await;
    assert_error(&r, 404, "not_found");
    // Nothing reached the other account's campaign.
    let (s, b) = app.signed_as(&other.private, Method::GET, &format!("{PARTICIPANTS}?campaignId={theirs}"), None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["pagination"]["total"], 0, "{b}");
}

async fn participant_routes_need_their_campaign_scopes(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "voting", "draft").await;
    let read_only = key_with(&app, "private", None, "campaigns:read").await;
    let r = send(&app, &read_only, Method::POST, PARTICIPANTS, Some(json!({"campaignId": c, "name": "A"}))).await;
    assert_error(&r, 403, "insufficient_scope");
    let write_only = key_with(&app, "private", None, "campaigns:write").await;
    let r = send(&app, &write_only, Method::GET, PARTICIPANTS, None).await;
    assert_error(&r, 403, "insufficient_scope");
    // Each key can do what its scope allows.
    let r = send(&app, &write_only, Method::POST, PARTICIPANTS, Some(json!({"campaignId": c, "name": "A"}))).await;
    assert_eq!(r.status, 201, "{}", r.json());
    let r = send(&app, &read_only, Method::GET, PARTICIPANTS, None).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["pagination"]["total"], 1);
}

async fn the_participant_list_filters_by_campaign_search_and_status(b: Backend) {
    let app = spawn(b).await;
    let c1 = create_campaign(&app, "voting", "approved").await;
    let c2 = create_campaign(&app, "voting", "draft").await;
    create(&app, json!({"campaignId": c1, "name": "Ama Mensah", "code": "AMA"})).await;
    create(&app, json!({"campaignId": c1, "name": "Kofi Boateng", "code": "K22"})).await;
    create(&app, json!({"campaignId": c1, "name": "Yaw Mensah", "status": "eliminated"})).await;
    create(&app, json!({"campaignId": c2, "name": "Abena Owusu", "status": "hidden"})).await;

    let all = list(&app, "").await;
    assert_eq!(names(&all["data"]), strings(&["Abena Owusu", "Ama Mensah", "Kofi Boateng", "Yaw Mensah"]));
    assert_eq!(all["pagination"], json!({"page": 1, "limit": 20, "total": 4, "hasMore": false}));

    let by_campaign = list(&app, &format!("?campaignId={c2}")).await;
    assert_eq!(names(&by_campaign["data"]), strings(&["Abena Owusu"]));
    assert_eq!(by_campaign["data"][0]["campaignId"], c2.as_str());

    let search = list(&app, "?search=mENSAH").await;
    assert_eq!(names(&search["data"]), strings(&["Ama Mensah", "Yaw Mensah"]));
    assert_eq!(search["pagination"]["total"], 2);
    let by_code = list(&app, "?search=k22").await;
    assert_eq!(names(&by_code["data"]), strings(&["Kofi Boateng"]));
    let nothing = list(&app, "?search=zzz").await;
    assert_eq!(nothing["data"], json!([]));
    assert_eq!(nothing["pagination"]["total"], 0);

    let eliminated = list(&app, "?status=eliminated").await;
    assert_eq!(names(&eliminated["data"]), strings(&["Yaw Mensah"]));
    let active_in_c1 = list(&app, &format!("?campaignId={c1}&status=active&search=a")).await;
    assert_eq!(names(&active_in_c1["data"]), strings(&["Ama Mensah", "Kofi Boateng"]));

    // Pagination: newest first, two per page.
    let p1 = list(&app, "?limit=2").await;
    assert_eq!(names(&p1["data"]), strings(&["Abena Owusu", "Yaw Mensah"]));
    assert_eq!(p1["data"][0]["name"], "Abena Owusu", "newest first: {p1}");
    assert_eq!(p1["pagination"], json!({"page": 1, "limit": 2, "total": 4, "hasMore": true}));
    let p2 = list(&app, "?limit=2&page=2").await;
    assert_eq!(names(&p2["data"]), strings(&["Ama Mensah", "Kofi Boateng"]));
    assert_eq!(p2["data"][1]["name"], "Ama Mensah", "oldest last: {p2}");
    assert_eq!(p2["pagination"], json!({"page": 2, "limit": 2, "total": 4, "hasMore": false}));
    let p3 = list(&app, "?limit=2&page=3").await;
    assert_eq!(p3["data"], json!([]));
    assert_eq!(p3["pagination"]["total"], 4);
}

async fn the_participant_list_rejects_bad_filters_and_foreign_campaigns(b: Backend) {
    let app = spawn(b).await;
    let r = send_default(&app, Method::GET, &format!("{PARTICIPANTS}?status=bogus"), None).await;
    assert_invalid(&r, &["status"]);
    let r = send_default(&app, Method::GET, &format!("{PARTICIPANTS}?limit=0"), None).await;
    assert_invalid(&r, &["limit"]);
    let r = send_default(&app, Method::GET, &format!("{PARTICIPANTS}?sort=name"), None).await;
    assert_invalid(&r, &["sort"]);
    let other = app.new_account("other").await;
    let theirs = create_campaign_as(&app, &other.private, "voting", "approved").await;
    let _: Value = app
        .api_as(&other.private)
        .post(PARTICIPANTS, &json!({"campaignId": theirs, "name": "Their nominee"}), StatusCode::CREATED)
        .await;
    let r = send_default(&app, Method::GET, &format!("{PARTICIPANTS}?campaignId={theirs}"), None).await;
    assert_error(&r, 404, "not_found");
    let r = send_default(&app, Method::GET, &format!("{PARTICIPANTS}?campaignId=nope"), None).await;
    assert_error(&r, 404, "not_found");
}

async fn participants_of_another_account_never_appear(b: Backend) {
    let app = spawn(b).await;
    let mine = create_campaign(&app, "voting", "approved").await;
    create(&app, json!({"campaignId": mine, "name": "Mine Mensah"})).await;
    let other = app.new_account("other").await;
    let theirs = create_campaign_as(&app, &other.private, "voting", "approved").await;
    for name in ["Theirs Mensah", "Theirs Two"] {
        let _: Value = app
            .api_as(&other.private)
            .post(PARTICIPANTS, &json!({"campaignId": theirs, "name": name}), StatusCode::CREATED)
            .await;
    }
    for query in ["", "?search=mensah", "?status=active", "?search=theirs"] {
        let listed = list(&app, query).await;
        let got = names(&listed["data"]);
        assert!(got.iter().all(|n| !n.starts_with("Theirs")), "{query}: {got:?}");
        assert_eq!(listed["pagination"]["total"].as_u64(), Some(got.len() as u64), "{query}");
    }
    assert_eq!(names(&list(&app, "").await["data"]), strings(&["Mine Mensah"]));
    let (_, theirs_list) = app.signed_as(&other.private, Method::GET, PARTICIPANTS, None).await;
    assert_eq!(names(&theirs_list["data"]), strings(&["Theirs Mensah", "Theirs Two"]));
}

// ---------------------------------------------------------------------------------------------
// PATCH /participants/:id (D17.15)

fn participant_path(id: &str) -> String {
    format!("{PARTICIPANTS}/{id}")
}

async fn a_participant_patch_changes_only_the_fields_given(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "voting", "draft").await;
    let p = create(&app, json!({"campaignId": c, "name": "Ama Mensah", "code": "AMA"})).await;
    let id = p["id"].as_str().expect("id");
    let body =
        json!({"name": "Ama K. Mensah", "description": "Nominee", "imageUrl": "https://cdn.example.com/ama.png"});
    let r = send_default(&app, Method::PATCH, &participant_path(id), Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let d = &r.json()["data"];
    assert_eq!(
        (d["id"].as_str(), d["name"].as_str(), d["code"].as_str()),
        (Some(id), Some("Ama K. Mensah"), Some("AMA"))
    );
    assert_eq!(
        (d["description"].as_str(), d["imageUrl"].as_str()),
        (Some("Nominee"), Some("https://cdn.example.com/ama.png"))
    );
    assert_eq!((d["status"].as_str(), d["votes"].as_i64()), (Some("active"), Some(0)));
    let r = send_default(&app, Method::PATCH, &participant_path(id), Some(json!({"status": "eliminated"}))).await;
    assert_eq!(r.json()["data"]["status"], "eliminated", "{}", r.json());
    assert_eq!(r.json()["data"]["name"], "Ama K. Mensah");
    // The new name is searchable.
    assert_eq!(names(&list(&app, "?search=k.%20mensah").await["data"]), strings(&["Ama K. Mensah"]));
    let entries = crate::support::server::audit_actions(&app, id);
    let actions: Vec<&str> = entries.iter().map(|e| e["action"].as_str().unwrap_or("")).collect();
    assert_eq!(actions, ["participant.status_changed", "participant.updated", "participant.created"]);
    assert_eq!(entries[0]["summary"]["after"]["status"], "eliminated", "{}", entries[0]);
    assert_eq!(entries[1]["summary"]["before"]["name"], "Ama Mensah", "{}", entries[1]);
}

async fn each_broken_participant_patch_rule_is_a_400_naming_its_field(b: Backend) {
    let app = spawn(b).await;
    let c = create_campaign(&app, "voting", "draft").await;
    let id = create(&app, json!({"campaignId": c, "name": "Ama"})).await["id"].as_str().expect("id").to_string();
    let cases: Vec<(Value, &str)> = vec![
        (json!({"name": " "}), "name"),
        (json!({"name": "n".repeat(256)}), "name"),
        (json!({"description": "d".repeat(5001)}), "description"),
        (json!({"imageUrl": "http://cdn.example.com/a.png"}), "imageUrl"),
        (json!({"status": "gone"}), "status"),
        (json!({"code": "NEW"}), "code"),
        (json!({"votes": 9}), "votes"),
    ];
    for (body, field) in cases {
        let r = send_default(&app, Method::PATCH, &participant_path(&id), Some(body.clone())).await;
        eprintln!("{body}");
        assert_invalid(&r, &[field]);
    }
    let r = send_default(&app, Method::PATCH, &participant_path(&id), Some(json!({"name": "", "status": "x"}))).await;
    assert_invalid(&r, &["name", "status"]);
    assert_eq!(names(&list(&app, "").await["data"]), strings(&["Ama"]));
}

async fn a_participant_patch_of_another_account_a_bad_id_or_without_campaigns_write_is_refused(b: Backend) {
    let app = spawn(b).await;
    let other = app.new_account("other").await;
    let theirs_c = create_campaign_as(&app, &other.private, "voting", "draft").await;
    let t: Value = app
        .api_as(&other.private)
        .post(PARTICIPANTS, &json!({"campaignId": theirs_c, "name": "Theirs"}), StatusCode::CREATED)
        .await;
    let theirs = t["data"]["id"].as_str().expect("id").to_string();
    for id in [theirs.as_str(), "not-a-uuid", &uuid::Uuid::now_v7().to_string()] {
        let r = send_default(&app, Method::PATCH, &participant_path(id), Some(json!({"status": "hidden"}))).await;
        assert_error(&r, 404, "not_found");
    }
    let c = create_campaign(&app, "voting", "draft").await;
    let id = create(&app, json!({"campaignId": c, "name": "Ama"})).await["id"].as_str().expect("id").to_string();
    let key = key_with(&app, "private", None, "campaigns:read,tickets:write").await;
    let r = send(&app, &key, Method::PATCH, &participant_path(&id), Some(json!({"status": "hidden"}))).await;
    assert_error(&r, 403, "insufficient_scope");
}

async fn hidden_or_eliminated_participants_take_no_votes(b: Backend) {
    use crate::support::catalogue::{participant, running_campaign};
    use crate::support::payments::{initialize, spawn_paid};
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "voting").await;
    let nominee = participant(&p, &p.account.private, &c).await;
    let vote = json!({
        "transactionType": "vote", "amount": 2, "email": "fan@example.com", "phoneNumber": "0241234567",
        "callbackUrl": format!("https://{}/voted", p.account.domain), "metadata": {"campaignId": c, "participantId": nominee},
    });
    for status in ["hidden", "eliminated"] {
        let r = send_default(&p, Method::PATCH, &participant_path(&nominee), Some(json!({"status": status}))).await;
        assert_eq!(r.status, 200, "{}", r.json());
        assert_error(&initialize(&p, vote.clone()).await, 409, "participant_not_votable");
    }
    let r = send_default(&p, Method::PATCH, &participant_path(&nominee), Some(json!({"status": "active"}))).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let r = initialize(&p, vote).await;
    assert_eq!(r.status, 200, "{}", r.json());
}

on_both!(
    a_participant_is_created_active_with_no_votes_and_a_generated_code,
    a_given_code_is_upper_cased_and_unique_per_campaign,
    a_generated_code_skips_codes_already_taken,
    each_broken_participant_rule_is_a_400_naming_its_field,
    participants_need_a_voting_campaign_of_the_account,
    participant_routes_need_their_campaign_scopes,
    the_participant_list_filters_by_campaign_search_and_status,
    the_participant_list_rejects_bad_filters_and_foreign_campaigns,
    participants_of_another_account_never_appear,
    a_participant_patch_changes_only_the_fields_given,
    each_broken_participant_patch_rule_is_a_400_naming_its_field,
    a_participant_patch_of_another_account_a_bad_id_or_without_campaigns_write_is_refused,
    hidden_or_eliminated_participants_take_no_votes,
);

//! Integration tests: the reseller console (spec "Reseller portal routes"; D10.2–4, D15.2–4,
//! D16.14–19): profile moves, members and invitations, permissions, approval requests and their
//! effects, OTP challenges; on SQLite and PostgreSQL.
use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::catalogue::{running_campaign, ticket_type};
use crate::support::client::{detail_fields, StatusCode};
use crate::support::mail::mailed_code;
use crate::support::payments::{buy, sandbox_settle, PayApp};
use crate::support::portal::{call, mint, portal_error, portal_ok, reseller, sign_in, spawn_reseller, CONSOLE};
use crate::support::server::{drain, Backend};

const PROFILE: &str = "/api/white-label/portal/reseller/profile";
const MEMBERS: &str = "/api/white-label/portal/reseller/members";
const APPROVALS: &str = "/api/white-label/portal/reseller/approval-requests";
const OTP_SEND: &str = "/api/white-label/portal/reseller/otp/send";
const OTP_VERIFY: &str = "/api/white-label/portal/reseller/otp/verify";

fn email(prefix: &str) -> String {
    format!("{prefix}-{}@team.example.com", uuid::Uuid::now_v7().simple())
}

async fn patch_profile(p: &PayApp, token: &str, body: Value) -> tessera_client::RawResponse {
    call(p, Some(token), Method::PATCH, PROFILE, Some(body)).await
}

/// Invites `email` with `body` extras as the owner; the member's id.
async fn invite(p: &PayApp, token: &str, mail: &str, extra: Value) -> String {
    let mut body = json!({"email": mail});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let r = call(p, Some(token), Method::POST, MEMBERS, Some(body)).await;
    let m = portal_ok(&r, 201);
    assert_eq!(m["status"], "pending");
    m["id"].as_str().expect("id").to_string()
}

/// An active member signed in with `extra` (roles, permissions): (member id, token).
async fn member(p: &PayApp, owner_token: &str, extra: Value) -> (String, String) {
    let mail = email("m");
    let id = invite(p, owner_token, &mail, extra).await;
    let token = sign_in(p, &mail).await;
    (id, token)
}

async fn member_patch(p: &PayApp, token: &str, id: &str, body: Value) -> tessera_client::RawResponse {
    call(p, Some(token), Method::PATCH, &format!("{MEMBERS}/{id}"), Some(body)).await
}

async fn profile_moves_follow_d10_2_and_only_the_operator_lifts_a_suspension(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    // Validation first: each field named.
    let r = patch_profile(&p, &t, json!({"status": "paused"})).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["status"]);
    let r = patch_profile(&p, &t, json!({"riskLevel": "extreme", "settings": "x"})).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["riskLevel", "settings"]);
    let r = patch_profile(&p, &t, json!({"allowPublicSignup": "yes"})).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["allowPublicSignup"]);
    let r = patch_profile(&p, &t, json!({"plan": "gold"})).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["plan"]);
    let r = patch_profile(&p, &t, json!({})).await;
    portal_error(&r, 400, "validation_failed");
    // draft → enabled, with the other fields.
    let body = json!({"status": "enabled", "requireSubCreatorApproval": true, "allowPublicSignup": true, "riskLevel": "medium", "settings": {"payoutDay": "friday"}});
    let d = portal_ok(&patch_profile(&p, &t, body).await, 200);
    assert_eq!(d["status"], "enabled");
    assert_eq!((d["requireSubCreatorApproval"].clone(), d["allowPublicSignup"].clone()), (json!(true), json!(true)));
    assert_eq!(d["riskLevel"], "medium");
    assert_eq!(d["settings"], json!({"payoutDay": "friday"}));
    // Illegal moves: 409 invalid_transition.
    portal_error(&patch_profile(&p, &t, json!({"status": "draft"})).await, 409, "invalid_transition");
    assert_eq!(portal_ok(&patch_profile(&p, &t, json!({"status": "suspended"})).await, 200)["status"], "suspended");
    portal_error(&patch_profile(&p, &t, json!({"status": "enabled"})).await, 409, "invalid_transition");
    portal_error(&patch_profile(&p, &t, json!({"status": "draft"})).await, 409, "invalid_transition");
    // Suspended: reads work, member, approval and otp/send writes are 403 account_inactive.
    portal_ok(&call(&p, Some(&t), Method::GET, CONSOLE, None).await, 200);
    let r = call(&p, Some(&t), Method::POST, MEMBERS, Some(json!({"email": email("x")}))).await;
    portal_error(&r, 403, "account_inactive");
    let r = call(&p, Some(&t), Method::POST, APPROVALS, Some(json!({"entityType": "setting"}))).await;
    portal_error(&r, 403, "account_inactive");
    let r = call(
        &p,
        Some(&t),
        Method::POST,
        OTP_SEND,
        Some(json!({"channel": "email", "recipient": owner, "purpose": "login"})),
    )
    .await;
    portal_error(&r, 403, "account_inactive");
    // The operator lifts it (the real CLI; the running server sees it at once).
    let out =
        p.cli(&["admin", "reseller", "set-status", "--account", &p.account.slug, "--status", "enabled", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["status"], "enabled");
    invite(&p, &t, &email("after"), json!({})).await;
    let out = p.cli(&["admin", "reseller", "set-status", "--account", &p.account.slug, "--status", "draft", "--json"]);
    assert!(!out.status.success(), "the operator's statuses are enabled, suspended, disabled");
    // enabled → disabled, which is final for the portal and the operator.
    assert_eq!(portal_ok(&patch_profile(&p, &t, json!({"status": "disabled"})).await, 200)["status"], "disabled");
    for s in ["enabled", "suspended", "draft"] {
        portal_error(&patch_profile(&p, &t, json!({"status": s})).await, 409, "invalid_transition");
    }
    let out =
        p.cli(&["admin", "reseller", "set-status", "--account", &p.account.slug, "--status", "enabled", "--json"]);
    assert!(!out.status.success(), "disabled is final");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("invalid_transition")
            || String::from_utf8_lossy(&out.stderr).contains("cannot move")
    );
    // Suspending a draft is illegal; a second reseller profile for one account is 409.
    let out = p.cli(&[
        "admin",
        "reseller",
        "create",
        "--account",
        &p.account.slug,
        "--owner-email",
        "x@y.example.com",
        "--json",
    ]);
    assert!(!out.status.success());
}

async fn an_invitation_becomes_an_active_member_at_sign_in_and_members_move_per_d15_2(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    let mail = email("kofi");
    let id = invite(&p, &t, &mail, json!({"memberType": "finance", "displayName": "Kofi", "roles": ["finance"]})).await;
    let console = portal_ok(&call(&p, Some(&t), Method::GET, CONSOLE, None).await, 200);
    let inv = console["invitations"].as_array().expect("invitations");
    assert_eq!(inv.len(), 1);
    assert_eq!(
        (inv[0]["id"].as_str(), inv[0]["email"].as_str(), inv[0]["userId"].clone()),
        (Some(id.as_str()), Some(mail.as_str()), Value::Null)
    );
    // Sign-in with the invited e-mail activates it.
    let kofi = sign_in(&p, &mail).await;
    let console = portal_ok(&call(&p, Some(&kofi), Method::GET, CONSOLE, None).await, 200);
    assert_eq!(console["invitations"], json!([]));
    let me = console["members"]
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["id"] == id.as_str())
        .cloned()
        .expect("member");
    assert_eq!(me["status"], "active");
    assert!(me["userId"].is_string());
    assert_eq!(me["memberType"], "finance");
    // active → suspended: its sessions end at once, for good.
    let d = portal_ok(&member_patch(&p, &t, &id, json!({"status": "suspended"})).await, 200);
    assert_eq!((d["id"].as_str(), d["status"].as_str()), (Some(id.as_str()), Some("suspended")));
    portal_error(&call(&p, Some(&kofi), Method::GET, CONSOLE, None).await, 401, "missing_auth");
    portal_ok(&member_patch(&p, &t, &id, json!({"status": "active"})).await, 200);
    portal_error(&call(&p, Some(&kofi), Method::GET, CONSOLE, None).await, 401, "missing_auth");
    let again = sign_in_later(&p, &mail).await;
    portal_ok(&call(&p, Some(&again), Method::GET, CONSOLE, None).await, 200);
    // Illegal moves: 409.
    portal_error(&member_patch(&p, &t, &id, json!({"status": "pending"})).await, 409, "invalid_transition");
    portal_ok(&member_patch(&p, &t, &id, json!({"status": "revoked"})).await, 200);
    portal_error(&call(&p, Some(&again), Method::GET, CONSOLE, None).await, 401, "missing_auth");
    for s in ["active", "suspended", "pending"] {
        portal_error(&member_patch(&p, &t, &id, json!({"status": s})).await, 409, "invalid_transition");
    }
    let pending = invite(&p, &t, &email("p"), json!({})).await;
    portal_error(&member_patch(&p, &t, &pending, json!({"status": "suspended"})).await, 409, "invalid_transition");
    // The owner member cannot be changed through the portal.
    let owner_id =
        console["members"].as_array().expect("m").iter().find(|m| m["memberType"] == "owner").expect("owner")["id"]
            .as_str()
            .expect("id")
            .to_string();
    portal_error(&member_patch(&p, &t, &owner_id, json!({"displayName": "Boss"})).await, 409, "conflict");
    portal_error(&member_patch(&p, &t, &owner_id, json!({"status": "suspended"})).await, 409, "conflict");
    // Validation.
    let r = call(&p, Some(&t), Method::POST, MEMBERS, Some(json!({"displayName": "Nobody"}))).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["email"]);
    let r = call(
        &p,
        Some(&t),
        Method::POST,
        MEMBERS,
        Some(json!({"email": email("v"), "roles": ["king"], "memberType": "owner", "userId": "x"})),
    )
    .await;
    let mut fields = detail_fields(&portal_error(&r, 400, "validation_failed"));
    fields.sort();
    assert_eq!(fields, vec!["memberType", "roles[0]", "userId"]);
    let r =
        call(&p, Some(&t), Method::POST, MEMBERS, Some(json!({"email": email("v"), "permissions": ["everything"]})))
            .await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["permissions[0]"]);
    let r = call(&p, Some(&t), Method::POST, MEMBERS, Some(json!({"email": email("v"), "team": "a"}))).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["team"]);
    let r = member_patch(&p, &t, &pending, json!({"status": "gone"})).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["status"]);
    let r = call(&p, Some(&t), Method::POST, MEMBERS, Some(json!({"userId": uuid::Uuid::now_v7().to_string()}))).await;
    portal_error(&r, 404, "not_found");
    // Inviting the same person twice is 409.
    let r = call(&p, Some(&t), Method::POST, MEMBERS, Some(json!({"email": owner}))).await;
    portal_error(&r, 409, "conflict");
}

/// A second sign-in of one address (past the 60 s resend cooldown).
async fn sign_in_later(p: &PayApp, mail: &str) -> String {
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&p.database_url).await.expect("connect");
    sqlx::query("UPDATE otp_challenges SET created_at = created_at - 120000 WHERE recipient = $1")
        .bind(mail)
        .execute(&mut conn)
        .await
        .expect("sql");
    sign_in(p, mail).await
}

async fn another_resellers_ids_are_404_and_its_people_cannot_be_invited(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    let other = p.new_account("other").await;
    let other_owner = email("other-owner");
    reseller(&p, &other, &other_owner).await;
    let ot = mint(&p, &other_owner).await;
    let their_member = invite(&p, &ot, &email("theirs"), json!({})).await;
    let r = call(&p, Some(&ot), Method::POST, APPROVALS, Some(json!({"entityType": "setting"}))).await;
    let their_request = portal_ok(&r, 201)["id"].as_str().expect("id").to_string();
    portal_error(&member_patch(&p, &t, &their_member, json!({"displayName": "Mine"})).await, 404, "not_found");
    portal_error(&member_patch(&p, &t, "not-a-uuid", json!({"displayName": "Mine"})).await, 404, "not_found");
    let r =
        call(&p, Some(&t), Method::PATCH, &format!("{APPROVALS}/{their_request}"), Some(json!({"status": "approved"})))
            .await;
    portal_error(&r, 404, "not_found");
    let mine = portal_ok(&call(&p, Some(&t), Method::GET, APPROVALS, None).await, 200);
    assert_eq!(mine, json!([]), "another reseller's requests are not listed");
    let console = portal_ok(&call(&p, Some(&t), Method::GET, CONSOLE, None).await, 200);
    assert!(!console.to_string().contains(&their_member));
    // A user belongs to one reseller: the other owner, or the other's invitation, is 409.
    let r = call(&p, Some(&t), Method::POST, MEMBERS, Some(json!({"email": other_owner}))).await;
    let e = portal_error(&r, 409, "conflict");
    assert!(e["error"].as_str().is_some_and(|m| m.contains("another reseller")), "{e}");
}

async fn permissions_follow_d16_14_and_d16_15(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    let (_, viewer) = member(&p, &t, json!({"roles": ["viewer"]})).await;
    let (_, manager) = member(&p, &t, json!({"roles": ["support"], "permissions": ["members:manage"]})).await;
    // Without members:manage: 403.
    let r = call(&p, Some(&viewer), Method::POST, MEMBERS, Some(json!({"email": email("v")}))).await;
    let e = portal_error(&r, 403, "insufficient_scope");
    assert!(e["error"].as_str().is_some_and(|m| m.contains("members:manage")), "{e}");
    // PATCH profile is the admin's.
    portal_error(&patch_profile(&p, &viewer, json!({"riskLevel": "high"})).await, 403, "insufficient_scope");
    portal_error(&patch_profile(&p, &manager, json!({"riskLevel": "high"})).await, 403, "insufficient_scope");
    // members:manage without admin: plain grants yes, privileged ones no.
    invite(&p, &manager, &email("plain"), json!({"roles": ["viewer", "support"], "permissions": ["tickets:write"]}))
        .await;
    for extra in [
        json!({"roles": ["manager"]}),
        json!({"roles": ["finance"]}),
        json!({"roles": ["admin"]}),
        json!({"permissions": ["approvals:decide"]}),
        json!({"permissions": ["withdrawals:approve"]}),
        json!({"permissions": ["members:manage"]}),
    ] {
        let mut body = json!({"email": email("priv")});
        body.as_object_mut().expect("o").extend(extra.as_object().expect("o").clone());
        let r = call(&p, Some(&manager), Method::POST, MEMBERS, Some(body)).await;
        portal_error(&r, 403, "insufficient_scope");
    }
    let target = invite(&p, &t, &email("target"), json!({})).await;
    portal_error(&member_patch(&p, &manager, &target, json!({"roles": ["manager"]})).await, 403, "insufficient_scope");
    portal_ok(&member_patch(&p, &manager, &target, json!({"roles": ["viewer"]})).await, 200);
    // The admin grants anything.
    portal_ok(
        &member_patch(&p, &t, &target, json!({"roles": ["manager"], "permissions": ["withdrawals:approve"]})).await,
        200,
    );
    // otp/send needs notifications:write (support has it, viewer not).
    let body = json!({"channel": "email", "recipient": "ama@example.com", "purpose": "login"});
    portal_error(&call(&p, Some(&viewer), Method::POST, OTP_SEND, Some(body.clone())).await, 403, "insufficient_scope");
    portal_ok(&call(&p, Some(&manager), Method::POST, OTP_SEND, Some(body)).await, 201);
    // Console read and filing a request: any active member.
    portal_ok(&call(&p, Some(&viewer), Method::GET, CONSOLE, None).await, 200);
    portal_ok(&call(&p, Some(&viewer), Method::POST, APPROVALS, Some(json!({"entityType": "setting"}))).await, 201);
}

async fn file(p: &PayApp, token: &str, body: Value) -> String {
    let d = portal_ok(&call(p, Some(token), Method::POST, APPROVALS, Some(body)).await, 201);
    assert_eq!(d["status"], "pending");
    d["id"].as_str().expect("id").to_string()
}

async fn decide(p: &PayApp, token: &str, id: &str, body: Value) -> tessera_client::RawResponse {
    call(p, Some(token), Method::PATCH, &format!("{APPROVALS}/{id}"), Some(body)).await
}

async fn approval_requests_are_four_eyes_and_approval_applies_the_effect(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    let (viewer_id, viewer) = member(&p, &t, json!({"roles": ["viewer"]})).await;
    let (_, manager) = member(&p, &t, json!({"roles": ["manager"]})).await;
    // Validation.
    let r = call(&p, Some(&viewer), Method::POST, APPROVALS, Some(json!({"reason": "x"}))).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["entityType"]);
    let r = call(
        &p,
        Some(&viewer),
        Method::POST,
        APPROVALS,
        Some(json!({"entityType": "spaceship", "requestPayload": []})),
    )
    .await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["entityType", "requestPayload"]);
    let r = call(
        &p,
        Some(&viewer),
        Method::POST,
        APPROVALS,
        Some(json!({"entityType": "member", "requestPayload": {"memberId": 7}})),
    )
    .await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["requestPayload.memberId"]);
    // A member request: the filer may not approve it, a viewer may not decide, the manager may.
    let pending = invite(&p, &t, &email("new"), json!({})).await;
    let id = file(
        &p,
        &manager,
        json!({"entityType": "member", "reason": "New finance lead", "requestPayload": {"memberId": pending}}),
    )
    .await;
    let e = portal_error(&decide(&p, &manager, &id, json!({"status": "approved"})).await, 403, "insufficient_scope");
    assert!(e["error"].as_str().is_some_and(|m| m.contains("own")), "{e}");
    portal_error(&decide(&p, &viewer, &id, json!({"status": "approved"})).await, 403, "insufficient_scope");
    portal_error(&decide(&p, &viewer, &id, json!({"status": "cancelled"})).await, 403, "insufficient_scope");
    let r = decide(&p, &t, &id, json!({"status": "maybe"})).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["status"]);
    let d = portal_ok(&decide(&p, &t, &id, json!({"status": "approved", "note": "welcome"})).await, 200);
    assert_eq!(d["status"], "approved");
    assert_eq!(d["note"], "welcome");
    assert!(d["decidedBy"].is_string() && d["decidedAt"].is_string() && d["requestedBy"].is_string());
    let console = portal_ok(&call(&p, Some(&t), Method::GET, CONSOLE, None).await, 200);
    let activated = console.to_string();
    assert!(activated.contains(&pending));
    let m: Vec<&Value> = console["members"]
        .as_array()
        .into_iter()
        .chain(console["invitations"].as_array())
        .flatten()
        .filter(|m| m["id"] == pending.as_str())
        .collect();
    assert_eq!(m[0]["status"], "active", "approval activated the member");
    portal_error(&decide(&p, &t, &id, json!({"status": "rejected"})).await, 409, "conflict");
    // The requester cancels their own while pending, once.
    let mine = file(&p, &viewer, json!({"entityType": "setting", "reason": "Turn on USSD"})).await;
    let d = portal_ok(&decide(&p, &viewer, &mine, json!({"status": "cancelled"})).await, 200);
    assert_eq!(d["status"], "cancelled");
    portal_error(&decide(&p, &viewer, &mine, json!({"status": "cancelled"})).await, 409, "conflict");
    // A campaign request approves the campaign; an effect that cannot apply is 409 and stays pending.
    let c: Value = p
        .api()
        .post(
            "/api/white-label/v1/campaigns",
            &json!({
            "title": "Harvest Gala", "description": "A campaign waiting for approval.", "campaign_type": "donation",
            "start_date": "2030-01-01T00:00:00Z", "end_date": "2030-02-01T00:00:00Z", "status": "pending_approval"}),
            StatusCode::CREATED,
        )
        .await;
    let campaign = c["data"]["id"].as_str().expect("id").to_string();
    let draft: Value = p
        .api()
        .post(
            "/api/white-label/v1/campaigns",
            &json!({
            "title": "Draft Gala", "description": "A campaign still in draft.", "campaign_type": "donation",
            "start_date": "2030-01-01T00:00:00Z", "end_date": "2030-02-01T00:00:00Z"}),
            StatusCode::CREATED,
        )
        .await;
    let stuck =
        file(&p, &viewer, json!({"entityType": "campaign", "requestPayload": {"campaignId": draft["data"]["id"]}}))
            .await;
    portal_error(&decide(&p, &manager, &stuck, json!({"status": "approved"})).await, 409, "conflict");
    let listed = portal_ok(&call(&p, Some(&t), Method::GET, &format!("{APPROVALS}?status=pending"), None).await, 200);
    assert!(listed.as_array().expect("list").iter().any(|r| r["id"] == stuck.as_str()), "still pending: {listed}");
    let go = file(&p, &viewer, json!({"entityType": "campaign", "requestPayload": {"campaignId": campaign}})).await;
    portal_ok(&decide(&p, &manager, &go, json!({"status": "approved"})).await, 200);
    let shown: Value = p.api().get(&format!("/api/white-label/v1/campaigns/{campaign}"), StatusCode::OK).await;
    assert_eq!(shown["data"]["status"], "approved");
    // Listing: every field of D16.19, the status filter, and its validation.
    let all = portal_ok(&call(&p, Some(&viewer), Method::GET, APPROVALS, None).await, 200);
    let first = &all.as_array().expect("list")[0];
    for f in [
        "id",
        "entityType",
        "status",
        "reason",
        "requestPayload",
        "requestedBy",
        "decidedBy",
        "note",
        "createdAt",
        "decidedAt",
    ] {
        assert!(first.get(f).is_some(), "{f} in {first}");
    }
    let cancelled =
        portal_ok(&call(&p, Some(&viewer), Method::GET, &format!("{APPROVALS}?status=cancelled"), None).await, 200);
    assert_eq!(cancelled.as_array().map(Vec::len), Some(1));
    assert_eq!(cancelled[0]["requestedBy"], viewer_id.as_str());
    let r = call(&p, Some(&viewer), Method::GET, &format!("{APPROVALS}?status=open"), None).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["status"]);
    let r = call(&p, Some(&viewer), Method::GET, &format!("{APPROVALS}?sort=asc"), None).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["sort"]);
}

async fn concurrent_decisions_of_one_request_have_exactly_one_winner(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    let (_, m1) = member(&p, &t, json!({"roles": ["manager"]})).await;
    let (_, m2) = member(&p, &t, json!({"roles": ["manager"]})).await;
    let (_, filer) = member(&p, &t, json!({"roles": ["viewer"]})).await;
    let pending = invite(&p, &t, &email("race"), json!({})).await;
    let id = file(&p, &filer, json!({"entityType": "member", "requestPayload": {"memberId": pending}})).await;
    let mut tasks = Vec::new();
    for i in 0..12 {
        let token = [t.clone(), m1.clone(), m2.clone()][i % 3].clone();
        let status = if i % 2 == 0 { "approved" } else { "rejected" };
        let url = p.url(&format!("{APPROVALS}/{id}"));
        let http = p.http.clone();
        tasks.push(tokio::spawn(async move {
            http.patch(url)
                .bearer_auth(token)
                .json(&json!({"status": status}))
                .send()
                .await
                .expect("send")
                .status()
                .as_u16()
        }));
    }
    let mut codes = Vec::new();
    for task in tasks {
        codes.push(task.await.expect("task"));
    }
    assert_eq!(codes.iter().filter(|c| **c == 200).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 409).count(), 11, "{codes:?}");
    let audit = p.store.audit_entries(&p.account.id, 200).await.expect("audit");
    let decisions = audit
        .iter()
        .filter(|e| e.entity_id == id && e.action.starts_with("approval.") && e.action != "approval.create")
        .count();
    assert_eq!(decisions, 1, "one decision audited");
}

async fn an_approved_withdrawal_request_releases_the_withdrawal_through_the_portal(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    // Funds: one paid ticket of 200 GHS; a key with the withdrawals capability.
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let tt = ticket_type(&p, &p.account.private, &c, 200.0, 5).await;
    let reference = buy(&p, &c, &tt, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    drain(&p).await;
    let key = p
        .create_key(&p.account.slug, "private", None, crate::support::server::ALL_PRIVATE_SCOPES, &["withdrawals"])
        .await;
    let _: Value = p
        .api()
        .patch(
            "/api/white-label/v1/settings/operations",
            &json!({"config": {"withdrawalApprovalAbove": 50}}),
            StatusCode::OK,
        )
        .await;
    let mut extra = reqwest::header::HeaderMap::new();
    extra.insert("x-idempotency-key", "portal-payout-1".parse().expect("header"));
    let body = json!({"amount": 80, "bank_name": "MTN Mobile Money", "bank_code": "MTN", "account_number": "0241234567", "account_name": "Ama Mensah"});
    let r = p
        .client_for(&key)
        .send_raw(
            Method::POST,
            "/api/white-label/v1/withdrawals",
            serde_json::to_vec(&body).expect("json"),
            Some(extra),
        )
        .await
        .expect("send");
    assert_eq!(r.status, 201, "{}", r.json());
    let withdrawal = r.json()["data"]["id"].as_str().expect("id").to_string();
    assert_eq!(r.json()["data"]["status"], "awaiting_approval");
    // The request Tessera filed is in the portal, with no member requester.
    let listed = portal_ok(&call(&p, Some(&t), Method::GET, &format!("{APPROVALS}?status=pending"), None).await, 200);
    let request = listed
        .as_array()
        .expect("list")
        .iter()
        .find(|r| r["requestPayload"]["withdrawalId"] == withdrawal.as_str())
        .cloned()
        .expect("request");
    assert_eq!(request["entityType"], "withdrawal");
    assert_eq!(request["requestedBy"], Value::Null);
    let id = request["id"].as_str().expect("id").to_string();
    // withdrawals:approve decides withdrawal requests; a viewer cannot.
    let (_, viewer) = member(&p, &t, json!({"roles": ["viewer"]})).await;
    portal_error(&decide(&p, &viewer, &id, json!({"status": "approved"})).await, 403, "insufficient_scope");
    let (_, finance) = member(&p, &t, json!({"roles": ["finance"]})).await;
    let d = portal_ok(&decide(&p, &finance, &id, json!({"status": "approved", "note": "ok"})).await, 200);
    assert_eq!(d["status"], "approved");
    let w: Value = p.api_as(&key).get(&format!("/api/white-label/v1/withdrawals/{withdrawal}"), StatusCode::OK).await;
    assert_eq!(w["data"]["status"], "pending", "released for payout");
    drain(&p).await;
    assert!(p.sandbox.transfer(&withdrawal).is_some(), "the payout went to the provider");
    portal_error(&decide(&p, &finance, &id, json!({"status": "rejected"})).await, 409, "conflict");
}

async fn otp_send_mails_a_passcode_that_verify_checks_once_and_challenges_stay_apart(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    let to = email("confirm");
    let r = call(
        &p,
        Some(&t),
        Method::POST,
        OTP_SEND,
        Some(json!({"channel": "email", "recipient": to, "purpose": "withdrawal_approval"})),
    )
    .await;
    let challenge = portal_ok(&r, 201)["challengeId"].as_str().expect("challengeId").to_string();
    drain(&p).await;
    let code = mailed_code(&p, &to).expect("mailed");
    // At the sign-in route it is 404 and not used up.
    let r = call(
        &p,
        None,
        Method::POST,
        crate::support::portal::VERIFY,
        Some(json!({"challengeId": challenge, "code": code})),
    )
    .await;
    portal_error(&r, 404, "not_found");
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let r = call(&p, Some(&t), Method::POST, OTP_VERIFY, Some(json!({"challengeId": challenge, "code": wrong}))).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["code"]);
    let r = call(&p, Some(&t), Method::POST, OTP_VERIFY, Some(json!({"challengeId": challenge, "code": code}))).await;
    assert_eq!(portal_ok(&r, 200), json!({"verified": true, "purpose": "withdrawal_approval"}));
    let r = call(&p, Some(&t), Method::POST, OTP_VERIFY, Some(json!({"challengeId": challenge, "code": code}))).await;
    portal_error(&r, 409, "conflict");
    // A sign-in challenge is 404 here, and still opens a session afterwards.
    let sign = crate::support::portal::start(&p, &owner).await;
    drain(&p).await;
    let sign_code = mailed_code(&p, &owner).expect("code");
    let r = call(&p, Some(&t), Method::POST, OTP_VERIFY, Some(json!({"challengeId": sign, "code": sign_code}))).await;
    portal_error(&r, 404, "not_found");
    let r = call(
        &p,
        None,
        Method::POST,
        crate::support::portal::VERIFY,
        Some(json!({"challengeId": sign, "code": sign_code})),
    )
    .await;
    portal_ok(&r, 200);
    // SMS goes over the account's gateway; whatsapp has none.
    let r = call(
        &p,
        Some(&t),
        Method::POST,
        OTP_SEND,
        Some(json!({"channel": "sms", "recipient": "0241234567", "purpose": "login"})),
    )
    .await;
    portal_ok(&r, 201);
    drain(&p).await;
    assert!(p.sandbox.sms().iter().any(|m| m["to"] == "+233241234567"), "{:?}", p.sandbox.sms());
    let r = call(
        &p,
        Some(&t),
        Method::POST,
        OTP_SEND,
        Some(json!({"channel": "whatsapp", "recipient": "+233241234567", "purpose": "login"})),
    )
    .await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["channel"]);
    let r = call(
        &p,
        Some(&t),
        Method::POST,
        OTP_SEND,
        Some(json!({"channel": "email", "recipient": "nope", "purpose": "fun"})),
    )
    .await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["recipient", "purpose"]);
    let r = call(&p, Some(&t), Method::POST, OTP_SEND, Some(json!({}))).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["channel", "recipient", "purpose"]);
    // The resend cooldown applies per recipient and purpose.
    let r = call(
        &p,
        Some(&t),
        Method::POST,
        OTP_SEND,
        Some(json!({"channel": "email", "recipient": to, "purpose": "withdrawal_approval"})),
    )
    .await;
    portal_error(&r, 429, "rate_limited");
}

on_both!(
    profile_moves_follow_d10_2_and_only_the_operator_lifts_a_suspension,
    an_invitation_becomes_an_active_member_at_sign_in_and_members_move_per_d15_2,
    another_resellers_ids_are_404_and_its_people_cannot_be_invited,
    permissions_follow_d16_14_and_d16_15,
    approval_requests_are_four_eyes_and_approval_applies_the_effect,
    concurrent_decisions_of_one_request_have_exactly_one_winner,
    an_approved_withdrawal_request_releases_the_withdrawal_through_the_portal,
    otp_send_mails_a_passcode_that_verify_checks_once_and_challenges_stay_apart,
);

//! Integration tests: the reseller console page (D17.30; D10, D15, D16.14–19) through the real
//! server as a browser without JavaScript: the profile, members and approval requests shown;
//! inviting, filing, deciding and cancelling through the same rules as the portal API (its
//! permissions, four eyes, a suspended reseller reads only); org members get 403; another
//! reseller's ids answer 404. On SQLite and PostgreSQL.
use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::console::{member, sign_in, Browser, Page};
use crate::support::payments::PayApp;
use crate::support::portal::{call, mint, portal_ok, reseller, spawn_reseller, CONSOLE};
use crate::support::server::Backend;

const PAGE: &str = "/console/reseller";
const MEMBERS: &str = "/console/reseller/members";
const APPROVALS: &str = "/console/reseller/approval-requests";
const API_APPROVALS: &str = "/api/white-label/portal/reseller/approval-requests";

fn email(prefix: &str) -> String {
    format!("{prefix}-{}@team.example.com", uuid::Uuid::now_v7().simple())
}

fn decide_path(id: &str) -> String {
    format!("{APPROVALS}/{id}/decide")
}

/// Posts `fields` with the page's CSRF token (for forms the page does not show).
async fn post(b: &Browser, page: &Page, path: &str, fields: &[(&str, &str)]) -> Page {
    let csrf = page.form_fields("/console/sign-out")["csrf"].clone();
    let mut all = vec![("csrf", csrf.as_str())];
    all.extend_from_slice(fields);
    b.post(path, &all).await
}

/// The reseller's members and invitations as the portal API shows them.
async fn api_members(p: &PayApp, token: &str) -> Vec<Value> {
    let d = portal_ok(&call(p, Some(token), Method::GET, CONSOLE, None).await, 200);
    let mut all = d["members"].as_array().cloned().unwrap_or_default();
    all.extend(d["invitations"].as_array().cloned().unwrap_or_default());
    all
}

async fn api_member(p: &PayApp, token: &str, mail: &str) -> Value {
    api_members(p, token).await.into_iter().find(|m| m["email"] == mail).unwrap_or_else(|| panic!("{mail} listed"))
}

async fn api_request(p: &PayApp, token: &str, id: &str) -> Value {
    let all = portal_ok(&call(p, Some(token), Method::GET, API_APPROVALS, None).await, 200);
    all.as_array().expect("list").iter().find(|r| r["id"] == id).cloned().expect("request listed")
}

/// Invites `mail` with `role` through the owner's page (303), signs them in; their browser.
async fn invited(p: &PayApp, owner: &Browser, mail: &str, role: &str) -> Browser {
    let page = owner.get(PAGE).await;
    let r = owner.submit(&page, MEMBERS, &[("email", mail), ("role", role)]).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/reseller?done=invited")), "{}", r.body);
    let (b, to) = sign_in(p, mail).await;
    assert_eq!(to, PAGE);
    b
}

/// The id of the newest request row on the page.
fn newest_request(page: &Page) -> String {
    let ids = page.attrs("#approvals tbody tr[id]", "id");
    ids.first().expect("a request row").trim_start_matches("approval-").to_string()
}

on_both!(
    console_reseller_page_shows_the_profile_members_and_requests_to_reseller_users_only,
    console_reseller_invites_members_as_the_portal_allows,
    console_reseller_approval_requests_are_filed_and_decided_four_eyes,
    console_reseller_suspended_reads_only_and_other_resellers_ids_are_404,
    console_reseller_approval_requests_show_fifty_a_page_newest_first,
);

async fn console_reseller_page_shows_the_profile_members_and_requests_to_reseller_users_only(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    let body = json!({"status": "enabled", "riskLevel": "medium", "allowPublicSignup": true, "settings": {"payoutDay": "friday"}});
    portal_ok(&call(&p, Some(&t), Method::PATCH, "/api/white-label/portal/reseller/profile", Some(body)).await, 200);
    let body = json!({"entityType": "setting", "reason": "Change the payout day"});
    portal_ok(&call(&p, Some(&t), Method::POST, API_APPROVALS, Some(body)).await, 201);
    // A reseller user lands on the reseller page and sees only it in the navigation.
    let (browser, to) = sign_in(&p, &owner).await;
    assert_eq!(to, PAGE);
    let page = browser.get(PAGE).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.attrs("nav a", "href"), vec![PAGE.to_string()]);
    assert!(page.texts("button").iter().any(|t| t == "Sign out"));
    assert!(page.body.len() < 100_000);
    assert_eq!(page.text("#profile-status"), "enabled");
    assert_eq!(page.text("#profile-risk"), "medium");
    assert_eq!(page.text("#profile-public-signup"), "yes");
    assert!(page.text("#profile-settings").contains("friday"));
    let rows = page.texts("#members tbody tr");
    assert!(
        rows.iter().any(|r| r.contains(&owner) && r.contains("owner") && r.contains("admin") && r.contains("active")),
        "{rows:?}"
    );
    let requests = page.texts("#approvals tbody tr");
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert!(
        requests[0].contains("setting")
            && requests[0].contains("pending")
            && requests[0].contains("Change the payout day")
    );
    assert!(requests[0].contains(&owner), "who asked: {requests:?}");
    assert_eq!(page.text("label[for=f-email]"), "E-mail");
    assert_eq!(page.text("label[for=f-role]"), "Role");
    // The other console pages are not a reseller user's.
    for path in ["/console/payments", "/console/ledger", "/console/team", "/console/gate", "/console/campaigns"] {
        assert_eq!(browser.get(path).await.status, 403, "{path}");
    }
    assert_eq!(browser.get("/console").await.location().as_deref(), Some(PAGE));
    // Organization members get 403 on the page and its forms.
    let org = member(&p, "owner").await;
    let (ob, _) = sign_in(&p, &org).await;
    assert_eq!(ob.get(PAGE).await.status, 403);
    let home = ob.get("/console").await;
    let r = post(&ob, &home, MEMBERS, &[("email", &email("x")), ("role", "viewer")]).await;
    assert_eq!(r.status, 403, "{}", r.body);
    let r = post(&ob, &home, APPROVALS, &[("entity_type", "setting")]).await;
    assert_eq!(r.status, 403);
    let id = newest_request(&page);
    let r = post(&ob, &home, &decide_path(&id), &[("decision", "approved")]).await;
    assert_eq!(r.status, 403);
    assert_eq!(api_request(&p, &t, &id).await["status"], "pending");
    // Without the CSRF token a reseller user's post is refused too.
    let r = browser.post(MEMBERS, &[("email", &email("x")), ("role", "viewer")]).await;
    assert_eq!(r.status, 403);
}

async fn console_reseller_invites_members_as_the_portal_allows(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    let (browser, _) = sign_in(&p, &owner).await;
    let page = browser.get(PAGE).await;
    // Bad input: 400, the error beside its field, the values sent back.
    let r = browser.submit(&page, MEMBERS, &[("email", "not-an-email"), ("role", "viewer")]).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.field_error("email").is_some(), "{}", r.body);
    assert_eq!(r.attrs("#f-email", "value"), vec!["not-an-email".to_string()]);
    let r = browser.submit(&page, MEMBERS, &[("email", &email("a")), ("role", "")]).await;
    assert_eq!(r.status, 400);
    assert!(r.field_error("role").is_some(), "{}", r.body);
    let r = browser.submit(&page, MEMBERS, &[("email", &email("a")), ("role", "boss")]).await;
    assert_eq!(r.status, 400);
    assert!(r.field_error("role").is_some(), "{}", r.body);
    // A good invitation: 303 back to the page, listed pending, and the portal API sees it.
    let viewer = email("viewer");
    let r = browser.submit(&page, MEMBERS, &[("email", &viewer), ("role", "viewer")]).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/reseller?done=invited")));
    let after = browser.get("/console/reseller?done=invited").await;
    assert!(after.has("#notice"));
    let row = after.texts("#members tbody tr").into_iter().find(|r| r.contains(&viewer)).expect("listed");
    assert!(row.contains("pending") && row.contains("viewer") && row.contains("invited"), "{row}");
    let m = api_member(&p, &t, &viewer).await;
    assert_eq!((m["status"].as_str(), m["roles"].clone()), (Some("pending"), json!(["viewer"])));
    // The same address again: refused beside the field (409), nothing added.
    let r = browser.submit(&after, MEMBERS, &[("email", &viewer), ("role", "viewer")]).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(r.field_error("email").is_some());
    assert_eq!(api_members(&p, &t).await.iter().filter(|m| m["email"] == viewer.as_str()).count(), 1);
    // A viewer may not invite (members:manage): 403, and no form is shown to them.
    let (vb, _) = sign_in(&p, &viewer).await;
    let vpage = vb.get(PAGE).await;
    assert!(!vpage.has("#invite-form"));
    let r = post(&vb, &vpage, MEMBERS, &[("email", &email("v")), ("role", "viewer")]).await;
    assert_eq!(r.status, 403, "{}", r.body);
    // members:manage without admin: may invite a support member, not grant manager (D16.15).
    let lead = email("lead");
    let body = json!({"email": lead, "roles": ["support"], "permissions": ["members:manage"]});
    portal_ok(&call(&p, Some(&t), Method::POST, "/api/white-label/portal/reseller/members", Some(body)).await, 201);
    let (lb, _) = sign_in(&p, &lead).await;
    let lpage = lb.get(PAGE).await;
    let r = lb.submit(&lpage, MEMBERS, &[("email", &email("m")), ("role", "manager")]).await;
    assert_eq!(r.status, 403, "{}", r.body);
    let support = email("support");
    let r = lb.submit(&lpage, MEMBERS, &[("email", &support), ("role", "support")]).await;
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(api_member(&p, &t, &support).await["status"], "pending");
}

async fn console_reseller_approval_requests_are_filed_and_decided_four_eyes(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    let (ob, _) = sign_in(&p, &owner).await;
    let manager = invited(&p, &ob, &email("manager"), "manager").await;
    let viewer = invited(&p, &ob, &email("viewer"), "viewer").await;
    // Filing: bad input is 400 beside its field.
    let vpage = viewer.get(PAGE).await;
    let r = viewer.submit(&vpage, APPROVALS, &[("entity_type", "spaceship"), ("reason", "x")]).await;
    assert_eq!(r.status, 400);
    assert!(r.field_error("entity_type").is_some(), "{}", r.body);
    let r = viewer.submit(&vpage, APPROVALS, &[("entity_type", "member"), ("subject", "not-a-uuid")]).await;
    assert_eq!(r.status, 400);
    assert!(r.field_error("subject").is_some(), "{}", r.body);
    let long = "x".repeat(1001);
    let r = viewer.submit(&vpage, APPROVALS, &[("entity_type", "setting"), ("reason", &long)]).await;
    assert_eq!(r.status, 400);
    assert!(r.field_error("reason").is_some(), "{}", r.body);
    // Any active member files one.
    let r = viewer.submit(&vpage, APPROVALS, &[("entity_type", "setting"), ("reason", "New logo")]).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/reseller?done=filed")));
    let vpage = viewer.get(PAGE).await;
    let mine = newest_request(&vpage);
    assert_eq!(api_request(&p, &t, &mine).await["reason"], "New logo");
    // The viewer may not decide (approvals:decide): 403, the request stays pending.
    let r = post(&viewer, &vpage, &decide_path(&mine), &[("decision", "approved")]).await;
    assert_eq!(r.status, 403, "{}", r.body);
    // Nobody decides their own request: the owner files one and may not approve it.
    let invitee = email("invitee");
    let opage = ob.get(PAGE).await;
    let r = ob.submit(&opage, MEMBERS, &[("email", &invitee), ("role", "support")]).await;
    assert_eq!(r.status, 303);
    let invitee_id = api_member(&p, &t, &invitee).await["id"].as_str().expect("id").to_string();
    let r = ob
        .submit(&opage, APPROVALS, &[("entity_type", "member"), ("reason", "New support"), ("subject", &invitee_id)])
        .await;
    assert_eq!(r.status, 303, "{}", r.body);
    let opage = ob.get(PAGE).await;
    let owners = newest_request(&opage);
    let r = post(&ob, &opage, &decide_path(&owners), &[("decision", "approved")]).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(api_request(&p, &t, &owners).await["status"], "pending");
    // The manager decides it through the row's form: bad input first, then approval applies
    // the effect (the member is active).
    let mpage = manager.get(PAGE).await;
    let action = decide_path(&owners);
    let r = manager.submit(&mpage, &action, &[("decision", "maybe")]).await;
    assert_eq!(r.status, 400);
    assert!(r.field_error("decision").is_some(), "{}", r.body);
    let r = manager.submit(&mpage, &action, &[("decision", "approved"), ("note", &long)]).await;
    assert_eq!(r.status, 400);
    assert!(r.field_error("note").is_some(), "{}", r.body);
    let r = manager.submit(&mpage, &action, &[("decision", "approved"), ("note", "Checked")]).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/reseller?done=approved")), "{}", r.body);
    let decided = api_request(&p, &t, &owners).await;
    assert_eq!((decided["status"].as_str(), decided["note"].as_str()), (Some("approved"), Some("Checked")));
    assert_eq!(api_member(&p, &t, &invitee).await["status"], "active", "approval activated the member");
    // Decided once: deciding again is refused (409), the reason on the page.
    let r = post(&manager, &mpage, &action, &[("decision", "rejected")]).await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(r.text(".form-error").contains("already approved"), "{}", r.body);
    let row = manager.get(PAGE).await.texts(&format!("#approval-{owners}")).join(" ");
    assert!(row.contains("approved") && row.contains("Checked"), "{row}");
    // The requester cancels their own; nobody else may cancel it.
    let r = post(&manager, &mpage, &decide_path(&mine), &[("decision", "cancelled")]).await;
    assert_eq!(r.status, 403);
    let vpage = viewer.get(PAGE).await;
    let r = viewer.submit(&vpage, &decide_path(&mine), &[("decision", "cancelled")]).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/reseller?done=cancelled")), "{}", r.body);
    assert_eq!(api_request(&p, &t, &mine).await["status"], "cancelled");
    // The audit trail holds the console's decisions as the portal's.
    let out = p.cli(&["admin", "audit", "list", "--account", &p.account.slug, "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("approval.approve") || text.contains("approval.approved"), "{text}");
}

async fn console_reseller_suspended_reads_only_and_other_resellers_ids_are_404(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    // Another reseller, on another account, with a pending request.
    let other = p.new_account("other").await;
    let other_owner = email("other-owner");
    reseller(&p, &other, &other_owner).await;
    let ot = mint(&p, &other_owner).await;
    let body = json!({"entityType": "setting", "reason": "Theirs"});
    let theirs = portal_ok(&call(&p, Some(&ot), Method::POST, API_APPROVALS, Some(body)).await, 201)["id"]
        .as_str()
        .expect("id")
        .to_string();
    let (ob, _) = sign_in(&p, &owner).await;
    let page = ob.get(PAGE).await;
    assert!(!page.body.contains("Theirs") && !page.body.contains(&theirs) && !page.body.contains(&other_owner));
    for decision in ["approved", "cancelled", "maybe"] {
        let r = post(&ob, &page, &decide_path(&theirs), &[("decision", decision)]).await;
        assert_eq!(r.status, 404, "{decision}: {}", r.body);
    }
    assert_eq!(post(&ob, &page, &decide_path("not-a-uuid"), &[("decision", "approved")]).await.status, 404);
    assert_eq!(api_request(&p, &ot, &theirs).await["status"], "pending");
    // A request of ours to try deciding while suspended.
    let body = json!({"entityType": "setting", "reason": "Ours"});
    let ours = portal_ok(&call(&p, Some(&t), Method::POST, API_APPROVALS, Some(body)).await, 201)["id"]
        .as_str()
        .expect("id")
        .to_string();
    // Suspended: the page reads, every write is 403, nothing changes.
    for status in ["enabled", "suspended"] {
        let body = json!({ "status": status });
        portal_ok(
            &call(&p, Some(&t), Method::PATCH, "/api/white-label/portal/reseller/profile", Some(body)).await,
            200,
        );
    }
    let page = ob.get(PAGE).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.text("#profile-status"), "suspended");
    assert!(page.has("#inactive") && !page.has("#invite-form") && !page.has("#approval-form"));
    let before = api_members(&p, &t).await.len();
    let r = post(&ob, &page, MEMBERS, &[("email", &email("late")), ("role", "viewer")]).await;
    assert_eq!(r.status, 403, "{}", r.body);
    let r = post(&ob, &page, APPROVALS, &[("entity_type", "setting"), ("reason", "x")]).await;
    assert_eq!(r.status, 403);
    let r = post(&ob, &page, &decide_path(&ours), &[("decision", "cancelled")]).await;
    assert_eq!(r.status, 403);
    assert_eq!(api_members(&p, &t).await.len(), before);
    assert_eq!(api_request(&p, &t, &ours).await["status"], "pending");
    let all = portal_ok(&call(&p, Some(&t), Method::GET, API_APPROVALS, None).await, 200);
    assert_eq!(all.as_array().map(Vec::len), Some(1));
}

async fn console_reseller_approval_requests_show_fifty_a_page_newest_first(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let t = mint(&p, &owner).await;
    for i in 0..51 {
        let body = json!({"entityType": "setting", "reason": format!("request {i}")});
        portal_ok(&call(&p, Some(&t), Method::POST, API_APPROVALS, Some(body)).await, 201);
    }
    let (browser, _) = sign_in(&p, &owner).await;
    let first = browser.get(PAGE).await;
    assert_eq!(first.status, 200);
    let rows = first.texts("#approvals tbody tr");
    assert_eq!(rows.len(), 50);
    assert!(rows[0].contains("request 50"), "newest first: {}", rows[0]);
    assert!(first.body.len() < 100_000, "{} bytes", first.body.len());
    let next = first.attrs("a[rel=next]", "href");
    assert_eq!(next, vec!["/console/reseller?ap=2&mp=1".to_string()]);
    let second = browser.get(&next[0]).await;
    let rows = second.texts("#approvals tbody tr");
    assert_eq!(rows.len(), 1);
    assert!(rows[0].contains("request 0"), "{}", rows[0]);
    // A page past the end shows the last one; a bad page number the first.
    assert_eq!(browser.get("/console/reseller?ap=9").await.texts("#approvals tbody tr").len(), 1);
    assert_eq!(browser.get("/console/reseller?ap=x").await.texts("#approvals tbody tr").len(), 50);
}

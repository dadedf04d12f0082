//! Integration tests: the console's team page (D17.30, D17.43; owners only) through the real
//! server as a browser without JavaScript uses it: members listed, added (E-mail, Role) and
//! removed, their sessions ended with them, the last owner kept.
use tessera_server::cli::admin;

use crate::support::console::{member, sign_in, signed_in, Page};
use crate::support::payments::PayApp;
use crate::support::server::Backend;

const PATH: &str = "/console/team";

async fn member_id(p: &PayApp, email: &str) -> String {
    p.store.org_member_by_email(&p.account.id, email).await.expect("member").id
}

fn csrf(page: &Page) -> String {
    page.form_fields("/console/sign-out")["csrf"].clone()
}

on_both!(
    console_team_an_owner_adds_members_and_bad_input_comes_back_beside_its_field,
    console_team_removing_a_member_ends_their_session_and_the_last_owner_stays,
    console_team_finance_managers_and_gate_members_get_403,
    console_team_another_accounts_member_is_404,
);

async fn console_team_an_owner_adds_members_and_bad_input_comes_back_beside_its_field(b: Backend) {
    let (p, owner, owner_email) = signed_in(b, "owner").await;
    let page = owner.get(PATH).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.text("label[for=f-email]"), "E-mail");
    assert_eq!(page.text("label[for=f-role]"), "Role");
    assert_eq!(page.attrs("#f-role option", "value"), vec!["owner", "manager", "finance", "gate"]);
    assert_eq!(page.texts("#members td.email"), vec![format!("{owner_email} (you)")]);

    let email = format!("Ama.{}@Org.Example.com", uuid::Uuid::now_v7().simple());
    let r = owner.submit(&page, PATH, &[("email", &email), ("role", "finance")]).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/team?done=added")), "{}", r.body);
    let after = owner.get("/console/team?done=added").await;
    assert!(after.text("#notice").contains("Member added"));
    let id = member_id(&p, &email).await;
    assert_eq!(after.text(&format!("#m-{id} td.role")), "finance");
    assert!(after.text(&format!("#m-{id} td.email")).eq_ignore_ascii_case(&email));
    // The new member signs in and lands by role.
    let (_, to) = sign_in(&p, &email).await;
    assert_eq!(to, "/console");

    // The same e-mail again (any case): 400 beside the e-mail, nothing added.
    let dup = owner.submit(&after, PATH, &[("email", &email.to_lowercase()), ("role", "gate")]).await;
    assert_eq!(dup.status, 400, "{}", dup.body);
    assert!(dup.field_error("email").is_some_and(|e| e.contains("already a member")), "{}", dup.body);
    assert!(dup.field_error("role").is_none());
    assert_eq!(dup.attrs("#f-email", "value"), vec![email.to_lowercase()]);
    // A role that is none: 400 beside the role.
    let bad_role = owner.submit(&after, PATH, &[("email", "kofi@org.example.com"), ("role", "admin")]).await;
    assert_eq!(bad_role.status, 400, "{}", bad_role.body);
    assert!(bad_role.field_error("role").is_some(), "{}", bad_role.body);
    assert!(bad_role.field_error("email").is_none());
    // Not an e-mail: 400 beside the e-mail.
    let bad_email = owner.submit(&after, PATH, &[("email", "not-an-email"), ("role", "gate")]).await;
    assert_eq!(bad_email.status, 400);
    assert!(bad_email.field_error("email").is_some(), "{}", bad_email.body);
    let members = p.store.org_members(&p.account.id).await.expect("members");
    assert_eq!(members.len(), 2, "only the owner and the finance member");
    // The change is audited with the member who made it.
    let audit = p.cli(&["admin", "audit", "list", "--account", &p.account.slug, "--json"]);
    let audit = String::from_utf8_lossy(&audit.stdout);
    assert!(audit.contains("org_member.added") && audit.contains(&member_id(&p, &owner_email).await), "{audit}");
}

async fn console_team_removing_a_member_ends_their_session_and_the_last_owner_stays(b: Backend) {
    let (p, owner, owner_email) = signed_in(b, "owner").await;
    let finance_email = member(&p, "finance").await;
    let (finance, _) = sign_in(&p, &finance_email).await;
    assert_eq!(finance.get("/console/ledger").await.status, 200);
    let finance_id = member_id(&p, &finance_email).await;
    let page = owner.get(PATH).await;
    let r = owner.submit(&page, &format!("/console/team/{finance_id}/remove"), &[]).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/team?done=removed")), "{}", r.body);
    // Their browser is signed out at once.
    let gone = finance.get("/console/ledger").await;
    assert_eq!((gone.status, gone.location().as_deref()), (303, Some("/console")));
    assert!(!owner.get(PATH).await.has(&format!("#m-{finance_id}")));

    // The last owner stays: a form-wide refusal.
    let owner_id = member_id(&p, &owner_email).await;
    let page = owner.get(PATH).await;
    let last = owner.submit(&page, &format!("/console/team/{owner_id}/remove"), &[]).await;
    assert_eq!(last.status, 400, "{}", last.body);
    assert!(last.text(".form-error").contains("last owner"), "{}", last.body);
    assert_eq!(owner.get(PATH).await.status, 200, "still signed in");
    // With a second owner, an owner may remove themself: their session ends with it.
    let second = member(&p, "owner").await;
    let page = owner.get(PATH).await;
    let me = owner.submit(&page, &format!("/console/team/{owner_id}/remove"), &[]).await;
    assert_eq!((me.status, me.location().as_deref()), (303, Some("/console")), "{}", me.body);
    let after = owner.get(PATH).await;
    assert_eq!((after.status, after.location().as_deref()), (303, Some("/console")));
    let emails: Vec<String> =
        p.store.org_members(&p.account.id).await.expect("members").into_iter().map(|m| m.email).collect();
    assert_eq!(emails, vec![second]);
}

async fn console_team_finance_managers_and_gate_members_get_403(b: Backend) {
    let (p, owner, _) = signed_in(b, "owner").await;
    let target = member(&p, "manager").await;
    let target_id = member_id(&p, &target).await;
    assert_eq!(owner.get(PATH).await.status, 200);
    for (role, home) in [("finance", "/console"), ("manager", "/console"), ("gate", "/console/gate")] {
        let email = member(&p, role).await;
        let (browser, _) = sign_in(&p, &email).await;
        let r = browser.get(PATH).await;
        assert_eq!(r.status, 403, "{role}: {}", r.body);
        let token = csrf(&browser.get(home).await);
        let add = browser.post(PATH, &[("csrf", &token), ("email", "x@org.example.com"), ("role", "owner")]).await;
        assert_eq!(add.status, 403, "{role}");
        let rm = browser.post(&format!("/console/team/{target_id}/remove"), &[("csrf", &token)]).await;
        assert_eq!(rm.status, 403, "{role}");
    }
    let members = p.store.org_members(&p.account.id).await.expect("members");
    assert!(members.iter().any(|m| m.id == target_id));
    assert!(!members.iter().any(|m| m.email == "x@org.example.com"));
}

async fn console_team_another_accounts_member_is_404(b: Backend) {
    let (p, owner, _) = signed_in(b, "owner").await;
    let other = p.new_account("other").await;
    let email = format!("owner-{}@other.example.com", uuid::Uuid::now_v7().simple());
    admin::member_add(&p.store, &other.slug, &email, "finance").await.expect("member add");
    let theirs = p.store.org_member_by_email(&other.id, &email).await.expect("member").id;
    let page = owner.get(PATH).await;
    assert!(!page.has(&format!("#m-{theirs}")), "another account's member is not listed");
    let token = csrf(&page);
    for id in [theirs.as_str(), &uuid::Uuid::now_v7().to_string(), "nope"] {
        let r = owner.post(&format!("/console/team/{id}/remove"), &[("csrf", &token)]).await;
        assert_eq!(r.status, 404, "{id}: {}", r.body);
    }
    assert!(p.store.org_member_by_email(&other.id, &email).await.is_ok(), "still a member of its account");
}

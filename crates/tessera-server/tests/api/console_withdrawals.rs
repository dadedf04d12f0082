//! Integration tests: the console's withdrawals page (D17.30, D17.43) through the real server as
//! a browser without JavaScript uses it. The form goes through the API's own flow: the same
//! rules, hold, idempotency and approval threshold, checked here through the API's reads; four
//! eyes on withdrawals awaiting approval.
use serde_json::{json, Value};
use tessera_server::cli::admin;

use crate::support::catalogue::{running_campaign, ticket_type};
use crate::support::client::StatusCode;
use crate::support::console::{member, sign_in, signed_in, Browser, Page};
use crate::support::ledger::assert_ledger_clean;
use crate::support::mail::point_mail_at_sandbox;
use crate::support::payments::{buy, sandbox_settle, PayApp, BALANCE, WITHDRAWALS};
use crate::support::server::{drain, Backend, TestKey, ALL_PRIVATE_SCOPES};

const PATH: &str = "/console/withdrawals";

/// One ticket of `ghs` bought and confirmed: `ghs` available.
async fn fund(p: &PayApp, ghs: f64) {
    let c = running_campaign(p, &p.account.private, "ticketing").await;
    let t = ticket_type(p, &p.account.private, &c, ghs, 5).await;
    let reference = buy(p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
}

/// A member with `role` signed in, `ghs` available, and an API key that reads withdrawals.
async fn funded(b: Backend, role: &str, ghs: f64) -> (PayApp, Browser, String, TestKey) {
    let (p, browser, email) = signed_in(b, role).await;
    fund(&p, ghs).await;
    let key = p.create_key(&p.account.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    (p, browser, email, key)
}

async fn threshold(p: &PayApp, ghs: i64) {
    let body = json!({"config": {"withdrawalApprovalAbove": ghs}});
    let _: Value = p.api().patch("/api/white-label/v1/settings/operations", &body, StatusCode::OK).await;
}

const VALID: [(&str, &str); 5] = [
    ("amount", "40.50"),
    ("bank_name", "MTN Mobile Money"),
    ("bank_code", "MTN"),
    ("account_number", "0241234567"),
    ("account_name", "Ama Mensah"),
];

/// The form's values: the valid ones with `amount` (and any override).
fn values<'a>(amount: &'a str, over: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    VALID
        .iter()
        .map(|(k, v)| {
            let v = if *k == "amount" { amount } else { v };
            (*k, over.iter().find(|(o, _)| o == k).map(|(_, x)| *x).unwrap_or(v))
        })
        .collect()
}

/// Opens the page and submits the request form: (the page, the answer).
async fn ask(browser: &Browser, amount: &str) -> (Page, Page) {
    let page = browser.get(PATH).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let r = browser.submit(&page, PATH, &values(amount, &[])).await;
    (page, r)
}

async fn api_list(p: &PayApp, key: &TestKey) -> Vec<Value> {
    let b: Value = p.api_as(key).get(WITHDRAWALS, StatusCode::OK).await;
    b["data"].as_array().expect("data").clone()
}

async fn api_show(p: &PayApp, key: &TestKey, id: &str) -> Value {
    let b: Value = p.api_as(key).get(&format!("{WITHDRAWALS}/{id}"), StatusCode::OK).await;
    b["data"].clone()
}

async fn balance(p: &PayApp, key: &TestKey) -> Value {
    let b: Value = p.api_as(key).get(BALANCE, StatusCode::OK).await;
    b["data"].clone()
}

async fn member_id(p: &PayApp, account_id: &str, email: &str) -> String {
    p.store.org_member_by_email(account_id, email).await.expect("member").id
}

/// The CSRF token of a signed-in page (every page's sign-out form carries it).
fn csrf(page: &Page) -> String {
    page.form_fields("/console/sign-out")["csrf"].clone()
}

on_both!(
    console_withdrawals_a_request_below_the_threshold_is_pending_and_held_as_through_the_api,
    console_withdrawals_the_same_idempotency_key_posted_twice_makes_one_withdrawal,
    console_withdrawals_above_the_threshold_wait_and_a_second_member_approves_never_the_asker,
    console_withdrawals_a_rejected_withdrawal_is_cancelled_and_its_hold_released,
    console_withdrawals_each_field_error_is_a_400_beside_its_field,
    console_withdrawals_managers_and_gate_members_get_403,
    console_withdrawals_another_accounts_withdrawal_is_404,
);

async fn console_withdrawals_a_request_below_the_threshold_is_pending_and_held_as_through_the_api(b: Backend) {
    let (p, browser, email, key) = funded(b, "finance", 100.0).await;
    let page = browser.get(PATH).await;
    assert_eq!(page.status, 200, "{}", page.body);
    for (field, label) in [
        ("amount", "Amount"),
        ("bank_name", "Bank name"),
        ("bank_code", "Bank code"),
        ("account_number", "Account number"),
        ("account_name", "Account name"),
    ] {
        assert_eq!(page.text(&format!("label[for=f-{field}]")), label);
    }
    assert_eq!(page.text("#fig-available"), "100.00");
    assert!(page.form_fields(PATH).get("idempotency_key").is_some_and(|k| !k.is_empty()));
    assert!(page.body.len() < 100_000);

    let r = browser.submit(&page, PATH, &values("40.50", &[])).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/withdrawals?done=requested")), "{}", r.body);
    let listed = api_list(&p, &key).await;
    assert_eq!(listed.len(), 1);
    let id = listed[0]["id"].as_str().expect("id").to_string();
    assert_eq!((listed[0]["status"].as_str(), &listed[0]["amount"]), (Some("pending"), &json!(40.5)));
    assert_eq!(listed[0]["account_name"], "Ama Mensah");
    assert_eq!(balance(&p, &key).await, json!({"available": 59.5, "pending": 0, "held": 40.5, "currency": "GHS"}));
    // The member who asked is recorded on the withdrawal.
    let stored = p.store.withdrawal(&p.account.id, &id).await.expect("withdrawal");
    assert_eq!(stored.requested_by, Some(member_id(&p, &p.account.id, &email).await));

    let after = browser.get("/console/withdrawals?done=requested").await;
    assert_eq!(after.status, 200);
    assert!(after.text("#notice").contains("Withdrawal requested"), "{}", after.body);
    assert_eq!(after.attrs(&format!("#w-{id}"), "data-status"), vec!["pending".to_string()]);
    assert_eq!(after.text(&format!("#w-{id} td.num")), "40.50");
    assert_eq!(after.text("#fig-held"), "40.50");
    assert_eq!(after.text("#fig-available"), "59.50");
    assert!(!after.has(&format!("form[action=\"/console/withdrawals/{id}/decide\"]")), "nothing to decide");
    // The payout worker pays it as any withdrawal.
    drain(&p).await;
    assert_eq!(api_show(&p, &key, &id).await["status"], "processing");
    assert_ledger_clean(&p);
}

async fn console_withdrawals_the_same_idempotency_key_posted_twice_makes_one_withdrawal(b: Backend) {
    let (p, browser, _, key) = funded(b, "owner", 100.0).await;
    let (page, first) = ask(&browser, "25").await;
    assert_eq!(first.status, 303, "{}", first.body);
    // A double submit, or the browser retrying the post: the same form, the same key.
    let again = browser.submit(&page, PATH, &values("25", &[])).await;
    assert_eq!((again.status, again.location().as_deref()), (303, Some("/console/withdrawals?done=requested")));
    assert_eq!(api_list(&p, &key).await.len(), 1, "one withdrawal");
    assert_eq!(balance(&p, &key).await["held"], json!(25));
    // The same key with other values is refused, nothing made.
    let other = browser.submit(&page, PATH, &values("30", &[])).await;
    assert_eq!(other.status, 400, "{}", other.body);
    assert!(other.text(".form-error").contains("already sent"), "{}", other.body);
    assert_eq!(api_list(&p, &key).await.len(), 1);
    // A fresh page carries a fresh key: a second withdrawal.
    let (_, second) = ask(&browser, "25").await;
    assert_eq!(second.status, 303);
    assert_eq!(api_list(&p, &key).await.len(), 2);
    assert_ledger_clean(&p);
}

async fn console_withdrawals_above_the_threshold_wait_and_a_second_member_approves_never_the_asker(b: Backend) {
    let (p, asker, asker_email, key) = funded(b, "finance", 200.0).await;
    threshold(&p, 50).await;
    let (_, r) = ask(&asker, "60").await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/withdrawals?done=awaiting")), "{}", r.body);
    let listed = api_list(&p, &key).await;
    let id = listed[0]["id"].as_str().expect("id").to_string();
    assert_eq!(listed[0]["status"], "awaiting_approval");
    assert_eq!(balance(&p, &key).await["held"], json!(60), "held while it waits");
    // The asker sees it waiting for a second member, and may not decide it.
    let page = asker.get(PATH).await;
    let decide = format!("/console/withdrawals/{id}/decide");
    assert_eq!(page.text(&format!("#w-{id} .waiting")), "Waiting for a second member", "{}", page.body);
    assert!(!page.has(&format!("form[action=\"{decide}\"]")));
    let own = asker.post(&decide, &[("csrf", &csrf(&page)), ("decision", "approved")]).await;
    assert_eq!(own.status, 403, "{}", own.body);
    assert_eq!(api_show(&p, &key, &id).await["status"], "awaiting_approval");
    // Without the CSRF token nothing happens either.
    assert_eq!(asker.post(&decide, &[("decision", "approved")]).await.status, 403);

    // A second finance member approves: the withdrawal goes on to payout.
    let second_email = member(&p, "finance").await;
    let (second, _) = sign_in(&p, &second_email).await;
    let page = second.get(PATH).await;
    assert!(page.has(&format!("form[action=\"{decide}\"]")), "{}", page.body);
    assert_eq!(page.texts(&format!("#w-{id} button")), vec!["Approve".to_string(), "Reject".to_string()]);
    let bad = second.submit(&page, &decide, &[("decision", "maybe")]).await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    let ok = second.submit(&page, &decide, &[("decision", "approved")]).await;
    assert_eq!((ok.status, ok.location().as_deref()), (303, Some("/console/withdrawals?done=approved")), "{}", ok.body);
    assert_eq!(api_show(&p, &key, &id).await["status"], "pending");
    drain(&p).await;
    assert_eq!(api_show(&p, &key, &id).await["status"], "processing");
    assert!(p.sandbox.transfer(&id).is_some(), "paid out after the approval");
    // Decided once: again is refused beside the form.
    let twice = second.submit(&page, &decide, &[("decision", "rejected")]).await;
    assert_eq!(twice.status, 400, "{}", twice.body);
    assert!(twice.text(".form-error").contains("already approved"), "{}", twice.body);
    // The decision's audit entry names the member who decided.
    let second_id = member_id(&p, &p.account.id, &second_email).await;
    let audit = p.cli(&["admin", "audit", "list", "--account", &p.account.slug, "--json"]);
    let audit = String::from_utf8_lossy(&audit.stdout);
    assert!(audit.contains("approval.approve") && audit.contains(&second_id), "{audit}");
    assert_ne!(member_id(&p, &p.account.id, &asker_email).await, second_id);
    assert_ledger_clean(&p);
}

async fn console_withdrawals_a_rejected_withdrawal_is_cancelled_and_its_hold_released(b: Backend) {
    let (p, owner, _, key) = funded(b, "owner", 100.0).await;
    threshold(&p, 10).await;
    let (_, r) = ask(&owner, "30").await;
    assert_eq!(r.status, 303, "{}", r.body);
    let id = api_list(&p, &key).await[0]["id"].as_str().expect("id").to_string();
    let finance_email = member(&p, "finance").await;
    let (finance, _) = sign_in(&p, &finance_email).await;
    let page = finance.get(PATH).await;
    let decide = format!("/console/withdrawals/{id}/decide");
    let r = finance.submit(&page, &decide, &[("decision", "rejected")]).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/withdrawals?done=rejected")), "{}", r.body);
    assert_eq!(api_show(&p, &key, &id).await["status"], "cancelled");
    assert_eq!(balance(&p, &key).await, json!({"available": 100, "pending": 0, "held": 0, "currency": "GHS"}));
    let after = owner.get(PATH).await;
    assert_eq!(after.attrs(&format!("#w-{id}"), "data-status"), vec!["cancelled".to_string()]);
    assert!(!after.has(".waiting"));
    drain(&p).await;
    assert!(p.sandbox.transfer(&id).is_none(), "nothing paid");
    assert_ledger_clean(&p);
}

async fn console_withdrawals_each_field_error_is_a_400_beside_its_field(b: Backend) {
    let (p, browser, _, key) = funded(b, "finance", 100.0).await;
    let page = browser.get(PATH).await;
    let cases: [(&str, &str); 9] = [
        ("amount", ""),
        ("amount", "abc"),
        ("amount", "1.234"),
        ("amount", "0"),
        ("bank_name", ""),
        ("bank_code", "M T N"),
        ("account_number", "12"),
        ("account_name", "A"),
        ("account_name", ""),
    ];
    for (field, bad) in cases {
        let r = browser.submit(&page, PATH, &values("10", &[(field, bad)])).await;
        assert_eq!(r.status, 400, "{field}={bad:?}: {}", r.body);
        assert!(r.field_error(field).is_some(), "{field}={bad:?}: an error beside the field: {}", r.body);
        for (other, _) in VALID.iter().filter(|(f, _)| *f != field) {
            assert!(r.field_error(other).is_none(), "{field}={bad:?}: no error beside {other}");
        }
        // The values come back in the form.
        assert_eq!(r.attrs(&format!("#f-{field}"), "value"), vec![bad.to_string()]);
        assert_eq!(r.attrs("#f-account_number", "value").len(), 1);
    }
    // More than the available balance: a form-wide refusal, nothing held.
    let r = browser.submit(&page, PATH, &values("1000", &[])).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.text(".form-error").contains("Insufficient balance"), "{}", r.body);
    // A form without its idempotency key (not one the page rendered).
    let r = browser.post(PATH, &[("csrf", &csrf(&page)), ("amount", "10")]).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.has(".form-error"));
    assert!(api_list(&p, &key).await.is_empty(), "nothing was made");
    assert_eq!(balance(&p, &key).await["held"], json!(0));
}

async fn console_withdrawals_managers_and_gate_members_get_403(b: Backend) {
    let (p, finance, _, key) = funded(b, "finance", 100.0).await;
    threshold(&p, 10).await;
    let (_, r) = ask(&finance, "30").await;
    assert_eq!(r.status, 303);
    let id = api_list(&p, &key).await[0]["id"].as_str().expect("id").to_string();
    for (role, home) in [("manager", "/console"), ("gate", "/console/gate")] {
        let email = member(&p, role).await;
        let (browser, _) = sign_in(&p, &email).await;
        assert_eq!(browser.get(PATH).await.status, 403, "{role}");
        let home = browser.get(home).await;
        let token = csrf(&home);
        let r = browser.post(PATH, &[("csrf", &token), ("idempotency_key", "k1"), ("amount", "10")]).await;
        assert_eq!(r.status, 403, "{role}");
        let r = browser
            .post(&format!("/console/withdrawals/{id}/decide"), &[("csrf", &token), ("decision", "approved")])
            .await;
        assert_eq!(r.status, 403, "{role}");
    }
    assert_eq!(api_list(&p, &key).await.len(), 1);
    assert_eq!(api_show(&p, &key, &id).await["status"], "awaiting_approval");
}

async fn console_withdrawals_another_accounts_withdrawal_is_404(b: Backend) {
    let (p, finance, _, key) = funded(b, "finance", 100.0).await;
    threshold(&p, 10).await;
    let (_, r) = ask(&finance, "30").await;
    assert_eq!(r.status, 303);
    let id = api_list(&p, &key).await[0]["id"].as_str().expect("id").to_string();
    // A finance member of another account sees none of it and cannot decide it.
    let other = p.new_account("other").await;
    point_mail_at_sandbox(&p, &other.private).await;
    let email = format!("finance-{}@other.example.com", uuid::Uuid::now_v7().simple());
    admin::member_add(&p.store, &other.slug, &email, "finance").await.expect("member add");
    let (stranger, _) = sign_in(&p, &email).await;
    let page = stranger.get(PATH).await;
    assert_eq!(page.status, 200);
    assert!(!page.has(&format!("#w-{id}")), "another account's withdrawal is not listed");
    assert_eq!(page.text("#fig-available"), "0.00");
    let decide = format!("/console/withdrawals/{id}/decide");
    let r = stranger.post(&decide, &[("csrf", &csrf(&page)), ("decision", "approved")]).await;
    assert_eq!(r.status, 404, "{}", r.body);
    // Unknown ids, and ids that are no ids, are 404 too.
    let token = csrf(&finance.get(PATH).await);
    let unknown = format!("/console/withdrawals/{}/decide", uuid::Uuid::now_v7());
    for path in [unknown.as_str(), "/console/withdrawals/nope/decide"] {
        let r = finance.post(path, &[("csrf", &token), ("decision", "approved")]).await;
        assert_eq!(r.status, 404, "{path}: {}", r.body);
    }
    assert_eq!(api_show(&p, &key, &id).await["status"], "awaiting_approval");
}

//! Integration tests: `POST /tickets/verify` in both forms and the exactly-once check-in (spec
//! "POST tickets/verify", D7, D16.9) through the real server, on SQLite and PostgreSQL.
use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};

use crate::support::client::{assert_error, detail_fields, raw, send, StatusCode};
use crate::support::payments::{spawn_paid, PayApp};
use crate::support::server::{Backend, TestApp, TestKey};
use crate::support::tickets::{code_of, issued, issued_with_answers, VERIFY};

async fn verify(app: &TestApp, key: &TestKey, body: Value) -> RawResponse {
    send(app, key, Method::POST, VERIFY, Some(body)).await
}

/// Form 1: a domain-key POST from the account's domain.
async fn verify_form1(app: &TestApp, key: &TestKey, body: Value) -> RawResponse {
    let r = app
        .http
        .post(app.url(VERIFY))
        .header("x-white-label-domain", &app.account.domain)
        .header("x-white-label-key", key.header())
        .json(&body)
        .send()
        .await
        .expect("send");
    raw(r).await
}

async fn qr_token(p: &PayApp, code: &str) -> String {
    p.store.gate_ticket(&p.account.id, None, code).await.expect("ticket").ticket.qr_token
}

async fn a_signed_auto_verify_checks_in_once_then_answers_already_checked_in(b: Backend) {
    let p = spawn_paid(b).await;
    let (c, tickets) = issued(&p, &p.account, 1).await;
    let code = code_of(&tickets[0]);
    let r =
        verify(&p, &p.account.private, json!({"ticketCode": code, "autoVerify": true, "checkedInBy": "gate-3"})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let d = r.json()["data"].clone();
    assert_eq!(d["result"], "checked_in", "{d}");
    assert_eq!(d["status"], "valid");
    assert_eq!(d["ticketCode"], code.as_str());
    assert_eq!(d["checkedIn"], true);
    assert_eq!(d["checkedInBy"], "gate-3");
    assert_eq!(d["campaign"]["id"], c.as_str());
    assert!(d["campaign"]["title"].as_str().is_some(), "{d}");
    assert_eq!(d["attendee"]["email"], "buyer@example.com");
    assert_eq!(d["attendee"]["full_name"], "Ama Mensah");
    assert!(d.get("qrToken").is_none(), "the QR token is never in a verify answer: {d}");
    let first_at = d["checkedInAt"].clone();
    assert!(first_at.is_string(), "{d}");

    let again =
        verify(&p, &p.account.private, json!({"ticketCode": code, "autoVerify": true, "checkedInBy": "gate-9"})).await;
    let d2 = again.json()["data"].clone();
    assert_eq!(d2["result"], "already_checked_in", "{d2}");
    assert_eq!(d2["checkedInAt"], first_at);
    assert_eq!(d2["checkedInBy"], "gate-3");

    let audit = p.store.audit_entries(&p.account.id, 50).await.expect("audit");
    let entries: Vec<_> = audit.iter().filter(|e| e.action == "ticket.checked_in").collect();
    assert_eq!(entries.len(), 1, "one check-in, one audit entry");
    assert_eq!(entries[0].entity_type, "ticket");
    let qr = qr_token(&p, &code).await;
    for e in &audit {
        assert!(!e.summary.to_string().contains(&qr), "no QR token in the audit log");
        assert!(!e.summary.to_string().contains(&code), "no ticket code in the audit log");
    }
}

async fn without_auto_verify_a_ticket_is_read_by_code_or_qr_token_and_not_checked_in(b: Backend) {
    let p = spawn_paid(b).await;
    let (_, tickets) = issued(&p, &p.account, 1).await;
    let code = code_of(&tickets[0]);
    // Typed sloppily: lower case, no dashes, O for 0 and I for 1 are read as Crockford does.
    let typed = code.replace('-', "").to_lowercase();
    let r = verify(&p, &p.account.private, json!({"ticketCode": typed})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["data"]["result"], "valid");
    assert_eq!(r.json()["data"]["checkedIn"], false);
    let qr = qr_token(&p, &code).await;
    let r = verify(&p, &p.account.private, json!({"ticketCode": qr, "autoVerify": false})).await;
    assert_eq!(r.json()["data"]["ticketCode"], code.as_str(), "{}", r.json());
    assert_eq!(r.json()["data"]["checkedIn"], false);
    let r = verify(&p, &p.account.private, json!({"ticketCode": qr, "autoVerify": true})).await;
    assert_eq!(r.json()["data"]["result"], "checked_in", "the QR token checks in too");
    assert_eq!(r.json()["data"]["checkedInBy"], p.account.private.key_id.as_str(), "checkedInBy defaults to the key");
}

async fn form_1_with_a_domain_key_answers_status_and_checked_in_only(b: Backend) {
    let p = spawn_paid(b).await;
    let (_, tickets) = issued(&p, &p.account, 1).await;
    let code = code_of(&tickets[0]);
    let r = verify_form1(&p, &p.account.public, json!({"ticketCode": code})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let d = r.json()["data"].clone();
    let mut keys: Vec<&String> = d.as_object().expect("object").keys().collect();
    keys.sort();
    assert_eq!(keys, vec!["checkedIn", "status"], "Form 1 shows no holder or purchase data: {d}");
    assert_eq!(d["status"], "valid");
    assert_eq!(d["checkedIn"], false);
    let r = verify_form1(&p, &p.account.public, json!({"ticketCode": code, "autoVerify": true})).await;
    let body = assert_error(&r, 400, "validation_failed");
    assert_eq!(detail_fields(&body), vec!["autoVerify"]);
    let r = verify_form1(&p, &p.account.public, json!({"ticketCode": "ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ"})).await;
    assert_error(&r, 404, "not_found");
    // After a signed check-in, Form 1 shows it.
    verify(&p, &p.account.private, json!({"ticketCode": code, "autoVerify": true})).await;
    let r = verify_form1(&p, &p.account.public, json!({"ticketCode": code})).await;
    assert_eq!(r.json()["data"]["checkedIn"], true);
    // CORS: the route is served to browsers with a domain key.
    let pre = p
        .http
        .request(reqwest::Method::OPTIONS, p.url(VERIFY))
        .header("origin", format!("https://{}", p.account.domain))
        .header("access-control-request-method", "POST")
        .send()
        .await
        .expect("preflight");
    assert!(pre.status().is_success(), "preflight {}", pre.status());
}

async fn the_signed_view_shows_attendee_answers_and_the_domain_key_view_never_does(b: Backend) {
    let p = spawn_paid(b).await;
    let (_, tickets) = issued_with_answers(&p).await;
    let answers = json!({"company": "Beta Ltd", "work_email": "kofi@beta.example"});
    let code = code_of(&tickets[1]);
    let r = verify(&p, &p.account.private, json!({"ticketCode": code})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let d = r.json()["data"].clone();
    assert_eq!(d["result"], "valid", "{d}");
    assert_eq!(d["attendee"]["answers"], answers, "{d}");
    assert_eq!(d["attendee"]["email"], "kofi@example.com");
    assert_eq!(d["attendee"]["full_name"], "Kofi Boateng");
    // The check-in answer shows them too.
    let r = verify(&p, &p.account.private, json!({"ticketCode": code, "autoVerify": true})).await;
    assert_eq!(r.json()["data"]["result"], "checked_in", "{}", r.json());
    assert_eq!(r.json()["data"]["attendee"]["answers"], answers);
    let r = verify(&p, &p.account.private, json!({"ticketCode": code, "autoVerify": true})).await;
    assert_eq!(r.json()["data"]["result"], "already_checked_in", "{}", r.json());
    assert_eq!(r.json()["data"]["attendee"]["answers"], answers);
    // The domain-key view never shows them (nor anything else of the holder).
    for t in &tickets {
        let r = verify_form1(&p, &p.account.public, json!({"ticketCode": code_of(t)})).await;
        assert_eq!(r.status, 200, "{}", r.json());
        let d = r.json()["data"].clone();
        let mut keys: Vec<&String> = d.as_object().expect("object").keys().collect();
        keys.sort();
        assert_eq!(keys, vec!["checkedIn", "status"], "{d}");
        let text = r.json().to_string();
        assert!(!text.contains("Beta Ltd") && !text.contains("Acme"), "{text}");
    }
}

async fn unknown_tickets_and_other_accounts_tickets_are_404(b: Backend) {
    let p = spawn_paid(b).await;
    let other = p.new_account("other").await;
    let (_, theirs) = issued(&p, &other, 1).await;
    let (mine_campaign, _) = issued(&p, &p.account, 1).await;
    let code = code_of(&theirs[0]);
    let r = verify(&p, &p.account.private, json!({"ticketCode": code, "autoVerify": true})).await;
    assert_error(&r, 404, "not_found");
    let r = verify(&p, &p.account.private, json!({"ticketCode": "qr_00"})).await;
    assert_error(&r, 404, "not_found");
    // Their ticket was not touched.
    let r = verify(&p, &other.private, json!({"ticketCode": code})).await;
    assert_eq!(r.json()["data"]["checkedIn"], false, "{}", r.json());
    // A campaign key sees only its campaign's tickets.
    let (_, second) = issued(&p, &p.account, 1).await;
    let cmp = p.create_key(&p.account.slug, "campaign", Some(&mine_campaign), "tickets:read", &[]).await;
    let r = verify_form1(&p, &cmp, json!({"ticketCode": code_of(&second[0])})).await;
    assert_error(&r, 404, "not_found");
}

async fn scopes_decide_who_may_read_and_who_may_check_in(b: Backend) {
    let p = spawn_paid(b).await;
    let (_, tickets) = issued(&p, &p.account, 1).await;
    let code = code_of(&tickets[0]);
    let reader = p.create_key(&p.account.slug, "private", None, "tickets:read", &[]).await;
    let r = verify(&p, &reader, json!({"ticketCode": code, "autoVerify": true})).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["data"]["result"], "valid", "no tickets:write, no check-in: {}", r.json());
    assert_eq!(r.json()["data"]["checkedIn"], false);
    let none = p.create_key(&p.account.slug, "private", None, "campaigns:read", &[]).await;
    let r = verify(&p, &none, json!({"ticketCode": code})).await;
    assert_error(&r, 403, "insufficient_scope");
    let r = verify(&p, &p.account.private, json!({})).await;
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), vec!["ticketCode"]);
    let r = verify(&p, &p.account.private, json!({"ticketCode": code, "gate": 1})).await;
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), vec!["gate"]);
    let r = verify(&p, &p.account.private, json!({"ticketCode": code, "checkedInBy": ""})).await;
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), vec!["checkedInBy"]);
}

async fn sql(p: &PayApp, statement: &str, arg: &str) {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let url = if p.database_url.is_empty() { p.config.effective_database_url() } else { p.database_url.clone() };
    let mut conn = sqlx::AnyConnection::connect(&url).await.expect("connect");
    sqlx::query(statement).bind(arg).execute(&mut conn).await.expect("sql");
}

async fn a_void_ticket_or_an_archived_campaign_never_checks_in(b: Backend) {
    let p = spawn_paid(b).await;
    let (c, tickets) = issued(&p, &p.account, 2).await;
    let (void, open) = (code_of(&tickets[0]), code_of(&tickets[1]));
    sql(&p, "UPDATE tickets SET status = 'void' WHERE ticket_code = $1", &void).await;
    let r = verify(&p, &p.account.private, json!({"ticketCode": void, "autoVerify": true})).await;
    assert_eq!(r.json()["data"]["result"], "void", "{}", r.json());
    assert_eq!(r.json()["data"]["checkedIn"], false);
    let r = verify_form1(&p, &p.account.public, json!({"ticketCode": void})).await;
    assert_eq!(r.json()["data"]["status"], "void");
    let _: Value = p
        .api()
        .patch(&format!("/api/white-label/v1/campaigns/{c}"), &json!({"status": "archived"}), StatusCode::OK)
        .await;
    let r = verify(&p, &p.account.private, json!({"ticketCode": open, "autoVerify": true})).await;
    assert_eq!(r.json()["data"]["result"], "campaign_archived", "{}", r.json());
    assert_eq!(r.json()["data"]["checkedIn"], false);
}

async fn sixty_four_concurrent_check_ins_of_one_ticket_check_it_in_exactly_once(b: Backend) {
    let p = spawn_paid(b).await;
    let (_, tickets) = issued(&p, &p.account, 1).await;
    let code = code_of(&tickets[0]);
    let client = p.client();
    let mut tasks = Vec::new();
    for i in 0..64 {
        let client = client.clone();
        let body =
            serde_json::to_vec(&json!({"ticketCode": code, "autoVerify": true, "checkedInBy": format!("gate-{i}")}))
                .expect("json");
        tasks.push(tokio::spawn(async move { client.send_raw(Method::POST, VERIFY, body, None).await.expect("send") }));
    }
    let (mut won, mut already, mut other) = (0, 0, 0);
    let mut by = std::collections::BTreeSet::new();
    for t in tasks {
        let r = t.await.expect("task");
        let d = r.json()["data"].clone();
        match (r.status, d["result"].as_str()) {
            (200, Some("checked_in")) => won += 1,
            (200, Some("already_checked_in")) => already += 1,
            _ => other += 1,
        }
        if let Some(b) = d["checkedInBy"].as_str() {
            by.insert(b.to_string());
        }
    }
    assert_eq!((won, already, other), (1, 63, 0));
    assert_eq!(by.len(), 1, "every answer names the one winner: {by:?}");
    let audit = p.store.audit_entries(&p.account.id, 200).await.expect("audit");
    assert_eq!(audit.iter().filter(|e| e.action == "ticket.checked_in").count(), 1);
}

/// Check-ins arriving together share one transaction and one conditional update (group commit):
/// 32 distinct tickets, each checked in twice at once, must give 32 winners (each with its own
/// gate agent and one audit entry) and 32 `already_checked_in`, however the batches fall.
async fn concurrent_check_ins_of_many_tickets_each_win_once_with_their_own_agent(b: Backend) {
    let p = spawn_paid(b).await;
    let mut codes = Vec::new();
    for _ in 0..4 {
        let (_, tickets) = issued(&p, &p.account, 8).await;
        codes.extend(tickets.iter().map(code_of));
    }
    assert_eq!(codes.len(), 32);
    let client = p.client();
    let mut tasks = Vec::new();
    for round in 0..2 {
        for (i, code) in codes.iter().enumerate() {
            let client = client.clone();
            let agent = format!("gate-{i}-{round}");
            let body = serde_json::to_vec(&json!({"ticketCode": code, "autoVerify": true, "checkedInBy": agent}))
                .expect("json");
            let code = code.clone();
            tasks.push(tokio::spawn(async move {
                (code, client.send_raw(Method::POST, VERIFY, body, None).await.expect("send"))
            }));
        }
    }
    let mut winners: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let (mut already, mut other) = (0, 0);
    for t in tasks {
        let (code, r) = t.await.expect("task");
        let d = r.json()["data"].clone();
        match (r.status, d["result"].as_str()) {
            (200, Some("checked_in")) => {
                let by = d["checkedInBy"].as_str().expect("checkedInBy").to_string();
                let i = codes.iter().position(|c| *c == code).expect("known code");
                assert!(by.starts_with(&format!("gate-{i}-")), "{code} was checked in by {by}");
                assert!(winners.insert(code, by).is_none(), "a ticket was checked in twice");
            }
            (200, Some("already_checked_in")) => already += 1,
            _ => other += 1,
        }
    }
    assert_eq!((winners.len(), already, other), (32, 32, 0));
    let audit = p.store.audit_entries(&p.account.id, 500).await.expect("audit");
    assert_eq!(audit.iter().filter(|e| e.action == "ticket.checked_in").count(), 32);
    // Each ticket now shows its winner.
    for (code, by) in &winners {
        let body = serde_json::to_vec(&json!({"ticketCode": code})).expect("json");
        let r = client.send_raw(Method::POST, VERIFY, body, None).await.expect("send");
        assert_eq!(r.json()["data"]["checkedInBy"], json!(by));
    }
}

on_both!(
    the_signed_view_shows_attendee_answers_and_the_domain_key_view_never_does,
    concurrent_check_ins_of_many_tickets_each_win_once_with_their_own_agent,
    a_signed_auto_verify_checks_in_once_then_answers_already_checked_in,
    without_auto_verify_a_ticket_is_read_by_code_or_qr_token_and_not_checked_in,
    form_1_with_a_domain_key_answers_status_and_checked_in_only,
    unknown_tickets_and_other_accounts_tickets_are_404,
    scopes_decide_who_may_read_and_who_may_check_in,
    a_void_ticket_or_an_archived_campaign_never_checks_in,
    sixty_four_concurrent_check_ins_of_one_ticket_check_it_in_exactly_once,
);

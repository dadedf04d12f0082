//! Integration tests: my-tickets (D8, D16.9–10) through the real server, with the passcode
//! e-mailed for real to the sandbox's SMTP sink, on SQLite and PostgreSQL.
use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};

use crate::support::client::{assert_error, detail_fields, send};
use crate::support::mail::spawn_mailing;
use crate::support::payments::PayApp;
use crate::support::server::{drain, Backend, TestApp, TestKey};
use crate::support::tickets::{code_of, issued, issued_with_answers};

const REQUEST: &str = "/api/white-label/v1/my-tickets/request-otp";
const VERIFY: &str = "/api/white-label/v1/my-tickets/verify-otp";
const LIST: &str = "/api/white-label/v1/my-tickets/list";
const QR: &str = "/api/white-label/v1/my-tickets/qr";

async fn post(app: &TestApp, key: &TestKey, path: &str, body: Value) -> RawResponse {
    send(app, key, Method::POST, path, Some(body)).await
}

/// The newest passcode mailed to `to`.
fn passcode(p: &PayApp, to: &str) -> Option<String> {
    p.sandbox.mail().into_iter().find(|m| m["to"].as_str().is_some_and(|t| t.contains(to))).and_then(|m| {
        // "Your passcode … for <campaign> is 123456." (the title may hold digits too).
        let text = m["text"].as_str().unwrap_or_default().to_string();
        let first = text.lines().next().unwrap_or_default().to_string();
        first.rsplit_once(" is ").map(|(_, code)| code.trim_end_matches('.').to_string())
    })
}

async fn request(p: &PayApp, campaign: &str, email: &str) -> String {
    let r = post(p, &p.account.private, REQUEST, json!({"campaignId": campaign, "email": email})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    r.json()["data"]["challengeId"].as_str().expect("challengeId").to_string()
}

async fn sign_in(p: &PayApp, campaign: &str) -> String {
    let challenge = request(p, campaign, "buyer@example.com").await;
    drain(p).await;
    let code = passcode(p, "buyer@example.com").expect("a passcode was mailed");
    let r = post(p, &p.account.private, VERIFY, json!({"challengeId": challenge, "code": code})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    r.json()["data"]["sessionToken"].as_str().expect("sessionToken").to_string()
}

async fn a_holder_gets_a_passcode_by_mail_and_sees_their_tickets_and_qr_codes(b: Backend) {
    let p = spawn_mailing(b).await;
    let (c, tickets) = issued(&p, &p.account, 2).await;
    let challenge = request(&p, &c, "buyer@example.com").await;
    assert!(challenge.starts_with("otp_"));
    drain(&p).await;
    let mail = p.sandbox.mail();
    let m = mail.iter().find(|m| m["subject"].as_str().is_some_and(|s| s.contains("passcode"))).expect("passcode mail");
    assert!(m["from"].as_str().is_some_and(|f| f.contains("tickets@example.com")), "{m}");
    let code = passcode(&p, "buyer@example.com").expect("code");
    let r = post(&p, &p.account.private, VERIFY, json!({"challengeId": challenge, "code": code})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let d = r.json()["data"].clone();
    let token = d["sessionToken"].as_str().expect("token").to_string();
    assert!(d["expiresAt"].is_string());
    let r = post(&p, &p.account.private, LIST, json!({"sessionToken": token})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let list = r.json()["data"].as_array().expect("array").clone();
    assert_eq!(list.len(), 2);
    for (mine, bought) in list.iter().zip(&tickets) {
        assert_eq!(mine["ticketCode"], bought["ticketCode"]);
        assert!(mine["qrToken"].as_str().is_some_and(|q| q.starts_with("qr_")), "{mine}");
        assert_eq!(mine["campaign"]["id"], c.as_str());
    }
    let r = post(
        &p,
        &p.account.private,
        QR,
        json!({"sessionToken": token, "ticketCode": code_of(&tickets[1]).to_lowercase()}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let q = r.json()["data"].clone();
    assert_eq!(q["ticketCode"], tickets[1]["ticketCode"]);
    assert!(q["svg"].as_str().is_some_and(|s| s.contains("<svg")), "{q}");
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD.decode(q["pngBase64"].as_str().expect("png")).expect("base64");
    assert_eq!(&png[1..4], b"PNG");
    // The passcode works once.
    let r = post(&p, &p.account.private, VERIFY, json!({"challengeId": challenge, "code": code})).await;
    assert_error(&r, 409, "conflict");
}

async fn the_list_shows_each_tickets_attendee_answers(b: Backend) {
    let p = spawn_mailing(b).await;
    let (c, tickets) = issued_with_answers(&p).await;
    let token = sign_in(&p, &c).await;
    let r = post(&p, &p.account.private, LIST, json!({"sessionToken": token})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    // The buyer holds the first ticket; the second is its own attendee's (kofi@example.com).
    let list = r.json()["data"].as_array().expect("array").clone();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["ticketCode"], tickets[0]["ticketCode"]);
    assert_eq!(
        list[0]["attendee"]["answers"],
        json!({"company": "Acme", "work_email": "ama@acme.example", "diet": "vegan"}),
        "{list:?}"
    );
}

async fn an_address_without_tickets_gets_the_same_answer_and_no_mail(b: Backend) {
    let p = spawn_mailing(b).await;
    let (c, _) = issued(&p, &p.account, 1).await;
    let r = post(&p, &p.account.private, REQUEST, json!({"campaignId": c, "email": "nobody@example.com"})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let mut keys: Vec<String> = r.json()["data"].as_object().expect("object").keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, vec!["challengeId", "expiresAt"], "the same shape as for a holder");
    let challenge = r.json()["data"]["challengeId"].as_str().expect("id").to_string();
    drain(&p).await;
    assert!(passcode(&p, "nobody@example.com").is_none(), "no mail for an address without tickets");
    let r = post(&p, &p.account.private, VERIFY, json!({"challengeId": challenge, "code": "123456"})).await;
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), vec!["code"]);
}

async fn wrong_codes_count_down_and_five_lock_the_challenge_even_for_the_right_code(b: Backend) {
    let p = spawn_mailing(b).await;
    let (c, _) = issued(&p, &p.account, 1).await;
    let challenge = request(&p, &c, "buyer@example.com").await;
    drain(&p).await;
    let code = passcode(&p, "buyer@example.com").expect("code");
    let wrong = if code == "000000" { "111111" } else { "000000" };
    for left in (1..=4).rev() {
        let r = post(&p, &p.account.private, VERIFY, json!({"challengeId": challenge, "code": wrong})).await;
        let body = assert_error(&r, 400, "validation_failed");
        assert!(body["details"][0]["message"].as_str().is_some_and(|m| m.contains(&format!("{left} tr"))), "{body}");
    }
    let r = post(&p, &p.account.private, VERIFY, json!({"challengeId": challenge, "code": wrong})).await;
    assert_error(&r, 409, "conflict");
    let r = post(&p, &p.account.private, VERIFY, json!({"challengeId": challenge, "code": code})).await;
    let body = assert_error(&r, 409, "conflict");
    assert!(body["error"].as_str().is_some_and(|e| e.contains("locked")), "{body}");
    // Malformed bodies and unknown challenges.
    let r = post(&p, &p.account.private, VERIFY, json!({"challengeId": challenge, "code": "12ab"})).await;
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), vec!["code"]);
    let r = post(&p, &p.account.private, VERIFY, json!({})).await;
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), vec!["challengeId", "code"]);
    let r = post(&p, &p.account.private, VERIFY, json!({"challengeId": "otp_nope", "code": "123456"})).await;
    assert_error(&r, 404, "not_found");
}

async fn sql(p: &PayApp, statement: &str) {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let url = if p.database_url.is_empty() { p.config.effective_database_url() } else { p.database_url.clone() };
    let mut conn = sqlx::AnyConnection::connect(&url).await.expect("connect");
    sqlx::query(statement).execute(&mut conn).await.expect("sql");
}

async fn an_expired_passcode_and_an_expired_session_are_refused(b: Backend) {
    let p = spawn_mailing(b).await;
    let (c, _) = issued(&p, &p.account, 1).await;
    let challenge = request(&p, &c, "buyer@example.com").await;
    drain(&p).await;
    let code = passcode(&p, "buyer@example.com").expect("code");
    sql(&p, "UPDATE otp_challenges SET expires_at = 0").await;
    let r = post(&p, &p.account.private, VERIFY, json!({"challengeId": challenge, "code": code})).await;
    let body = assert_error(&r, 409, "conflict");
    assert!(body["error"].as_str().is_some_and(|e| e.contains("expired")), "{body}");
    sql(&p, "UPDATE otp_challenges SET created_at = created_at - 120000").await;
    let token = sign_in(&p, &c).await;
    sql(&p, "UPDATE customer_sessions SET expires_at = 0").await;
    let r = post(&p, &p.account.private, LIST, json!({"sessionToken": token})).await;
    assert_error(&r, 401, "invalid_key");
    let r = post(&p, &p.account.private, LIST, json!({"sessionToken": "tms_unknown"})).await;
    assert_error(&r, 401, "invalid_key");
}

async fn resends_wait_a_minute_and_an_address_gets_five_passcodes_an_hour(b: Backend) {
    let p = spawn_mailing(b).await;
    let (c, _) = issued(&p, &p.account, 1).await;
    request(&p, &c, "buyer@example.com").await;
    let r = post(&p, &p.account.private, REQUEST, json!({"campaignId": c, "email": "buyer@example.com"})).await;
    assert_error(&r, 429, "rate_limited");
    let after: u64 =
        r.headers.get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).expect("Retry-After");
    assert!((1..=60).contains(&after), "{after}");
    // The same limit for an address without tickets: the limits reveal nothing either.
    request(&p, &c, "nobody@example.com").await;
    let r = post(&p, &p.account.private, REQUEST, json!({"campaignId": c, "email": "nobody@example.com"})).await;
    assert_error(&r, 429, "rate_limited");
    for _ in 0..4 {
        sql(&p, "UPDATE otp_challenges SET created_at = created_at - 61000").await;
        request(&p, &c, "buyer@example.com").await;
    }
    sql(&p, "UPDATE otp_challenges SET created_at = created_at - 61000").await;
    let r = post(&p, &p.account.private, REQUEST, json!({"campaignId": c, "email": "buyer@example.com"})).await;
    let body = assert_error(&r, 429, "rate_limited");
    assert!(body["error"].as_str().is_some_and(|e| e.contains("hour")), "{body}");
    // Validation and scoping.
    let r = post(&p, &p.account.private, REQUEST, json!({"email": "not-an-address"})).await;
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), vec!["campaignId", "email"]);
    let r = post(
        &p,
        &p.account.private,
        REQUEST,
        json!({"campaignId": "0190f5c2-8a4b-7c3d-9e1f-2a3b4c5d6e7f", "email": "a@example.com"}),
    )
    .await;
    assert_error(&r, 404, "not_found");
    let no_scope = p.create_key(&p.account.slug, "private", None, "tickets:read", &[]).await;
    let r = post(&p, &no_scope, REQUEST, json!({"campaignId": c, "email": "a@example.com"})).await;
    assert_error(&r, 403, "insufficient_scope");
}

async fn a_session_stays_in_its_account_campaign_and_tickets(b: Backend) {
    let p = spawn_mailing(b).await;
    let (c, _) = issued(&p, &p.account, 1).await;
    let (other_campaign, others) = issued(&p, &p.account, 1).await;
    let token = sign_in(&p, &c).await;
    let r = post(&p, &p.account.private, LIST, json!({"sessionToken": token, "campaignId": other_campaign})).await;
    assert_error(&r, 404, "not_found");
    let r = post(&p, &p.account.private, LIST, json!({"sessionToken": token})).await;
    assert_eq!(r.json()["data"].as_array().map(Vec::len), Some(1), "only this campaign's tickets: {}", r.json());
    let r = post(&p, &p.account.private, QR, json!({"sessionToken": token, "ticketCode": code_of(&others[0])})).await;
    assert_error(&r, 404, "not_found");
    let other = p.new_account("other").await;
    let r = post(&p, &other.private, LIST, json!({"sessionToken": token})).await;
    assert_error(&r, 404, "not_found");
    let r = post(&p, &p.account.private, LIST, json!({})).await;
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), vec!["sessionToken"]);
}

async fn passcodes_session_tokens_and_qr_tokens_never_reach_the_audit_log(b: Backend) {
    let p = spawn_mailing(b).await;
    let (c, _) = issued(&p, &p.account, 1).await;
    let challenge = request(&p, &c, "buyer@example.com").await;
    drain(&p).await;
    let code = passcode(&p, "buyer@example.com").expect("code");
    let r = post(&p, &p.account.private, VERIFY, json!({"challengeId": challenge, "code": code})).await;
    let token = r.json()["data"]["sessionToken"].as_str().expect("token").to_string();
    let r = post(&p, &p.account.private, LIST, json!({"sessionToken": token})).await;
    let qr = r.json()["data"][0]["qrToken"].as_str().expect("qr").to_string();
    let code_ticket = r.json()["data"][0]["ticketCode"].as_str().expect("code").to_string();
    post(
        &p,
        &p.account.private,
        crate::support::tickets::VERIFY,
        json!({"ticketCode": code_ticket, "autoVerify": true}),
    )
    .await;
    let out = p.cli(&["admin", "audit", "list", "--account", &p.account.slug, "--json"]);
    let log = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("ticket.checked_in"), "the audit list runs and shows the check-in: {log}");
    for secret in [&code, &token, &qr] {
        assert!(!log.contains(secret.as_str()), "a secret reached the audit log");
    }
    // The stored passcode mail keeps no code once it has been sent.
    let (items, _) = p
        .store
        .list_notifications(
            &p.account.id,
            &tessera_server::store::notifications::NotificationQuery { page: 1, limit: 100, ..Default::default() },
        )
        .await
        .expect("list");
    for n in items {
        assert!(!n.payload.to_string().contains(&code), "passcode kept in {:?}", n.event_type);
    }
}

async fn the_sdk_runs_my_tickets_check_in_and_notifications(b: Backend) {
    let p = spawn_mailing(b).await;
    let (c, tickets) = issued(&p, &p.account, 1).await;
    let sdk = p.client();
    let challenge = sdk.my_tickets_request_otp(&c, "buyer@example.com").await.expect("request-otp");
    drain(&p).await;
    let code = passcode(&p, "buyer@example.com").expect("code");
    let session = sdk.my_tickets_verify_otp(&challenge.challenge_id, &code).await.expect("verify-otp");
    let mine = sdk.my_tickets_list(&session.session_token).await.expect("list");
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].ticket.ticket_code, code_of(&tickets[0]));
    let qr = sdk.my_tickets_qr(&session.session_token, &mine[0].ticket.ticket_code).await.expect("qr");
    assert!(qr.svg.contains("<svg"));
    let first = sdk.verify_ticket(&mine[0].qr_token, true, Some("gate-1")).await.expect("verify");
    assert_eq!(first.result, "checked_in");
    let second = sdk.verify_ticket(&mine[0].ticket.ticket_code, true, Some("gate-2")).await.expect("verify");
    assert_eq!((second.result.as_str(), second.checked_in_by.as_deref()), ("already_checked_in", Some("gate-1")));
    let n = sdk
        .send_notification(&json!({"channel": "email", "eventType": "event.reminder", "recipient": "ama@example.com", "payload": {"text": "Hi"}}))
        .await
        .expect("send");
    assert_eq!(n.status, "queued");
    drain(&p).await;
    assert_eq!(sdk.notification(&n.id).await.expect("show").status, "sent");
    let list = sdk.notifications("status=sent").await.expect("list");
    assert!(list.data.iter().any(|x| x.id == n.id));
}

async fn a_holder_is_matched_whatever_the_case_of_her_address(b: Backend) {
    // D17.10: the buyer gave `Ama@Example.com`; she asks as `ama@example.com` and as `AMA@EXAMPLE.COM`.
    let p = spawn_mailing(b).await;
    let key = &p.account.private;
    let c = crate::support::catalogue::running_campaign(&p, key, "ticketing").await;
    let t = crate::support::catalogue::ticket_type(&p, key, &c, 0.0, 10).await;
    let body = json!({
        "campaign_id": c, "ticket_id": t, "email": "Ama@Example.com", "quantity": 1,
        "full_name": "Ama Mensah", "callbackUrl": format!("https://{}/thanks", p.account.domain),
    });
    let r = send(&p, key, Method::POST, crate::support::payments::INITIALIZE, Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let bought = r.json()["data"]["tickets"][0].clone();
    let challenge = request(&p, &c, "ama@example.com").await;
    drain(&p).await;
    let code = passcode(&p, "ama@example.com").expect("a passcode was mailed to the lower-cased address");
    let r = post(&p, key, VERIFY, json!({"challengeId": challenge, "code": code})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let token = r.json()["data"]["sessionToken"].as_str().expect("token").to_string();
    let r = post(&p, key, LIST, json!({"sessionToken": token})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let list = r.json()["data"].as_array().expect("array").clone();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["ticketCode"], bought["ticketCode"]);
    assert_eq!(list[0]["attendee"]["email"], "Ama@example.com", "stored as given (domain lower-cased)");
}

on_both!(
    the_list_shows_each_tickets_attendee_answers,
    a_holder_is_matched_whatever_the_case_of_her_address,
    the_sdk_runs_my_tickets_check_in_and_notifications,
    a_holder_gets_a_passcode_by_mail_and_sees_their_tickets_and_qr_codes,
    an_address_without_tickets_gets_the_same_answer_and_no_mail,
    wrong_codes_count_down_and_five_lock_the_challenge_even_for_the_right_code,
    an_expired_passcode_and_an_expired_session_are_refused,
    resends_wait_a_minute_and_an_address_gets_five_passcodes_an_hour,
    a_session_stays_in_its_account_campaign_and_tickets,
    passcodes_session_tokens_and_qr_tokens_never_reach_the_audit_log,
);

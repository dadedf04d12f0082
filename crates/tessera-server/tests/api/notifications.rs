//! Integration tests: `POST /notifications`, their reads, and delivery by the notification
//! worker over SMTP (the sandbox's sink) and the SMS gateway (the sandbox's), with retries
//! ending in `failed` or `sent` (spec "POST /notifications", D9.2, D13, D16.11).
use serde_json::{json, Value};
use tessera_client::Method;
use tessera_server::domain::time::now_ms;
use tessera_server::workers;

use crate::support::client::{assert_error, detail_fields, send, StatusCode};
use crate::support::mail::point_mail_at_sandbox;
use crate::support::payments::{spawn_paid_with, PayApp};
use crate::support::server::{drain, Backend};
use crate::support::tickets::{code_of, issued};

const NOTIFICATIONS: &str = "/api/white-label/v1/notifications";

async fn spawn(b: Backend, scale: f64) -> PayApp {
    let p = spawn_paid_with(b, |c| {
        c.security.allow_private_endpoints = true;
        c.notifications.retry_scale = scale;
    })
    .await;
    point_mail_at_sandbox(&p, &p.account.private).await;
    p
}

async fn create(p: &PayApp, body: Value) -> Value {
    let r = send(p, &p.account.private, Method::POST, NOTIFICATIONS, Some(body)).await;
    assert_eq!(r.status, 202, "{}", r.json());
    r.json()["data"].clone()
}

async fn show(p: &PayApp, id: &str) -> Value {
    let b: Value = p.api().get(&format!("{NOTIFICATIONS}/{id}"), StatusCode::OK).await;
    b["data"].clone()
}

async fn an_email_is_queued_then_sent_over_smtp_in_the_accounts_branding(b: Backend) {
    let p = spawn(b, 1.0).await;
    let _: Value = p.api().patch("/api/white-label/v1/settings/branding", &json!({"config": {"platformName": "Akwaaba Events", "primaryColor": "#0a7d33", "supportEmail": "help@akwaaba.example"}}), StatusCode::OK).await;
    let d = create(
        &p,
        json!({"channel": "email", "eventType": "event.reminder", "recipient": "ama@example.com", "subject": "Doors open at 6",
               "payload": {"title": "Reminder", "text": "See you tonight at 6."}}),
    )
    .await;
    assert_eq!(d["status"], "queued");
    assert_eq!(d["channel"], "email");
    assert_eq!(d["eventType"], "event.reminder");
    let id = d["id"].as_str().expect("id").to_string();
    assert_eq!(show(&p, &id).await["status"], "queued");
    drain(&p).await;
    let n = show(&p, &id).await;
    assert_eq!(n["status"], "sent", "{n}");
    assert_eq!(n["attempts"], 1);
    assert!(n["sentAt"].is_string());
    let mail = p.sandbox.mail();
    let m = mail.iter().find(|m| m["subject"] == "Doors open at 6").expect("mail in the sink");
    assert!(m["to"].as_str().is_some_and(|t| t.contains("ama@example.com")), "{m}");
    assert!(m["text"].as_str().is_some_and(|t| t.contains("See you tonight at 6.")), "{m}");
    let html = m["html"].as_str().expect("html part");
    assert!(
        html.contains("Akwaaba Events") && html.contains("#0a7d33") && html.contains("help@akwaaba.example"),
        "{html}"
    );
}

async fn a_ticket_confirmation_carries_every_ticket_code_and_its_qr(b: Backend) {
    let p = spawn(b, 1.0).await;
    let (_, tickets) = issued(&p, &p.account, 2).await;
    drain(&p).await;
    let mail = p.sandbox.mail();
    let m = mail
        .iter()
        .find(|m| m["subject"].as_str().is_some_and(|s| s.starts_with("Your tickets")))
        .expect("confirmation");
    let (text, html) = (m["text"].as_str().unwrap_or_default(), m["html"].as_str().unwrap_or_default());
    for t in &tickets {
        assert!(text.contains(&code_of(t)) && html.contains(&code_of(t)), "every code in both parts");
    }
    assert_qr_parts(m, &tickets);
    let list: Value = p.api().get(&format!("{NOTIFICATIONS}?status=sent&channel=email"), StatusCode::OK).await;
    assert_eq!(list["data"][0]["eventType"], "ticket.purchase.confirmed");
    assert_eq!(list["pagination"]["total"], 1);
}

/// D17.8: the HTML references `cid:<id>` for each ticket, each id is an image/png part with
/// that Content-ID (inside a multipart/related), and no `data:` URI is left.
fn assert_qr_parts(m: &Value, tickets: &[Value]) {
    let html = m["html"].as_str().unwrap_or_default();
    assert!(!html.contains("data:"), "no data: URI remains");
    let parts = m["parts"].as_array().expect("parts");
    let mut ids = Vec::new();
    for t in tickets {
        let code = code_of(t);
        let id = parts
            .iter()
            .filter_map(|p| p["contentId"].as_str())
            .find(|id| id.contains(code.as_str()))
            .unwrap_or_else(|| panic!("a part for {code}: {parts:?}"));
        assert!(html.contains(&format!("src=\"cid:{id}\"")), "the HTML references cid:{id}");
        let part = parts.iter().find(|p| p["contentId"] == id).expect("part");
        assert_eq!(part["contentType"], "image/png", "{part}");
        assert_eq!(part["disposition"], "inline", "{part}");
        assert!(part["size"].as_u64().is_some_and(|n| n > 100), "{part}");
        ids.push(id.to_string());
    }
    ids.dedup();
    assert_eq!(ids.len(), tickets.len(), "one image per ticket");
    assert_eq!(parts.iter().filter(|p| p["contentType"] == "image/png").count(), tickets.len());
}

/// Points the account's e-mail at a port nothing listens on: every attempt fails.
async fn relay_down(p: &PayApp) {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let _: Value = p
        .api()
        .patch(
            "/api/white-label/v1/settings/notifications",
            &json!({"config": {"email": {"smtpHost": "127.0.0.1", "smtpPort": closed}}}),
            StatusCode::OK,
        )
        .await;
}

/// The `tessera_qr_images_rendered_total` counter of `GET /metrics`.
async fn qr_renders(p: &PayApp) -> u64 {
    let text = p.http.get(p.url("/metrics")).send().await.expect("scrape").text().await.expect("body");
    text.lines()
        .find(|l| l.starts_with("tessera_qr_images_rendered_total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// Item 5: while no relay answers, each retry sends the QR images drawn at the first attempt;
/// they are not drawn again, and the message finally sent carries them.
async fn a_confirmations_qr_images_are_rendered_once_across_retries(b: Backend) {
    let p = spawn(b, 0.00001).await;
    relay_down(&p).await;
    let before = qr_renders(&p).await;
    let (_, tickets) = issued(&p, &p.account, 3).await;
    let mut now = now_ms();
    for _ in 0..3 {
        workers::notifications::execute_due(&p.state, now).await.expect("run");
        now += 3_600_000;
    }
    let (s, list) = p.signed(Method::GET, &format!("{NOTIFICATIONS}?status=queued&channel=email"), None).await;
    assert_eq!(s, 200, "{list}");
    let n = &list["data"][0];
    assert_eq!((n["eventType"].as_str(), n["attempts"].as_i64()), (Some("ticket.purchase.confirmed"), Some(3)), "{n}");
    assert_eq!(qr_renders(&p).await - before, 3, "three images drawn once, not once per attempt");
    point_mail_at_sandbox(&p, &p.account.private).await;
    workers::notifications::execute_due(&p.state, now).await.expect("run");
    assert_eq!(show(&p, n["id"].as_str().expect("id")).await["status"], "sent");
    assert_eq!(qr_renders(&p).await - before, 3, "the fourth attempt sent the same images");
    let mail = p.sandbox.mail();
    let m = mail.iter().find(|m| m["subject"].as_str().is_some_and(|s| s.starts_with("Your tickets"))).expect("mail");
    assert_qr_parts(m, &tickets);
}

async fn an_sms_goes_through_the_accounts_gateway_with_a_normalized_number(b: Backend) {
    let p = spawn(b, 1.0).await;
    let d = create(&p, json!({"channel": "sms", "eventType": "event.reminder", "recipient": "024 123 4567", "payload": {"text": "Gates open at 6."}})).await;
    drain(&p).await;
    assert_eq!(show(&p, d["id"].as_str().expect("id")).await["status"], "sent");
    let sms = p.sandbox.sms();
    assert_eq!(sms[0]["to"], "+233241234567", "{sms:?}");
    assert_eq!(sms[0]["from"], "Akwaaba");
    assert_eq!(sms[0]["text"], "Gates open at 6.");
}

async fn an_sms_is_retried_while_the_gateway_is_down_and_sent_when_it_is_back(b: Backend) {
    let p = spawn(b, 1.0).await;
    p.sandbox.set_outage("sms", true);
    let d = create(&p, json!({"channel": "sms", "eventType": "event.reminder", "recipient": "+233241234567", "payload": {"text": "Hi"}})).await;
    let id = d["id"].as_str().expect("id").to_string();
    let now = now_ms();
    assert!(workers::notifications::execute_due(&p.state, now).await.expect("run"));
    let n = show(&p, &id).await;
    assert_eq!((n["status"].as_str(), n["attempts"].as_i64()), (Some("queued"), Some(1)), "{n}");
    assert!(n["lastError"].as_str().is_some_and(|e| e.contains("503")), "{n}");
    // The next attempt is due a minute later, not before.
    assert!(!workers::notifications::execute_due(&p.state, now + 59_000).await.expect("run"));
    p.sandbox.set_outage("sms", false);
    assert!(workers::notifications::execute_due(&p.state, now + 61_000).await.expect("run"));
    let n = show(&p, &id).await;
    assert_eq!((n["status"].as_str(), n["attempts"].as_i64()), (Some("sent"), Some(2)), "{n}");
}

async fn a_notification_fails_after_six_attempts_when_the_smtp_peer_stays_down(b: Backend) {
    let p = spawn(b, 0.00001).await;
    relay_down(&p).await;
    let d = create(&p, json!({"channel": "email", "eventType": "event.reminder", "recipient": "ama@example.com", "payload": {"text": "Hi"}})).await;
    let id = d["id"].as_str().expect("id").to_string();
    let mut now = now_ms();
    for _ in 0..6 {
        workers::notifications::execute_due(&p.state, now).await.expect("run");
        now += 3_600_000;
    }
    let n = show(&p, &id).await;
    assert_eq!(n["status"], "failed", "{n}");
    assert_eq!(n["attempts"], 6);
    assert!(n["lastError"].as_str().is_some_and(|e| e.contains("SMTP")), "{n}");
    assert!(!workers::notifications::execute_due(&p.state, now).await.expect("run"), "no job is left");
}

async fn a_message_with_no_template_and_no_content_fails_with_a_reason(b: Backend) {
    let p = spawn(b, 1.0).await;
    let d = create(&p, json!({"channel": "email", "eventType": "custom.thing", "recipient": "ama@example.com"})).await;
    drain(&p).await;
    let n = show(&p, d["id"].as_str().expect("id")).await;
    assert_eq!(n["status"], "failed");
    assert!(n["lastError"].as_str().is_some_and(|e| e.contains("no template")), "{n}");
    assert!(p.sandbox.mail().is_empty(), "no empty message was sent");
}

async fn each_notification_rule_is_a_400_naming_its_field(b: Backend) {
    let p = spawn(b, 1.0).await;
    let post = |body: Value| send(&p, &p.account.private, Method::POST, NOTIFICATIONS, Some(body));
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({}), vec!["channel", "eventType", "recipient"]),
        (json!({"channel": "fax", "eventType": "x", "recipient": "a@example.com"}), vec!["channel"]),
        (json!({"channel": "email", "eventType": "Bad Type!", "recipient": "a@example.com"}), vec!["eventType"]),
        (json!({"channel": "email", "eventType": "x", "recipient": "not-mail"}), vec!["recipient"]),
        (json!({"channel": "sms", "eventType": "x", "recipient": "a@example.com"}), vec!["recipient"]),
        (json!({"channel": "email", "eventType": "x", "recipient": "a@example.com", "subject": ""}), vec!["subject"]),
        (json!({"channel": "email", "eventType": "x", "recipient": "a@example.com", "payload": [1]}), vec!["payload"]),
        (
            json!({"channel": "email", "eventType": "x", "recipient": "a@example.com", "payload": {"big": "x".repeat(17_000)}}),
            vec!["payload"],
        ),
        (json!({"channel": "email", "eventType": "x", "recipient": "a@example.com", "priority": 1}), vec!["priority"]),
    ];
    for (body, fields) in cases {
        let r = post(body.clone()).await;
        let e = assert_error(&r, 400, "validation_failed");
        let mut got = detail_fields(&e);
        got.sort();
        assert_eq!(got, fields, "{body}");
    }
    let _: Value = p.api().get(&format!("{NOTIFICATIONS}?status=lost"), StatusCode::BAD_REQUEST).await;
}

async fn notifications_need_their_scope_and_stay_in_their_account(b: Backend) {
    let p = spawn(b, 1.0).await;
    let d = create(
        &p,
        json!({"channel": "email", "eventType": "x", "recipient": "a@example.com", "payload": {"text": "t"}}),
    )
    .await;
    let id = d["id"].as_str().expect("id");
    let other = p.new_account("other").await;
    let (s, _) = p.signed_as(&other.private, Method::GET, &format!("{NOTIFICATIONS}/{id}"), None).await;
    assert_eq!(s, 404);
    let (s, list) = p.signed_as(&other.private, Method::GET, NOTIFICATIONS, None).await;
    assert_eq!((s, list["pagination"]["total"].as_u64()), (200, Some(0)));
    let no_scope = p.create_key(&p.account.slug, "private", None, "tickets:read", &[]).await;
    let r = send(
        &p,
        &no_scope,
        Method::POST,
        NOTIFICATIONS,
        Some(json!({"channel": "email", "eventType": "x", "recipient": "a@example.com"})),
    )
    .await;
    assert_error(&r, 403, "insufficient_scope");
}

async fn a_campaign_status_change_notifies_the_organizer(b: Backend) {
    let p = spawn(b, 1.0).await;
    let _: Value = p
        .api()
        .patch(
            "/api/white-label/v1/settings/notifications",
            &json!({"config": {"organizerEmail": "boss@example.com"}}),
            StatusCode::OK,
        )
        .await;
    let (c, _) = issued(&p, &p.account, 1).await;
    drain(&p).await;
    let (s, body) = p
        .signed(Method::PATCH, &format!("/api/white-label/v1/campaigns/{c}"), Some(json!({"status": "archived"})))
        .await;
    assert_eq!(s, 200, "{body}");
    drain(&p).await;
    let mail = p.sandbox.mail();
    let m =
        mail.iter().find(|m| m["to"].as_str().is_some_and(|t| t.contains("boss@example.com"))).expect("organizer mail");
    assert!(m["subject"].as_str().is_some_and(|s| s.contains("archived")), "{m}");
}

on_both!(
    an_email_is_queued_then_sent_over_smtp_in_the_accounts_branding,
    a_ticket_confirmation_carries_every_ticket_code_and_its_qr,
    an_sms_goes_through_the_accounts_gateway_with_a_normalized_number,
    an_sms_is_retried_while_the_gateway_is_down_and_sent_when_it_is_back,
    a_notification_fails_after_six_attempts_when_the_smtp_peer_stays_down,
    a_confirmations_qr_images_are_rendered_once_across_retries,
    a_message_with_no_template_and_no_content_fails_with_a_reason,
    each_notification_rule_is_a_400_naming_its_field,
    notifications_need_their_scope_and_stay_in_their_account,
    a_campaign_status_change_notifies_the_organizer,
);

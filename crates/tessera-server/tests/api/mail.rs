//! Integration tests: the mail transport (D17.7, D17.44). E-mail leaves over STARTTLS (or
//! implicit TLS) with the relay's certificate checked against the built-in roots plus
//! `security.extra_ca_file`; the relay here is the sandbox's SMTP sink, whose CA the server trusts
//! through that file. A TLS failure fails the message with a `lastError` naming it and nothing
//! goes in clear; plain SMTP (`smtpTls: none`) is for loopback rigs where private endpoints are
//! allowed.
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tessera_client::Method;
use tessera_server::domain::time::now_ms;
use tessera_server::workers;

use crate::support::client::{assert_error, detail_fields, send};
use crate::support::mail::{mailed_code, point_mail_at_sandbox};
use crate::support::payments::{spawn_paid_with, PayApp};
use crate::support::portal::{reseller, start};
use crate::support::server::{drain, spawn_with, Backend, TestKey};
use crate::support::tickets::issued;

const NOTIFICATIONS: &str = "/api/white-label/v1/notifications";
const SETTINGS: &str = "/api/white-label/v1/settings/notifications";

/// A server whose platform mail goes to the sandbox's sink through `[email] smtp_url` (`scheme`
/// `smtp` or `smtps`), the sink's CA trusted through `security.extra_ca_file`, and private
/// endpoints NOT allowed: certificate checking and STARTTLS need no loophole.
async fn spawn_platform_mail(b: Backend, scheme: &str) -> PayApp {
    let sandbox = crate::support::payments::start_sandbox().await;
    let smtp = match scheme {
        "smtps" => sandbox.listen_smtps("127.0.0.1:0".parse().expect("addr")).await.expect("smtps"),
        _ => sandbox.smtp_addr().expect("smtp"),
    };
    let app = spawn_with(b, |c| {
        c.security.extra_ca_file = sandbox.write_ca_pem(&c.data_dir).expect("ca").display().to_string();
        c.email.smtp_url = format!("{scheme}://mailer:s3cret-pass@{smtp}").into();
        c.security.allow_private_endpoints = false;
        c.security.rate_limit_per_account = 0;
        c.security.rate_limit_per_ip = 0;
        c.workers.enabled = false;
    })
    .await;
    PayApp { app, sandbox }
}

/// The mails the sink received for `to`.
fn mails_for(p: &PayApp, to: &str) -> Vec<Value> {
    p.sandbox.mail().into_iter().filter(|m| m["to"].as_str().is_some_and(|t| t.contains(to))).collect()
}

async fn patch_mail(p: &PayApp, key: &TestKey, email: Value) -> (u16, Value) {
    let (s, b) = p.signed_as(key, Method::PATCH, SETTINGS, Some(json!({"config": {"email": email}}))).await;
    (s, b)
}

async fn notify(p: &PayApp, to: &str, text: &str) -> String {
    let body = json!({"channel": "email", "eventType": "event.reminder", "recipient": to, "payload": {"text": text}});
    let r = send(p, &p.account.private, Method::POST, NOTIFICATIONS, Some(body)).await;
    assert_eq!(r.status, 202, "{}", r.json());
    r.json()["data"]["id"].as_str().expect("id").to_string()
}

async fn show(p: &PayApp, id: &str) -> Value {
    let (s, b) = p.signed(Method::GET, &format!("{NOTIFICATIONS}/{id}"), None).await;
    assert_eq!(s, 200, "{b}");
    b["data"].clone()
}

/// Runs the notification worker until `id` is final (six attempts at most); the notification.
async fn until_final(p: &PayApp, id: &str) -> Value {
    let mut now = now_ms();
    for _ in 0..6 {
        workers::notifications::execute_due(&p.state, now).await.expect("run");
        let n = show(p, id).await;
        if n["status"] != "queued" {
            return n;
        }
        now += 3_600_000;
    }
    show(p, id).await
}

async fn purchase_mail_my_tickets_passcode_and_portal_sign_in_arrive_over_starttls_with_the_certificate_checked(
    b: Backend,
) {
    let p = spawn_platform_mail(b, "smtp").await;
    // The purchase e-mail.
    let (campaign, _) = issued(&p, &p.account, 1).await;
    drain(&p).await;
    let bought = mails_for(&p, "buyer@example.com");
    let confirmation = bought
        .iter()
        .find(|m| m["subject"].as_str().is_some_and(|s| s.starts_with("Your tickets")))
        .expect("the purchase e-mail arrived");
    assert_eq!(confirmation["tls"], true, "over STARTTLS: {confirmation}");
    // The my-tickets passcode.
    let r = send(
        &p,
        &p.account.private,
        Method::POST,
        "/api/white-label/v1/my-tickets/request-otp",
        Some(json!({"campaignId": campaign, "email": "buyer@example.com"})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    drain(&p).await;
    let passcode = mails_for(&p, "buyer@example.com")
        .into_iter()
        .find(|m| m["subject"].as_str().is_some_and(|s| s.starts_with("Your passcode for")))
        .expect("the my-tickets passcode arrived");
    assert_eq!(passcode["tls"], true, "{passcode}");
    // The portal sign-in passcode.
    let owner = format!("owner-{}@reseller.example.com", uuid::Uuid::now_v7().simple());
    reseller(&p, &p.account, &owner).await;
    start(&p, &owner).await;
    drain(&p).await;
    assert!(mailed_code(&p, &owner).is_some(), "the portal passcode arrived");
    assert!(mails_for(&p, &owner).iter().all(|m| m["tls"] == true), "over STARTTLS");
    let (s, list) = p.signed(Method::GET, &format!("{NOTIFICATIONS}?status=failed"), None).await;
    assert_eq!((s, list["pagination"]["total"].as_u64()), (200, Some(0)), "{list}");
}

async fn implicit_tls_delivers_through_the_sinks_second_listener(b: Backend) {
    // The platform's smtps:// …
    let p = spawn_platform_mail(b.clone(), "smtps").await;
    let id = notify(&p, "ama@example.com", "Implicit from the platform.").await;
    assert_eq!(until_final(&p, &id).await["status"], "sent");
    let m = &mails_for(&p, "ama@example.com")[0];
    assert_eq!(
        (m["tls"].as_bool(), m["text"].as_str().map(str::trim)),
        (Some(true), Some("Implicit from the platform."))
    );
    // … and an account's `smtpTls: tls` (private endpoints allowed for its loopback host only).
    let p = spawn_paid_with(b, |c| c.security.allow_private_endpoints = true).await;
    let smtps = p.sandbox.listen_smtps("127.0.0.1:0".parse().expect("addr")).await.expect("smtps");
    let (s, body) = patch_mail(
        &p,
        &p.account.private,
        json!({"smtpHost": "127.0.0.1", "smtpPort": smtps.port(), "smtpTls": "tls"}),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["data"]["config"]["email"]["smtpTls"], "tls");
    let id = notify(&p, "kofi@example.com", "Implicit from the account.").await;
    assert_eq!(until_final(&p, &id).await["status"], "sent");
    assert_eq!(mails_for(&p, "kofi@example.com")[0]["tls"], true);
}

async fn a_relay_with_an_untrusted_certificate_fails_the_message_and_nothing_goes_in_clear(b: Backend) {
    // The sink's CA is not trusted: its certificate is unknown to the built-in roots.
    let p = spawn_paid_with(b, |c| {
        c.security.allow_private_endpoints = true;
        c.security.extra_ca_file = String::new();
        c.notifications.retry_scale = 0.00001;
    })
    .await;
    point_mail_at_sandbox(&p, &p.account.private).await;
    let (s, body) = patch_mail(&p, &p.account.private, json!({"username": "mailer", "password": "s3cret-pass"})).await;
    assert_eq!(s, 200, "{body}");
    let id = notify(&p, "ama@example.com", "Never in clear.").await;
    let n = until_final(&p, &id).await;
    assert_eq!((n["status"].as_str(), n["attempts"].as_i64()), (Some("failed"), Some(6)), "{n}");
    let e = n["lastError"].as_str().unwrap_or_default();
    assert!(e.contains("TLS certificate rejected") && e.contains("nothing was sent in clear"), "{n}");
    assert!(!e.contains("s3cret-pass"), "no password in lastError");
    assert!(p.sandbox.mail().is_empty(), "nothing reached the relay: {:?}", p.sandbox.mail());
}

/// A relay that offers no STARTTLS, recording every line a client sends it.
async fn plain_only_relay() -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let (r, mut w) = stream.into_split();
                let mut lines = BufReader::new(r).lines();
                let _ = w.write_all(b"220 plain-relay ESMTP\r\n").await;
                while let Ok(Some(line)) = lines.next_line().await {
                    log.lock().expect("log").push(line.clone());
                    let answer: &[u8] = match line.to_ascii_uppercase().split(' ').next().unwrap_or_default() {
                        "EHLO" => b"250-plain-relay\r\n250 AUTH PLAIN LOGIN\r\n",
                        "QUIT" => b"221 bye\r\n",
                        _ => b"250 ok\r\n",
                    };
                    let _ = w.write_all(answer).await;
                }
            });
        }
    });
    (addr, seen)
}

async fn a_relay_that_offers_no_starttls_gets_neither_the_password_nor_the_mail(b: Backend) {
    let p = spawn_paid_with(b, |c| {
        c.security.allow_private_endpoints = true;
        c.notifications.retry_scale = 0.00001;
    })
    .await;
    let (relay, seen) = plain_only_relay().await;
    let (s, body) = patch_mail(
        &p,
        &p.account.private,
        json!({"smtpHost": "127.0.0.1", "smtpPort": relay.port(), "username": "mailer", "password": "s3cret-pass"}),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let id = notify(&p, "ama@example.com", "Never in clear.").await;
    let n = until_final(&p, &id).await;
    assert_eq!(n["status"], "failed", "{n}");
    assert!(n["lastError"].as_str().is_some_and(|e| e.contains("no STARTTLS") && e.contains("in clear")), "{n}");
    let seen = seen.lock().expect("log").clone();
    assert!(seen.iter().any(|l| l.starts_with("EHLO")), "the relay was reached: {seen:?}");
    for l in &seen {
        let verb = l.to_ascii_uppercase();
        assert!(
            !verb.starts_with("AUTH") && !verb.starts_with("MAIL") && !verb.starts_with("DATA"),
            "sent in clear: {l}"
        );
    }
}

async fn plain_smtp_is_refused_when_saved_unless_private_endpoints_are_allowed(b: Backend) {
    let p = spawn_platform_mail(b.clone(), "smtp").await;
    let key = p.account.private.clone();
    let r = send(
        &p,
        &key,
        Method::PATCH,
        SETTINGS,
        Some(json!({"config": {"email": {"smtpHost": "smtp.example.com", "smtpTls": "none"}}})),
    )
    .await;
    let e = assert_error(&r, 400, "validation_failed");
    assert_eq!(detail_fields(&e), vec!["config.email.smtpTls"], "{e}");
    let r = send(&p, &key, Method::PATCH, SETTINGS, Some(json!({"config": {"email": {"smtpTls": "ssl"}}}))).await;
    assert_eq!(detail_fields(&assert_error(&r, 400, "validation_failed")), vec!["config.email.smtpTls"]);
    let (s, all) = p.signed(Method::GET, "/api/white-label/v1/settings?categories=notifications", None).await;
    assert_eq!((s, &all["data"]["notifications"]), (200, &json!({})), "nothing refused was stored: {all}");
    // STARTTLS and implicit TLS save anywhere.
    for tls in ["starttls", "tls"] {
        let (s, body) = patch_mail(&p, &key, json!({"smtpHost": "smtp.example.com", "smtpTls": tls})).await;
        assert_eq!(s, 200, "{body}");
    }
    // A loopback rig (private endpoints allowed) may keep plain mail; it arrives in clear.
    let p = spawn_paid_with(b, |c| c.security.allow_private_endpoints = true).await;
    point_mail_at_sandbox(&p, &p.account.private).await;
    let (s, body) = patch_mail(&p, &p.account.private, json!({"smtpTls": "none"})).await;
    assert_eq!(s, 200, "{body}");
    let id = notify(&p, "ama@example.com", "Plain on loopback.").await;
    assert_eq!(until_final(&p, &id).await["status"], "sent");
    assert_eq!(mails_for(&p, "ama@example.com")[0]["tls"], false);
}

on_both!(
    purchase_mail_my_tickets_passcode_and_portal_sign_in_arrive_over_starttls_with_the_certificate_checked,
    implicit_tls_delivers_through_the_sinks_second_listener,
    a_relay_with_an_untrusted_certificate_fails_the_message_and_nothing_goes_in_clear,
    a_relay_that_offers_no_starttls_gets_neither_the_password_nor_the_mail,
    plain_smtp_is_refused_when_saved_unless_private_endpoints_are_allowed,
);

//! Integration tests: SMS through Africa's Talking (D18.4, D18.45), against a fake built from its
//! documentation (`support::fakes_sms`), through Tessera's HTTP API: `POST /notifications` with
//! `channel: sms`, delivered by the notification worker. The form and headers on the wire; an
//! invalid number failing at once; refusals, a bad key and a 500 retried as D11.4; the settings'
//! rules and the write-only key; the sandbox's Africa's Talking wire; and the `http` wire kept.
use serde_json::{json, Value};
use tessera_client::Method;
use tessera_server::domain::time::now_ms;
use tessera_server::workers;

use crate::support::client::{assert_invalid, send, StatusCode};
use crate::support::fakes_sms::{AtAnswer, AtFake, INSUFFICIENT_BALANCE, INVALID_PHONE_NUMBER};
use crate::support::payments::{spawn_paid_with, PayApp};
use crate::support::server::{drain, Backend};

const NOTIFICATIONS: &str = "/api/white-label/v1/notifications";
const SETTINGS: &str = "/api/white-label/v1/settings/notifications";
const READ: &str = "/api/white-label/v1/settings?categories=notifications";
const USERNAME: &str = "akwaaba";
const KEY: &str = "atsk_live_0f9e8d7c6b5a4321";

async fn spawn(b: Backend) -> PayApp {
    spawn_paid_with(b, |c| {
        // The fake listens on loopback over plain http.
        c.security.allow_private_endpoints = true;
        c.notifications.retry_scale = 1.0;
    })
    .await
}

async fn set_sms(p: &PayApp, sms: Value) -> Value {
    let b: Value = p.api().patch(SETTINGS, &json!({"config": {"sms": sms}}), StatusCode::OK).await;
    b["data"]["config"]["sms"].clone()
}

/// The account's SMS through the fake's Africa's Talking application.
async fn point_at(p: &PayApp, fake: &AtFake, api_key: &str) {
    set_sms(
        p,
        json!({"provider": "africastalking", "username": USERNAME, "apiKey": api_key, "senderId": "Akwaaba", "baseUrl": fake.url}),
    )
    .await;
}

/// Queues an SMS of `text` to `recipient`; its id.
async fn queue(p: &PayApp, recipient: &str, text: &str) -> String {
    let body =
        json!({"channel": "sms", "eventType": "event.reminder", "recipient": recipient, "payload": {"text": text}});
    let r = send(p, &p.account.private, Method::POST, NOTIFICATIONS, Some(body)).await;
    assert_eq!(r.status, 202, "{}", r.json());
    r.json()["data"]["id"].as_str().expect("id").to_string()
}

async fn show(p: &PayApp, id: &str) -> Value {
    let b: Value = p.api().get(&format!("{NOTIFICATIONS}/{id}"), StatusCode::OK).await;
    b["data"].clone()
}

fn state_of(n: &Value) -> (Option<&str>, Option<i64>) {
    (n["status"].as_str(), n["attempts"].as_i64())
}

fn sorted(fields: &[(String, String)]) -> Vec<(String, String)> {
    let mut f = fields.to_vec();
    f.sort();
    f
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    sorted(&v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>())
}

async fn an_sms_goes_through_africas_talking_with_its_form_fields_and_headers(b: Backend) {
    let p = spawn(b).await;
    let fake = AtFake::start(USERNAME, KEY).await;
    point_at(&p, &fake, KEY).await;
    let id = queue(&p, "024 123 4567", "Gates open at 6.").await;
    drain(&p).await;
    let n = show(&p, &id).await;
    assert_eq!(state_of(&n), (Some("sent"), Some(1)), "{n}");
    assert!(n["sentAt"].is_string(), "{n}");
    let got = fake.requests();
    assert_eq!(got.len(), 1, "{got:?}");
    let r = &got[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/version1/messaging"));
    assert_eq!(r.header("apikey"), Some(KEY));
    assert_eq!(r.header("accept"), Some("application/json"));
    assert_eq!(r.header("content-type"), Some("application/x-www-form-urlencoded"));
    assert!(r.header("authorization").is_none(), "the key goes in apiKey only");
    assert_eq!(
        sorted(&r.form),
        pairs(&[("username", USERNAME), ("to", "+233241234567"), ("message", "Gates open at 6."), ("from", "Akwaaba")]),
        "exactly the documented fields; body {}",
        r.body
    );

    // No sender id: no `from` (Africa's Talking's default sender), never a made-up name.
    set_sms(&p, json!({"senderId": null})).await;
    let id = queue(&p, "+233201234567", "Second").await;
    drain(&p).await;
    assert_eq!(show(&p, &id).await["status"], "sent");
    let got = fake.requests();
    assert_eq!(got.len(), 2);
    assert_eq!(
        sorted(&got[1].form),
        pairs(&[("username", USERNAME), ("to", "+233201234567"), ("message", "Second")]),
        "{}",
        got[1].body
    );
}

async fn an_invalid_number_fails_at_once_with_africas_talkings_status_and_is_not_retried(b: Backend) {
    let p = spawn(b).await;
    let fake = AtFake::start(USERNAME, KEY).await;
    point_at(&p, &fake, KEY).await;
    fake.answer(INVALID_PHONE_NUMBER);
    let id = queue(&p, "+233241234567", "Hi").await;
    let now = now_ms();
    assert!(workers::notifications::execute_due(&p.state, now).await.expect("run"));
    let n = show(&p, &id).await;
    assert_eq!(state_of(&n), (Some("failed"), Some(1)), "{n}");
    assert_eq!(n["lastError"], "InvalidPhoneNumber", "the recipient's status, as Africa's Talking named it");
    // No job is left: a day later nothing is due and nothing more was sent.
    assert!(!workers::notifications::execute_due(&p.state, now + 86_400_000).await.expect("run"));
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(state_of(&show(&p, &id).await), (Some("failed"), Some(1)));
}

async fn a_refused_recipient_is_retried_on_the_schedule_and_sent_once_accepted(b: Backend) {
    let p = spawn(b).await;
    let fake = AtFake::start(USERNAME, KEY).await;
    point_at(&p, &fake, KEY).await;
    fake.answer(INSUFFICIENT_BALANCE);
    let id = queue(&p, "+233241234567", "Hi").await;
    let now = now_ms();
    assert!(workers::notifications::execute_due(&p.state, now).await.expect("run"));
    let n = show(&p, &id).await;
    assert_eq!(state_of(&n), (Some("queued"), Some(1)), "{n}");
    assert_eq!(n["lastError"], "InsufficientBalance", "{n}");
    // D11.4: the second attempt is due a minute after the first, not before.
    assert!(!workers::notifications::execute_due(&p.state, now + 59_000).await.expect("run"));
    assert_eq!(fake.requests().len(), 1);
    fake.answer(AtAnswer::Success);
    assert!(workers::notifications::execute_due(&p.state, now + 61_000).await.expect("run"));
    let n = show(&p, &id).await;
    assert_eq!(state_of(&n), (Some("sent"), Some(2)), "{n}");
    assert_eq!(fake.requests().len(), 2);
}

async fn a_bad_key_and_a_server_error_are_retried_and_no_error_shows_the_key(b: Backend) {
    let p = spawn(b).await;
    let fake = AtFake::start(USERNAME, KEY).await;
    let wrong = "atsk_live_WRONG_0000111122";
    point_at(&p, &fake, wrong).await;
    let id = queue(&p, "+233241234567", "Hi").await;
    let now = now_ms();
    assert!(workers::notifications::execute_due(&p.state, now).await.expect("run"));
    let n = show(&p, &id).await;
    assert_eq!(state_of(&n), (Some("queued"), Some(1)), "{n}");
    let error = n["lastError"].as_str().expect("lastError");
    assert!(error.contains("401") && error.contains("The supplied authentication is invalid"), "{n}");
    assert_eq!(fake.requests()[0].header("apikey"), Some(wrong), "the key was sent, in its header");

    point_at(&p, &fake, KEY).await;
    fake.answer(AtAnswer::ServerError);
    assert!(workers::notifications::execute_due(&p.state, now + 61_000).await.expect("run"));
    let n = show(&p, &id).await;
    assert_eq!(state_of(&n), (Some("queued"), Some(2)), "{n}");
    assert!(n["lastError"].as_str().is_some_and(|e| e.contains("500")), "{n}");

    fake.answer(AtAnswer::Success);
    assert!(workers::notifications::execute_due(&p.state, now + 61_000 + 301_000).await.expect("run"));
    assert_eq!(state_of(&show(&p, &id).await), (Some("sent"), Some(3)));
    let (s, all) = p.signed(Method::GET, NOTIFICATIONS, None).await;
    assert_eq!(s, 200);
    let text = all.to_string();
    assert!(!text.contains(KEY) && !text.contains(wrong), "no key in any notification: {text}");
}

async fn sms_settings_name_the_broken_field_and_the_key_is_write_only(b: Backend) {
    let p = spawn(b).await;
    let patch =
        |sms: Value| send(&p, &p.account.private, Method::PATCH, SETTINGS, Some(json!({"config": {"sms": sms}})));
    assert_invalid(&patch(json!({"provider": "twilio"})).await, &["config.sms.provider"]);
    assert_invalid(&patch(json!({"provider": "africastalking", "apiKey": KEY})).await, &["config.sms.username"]);
    assert_invalid(&patch(json!({"provider": "africastalking", "username": ""})).await, &["config.sms.username"]);
    let (_, stored) = p.signed(Method::GET, READ, None).await;
    assert_eq!(stored["data"]["notifications"], json!({}), "nothing refused was stored: {stored}");

    let r =
        patch(json!({"provider": "africastalking", "username": "sandbox", "apiKey": KEY, "senderId": "Akwaaba"})).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert!(!String::from_utf8_lossy(&r.body).contains(KEY), "the answer does not echo the key");
    let sms = &r.json()["data"]["config"]["sms"];
    assert_eq!(sms["apiKey"], format!("••••{}", &KEY[KEY.len() - 4..]), "{sms}");
    assert_eq!((sms["provider"].as_str(), sms["username"].as_str()), (Some("africastalking"), Some("sandbox")));
    let (_, read) = p.signed(Method::GET, READ, None).await;
    assert_eq!(read["data"]["notifications"]["sms"]["apiKey"], "••••4321", "{read}");
    assert!(!read.to_string().contains(KEY), "{read}");
    // The rule holds against what is stored: the username cannot be taken away alone.
    assert_invalid(&patch(json!({"username": null})).await, &["config.sms.username"]);
    // Sent back as its mask, the key stays as it was.
    let sms = set_sms(&p, json!({"apiKey": format!("••••{}", &KEY[KEY.len() - 4..]), "provider": "http"})).await;
    assert_eq!((sms["provider"].as_str(), sms["apiKey"].as_str()), (Some("http"), Some("••••4321")));
}

async fn the_sandbox_speaks_africas_talking_and_refuses_a_number_when_told(b: Backend) {
    let p = spawn(b).await;
    set_sms(
        &p,
        json!({"provider": "africastalking", "username": "sandbox", "apiKey": KEY, "baseUrl": p.sandbox.sms_url()}),
    )
    .await;
    let id = queue(&p, "+233241234567", "Hello from the sandbox").await;
    drain(&p).await;
    assert_eq!(show(&p, &id).await["status"], "sent");
    let sms = p.sandbox.sms();
    assert_eq!(
        (sms[0]["to"].as_str(), sms[0]["from"].as_str(), sms[0]["text"].as_str(), sms[0]["wire"].as_str()),
        (Some("+233241234567"), Some("AFRICASTKNG"), Some("Hello from the sandbox"), Some("africastalking")),
        "{sms:?}"
    );
    let control = format!("{}/sandbox/sms/refusals", p.sandbox.base_url());
    let r = p
        .http
        .post(&control)
        .json(&json!({"number": "+233201234567", "statusCode": 403}))
        .send()
        .await
        .expect("control");
    assert_eq!(r.status(), 200);
    let id = queue(&p, "+233201234567", "Refused").await;
    drain(&p).await;
    let n = show(&p, &id).await;
    assert_eq!((state_of(&n), n["lastError"].as_str()), ((Some("failed"), Some(1)), Some("InvalidPhoneNumber")), "{n}");
    assert_eq!(p.sandbox.sms().len(), 1, "a refused message is not recorded as received");
}

async fn the_http_wire_still_carries_an_sms_by_default_and_when_named(b: Backend) {
    let p = spawn(b).await;
    for provider in [Value::Null, json!("http")] {
        let mut sms = json!({"baseUrl": p.sandbox.sms_url(), "apiKey": "sms_test_key_123", "senderId": "Akwaaba"});
        if !provider.is_null() {
            sms["provider"] = provider.clone();
        }
        set_sms(&p, sms).await;
        let text = format!("Gates open ({provider})");
        let id = queue(&p, "024 123 4567", &text).await;
        drain(&p).await;
        assert_eq!(show(&p, &id).await["status"], "sent");
        let got = p.sandbox.sms();
        assert_eq!(
            (got[0]["to"].as_str(), got[0]["from"].as_str(), got[0]["text"].as_str()),
            (Some("+233241234567"), Some("Akwaaba"), Some(text.as_str())),
            "{got:?}"
        );
        assert!(got[0]["wire"].is_null(), "the organization gateway's wire: {got:?}");
    }
}

on_both!(
    an_sms_goes_through_africas_talking_with_its_form_fields_and_headers,
    an_invalid_number_fails_at_once_with_africas_talkings_status_and_is_not_retried,
    a_refused_recipient_is_retried_on_the_schedule_and_sent_once_accepted,
    a_bad_key_and_a_server_error_are_retried_and_no_error_shows_the_key,
    sms_settings_name_the_broken_field_and_the_key_is_write_only,
    the_sandbox_speaks_africas_talking_and_refuses_a_number_when_told,
    the_http_wire_still_carries_an_sms_by_default_and_when_named,
);

//! Mail to the sandbox's SMTP sink, and the passcodes it carries.
use serde_json::{json, Value};

use super::client::StatusCode;
use super::payments::{spawn_paid_with, PayApp};
use super::server::{Backend, TestKey};

/// A server whose demo-style account sends e-mail to the sandbox's SMTP sink.
pub async fn spawn_mailing(b: Backend) -> PayApp {
    let p = spawn_paid_with(b, |c| c.security.allow_private_endpoints = true).await;
    point_mail_at_sandbox(&p, &p.account.private).await;
    p
}

/// Sends the mail and SMS of the account of `key` to the sandbox's SMTP sink and SMS API.
pub async fn point_mail_at_sandbox(p: &PayApp, key: &TestKey) {
    let smtp = p.sandbox.smtp_addr().expect("smtp sink");
    let config = json!({
        "email": {"smtpHost": smtp.ip().to_string(), "smtpPort": smtp.port(), "fromAddress": "tickets@example.com", "fromName": "Akwaaba Events"},
        "sms": {"baseUrl": p.sandbox.sms_url(), "apiKey": "sms_test_key_123", "senderId": "Akwaaba"},
    });
    let path = "/api/white-label/v1/settings/notifications";
    let _: Value = p.api_as(key).patch(path, &json!({"config": config}), StatusCode::OK).await;
}

/// The newest passcode mailed to `to` ("Your passcode is 123456."); addresses compared
/// case-insensitively (D17.10).
pub fn mailed_code(p: &PayApp, to: &str) -> Option<String> {
    let to = to.to_lowercase();
    p.sandbox.mail().into_iter().find(|m| m["to"].as_str().is_some_and(|t| t.to_lowercase().contains(&to))).and_then(
        |m| {
            let text = m["text"].as_str().unwrap_or_default().to_string();
            let first = text.lines().next().unwrap_or_default().to_string();
            first.rsplit_once(" is ").map(|(_, code)| code.trim_end_matches('.').to_string())
        },
    )
}

pub fn mails_to(p: &PayApp, to: &str) -> usize {
    p.sandbox.mail().iter().filter(|m| m["to"].as_str().is_some_and(|t| t.contains(to))).count()
}

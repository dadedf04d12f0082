//! Notifications (D9.2, D13): channels, delivery states, the rules a `POST /notifications`
//! body is held to, and a message as it is rendered for its transport.
use std::sync::Arc;

use serde_json::Value;

use super::check::{email, free_object, phone, text, Check};
use super::DomainError;

str_enum! {
    /// How a notification goes out.
    pub enum NotificationChannel {
        Email = "email",
        Sms = "sms",
    } else "must be email or sms"
}

str_enum! {
    /// Delivery state: queued → sending → sent | failed (back to queued between attempts).
    pub enum NotificationStatus {
        Queued = "queued",
        Sending = "sending",
        Sent = "sent",
        Failed = "failed",
    } else "must be queued, sending, sent or failed"
}

/// The fields of a `POST /notifications` body as sent.
#[derive(Debug, Default, Clone, Copy)]
pub struct NotificationInput<'a> {
    pub channel: Option<&'a str>,
    pub event_type: Option<&'a str>,
    pub recipient: Option<&'a str>,
    pub subject: Option<&'a str>,
    pub payload: Option<&'a Value>,
}

/// A valid notification to queue.
#[derive(Debug, Clone, PartialEq)]
pub struct NotificationRequest {
    pub channel: NotificationChannel,
    pub event_type: String,
    /// An e-mail address (`email`) or an E.164 number (`sms`).
    pub recipient: String,
    pub subject: Option<String>,
    /// Template variables or direct content (`{}` when none).
    pub payload: Value,
}

/// An event type: 1–100 characters of `a-z 0-9 . _ -`.
fn event_type(field: &str, e: &str) -> Result<String, DomainError> {
    let ok = !e.is_empty()
        && e.len() <= 100
        && e.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if ok {
        Ok(e.to_string())
    } else {
        Err(DomainError::field(field, "must be 1 to 100 characters of a-z, 0-9, '.', '_' and '-'"))
    }
}

/// Parses a `POST /notifications` body; the recipient is checked for the channel it goes by.
pub fn parse_request(i: &NotificationInput<'_>) -> Result<NotificationRequest, DomainError> {
    let mut check = Check::new();
    let channel =
        check.required("channel", i.channel).and_then(|c| check.take(NotificationChannel::parse("channel", c)));
    let event = check.required("eventType", i.event_type).and_then(|e| check.take(event_type("eventType", e)));
    let recipient = match (check.required("recipient", i.recipient), channel) {
        (Some(r), Some(NotificationChannel::Sms)) => check.take(phone("recipient", r)),
        (Some(r), Some(NotificationChannel::Email)) => check.take(email("recipient", r)),
        (_, None) | (None, _) => None,
    };
    let subject = i.subject.and_then(|s| check.take(text("subject", s, 1, 255)));
    let payload = match i.payload {
        None => Some(Value::Object(Default::default())),
        Some(p) => check.take(free_object("payload", p)).map(|_| p.clone()),
    };
    check.finish()?;
    Ok(NotificationRequest {
        channel: channel.unwrap_or(NotificationChannel::Email),
        event_type: event.unwrap_or_default(),
        recipient: recipient.unwrap_or_default(),
        subject,
        payload: payload.unwrap_or_default(),
    })
}

/// Event type of the my-tickets passcode mail (its payload's code is scrubbed once delivered).
pub const PASSCODE_EVENT: &str = "my_tickets.passcode";
/// Event type of the reseller portal's passcodes (sign-in and `otp/send`), scrubbed alike.
pub const PORTAL_PASSCODE_EVENT: &str = "portal.passcode";

/// Whether a notification carries a passcode (its payload is scrubbed once it is final).
pub fn carries_passcode(event_type: &str) -> bool {
    event_type == PASSCODE_EVENT || event_type == PORTAL_PASSCODE_EVENT
}

/// A rendered message. `inline` holds the images the HTML references as `cid:<id>` (D17.8):
/// they travel as parts of a multipart/related beside the HTML, never as `data:` URIs.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
    pub inline: Arc<Vec<Inline>>,
}

/// An inline image of a message: its Content-ID (without angle brackets) and PNG bytes.
#[derive(Debug, Clone)]
pub struct Inline {
    pub content_id: String,
    pub png: Vec<u8>,
}

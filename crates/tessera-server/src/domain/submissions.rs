//! Volunteer, vendor and partner applications (`POST /submissions`): their kinds, states, and
//! the rules a body is held to.
use serde_json::Value;

use super::check::{email, free_object, phone, text, Check};
use super::DomainError;

str_enum! {
    /// What an application offers.
    pub enum SubmissionKind {
        Volunteer = "volunteer",
        Vendor = "vendor",
        Partner = "partner",
    } else "must be one of volunteer, vendor, partner"
}

str_enum! {
    /// Where an application stands: every one is `received` (nothing moves it yet).
    pub enum SubmissionStatus {
        Received = "received",
    } else "must be received"
}

/// The fields of a `POST /submissions` body as sent.
#[derive(Debug, Default, Clone, Copy)]
pub struct SubmissionInput<'a> {
    pub kind: Option<&'a str>,
    pub campaign_id: Option<&'a str>,
    pub name: Option<&'a str>,
    pub email: Option<&'a str>,
    pub phone: Option<&'a str>,
    pub message: Option<&'a str>,
    pub fields: Option<&'a Value>,
}

/// A valid application, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSubmission {
    pub kind: SubmissionKind,
    pub campaign_id: Option<String>,
    pub name: String,
    pub email: String,
    pub phone: Option<String>,
    pub message: Option<String>,
    /// Free-form answers (`{}` when none).
    pub fields: Value,
}

/// Parses a `POST /submissions` body.
pub fn parse_new(i: &SubmissionInput<'_>) -> Result<NewSubmission, DomainError> {
    let mut check = Check::new();
    let kind = check.required("type", i.kind).and_then(|k| check.take(SubmissionKind::parse("type", k)));
    let name = check.required("name", i.name).and_then(|n| check.take(text("name", n, 1, 255)));
    let mail = check.required("email", i.email).and_then(|e| check.take(email("email", e)));
    let tel = i.phone.and_then(|p| check.take(phone("phone", p)));
    let message = i.message.and_then(|m| check.take(text("message", m, 0, 5000)));
    let fields = match i.fields {
        None => Some(Value::Object(Default::default())),
        Some(f) => check.take(free_object("fields", f)).map(|_| f.clone()),
    };
    check.finish()?;
    Ok(NewSubmission {
        kind: kind.unwrap_or(SubmissionKind::Volunteer),
        campaign_id: i.campaign_id.map(str::to_string),
        name: name.unwrap_or_default(),
        email: mail.unwrap_or_default(),
        phone: tel,
        message,
        fields: fields.unwrap_or_default(),
    })
}

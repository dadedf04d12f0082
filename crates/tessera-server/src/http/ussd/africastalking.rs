//! Africa's Talking (D17.19): a form `sessionId, serviceCode, phoneNumber, networkCode, text`
//! where `text` holds every input so far joined by `*` (the first request's `text` holds the
//! inputs dialled with the code); the reply is `text/plain`, `CON <screen>` to go on or
//! `END <screen>` to end.
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::{msisdn, session_id, Read};
use crate::domain::ussd::split_inputs;
use crate::flows::ussd::{Reply, RequestKind, UssdRequest};
use crate::http::error::ApiError;

pub fn read(body: &[u8]) -> Result<Read, ApiError> {
    if std::str::from_utf8(body).is_err() {
        return Err(ApiError::field("body", "must be a form (application/x-www-form-urlencoded) in UTF-8"));
    }
    let get = |k: &str| form_urlencoded::parse(body).find(|(key, _)| key == k).map(|(_, v)| v.trim().to_string());
    let sid = get("sessionId").filter(|s| !s.is_empty()).ok_or_else(|| ApiError::field("sessionId", "is required"))?;
    let phone =
        get("phoneNumber").filter(|s| !s.is_empty()).ok_or_else(|| ApiError::field("phoneNumber", "is required"))?;
    let text = get("text").unwrap_or_default();
    Ok(Read {
        request: UssdRequest {
            session_id: session_id("sessionId", sid)?,
            msisdn: msisdn("phoneNumber", &phone)?,
            network: get("networkCode").filter(|s| !s.is_empty()),
            kind: RequestKind::Cumulative { inputs: split_inputs(&text) },
        },
        echo: Default::default(),
    })
}

pub fn render(reply: &Reply) -> Response {
    let prefix = if reply.end { "END" } else { "CON" };
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{prefix} {}", reply.screen)).into_response()
}

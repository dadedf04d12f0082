//! Hubtel (D17.19, D17.40): JSON `{Type, Message, SessionId, Mobile, Operator, Sequence}`.
//! `Type` is `Initiation` (its `Message` is the whole dial string), `Response` (its `Message` is
//! the caller's input), `Release` or `Timeout` (the session is over). The reply is
//! `{Type: "Response" | "Release", Message}`. A request repeated with an old `Sequence` shows the
//! same screen again.
use axum::response::Response;
use serde_json::json;

use super::{json_object, json_reply, msisdn, required, session_id, text, Read};
use crate::flows::ussd::{Reply, RequestKind, UssdRequest};
use crate::http::error::ApiError;

pub fn read(body: &[u8]) -> Result<Read, ApiError> {
    let o = json_object(body)?;
    let kind = match required(&o, "Type")?.to_ascii_lowercase().as_str() {
        "initiation" => RequestKind::Start { dial: text(&o, "Message") },
        "response" => RequestKind::Input {
            input: text(&o, "Message").unwrap_or_default(),
            sequence: o.get("Sequence").and_then(|s| s.as_i64().or_else(|| s.as_str()?.trim().parse().ok())),
        },
        "release" | "timeout" => RequestKind::Abort,
        _ => return Err(ApiError::field("Type", "must be Initiation, Response, Release or Timeout")),
    };
    Ok(Read {
        request: UssdRequest {
            session_id: session_id("SessionId", required(&o, "SessionId")?)?,
            msisdn: msisdn("Mobile", &required(&o, "Mobile")?)?,
            network: text(&o, "Operator"),
            kind,
        },
        echo: Default::default(),
    })
}

pub fn render(reply: &Reply) -> Response {
    json_reply(json!({"Type": if reply.end { "Release" } else { "Response" }, "Message": reply.screen}))
}

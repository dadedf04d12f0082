//! Arkesel (D17.19, D17.40): JSON `{sessionID, userID, newSession, msisdn, userData, network}`;
//! `newSession` true opens a session (its `userData` is the whole dial string), false carries an
//! input. The reply echoes `sessionID`, `userID` and `msisdn` with `message` and
//! `continueSession` (false ends the session).
use axum::response::Response;
use serde_json::{json, Map, Value};

use super::{flag, json_object, json_reply, msisdn, required, session_id, text, Read};
use crate::flows::ussd::{Reply, RequestKind, UssdRequest};
use crate::http::error::ApiError;

pub fn read(body: &[u8]) -> Result<Read, ApiError> {
    let o = json_object(body)?;
    let sid = required(&o, "sessionID")?;
    let raw = required(&o, "msisdn")?;
    let kind = if flag(&o, "newSession")? {
        RequestKind::Start { dial: text(&o, "userData") }
    } else {
        RequestKind::Input { input: text(&o, "userData").unwrap_or_default(), sequence: None }
    };
    let mut echo = Map::new();
    echo.insert("sessionID".into(), Value::String(sid.clone()));
    echo.insert("userID".into(), o.get("userID").cloned().unwrap_or(Value::Null));
    echo.insert("msisdn".into(), Value::String(raw.clone()));
    Ok(Read {
        request: UssdRequest {
            session_id: session_id("sessionID", sid)?,
            msisdn: msisdn("msisdn", &raw)?,
            network: text(&o, "network"),
            kind,
        },
        echo,
    })
}

pub fn render(echo: &Map<String, Value>, reply: &Reply) -> Response {
    json_reply(json!({
        "sessionID": echo.get("sessionID"),
        "userID": echo.get("userID"),
        "msisdn": echo.get("msisdn"),
        "message": reply.screen,
        "continueSession": !reply.end,
    }))
}

//! Nalo (D17.19, D17.40): JSON `{USERID, MSISDN, USERDATA, MSGTYPE, NETWORK}`; `MSGTYPE` true
//! opens a session (its `USERDATA` is the whole dial string), false carries an input. The reply
//! echoes `USERID` and `MSISDN` with `MSG` and `MSGTYPE` (true while the session goes on). Nalo
//! sends no session id: a caller's session is their number's.
use axum::response::Response;
use serde_json::{json, Map, Value};

use super::{flag, json_object, json_reply, msisdn, required, text, Read};
use crate::flows::ussd::{Reply, RequestKind, UssdRequest};
use crate::http::error::ApiError;

pub fn read(body: &[u8]) -> Result<Read, ApiError> {
    let o = json_object(body)?;
    let user = required(&o, "USERID")?;
    let raw = required(&o, "MSISDN")?;
    let number = msisdn("MSISDN", &raw)?;
    let kind = if flag(&o, "MSGTYPE")? {
        RequestKind::Start { dial: text(&o, "USERDATA") }
    } else {
        RequestKind::Input { input: text(&o, "USERDATA").unwrap_or_default(), sequence: None }
    };
    let mut echo = Map::new();
    echo.insert("USERID".into(), Value::String(user));
    echo.insert("MSISDN".into(), Value::String(raw));
    Ok(Read {
        request: UssdRequest { session_id: number.clone(), msisdn: number, network: text(&o, "NETWORK"), kind },
        echo,
    })
}

pub fn render(echo: &Map<String, Value>, reply: &Reply) -> Response {
    json_reply(json!({
        "USERID": echo.get("USERID"),
        "MSISDN": echo.get("MSISDN"),
        "MSG": reply.screen,
        "MSGTYPE": !reply.end,
    }))
}

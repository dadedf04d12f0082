//! `POST /api/white-label/ussd/:gateway/:account?token=…` (D17.19, D17.40): votes by dial. Each
//! USSD gateway calls in its own wire; one adapter file per gateway reads it into the flow's
//! [`UssdRequest`] and writes the flow's [`Reply`] back the way that gateway shows a screen
//! (`CON`/`END` text, or its JSON). The flow ([`crate::flows::ussd`]) owns everything else.
//!
//! What is wrong with the request itself (unknown gateway, a body that is not the gateway's
//! wire, a missing field) is a 400 envelope naming the field, and a wrong token a 401: there is
//! no session to end. Once the request is understood, every answer is the gateway's own: a
//! fault of ours ends the session with a short apology, never a 500.
pub mod africastalking;
pub mod arkesel;
pub mod hubtel;
pub mod nalo;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::ApiError;
use super::openapi::UssdErrors;
use crate::domain::ussd::{normalize_msisdn, screen, Gateway};
use crate::flows::ussd::{self, Reply, UssdRequest};
use crate::flows::FlowError;
use crate::state::AppState;

/// A request read from a gateway's wire, and what its reply must echo.
pub struct Read {
    pub request: UssdRequest,
    /// The fields the gateway wants back (Nalo's `USERID` and `MSISDN`, Arkesel's `sessionID`,
    /// `userID` and `msisdn`).
    pub echo: Map<String, Value>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TokenQuery {
    /// The account's `ussd.callbackToken`.
    token: Option<String>,
}

/// POST /api/white-label/ussd/{gateway}/{account} — the account's USSD callback token, no key
#[utoipa::path(
    post, path = "/api/white-label/ussd/{gateway}/{account}", tag = "ussd", operation_id = "ussd_receive",
    params(
        ("gateway" = String, Path, description = "africastalking, hubtel, nalo or arkesel"),
        ("account" = String, Path, description = "The account's slug"),
        TokenQuery,
    ),
    request_body(content = Object, description = "The gateway's own request: Africa's Talking a form \
        (`sessionId, serviceCode, phoneNumber, networkCode, text`, inputs so far joined by `*`); Hubtel JSON \
        `{Type, Message, SessionId, Mobile, Operator, Sequence}`; Nalo JSON `{USERID, MSISDN, USERDATA, MSGTYPE, \
        NETWORK}`; Arkesel JSON `{sessionID, userID, newSession, msisdn, userData, network}`.",
        content_type = "application/json",
        example = json!({"Type": "Initiation", "Message": "*920*44*AMA*5#", "SessionId": "3c2a9a7e", "Mobile": "233241234567",
            "Operator": "mtn", "Sequence": 1})),
    responses(
        (status = 200, description = "The next screen in the gateway's wire: Africa's Talking `text/plain` \
            `CON …`/`END …`; Hubtel `{Type: Response|Release, Message}`; Nalo `{USERID, MSISDN, MSG, MSGTYPE}` \
            (MSGTYPE true while the session goes on); Arkesel `{sessionID, userID, msisdn, message, continueSession}`. \
            Every screen is at most 160 characters.", body = Object),
        UssdErrors,
    )
)]
pub async fn receive(
    State(state): State<AppState>,
    Path((gateway, account)): Path<(String, String)>,
    Query(q): Query<TokenQuery>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let gateway = Gateway::parse("gateway", &gateway).map_err(ApiError::from)?;
    let read = match gateway {
        Gateway::AfricasTalking => africastalking::read(&body)?,
        Gateway::Hubtel => hubtel::read(&body)?,
        Gateway::Nalo => nalo::read(&body)?,
        Gateway::Arkesel => arkesel::read(&body)?,
    };
    let reply = match ussd::handle(&state, gateway, &account, q.token.as_deref(), read.request).await {
        Ok(r) => r,
        Err(FlowError::Domain(d)) => return Err(d.into()),
        Err(e) => {
            tracing::error!(error = %e, gateway = gateway.as_str(), "a USSD request failed; the session ends");
            Reply { screen: screen::failed(), end: true }
        }
    };
    Ok(match gateway {
        Gateway::AfricasTalking => africastalking::render(&reply),
        Gateway::Hubtel => hubtel::render(&reply),
        Gateway::Nalo => nalo::render(&read.echo, &reply),
        Gateway::Arkesel => arkesel::render(&read.echo, &reply),
    })
}

/// A JSON gateway body as an object (400 `malformed_json` otherwise).
pub(super) fn json_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::malformed_json("the body must be a JSON object")),
        Err(e) => Err(ApiError::malformed_json(format!("the body is not JSON: {e}"))),
    }
}

/// A text field, numbers written as text too; `None` when absent or null.
pub(super) fn text(o: &Map<String, Value>, k: &str) -> Option<String> {
    match o.get(k)? {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(super) fn required(o: &Map<String, Value>, k: &str) -> Result<String, ApiError> {
    text(o, k).filter(|s| !s.is_empty()).ok_or_else(|| ApiError::field(k, "is required"))
}

/// A flag some gateways send as a boolean and some as text (`true`, `1`).
pub(super) fn flag(o: &Map<String, Value>, k: &str) -> Result<bool, ApiError> {
    match o.get(k) {
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "1") => Ok(true),
        Some(Value::String(s)) if matches!(s.trim().to_ascii_lowercase().as_str(), "false" | "0") => Ok(false),
        Some(Value::Number(n)) if n.as_i64() == Some(1) => Ok(true),
        Some(Value::Number(n)) if n.as_i64() == Some(0) => Ok(false),
        None | Some(Value::Null) => Err(ApiError::field(k, "is required")),
        Some(_) => Err(ApiError::field(k, "must be true or false")),
    }
}

/// The caller's number in Tessera's form (400 naming the gateway's field when it is none).
pub(super) fn msisdn(field: &str, raw: &str) -> Result<String, ApiError> {
    normalize_msisdn(raw).ok_or_else(|| ApiError::field(field, "must be a phone number"))
}

/// A gateway's session id: at most 128 characters.
pub(super) fn session_id(field: &str, raw: String) -> Result<String, ApiError> {
    if raw.chars().count() > 128 {
        return Err(ApiError::field(field, "must be at most 128 characters"));
    }
    Ok(raw)
}

/// A JSON reply.
pub(super) fn json_reply(v: Value) -> Response {
    axum::response::IntoResponse::into_response(axum::Json(v))
}

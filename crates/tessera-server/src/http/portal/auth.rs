//! Portal sign-in (D10.1, D16.16): a passcode e-mailed to a member or invited address, exchanged
//! once for an opaque session token (stored hashed, 12 h sliding); logout ends it. Start answers
//! alike, with the same store work, whether or not the e-mail belongs to a reseller; only then is
//! a code sent. The D8.2 limits (60 s resend, 5 an hour) apply per address either way.
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    Portal, PortalBodyErrors, PortalCaller, PortalConflict, PortalEnvelope, PortalErrors, PortalNoMember,
    PortalNotFound, PortalResult, PortalThrottled,
};
use crate::domain::portal::portal_email;
use crate::domain::time::{now_ms, rfc3339};
use crate::flows::customer_access::{self as access, AccessError, Verified};
use crate::http::envelope::request_id;
use crate::http::error::ApiError;
use crate::http::extract::{parse_json, ApiJson};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OtpStartIn {
    #[schema(format = Email)]
    pub email: Option<String>,
}

/// Defines the answer of a passcode request (portal sign-in and `otp/send`; my-tickets
/// `request-otp`, whose document also describes `challengeId`: the optional attribute).
macro_rules! challenge_out {
    ($name:ident $(, #[$id_doc:meta])?) => {
        #[derive(Debug, serde::Serialize, utoipa::ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $(#[$id_doc])?
            pub challenge_id: String,
            /// When the passcode stops working.
            pub expires_at: String,
        }

        impl From<$crate::flows::customer_access::Issued> for $name {
            fn from(i: $crate::flows::customer_access::Issued) -> Self {
                $name { challenge_id: i.challenge_id, expires_at: $crate::domain::time::rfc3339(i.expires_at) }
            }
        }
    };
}
pub(crate) use challenge_out;

challenge_out!(ChallengeOut);

/// Defines the body of a passcode check: one shape under each name the API documents
/// (`OtpVerifyIn` of the portal, `VerifyOtpIn` of my-tickets).
macro_rules! code_try_body {
    ($name:ident) => {
        #[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        pub struct $name {
            pub challenge_id: Option<String>,
            /// The 6-digit passcode from the e-mail.
            pub code: Option<String>,
        }

        impl $name {
            /// The challenge id and code, checked for form (400 otherwise).
            pub fn parse(&self) -> Result<$crate::domain::portal::CodeTry, $crate::domain::DomainError> {
                $crate::domain::portal::parse_code_try(self.challenge_id.as_deref(), self.code.as_deref())
            }
        }
    };
}
pub(crate) use code_try_body;

code_try_body!(OtpVerifyIn);

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionOut {
    /// `Authorization: Bearer <token>` on portal routes; keep it secret.
    pub token: String,
    /// 12 hours after the last use (sliding).
    pub expires_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogoutOut {
    pub logged_out: bool,
}

/// How customer access's refusals answer, here and in my-tickets: a wrong code is a 400 that
/// counts the tries left; locked, expired and used challenges are 409s.
impl From<AccessError> for ApiError {
    fn from(e: AccessError) -> Self {
        match e {
            AccessError::Store(s) => s.into(),
            AccessError::Invalid(d) => d.into(),
            AccessError::Throttled(t) => ApiError::retry_later(t.retry_after_secs, t.message),
            AccessError::Refused(v) => refused(v),
            AccessError::NoMember => ApiError::missing_auth("this e-mail has no active or invited reseller member"),
            AccessError::UnknownSession => ApiError::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "invalid_key",
                "unknown or expired session; verify a passcode again",
            ),
            AccessError::NotFound(what) => ApiError::not_found(what),
        }
    }
}

fn refused(v: Verified) -> ApiError {
    let locked = || ApiError::conflict("this challenge is locked after 5 wrong codes; request a new passcode");
    match v {
        Verified::Wrong { remaining: 0 } => locked().with_detail("code", "does not match; no tries left"),
        Verified::Wrong { remaining } => ApiError::field(
            "code",
            format!("does not match; {remaining} {} left", if remaining == 1 { "try" } else { "tries" }),
        ),
        Verified::Locked => locked(),
        Verified::Expired => ApiError::conflict("this passcode has expired; request a new one"),
        Verified::Used | Verified::Accepted => ApiError::conflict("this passcode was already used; request a new one"),
    }
}

/// POST /api/white-label/portal/auth/otp/start — no auth (D10.1)
#[utoipa::path(
    post, path = "/api/white-label/portal/auth/otp/start", tag = "portal", operation_id = "portal_auth_otp_start",
    request_body(content = OtpStartIn, example = json!({"email": "ama@reseller.example.com"})),
    responses(
        (status = 200, description = "A sign-in challenge. The passcode is e-mailed only when the address is an active member or an invitation of a reseller; the answer is the same either way (D16.16).", body = PortalEnvelope<ChallengeOut>),
        PortalBodyErrors, PortalThrottled,
    )
)]
pub async fn otp_start(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<OtpStartIn>,
) -> PortalResult<ChallengeOut> {
    let Some(raw) = body.email.as_deref() else {
        return Err(ApiError::field("email", "is required"));
    };
    let mail = portal_email("email", raw)?;
    let issued = access::request_sign_in(&state.store, state.keyring(), &mail, now_ms()).await?;
    Ok(Portal::ok(issued.into()))
}

/// POST /api/white-label/portal/auth/otp/verify — no auth (D10.1)
#[utoipa::path(
    post, path = "/api/white-label/portal/auth/otp/verify", tag = "portal", operation_id = "portal_auth_otp_verify",
    request_body(content = OtpVerifyIn, example = json!({"challengeId": "otp_…", "code": "042917"})),
    responses(
        (status = 200, description = "A portal session: the token (shown once) and its expiry. Signing in with an invited address makes the invitation an active member.", body = PortalEnvelope<SessionOut>),
        PortalNoMember, PortalBodyErrors, PortalNotFound, PortalConflict,
    )
)]
pub async fn otp_verify(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<OtpVerifyIn>,
) -> PortalResult<SessionOut> {
    let attempt = body.parse()?;
    let opened = access::sign_in(&state.store, state.keyring(), &attempt, Some(request_id()), now_ms()).await?;
    Ok(Portal::ok(SessionOut { token: opened.token, expires_at: rfc3339(opened.expires_at) }))
}

/// POST /api/white-label/portal/auth/logout — session
#[utoipa::path(
    post, path = "/api/white-label/portal/auth/logout", tag = "portal", operation_id = "portal_auth_logout",
    security(("portalSession" = [])),
    request_body(content = EmptyIn, example = json!({})),
    responses(
        (status = 200, description = "The session has ended; its token is refused from now on.", body = PortalEnvelope<LogoutOut>),
        PortalErrors, PortalBodyErrors,
    )
)]
pub async fn logout(
    State(state): State<AppState>,
    caller: PortalCaller,
    body: axum::body::Bytes,
) -> PortalResult<LogoutOut> {
    if !body.is_empty() {
        parse_json::<EmptyIn>(&body)?;
    }
    access::sign_out(&state.store, &caller.session, &caller.actor(), now_ms()).await?;
    Ok(Portal::ok(LogoutOut { logged_out: true }))
}

/// An empty JSON object (the body is optional; any field is refused).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyIn {}

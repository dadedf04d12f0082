//! Portal sign-in (D10.1, D16.16): a passcode e-mailed to a member or invited address, exchanged
//! once for an opaque session token (stored hashed, 12 h sliding); logout ends it. Start answers
//! alike, with the same store work, whether or not the e-mail belongs to a reseller; only then is
//! a code sent. The D8.2 limits (60 s resend, 5 an hour) apply per address either way.
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{
    Portal, PortalBodyErrors, PortalCaller, PortalConflict, PortalEnvelope, PortalErrors, PortalNoMember,
    PortalNotFound, PortalResult, PortalThrottled,
};
use crate::auth::sessions::{self, CODE_LIFE_MS, PORTAL_SESSION_MS};
use crate::domain::check::{email, Check};
use crate::domain::time::{now_ms, rfc3339};
use crate::http::envelope::request_id;
use crate::http::error::ApiError;
use crate::http::extract::{parse_json, ApiJson};
use crate::notify::PORTAL_PASSCODE_EVENT;
use crate::state::AppState;
use crate::store::customers::{NewChallenge, Verified};
use crate::store::notifications::NewNotification;
use crate::store::portal::SignIn;

/// The purpose of sign-in challenges; only these open a session (D16.16).
pub const PURPOSE: &str = "portal_sign_in";

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OtpStartIn {
    #[schema(format = Email)]
    pub email: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChallengeOut {
    pub challenge_id: String,
    /// When the passcode stops working.
    pub expires_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OtpVerifyIn {
    pub challenge_id: Option<String>,
    /// The 6-digit passcode from the e-mail.
    pub code: Option<String>,
}

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

/// A portal e-mail address: valid, then lower-cased whole (users are unique by it, D15.1).
pub fn portal_email(field: &str, raw: &str) -> Result<String, crate::domain::DomainError> {
    email(field, raw).map(|e| e.to_lowercase())
}

/// 400, 409 for a code that did not open what was asked (shared with `otp/verify`).
pub fn refused(v: Verified) -> ApiError {
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

/// The challenge id and code of a verify body, checked for form.
pub fn verify_input(challenge_id: Option<&str>, code: Option<&str>) -> Result<(String, String), ApiError> {
    let mut check = Check::new();
    let id = challenge_id.filter(|c| !c.is_empty() && c.len() <= 128);
    if id.is_none() {
        check.fail("challengeId", "is required");
    }
    match code {
        None => check.fail("code", "is required"),
        Some(c) if !sessions::is_code(c) => check.fail("code", "must be 6 digits"),
        Some(_) => {}
    }
    check.finish()?;
    match (id, code) {
        (Some(i), Some(c)) => Ok((i.to_string(), c.to_string())),
        _ => Err(ApiError::internal("validated input missing")),
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
    let now = now_ms();
    let recent = state.store.recent_challenges(None, None, PURPOSE, &mail, now).await?;
    sessions::send_allowed(&recent, now).map_err(|t| ApiError::retry_later(t.retry_after_secs, t.message))?;
    let account = state.store.sign_in_account(&mail).await?;
    let id = sessions::new_token("otp_");
    let code = sessions::new_code();
    let hash = sessions::code_hash(state.keyring(), &id, &code);
    let expires_at = now + CODE_LIFE_MS;
    let payload = json!({"code": code, "minutes": CODE_LIFE_MS / 60_000, "action": "sign in to the reseller portal"});
    let notify = account.as_ref().map(|_| NewNotification {
        channel: "email",
        event_type: PORTAL_PASSCODE_EVENT,
        recipient: &mail,
        subject: None,
        payload: &payload,
    });
    let challenge = NewChallenge {
        id: &id,
        account_id: account.as_deref(),
        campaign_id: None,
        channel: "email",
        recipient: &mail,
        purpose: PURPOSE,
        code_hash: &hash,
        expires_at,
    };
    state.store.create_challenge(&challenge, notify, now).await?;
    Ok(Portal::ok(ChallengeOut { challenge_id: id, expires_at: rfc3339(expires_at) }))
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
    let (id, code) = verify_input(body.challenge_id.as_deref(), body.code.as_deref())?;
    let challenge = state.store.challenge(None, &id).await?;
    if challenge.purpose != PURPOSE {
        // An otp/send challenge opens no session, and is not used up here (D16.16).
        return Err(ApiError::not_found("challenge"));
    }
    let matches = sessions::code_matches(state.keyring(), &id, &code, &challenge.code_hash);
    let token = sessions::new_token("tps_");
    let now = now_ms();
    let expires_at = now + PORTAL_SESSION_MS;
    let hash = state.keyring().hash_secret(&token);
    match state.store.portal_sign_in(&challenge, matches, &hash, expires_at, Some(request_id()), now).await? {
        SignIn::Session(_) => Ok(Portal::ok(SessionOut { token, expires_at: rfc3339(expires_at) })),
        SignIn::NoMember => Err(ApiError::missing_auth("this e-mail has no active or invited reseller member")),
        SignIn::Refused(v) => Err(refused(v)),
    }
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
    state.store.revoke_portal_session(&caller.session, &caller.actor(), now_ms()).await?;
    Ok(Portal::ok(LogoutOut { logged_out: true }))
}

/// An empty JSON object (the body is optional; any field is refused).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyIn {}

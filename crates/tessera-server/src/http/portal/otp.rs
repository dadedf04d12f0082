//! OTP challenges of the console (spec "OTP challenge"; D15.4, D16.16): `otp/send` mails or
//! texts a passcode for a purpose (login, withdrawal_approval, …) and `otp/verify` checks it
//! once. These challenges open no session, and sign-in challenges are not accepted here (404,
//! not used up). Codes follow D8.2 (hashed, 10 minutes, 5 tries, 60 s resend, 5 an hour).
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::auth::{portal_email, refused, verify_input, ChallengeOut, OtpVerifyIn};
use super::{
    Portal, PortalBodyErrors, PortalCaller, PortalConflict, PortalEnvelope, PortalErrors, PortalNotFound, PortalResult,
};
use crate::auth::sessions::{self, CODE_LIFE_MS};
use crate::domain::check::{phone, Check};
use crate::domain::portal::OTP_PURPOSES;
use crate::domain::scopes::Scope;
use crate::domain::time::{now_ms, rfc3339};
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::openapi::string_enum;
use crate::notify::PORTAL_PASSCODE_EVENT;
use crate::state::AppState;
use crate::store::customers::{NewChallenge, Verified};
use crate::store::notifications::NewNotification;

/// Stored purposes of `otp/send` challenges carry this prefix, so that no other kind of
/// challenge is accepted where these are, and the other way round.
const PREFIX: &str = "otp_send:";

fn channel_schema() -> utoipa::openapi::schema::Object {
    string_enum(&["sms", "email", "whatsapp"], "whatsapp answers 400: no WhatsApp gateway is configured")
}

fn purpose_schema() -> utoipa::openapi::schema::Object {
    string_enum(&OTP_PURPOSES, "What the passcode confirms")
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OtpSendIn {
    #[schema(schema_with = channel_schema)]
    pub channel: Option<String>,
    /// An e-mail address (email) or a phone number (sms; E.164 or Ghana local 0XXXXXXXXX).
    pub recipient: Option<String>,
    #[schema(schema_with = purpose_schema)]
    pub purpose: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct VerifiedOut {
    pub verified: bool,
    pub purpose: String,
}

/// POST /api/white-label/portal/reseller/otp/send — session — notifications:write
#[utoipa::path(
    post, path = "/api/white-label/portal/reseller/otp/send", tag = "portal", operation_id = "portal_otp_send",
    security(("portalSession" = [])),
    request_body(content = OtpSendIn, example = json!({"channel": "email", "recipient": "ama@example.com", "purpose": "withdrawal_approval"})),
    responses(
        (status = 201, description = "The challenge; the passcode is on its way (e-mail over SMTP, SMS over the account's gateway).", body = PortalEnvelope<ChallengeOut>),
        PortalErrors, PortalBodyErrors,
    )
)]
pub async fn send(
    State(state): State<AppState>,
    caller: PortalCaller,
    ApiJson(body): ApiJson<OtpSendIn>,
) -> PortalResult<ChallengeOut> {
    caller.require(Scope::NotificationsWrite.as_str())?;
    caller.require_active_reseller()?;
    let mut check = Check::new();
    let channel = body.channel.as_deref();
    match channel {
        None => check.fail("channel", "is required"),
        Some("email" | "sms") => {}
        Some("whatsapp") => check.fail("channel", "whatsapp is not available: no WhatsApp gateway is configured"),
        Some(_) => check.fail("channel", "must be one of sms, email, whatsapp"),
    }
    let recipient = match (channel, body.recipient.as_deref()) {
        (_, None) => {
            check.fail("recipient", "is required");
            None
        }
        (Some("sms" | "whatsapp"), Some(r)) => check.take(phone("recipient", r)),
        (_, Some(r)) => check.take(portal_email("recipient", r)),
    };
    match body.purpose.as_deref() {
        None => check.fail("purpose", "is required"),
        Some(p) if !OTP_PURPOSES.contains(&p) => {
            check.fail("purpose", format!("must be one of {}", OTP_PURPOSES.join(", ")))
        }
        Some(_) => {}
    }
    check.finish()?;
    let (Some(channel), Some(recipient), Some(purpose)) = (channel, recipient, body.purpose.as_deref()) else {
        return Err(ApiError::internal("validated input missing"));
    };
    let stored_purpose = format!("{PREFIX}{purpose}");
    let account = caller.account_id();
    let now = now_ms();
    let recent = state.store.recent_challenges(Some(account), None, &stored_purpose, &recipient, now).await?;
    sessions::send_allowed(&recent, now).map_err(|t| ApiError::retry_later(t.retry_after_secs, t.message))?;
    let id = sessions::new_token("otp_");
    let code = sessions::new_code();
    let hash = sessions::code_hash(state.keyring(), &id, &code);
    let expires_at = now + CODE_LIFE_MS;
    let action = format!("confirm {}", purpose.replace('_', " "));
    let payload = json!({"code": code, "minutes": CODE_LIFE_MS / 60_000, "action": action, "purpose": purpose});
    let notify = NewNotification {
        channel,
        event_type: PORTAL_PASSCODE_EVENT,
        recipient: &recipient,
        subject: None,
        payload: &payload,
    };
    let challenge = NewChallenge {
        id: &id,
        account_id: Some(account),
        campaign_id: None,
        channel,
        recipient: &recipient,
        purpose: &stored_purpose,
        code_hash: &hash,
        expires_at,
    };
    state.store.create_challenge(&challenge, Some(notify), now).await?;
    Ok(Portal::created(ChallengeOut { challenge_id: id, expires_at: rfc3339(expires_at) }))
}

/// POST /api/white-label/portal/reseller/otp/verify — session — any active member (D16.16)
#[utoipa::path(
    post, path = "/api/white-label/portal/reseller/otp/verify", tag = "portal", operation_id = "portal_otp_verify",
    security(("portalSession" = [])),
    request_body(content = OtpVerifyIn, example = json!({"challengeId": "otp_…", "code": "042917"})),
    responses(
        (status = 200, description = "The code was right; the challenge is used up.", body = PortalEnvelope<VerifiedOut>),
        PortalErrors, PortalBodyErrors, PortalNotFound, PortalConflict,
    )
)]
pub async fn verify(
    State(state): State<AppState>,
    caller: PortalCaller,
    ApiJson(body): ApiJson<OtpVerifyIn>,
) -> PortalResult<VerifiedOut> {
    let (id, code) = verify_input(body.challenge_id.as_deref(), body.code.as_deref())?;
    let challenge = state.store.challenge(Some(caller.account_id()), &id).await?;
    let Some(purpose) = challenge.purpose.strip_prefix(PREFIX).map(str::to_string) else {
        return Err(ApiError::not_found("challenge"));
    };
    let matches = sessions::code_matches(state.keyring(), &id, &code, &challenge.code_hash);
    match state.store.check_challenge(&challenge, matches, now_ms()).await? {
        Verified::Accepted => Ok(Portal::ok(VerifiedOut { verified: true, purpose })),
        other => Err(refused(other)),
    }
}

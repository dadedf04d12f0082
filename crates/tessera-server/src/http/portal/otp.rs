//! OTP challenges of the reseller portal (spec "OTP challenge"; D15.4, D16.16): `otp/send` mails or
//! texts a passcode for a purpose (login, withdrawal_approval, …) and `otp/verify` checks it
//! once. These challenges open no session, and sign-in challenges are not accepted here (404,
//! not used up). Codes follow D8.2 (hashed, 10 minutes, 5 tries, 60 s resend, 5 an hour).
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::{ChallengeOut, OtpVerifyIn};
use super::{
    Portal, PortalBodyErrors, PortalCaller, PortalConflict, PortalEnvelope, PortalErrors, PortalNotFound, PortalResult,
};
use crate::domain::portal::{parse_otp_send, OTP_PURPOSES};
use crate::domain::scopes::Scope;
use crate::domain::time::now_ms;
use crate::flows::customer_access as access;
use crate::http::extract::ApiJson;
use crate::http::openapi::string_enum;
use crate::state::AppState;

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
    let req = parse_otp_send(body.channel.as_deref(), body.recipient.as_deref(), body.purpose.as_deref())?;
    let issued = access::send_otp(&state.store, state.keyring(), caller.account_id(), &req, now_ms()).await?;
    Ok(Portal::created(issued.into()))
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
    let attempt = body.parse()?;
    let purpose = access::verify_otp(&state.store, state.keyring(), caller.account_id(), &attempt, now_ms()).await?;
    Ok(Portal::ok(VerifiedOut { verified: true, purpose }))
}

//! my-tickets (spec "Routes whose method is not shown", D8, D16.9–10): a ticket holder proves
//! their e-mail with a one-time passcode and gets a session bound to one campaign of the
//! account; with it they list their tickets (with the QR token, which only they ever see) and
//! draw a ticket's QR. All four routes are signed with a private key (the integrator's server
//! calls them for the customer), scope my-tickets:read.
//!
//! request-otp answers the same, with the same store work, whether or not the e-mail holds
//! tickets: a challenge is always written, the passcode mail is queued only for a holder.
//! Codes and session tokens are stored as keyed hashes and never logged or audited.
use axum::extract::State;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::campaign_id;
use super::tickets::{ticket_lookup_code, TicketOut};
use crate::auth::sessions::{self, CODE_LIFE_MS};
use crate::domain::check::{email, Check};
use crate::domain::qr;
use crate::domain::time::{now_ms, rfc3339};
use crate::http::envelope::{ApiResponse, Envelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, ApiJson, Caller, Signed};
use crate::http::openapi::{BodyErrors, Conflict, NotFound, SignedErrors};
use crate::notify::PASSCODE_EVENT;
use crate::state::AppState;
use crate::store::customers::{CustomerSession, NewChallenge, Verified};
use crate::store::notifications::NewNotification;

/// The purpose of my-tickets challenges in the shared challenge table.
pub const PURPOSE: &str = "my_tickets";
/// A session lives 24 hours (D8.3).
pub const SESSION_LIFE_MS: i64 = 24 * 3_600_000;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestOtpIn {
    #[schema(format = "uuid")]
    pub campaign_id: Option<String>,
    #[schema(format = Email)]
    pub email: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChallengeOut {
    /// Give it back with the code to verify-otp.
    pub challenge_id: String,
    /// When the passcode stops working.
    pub expires_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifyOtpIn {
    pub challenge_id: Option<String>,
    /// The 6-digit passcode from the e-mail.
    pub code: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionOut {
    /// Bearer of the holder's access for 24 hours; keep it secret.
    pub session_token: String,
    pub expires_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ListIn {
    pub session_token: Option<String>,
    /// Optional: the campaign the caller means; another than the session's → 404.
    #[schema(format = "uuid")]
    pub campaign_id: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct QrIn {
    pub session_token: Option<String>,
    /// The ticket's code (as typed or as listed).
    pub ticket_code: Option<String>,
    #[schema(format = "uuid")]
    pub campaign_id: Option<String>,
}

/// A ticket as its holder sees it: the D16.9 view plus the QR token.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MyTicketOut {
    #[serde(flatten)]
    pub ticket: TicketOut,
    /// What the ticket's QR code encodes; only the holder sees it.
    pub qr_token: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QrOut {
    pub ticket_code: String,
    /// The QR code as an SVG document.
    pub svg: String,
    /// The QR code as a PNG, base64.
    pub png_base64: String,
}

/// POST /api/white-label/v1/my-tickets/request-otp — domain and private HMAC key — my-tickets:read
#[utoipa::path(
    post, path = "/api/white-label/v1/my-tickets/request-otp", tag = "my-tickets", operation_id = "my_tickets_request_otp",
    security(("signed" = [])),
    request_body(content = RequestOtpIn, example = json!({"campaignId": "0190f5c2-8a4b-7c3d-9e1f-2a3b4c5d6e7f", "email": "ama@example.com"})),
    responses(
        (status = 200, description = "A challenge; the passcode is e-mailed only when the address holds tickets in the campaign (the answer is the same either way). Errors:; 400: campaignId or email missing or malformed; 404: No such campaign in this account; 429: Resend within 60 s for this campaign and address, or 5 passcodes to the address in the last hour (`rate_limited`, Retry-After)", body = Envelope<ChallengeOut>),
        SignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn request_otp(
    State(state): State<AppState>,
    caller: Signed<scope::MyTicketsRead>,
    ApiJson(body): ApiJson<RequestOtpIn>,
) -> ApiResult<ChallengeOut> {
    let mut check = Check::new();
    if body.campaign_id.is_none() {
        check.fail("campaignId", "is required");
    }
    let mail = match body.email.as_deref() {
        None => {
            check.fail("email", "is required");
            None
        }
        Some(e) => check.take(email("email", e)),
    };
    check.finish()?;
    let (Some(campaign), Some(mail)) = (body.campaign_id.as_deref(), mail) else {
        return Err(ApiError::internal("validated input missing"));
    };
    let campaign = scoped_campaign(&caller, campaign_id(campaign)?)?;
    let title = state.store.campaign(&caller.account_id, campaign).await?.title;
    let now = now_ms();
    let recent = state.store.recent_challenges(Some(&caller.account_id), Some(campaign), PURPOSE, &mail, now).await?;
    sessions::send_allowed(&recent, now).map_err(|t| ApiError::retry_later(t.retry_after_secs, t.message))?;
    let holds = !state.store.holder_tickets(&caller.account_id, campaign, &mail).await?.is_empty();
    let id = sessions::new_token("otp_");
    let code = sessions::new_code();
    let hash = sessions::code_hash(state.keyring(), &id, &code);
    let expires_at = now + CODE_LIFE_MS;
    let payload = json!({"code": code, "campaignId": campaign, "campaign": title, "minutes": CODE_LIFE_MS / 60_000});
    let notify = holds.then(|| NewNotification {
        channel: "email",
        event_type: PASSCODE_EVENT,
        recipient: &mail,
        subject: None,
        payload: &payload,
    });
    let challenge = NewChallenge {
        id: &id,
        account_id: Some(&caller.account_id),
        campaign_id: Some(campaign),
        channel: "email",
        recipient: &mail,
        purpose: PURPOSE,
        code_hash: &hash,
        expires_at,
    };
    state.store.create_challenge(&challenge, notify, now).await?;
    Ok(ApiResponse::ok(ChallengeOut { challenge_id: id, expires_at: rfc3339(expires_at) }))
}

/// A campaign key (or a campaignId naming another campaign than the key's) sees only its own.
fn scoped_campaign<'a>(caller: &Caller, campaign: &'a str) -> Result<&'a str, ApiError> {
    match caller.campaign_id.as_deref() {
        Some(own) if own != campaign => Err(ApiError::not_found("campaign")),
        _ => Ok(campaign),
    }
}

/// POST /api/white-label/v1/my-tickets/verify-otp — domain and private HMAC key — my-tickets:read
#[utoipa::path(
    post, path = "/api/white-label/v1/my-tickets/verify-otp", tag = "my-tickets", operation_id = "my_tickets_verify_otp",
    security(("signed" = [])),
    request_body(content = VerifyOtpIn, example = json!({"challengeId": "otp_…", "code": "042917"})),
    responses(
        (status = 200, description = "A customer session for the challenge's campaign and e-mail, 24 hours. Errors:; 400: Missing fields, a code that is not 6 digits, or a wrong code (`validation_failed`; the detail says how many tries are left); 404: No such challenge in this account; 409: The challenge is locked (5 wrong codes), expired (10 minutes) or already used (`conflict`): request a new passcode", body = Envelope<SessionOut>),
        SignedErrors, BodyErrors, NotFound, Conflict,
    )
)]
pub async fn verify_otp(
    State(state): State<AppState>,
    caller: Signed<scope::MyTicketsRead>,
    ApiJson(body): ApiJson<VerifyOtpIn>,
) -> ApiResult<SessionOut> {
    let mut check = Check::new();
    if body.challenge_id.as_deref().is_none_or(|c| c.is_empty() || c.len() > 128) {
        check.fail("challengeId", "is required");
    }
    match body.code.as_deref() {
        None => check.fail("code", "is required"),
        Some(c) if !sessions::is_code(c) => check.fail("code", "must be 6 digits"),
        Some(_) => {}
    }
    check.finish()?;
    let (Some(id), Some(code)) = (body.challenge_id.as_deref(), body.code.as_deref()) else {
        return Err(ApiError::internal("validated input missing"));
    };
    let challenge = state.store.challenge(Some(&caller.account_id), id).await?;
    if challenge.purpose != PURPOSE {
        return Err(ApiError::not_found("challenge"));
    }
    if let Some(c) = challenge.campaign_id.as_deref() {
        scoped_campaign(&caller, c).map_err(|_| ApiError::not_found("challenge"))?;
    }
    let matches = sessions::code_matches(state.keyring(), id, code, &challenge.code_hash);
    let token = sessions::new_token("tms_");
    let now = now_ms();
    let expires_at = now + SESSION_LIFE_MS;
    let hash = state.keyring().hash_secret(&token);
    let locked = || ApiError::conflict("this challenge is locked after 5 wrong codes; request a new passcode");
    match state.store.settle_challenge(&challenge, matches, (&hash, expires_at), now).await? {
        Verified::Accepted => Ok(ApiResponse::ok(SessionOut { session_token: token, expires_at: rfc3339(expires_at) })),
        Verified::Wrong { remaining: 0 } => Err(locked().with_detail("code", "does not match; no tries left")),
        Verified::Wrong { remaining } => Err(ApiError::field(
            "code",
            format!("does not match; {remaining} {} left", if remaining == 1 { "try" } else { "tries" }),
        )),
        Verified::Locked => Err(locked()),
        Verified::Expired => Err(ApiError::conflict("this passcode has expired; request a new one")),
        Verified::Used => Err(ApiError::conflict("this passcode was already used; request a new one")),
    }
}

/// The session a body names: unknown or expired → 401; another account's, or another campaign
/// than the one named → 404.
async fn session(
    state: &AppState,
    caller: &Caller,
    token: Option<&str>,
    campaign: Option<&str>,
) -> Result<CustomerSession, ApiError> {
    let Some(token) = token.filter(|t| !t.is_empty() && t.len() <= 256) else {
        return Err(ApiError::field("sessionToken", "is required"));
    };
    let hash = state.keyring().hash_secret(token);
    let Some((stored, s)) = state.store.customer_session(&hash, now_ms()).await? else {
        return Err(ApiError::new(
            axum::http::StatusCode::UNAUTHORIZED,
            "invalid_key",
            "unknown or expired session; verify a passcode again",
        ));
    };
    if !state.keyring().secret_matches(token, &stored) || *s.account_id != *caller.account_id {
        return Err(ApiError::not_found("session"));
    }
    let named = campaign.or(caller.campaign_id.as_deref());
    if named.is_some_and(|c| c != s.campaign_id) {
        return Err(ApiError::not_found("session"));
    }
    Ok(s)
}

/// POST /api/white-label/v1/my-tickets/list — domain and private HMAC key — my-tickets:read
#[utoipa::path(
    post, path = "/api/white-label/v1/my-tickets/list", tag = "my-tickets", operation_id = "my_tickets_list",
    security(("signed" = [])),
    request_body(content = ListIn, example = json!({"sessionToken": "tms_…"})),
    responses(
        (status = 200, description = "The session's tickets in its campaign, each with its QR token. Errors:; 401: Unknown or expired session (`invalid_key`); 404: The session belongs to another account or campaign", body = Envelope<Vec<MyTicketOut>>),
        SignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::MyTicketsRead>,
    ApiJson(body): ApiJson<ListIn>,
) -> ApiResult<Vec<MyTicketOut>> {
    let s = session(&state, &caller, body.session_token.as_deref(), body.campaign_id.as_deref()).await?;
    let tickets = state.store.holder_tickets(&s.account_id, &s.campaign_id, &s.email).await?;
    Ok(ApiResponse::ok(
        tickets
            .into_iter()
            .map(|t| {
                let qr_token = t.qr_token.clone();
                MyTicketOut { ticket: t.into(), qr_token }
            })
            .collect(),
    ))
}

/// POST /api/white-label/v1/my-tickets/qr — domain and private HMAC key — my-tickets:read
#[utoipa::path(
    post, path = "/api/white-label/v1/my-tickets/qr", tag = "my-tickets", operation_id = "my_tickets_qr",
    security(("signed" = [])),
    request_body(content = QrIn, example = json!({"sessionToken": "tms_…", "ticketCode": "7K3M-Q9XD-2HRT-8VWN-C4PA"})),
    responses(
        (status = 200, description = "The ticket's QR code (of its QR token) as SVG and PNG. Errors:; 401: Unknown or expired session (`invalid_key`); 404: The session belongs to another account or campaign, or the ticket is not the session's", body = Envelope<QrOut>),
        SignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn qr(
    State(state): State<AppState>,
    caller: Signed<scope::MyTicketsRead>,
    ApiJson(body): ApiJson<QrIn>,
) -> ApiResult<QrOut> {
    let Some(code) = body.ticket_code.as_deref().filter(|c| !c.trim().is_empty() && c.len() <= 128) else {
        return Err(ApiError::field("ticketCode", "is required"));
    };
    let s = session(&state, &caller, body.session_token.as_deref(), body.campaign_id.as_deref()).await?;
    let code = ticket_lookup_code(code);
    let tickets = state.store.holder_tickets(&s.account_id, &s.campaign_id, &s.email).await?;
    let Some(t) = tickets.into_iter().find(|t| t.ticket_code == code || t.qr_token == code) else {
        return Err(ApiError::not_found("ticket"));
    };
    let svg = qr::svg(&t.qr_token).map_err(ApiError::internal)?;
    let png = qr::png(&t.qr_token).map_err(ApiError::internal)?;
    Ok(ApiResponse::ok(QrOut { ticket_code: t.ticket_code, svg, png_base64: STANDARD.encode(png) }))
}

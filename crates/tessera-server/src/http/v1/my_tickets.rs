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
use utoipa::ToSchema;

use super::campaign_id;
use super::tickets::{ticket_lookup_code, TicketOut};
use crate::domain::portal::parse_holder_passcode;
use crate::domain::qr;
use crate::domain::time::{now_ms, rfc3339};
use crate::flows::customer_access as access;
use crate::flows::modules::{self, Module};
use crate::http::envelope::{ApiResponse, Envelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, ApiJson, Caller, Signed};
use crate::http::openapi::{BodyErrors, Conflict, ModuleSignedErrors, NotFound};
use crate::http::portal::auth::{challenge_out, code_try_body};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestOtpIn {
    #[schema(format = "uuid")]
    pub campaign_id: Option<String>,
    #[schema(format = Email)]
    pub email: Option<String>,
}

challenge_out!(ChallengeOut, #[doc = "Give it back with the code to verify-otp."]);

code_try_body!(VerifyOtpIn);

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
        ModuleSignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn request_otp(
    State(state): State<AppState>,
    caller: Signed<scope::MyTicketsRead>,
    ApiJson(body): ApiJson<RequestOtpIn>,
) -> ApiResult<ChallengeOut> {
    modules::require(&state, &caller.account_id, Module::MyTickets).await?;
    let req = parse_holder_passcode(body.campaign_id.as_deref(), body.email.as_deref())?;
    let campaign = campaign_id(&req.campaign_id)?;
    let (account, key_campaign) = (&caller.account_id, caller.campaign_id.as_deref());
    let issued = access::request_holder_passcode(
        &state.store,
        state.keyring(),
        account,
        key_campaign,
        campaign,
        &req.email,
        now_ms(),
    )
    .await?;
    Ok(ApiResponse::ok(issued.into()))
}

/// POST /api/white-label/v1/my-tickets/verify-otp — domain and private HMAC key — my-tickets:read
#[utoipa::path(
    post, path = "/api/white-label/v1/my-tickets/verify-otp", tag = "my-tickets", operation_id = "my_tickets_verify_otp",
    security(("signed" = [])),
    request_body(content = VerifyOtpIn, example = json!({"challengeId": "otp_…", "code": "042917"})),
    responses(
        (status = 200, description = "A customer session for the challenge's campaign and e-mail, 24 hours. Errors:; 400: Missing fields, a code that is not 6 digits, or a wrong code (`validation_failed`; the detail says how many tries are left); 404: No such challenge in this account; 409: The challenge is locked (5 wrong codes), expired (10 minutes) or already used (`conflict`): request a new passcode", body = Envelope<SessionOut>),
        ModuleSignedErrors, BodyErrors, NotFound, Conflict,
    )
)]
pub async fn verify_otp(
    State(state): State<AppState>,
    caller: Signed<scope::MyTicketsRead>,
    ApiJson(body): ApiJson<VerifyOtpIn>,
) -> ApiResult<SessionOut> {
    modules::require(&state, &caller.account_id, Module::MyTickets).await?;
    let attempt = body.parse()?;
    let (account, key_campaign) = (&caller.account_id, caller.campaign_id.as_deref());
    let opened =
        access::verify_holder_passcode(&state.store, state.keyring(), account, key_campaign, &attempt, now_ms())
            .await?;
    Ok(ApiResponse::ok(SessionOut { session_token: opened.token, expires_at: rfc3339(opened.expires_at) }))
}

/// What a list or qr body presents, with the key that signed it.
fn holder<'a>(caller: &'a Caller, token: Option<&'a str>, campaign: Option<&'a str>) -> access::Holder<'a> {
    access::Holder { account_id: &caller.account_id, key_campaign: caller.campaign_id.as_deref(), token, campaign }
}

/// POST /api/white-label/v1/my-tickets/list — domain and private HMAC key — my-tickets:read
#[utoipa::path(
    post, path = "/api/white-label/v1/my-tickets/list", tag = "my-tickets", operation_id = "my_tickets_list",
    security(("signed" = [])),
    request_body(content = ListIn, example = json!({"sessionToken": "tms_…"})),
    responses(
        (status = 200, description = "The session's tickets in its campaign, each with its QR token. Errors:; 401: Unknown or expired session (`invalid_key`); 404: The session belongs to another account or campaign", body = Envelope<Vec<MyTicketOut>>),
        ModuleSignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::MyTicketsRead>,
    ApiJson(body): ApiJson<ListIn>,
) -> ApiResult<Vec<MyTicketOut>> {
    modules::require(&state, &caller.account_id, Module::MyTickets).await?;
    let holder = holder(&caller, body.session_token.as_deref(), body.campaign_id.as_deref());
    let tickets = access::holder_tickets(&state.store, state.keyring(), &holder, now_ms()).await?;
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
        ModuleSignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn qr(
    State(state): State<AppState>,
    caller: Signed<scope::MyTicketsRead>,
    ApiJson(body): ApiJson<QrIn>,
) -> ApiResult<QrOut> {
    modules::require(&state, &caller.account_id, Module::MyTickets).await?;
    let Some(code) = body.ticket_code.as_deref().filter(|c| !c.trim().is_empty() && c.len() <= 128) else {
        return Err(ApiError::field("ticketCode", "is required"));
    };
    let code = ticket_lookup_code(code);
    let holder = holder(&caller, body.session_token.as_deref(), body.campaign_id.as_deref());
    let t = access::holder_ticket(&state.store, state.keyring(), &holder, &code, now_ms()).await?;
    let svg = qr::svg(&t.qr_token).map_err(ApiError::internal)?;
    let png = qr::png(&t.qr_token).map_err(ApiError::internal)?;
    Ok(ApiResponse::ok(QrOut { ticket_code: t.ticket_code, svg, png_base64: STANDARD.encode(png) }))
}

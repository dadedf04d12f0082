//! Tickets as every route shows them (D16.9), and `POST /tickets/verify` (spec "POST
//! tickets/verify", D7): Form 1 (domain key) answers `{status, checkedIn}` only; Form 2 (signed)
//! answers the verification view and, with `autoVerify` and tickets:write, checks the ticket in
//! exactly once (one conditional update, audited in the same transaction).
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::audit;
use crate::domain::check::{text, Check};
use crate::domain::payments::normalize_ticket_code;
use crate::domain::scopes::Scope;
use crate::domain::tickets::TicketStatus;
use crate::domain::time::now_ms;
use crate::flows::gate;
use crate::http::envelope::{ApiResponse, Envelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, AnyKey, ApiJson, Scheme};
use crate::http::openapi::{AnyKeyErrors, BodyErrors, NotFound};
use crate::state::AppState;
use crate::store::tickets::CheckIn;
use crate::store::tickets::Ticket;
use crate::views::tickets::ticket_view;
pub use crate::views::tickets::{Attendee, IdName, IdTitle, TicketOut};

/// A typed ticket code (normalized as Crockford base32 reads it) or a QR token (`qr_…`, as is).
pub fn ticket_lookup_code(s: &str) -> String {
    let t = s.trim();
    if t.starts_with("qr_") {
        t.to_string()
    } else {
        normalize_ticket_code(t)
    }
}

/// Body of `POST /tickets/verify`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerifyIn {
    /// The ticket code as typed (case, dashes and spaces do not matter) or the QR token.
    pub ticket_code: Option<String>,
    /// Form 2 only: check the ticket in when the key has tickets:write and the ticket can be.
    pub auto_verify: Option<bool>,
    /// Form 2 only: who checks in (gate agent identifier, 1–255 characters; default the key id).
    pub checked_in_by: Option<String>,
}

/// Form 1's answer: the ticket's usable status, nothing about its holder (D7.2).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyPublicOut {
    /// `valid` or `void`.
    pub status: String,
    pub checked_in: bool,
}

ticket_view! {
    /// Form 2's answer (D7.3).
    pub struct VerifyOut {
        /// `checked_in` (this request checked it in), `already_checked_in` (an earlier one did),
        /// `valid` (not checked in: no autoVerify, or no tickets:write), `void` (never checks in),
        /// `campaign_archived` (valid, but its campaign is archived: no check-in).
        pub result: String,
        /// `valid` or `void`.
        pub status: String,
        /// The ticket's code (also when the QR token was sent).
        pub ticket_code: String,
    }
}

fn verify_out(result: &str, t: Ticket) -> VerifyOut {
    let o = TicketOut::from(t);
    VerifyOut {
        result: result.into(),
        status: o.status,
        ticket_code: o.ticket_code,
        checked_in: o.checked_in,
        checked_in_at: o.checked_in_at,
        checked_in_by: o.checked_in_by,
        ticket_type: o.ticket_type,
        campaign: o.campaign,
        attendee: o.attendee,
    }
}

/// Either answer of `POST /tickets/verify`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum VerifyAnswer {
    Signed(Box<VerifyOut>),
    DomainKey(VerifyPublicOut),
}

/// POST /api/white-label/v1/tickets/verify — Form 1: Domain-key. Form 2: Signed — tickets:read
/// (Form 2 also tickets:write to mutate)
#[utoipa::path(
    post, path = "/api/white-label/v1/tickets/verify", tag = "tickets", operation_id = "tickets_verify",
    security(("signed" = []), ("domainKey" = [])),
    request_body(content = VerifyIn, example = json!({"ticketCode": "7K3M-Q9XD-2HRT-8VWN-C4PA", "autoVerify": true, "checkedInBy": "gate-3"})),
    responses(
        (status = 200, description = "Form 2 (signed): the verification view with `result`; Form 1 (domain key): `{status, checkedIn}` only. Errors:; 400: `ticketCode` missing or malformed, or a Form 2 field sent with a domain key; 403: The key lacks tickets:read, or the domain is not approved; 404: No such ticket in this account (or in this campaign key's campaign)", body = Envelope<VerifyAnswer>),
        AnyKeyErrors, BodyErrors, NotFound,
    )
)]
pub async fn verify(
    State(state): State<AppState>,
    caller: AnyKey<scope::TicketsRead>,
    ApiJson(body): ApiJson<VerifyIn>,
) -> ApiResult<VerifyAnswer> {
    let mut check = Check::new();
    let code = match body.ticket_code.as_deref() {
        None => {
            check.fail("ticketCode", "is required");
            None
        }
        Some(c) => check.take(text("ticketCode", c, 1, 128)).map(|c| ticket_lookup_code(&c)),
    };
    let form1 = caller.scheme == Scheme::DomainKey;
    if form1 {
        if body.auto_verify.is_some() {
            check.fail("autoVerify", "is accepted only on a signed request");
        }
        if body.checked_in_by.is_some() {
            check.fail("checkedInBy", "is accepted only on a signed request");
        }
    }
    let by = body.checked_in_by.as_deref().and_then(|b| check.take(text("checkedInBy", b, 1, 255)));
    check.finish()?;
    let Some(code) = code else {
        return Err(ApiError::internal("validated input missing"));
    };
    let gate = state.store.gate_ticket(&caller.account_id, caller.campaign_id.as_deref(), &code).await?;
    if form1 {
        return Ok(ApiResponse::ok(VerifyAnswer::DomainKey(VerifyPublicOut {
            status: gate.ticket.status.as_str().into(),
            checked_in: gate.ticket.checked_in,
        })));
    }
    let may_write = caller.scopes.contains(Scope::TicketsWrite);
    if !(body.auto_verify == Some(true) && may_write) {
        let result = gate.ticket.status.as_str();
        return Ok(ApiResponse::ok(VerifyAnswer::Signed(Box::new(verify_out(result, gate.ticket)))));
    }
    let by = by.unwrap_or_else(|| caller.key_id.to_string());
    let mut entry = audit(&caller, "ticket.checked_in", "ticket");
    entry.summary = serde_json::json!({"campaignId": gate.ticket.campaign_id, "checkedInBy": by});
    let out = match gate::check_in_ticket(&state.store, &state.checkins, &caller.account_id, gate, &by, now_ms(), entry)
        .await?
    {
        CheckIn::CheckedIn(t) => verify_out("checked_in", t),
        CheckIn::Already(t) => verify_out("already_checked_in", t),
        CheckIn::Refused(g) if g.ticket.status == TicketStatus::Void => verify_out("void", g.ticket),
        CheckIn::Refused(g) if g.campaign_archived => verify_out("campaign_archived", g.ticket),
        CheckIn::Refused(g) => verify_out("valid", g.ticket),
    };
    Ok(ApiResponse::ok(VerifyAnswer::Signed(Box::new(out))))
}

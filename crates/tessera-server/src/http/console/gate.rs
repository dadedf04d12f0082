//! `/console/gate` (D17.30, D17.43; owner and gate): type a ticket's code or scan its QR code
//! and the page answers "Checked in", "Already checked in" or "Invalid" in large type, with the
//! ticket's type and holder when known. The check-in is the one `POST /tickets/verify` with
//! `autoVerify` makes (`flows::gate`); the account's check-in counter updates live (D17.32).
use axum::extract::State;
use axum::http::StatusCode;
use minijinja::{context, Value};

use super::view::{render_status, FieldErrors};
use super::{render, Caller, ConsoleError, PageResult, Posted};
use crate::domain::check::text;
use crate::domain::console::Page;
use crate::domain::time::now_ms;
use crate::flows::gate::{self, GateAnswer, Gatekeeper};
use crate::http::envelope::request_id;
use crate::http::v1::tickets::ticket_lookup_code;
use crate::state::AppState;

/// GET /console/gate
pub async fn show(State(state): State<AppState>, caller: Caller) -> PageResult {
    caller.open(Page::Gate)?;
    let checkins = state.store.checked_in_count(caller.account_id()).await?;
    Ok(render(&caller, Page::Gate, "gate.html", context! { checkins, errors => FieldErrors::default() }))
}

/// POST /console/gate `{code, csrf}`: checks the ticket in; 200 with the verdict (400 when no
/// code was typed).
pub async fn check(State(state): State<AppState>, posted: Posted) -> PageResult {
    let caller = &posted.caller;
    caller.open(Page::Gate)?;
    let raw = posted.form.get("code");
    let mut errors = FieldErrors::default();
    if raw.is_empty() {
        errors.add("code", "Type the ticket code (or scan its QR code).");
    } else if let Err(e) = text("code", raw, 1, 128) {
        errors = FieldErrors::from_domain(&e);
    }
    if !errors.is_empty() {
        let checkins = state.store.checked_in_count(caller.account_id()).await?;
        let ctx = context! { checkins, errors, code => raw };
        return Ok(render_status(StatusCode::BAD_REQUEST, caller, Page::Gate, "gate.html", ctx));
    }
    let member = caller.member().ok_or_else(|| ConsoleError::Forbidden("members only".into()))?;
    let who = Gatekeeper { member_id: &member.id, by: &member.email, request_id: Some(request_id()) };
    let code = ticket_lookup_code(raw);
    let answer = gate::check_in(&state.store, &state.checkins, caller.account_id(), &code, who, now_ms()).await?;
    let checkins = state.store.checked_in_count(caller.account_id()).await?;
    let ctx = context! { checkins, errors, answer => answer_view(&answer) };
    Ok(render(caller, Page::Gate, "gate.html", ctx))
}

/// What the template shows of an answer (never the QR token).
fn answer_view(a: &GateAnswer) -> Value {
    let t = a.ticket.as_ref();
    context! {
        word => a.verdict.word(),
        class => a.verdict.class(),
        reason => a.reason,
        ticket_code => t.map(|t| t.ticket_code.clone()),
        ticket_type => t.map(|t| t.ticket_type_name.clone()),
        campaign => t.map(|t| t.campaign_title.clone()),
        holder => t.map(|t| t.attendee_name.clone().unwrap_or_else(|| t.attendee_email.clone())),
        checked_in_at => t.and_then(|t| t.checked_in_at),
        checked_in_by => t.and_then(|t| t.checked_in_by.clone()),
    }
}

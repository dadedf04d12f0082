//! `/console/team` (D17.30, D17.43; owners only): the account's members (e-mail, role, added),
//! the add form (E-mail, Role) and a Remove button per member, through the same flows as
//! `tessera admin member add|remove`. Removing a member ends their sessions at once; the last
//! owner stays. An owner may remove themself while another owner remains: their own session
//! ends with it, so they land on the sign-in form.
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect};
use minijinja::{context, Value};
use serde::Deserialize;

use super::view::{render_status, FieldErrors};
use super::{Caller, ConsoleError, PageResult, Posted};
use crate::domain::console::{member_email, Page, Role};
use crate::domain::is_uuid;
use crate::domain::time::now_ms;
use crate::flows::console as flow;
use crate::http::envelope::request_id;
use crate::state::AppState;
use crate::store::console::TeamActor;
use crate::store::StoreError;

/// `?done=` (the notice after a successful post).
#[derive(Debug, Default, Deserialize)]
pub struct TeamQuery {
    pub done: Option<String>,
}

fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "added" => "Member added; they sign in with a passcode mailed to their e-mail.",
        "removed" => "Member removed; their sessions have ended.",
        _ => return None,
    })
}

/// The page: the members (an account's team is small: every member is listed) and the form.
async fn page(state: &AppState, caller: &Caller, status: StatusCode, form: Value) -> PageResult {
    let members = state.store.org_members(caller.account_id()).await?;
    let me = caller.member().map(|m| m.id.clone()).unwrap_or_default();
    let roles: Vec<&str> = Role::ALL.iter().map(|r| r.as_str()).collect();
    let ctx = context! { members => members, me => me, roles => roles, ..form };
    Ok(render_status(status, caller, Page::Team, "team.html", ctx))
}

fn actor(caller: &Caller) -> TeamActor {
    TeamActor { member_id: caller.member().map(|m| m.id.clone()), request_id: Some(request_id()) }
}

/// GET /console/team
pub async fn list(State(state): State<AppState>, caller: Caller, Query(q): Query<TeamQuery>) -> PageResult {
    caller.open(Page::Team)?;
    let form =
        context! { notice => notice(q.done.as_deref()), values => context! {}, errors => FieldErrors::default() };
    page(&state, &caller, StatusCode::OK, form).await
}

/// POST /console/team: adds a member (E-mail, Role).
pub async fn add(State(state): State<AppState>, posted: Posted) -> PageResult {
    let caller = &posted.caller;
    caller.open(Page::Team)?;
    let mut errors = FieldErrors::default();
    let email = member_email("email", posted.form.get("email"));
    let role = Role::parse("role", posted.form.get("role"));
    for e in [email.as_ref().err(), role.as_ref().err()].into_iter().flatten() {
        for (field, message) in FieldErrors::from_domain(e).0 {
            errors.add(&field, message);
        }
    }
    if let (Ok(email), Ok(role)) = (&email, role) {
        match flow::add_member(&state.store, caller.account_id(), email, role, &actor(caller), now_ms()).await {
            Ok(_) => return Ok(Redirect::to("/console/team?done=added").into_response()),
            Err(StoreError::Conflict(m)) => errors.add("email", m),
            Err(e) => return Err(e.into()),
        }
    }
    let values = context! { email => posted.form.get("email"), role => posted.form.get("role") };
    page(&state, caller, StatusCode::BAD_REQUEST, context! { values => values, errors => errors }).await
}

/// POST /console/team/{member_id}/remove: removes a member and ends their sessions.
pub async fn remove(State(state): State<AppState>, Path(member_id): Path<String>, posted: Posted) -> PageResult {
    let caller = &posted.caller;
    caller.open(Page::Team)?;
    if !is_uuid(&member_id) {
        return Err(ConsoleError::NotFound("member"));
    }
    match flow::remove_member(&state.store, caller.account_id(), &member_id, &actor(caller)).await {
        // Their own session ended with them: back to the sign-in form.
        Ok(m) if caller.member().is_some_and(|me| me.id == m.id) => {
            Ok(Redirect::to(Page::Dashboard.path()).into_response())
        }
        Ok(_) => Ok(Redirect::to("/console/team?done=removed").into_response()),
        Err(StoreError::Conflict(m)) => {
            let mut errors = FieldErrors::default();
            errors.add("form", m);
            page(&state, caller, StatusCode::BAD_REQUEST, context! { values => context! {}, errors => errors }).await
        }
        Err(e) => Err(e.into()),
    }
}

//! `/console/reseller` (D17.30; D10, D15, D16.14–19): the reseller console for portal users.
//! One page shows the profile, the members and invitations, and the approval requests; its
//! forms invite a member, file an approval request and decide (or, for one's own, cancel) one.
//! Each goes through exactly what the portal's own handlers use (`http::portal`): the same
//! permission checks on a [`PortalCaller`] built from the console's portal session, the same
//! parsers, the same store and flow functions (so the same audit entries and four-eyes rules).
//! Organization members get 403 here; a suspended or disabled reseller reads but does not write.
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect};
use axum::routing::post;
use axum::Router;
use minijinja::context;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::view::{render_status, FieldErrors};
use super::{Caller, ConsoleError, FormData, PageResult, Posted};
use crate::domain::console::Page;
use crate::domain::portal::{
    needs_admin_to_grant, parse_decision, parse_filing, parse_member, MemberFields, APPROVALS_DECIDE, ENTITY_TYPES,
    MEMBERS_MANAGE, ROLES, WITHDRAWALS_APPROVE,
};
use crate::domain::time::now_ms;
use crate::domain::{is_uuid, DomainError};
use crate::flows::approvals::{self, ApprovalError, PortalDecider};
use crate::http::portal::PortalCaller;
use crate::state::AppState;
use crate::store::approvals::ApprovalRequest;
use crate::store::portal::Member;
use crate::store::StoreError;

/// Rows per table page.
const PER_PAGE: usize = 50;
const PATH: &str = "/console/reseller";

/// The reseller pages' form posts.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console/reseller/members", post(invite))
        .route("/console/reseller/approval-requests", post(file))
        .route("/console/reseller/approval-requests/{approval_id}/decide", post(decide))
}

/// `?mp=` (members page), `?ap=` (approval requests page), `?done=` (the notice of a post).
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    mp: Option<String>,
    ap: Option<String>,
    done: Option<String>,
}

/// The portal user behind the caller, with the portal's permissions (403 for org members).
fn portal_of(caller: &Caller) -> Result<PortalCaller, ConsoleError> {
    caller.open(Page::Reseller)?;
    let session = caller.reseller().ok_or_else(|| ConsoleError::Forbidden("only reseller users open this".into()))?;
    Ok(PortalCaller::new(session.clone()))
}

/// Writes stop while the reseller is suspended or disabled (D16.18), as in the portal.
fn writable(portal: &PortalCaller) -> Result<(), ConsoleError> {
    portal.require_active_reseller().map_err(|_| {
        ConsoleError::Forbidden(format!("the reseller is {}; its console only reads", portal.session.profile_status))
    })
}

/// GET /console/reseller
pub async fn show(State(state): State<AppState>, caller: Caller, Query(q): Query<ListQuery>) -> PageResult {
    let portal = portal_of(&caller)?;
    let pages = (page_no(q.mp.as_deref()), page_no(q.ap.as_deref()));
    let notice = q.done.as_deref().and_then(notice);
    let ctx = context! { notice => notice };
    page(&state, &caller, &portal, StatusCode::OK, pages, ctx).await
}

/// POST /console/reseller/members `{email, role}`: an invitation (members:manage; granting
/// what only an admin may grant takes an admin), as `POST …/portal/reseller/members`.
pub async fn invite(State(state): State<AppState>, posted: Posted) -> PageResult {
    let portal = portal_of(&posted.caller)?;
    portal.require(MEMBERS_MANAGE).map_err(|_| forbidden(MEMBERS_MANAGE))?;
    writable(&portal)?;
    let (email, role) = (posted.form.get("email"), posted.form.get("role"));
    let roles = vec![role.to_string()];
    let parsed = parse_member(&MemberFields {
        email: Some(email),
        roles: (!role.is_empty()).then_some(roles.as_slice()),
        ..MemberFields::default()
    });
    let mut errors = match &parsed {
        Ok(_) => FieldErrors::default(),
        Err(e) => renamed(e, &[("roles", "role")]),
    };
    if role.is_empty() {
        errors.add("role", "choose a role");
    }
    let new = match parsed {
        Ok(new) if errors.is_empty() => new,
        _ => return refused(&state, &posted, &portal, StatusCode::BAD_REQUEST, errors).await,
    };
    if needs_admin_to_grant(&new.roles, &new.permissions) && portal.require_admin().is_err() {
        return Err(ConsoleError::Forbidden("only an admin of the reseller may grant this role".into()));
    }
    let made = state.store.create_reseller_member(portal.account_id(), &new, &portal.actor(), now_ms()).await;
    match made {
        Ok(_) => Ok(Redirect::to(&format!("{PATH}?done=invited")).into_response()),
        Err(StoreError::Conflict(m)) => {
            let mut errors = FieldErrors::default();
            errors.add("email", m);
            refused(&state, &posted, &portal, StatusCode::CONFLICT, errors).await
        }
        Err(e) => Err(e.into()),
    }
}

/// POST /console/reseller/approval-requests `{entity_type, reason, subject}`: files a request
/// (any active member), as `POST …/portal/reseller/approval-requests`; `subject` is the member,
/// campaign or withdrawal id approval would change.
pub async fn file(State(state): State<AppState>, posted: Posted) -> PageResult {
    let portal = portal_of(&posted.caller)?;
    writable(&portal)?;
    let (entity, reason, subject) =
        (posted.form.get("entity_type"), posted.form.get("reason"), posted.form.get("subject"));
    let payload = subject_payload(entity, subject);
    let parsed = parse_filing(Some(entity), (!reason.is_empty()).then_some(reason), Some(payload));
    let filing = match parsed {
        Ok(f) => f,
        Err(e) => {
            let errors = renamed(&e, &[("entityType", "entity_type"), ("requestPayload", "subject")]);
            return refused(&state, &posted, &portal, StatusCode::BAD_REQUEST, errors).await;
        }
    };
    approvals::file(&state.store, portal.account_id(), &filing, &portal.actor(), now_ms())
        .await
        .map_err(approval_error)?;
    Ok(Redirect::to(&format!("{PATH}?done=filed")).into_response())
}

/// POST /console/reseller/approval-requests/{id}/decide `{decision, note}`: approved or
/// rejected by a decider (four eyes), cancelled by its requester, as `PATCH
/// …/portal/reseller/approval-requests/:id` (`flows::approvals::decide_in_portal`).
pub async fn decide(State(state): State<AppState>, Path(id): Path<String>, posted: Posted) -> PageResult {
    let portal = portal_of(&posted.caller)?;
    if !is_uuid(&id) {
        return Err(ConsoleError::NotFound("approval request"));
    }
    // Another reseller's request answers 404 before anything about the form.
    state.store.approval(Some(portal.account_id()), &id).await?;
    writable(&portal)?;
    let (decision, note) = (posted.form.get("decision"), posted.form.get("note"));
    let req = match parse_decision(Some(decision), (!note.is_empty()).then_some(note)) {
        Ok(r) => r,
        Err(e) => {
            let errors = renamed(&e, &[("status", "decision")]);
            return row_refused(&state, &posted, &portal, StatusCode::BAD_REQUEST, &id, errors).await;
        }
    };
    let who = PortalDecider { member_id: &portal.member().id, permissions: &portal.permissions, actor: portal.actor() };
    match approvals::decide_in_portal(&state.store, portal.account_id(), &id, &req, &who, now_ms()).await {
        Ok(r) => Ok(Redirect::to(&format!("{PATH}?done={}", r.status)).into_response()),
        Err(ApprovalError::Store(StoreError::Conflict(m))) => {
            // The row may no longer carry a form (decided): the refusal is the page's.
            let mut errors = FieldErrors::default();
            errors.add("form", m);
            refused(&state, &posted, &portal, StatusCode::CONFLICT, errors).await
        }
        Err(e) => Err(approval_error(e)),
    }
}

fn forbidden(permission: &str) -> ConsoleError {
    ConsoleError::Forbidden(format!("this takes the {permission} permission"))
}

fn approval_error(e: ApprovalError) -> ConsoleError {
    match e {
        ApprovalError::Store(s) => s.into(),
        ApprovalError::NotPermitted => forbidden(APPROVALS_DECIDE),
        other => ConsoleError::Forbidden(other.to_string()),
    }
}

/// A domain refusal's field errors under the form's field names.
fn renamed(e: &DomainError, names: &[(&str, &str)]) -> FieldErrors {
    let mut out = FieldErrors::default();
    for (field, message) in FieldErrors::from_domain(e).0 {
        let to = names.iter().find(|(from, _)| {
            field.strip_prefix(from).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        });
        out.add(to.map(|(_, to)| *to).unwrap_or(&field), message);
    }
    out
}

/// The request payload naming what approval changes (D16.19).
fn subject_payload(entity: &str, subject: &str) -> Value {
    let key = match entity {
        "member" => "memberId",
        "campaign" => "campaignId",
        "withdrawal" => "withdrawalId",
        _ => "subjectId",
    };
    if subject.is_empty() {
        Value::Object(Map::new())
    } else {
        json!({ key: subject })
    }
}

fn page_no(raw: Option<&str>) -> usize {
    raw.and_then(|p| p.parse::<usize>().ok()).filter(|p| (1..=100_000).contains(p)).unwrap_or(1)
}

fn notice(done: &str) -> Option<&'static str> {
    Some(match done {
        "invited" => "The invitation is sent; the member stays pending until they sign in.",
        "filed" => "The approval request is filed.",
        "approved" => "The request is approved.",
        "rejected" => "The request is rejected.",
        "cancelled" => "The request is cancelled.",
        _ => return None,
    })
}

/// A refused form: the page again with the values sent and the errors beside their fields.
async fn refused(
    state: &AppState,
    posted: &Posted,
    portal: &PortalCaller,
    status: StatusCode,
    errors: FieldErrors,
) -> PageResult {
    let ctx = context! { values => posted.form.0, errors => errors };
    page(state, &posted.caller, portal, status, (1, 1), ctx).await
}

/// A refused decision: its errors beside that request's form.
async fn row_refused(
    state: &AppState,
    posted: &Posted,
    portal: &PortalCaller,
    status: StatusCode,
    id: &str,
    errors: FieldErrors,
) -> PageResult {
    let values: &FormData = &posted.form;
    let ctx = context! { values => values.0, decide_id => id, decide_errors => errors };
    page(state, &posted.caller, portal, status, (1, 1), ctx).await
}

/// A member row.
#[derive(Serialize)]
struct MemberRow {
    id: String,
    email: String,
    display_name: Option<String>,
    member_type: &'static str,
    roles: String,
    status: &'static str,
    invitation: bool,
    me: bool,
}

/// An approval request row.
#[derive(Serialize)]
struct RequestRow {
    id: String,
    entity_type: &'static str,
    status: &'static str,
    reason: Option<String>,
    subject: Option<String>,
    asked_by: String,
    created_at: i64,
    decided_by: Option<String>,
    decided_at: Option<i64>,
    note: Option<String>,
    pending: bool,
    own: bool,
}

/// One page of a list (1-based), newest-first order left to the caller; (rows, pages).
fn paged<T>(all: Vec<T>, page: usize) -> (Vec<T>, usize) {
    let pages = all.len().div_ceil(PER_PAGE).max(1);
    let rows = all.into_iter().skip((page.min(pages) - 1) * PER_PAGE).take(PER_PAGE).collect();
    (rows, pages)
}

fn who(members: &[Member], id: Option<&str>) -> String {
    match id {
        None => "Tessera".to_string(),
        Some("operator") => "the operator".to_string(),
        Some(id) => members
            .iter()
            .find(|m| m.id == id)
            .and_then(|m| m.email.clone().or_else(|| m.display_name.clone()))
            .unwrap_or_else(|| id.to_string()),
    }
}

fn request_row(r: ApprovalRequest, members: &[Member], me: &str) -> RequestRow {
    let subject = ["memberId", "campaignId", "withdrawalId"]
        .iter()
        .find_map(|k| r.request_payload.get(*k).and_then(Value::as_str).map(str::to_string));
    RequestRow {
        own: r.requested_by.as_deref() == Some(me),
        pending: r.status.as_str() == "pending",
        asked_by: who(members, r.requested_by.as_deref()),
        decided_by: r.decided_by.as_deref().map(|d| who(members, Some(d))),
        id: r.id,
        entity_type: r.entity_type.as_str(),
        status: r.status.as_str(),
        reason: r.reason,
        subject,
        created_at: r.created_at,
        decided_at: r.decided_at,
        note: r.note,
    }
}

/// Renders the page: the profile, a page of members, a page of approval requests (newest
/// first), what the member may do, and `extra` (notice, values sent back, errors).
async fn page(
    state: &AppState,
    caller: &Caller,
    portal: &PortalCaller,
    status: StatusCode,
    (mp, ap): (usize, usize),
    extra: minijinja::Value,
) -> PageResult {
    let account = portal.account_id();
    let profile = state.store.reseller_profile(account).await?;
    let members = state.store.reseller_members(account).await?;
    let requests = approvals::list(&state.store, Some(account), None).await.map_err(approval_error)?;
    let me = portal.member().id.clone();
    let mut rows: Vec<RequestRow> = requests.into_iter().map(|r| request_row(r, &members, &me)).collect();
    rows.reverse();
    let (requests, request_pages) = paged(rows, ap);
    let member_rows = members.iter().map(|m| MemberRow {
        id: m.id.clone(),
        email: m.email.clone().unwrap_or_default(),
        display_name: m.display_name.clone(),
        member_type: m.member_type.as_str(),
        roles: m.roles.join(", "),
        status: m.status.as_str(),
        invitation: m.is_invitation(),
        me: m.id == me,
    });
    let (members, member_pages) = paged(member_rows.collect(), mp);
    let active = !profile.status.is_inactive();
    let settings = serde_json::to_string_pretty(&profile.settings).unwrap_or_default();
    let ctx = context! {
        profile => context! {
            status => profile.status.as_str(), risk_level => profile.risk_level,
            require_sub_creator_approval => profile.require_sub_creator_approval,
            allow_public_signup => profile.allow_public_signup, settings => settings,
        },
        members, requests,
        mp => mp.min(member_pages), member_pages, ap => ap.min(request_pages), request_pages,
        active, may_invite => active && portal.has(MEMBERS_MANAGE),
        may_decide => active && (portal.has(APPROVALS_DECIDE) || portal.has(WITHDRAWALS_APPROVE)),
        roles => ROLES, entity_types => ENTITY_TYPES, me_email => caller.email(),
        ..extra
    };
    Ok(render_status(status, caller, Page::Reseller, "reseller.html", ctx))
}

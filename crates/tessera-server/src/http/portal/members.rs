//! Members and invitations (spec "Reseller member"; D10.2, D10.4, D15.2, D16.14–17).
use axum::extract::{Path, State};
use serde::Deserialize;
use utoipa::ToSchema;

use super::auth::portal_email;
use super::reseller::update_error;
use super::{
    MemberOut, Portal, PortalBodyErrors, PortalCaller, PortalConflict, PortalEnvelope, PortalErrors, PortalNotFound,
    PortalResult,
};
use crate::domain::check::{text, Check};
use crate::domain::portal::{
    all_permissions, member_move, needs_admin_to_grant, parse_names, MEMBERS_MANAGE, MEMBER_STATES, MEMBER_TYPES, ROLES,
};
use crate::domain::time::now_ms;
use crate::domain::{is_uuid, DomainError};
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::openapi::string_enum;
use crate::state::AppState;
use crate::store::portal::{MemberPatch, NewMember};

fn member_type_schema() -> utoipa::openapi::schema::Object {
    string_enum(
        &MEMBER_TYPES[1..],
        "Member type (owner is the operator's: `tessera admin reseller create`); default operator",
    )
}

fn status_schema() -> utoipa::openapi::schema::Object {
    string_enum(
        &MEMBER_STATES,
        "pending → active | revoked; active → suspended | revoked; suspended → active | revoked (D15.2)",
    )
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MemberIn {
    /// An existing user to add.
    #[schema(format = "uuid")]
    pub user_id: Option<String>,
    /// Invite by e-mail (added, D15.2): the member stays `pending` until this address signs in.
    #[schema(format = Email)]
    pub email: Option<String>,
    #[schema(format = "uuid")]
    pub creator_id: Option<String>,
    #[schema(schema_with = member_type_schema)]
    pub member_type: Option<String>,
    pub display_name: Option<String>,
    /// admin, manager, finance, support, viewer (D10.4).
    pub roles: Option<Vec<String>>,
    /// API scopes plus members:manage, approvals:decide, withdrawals:approve (D10.4).
    pub permissions: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MemberPatchIn {
    #[schema(schema_with = member_type_schema)]
    pub member_type: Option<String>,
    pub display_name: Option<String>,
    pub roles: Option<Vec<String>>,
    pub permissions: Option<Vec<String>>,
    #[schema(schema_with = status_schema)]
    pub status: Option<String>,
}

fn member_type(check: &mut Check, v: Option<&str>) -> Option<String> {
    match v {
        None => None,
        Some("owner") => {
            check.fail("memberType", "owner is set by the platform operator, not through the portal");
            None
        }
        Some(t) if MEMBER_TYPES.contains(&t) => Some(t.to_string()),
        Some(_) => {
            check.fail("memberType", format!("must be one of {}", MEMBER_TYPES[1..].join(", ")));
            None
        }
    }
}

/// Roles and permissions named in a body, each checked.
fn grants(
    check: &mut Check,
    roles: Option<&Vec<String>>,
    permissions: Option<&Vec<String>>,
) -> (Option<Vec<String>>, Option<Vec<String>>) {
    let roles = roles.and_then(|r| check.take(parse_names("roles", r, &ROLES)));
    let all = all_permissions();
    let permissions = permissions.and_then(|p| check.take(parse_names("permissions", p, &all)));
    (roles, permissions)
}

/// 403 unless an admin grants what only an admin may (D16.15).
fn may_grant(caller: &PortalCaller, roles: &[String], permissions: &[String]) -> Result<(), ApiError> {
    if needs_admin_to_grant(roles, permissions) {
        caller.require_admin()?;
    }
    Ok(())
}

/// POST /api/white-label/portal/reseller/members — session — members:manage
#[utoipa::path(
    post, path = "/api/white-label/portal/reseller/members", tag = "portal", operation_id = "portal_members_create",
    security(("portalSession" = [])),
    request_body(content = MemberIn, example = json!({"email": "kofi@reseller.example.com", "memberType": "finance", "displayName": "Kofi", "roles": ["viewer"]})),
    responses(
        (status = 201, description = "The member, pending: an invitation (email) until that address signs in, or a linked user (userId) until activated.", body = PortalEnvelope<MemberOut>),
        PortalErrors, PortalBodyErrors, PortalNotFound, PortalConflict,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: PortalCaller,
    ApiJson(body): ApiJson<MemberIn>,
) -> PortalResult<MemberOut> {
    caller.require(MEMBERS_MANAGE)?;
    caller.require_active_reseller()?;
    let mut check = Check::new();
    if body.user_id.as_deref().is_some_and(|u| !is_uuid(u)) {
        check.fail("userId", "must be a UUID");
    }
    if body.creator_id.as_deref().is_some_and(|u| !is_uuid(u)) {
        check.fail("creatorId", "must be a UUID");
    }
    let email = body.email.as_deref().and_then(|e| check.take(portal_email("email", e)));
    if body.user_id.is_none() && body.email.is_none() {
        check.fail("email", "userId or email is required");
    }
    let kind = member_type(&mut check, body.member_type.as_deref()).unwrap_or_else(|| "operator".into());
    let display_name = body.display_name.as_deref().and_then(|d| check.take(text("displayName", d, 1, 255)));
    let (roles, permissions) = grants(&mut check, body.roles.as_ref(), body.permissions.as_ref());
    check.finish()?;
    let (roles, permissions) = (roles.unwrap_or_default(), permissions.unwrap_or_default());
    may_grant(&caller, &roles, &permissions)?;
    let new = NewMember {
        user_id: body.user_id,
        email,
        creator_id: body.creator_id,
        member_type: kind,
        display_name,
        roles,
        permissions,
    };
    let m = state.store.create_reseller_member(caller.account_id(), &new, &caller.actor(), now_ms()).await?;
    Ok(Portal::created((&m).into()))
}

/// PATCH /api/white-label/portal/reseller/members/:memberId — session — members:manage
#[utoipa::path(
    patch, path = "/api/white-label/portal/reseller/members/{memberId}", tag = "portal", operation_id = "portal_members_update",
    security(("portalSession" = [])),
    params(("memberId" = String, Path, format = Uuid, description = "Member id")),
    request_body(content = MemberPatchIn, example = json!({"status": "suspended"})),
    responses(
        (status = 200, description = "The member after the change. Suspending or revoking ends its sessions at once (D16.17).", body = PortalEnvelope<MemberOut>),
        PortalErrors, PortalBodyErrors, PortalNotFound, PortalConflict,
    )
)]
pub async fn update(
    State(state): State<AppState>,
    caller: PortalCaller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<MemberPatchIn>,
) -> PortalResult<MemberOut> {
    caller.require(MEMBERS_MANAGE)?;
    caller.require_active_reseller()?;
    if !is_uuid(&id) {
        return Err(ApiError::not_found("member"));
    }
    let mut check = Check::new();
    let kind = member_type(&mut check, body.member_type.as_deref());
    let display_name = body.display_name.as_deref().and_then(|d| check.take(text("displayName", d, 1, 255)));
    let (roles, permissions) = grants(&mut check, body.roles.as_ref(), body.permissions.as_ref());
    if let Some(s) = body.status.as_deref().filter(|s| !MEMBER_STATES.contains(s)) {
        check.fail("status", format!("must be one of {}; got {s:?}", MEMBER_STATES.join(", ")));
    }
    if body.member_type.is_none()
        && body.display_name.is_none()
        && body.roles.is_none()
        && body.permissions.is_none()
        && body.status.is_none()
    {
        check.fail("body", "name at least one field to change");
    }
    check.finish()?;
    may_grant(&caller, roles.as_deref().unwrap_or_default(), permissions.as_deref().unwrap_or_default())?;
    let patch = MemberPatch { member_type: kind, display_name, roles, permissions, status: body.status };
    let judge = |before: &crate::store::portal::Member, after: &crate::store::portal::Member| {
        if before.member_type == "owner" {
            return Err(DomainError::Conflict("the owner member cannot be changed through the portal".into()));
        }
        member_move(&before.status, &after.status)
    };
    let m = state
        .store
        .update_reseller_member(caller.account_id(), &id, &patch, judge, &caller.actor(), now_ms())
        .await
        .map_err(update_error)?;
    Ok(Portal::ok((&m).into()))
}

//! Members and invitations (spec "Reseller member"; D10.2, D10.4, D15.2, D16.14–17).
use axum::extract::{Path, State};
use serde::Deserialize;
use utoipa::ToSchema;

use super::reseller::update_error;
use super::{
    MemberOut, Portal, PortalBodyErrors, PortalCaller, PortalConflict, PortalEnvelope, PortalErrors, PortalNotFound,
    PortalResult,
};
use crate::domain::is_uuid;
use crate::domain::portal::{
    needs_admin_to_grant, parse_member, parse_member_change, portal_member_change, MemberFields, MEMBERS_MANAGE,
    MEMBER_STATES, MEMBER_TYPES,
};
use crate::domain::time::now_ms;
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::openapi::string_enum;
use crate::state::AppState;
use crate::store::portal::Member;

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
    let new = parse_member(&MemberFields {
        user_id: body.user_id.as_deref(),
        email: body.email.as_deref(),
        creator_id: body.creator_id.as_deref(),
        member_type: body.member_type.as_deref(),
        display_name: body.display_name.as_deref(),
        roles: body.roles.as_deref(),
        permissions: body.permissions.as_deref(),
        status: None,
    })?;
    may_grant(&caller, &new.roles, &new.permissions)?;
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
    let patch = parse_member_change(&MemberFields {
        member_type: body.member_type.as_deref(),
        display_name: body.display_name.as_deref(),
        roles: body.roles.as_deref(),
        permissions: body.permissions.as_deref(),
        status: body.status.as_deref(),
        ..MemberFields::default()
    })?;
    may_grant(&caller, patch.roles.as_deref().unwrap_or_default(), patch.permissions.as_deref().unwrap_or_default())?;
    let judge = |before: &Member, after: &Member| portal_member_change(before.member_type, before.status, after.status);
    let m = state
        .store
        .update_reseller_member(caller.account_id(), &id, &patch, judge, &caller.actor(), now_ms())
        .await
        .map_err(update_error)?;
    Ok(Portal::ok((&m).into()))
}

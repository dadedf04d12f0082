//! The reseller read (profile, members, invitations) and the profile update (spec "Reseller portal routes", "Reseller profile";
//! D10.2, D16.15, D16.18).
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{
    MemberOut, Portal, PortalBodyErrors, PortalCaller, PortalConflict, PortalEnvelope, PortalErrors, PortalResult,
};
use crate::domain::portal::{parse_profile_change, portal_profile_move, PROFILE_STATES, RISK_LEVELS};
use crate::domain::time::{now_ms, rfc3339};
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::openapi::string_enum;
use crate::state::AppState;
use crate::store::portal::Profile;
use crate::store::UpdateError;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileOut {
    pub id: String,
    /// draft | enabled | suspended | disabled.
    pub status: String,
    pub require_sub_creator_approval: bool,
    pub allow_public_signup: bool,
    /// low | medium | high.
    pub risk_level: String,
    pub settings: Value,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&Profile> for ProfileOut {
    fn from(p: &Profile) -> Self {
        ProfileOut {
            id: p.id.clone(),
            status: p.status.as_str().to_string(),
            require_sub_creator_approval: p.require_sub_creator_approval,
            allow_public_signup: p.allow_public_signup,
            risk_level: p.risk_level.clone(),
            settings: p.settings.clone(),
            created_at: rfc3339(p.created_at),
            updated_at: rfc3339(p.updated_at),
        }
    }
}

// What `GET /portal/reseller` shows. Published in the OpenAPI document under its former name,
// `ConsoleOut` ("console" is the organization web console under `/console`); a doc comment
// here would become its description there.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ConsoleOut)]
pub struct ResellerOut {
    pub profile: ProfileOut,
    /// Members with a user (any status).
    pub members: Vec<MemberOut>,
    /// Members invited by e-mail who have not signed in yet (D15.2).
    pub invitations: Vec<MemberOut>,
}

fn status_schema() -> utoipa::openapi::schema::Object {
    string_enum(
        &PROFILE_STATES,
        "draft → enabled | disabled; enabled → suspended | disabled; suspended → disabled (D10.2)",
    )
}

fn risk_schema() -> utoipa::openapi::schema::Object {
    string_enum(&RISK_LEVELS, "Risk level")
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProfilePatchIn {
    #[schema(schema_with = status_schema)]
    pub status: Option<String>,
    pub require_sub_creator_approval: Option<bool>,
    pub allow_public_signup: Option<bool>,
    #[schema(schema_with = risk_schema)]
    pub risk_level: Option<String>,
    /// Free-form object (≤ 16 KiB, depth ≤ 8); replaces the stored settings.
    pub settings: Option<Value>,
}

/// GET /api/white-label/portal/reseller — session — any active member
#[utoipa::path(
    get, path = "/api/white-label/portal/reseller", tag = "portal", operation_id = "portal_reseller_show",
    security(("portalSession" = [])),
    responses(
        (status = 200, description = "The console: profile, members and invitations.", body = PortalEnvelope<ResellerOut>),
        PortalErrors,
    )
)]
pub async fn show(State(state): State<AppState>, caller: PortalCaller) -> PortalResult<ResellerOut> {
    let account = caller.account_id();
    let profile = state.store.reseller_profile(account).await?;
    let all = state.store.reseller_members(account).await?;
    let (invitations, members): (Vec<_>, Vec<_>) = all.iter().partition(|m| m.is_invitation());
    Ok(Portal::ok(ResellerOut {
        profile: (&profile).into(),
        members: members.into_iter().map(MemberOut::from).collect(),
        invitations: invitations.into_iter().map(MemberOut::from).collect(),
    }))
}

/// PATCH /api/white-label/portal/reseller/profile — session — admin
#[utoipa::path(
    patch, path = "/api/white-label/portal/reseller/profile", tag = "portal", operation_id = "portal_profile_update",
    security(("portalSession" = [])),
    request_body(content = ProfilePatchIn, example = json!({"status": "enabled", "allowPublicSignup": true, "riskLevel": "medium"})),
    responses(
        (status = 200, description = "The profile after the change (data.status is its state).", body = PortalEnvelope<ProfileOut>),
        PortalErrors, PortalBodyErrors, PortalConflict,
    )
)]
pub async fn update_profile(
    State(state): State<AppState>,
    caller: PortalCaller,
    ApiJson(body): ApiJson<ProfilePatchIn>,
) -> PortalResult<ProfileOut> {
    caller.require_admin()?;
    let patch = parse_profile_change(
        body.status.as_deref(),
        body.require_sub_creator_approval,
        body.allow_public_signup,
        body.risk_level.as_deref(),
        body.settings,
    )?;
    let profile = state
        .store
        .update_reseller_profile(caller.account_id(), &patch, portal_profile_move, &caller.actor(), now_ms())
        .await
        .map_err(update_error)?;
    Ok(Portal::ok((&profile).into()))
}

/// A refused update as an answer.
pub fn update_error(e: UpdateError) -> ApiError {
    match e {
        UpdateError::Domain(d) => d.into(),
        UpdateError::Store(s) => s.into(),
        UpdateError::Raced => ApiError::conflict("changed concurrently; retry"),
    }
}

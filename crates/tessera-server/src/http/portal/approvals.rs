//! Four-eyes approval requests over HTTP (spec "Approval request"; D15.3, D16.15, D16.19): the
//! bodies and answers; who may decide and what a decision does are `flows::approvals`'s.
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::{
    Portal, PortalBodyErrors, PortalCaller, PortalConflict, PortalEnvelope, PortalErrors, PortalNotFound,
    PortalQueryErrors, PortalResult,
};
use crate::domain::is_uuid;
use crate::domain::portal::{
    parse_approval_filter, parse_decision, parse_filing, APPROVALS_DECIDE, APPROVAL_STATES, ENTITY_TYPES,
};
use crate::domain::time::{now_ms, rfc3339};
use crate::flows::approvals::{self, ApprovalError, PortalDecider};
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::openapi::string_enum;
use crate::state::AppState;
use crate::store::approvals::ApprovalRequest;

impl From<ApprovalError> for ApiError {
    fn from(e: ApprovalError) -> Self {
        let forbidden = |m: &'static str| ApiError::new(axum::http::StatusCode::FORBIDDEN, "insufficient_scope", m);
        match e {
            ApprovalError::Store(s) => s.into(),
            ApprovalError::NotRequester => forbidden("only the member who filed a request may cancel it"),
            ApprovalError::NotPermitted => ApiError::insufficient_scope(&[APPROVALS_DECIDE]),
            ApprovalError::OwnRequest => forbidden("nobody decides their own request (four eyes)"),
        }
    }
}

fn entity_schema() -> utoipa::openapi::schema::Object {
    string_enum(&ENTITY_TYPES, "What the request is about")
}

fn decision_schema() -> utoipa::openapi::schema::Object {
    string_enum(&["approved", "rejected", "cancelled"], "approved or rejected (a decider), cancelled (the requester)")
}

fn status_schema() -> utoipa::openapi::schema::Object {
    string_enum(&APPROVAL_STATES, "Only requests in this state")
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApprovalIn {
    #[schema(schema_with = entity_schema)]
    pub entity_type: Option<String>,
    pub reason: Option<String>,
    /// Free-form object; `memberId` (member) and `campaignId` (campaign) name what approval
    /// changes (D16.19).
    pub request_payload: Option<Value>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionIn {
    #[schema(schema_with = decision_schema)]
    pub status: Option<String>,
    pub note: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    #[param(schema_with = status_schema)]
    pub status: Option<String>,
}

/// An approval request (D16.19).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalOut {
    pub id: String,
    pub entity_type: String,
    /// pending | approved | rejected | cancelled.
    pub status: String,
    pub reason: Option<String>,
    pub request_payload: Value,
    /// The member who filed it; null when Tessera filed it (a withdrawal above the threshold).
    pub requested_by: Option<String>,
    pub decided_by: Option<String>,
    pub note: Option<String>,
    pub created_at: String,
    pub decided_at: Option<String>,
}

impl From<ApprovalRequest> for ApprovalOut {
    fn from(r: ApprovalRequest) -> Self {
        ApprovalOut {
            id: r.id,
            entity_type: r.entity_type.as_str().to_string(),
            status: r.status.as_str().to_string(),
            reason: r.reason,
            request_payload: r.request_payload,
            requested_by: r.requested_by,
            decided_by: r.decided_by,
            note: r.note,
            created_at: rfc3339(r.created_at),
            decided_at: r.decided_at.map(rfc3339),
        }
    }
}

/// POST /api/white-label/portal/reseller/approval-requests — session — any active member
#[utoipa::path(
    post, path = "/api/white-label/portal/reseller/approval-requests", tag = "portal", operation_id = "portal_approvals_create",
    security(("portalSession" = [])),
    request_body(content = ApprovalIn, example = json!({"entityType": "member", "reason": "New finance lead", "requestPayload": {"memberId": "0190f5c2-8a4b-7c3d-9e1f-2a3b4c5d6e7f"}})),
    responses(
        (status = 201, description = "The request, pending.", body = PortalEnvelope<ApprovalOut>),
        PortalErrors, PortalBodyErrors,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: PortalCaller,
    ApiJson(body): ApiJson<ApprovalIn>,
) -> PortalResult<ApprovalOut> {
    caller.require_active_reseller()?;
    let filing = parse_filing(body.entity_type.as_deref(), body.reason.as_deref(), body.request_payload)?;
    let r = approvals::file(&state.store, caller.account_id(), &filing, &caller.actor(), now_ms()).await?;
    Ok(Portal::created(r.into()))
}

/// GET /api/white-label/portal/reseller/approval-requests — session — any active member
#[utoipa::path(
    get, path = "/api/white-label/portal/reseller/approval-requests", tag = "portal", operation_id = "portal_approvals_list",
    security(("portalSession" = [])),
    params(ListParams),
    responses(
        (status = 200, description = "The reseller's approval requests, oldest first (Tessera's own included).", body = PortalEnvelope<Vec<ApprovalOut>>),
        PortalErrors, PortalQueryErrors,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: PortalCaller,
    ApiQuery(q): ApiQuery<ListParams>,
) -> PortalResult<Vec<ApprovalOut>> {
    let status = parse_approval_filter(q.status.as_deref())?;
    let all = approvals::list(&state.store, Some(caller.account_id()), status).await?;
    Ok(Portal::ok(all.into_iter().map(ApprovalOut::from).collect()))
}

/// PATCH /api/white-label/portal/reseller/approval-requests/:id — session — approvals:decide
/// (withdrawal requests also withdrawals:approve); the requester may cancel
#[utoipa::path(
    patch, path = "/api/white-label/portal/reseller/approval-requests/{id}", tag = "portal", operation_id = "portal_approvals_decide",
    security(("portalSession" = [])),
    params(("id" = String, Path, format = Uuid, description = "Approval request id")),
    request_body(content = DecisionIn, example = json!({"status": "approved", "note": "Checked with the bank"})),
    responses(
        (status = 200, description = "The request as decided; approval applied its effect (member activated, campaign approved, Tessera's withdrawal released for payout).", body = PortalEnvelope<ApprovalOut>),
        PortalErrors, PortalBodyErrors, PortalNotFound, PortalConflict,
    )
)]
pub async fn decide(
    State(state): State<AppState>,
    caller: PortalCaller,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<DecisionIn>,
) -> PortalResult<ApprovalOut> {
    caller.require_active_reseller()?;
    let req = parse_decision(body.status.as_deref(), body.note.as_deref())?;
    if !is_uuid(&id) {
        return Err(ApiError::not_found("approval request"));
    }
    let who = PortalDecider { member_id: &caller.member().id, permissions: &caller.permissions, actor: caller.actor() };
    let decided = approvals::decide_in_portal(&state.store, caller.account_id(), &id, &req, &who, now_ms()).await?;
    Ok(Portal::ok(decided.into()))
}

//! Four-eyes approval requests (spec "Approval request"; D15.3, D16.15, D16.19): any active
//! member files one and may cancel their own while pending; a member with approvals:decide
//! (withdrawal requests: also withdrawals:approve) approves or rejects, never their own.
//! Approval applies the request's effect in the decision's transaction.
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use super::{
    Portal, PortalBodyErrors, PortalCaller, PortalConflict, PortalEnvelope, PortalErrors, PortalNotFound,
    PortalQueryErrors, PortalResult,
};
use crate::domain::check::{free_object, text, Check};
use crate::domain::is_uuid;
use crate::domain::portal::{APPROVALS_DECIDE, ENTITY_TYPES, WITHDRAWALS_APPROVE};
use crate::domain::time::{now_ms, rfc3339};
use crate::http::envelope::request_id;
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::openapi::string_enum;
use crate::state::AppState;
use crate::store::withdrawals::{ApprovalRequest, Decider, Decision};

const STATUSES: [&str; 4] = ["pending", "approved", "rejected", "cancelled"];

fn entity_schema() -> utoipa::openapi::schema::Object {
    string_enum(&ENTITY_TYPES, "What the request is about")
}

fn decision_schema() -> utoipa::openapi::schema::Object {
    string_enum(&["approved", "rejected", "cancelled"], "approved or rejected (a decider), cancelled (the requester)")
}

fn status_schema() -> utoipa::openapi::schema::Object {
    string_enum(&STATUSES, "Only requests in this state")
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
            entity_type: r.entity_type,
            status: r.status,
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
    let mut check = Check::new();
    match body.entity_type.as_deref() {
        None => check.fail("entityType", "is required"),
        Some(t) if !ENTITY_TYPES.contains(&t) => {
            check.fail("entityType", format!("must be one of {}", ENTITY_TYPES.join(", ")))
        }
        Some(_) => {}
    }
    let reason = body.reason.as_deref().and_then(|r| check.take(text("reason", r, 1, 1000)));
    let payload = body.request_payload.unwrap_or_else(|| Value::Object(Map::new()));
    check.take(free_object("requestPayload", &payload));
    for key in ["memberId", "campaignId", "withdrawalId"] {
        if payload.get(key).is_some_and(|v| !v.as_str().is_some_and(is_uuid)) {
            check.fail(format!("requestPayload.{key}"), "must be a UUID");
        }
    }
    check.finish()?;
    let entity = body.entity_type.unwrap_or_default();
    let r = state
        .store
        .file_approval(caller.account_id(), &entity, reason.as_deref(), &payload, &caller.actor(), now_ms())
        .await?;
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
    if let Some(s) = q.status.as_deref().filter(|s| !STATUSES.contains(s)) {
        return Err(ApiError::field("status", format!("must be one of {}; got {s:?}", STATUSES.join(", "))));
    }
    let all = state.store.list_approvals(Some(caller.account_id()), q.status.as_deref()).await?;
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
    let mut check = Check::new();
    let status = body.status.as_deref();
    if !matches!(status, Some("approved" | "rejected" | "cancelled")) {
        check.fail("status", "must be approved, rejected or cancelled");
    }
    let note = body.note.as_deref().and_then(|n| check.take(text("note", n, 1, 1000)));
    check.finish()?;
    if !is_uuid(&id) {
        return Err(ApiError::not_found("approval request"));
    }
    let account = caller.account_id();
    let request = state.store.approval(Some(account), &id).await?;
    let me = caller.member().id.as_str();
    let own = request.requested_by.as_deref() == Some(me);
    let now = now_ms();
    let decision = match status {
        Some("cancelled") => {
            if !own {
                return Err(ApiError::new(
                    axum::http::StatusCode::FORBIDDEN,
                    "insufficient_scope",
                    "only the member who filed a request may cancel it",
                ));
            }
            let r = state.store.cancel_approval(account, &id, note.as_deref(), &caller.actor(), now).await?;
            return Ok(Portal::ok(r.into()));
        }
        Some("approved") => Decision::Approved,
        _ => Decision::Rejected,
    };
    let withdrawal = request.entity_type == "withdrawal";
    if !(caller.has(APPROVALS_DECIDE) || (withdrawal && caller.has(WITHDRAWALS_APPROVE))) {
        return Err(ApiError::insufficient_scope(&[APPROVALS_DECIDE]));
    }
    if own {
        return Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "insufficient_scope",
            "nobody decides their own request (four eyes)",
        ));
    }
    let decided = if withdrawal && request.requested_by.is_none() {
        // Tessera's own withdrawal request: the withdrawals store applies it (D14.2).
        let by = Decider { decided_by: me, key_id: None, request_id: Some(request_id()) };
        state.store.decide_approval(Some(account), &id, decision, note.as_deref(), &by, now).await?
    } else {
        state.store.decide_portal_approval(account, &request, decision, note.as_deref(), &caller.actor(), now).await?
    };
    Ok(Portal::ok(decided.into()))
}

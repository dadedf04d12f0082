//! Reseller portal routes (spec "Reseller portal routes", Scheme 3; D10, D15, D16.14–19, D16.26):
//! sign-in under `/api/white-label/portal/auth`, the session routes under
//! `/api/white-label/portal/reseller`. Answers are `{success: true, data}` and errors
//! `{success: false, error, code, details?}` (no `requestId`; the `x-request-id` header is set).
//! The session layer (`http::middleware::session`) puts a [`PortalCaller`] on every session
//! request; each handler names its permission in one line (`caller.require(MEMBERS_MANAGE)?`).
pub mod approvals;
pub mod auth;
pub mod members;
pub mod otp;
pub mod reseller;

use std::collections::BTreeSet;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::portal::effective_permissions;
use crate::domain::time::rfc3339;
use crate::http::envelope::request_id;
use crate::http::error::{ApiError, Detail};
use crate::state::AppState;
use crate::store::portal::{Actor, Member, PortalSession};

pub const PREFIX: &str = "/api/white-label/portal";

/// The signed-in user, as the session layer found them.
#[derive(Debug, Clone)]
pub struct PortalCaller {
    pub session: PortalSession,
    pub permissions: BTreeSet<String>,
}

impl PortalCaller {
    pub fn new(session: PortalSession) -> Self {
        let permissions = effective_permissions(&session.member.roles, &session.member.permissions);
        PortalCaller { session, permissions }
    }

    pub fn account_id(&self) -> &str {
        &self.session.member.account_id
    }

    pub fn member(&self) -> &Member {
        &self.session.member
    }

    pub fn has(&self, permission: &str) -> bool {
        self.permissions.contains(permission)
    }

    /// 403 `insufficient_scope` unless the member holds `permission` (D16.15).
    pub fn require(&self, permission: &str) -> Result<(), ApiError> {
        if self.has(permission) {
            Ok(())
        } else {
            Err(ApiError::insufficient_scope(&[permission]))
        }
    }

    /// 403 unless the member holds the role admin (D16.15: PATCH profile, privileged grants).
    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.member().is_admin() {
            Ok(())
        } else {
            Err(ApiError::new(StatusCode::FORBIDDEN, "insufficient_scope", "only an admin of the reseller may do this")
                .with_detail("role", "requires admin"))
        }
    }

    /// 403 `account_inactive` while the profile is suspended or disabled (D16.18): the portal
    /// still reads, but member, approval and otp/send writes stop.
    pub fn require_active_reseller(&self) -> Result<(), ApiError> {
        let status = self.session.profile_status;
        if status.is_inactive() {
            return Err(ApiError::new(StatusCode::FORBIDDEN, "account_inactive", format!("the reseller is {status}")));
        }
        Ok(())
    }

    /// Who is acting, for audit entries.
    pub fn actor(&self) -> Actor {
        Actor {
            user_id: Some(self.session.user_id.clone()),
            member_id: Some(self.member().id.clone()),
            request_id: Some(request_id()),
        }
    }
}

impl FromRequestParts<AppState> for PortalCaller {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<PortalCaller>()
            .cloned()
            .ok_or_else(|| ApiError::missing_auth("this route takes a portal session (Authorization: Bearer)"))
    }
}

/// Success envelope of portal routes, as documented (no `requestId`).
#[derive(Serialize, ToSchema)]
pub struct PortalEnvelope<T> {
    /// Always `true`.
    pub success: bool,
    pub data: T,
}

/// Error envelope of portal routes (D15.5, D16.26).
#[derive(Serialize, ToSchema)]
pub struct PortalErrorEnvelope {
    /// Always `false`.
    pub success: bool,
    pub error: String,
    /// Machine-readable code (D1.2).
    pub code: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Detail>,
}

/// A successful portal answer.
pub struct Portal<T> {
    status: StatusCode,
    data: T,
}

impl<T: Serialize> Portal<T> {
    pub fn ok(data: T) -> Self {
        Portal { status: StatusCode::OK, data }
    }
    pub fn created(data: T) -> Self {
        Portal { status: StatusCode::CREATED, data }
    }
}

impl<T: Serialize> IntoResponse for Portal<T> {
    fn into_response(self) -> Response {
        (self.status, axum::Json(PortalEnvelope { success: true, data: self.data })).into_response()
    }
}

pub type PortalResult<T> = Result<Portal<T>, ApiError>;

crate::error_responses! {
    /// 401, 403 and 429 of a portal session route (session scheme).
    PortalErrors = PortalErrorEnvelope {
        401 => "`missing_auth`: no session, an unknown, expired or ended one (logout, member suspended or \
                revoked), or a key or signature sent instead (D16.17).",
        403 => "`insufficient_scope`: the member lacks the route's permission (D16.15); `account_inactive`: \
                the reseller is suspended or disabled and the route writes (D16.18).",
        429 => "`rate_limited`: the per-IP limit, or a passcode resent too soon (D8.2).",
    }

    /// 400 and 413 of a portal route that takes a JSON body.
    PortalBodyErrors = PortalErrorEnvelope {
        400 => "`malformed_json` or `validation_failed`: `details` names each field (unknown fields included).",
        413 => "`payload_too_large`: the body is over the configured limit (1 MiB by default).",
    }

    /// 400 of a portal route that reads query parameters.
    PortalQueryErrors = PortalErrorEnvelope {
        400 => "`validation_failed`: `details` names each bad or unknown query parameter.",
    }

    /// 404 of a portal route that names a resource.
    PortalNotFound = PortalErrorEnvelope {
        404 => "`not_found`: no such resource of this reseller (another reseller's looks the same).",
    }

    /// 409 of a portal route that moves a state.
    PortalConflict = PortalErrorEnvelope {
        409 => "`invalid_transition` (an illegal status move) or `conflict` (the owner member, a person of \
                another reseller, a request already decided, an effect that cannot apply).",
    }

    /// 401 of sign-in verification.
    PortalNoMember = PortalErrorEnvelope {
        401 => "`missing_auth`: the code was right but the e-mail no longer has an active or invited member.",
    }

    /// 429 of the sign-in routes.
    PortalThrottled = PortalErrorEnvelope {
        429 => "`rate_limited`: a passcode was sent to the address less than 60 s ago, or 5 in the last hour \
                (Retry-After), or the per-IP limit.",
    }
}

/// A member as the portal shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberOut {
    pub id: String,
    /// pending | active | suspended | revoked.
    pub status: String,
    #[schema(format = "uuid")]
    pub user_id: Option<String>,
    pub email: Option<String>,
    pub creator_id: Option<String>,
    /// owner | operator | finance | support | sub_creator.
    pub member_type: String,
    pub display_name: Option<String>,
    pub roles: Vec<String>,
    pub permissions: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&Member> for MemberOut {
    fn from(m: &Member) -> Self {
        MemberOut {
            id: m.id.clone(),
            status: m.status.as_str().to_string(),
            user_id: m.user_id.clone(),
            email: m.email.clone(),
            creator_id: m.creator_id.clone(),
            member_type: m.member_type.as_str().to_string(),
            display_name: m.display_name.clone(),
            roles: m.roles.clone(),
            permissions: m.permissions.clone(),
            created_at: rfc3339(m.created_at),
            updated_at: rfc3339(m.updated_at),
        }
    }
}

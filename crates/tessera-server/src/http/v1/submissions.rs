//! Submission routes: volunteer, vendor and partner applications.
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::schema::Object;
use utoipa::{IntoParams, ToSchema};

use super::{audit, campaign_filter, campaign_id};
use crate::domain::check::Check;
use crate::domain::submissions::{parse_new, SubmissionInput, SubmissionKind};
use crate::domain::time::rfc3339;
use crate::flows::modules::{self, Module};
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::ApiResult;
use crate::http::extract::{scope, ApiJson, ListFilters, ListQuery, Signed};
use crate::http::openapi::{string_enum, BodyErrors, ModuleSignedErrors, NotFound, QueryErrors};
use crate::state::AppState;
use crate::store::submissions::{Submission, SubmissionQuery};

/// Body of `POST /submissions`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({
    "type": "volunteer",
    "name": "Kofi Boateng",
    "email": "kofi@example.com",
    "phone": "+233241234567",
    "message": "I can help at the gate on Saturday.",
    "fields": {"shirtSize": "L"}
}))]
pub struct SubmissionIn {
    #[serde(rename = "type")]
    #[schema(schema_with = submission_kind_schema, required = true)]
    pub kind: Option<String>,
    /// A campaign of the account, when the application concerns one (404 otherwise).
    #[schema(value_type = uuid::Uuid, format = Uuid, required = false)]
    pub campaign_id: Option<String>,
    /// 1–255 characters (after trimming).
    #[schema(value_type = String, required = true, min_length = 1, max_length = 255)]
    pub name: Option<String>,
    #[schema(value_type = String, format = Email, required = true, max_length = 254)]
    pub email: Option<String>,
    /// E.164, or a Ghana number 0XXXXXXXXX (normalized to +233…).
    #[schema(value_type = String, example = "+233241234567", required = false)]
    pub phone: Option<String>,
    /// At most 5000 characters.
    #[schema(value_type = String, max_length = 5000, required = false)]
    pub message: Option<String>,
    /// Free-form answers; ≤ 16 KiB serialized, depth ≤ 8 (D1.4).
    #[schema(value_type = Object, required = false)]
    pub fields: Option<Value>,
}

fn submission_kind_schema() -> Object {
    string_enum(&SubmissionKind::NAMES, "volunteer, vendor or partner.")
}

impl SubmissionIn {
    /// The body's fields, for the domain's rules.
    fn input(&self) -> SubmissionInput<'_> {
        SubmissionInput {
            kind: self.kind.as_deref(),
            campaign_id: self.campaign_id.as_deref(),
            name: self.name.as_deref(),
            email: self.email.as_deref(),
            phone: self.phone.as_deref(),
            message: self.message.as_deref(),
            fields: self.fields.as_ref(),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubmissionOut {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub campaign_id: Option<String>,
    pub name: String,
    pub email: String,
    pub phone: Option<String>,
    pub message: Option<String>,
    #[schema(value_type = Object)]
    pub fields: Value,
    /// `received`.
    pub status: String,
    pub created_at: String,
}

impl From<Submission> for SubmissionOut {
    fn from(s: Submission) -> Self {
        SubmissionOut {
            id: s.id,
            kind: s.kind.as_str().into(),
            campaign_id: s.campaign_id,
            name: s.name,
            email: s.email,
            phone: s.phone,
            message: s.message,
            fields: s.fields,
            status: s.status.as_str().into(),
            created_at: rfc3339(s.created_at),
        }
    }
}

/// POST /api/white-label/v1/submissions — Signed — submissions:write
#[utoipa::path(
    post, path = "/api/white-label/v1/submissions", operation_id = "submissions_create", tag = "submissions",
    security(("signed" = [])),
    request_body = SubmissionIn,
    responses(
        (status = 201, description = "Received", body = Envelope<SubmissionOut>),
        ModuleSignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Signed<scope::SubmissionsWrite>,
    ApiJson(body): ApiJson<SubmissionIn>,
) -> ApiResult<SubmissionOut> {
    modules::require(&state, &caller.account_id, Module::Submissions).await?;
    let new = parse_new(&body.input())?;
    if let Some(c) = &new.campaign_id {
        campaign_id(c)?;
    }
    let created = state
        .store
        .create_submission(&caller.account_id, new, audit(&caller, "submission.created", "submission"))
        .await?;
    Ok(ApiResponse::created(created.into()))
}

/// The filters of `GET /submissions`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct SubmissionFilters {
    #[serde(rename = "type")]
    #[param(schema_with = submission_kind_schema)]
    pub kind: Option<String>,
    /// Only this campaign's submissions (404 when it is not a campaign of the account).
    #[param(value_type = Option<uuid::Uuid>, format = Uuid)]
    pub campaign_id: Option<String>,
}

impl ListFilters for SubmissionFilters {
    type Parsed = (Option<SubmissionKind>, Option<String>);
    fn parse(self, check: &mut Check) -> Self::Parsed {
        (self.kind.and_then(|k| check.take(SubmissionKind::parse("type", &k))), self.campaign_id)
    }
}

/// GET /api/white-label/v1/submissions — Signed — submissions:write
#[utoipa::path(
    get, path = "/api/white-label/v1/submissions", operation_id = "submissions_list", tag = "submissions",
    security(("signed" = [])),
    params(ListQuery<SubmissionFilters>),
    responses(
        (status = 200, description = "Submissions, newest first", body = ListEnvelope<SubmissionOut>),
        ModuleSignedErrors, QueryErrors, NotFound,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::SubmissionsWrite>,
    q: ListQuery<SubmissionFilters>,
) -> ApiResult<Vec<SubmissionOut>> {
    modules::require(&state, &caller.account_id, Module::Submissions).await?;
    let ((kind, campaign_id), (page, limit)) = (q.filters, q.page.bounds());
    campaign_filter(&state, &caller.account_id, campaign_id.as_deref()).await?;
    let query = SubmissionQuery { kind, campaign_id, page, limit };
    let (items, total) = state.store.list_submissions(&caller.account_id, &query).await?;
    Ok(ApiResponse::list(items.into_iter().map(Into::into).collect(), q.page.pagination(total)))
}

//! Submission routes: volunteer, vendor and partner applications.
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::schema::Object;
use utoipa::{IntoParams, ToSchema};

use super::{audit, campaign_filter, campaign_id, optional, pagination, reject_if_any, PageParams};
use crate::domain::check::{email, free_object, phone, text, Check};
use crate::domain::submissions::parse_kind;
use crate::domain::time::rfc3339;
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, ApiJson, ApiQuery, Signed};
use crate::http::openapi::{string_enum, BodyErrors, NotFound, QueryErrors, SignedErrors};
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
    string_enum(&crate::domain::submissions::KINDS, "volunteer, vendor or partner.")
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
            kind: s.kind,
            campaign_id: s.campaign_id,
            name: s.name,
            email: s.email,
            phone: s.phone,
            message: s.message,
            fields: s.fields,
            status: s.status,
            created_at: rfc3339(s.created_at),
        }
    }
}

fn required<T>(check: &mut Check, field: &str, v: Option<T>) -> Option<T> {
    if v.is_none() {
        check.fail(field, "is required");
    }
    v
}

/// POST /api/white-label/v1/submissions — Signed — submissions:write
#[utoipa::path(
    post, path = "/api/white-label/v1/submissions", operation_id = "submissions_create", tag = "submissions",
    security(("signed" = [])),
    request_body = SubmissionIn,
    responses(
        (status = 201, description = "Received", body = Envelope<SubmissionOut>),
        SignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Signed<scope::SubmissionsWrite>,
    ApiJson(body): ApiJson<SubmissionIn>,
) -> ApiResult<SubmissionOut> {
    let mut check = Check::new();
    let kind = required(&mut check, "type", body.kind.as_deref()).and_then(|k| check.take(parse_kind("type", k)));
    let name = required(&mut check, "name", body.name.as_deref()).and_then(|n| check.take(text("name", n, 1, 255)));
    let mail = required(&mut check, "email", body.email.as_deref()).and_then(|e| check.take(email("email", e)));
    let tel = body.phone.as_deref().and_then(|p| check.take(phone("phone", p)));
    let message = body.message.as_deref().and_then(|m| check.take(text("message", m, 0, 5000)));
    let fields = match body.fields {
        None => Some(Value::Object(Default::default())),
        Some(f) => check.take(free_object("fields", &f)).map(|_| f),
    };
    check.finish()?;
    let (Some(kind), Some(name), Some(mail), Some(fields)) = (kind, name, mail, fields) else {
        return Err(ApiError::internal("validated input missing"));
    };
    if let Some(c) = &body.campaign_id {
        campaign_id(c)?;
    }
    let s = Submission {
        id: String::new(),
        campaign_id: body.campaign_id,
        kind,
        name,
        email: mail,
        phone: tel,
        message,
        fields,
        status: "received".into(),
        created_at: 0,
    };
    let created = state
        .store
        .create_submission(&caller.account_id, s, audit(&caller, "submission.created", "submission"))
        .await?;
    Ok(ApiResponse::created(created.into()))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    #[serde(rename = "type")]
    #[param(schema_with = submission_kind_schema)]
    pub kind: Option<String>,
    /// Only this campaign's submissions (404 when it is not a campaign of the account).
    #[param(value_type = Option<uuid::Uuid>, format = Uuid)]
    pub campaign_id: Option<String>,
    /// Page number, from 1 (default 1).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1_000_000)]
    pub page: Option<String>,
    /// Items per page, 1–100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
}

/// GET /api/white-label/v1/submissions — Signed — submissions:write
#[utoipa::path(
    get, path = "/api/white-label/v1/submissions", operation_id = "submissions_list", tag = "submissions",
    security(("signed" = [])),
    params(ListParams),
    responses(
        (status = 200, description = "Submissions, newest first", body = ListEnvelope<SubmissionOut>),
        SignedErrors, QueryErrors, NotFound,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::SubmissionsWrite>,
    ApiQuery(q): ApiQuery<ListParams>,
) -> ApiResult<Vec<SubmissionOut>> {
    let mut details = Vec::new();
    let (page, limit) = PageParams { page: q.page, limit: q.limit }.parse(&mut details);
    let kind = optional(&mut details, q.kind.as_deref(), |k| parse_kind("type", k))?;
    reject_if_any(details)?;
    campaign_filter(&state, &caller.account_id, q.campaign_id.as_deref()).await?;
    let (items, total) = state
        .store
        .list_submissions(&caller.account_id, &SubmissionQuery { kind, campaign_id: q.campaign_id, page, limit })
        .await?;
    Ok(ApiResponse::list(items.into_iter().map(Into::into).collect(), pagination(page, limit, total)))
}

//! Participant (voting nominee) routes (spec "Participant", D3.7).
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::Object;
use utoipa::{IntoParams, ToSchema};

use super::{audit, campaign_filter, campaign_id, optional, pagination, reject_if_any, PageParams};
use crate::domain::check::{text, url, Check};
use crate::domain::participants::{parse_code, parse_status};
use crate::domain::time::rfc3339;
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, ApiJson, ApiQuery, Signed};
use crate::http::openapi::{string_enum, BodyErrors, Conflict, NotFound, QueryErrors, SignedErrors};
use crate::state::AppState;
use crate::store::participants::{NewParticipant, Participant, ParticipantQuery};

/// Body of `POST /participants`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({
    "campaignId": "0190f1d2-8c4b-7cc3-9a41-2f4b8e6d5a10",
    "name": "Ama Mensah",
    "code": "AMA01",
    "description": "Best new artiste nominee.",
    "imageUrl": "https://cdn.example.com/ama.png"
}))]
pub struct ParticipantIn {
    /// A voting campaign of the account.
    #[schema(value_type = uuid::Uuid, format = Uuid, required = true)]
    pub campaign_id: Option<String>,
    /// 1–255 characters (after trimming).
    #[schema(value_type = String, required = true, min_length = 1, max_length = 255)]
    pub name: Option<String>,
    /// Short code for USSD, unique per campaign (409); upper-cased; `001`, `002`, … when omitted.
    #[schema(value_type = String, min_length = 1, max_length = 16, pattern = "^[A-Za-z0-9]{1,16}$", required = false)]
    pub code: Option<String>,
    /// At most 5000 characters.
    #[schema(value_type = String, max_length = 5000, required = false)]
    pub description: Option<String>,
    /// An absolute https URL of at most 2048 characters.
    #[schema(value_type = String, format = "uri", max_length = 2048, pattern = "^https://", required = false)]
    pub image_url: Option<String>,
    #[schema(schema_with = participant_status_schema, required = false)]
    pub status: Option<String>,
}

fn participant_status_schema() -> Object {
    string_enum(&crate::domain::participants::STATUSES, "active (default), hidden or eliminated.")
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParticipantOut {
    pub id: String,
    pub campaign_id: String,
    pub name: String,
    pub code: String,
    pub description: Option<String>,
    pub image_url: Option<String>,
    pub status: String,
    /// Votes counted so far.
    pub votes: i64,
    pub created_at: String,
}

impl From<Participant> for ParticipantOut {
    fn from(p: Participant) -> Self {
        ParticipantOut {
            id: p.id,
            campaign_id: p.campaign_id,
            name: p.name,
            code: p.code,
            description: p.description,
            image_url: p.image_url,
            status: p.status,
            votes: p.votes,
            created_at: rfc3339(p.created_at),
        }
    }
}

/// POST /api/white-label/v1/participants — Signed — campaigns:write
#[utoipa::path(
    post, path = "/api/white-label/v1/participants", operation_id = "participants_create", tag = "participants",
    security(("signed" = [])),
    request_body = ParticipantIn,
    responses(
        (status = 201, description = "Created (409 when the campaign is not a voting one, is archived, or the code is taken)", body = Envelope<ParticipantOut>),
        SignedErrors, BodyErrors, NotFound, Conflict,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Signed<scope::CampaignsWrite>,
    ApiJson(body): ApiJson<ParticipantIn>,
) -> ApiResult<ParticipantOut> {
    let mut check = Check::new();
    if body.campaign_id.is_none() {
        check.fail("campaignId", "is required");
    }
    let name = match body.name.as_deref() {
        Some(n) => check.take(text("name", n, 1, 255)),
        None => {
            check.fail("name", "is required");
            None
        }
    };
    let code = body.code.as_deref().and_then(|c| check.take(parse_code("code", c)));
    let description = body.description.as_deref().and_then(|d| check.take(text("description", d, 0, 5000)));
    let image_url = body.image_url.as_deref().and_then(|u| check.take(url("imageUrl", u, true)));
    let status = check.take(parse_status("status", body.status.as_deref().unwrap_or("active")));
    check.finish()?;
    let (Some(campaign), Some(name), Some(status)) = (body.campaign_id, name, status) else {
        return Err(ApiError::internal("validated input missing"));
    };
    let p = state
        .store
        .create_participant(
            &caller.account_id,
            campaign_id(&campaign)?,
            NewParticipant { name, code, description, image_url, status },
            audit(&caller, "participant.created", "participant"),
        )
        .await?;
    Ok(ApiResponse::created(p.into()))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Only this campaign's participants (404 when it is not a campaign of the account).
    #[param(value_type = Option<uuid::Uuid>, format = Uuid)]
    pub campaign_id: Option<String>,
    /// Case-insensitive match on name and code.
    #[param(max_length = 255)]
    pub search: Option<String>,
    #[param(schema_with = participant_status_schema)]
    pub status: Option<String>,
    /// Page number, from 1 (default 1).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1_000_000)]
    pub page: Option<String>,
    /// Items per page, 1–100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
}

/// GET /api/white-label/v1/participants — Signed — campaigns:read
#[utoipa::path(
    get, path = "/api/white-label/v1/participants", operation_id = "participants_list", tag = "participants",
    security(("signed" = [])),
    params(ListParams),
    responses(
        (status = 200, description = "Participants with their votes, newest first", body = ListEnvelope<ParticipantOut>),
        SignedErrors, QueryErrors, NotFound,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::CampaignsRead>,
    ApiQuery(q): ApiQuery<ListParams>,
) -> ApiResult<Vec<ParticipantOut>> {
    let mut details = Vec::new();
    let (page, limit) = PageParams { page: q.page, limit: q.limit }.parse(&mut details);
    let status = optional(&mut details, q.status.as_deref(), |s| parse_status("status", s))?;
    reject_if_any(details)?;
    campaign_filter(&state, &caller.account_id, q.campaign_id.as_deref()).await?;
    let query = ParticipantQuery { campaign_id: q.campaign_id, search: q.search, status, page, limit };
    let (items, total) = state.store.list_participants(&caller.account_id, &query).await?;
    Ok(ApiResponse::list(items.into_iter().map(Into::into).collect(), pagination(page, limit, total)))
}

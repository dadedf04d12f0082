//! Participant (voting nominee) routes (spec "Participant", D3.7), and the public nominees list
//! (the domain-key form of `GET /participants`, D17.17).
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::Object;
use utoipa::{IntoParams, ToSchema};

use super::{audit, campaign_filter, campaign_id};
use crate::domain::campaigns::{CampaignStatus, CampaignType};
use crate::domain::check::Check;
use crate::domain::is_uuid;
use crate::domain::participants::{parse_new, parse_patch, ParticipantInput, ParticipantPatchInput, ParticipantStatus};
use crate::domain::time::rfc3339;
use crate::flows::modules::{self, Module};
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, AnyKey, ApiJson, Caller, ListFilters, ListQuery, Page, Scheme, Signed};
use crate::http::openapi::{
    string_enum, BodyErrors, Conflict, ModuleSignedErrors, NotFound, QueryErrors, SignedErrors, VotingAnyKeyErrors,
};
use crate::state::AppState;
use crate::store::participants::{Participant, ParticipantQuery, PublicParticipant, PublicParticipantQuery};

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
    string_enum(&ParticipantStatus::NAMES, "active (default), hidden or eliminated.")
}

impl ParticipantIn {
    /// The body's fields, for the domain's rules.
    fn input(&self) -> ParticipantInput<'_> {
        ParticipantInput {
            campaign_id: self.campaign_id.as_deref(),
            name: self.name.as_deref(),
            code: self.code.as_deref(),
            description: self.description.as_deref(),
            image_url: self.image_url.as_deref(),
            status: self.status.as_deref(),
        }
    }
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
            status: p.status.as_str().into(),
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
        ModuleSignedErrors, BodyErrors, NotFound, Conflict,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Signed<scope::CampaignsWrite>,
    ApiJson(body): ApiJson<ParticipantIn>,
) -> ApiResult<ParticipantOut> {
    modules::require(&state, &caller.account_id, Module::Voting).await?;
    let (campaign, participant) = parse_new(&body.input())?;
    let p = state
        .store
        .create_participant(
            &caller.account_id,
            campaign_id(&campaign)?,
            participant,
            audit(&caller, "participant.created", "participant"),
        )
        .await?;
    Ok(ApiResponse::created(p.into()))
}

/// Body of `PATCH /participants/{id}` (D17.15): each field present is changed, the rest kept.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({"status": "eliminated"}))]
pub struct ParticipantPatchIn {
    /// `hidden` and `eliminated` nominees take no votes (409 `participant_not_votable`); hidden
    /// ones leave every public list.
    #[schema(schema_with = participant_status_schema, required = false)]
    pub status: Option<String>,
    /// The new name: 1–255 characters once trimmed.
    #[schema(value_type = String, min_length = 1, max_length = 255, required = false)]
    pub name: Option<String>,
    /// The new description, up to 5000 characters.
    #[schema(value_type = String, max_length = 5000, required = false)]
    pub description: Option<String>,
    /// The new picture: an absolute https URL (≤ 2048 characters).
    #[schema(value_type = String, format = "uri", max_length = 2048, pattern = "^https://", required = false)]
    pub image_url: Option<String>,
}

/// PATCH /api/white-label/v1/participants/{id} — Signed — campaigns:write
#[utoipa::path(
    patch, path = "/api/white-label/v1/participants/{id}", operation_id = "participants_update", tag = "participants",
    security(("signed" = [])),
    params(("id" = String, Path, format = Uuid, description = "Participant id")),
    request_body = ParticipantPatchIn,
    responses(
        (status = 200, description = "Updated (D17.15)", body = Envelope<ParticipantOut>),
        SignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Signed<scope::CampaignsWrite>,
    Path(id): Path<String>,
    ApiJson(b): ApiJson<ParticipantPatchIn>,
) -> ApiResult<ParticipantOut> {
    if !is_uuid(&id) {
        return Err(ApiError::not_found("participant"));
    }
    let patch = parse_patch(&ParticipantPatchInput {
        name: b.name.as_deref(),
        description: b.description.as_deref(),
        image_url: b.image_url.as_deref(),
        status: b.status.as_deref(),
    })?;
    let audit = audit(&caller, "participant.updated", "participant");
    Ok(ApiResponse::ok(state.store.update_participant(&caller.account_id, &id, &patch, audit).await?.into()))
}

/// The filters of `GET /participants`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ParticipantFilters {
    /// Only this campaign's participants (404 when it is not a campaign of the account).
    #[param(value_type = Option<uuid::Uuid>, format = Uuid)]
    pub campaign_id: Option<String>,
    /// Case-insensitive match on name and code.
    #[param(max_length = 255)]
    pub search: Option<String>,
    #[param(schema_with = participant_status_schema)]
    pub status: Option<String>,
}

impl ListFilters for ParticipantFilters {
    type Parsed = (Option<String>, Option<String>, Option<ParticipantStatus>);
    fn parse(self, check: &mut Check) -> Self::Parsed {
        let status = self.status.and_then(|s| check.take(ParticipantStatus::parse("status", &s)));
        (self.campaign_id, self.search, status)
    }
}

/// A nominee as the public sees it (D17.17): `votes` only when its campaign's
/// `metadata.showVoteCounts` is true.
/// (`deny_unknown_fields` only for the document: `additionalProperties: false` makes a signed
/// item, which has `status` and `createdAt`, match exactly one side of `ParticipantItem`'s oneOf.)
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PublicParticipantOut {
    pub id: String,
    pub name: String,
    pub code: String,
    pub description: Option<String>,
    pub image_url: Option<String>,
    pub campaign_id: String,
    /// Present only when the campaign's `metadata.showVoteCounts` is true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub votes: Option<i64>,
}

impl From<PublicParticipant> for PublicParticipantOut {
    fn from(p: PublicParticipant) -> Self {
        PublicParticipantOut {
            votes: p.show_votes.then_some(p.votes),
            id: p.id,
            name: p.name,
            code: p.code,
            description: p.description,
            image_url: p.image_url,
            campaign_id: p.campaign_id,
        }
    }
}

/// An item of `GET /participants`: the full nominee (signed) or its public view (domain key).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum ParticipantItem {
    Signed(ParticipantOut),
    Public(PublicParticipantOut),
}

/// GET /api/white-label/v1/participants — Form 1: Domain-key; Form 2: Signed — campaigns:read
#[utoipa::path(
    get, path = "/api/white-label/v1/participants", operation_id = "participants_list", tag = "participants",
    security(("signed" = []), ("domainKey" = [])),
    params(ListQuery<ParticipantFilters>),
    responses(
        (status = 200, description = "Newest first. Signed: every participant with status and votes. Domain key \
            (D17.17): active participants of approved voting campaigns only (a campaign key: its campaign), \
            `{id, name, code, description, imageUrl, campaignId}` plus `votes` when the campaign's \
            `metadata.showVoteCounts` is true; a `campaignId` the key cannot see is 404", body = ListEnvelope<ParticipantItem>),
        VotingAnyKeyErrors, QueryErrors, NotFound,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: AnyKey<scope::CampaignsRead>,
    q: ListQuery<ParticipantFilters>,
) -> ApiResult<Vec<ParticipantItem>> {
    let ((campaign_id, search, status), (page, limit)) = (q.filters, q.page.bounds());
    if caller.scheme == Scheme::DomainKey {
        let only_campaign = caller.campaign_id.clone();
        let query = PublicParticipantQuery { campaign_id, only_campaign, search, status, page, limit };
        return public_list(&state, &caller, query, q.page).await;
    }
    campaign_filter(&state, &caller.account_id, campaign_id.as_deref()).await?;
    let query = ParticipantQuery { campaign_id, search, status, page, limit };
    let (items, total) = state.store.list_participants(&caller.account_id, &query).await?;
    let items = items.into_iter().map(|p| ParticipantItem::Signed(p.into())).collect();
    Ok(ApiResponse::list(items, q.page.pagination(total)))
}

/// The domain-key form (D17.17): behind the voting module (D17.14); a `campaignId` the key may
/// not see (another account's, not approved, not a voting one, not the campaign key's) is 404.
async fn public_list(
    state: &AppState,
    caller: &Caller,
    query: PublicParticipantQuery,
    page: Page,
) -> ApiResult<Vec<ParticipantItem>> {
    modules::require(state, &caller.account_id, Module::Voting).await?;
    if let Some(c) = query.campaign_id.as_deref() {
        let seen = state.store.campaign(&caller.account_id, campaign_id(c)?).await.ok();
        let visible = seen.is_some_and(|c| {
            c.status == CampaignStatus::Approved
                && c.campaign_type == CampaignType::Voting
                && caller.campaign_id.as_ref().is_none_or(|k| *k == c.id)
        });
        if !visible {
            return Err(ApiError::not_found("campaign"));
        }
    }
    let (items, total) = state.store.list_public_participants(&caller.account_id, &query).await?;
    let items = items.into_iter().map(|p| ParticipantItem::Public(p.into())).collect();
    Ok(ApiResponse::list(items, page.pagination(total)))
}

//! Campaign routes (spec "Campaign", D3.1–D3.4).
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::schema::Object;
use utoipa::{IntoParams, ToSchema};

use super::{audit, campaign_id, optional, pagination, reject_if_any, PageParams};
use crate::domain::campaigns::{parse_slug, slugify, CampaignStatus, CampaignType};
use crate::domain::check::{free_object, text, Check};
use crate::domain::time::{parse_rfc3339, rfc3339};
use crate::domain::{money, DomainError};
use std::sync::Arc;

use axum::response::Response;

use crate::http::envelope::{ok_rendered_page, ApiResponse, Envelope, ListEnvelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, AnyKey, ApiJson, ApiQuery, Scheme, Signed};
use crate::http::openapi::{string_enum, AnyKeyErrors, BodyErrors, Conflict, NotFound, QueryErrors, SignedErrors};
use crate::state::AppState;
use crate::store::campaigns::{Campaign, CampaignQuery};
use crate::store::page_cache::Rendered;

/// Body of `POST /campaigns` (spec "Campaign", D3.1–D3.2).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "title": "Accra Jazz Night",
    "description": "An evening of live jazz at the Alliance Française, Accra.",
    "campaign_type": "ticketing",
    "start_date": "2027-03-06T18:00:00Z",
    "end_date": "2027-03-07T01:00:00Z",
    "metadata": {"externalId": "evt-42"}
}))]
pub struct CampaignIn {
    /// 3–255 characters (after trimming).
    #[schema(value_type = String, required = true, min_length = 3, max_length = 255)]
    pub title: Option<String>,
    /// 10–5000 characters (after trimming).
    #[schema(value_type = String, required = true, min_length = 10, max_length = 5000)]
    pub description: Option<String>,
    #[schema(schema_with = campaign_type_schema, required = true)]
    pub campaign_type: Option<String>,
    /// The initial moderation state stands as given (D3.1).
    #[schema(schema_with = campaign_status_schema, required = false)]
    pub status: Option<String>,
    /// RFC 3339 with offset; before `end_date`.
    #[schema(value_type = String, format = DateTime, required = true)]
    pub start_date: Option<String>,
    /// RFC 3339 with offset; after `start_date`.
    #[schema(value_type = String, format = DateTime, required = true)]
    pub end_date: Option<String>,
    /// Free-form object: external identifiers and integration data; ≤ 16 KiB serialized,
    /// depth ≤ 8 (D1.4).
    #[schema(value_type = Object, required = false)]
    pub metadata: Option<Value>,
    /// 3–100 characters of a-z, 0-9 and '-'; unique per account (409); made from the title
    /// when omitted.
    #[schema(value_type = String, min_length = 3, max_length = 100, pattern = "^[a-z0-9-]{3,100}$", required = false)]
    pub slug: Option<String>,
    /// GHS per vote, at most 2 decimals; required (> 0) for voting campaigns, ignored otherwise.
    #[schema(value_type = f64, exclusive_minimum = 0, maximum = 10_000_000, multiple_of = 0.01, required = false)]
    pub vote_price: Option<Value>,
    pub verification_required: Option<bool>,
}

/// Body of `PATCH /campaigns/:campaignId`: the rules of [`CampaignIn`], every field optional
/// (D3.3). A `status` moves the campaign along D3.1 (409 `invalid_transition` otherwise).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"status": "pending_approval", "end_date": "2027-03-07T02:00:00Z"}))]
pub struct CampaignPatch {
    /// 3–255 characters (after trimming).
    #[schema(value_type = String, min_length = 3, max_length = 255, required = false)]
    pub title: Option<String>,
    /// 10–5000 characters (after trimming).
    #[schema(value_type = String, min_length = 10, max_length = 5000, required = false)]
    pub description: Option<String>,
    /// Cannot change once the campaign has ticket types or participants (409).
    #[schema(schema_with = campaign_type_schema, required = false)]
    pub campaign_type: Option<String>,
    #[schema(schema_with = campaign_status_schema, required = false)]
    pub status: Option<String>,
    /// RFC 3339 with offset; before `end_date`.
    #[schema(value_type = String, format = DateTime, required = false)]
    pub start_date: Option<String>,
    /// RFC 3339 with offset; after `start_date`.
    #[schema(value_type = String, format = DateTime, required = false)]
    pub end_date: Option<String>,
    /// Replaces the stored metadata; ≤ 16 KiB serialized, depth ≤ 8 (D1.4).
    #[schema(value_type = Object, required = false)]
    pub metadata: Option<Value>,
    /// 3–100 characters of a-z, 0-9 and '-'; unique per account (409).
    #[schema(value_type = String, min_length = 3, max_length = 100, pattern = "^[a-z0-9-]{3,100}$", required = false)]
    pub slug: Option<String>,
    /// GHS per vote, at most 2 decimals; > 0 on voting campaigns.
    #[schema(value_type = f64, exclusive_minimum = 0, maximum = 10_000_000, multiple_of = 0.01, required = false)]
    pub vote_price: Option<Value>,
    pub verification_required: Option<bool>,
}

impl From<CampaignPatch> for CampaignIn {
    fn from(p: CampaignPatch) -> Self {
        CampaignIn {
            title: p.title,
            description: p.description,
            campaign_type: p.campaign_type,
            status: p.status,
            start_date: p.start_date,
            end_date: p.end_date,
            metadata: p.metadata,
            slug: p.slug,
            vote_price: p.vote_price,
            verification_required: p.verification_required,
        }
    }
}

fn campaign_type_schema() -> Object {
    string_enum(&["voting", "donation", "ticketing"], "The kind of campaign.")
}

fn campaign_status_schema() -> Object {
    let all: Vec<&str> = CampaignStatus::ALL.iter().map(|s| s.as_str()).collect();
    string_enum(&all, "Moderation state (D3.1); draft by default.")
}

/// The whole campaign record.
#[derive(Serialize, ToSchema)]
pub struct CampaignOut {
    pub id: String,
    pub title: String,
    pub slug: String,
    pub description: String,
    pub campaign_type: String,
    pub status: String,
    pub start_date: String,
    pub end_date: String,
    /// GHS; voting campaigns only.
    #[schema(value_type = Option<f64>, required = false)]
    pub vote_price: Option<Value>,
    pub verification_required: bool,
    /// Only to signed callers.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, required = false)]
    pub metadata: Option<Value>,
    pub created_at: String,
    pub updated_at: String,
}

impl CampaignOut {
    pub fn from(c: Campaign, with_metadata: bool) -> Self {
        CampaignOut {
            id: c.id,
            title: c.title,
            slug: c.slug,
            description: c.description,
            campaign_type: c.campaign_type.as_str().into(),
            status: c.status.as_str().into(),
            start_date: rfc3339(c.start_date),
            end_date: rfc3339(c.end_date),
            vote_price: c.vote_price.map(money::to_ghs),
            verification_required: c.verification_required,
            metadata: with_metadata.then_some(c.metadata),
            created_at: rfc3339(c.created_at),
            updated_at: rfc3339(c.updated_at),
        }
    }
}

/// `data` of `POST /campaigns`.
#[derive(Serialize, ToSchema)]
pub struct CampaignCreatedOut {
    pub id: String,
    pub title: String,
    pub campaign_type: String,
    pub status: String,
    pub slug: String,
}

/// `data` of `PATCH /campaigns/:campaignId`.
#[derive(Serialize, ToSchema)]
pub struct CampaignUpdatedOut {
    pub id: String,
    pub status: String,
    pub updated_at: String,
}

fn date(check: &mut Check, field: &str, v: &Option<String>) -> Option<i64> {
    let s = v.as_deref()?;
    let parsed = parse_rfc3339(s);
    if parsed.is_none() {
        check.fail(field, "must be an RFC 3339 date-time with offset, e.g. 2027-01-31T18:00:00Z");
    }
    parsed
}

/// Applies `input` to `base` (a blank campaign on create) under every rule of the spec and D3.
fn build(input: &CampaignIn, base: Option<&Campaign>) -> Result<(Campaign, bool), DomainError> {
    let creating = base.is_none();
    let mut check = Check::new();
    let mut c = base.cloned().unwrap_or_else(|| Campaign {
        id: String::new(),
        title: String::new(),
        slug: String::new(),
        description: String::new(),
        campaign_type: CampaignType::Donation,
        status: CampaignStatus::Draft,
        start_date: 0,
        end_date: 0,
        vote_price: None,
        verification_required: false,
        metadata: Value::Object(Default::default()),
        ticket_type_count: 0,
        participant_count: 0,
        created_at: 0,
        updated_at: 0,
    });
    if creating {
        for (field, missing) in [
            ("title", input.title.is_none()),
            ("description", input.description.is_none()),
            ("campaign_type", input.campaign_type.is_none()),
            ("start_date", input.start_date.is_none()),
            ("end_date", input.end_date.is_none()),
        ] {
            if missing {
                check.fail(field, "is required");
            }
        }
    }
    if let Some(t) = input.title.as_deref().and_then(|t| check.take(text("title", t, 3, 255))) {
        c.title = t;
    }
    if let Some(d) = input.description.as_deref().and_then(|d| check.take(text("description", d, 10, 5000))) {
        c.description = d;
    }
    if let Some(t) = input.campaign_type.as_deref().and_then(|t| check.take(CampaignType::parse("campaign_type", t))) {
        if !creating && t != c.campaign_type && (c.ticket_type_count > 0 || c.participant_count > 0) {
            return Err(DomainError::Conflict(
                "the campaign type cannot change once it has ticket types or participants".into(),
            ));
        }
        c.campaign_type = t;
    }
    let before_dates = check.len();
    if let Some(s) = input.start_date.as_ref().and(date(&mut check, "start_date", &input.start_date)) {
        c.start_date = s;
    }
    if let Some(e) = input.end_date.as_ref().and(date(&mut check, "end_date", &input.end_date)) {
        c.end_date = e;
    }
    let dates_parsed = check.len() == before_dates;
    let dates_known = !creating || (input.start_date.is_some() && input.end_date.is_some());
    if (input.start_date.is_some() || input.end_date.is_some())
        && dates_parsed
        && dates_known
        && c.start_date >= c.end_date
    {
        check.fail("end_date", "must be after start_date");
    }
    if let Some(m) = &input.metadata {
        if check.take(free_object("metadata", m)).is_some() {
            c.metadata = m.clone();
        }
    }
    let slug_chosen = input.slug.is_some();
    if let Some(s) = input.slug.as_deref().and_then(|s| check.take(parse_slug("slug", s))) {
        c.slug = s;
    } else if creating && !slug_chosen {
        c.slug = slugify(&c.title);
    }
    if let Some(v) = input.verification_required {
        c.verification_required = v;
    }
    let before_price = check.len();
    if let Some(p) = &input.vote_price {
        if let Some(p) = check.take(money::from_ghs("vote_price", p)) {
            c.vote_price = Some(p);
        }
    }
    if c.campaign_type == CampaignType::Voting {
        if check.len() == before_price && c.vote_price.is_none_or(|p| p <= 0) {
            check.fail("vote_price", "voting campaigns need a vote_price greater than 0");
        }
    } else {
        c.vote_price = None;
    }
    let status = input.status.as_deref().and_then(|s| check.take(CampaignStatus::parse("status", s)));
    // Every 400 first; the state machine (409) only judges an otherwise valid request.
    check.finish()?;
    if let Some(s) = status {
        c.status = if creating { s } else { c.status.move_to(s)? };
    }
    Ok((c, slug_chosen))
}

/// POST /api/white-label/v1/campaigns — Signed — campaigns:write
#[utoipa::path(
    post, path = "/api/white-label/v1/campaigns", operation_id = "campaigns_create", tag = "campaigns",
    security(("signed" = [])),
    request_body = CampaignIn,
    responses(
        (status = 201, description = "Created", body = Envelope<CampaignCreatedOut>),
        SignedErrors, BodyErrors, Conflict,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Signed<scope::CampaignsWrite>,
    ApiJson(input): ApiJson<CampaignIn>,
) -> ApiResult<CampaignCreatedOut> {
    let (campaign, slug_chosen) = build(&input, None)?;
    let c = state
        .store
        .create_campaign(&caller.account_id, campaign, slug_chosen, audit(&caller, "campaign.created", "campaign"))
        .await?;
    Ok(ApiResponse::created(CampaignCreatedOut {
        id: c.id,
        title: c.title,
        campaign_type: c.campaign_type.as_str().into(),
        status: c.status.as_str().into(),
        slug: c.slug,
    }))
}

/// PATCH /api/white-label/v1/campaigns/{campaignId} — Signed — campaigns:write
#[utoipa::path(
    patch, path = "/api/white-label/v1/campaigns/{campaignId}", operation_id = "campaigns_update", tag = "campaigns",
    security(("signed" = [])),
    params(("campaignId" = String, Path, format = Uuid, description = "Campaign id")),
    request_body = CampaignPatch,
    responses(
        (status = 200, description = "Updated", body = Envelope<CampaignUpdatedOut>),
        SignedErrors, BodyErrors, NotFound, Conflict,
    )
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Signed<scope::CampaignsWrite>,
    Path(id): Path<String>,
    ApiJson(patch): ApiJson<CampaignPatch>,
) -> ApiResult<CampaignUpdatedOut> {
    let id = campaign_id(&id)?;
    let input = CampaignIn::from(patch);
    let c = state
        .store
        .update_campaign(
            &caller.account_id,
            id,
            |current| build(&input, Some(current)).map(|(c, _)| c),
            audit(&caller, "campaign.updated", "campaign"),
        )
        .await?;
    Ok(ApiResponse::ok(CampaignUpdatedOut {
        id: c.id,
        status: c.status.as_str().into(),
        updated_at: rfc3339(c.updated_at),
    }))
}

/// GET /api/white-label/v1/campaigns/{campaignId} — Signed — campaigns:read
#[utoipa::path(
    get, path = "/api/white-label/v1/campaigns/{campaignId}", operation_id = "campaigns_show", tag = "campaigns",
    security(("signed" = [])),
    params(("campaignId" = String, Path, format = Uuid, description = "Campaign id")),
    responses((status = 200, description = "The campaign, metadata included", body = Envelope<CampaignOut>), SignedErrors, NotFound)
)]
pub async fn show(
    State(state): State<AppState>,
    caller: Signed<scope::CampaignsRead>,
    Path(id): Path<String>,
) -> ApiResult<CampaignOut> {
    let c = state.store.campaign(&caller.account_id, campaign_id(&id)?).await?;
    Ok(ApiResponse::ok(CampaignOut::from(c, true)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Case-insensitive match on title and slug.
    #[param(max_length = 255)]
    pub search: Option<String>,
    /// One campaign status.
    #[param(schema_with = campaign_status_schema)]
    pub status: Option<String>,
    /// Page number, from 1 (default 1).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1_000_000)]
    pub page: Option<String>,
    /// Items per page, 1–100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
}

/// GET /api/white-label/v1/campaigns — Form 1: Domain-key; Form 2: Signed — campaigns:read
#[utoipa::path(
    get, path = "/api/white-label/v1/campaigns", operation_id = "campaigns_list", tag = "campaigns",
    security(("signed" = []), ("domainKey" = [])),
    params(ListParams),
    responses(
        (status = 200, description = "Newest first. Signed: every campaign of the account; public key: approved ones; campaign key: its campaign if approved", body = ListEnvelope<CampaignOut>),
        AnyKeyErrors, QueryErrors,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: AnyKey<scope::CampaignsRead>,
    ApiQuery(q): ApiQuery<ListParams>,
) -> Result<Response, ApiError> {
    let mut details = Vec::new();
    let (page, limit) = PageParams { page: q.page.clone(), limit: q.limit.clone() }.parse(&mut details);
    let status = optional(&mut details, q.status.as_deref(), |s| CampaignStatus::parse("status", s))?;
    if q.search.as_ref().is_some_and(|s| s.chars().count() > 255) {
        details.push(crate::http::error::Detail {
            field: "search".into(),
            message: "must be at most 255 characters".into(),
        });
    }
    reject_if_any(details)?;
    let signed = caller.scheme == Scheme::Signed;
    let query = CampaignQuery {
        search: q.search,
        status,
        only_id: if signed { None } else { caller.campaign_id.clone() },
        approved_only: !signed,
        page,
        limit,
    };
    // The same page for the same caller view, while the database is unchanged, is served as
    // rendered (store::page_cache); the key holds everything the answer depends on.
    let cache = state.store.page_cache();
    let key = format!(
        "campaigns\u{1f}{}\u{1f}{signed}\u{1f}{:?}\u{1f}{:?}\u{1f}{:?}\u{1f}{page}\u{1f}{limit}",
        caller.account_id,
        query.only_id,
        query.status.map(CampaignStatus::as_str),
        query.search
    );
    if let Some(hit) = cache.and_then(|(version, pages)| pages.get(&key, version)) {
        return Ok(ok_rendered_page(&hit.data_json, Some(&pagination(hit.page, hit.limit, hit.total))));
    }
    let (items, total) = state.store.list_campaigns(&caller.account_id, &query).await?;
    let items: Vec<CampaignOut> = items.into_iter().map(|c| CampaignOut::from(c, signed)).collect();
    let page = Rendered { data_json: serde_json::to_vec(&items).map_err(ApiError::internal)?, page, limit, total };
    let answer = ok_rendered_page(&page.data_json, Some(&pagination(page.page, limit, total)));
    if let Some((version, pages)) = cache {
        pages.put(key, version, Arc::new(page));
    }
    Ok(answer)
}

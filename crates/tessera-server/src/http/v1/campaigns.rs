//! Campaign routes (spec "Campaign", D3.1–D3.4).
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::schema::Object;
use utoipa::{IntoParams, ToSchema};

use std::sync::Arc;

use axum::response::Response;

use super::{audit, campaign_id};
use crate::domain::campaigns::{parse_new, parse_update, CampaignInput, CampaignStatus, CampaignType};
use crate::domain::check::Check;
pub use crate::views::campaigns::CampaignOut;

use crate::domain::refunds::REASON_MAX;
use crate::domain::time::rfc3339;
use crate::flows::{campaigns, refunds};
use crate::http::envelope::{ok_rendered_page, ApiResponse, Envelope, ListEnvelope, Pagination};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, AnyKey, ApiJson, ListFilters, ListQuery, Scheme, Signed};
use crate::http::openapi::{string_enum, AnyKeyErrors, BodyErrors, Conflict, NotFound, QueryErrors, SignedErrors};
use crate::state::AppState;
use crate::store::campaigns::CampaignQuery;
use crate::store::page_cache::Rendered;
use crate::views::refunds::RefundCountsOut;

/// The fields of a campaign body, shared by `CampaignIn` and `CampaignPatch`: `$req` marks
/// the fields a create requires, and the docs that differ between the two are given per body.
macro_rules! campaign_body {
    (
        $(#[$meta:meta])* pub struct $name:ident (required: $req:tt) {
            $(#[$type_doc:meta])* campaign_type;
            $(#[$status_doc:meta])* status;
            $(#[$metadata_doc:meta])* metadata;
            $(#[$slug_doc:meta])* slug;
            $(#[$price_doc:meta])* vote_price;
        }
    ) => {
        #[derive(Debug, Default, Deserialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        $(#[$meta])*
        pub struct $name {
            /// 3–255 characters (after trimming).
            #[schema(value_type = String, required = $req, min_length = 3, max_length = 255)]
            pub title: Option<String>,
            /// 10–5000 characters (after trimming).
            #[schema(value_type = String, required = $req, min_length = 10, max_length = 5000)]
            pub description: Option<String>,
            $(#[$type_doc])*
            #[schema(schema_with = campaign_type_schema, required = $req)]
            pub campaign_type: Option<String>,
            $(#[$status_doc])*
            #[schema(schema_with = campaign_status_schema, required = false)]
            pub status: Option<String>,
            /// RFC 3339 with offset; before `end_date`.
            #[schema(value_type = String, format = DateTime, required = $req)]
            pub start_date: Option<String>,
            /// RFC 3339 with offset; after `start_date`.
            #[schema(value_type = String, format = DateTime, required = $req)]
            pub end_date: Option<String>,
            $(#[$metadata_doc])*
            #[schema(value_type = Object, required = false)]
            pub metadata: Option<Value>,
            $(#[$slug_doc])*
            #[schema(value_type = String, min_length = 3, max_length = 100, pattern = "^[a-z0-9-]{3,100}$", required = false)]
            pub slug: Option<String>,
            $(#[$price_doc])*
            #[schema(value_type = f64, exclusive_minimum = 0, maximum = 10_000_000, multiple_of = 0.01, required = false)]
            pub vote_price: Option<Value>,
            pub verification_required: Option<bool>,
        }

        impl $name {
            /// The body's fields, for the domain's rules.
            fn input(&self) -> CampaignInput<'_> {
                CampaignInput {
                    title: self.title.as_deref(),
                    description: self.description.as_deref(),
                    campaign_type: self.campaign_type.as_deref(),
                    status: self.status.as_deref(),
                    start_date: self.start_date.as_deref(),
                    end_date: self.end_date.as_deref(),
                    metadata: self.metadata.as_ref(),
                    slug: self.slug.as_deref(),
                    vote_price: self.vote_price.as_ref(),
                    verification_required: self.verification_required,
                }
            }
        }
    };
}

campaign_body! {
    /// Body of `POST /campaigns` (spec "Campaign", D3.1–D3.2).
    #[schema(example = json!({
        "title": "Accra Jazz Night",
        "description": "An evening of live jazz at the Alliance Française, Accra.",
        "campaign_type": "ticketing",
        "start_date": "2027-03-06T18:00:00Z",
        "end_date": "2027-03-07T01:00:00Z",
        "metadata": {"externalId": "evt-42"}
    }))]
    pub struct CampaignIn (required: true) {
        campaign_type;
        /// The initial moderation state stands as given (D3.1).
        status;
        /// Free-form object: external identifiers and integration data; ≤ 16 KiB serialized,
        /// depth ≤ 8 (D1.4).
        metadata;
        /// 3–100 characters of a-z, 0-9 and '-'; unique per account (409); made from the title
        /// when omitted.
        slug;
        /// GHS per vote, at most 2 decimals; required (> 0) for voting campaigns, ignored otherwise.
        vote_price;
    }
}

campaign_body! {
    /// Body of `PATCH /campaigns/:campaignId`: the rules of [`CampaignIn`], every field optional
    /// (D3.3). A `status` moves the campaign along D3.1 (409 `invalid_transition` otherwise).
    #[schema(example = json!({"status": "pending_approval", "end_date": "2027-03-07T02:00:00Z"}))]
    pub struct CampaignPatch (required: false) {
        /// Cannot change once the campaign has ticket types or participants (409).
        campaign_type;
        status;
        /// Replaces the stored metadata; ≤ 16 KiB serialized, depth ≤ 8 (D1.4).
        metadata;
        /// 3–100 characters of a-z, 0-9 and '-'; unique per account (409).
        slug;
        /// GHS per vote, at most 2 decimals; > 0 on voting campaigns.
        vote_price;
    }
}

fn campaign_type_schema() -> Object {
    string_enum(&CampaignType::NAMES, "The kind of campaign.")
}

fn campaign_status_schema() -> Object {
    string_enum(&CampaignStatus::NAMES, "Moderation state (D3.1); draft by default.")
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
    let (campaign, slug_chosen) = parse_new(&input.input())?;
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
    let input = patch.input();
    let c = campaigns::update(
        &state.store,
        &caller.account_id,
        campaign_id(&id)?,
        |current| parse_update(&input, current),
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
    let refunds = state.store.campaign_refunds(&c.id).await?;
    Ok(ApiResponse::ok(CampaignOut { refunds: refunds.map(Into::into), ..CampaignOut::from(c, true) }))
}

/// Body of `POST /campaigns/:campaignId/cancel` (D17.37).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CampaignCancelIn {
    /// Why (at most 500 characters): kept on the campaign and given as each refund's reason.
    pub reason: Option<String>,
    /// `true`: file a full refund of every successful payment of the campaign. Default `false`.
    pub refund: Option<bool>,
}

/// `data` of `POST /campaigns/:campaignId/cancel`.
#[derive(Serialize, ToSchema)]
pub struct CampaignCancelledOut {
    pub id: String,
    /// `archived`.
    pub status: String,
    /// The campaign's refunds so far (filed in the background; follow them on `GET /campaigns/:campaignId`).
    pub refunds: RefundCountsOut,
}

/// POST /api/white-label/v1/campaigns/{campaignId}/cancel — Signed — campaigns:write
#[utoipa::path(
    post, path = "/api/white-label/v1/campaigns/{campaignId}/cancel", operation_id = "campaigns_cancel", tag = "campaigns",
    security(("signed" = [])),
    params(("campaignId" = String, Path, format = Uuid, description = "Campaign id")),
    request_body(content = CampaignCancelIn, example = json!({"reason": "The venue is closed", "refund": true})),
    responses(
        (status = 202, description = "Archived and its sales stopped; with `refund: true` every successful payment's \
            refund is filed in the background, once, whatever the retries. Cancelling again answers the same.",
            body = Envelope<CampaignCancelledOut>),
        SignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn cancel(
    State(state): State<AppState>,
    caller: Signed<scope::CampaignsWrite>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<CampaignCancelIn>,
) -> ApiResult<CampaignCancelledOut> {
    let id = campaign_id(&id)?;
    let reason = match body.reason.as_deref() {
        Some(r) => Some(crate::domain::check::text("reason", r, 0, REASON_MAX)?).filter(|r| !r.is_empty()),
        None => None,
    };
    let entry = audit(&caller, "campaign.cancelled", "campaign");
    let refund = body.refund.unwrap_or(false);
    let done = refunds::cancel(&state, &caller.account_id, id, reason.as_deref(), refund, entry).await?;
    Ok(ApiResponse::accepted(CampaignCancelledOut {
        id: done.campaign.id,
        status: done.campaign.status.as_str().into(),
        refunds: done.refunds.into(),
    }))
}

/// The filters of `GET /campaigns`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CampaignFilters {
    /// Case-insensitive match on title and slug.
    #[param(max_length = 255)]
    pub search: Option<String>,
    /// One campaign status.
    #[param(schema_with = campaign_status_schema)]
    pub status: Option<String>,
}

impl ListFilters for CampaignFilters {
    type Parsed = (Option<String>, Option<CampaignStatus>);
    fn parse(self, check: &mut Check) -> Self::Parsed {
        let status = self.status.and_then(|s| check.take(CampaignStatus::parse("status", &s)));
        if self.search.as_ref().is_some_and(|s| s.chars().count() > 255) {
            check.fail("search", "must be at most 255 characters");
        }
        (self.search, status)
    }
}

/// GET /api/white-label/v1/campaigns — Form 1: Domain-key; Form 2: Signed — campaigns:read
#[utoipa::path(
    get, path = "/api/white-label/v1/campaigns", operation_id = "campaigns_list", tag = "campaigns",
    security(("signed" = []), ("domainKey" = [])),
    params(ListQuery<CampaignFilters>),
    responses(
        (status = 200, description = "Newest first. Signed: every campaign of the account; public key: approved ones; campaign key: its campaign if approved", body = ListEnvelope<CampaignOut>),
        AnyKeyErrors, QueryErrors,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: AnyKey<scope::CampaignsRead>,
    q: ListQuery<CampaignFilters>,
) -> Result<Response, ApiError> {
    let ((search, status), (page, limit)) = (q.filters, q.page.bounds());
    let signed = caller.scheme == Scheme::Signed;
    let query = CampaignQuery {
        search,
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
        return Ok(ok_rendered_page(&hit.data_json, Some(&Pagination::of(hit.page, hit.limit, hit.total))));
    }
    let (items, total) = state.store.list_campaigns(&caller.account_id, &query).await?;
    let items: Vec<CampaignOut> = items.into_iter().map(|c| CampaignOut::from(c, signed)).collect();
    let page = Rendered { data_json: serde_json::to_vec(&items).map_err(ApiError::internal)?, page, limit, total };
    let answer = ok_rendered_page(&page.data_json, Some(&q.page.pagination(total)));
    if let Some((version, pages)) = cache {
        pages.put(key, version, Arc::new(page));
    }
    Ok(answer)
}

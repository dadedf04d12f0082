//! Ticket type routes (spec "Ticket type", D3.5–D3.6).
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::{audit, campaign_id, pagination, reject_if_any, PageParams};
use crate::domain::check::Check;
use crate::domain::money::to_ghs;
use crate::domain::ticket_types::{parse, remaining, NewTicketType, TicketTypeInput};
use crate::domain::time::rfc3339;
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::http::extract::{scope, ApiJson, ApiQuery, DomainKey, Signed};
use crate::state::AppState;
use crate::store::ticket_types::{TicketType, TicketTypeQuery};

/// Body of `POST /ticket-types`; also an item of a bootstrap (there without `campaignId`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketTypeIn {
    /// The ticketing campaign (of the account) the type belongs to.
    #[serde(rename = "campaignId")]
    pub campaign_id: Option<String>,
    /// 1–255 characters.
    pub name: Option<String>,
    pub description: Option<String>,
    /// paid (default), free, early_bird, vip, student, group.
    pub ticket_type: Option<String>,
    /// GHS ≥ 0, at most 2 decimals.
    #[schema(value_type = f64)]
    pub price: Option<Value>,
    /// 0–1 000 000.
    #[schema(value_type = i64)]
    pub quantity_available: Option<Value>,
    /// active (default), inactive, archived.
    pub status: Option<String>,
    /// Must be true exactly when price is 0.
    pub is_free: Option<bool>,
    /// 1–100 (default 10).
    #[schema(value_type = Option<i64>)]
    pub max_per_person: Option<Value>,
    /// Items {key, label, type: text|email|phone|number|select|date, required, options?}.
    #[schema(value_type = Option<Vec<Object>>)]
    pub required_attendee_fields: Option<Value>,
}

/// Body of `POST /ticket-types/bootstrap`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BootstrapIn {
    pub campaign_id: Option<String>,
    /// 1–50 ticket types, created together or not at all.
    pub ticket_types: Option<Vec<TicketTypeIn>>,
}

#[derive(Serialize, ToSchema)]
pub struct TicketTypeOut {
    pub id: String,
    #[serde(rename = "campaignId")]
    pub campaign_id: String,
    pub name: String,
    pub description: Option<String>,
    pub ticket_type: String,
    /// GHS.
    #[schema(value_type = f64)]
    pub price: Value,
    pub is_free: bool,
    pub quantity_available: i64,
    /// quantity_available less sold and held.
    pub remaining: i64,
    pub sold_out: bool,
    pub max_per_person: i64,
    pub status: String,
    #[schema(value_type = Vec<Object>)]
    pub required_attendee_fields: Value,
    pub created_at: String,
}

impl From<TicketType> for TicketTypeOut {
    fn from(t: TicketType) -> Self {
        let left = remaining(t.quantity_available, t.quantity_sold, t.quantity_held);
        TicketTypeOut {
            price: to_ghs(t.price),
            is_free: t.price == 0,
            remaining: left,
            sold_out: left == 0,
            id: t.id,
            campaign_id: t.campaign_id,
            name: t.name,
            description: t.description,
            ticket_type: t.kind,
            quantity_available: t.quantity_available,
            max_per_person: t.max_per_person,
            status: t.status,
            required_attendee_fields: t.required_attendee_fields,
            created_at: rfc3339(t.created_at),
        }
    }
}

fn input(f: &TicketTypeIn) -> TicketTypeInput<'_> {
    TicketTypeInput {
        name: f.name.as_deref(),
        description: f.description.as_deref(),
        ticket_type: f.ticket_type.as_deref(),
        price: f.price.as_ref(),
        quantity_available: f.quantity_available.as_ref(),
        status: f.status.as_deref(),
        is_free: f.is_free,
        max_per_person: f.max_per_person.as_ref(),
        required_attendee_fields: f.required_attendee_fields.as_ref(),
    }
}

fn required_campaign(check: &mut Check, id: &Option<String>) -> Option<String> {
    match id {
        None => {
            check.fail("campaignId", "is required");
            None
        }
        Some(id) => Some(id.clone()),
    }
}

/// POST /api/white-label/v1/ticket-types — Signed — tickets:write
#[utoipa::path(
    post, path = "/api/white-label/v1/ticket-types", tag = "ticket types", security(("signed" = [])),
    request_body = TicketTypeIn,
    responses(
        (status = 201, body = Envelope<TicketTypeOut>), (status = 400, body = ErrorEnvelope),
        (status = 404, description = "Campaign not found in this account", body = ErrorEnvelope),
        (status = 409, description = "Campaign is not a ticketing campaign, or archived", body = ErrorEnvelope),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Signed<scope::TicketsWrite>,
    ApiJson(body): ApiJson<TicketTypeIn>,
) -> ApiResult<TicketTypeOut> {
    let mut check = Check::new();
    let campaign = required_campaign(&mut check, &body.campaign_id);
    let parsed = parse("", &input(&body), &mut check);
    check.finish()?;
    let (Some(campaign), Some(t)) = (campaign, parsed) else {
        return Err(ApiError::internal("validated input missing"));
    };
    let created = state
        .store
        .create_ticket_type(
            &caller.account_id,
            campaign_id(&campaign)?,
            &t,
            audit(&caller, "ticket_type.created", "ticket_type"),
        )
        .await?;
    Ok(ApiResponse::created(created.into()))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapOut {
    pub campaign_id: String,
    pub ticket_types: Vec<TicketTypeOut>,
}

/// POST /api/white-label/v1/ticket-types/bootstrap — Signed — tickets:write
#[utoipa::path(
    post, path = "/api/white-label/v1/ticket-types/bootstrap", tag = "ticket types", security(("signed" = [])),
    request_body = BootstrapIn,
    responses(
        (status = 201, body = Envelope<BootstrapOut>), (status = 400, body = ErrorEnvelope), (status = 404, body = ErrorEnvelope),
        (status = 409, description = "The campaign already has ticket types, or is not a ticketing campaign", body = ErrorEnvelope),
    )
)]
pub async fn bootstrap(
    State(state): State<AppState>,
    caller: Signed<scope::TicketsWrite>,
    ApiJson(body): ApiJson<BootstrapIn>,
) -> ApiResult<BootstrapOut> {
    let mut check = Check::new();
    let campaign = required_campaign(&mut check, &body.campaign_id);
    let mut types: Vec<NewTicketType> = Vec::new();
    match &body.ticket_types {
        None => check.fail("ticketTypes", "is required"),
        Some(list) if list.is_empty() || list.len() > 50 => check.fail("ticketTypes", "must have 1 to 50 items"),
        Some(list) => {
            for (i, f) in list.iter().enumerate() {
                if f.campaign_id.is_some() {
                    check.fail(format!("ticketTypes[{i}].campaignId"), "set campaignId once, at the top level");
                }
                if let Some(t) = parse(&format!("ticketTypes[{i}]."), &input(f), &mut check) {
                    types.push(t);
                }
            }
        }
    }
    check.finish()?;
    let Some(campaign) = campaign else { return Err(ApiError::internal("validated input missing")) };
    let created = state
        .store
        .bootstrap_ticket_types(
            &caller.account_id,
            campaign_id(&campaign)?,
            &types,
            audit(&caller, "ticket_types.bootstrapped", "campaign"),
        )
        .await?;
    Ok(ApiResponse::created(BootstrapOut {
        campaign_id: campaign,
        ticket_types: created.into_iter().map(Into::into).collect(),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ListParams {
    /// Only this campaign's ticket types.
    pub campaign_id: Option<String>,
    pub page: Option<String>,
    pub limit: Option<String>,
}

/// GET /api/white-label/v1/ticket-types — Domain-key — tickets:read
#[utoipa::path(
    get, path = "/api/white-label/v1/ticket-types", tag = "ticket types", security(("domainKey" = [])),
    params(ListParams),
    responses((status = 200, description = "Active ticket types of approved campaigns the key may see, newest first", body = ListEnvelope<TicketTypeOut>), (status = 404, body = ErrorEnvelope))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: DomainKey<scope::TicketsRead>,
    ApiQuery(q): ApiQuery<ListParams>,
) -> ApiResult<Vec<TicketTypeOut>> {
    let mut details = Vec::new();
    let (page, limit) = PageParams { page: q.page, limit: q.limit }.parse(&mut details);
    reject_if_any(details)?;
    let campaign = match (&q.campaign_id, &caller.campaign_id) {
        (Some(asked), Some(own)) if asked != own => return Err(ApiError::not_found("campaign")),
        (Some(asked), _) => {
            let c = state.store.campaign(&caller.account_id, campaign_id(asked)?).await?;
            if c.status != crate::domain::campaigns::CampaignStatus::Approved {
                return Err(ApiError::not_found("campaign"));
            }
            Some(c.id)
        }
        (None, own) => own.clone(),
    };
    let (items, total) = state
        .store
        .list_public_ticket_types(&caller.account_id, &TicketTypeQuery { campaign_id: campaign, page, limit })
        .await?;
    Ok(ApiResponse::list(items.into_iter().map(Into::into).collect(), pagination(page, limit, total)))
}

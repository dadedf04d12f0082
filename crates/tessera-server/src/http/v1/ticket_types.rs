//! Ticket type routes (spec "Ticket type", D3.5–D3.6).
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::schema::Object;
use utoipa::{IntoParams, ToSchema};

use super::{audit, campaign_id};
use crate::domain::campaigns::CampaignStatus;
use crate::domain::check::Check;
use crate::domain::is_uuid;
use crate::domain::money::to_ghs;
use crate::domain::ticket_types::{
    parse_bootstrap, parse_new, parse_patch, remaining, TicketTypeInput, TicketTypePatchInput, TicketTypeStatus,
    FIELD_TYPES, KINDS,
};
use crate::domain::time::rfc3339;
use crate::flows::modules::{self, Module};
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, ApiJson, DomainKey, ListFilters, ListQuery, Signed};
use crate::http::openapi::{
    string_enum, BodyErrors, Conflict, ModuleDomainKeyErrors, ModuleSignedErrors, NotFound, QuantityConflict,
    QueryErrors,
};
use crate::state::AppState;
use crate::store::ticket_types::{TicketType, TicketTypeQuery};

/// The fields of one ticket type (spec "Ticket type", D3.5), shared by `TicketTypeIn` and the
/// items of a bootstrap, each with its schema rules.
macro_rules! ticket_type_body {
    ($(#[$meta:meta])* pub struct $name:ident { $($head:tt)* }) => {
        #[derive(Debug, Deserialize, ToSchema)]
        $(#[$meta])*
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($head)*
            /// 1–255 characters (after trimming).
            #[schema(value_type = String, required = true, min_length = 1, max_length = 255)]
            pub name: Option<String>,
            /// At most 5000 characters.
            #[schema(value_type = String, max_length = 5000, required = false)]
            pub description: Option<String>,
            #[schema(schema_with = ticket_kind_schema, required = false)]
            pub ticket_type: Option<String>,
            /// GHS ≥ 0 with at most 2 decimals; 0 exactly when `is_free` is true.
            #[schema(value_type = f64, required = true, minimum = 0, maximum = 10_000_000, multiple_of = 0.01)]
            pub price: Option<Value>,
            /// Sellable inventory.
            #[schema(value_type = i64, required = true, minimum = 0, maximum = 1_000_000)]
            pub quantity_available: Option<Value>,
            #[schema(schema_with = ticket_status_schema, required = false)]
            pub status: Option<String>,
            /// Must be true exactly when price is 0.
            pub is_free: Option<bool>,
            /// Default 10.
            #[schema(value_type = i64, minimum = 1, maximum = 100, required = false)]
            pub max_per_person: Option<Value>,
            /// At most 50 items `{key, label, type, required, options?}`: `key` 1–64 of
            /// `[a-z0-9_]` starting with a letter, unique; `label` 1–255 characters; `type` one
            /// of text, email, phone, number, select, date; `options` (1–100 strings) only and
            /// always on select fields.
            #[schema(value_type = Vec<AttendeeFieldIn>, max_items = 50, required = false)]
            pub required_attendee_fields: Option<Value>,
        }

        impl $name {
            /// The body's fields, for the domain's rules.
            fn input(&self) -> TicketTypeInput<'_> {
                TicketTypeInput {
                    name: self.name.as_deref(),
                    description: self.description.as_deref(),
                    ticket_type: self.ticket_type.as_deref(),
                    price: self.price.as_ref(),
                    quantity_available: self.quantity_available.as_ref(),
                    status: self.status.as_deref(),
                    is_free: self.is_free,
                    max_per_person: self.max_per_person.as_ref(),
                    required_attendee_fields: self.required_attendee_fields.as_ref(),
                }
            }
        }
    };
}

ticket_type_body! {
    /// Body of `POST /ticket-types`.
    #[schema(example = json!({
        "campaignId": "0190f1d2-8c4b-7cc3-9a41-2f4b8e6d5a10",
        "name": "VIP",
        "ticket_type": "vip",
        "price": 450.5,
        "quantity_available": 50,
        "max_per_person": 4,
        "required_attendee_fields": [{"key": "full_name", "label": "Full name", "type": "text", "required": true}]
    }))]
    pub struct TicketTypeIn {
        /// The ticketing campaign (of the account) the type belongs to.
        #[serde(rename = "campaignId")]
        #[schema(value_type = uuid::Uuid, format = Uuid, required = true)]
        pub campaign_id: Option<String>,
    }
}

ticket_type_body! {
    /// One item of `POST /ticket-types/bootstrap` (its campaign is named once, at the top level).
    #[schema(example = json!({"name": "Regular", "price": 150, "quantity_available": 500}))]
    pub struct TicketTypeItemIn {}
}

/// One attendee field a buyer fills in (documentation of `required_attendee_fields` items).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct AttendeeFieldIn {
    #[schema(min_length = 1, max_length = 64, pattern = "^[a-z][a-z0-9_]{0,63}$")]
    key: String,
    #[schema(min_length = 1, max_length = 255)]
    label: String,
    #[schema(schema_with = attendee_field_type_schema)]
    r#type: String,
    required: bool,
    /// Select fields only: 1–100 non-empty strings.
    #[schema(min_items = 1, max_items = 100)]
    options: Option<Vec<String>>,
}

fn ticket_kind_schema() -> Object {
    string_enum(&KINDS, "paid (default), free, early_bird, vip, student or group.")
}

fn ticket_status_schema() -> Object {
    string_enum(&TicketTypeStatus::NAMES, "active (default), inactive or archived; sold_out is derived, never stored.")
}

fn attendee_field_type_schema() -> Object {
    string_enum(&FIELD_TYPES, "The input type.")
}

/// Body of `POST /ticket-types/bootstrap`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({
    "campaignId": "0190f1d2-8c4b-7cc3-9a41-2f4b8e6d5a10",
    "ticketTypes": [
        {"name": "Regular", "price": 150, "quantity_available": 500},
        {"name": "VIP", "ticket_type": "vip", "price": 450.5, "quantity_available": 50}
    ]
}))]
pub struct BootstrapIn {
    #[schema(value_type = uuid::Uuid, format = Uuid, required = true)]
    pub campaign_id: Option<String>,
    /// 1–50 ticket types, created together or not at all.
    #[schema(value_type = Vec<TicketTypeItemIn>, required = true, min_items = 1, max_items = 50)]
    pub ticket_types: Option<Vec<TicketTypeItemIn>>,
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
            status: t.status.as_str().into(),
            required_attendee_fields: t.required_attendee_fields,
            created_at: rfc3339(t.created_at),
        }
    }
}

/// POST /api/white-label/v1/ticket-types — Signed — tickets:write
#[utoipa::path(
    post, path = "/api/white-label/v1/ticket-types", operation_id = "ticket_types_create", tag = "ticket types",
    security(("signed" = [])),
    request_body = TicketTypeIn,
    responses(
        (status = 201, description = "Created (404 when the campaign is not in this account; 409 when it is not a ticketing campaign, or archived)", body = Envelope<TicketTypeOut>),
        ModuleSignedErrors, BodyErrors, NotFound, Conflict,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Signed<scope::TicketsWrite>,
    ApiJson(body): ApiJson<TicketTypeIn>,
) -> ApiResult<TicketTypeOut> {
    modules::require(&state, &caller.account_id, Module::Ticketing).await?;
    let (campaign, t) = parse_new(body.campaign_id.as_deref(), &body.input())?;
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
    post, path = "/api/white-label/v1/ticket-types/bootstrap", operation_id = "ticket_types_bootstrap", tag = "ticket types",
    security(("signed" = [])),
    request_body = BootstrapIn,
    responses(
        (status = 201, description = "All created in one transaction (409 when the campaign already has ticket types, or is not a ticketing campaign)", body = Envelope<BootstrapOut>),
        ModuleSignedErrors, BodyErrors, NotFound, Conflict,
    )
)]
pub async fn bootstrap(
    State(state): State<AppState>,
    caller: Signed<scope::TicketsWrite>,
    ApiJson(body): ApiJson<BootstrapIn>,
) -> ApiResult<BootstrapOut> {
    modules::require(&state, &caller.account_id, Module::Ticketing).await?;
    let items: Option<Vec<TicketTypeInput<'_>>> =
        body.ticket_types.as_ref().map(|l| l.iter().map(|f| f.input()).collect());
    let (campaign, types) = parse_bootstrap(body.campaign_id.as_deref(), items.as_deref())?;
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

/// Body of `PATCH /ticket-types/{id}` (D17.15): each field present is changed, the rest kept.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"price": 120, "quantity_available": 400, "status": "inactive"}))]
pub struct TicketTypePatchIn {
    /// 1–255 characters (after trimming).
    #[schema(value_type = String, min_length = 1, max_length = 255, required = false)]
    pub name: Option<String>,
    /// At most 5000 characters.
    #[schema(value_type = String, max_length = 5000, required = false)]
    pub description: Option<String>,
    /// GHS ≥ 0 with at most 2 decimals.
    #[schema(value_type = f64, minimum = 0, maximum = 10_000_000, multiple_of = 0.01, required = false)]
    pub price: Option<Value>,
    /// Never below the seats already sold or held (409 `quantity_below_sold`).
    #[schema(value_type = i64, minimum = 0, maximum = 1_000_000, required = false)]
    pub quantity_available: Option<Value>,
    #[schema(value_type = i64, minimum = 1, maximum = 100, required = false)]
    pub max_per_person: Option<Value>,
    /// inactive and archived types sell nothing.
    #[schema(schema_with = ticket_status_schema, required = false)]
    pub status: Option<String>,
}

/// PATCH /api/white-label/v1/ticket-types/{id} — Signed — tickets:write
#[utoipa::path(
    patch, path = "/api/white-label/v1/ticket-types/{id}", operation_id = "ticket_types_update", tag = "ticket types",
    security(("signed" = [])),
    params(("id" = String, Path, format = Uuid, description = "Ticket type id")),
    request_body = TicketTypePatchIn,
    responses(
        (status = 200, description = "Updated (D17.15)", body = Envelope<TicketTypeOut>),
        ModuleSignedErrors, BodyErrors, NotFound, QuantityConflict,
    )
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Signed<scope::TicketsWrite>,
    Path(id): Path<String>,
    ApiJson(b): ApiJson<TicketTypePatchIn>,
) -> ApiResult<TicketTypeOut> {
    modules::require(&state, &caller.account_id, Module::Ticketing).await?;
    if !is_uuid(&id) {
        return Err(ApiError::not_found("ticket type"));
    }
    let patch = parse_patch(&TicketTypePatchInput {
        name: b.name.as_deref(),
        description: b.description.as_deref(),
        price: b.price.as_ref(),
        quantity_available: b.quantity_available.as_ref(),
        max_per_person: b.max_per_person.as_ref(),
        status: b.status.as_deref(),
    })?;
    let audit = audit(&caller, "ticket_type.updated", "ticket_type");
    Ok(ApiResponse::ok(state.store.update_ticket_type(&caller.account_id, &id, &patch, audit).await?.into()))
}

/// The filters of `GET /ticket-types`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct TicketTypeFilters {
    /// Only this campaign's ticket types (404 unless it is an approved campaign the key may see).
    #[param(value_type = Option<uuid::Uuid>, format = Uuid)]
    pub campaign_id: Option<String>,
}

impl ListFilters for TicketTypeFilters {
    type Parsed = Option<String>;
    fn parse(self, _: &mut Check) -> Option<String> {
        self.campaign_id
    }
}

/// GET /api/white-label/v1/ticket-types — Domain-key — tickets:read
#[utoipa::path(
    get, path = "/api/white-label/v1/ticket-types", operation_id = "ticket_types_list", tag = "ticket types",
    security(("domainKey" = [])),
    params(ListQuery<TicketTypeFilters>),
    responses(
        (status = 200, description = "Active ticket types of approved campaigns the key may see, newest first", body = ListEnvelope<TicketTypeOut>),
        ModuleDomainKeyErrors, QueryErrors, NotFound,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: DomainKey<scope::TicketsRead>,
    q: ListQuery<TicketTypeFilters>,
) -> ApiResult<Vec<TicketTypeOut>> {
    modules::require(&state, &caller.account_id, Module::Ticketing).await?;
    let campaign = match (q.filters, &caller.campaign_id) {
        (Some(asked), Some(own)) if asked != *own => return Err(ApiError::not_found("campaign")),
        (Some(asked), _) => {
            let c = state.store.campaign(&caller.account_id, campaign_id(&asked)?).await?;
            if c.status != CampaignStatus::Approved {
                return Err(ApiError::not_found("campaign"));
            }
            Some(c.id)
        }
        (None, own) => own.clone(),
    };
    let (page, limit) = q.page.bounds();
    let query = TicketTypeQuery { campaign_id: campaign, page, limit };
    let (items, total) = state.store.list_public_ticket_types(&caller.account_id, &query).await?;
    Ok(ApiResponse::list(items.into_iter().map(Into::into).collect(), q.page.pagination(total)))
}

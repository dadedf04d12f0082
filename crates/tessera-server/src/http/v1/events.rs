//! The event feed (D17.27, D17.41): `GET /events?after=&limit=`, the account's events in
//! sequence order for a consumer catching up (after downtime, or instead of webhooks). Each
//! item's `data` is the stored JSON text as is, the bytes a delivery sends.
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};

use crate::domain::time::rfc3339;
use crate::domain::webhook_endpoints::parse_feed;
use crate::http::envelope::{ApiResponse, Envelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, ApiQuery, Signed};
use crate::http::openapi::{QueryErrors, SignedErrors};
use crate::state::AppState;
use crate::store::events::Event;

/// The query of `GET /events`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FeedQuery {
    /// The events after this sequence (default 0: from the first).
    #[param(value_type = Option<i64>, minimum = 0)]
    pub after: Option<String>,
    /// How many, 1–100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
}

/// One event of the feed.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventOut {
    /// The event id: the `webhook-id` of its deliveries.
    pub id: String,
    /// The event type (D17.25).
    pub r#type: String,
    /// Gap-free per account, from 1.
    pub sequence: i64,
    /// When it happened (RFC 3339).
    pub timestamp: String,
    /// The object as delivered: the payment, ticket, withdrawal or campaign (D17.26).
    #[schema(value_type = Object)]
    pub data: Box<RawValue>,
}

impl TryFrom<Event> for EventOut {
    type Error = ApiError;
    fn try_from(e: Event) -> Result<Self, ApiError> {
        // Stored by `store::events::record` from a JSON value, so it parses; a row that does not
        // is corrupt, and an internal error says so rather than sending it.
        let data = RawValue::from_string(e.data).map_err(ApiError::internal)?;
        Ok(EventOut { id: e.id, r#type: e.event_type, sequence: e.sequence, timestamp: rfc3339(e.created_at), data })
    }
}

/// GET /api/white-label/v1/events — Signed — settings:read
#[utoipa::path(
    get, path = "/api/white-label/v1/events", operation_id = "events_list", tag = "webhooks",
    security(("signed" = [])),
    params(FeedQuery),
    responses(
        (status = 200, description = "The account's events after `after`, in sequence order (test events are not in it)", body = Envelope<Vec<EventOut>>),
        SignedErrors, QueryErrors,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsRead>,
    ApiQuery(q): ApiQuery<FeedQuery>,
) -> ApiResult<Vec<EventOut>> {
    let (after, limit) = parse_feed(q.after.as_deref(), q.limit.as_deref())?;
    let events = state.store.events_after(&caller.account_id, after, limit).await?;
    let items = events.into_iter().map(EventOut::try_from).collect::<Result<_, _>>()?;
    Ok(ApiResponse::ok(items))
}

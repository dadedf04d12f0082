//! Version 1 handlers, one file per resource, named by verb.
pub mod campaigns;
pub mod config;
pub mod context;
pub mod events;
pub mod leaderboard;
pub mod ledger;
pub mod my_tickets;
pub mod notifications;
pub mod participants;
pub mod payments;
pub mod refunds;
pub mod settings;
pub mod storefront;
pub mod submissions;
pub mod ticket_types;
pub mod tickets;
pub mod webhook_endpoints;
pub mod withdrawals;

use serde_json::{Map, Value};

use crate::http::envelope::request_id;
use crate::http::error::ApiError;
use crate::http::extract::Caller;
use crate::state::AppState;
use crate::store::audit::Audit;
use crate::store::UpdateError;

/// The account's settings as the API shows them: every category object, with each sealed
/// secret replaced by its mask (D4.3).
pub async fn settings_view(state: &AppState, account_id: &str) -> Result<Map<String, Value>, ApiError> {
    Ok(state.directory.account_view(account_id).await?.settings.clone())
}

/// An audit entry for a change made by `caller` (the store fills in the entity id).
pub fn audit<'a>(caller: &'a Caller, action: &'a str, entity_type: &'a str) -> Audit<'a> {
    Audit {
        key_id: Some(&caller.key_id),
        request_id: Some(request_id()),
        action,
        entity_type,
        entity_id: "",
        summary: Value::Null,
    }
}

impl From<UpdateError> for ApiError {
    fn from(e: UpdateError) -> Self {
        match e {
            UpdateError::Domain(d) => d.into(),
            UpdateError::Store(s) => s.into(),
            raced @ UpdateError::Raced => ApiError::conflict(raced.to_string()),
        }
    }
}

/// A `campaignId` list filter must name one of the caller's campaigns (404 otherwise).
pub async fn campaign_filter(state: &AppState, account_id: &str, id: Option<&str>) -> Result<(), ApiError> {
    match id {
        Some(c) if !state.store.campaign_exists(account_id, campaign_id(c)?).await? => {
            Err(ApiError::not_found("campaign"))
        }
        _ => Ok(()),
    }
}

/// A campaign id from a path or query: ids that are not UUIDs cannot exist (404).
pub fn campaign_id(id: &str) -> Result<&str, ApiError> {
    if crate::domain::is_uuid(id) {
        Ok(id)
    } else {
        Err(ApiError::not_found("campaign"))
    }
}

//! Version 1 handlers, one file per resource, named by verb.
pub mod campaigns;
pub mod config;
pub mod context;
pub mod ledger;
pub mod my_tickets;
pub mod notifications;
pub mod participants;
pub mod payments;
pub mod settings;
pub mod storefront;
pub mod submissions;
pub mod ticket_types;
pub mod tickets;
pub mod withdrawals;

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::IntoParams;

use crate::domain::DomainError;
use crate::http::envelope::{request_id, Pagination};
use crate::http::error::{ApiError, Detail};
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

/// `page` and `limit` of list routes (D1.8).
#[derive(Debug, Deserialize, IntoParams)]
pub struct PageParams {
    /// Page number, from 1 (default 1).
    pub page: Option<String>,
    /// Items per page, 1–100 (default 20).
    pub limit: Option<String>,
}

impl PageParams {
    /// Parses into (page, limit), collecting errors.
    pub fn parse(&self, details: &mut Vec<Detail>) -> (u32, u32) {
        let mut num = |field: &str, v: &Option<String>, default: u32, max: u32| match v {
            None => default,
            Some(s) => match s.parse::<u32>() {
                Ok(n) if n >= 1 && n <= max => n,
                _ => {
                    details.push(Detail {
                        field: field.into(),
                        message: format!("must be a whole number from 1 to {max}"),
                    });
                    default
                }
            },
        };
        (num("page", &self.page, 1, 1_000_000), num("limit", &self.limit, 20, 100))
    }
}

pub fn pagination(page: u32, limit: u32, total: u64) -> Pagination {
    Pagination { page, limit, total, has_more: u64::from(page) * u64::from(limit) < total }
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

/// Ends a handler's validation: 400 with every collected detail, or carry on.
pub fn reject_if_any(details: Vec<Detail>) -> Result<(), ApiError> {
    if details.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation(details))
    }
}

/// An optional query filter: parsed when present, its error (if any) added to `details`.
pub fn optional<T>(
    details: &mut Vec<Detail>,
    value: Option<&str>,
    parse: impl FnOnce(&str) -> Result<T, DomainError>,
) -> Result<Option<T>, ApiError> {
    match value.map(parse) {
        Some(Ok(v)) => Ok(Some(v)),
        Some(Err(e)) => push_domain(details, e).map(|_| None),
        None => Ok(None),
    }
}

/// Domain errors into details (for handlers that collect errors from several sources).
pub fn push_domain(details: &mut Vec<Detail>, e: DomainError) -> Result<(), ApiError> {
    match e {
        DomainError::Validation(f) => {
            details.extend(f.into_iter().map(Detail::from));
            Ok(())
        }
        other => Err(other.into()),
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

//! `GET /api/white-label/v1/config` (Domain-key, settings:read): what a website needs to
//! boot: the approved domain, the key's campaign scope and the enabled modules.
use axum::extract::State;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::settings::OperationsSettings;
use crate::http::envelope::{ApiResponse, Envelope};
use crate::http::error::ApiResult;
use crate::http::extract::{scope, DomainKey};
use crate::http::openapi::DomainKeyErrors;
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigOut {
    /// The approved domain the request came from.
    pub domain: String,
    pub account_slug: String,
    pub platform_name: String,
    /// `account` for a public key, `campaign` for a campaign key.
    pub scope: String,
    /// The campaign a campaign key is limited to.
    pub campaign_id: Option<String>,
    /// Modules from `operations` settings: voting, donations, ticketing, submissions,
    /// myTickets (each true unless turned off).
    #[schema(value_type = Object)]
    pub modules: serde_json::Map<String, Value>,
}

/// GET /api/white-label/v1/config — Domain-key — settings:read
#[utoipa::path(
    get, path = "/api/white-label/v1/config", operation_id = "config_show", tag = "public",
    security(("domainKey" = [])),
    responses(
        (status = 200, description = "Approved domain, campaign scope, enabled modules", body = Envelope<ConfigOut>),
        DomainKeyErrors,
    )
)]
pub async fn show(State(state): State<AppState>, caller: DomainKey<scope::SettingsRead>) -> ApiResult<ConfigOut> {
    let view = state.directory.account_view(&caller.account_id).await?;
    let operations = OperationsSettings::from_value(view.settings.get("operations").unwrap_or(&Value::Null));
    let modules = operations.modules.iter().map(|(m, on)| (m.to_string(), Value::Bool(*on))).collect();
    Ok(ApiResponse::ok(ConfigOut {
        domain: caller.domain.clone().unwrap_or_default(),
        account_slug: view.account.slug.clone(),
        platform_name: view.account.platform_name.clone(),
        scope: if caller.campaign_id.is_some() { "campaign" } else { "account" }.to_string(),
        campaign_id: caller.campaign_id.clone(),
        modules,
    }))
}

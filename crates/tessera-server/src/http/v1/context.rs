//! `GET /api/white-label/v1/context` (spec "Account context").
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use axum::response::Response;

use crate::auth::directory::AccountView;
use crate::http::envelope::ok_rendered;
use crate::http::error::ApiError;
use crate::http::extract::{scope, Signed};
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextAccountOut {
    pub id: String,
    pub account_slug: String,
    pub platform_name: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrandingOut {
    pub platform_name: String,
    /// The primary domain's hostname, if one is set.
    pub primary_domain: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainOut {
    pub hostname: String,
    pub is_primary: bool,
    /// `pending`, `active` or `failed`.
    pub ssl_status: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextOut {
    pub account: ContextAccountOut,
    pub branding: BrandingOut,
    pub domains: Vec<DomainOut>,
    /// Settings keyed by category; secrets are masked.
    #[schema(value_type = Object)]
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// One item per provider the account can charge through, by the routing rule (D5.4,
    /// D17.13); never a secret.
    pub provider_summary: Vec<ProviderSummaryOut>,
}

/// A provider the account can charge through (D17.13).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSummaryOut {
    pub provider: String,
    /// `account` (its own credentials, `useSharedDefaults: false`) or `platform` (the shared ones).
    pub source: String,
    /// Charges go here first (unless a channel names another provider).
    pub is_default: bool,
    /// Charges fall through to it when the default cannot take them.
    pub is_fallback: bool,
}

/// GET /api/white-label/v1/context — Signed — settings:read
#[utoipa::path(
    get, path = "/api/white-label/v1/context", operation_id = "context_show", tag = "account",
    security(("signed" = [])),
    responses(
        (status = 200, description = "The account, its branding, domains, settings and providers", body = Envelope<ContextOut>),
        SignedErrors,
    )
)]
pub async fn show(State(state): State<AppState>, caller: Signed<scope::SettingsRead>) -> Result<Response, ApiError> {
    let view = state.directory.account_view(&caller.account_id).await?;
    if let Some(rendered) = view.context_json.get() {
        return Ok(ok_rendered(rendered));
    }
    let summary = provider_summary(&state, &caller.account_id).await?;
    let rendered = serde_json::to_vec(&context_of(&view, summary)).map_err(ApiError::internal)?;
    Ok(ok_rendered(view.context_json.get_or_init(|| rendered)))
}

/// The context of an account as its cached view holds it.
fn context_of(view: &AccountView, provider_summary: Vec<ProviderSummaryOut>) -> ContextOut {
    let (account, domains, settings) = (&view.account, &view.domains, &view.settings);
    let branding_name = settings
        .get("branding")
        .and_then(|b| b.get("platformName"))
        .and_then(|v| v.as_str())
        .unwrap_or(&account.platform_name)
        .to_string();
    ContextOut {
        provider_summary,
        branding: BrandingOut {
            platform_name: branding_name,
            primary_domain: domains.iter().find(|d| d.is_primary).map(|d| d.hostname.clone()),
        },
        account: ContextAccountOut {
            id: account.id.clone(),
            account_slug: account.slug.clone(),
            platform_name: account.platform_name.clone(),
        },
        domains: domains
            .iter()
            .map(|d| DomainOut {
                hostname: d.hostname.clone(),
                is_primary: d.is_primary,
                ssl_status: d.ssl_status.clone(),
            })
            .collect(),
        settings: settings.clone(),
    }
}

/// `providerSummary` by the routing rule itself (D17.13): every provider with credentials
/// ([`credentials`]), the default and fallback as [`routes`] orders a charge. Rendered once per
/// cached account view, like the rest of the context.
async fn provider_summary(state: &AppState, account_id: &str) -> Result<Vec<ProviderSummaryOut>, ApiError> {
    let settings = payments_settings(state, account_id).await?;
    let order: Vec<ProviderId> = routes(state, account_id, &settings, "").iter().map(|r| r.provider).collect();
    let source = if settings.use_shared_defaults { "platform" } else { "account" };
    Ok(ProviderId::ALL
        .into_iter()
        .filter(|id| credentials(state, account_id, &settings, *id).is_some())
        .map(|id| ProviderSummaryOut {
            provider: id.as_str().to_string(),
            source: source.to_string(),
            is_default: order.first() == Some(&id),
            is_fallback: order.iter().skip(1).any(|p| *p == id),
        })
        .collect())
}

use crate::flows::routing::{credentials, payments_settings, routes};
use crate::http::envelope::Envelope;
use crate::http::openapi::SignedErrors;
use crate::providers::payments::ProviderId;

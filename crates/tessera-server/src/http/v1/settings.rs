//! Settings routes (spec "Settings", D4): read by category, merge-patch one category, secrets
//! write-only (sealed at rest, read back masked).
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use super::{audit, settings_view};
use crate::domain::settings::{
    check_outbound_urls, mask_sealed, merge_patch, parse_categories, parse_category, parse_patch, seal_secrets,
    validate, visible_tail, SEALED,
};
use crate::http::envelope::{ApiResponse, Envelope};
use crate::http::error::ApiResult;
use crate::http::extract::{scope, ApiJson, Signed};
use crate::http::openapi::{BodyErrors, Conflict, QueryErrors, SignedErrors};
use crate::state::AppState;

/// GET /api/white-label/v1/settings — Signed — settings:read
///
/// `?categories=payments,branding` (comma list, or the parameter repeated); all nine when
/// omitted. Categories never written are `{}`.
#[utoipa::path(
    get, path = "/api/white-label/v1/settings", operation_id = "settings_show", tag = "settings",
    security(("signed" = [])),
    params(("categories" = Option<String>, Query, max_length = 200, example = "payments,branding",
        description = "Comma-separated categories (branding, permissions, payments, notifications, ussd, webhooks, analytics, security, operations), or the parameter repeated; all when omitted")),
    responses(
        (status = 200, description = "Settings keyed by category; secrets masked", body = Envelope<Object>),
        SignedErrors, QueryErrors,
    )
)]
pub async fn show(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsRead>,
    uri: axum::http::Uri,
) -> ApiResult<Map<String, Value>> {
    crate::http::extract::reject_nul_in_query(uri.query())?;
    let pairs = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes());
    let wanted = parse_categories(pairs.map(|(k, v)| (k.into_owned(), v.into_owned())))?;
    let stored = settings_view(&state, &caller.account_id).await?;
    let data =
        wanted.into_iter().map(|c| (c.to_string(), stored.get(c).cloned().unwrap_or_else(|| json!({})))).collect();
    Ok(ApiResponse::ok(data))
}

/// Body of `PATCH /settings/:category`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"config": {"defaultProvider": "provider_a", "fallbackProvider": "provider_b", "feePercent": 2.5}}))]
pub struct SettingsPatchIn {
    /// JSON merge patch (RFC 7396) applied to the stored object: `null` deletes a key. Known
    /// keys are validated (D4.2); secrets are write-only (D4.3). ≤ 16 KiB serialized, depth ≤ 8.
    #[schema(value_type = Object, required = true)]
    pub config: Option<Value>,
}

#[derive(Serialize, ToSchema)]
pub struct SettingsOut {
    pub category: String,
    /// The whole category after the patch; secrets masked.
    #[schema(value_type = Object)]
    pub config: Value,
}

/// The settings categories, as the document names them (the handler parses the path itself,
/// so that an unknown category is a 400 naming it).
#[derive(ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum SettingsCategory {
    Branding,
    Permissions,
    Payments,
    Notifications,
    Ussd,
    Webhooks,
    Analytics,
    Security,
    Operations,
}

/// PATCH /api/white-label/v1/settings/{category} — Signed — settings:write
#[utoipa::path(
    patch, path = "/api/white-label/v1/settings/{category}", operation_id = "settings_update", tag = "settings",
    security(("signed" = [])),
    params(("category" = inline(SettingsCategory), Path, description = "The settings category")),
    request_body = SettingsPatchIn,
    responses(
        (status = 200, description = "The whole category after the patch", body = Envelope<SettingsOut>),
        SignedErrors, BodyErrors, Conflict,
    )
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsWrite>,
    Path(category): Path<String>,
    ApiJson(body): ApiJson<SettingsPatchIn>,
) -> ApiResult<SettingsOut> {
    let category = parse_category("category", &category)?;
    let patch = parse_patch(body.config)?;
    let keyring = state.directory.keyring();
    let account = &caller.account_id;
    let stored = state
        .store
        .update_setting(
            &caller.account_id,
            category,
            |mut current| {
                merge_patch(&mut current, &patch);
                validate(category, &current)?;
                check_outbound_urls(category, &current, state.config.security.allow_private_endpoints)?;
                seal_secrets(&mut current, &format!("{category}.config"), &|path, plain| {
                    json!({ SEALED: keyring.encrypt(&format!("settings:{account}:{path}"), plain), "last4": visible_tail(plain) })
                });
                Ok(current)
            },
            audit(&caller, "settings.updated", "settings"),
        )
        .await?;
    state.directory.forget_account(&caller.account_id);
    let mut config = stored;
    mask_sealed(&mut config);
    Ok(ApiResponse::ok(SettingsOut { category: category.to_string(), config }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::settings::CATEGORIES;

    #[test]
    fn the_documented_categories_are_the_ones_the_handler_accepts() {
        let schema = serde_json::to_value(<SettingsCategory as utoipa::PartialSchema>::schema()).expect("schema");
        assert_eq!(schema["enum"], json!(CATEGORIES));
    }
}

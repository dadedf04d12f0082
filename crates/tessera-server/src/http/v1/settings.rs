//! Settings routes (spec "Settings", D4): read by category, merge-patch one category, secrets
//! write-only (sealed at rest, read back masked).
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use super::{audit, settings_view};
use crate::domain::settings::{
    check_patch, mask_sealed, merge_patch, parse_category, seal_secrets, validate, visible_tail, CATEGORIES, SEALED,
};
use crate::domain::DomainError;
use crate::http::envelope::{ApiResponse, Envelope};
use crate::http::error::{ApiError, ApiResult, Detail, ErrorEnvelope};
use crate::http::extract::{scope, ApiJson, Signed};
use crate::state::AppState;

/// GET /api/white-label/v1/settings — Signed — settings:read
///
/// `?categories=payments,branding` (comma list, or the parameter repeated); all nine when
/// omitted. Categories never written are `{}`.
#[utoipa::path(
    get, path = "/api/white-label/v1/settings", tag = "settings", security(("signed" = [])),
    params(("categories" = Option<String>, Query, description = "Comma-separated categories, or repeated")),
    responses((status = 200, description = "Settings keyed by category; secrets masked", body = Envelope<Object>), (status = 400, body = ErrorEnvelope))
)]
pub async fn show(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsRead>,
    uri: axum::http::Uri,
) -> ApiResult<Map<String, Value>> {
    let mut wanted: Vec<&'static str> = Vec::new();
    let mut details = Vec::new();
    for (k, v) in form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()) {
        if k != "categories" && k != "categories[]" {
            details.push(Detail { field: k.to_string(), message: "unknown field".into() });
            continue;
        }
        for c in v.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            match parse_category("categories", c) {
                Ok(c) if !wanted.contains(&c) => wanted.push(c),
                Ok(_) => {}
                Err(DomainError::Validation(f)) => details.extend(f.into_iter().map(Detail::from)),
                Err(other) => return Err(other.into()),
            }
        }
    }
    super::reject_if_any(details)?;
    if wanted.is_empty() {
        wanted = CATEGORIES.to_vec();
    }
    let stored = settings_view(&state, &caller.account_id).await?;
    let data =
        wanted.into_iter().map(|c| (c.to_string(), stored.get(c).cloned().unwrap_or_else(|| json!({})))).collect();
    Ok(ApiResponse::ok(data))
}

/// Body of `PATCH /settings/:category`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsPatchIn {
    /// JSON merge patch (RFC 7396) applied to the stored object: `null` deletes a key.
    #[schema(value_type = Object)]
    pub config: Option<Value>,
}

#[derive(Serialize, ToSchema)]
pub struct SettingsOut {
    pub category: String,
    /// The whole category after the patch; secrets masked.
    #[schema(value_type = Object)]
    pub config: Value,
}

/// PATCH /api/white-label/v1/settings/{category} — Signed — settings:write
#[utoipa::path(
    patch, path = "/api/white-label/v1/settings/{category}", tag = "settings", security(("signed" = [])),
    params(("category" = String, Path, description = "branding, permissions, payments, notifications, ussd, webhooks, analytics, security or operations")),
    request_body = SettingsPatchIn,
    responses((status = 200, body = Envelope<SettingsOut>), (status = 400, body = ErrorEnvelope))
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsWrite>,
    Path(category): Path<String>,
    ApiJson(body): ApiJson<SettingsPatchIn>,
) -> ApiResult<SettingsOut> {
    let category = parse_category("category", &category)?;
    let patch = match body.config {
        Some(p @ Value::Object(_)) => p,
        Some(_) => return Err(ApiError::field("config", "must be an object")),
        None => return Err(ApiError::field("config", "is required")),
    };
    crate::domain::check::free_object("config", &patch)?;
    check_patch("config", &patch)?;
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

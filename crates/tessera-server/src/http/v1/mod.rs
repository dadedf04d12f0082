//! Version 1 handlers, one file per resource, named by verb.
pub mod config;
pub mod context;

use serde_json::{Map, Value};

use crate::app::AppState;
use crate::http::error::ApiError;

/// The account's settings as the API shows them: every category object, with each sealed
/// secret replaced by its mask (D4.3).
pub async fn settings_view(state: &AppState, account_id: &str) -> Result<Map<String, Value>, ApiError> {
    Ok(state
        .store
        .settings(account_id)
        .await?
        .into_iter()
        .map(|(category, mut config)| {
            crate::domain::settings::mask_sealed(&mut config);
            (category, config)
        })
        .collect())
}

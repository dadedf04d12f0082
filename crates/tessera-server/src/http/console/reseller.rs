//! `/console/reseller` (D17.30): to be built.
use minijinja::context;

use super::{render, Caller, PageResult};
use crate::domain::console::Page;

pub async fn show(caller: Caller) -> PageResult {
    caller.open(Page::Reseller)?;
    Ok(render(&caller, Page::Reseller, "reseller.html", context! {}))
}

/// The reseller pages' other routes (profile, members, approval requests).
pub fn routes() -> axum::Router<crate::state::AppState> {
    axum::Router::new()
}

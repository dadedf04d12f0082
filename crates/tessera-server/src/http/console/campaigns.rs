//! `/console/campaigns` (D17.30): to be built.
use minijinja::context;

use super::{render, Caller, PageResult};
use crate::domain::console::Page;

pub async fn list(caller: Caller) -> PageResult {
    caller.open(Page::Campaigns)?;
    Ok(render(&caller, Page::Campaigns, "campaigns.html", context! {}))
}

pub async fn show(caller: Caller) -> PageResult {
    caller.open(Page::Campaigns)?;
    Ok(render(&caller, Page::Campaigns, "campaigns.html", context! {}))
}

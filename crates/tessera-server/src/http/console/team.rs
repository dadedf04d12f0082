//! `/console/team` (D17.30): to be built.
use minijinja::context;

use super::{render, Caller, PageResult};
use crate::domain::console::Page;

pub async fn list(caller: Caller) -> PageResult {
    caller.open(Page::Team)?;
    Ok(render(&caller, Page::Team, "team.html", context! {}))
}

pub async fn add(caller: Caller) -> PageResult {
    caller.open(Page::Team)?;
    Ok(render(&caller, Page::Team, "team.html", context! {}))
}

pub async fn remove(caller: Caller) -> PageResult {
    caller.open(Page::Team)?;
    Ok(render(&caller, Page::Team, "team.html", context! {}))
}

//! `/console/gate` (D17.30): to be built.
use minijinja::context;

use super::{render, Caller, PageResult};
use crate::domain::console::Page;

pub async fn show(caller: Caller) -> PageResult {
    caller.open(Page::Gate)?;
    Ok(render(&caller, Page::Gate, "gate.html", context! {}))
}

pub async fn check(caller: Caller) -> PageResult {
    caller.open(Page::Gate)?;
    Ok(render(&caller, Page::Gate, "gate.html", context! {}))
}

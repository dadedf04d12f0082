//! `/console/withdrawals` (D17.30): to be built.
use minijinja::context;

use super::{render, Caller, PageResult};
use crate::domain::console::Page;

pub async fn list(caller: Caller) -> PageResult {
    caller.open(Page::Withdrawals)?;
    Ok(render(&caller, Page::Withdrawals, "withdrawals.html", context! {}))
}

pub async fn create(caller: Caller) -> PageResult {
    caller.open(Page::Withdrawals)?;
    Ok(render(&caller, Page::Withdrawals, "withdrawals.html", context! {}))
}

pub async fn decide(caller: Caller) -> PageResult {
    caller.open(Page::Withdrawals)?;
    Ok(render(&caller, Page::Withdrawals, "withdrawals.html", context! {}))
}

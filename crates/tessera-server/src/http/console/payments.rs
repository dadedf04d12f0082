//! `/console/payments` (D17.30): to be built.
use minijinja::context;

use super::{render, Caller, PageResult};
use crate::domain::console::Page;

pub async fn list(caller: Caller) -> PageResult {
    caller.open(Page::Payments)?;
    Ok(render(&caller, Page::Payments, "payments.html", context! {}))
}

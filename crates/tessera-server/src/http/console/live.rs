//! `/console/live` (D17.32): the live counters as server-sent events. To be built.
use super::{Caller, PageResult};
use crate::domain::console::Page;

pub async fn stream(caller: Caller) -> PageResult {
    caller.open(Page::Gate).or_else(|_| caller.open(Page::Dashboard))?;
    Err(super::ConsoleError::NotFound("stream"))
}

//! `/console/payments` (D17.30): the account's payments, newest first, 50 a page; `?q=` finds
//! one by its reference (exact) or a customer's by e-mail (any case).
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use minijinja::context;

use super::ledger::{page_number, pager, query_of, PER_PAGE};
use super::view::{render_status, FieldErrors};
use super::{Caller, PageResult};
use crate::domain::console::Page;
use crate::state::AppState;

/// GET /console/payments (?q=, ?page=)
pub async fn list(State(state): State<AppState>, caller: Caller, RawQuery(raw): RawQuery) -> PageResult {
    caller.open(Page::Payments)?;
    let query = query_of(raw.as_deref());
    let mut errors = FieldErrors::default();
    let page = page_number(&query, &mut errors);
    let q = query.get("q").map(String::as_str).unwrap_or("");
    if q.chars().count() > 320 {
        errors.add("q", "is too long (at most 320 characters)");
    }
    let (rows, total) = if errors.is_empty() {
        state.store.console_payments(caller.account_id(), q, (page, PER_PAGE)).await?
    } else {
        (Vec::new(), 0)
    };
    let status = if errors.is_empty() { StatusCode::OK } else { StatusCode::BAD_REQUEST };
    let ctx = context! {
        rows => rows, q => q, errors => errors,
        pager => pager(Page::Payments.path(), &[("q", q)], page, total),
    };
    Ok(render_status(status, &caller, Page::Payments, "payments.html", ctx))
}

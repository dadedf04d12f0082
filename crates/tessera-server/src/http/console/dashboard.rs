//! `/console`: the sign-in form without a session; with one, the dashboard (D17.30, D17.43).
//! Gate members and reseller users are sent (303) to their own page.
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect};
use minijinja::context;

use super::{caller_of, render, sign_in, PageResult};
use crate::domain::console::Page;
use crate::state::AppState;

/// GET /console
pub async fn show(State(state): State<AppState>, headers: HeaderMap) -> PageResult {
    let Some(caller) = caller_of(&state, &headers).await? else {
        return Ok(sign_in::form(&state, &headers));
    };
    if caller.landing() != Page::Dashboard {
        return Ok(Redirect::to(caller.landing().path()).into_response());
    }
    caller.open(Page::Dashboard)?;
    Ok(render(&caller, Page::Dashboard, "dashboard.html", context! {}))
}

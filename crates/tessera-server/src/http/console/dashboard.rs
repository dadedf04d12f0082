//! `/console`: the sign-in form without a session; with one, the dashboard (D17.30, D17.43).
//! Gate members and reseller users are sent (303) to their own page.
//!
//! The figures are the API's: Available, Pending and Held are `Store::balance` (GET /balance);
//! Gross and Fees are the sums of the `charge` and `fee` ledger entries (GET /ledger); Tickets
//! sold, Check-ins and Votes are the account's ticket types' `quantitySold`, its checked-in
//! tickets and its nominees' `votes`. Owners see all nine; finance the money, managers the
//! activity (D17.31).
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect};
use minijinja::context;
use serde::Serialize;

use super::{caller_of, render, sign_in, PageResult};
use crate::domain::console::{Page, Role};
use crate::domain::time::now_ms;
use crate::state::AppState;

/// One figure: its label, the id of its value element, its value as shown, where it links.
#[derive(Serialize)]
struct Figure {
    label: &'static str,
    id: &'static str,
    value: String,
    href: &'static str,
    /// `data-live` key console.js updates (D17.32).
    live: Option<&'static str>,
}

fn figure(label: &'static str, id: &'static str, value: String, href: &'static str) -> Figure {
    Figure { label, id, value, href, live: None }
}

/// GET /console
pub async fn show(State(state): State<AppState>, headers: HeaderMap) -> PageResult {
    let Some(caller) = caller_of(&state, &headers).await? else {
        return Ok(sign_in::form(&state, &headers));
    };
    if caller.landing() != Page::Dashboard {
        return Ok(Redirect::to(caller.landing().path()).into_response());
    }
    caller.open(Page::Dashboard)?;
    let role = caller.role().unwrap_or(Role::Gate);
    let account = caller.account_id();
    let f = state.store.console_figures(account, role.sees_money(), role.sees_activity()).await?;
    let mut figures = Vec::new();
    if role.sees_money() {
        let b = state.store.balance(account, now_ms()).await?;
        let ghs = super::view::ghs;
        figures.extend([
            figure("Gross", "fig-gross", ghs(f.gross), "/console/ledger?type=charge"),
            figure("Fees", "fig-fees", ghs(f.fees), "/console/ledger?type=fee"),
            figure("Net", "fig-net", ghs(f.gross - f.fees), "/console/ledger"),
            figure("Available", "fig-available", ghs(b.available), "/console/ledger"),
            figure("Pending", "fig-pending", ghs(b.pending), "/console/ledger"),
            figure("Held", "fig-held", ghs(b.held), "/console/ledger"),
        ]);
    }
    if role.sees_activity() {
        let check_ins = Figure {
            live: Some("checkIns"),
            ..figure("Check-ins", "fig-check-ins", f.check_ins.to_string(), "/console/campaigns")
        };
        figures.extend([
            figure("Tickets sold", "fig-tickets-sold", f.tickets_sold.to_string(), "/console/campaigns"),
            check_ins,
            figure("Votes", "fig-votes", f.votes.to_string(), "/console/campaigns"),
        ]);
    }
    Ok(render(&caller, Page::Dashboard, "dashboard.html", context! { figures => figures, money => role.sees_money() }))
}

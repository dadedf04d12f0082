//! `/console/live` (D17.32): the live counters as server-sent events. `event: counters` with
//! `{"checkIns": N}` (the account's checked-in tickets) at once, then after every check-in live
//! event of the caller's account (D17.5: committed on any instance), bursts folded into one
//! re-read at most every 100 ms; a `: keep-alive` comment every 15 s. Before each re-read, and
//! every 15 s without an event, the stream checks that its session still holds (signed out,
//! expired, the member removed or the account revoked end it); a quiet stream re-reads the count
//! then too and sends it when it changed. The stream ends when the server stops (the live closing
//! token) or its session ends; a browser reconnects by itself, and a reconnect without a session
//! is refused. `console.js` shows each value in the elements with `data-live="<name>"`.
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;

use super::{Caller, ConsoleError};
use crate::domain::console::Page;
use crate::live::Changes;
use crate::state::AppState;
use crate::store::live::LiveKind;

/// At most ten events a second (a gate rush is one re-read per 100 ms, not one per ticket).
const MIN_GAP: Duration = Duration::from_millis(100);
/// A comment line this often keeps an idle stream open through proxies and idle timeouts.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How long a stream waits for an event before it checks its session and re-reads the count.
const RECHECK: Duration = Duration::from_secs(15);

/// GET /console/live — roles that may open the gate page or the dashboard.
pub async fn stream(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ConsoleError> {
    caller.open(Page::Gate).or_else(|_| caller.open(Page::Dashboard))?;
    let mut changes = state.live.changes(MIN_GAP);
    let first = state.store.checked_in_count(caller.account_id()).await?;
    changes.sent();
    let feed = Feed {
        state,
        account_id: caller.account_id().to_string(),
        session_hash: caller.signed.session_hash().to_string(),
        changes,
        pending: Some(first),
        last: first,
    };
    let stream = futures_util::stream::unfold(feed, |mut feed| async move {
        let n = feed.next().await?;
        Some((Ok(counters(n)), feed))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive")))
}

fn counters(check_ins: i64) -> Event {
    Event::default().event("counters").data(serde_json::json!({ "checkIns": check_ins }).to_string())
}

/// One open stream.
struct Feed {
    state: AppState,
    account_id: String,
    /// The member's session, checked again while the stream lasts.
    session_hash: String,
    changes: Changes,
    /// The first read, sent before waiting for anything.
    pending: Option<i64>,
    /// The count sent last.
    last: i64,
}

impl Feed {
    /// The next count to send; `None` ends the stream (the server is stopping, or the session
    /// ended).
    async fn next(&mut self) -> Option<i64> {
        if let Some(first) = self.pending.take() {
            return Some(first);
        }
        loop {
            let account = self.account_id.as_str();
            let wanted = self.changes.next(|e| e.kind == LiveKind::Checkin && e.account_id == account);
            let quiet = match tokio::time::timeout(RECHECK, wanted).await {
                Ok(None) => return None,
                Ok(Some(())) => false,
                Err(_) => true,
            };
            if !self.session_holds().await {
                return None;
            }
            let n = self.state.store.checked_in_count(&self.account_id).await.ok()?;
            if quiet && n == self.last {
                continue;
            }
            self.changes.sent();
            self.last = n;
            return Some(n);
        }
    }

    /// Whether the stream's session still holds (a store error ends the stream too: the
    /// browser reconnects and is asked again).
    async fn session_holds(&self) -> bool {
        let now = crate::domain::time::now_ms();
        matches!(self.state.store.console_session(&self.session_hash, now).await, Ok(Some(_)))
    }
}

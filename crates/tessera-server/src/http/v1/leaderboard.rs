//! The leaderboard of a voting campaign (D17.18, D17.40): `GET /campaigns/:id/leaderboard` and
//! its server-sent-event stream. Who may read it and the ranking are `flows::leaderboard`'s; the
//! stream re-reads through the same function after every `votes` live event (D17.5), so a stream
//! on any instance shows what any instance committed.
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde::Serialize;
use utoipa::ToSchema;

use super::campaign_id;
use crate::domain::time::rfc3339;
use crate::flows::leaderboard::{self, Leaderboard, Viewer};
use crate::flows::modules::{self, Module};
use crate::http::envelope::{ApiResponse, Envelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, AnyKey, Caller, Scheme};
use crate::http::openapi::{NotFound, VotingAnyKeyErrors};
use crate::live::Changes;
use crate::state::AppState;
use crate::store::live::{LiveEvent, LiveKind};

/// At most one event a second after the first (D17.18).
const MIN_GAP: Duration = Duration::from_secs(1);
/// A comment line this often keeps an idle stream open through proxies (HAProxy closes one
/// silent for 60 s, deploy/haproxy.cfg) and the server's own idle timeout.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeaderboardLineOut {
    pub id: String,
    pub name: String,
    pub code: String,
    pub votes: i64,
    /// Competition rank: tied votes share a rank and the next rank skips (1, 1, 3).
    pub rank: u32,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({
    "campaignId": "0190f1d2-8c4b-7cc3-9a41-2f4b8e6d5a10", "totalVotes": 12, "updatedAt": "2026-11-25T18:00:00Z",
    "participants": [
        {"id": "0190f1d2-8c4b-7cc3-9a41-2f4b8e6d5a11", "name": "Ama Mensah", "code": "AMA", "votes": 5, "rank": 1},
        {"id": "0190f1d2-8c4b-7cc3-9a41-2f4b8e6d5a12", "name": "Kofi Boateng", "code": "KOF", "votes": 5, "rank": 1},
        {"id": "0190f1d2-8c4b-7cc3-9a41-2f4b8e6d5a13", "name": "Yaw Mensah", "code": "YAW", "votes": 2, "rank": 3}
    ]
}))]
pub struct LeaderboardOut {
    pub campaign_id: String,
    pub total_votes: i64,
    /// When a listed nominee last changed (the campaign's own time when none is listed).
    pub updated_at: String,
    /// Votes descending, ties by name; hidden nominees are not listed, nominees without votes are.
    pub participants: Vec<LeaderboardLineOut>,
}

impl From<Leaderboard> for LeaderboardOut {
    fn from(b: Leaderboard) -> Self {
        let participants = b
            .lines
            .into_iter()
            .map(|l| LeaderboardLineOut { id: l.id, name: l.name, code: l.code, votes: l.votes, rank: l.rank })
            .collect();
        LeaderboardOut {
            campaign_id: b.campaign_id,
            total_votes: b.total_votes,
            updated_at: rfc3339(b.updated_at),
            participants,
        }
    }
}

fn viewer(caller: &Caller) -> Viewer<'_> {
    match caller.scheme {
        Scheme::Signed => Viewer::Signed,
        Scheme::DomainKey => Viewer::Public { only_campaign: caller.campaign_id.as_deref() },
    }
}

/// The module guard (D17.14) and the first read, shared by both routes.
async fn first_read(state: &AppState, caller: &Caller, id: &str) -> Result<Leaderboard, ApiError> {
    modules::require(state, &caller.account_id, Module::Voting).await?;
    Ok(leaderboard::read(state, &caller.account_id, campaign_id(id)?, viewer(caller)).await?)
}

/// GET /api/white-label/v1/campaigns/{campaignId}/leaderboard — Signed, or Domain-key when the
/// campaign's `metadata.showVoteCounts` is true — campaigns:read
#[utoipa::path(
    get, path = "/api/white-label/v1/campaigns/{campaignId}/leaderboard", operation_id = "leaderboard_show",
    tag = "participants",
    security(("signed" = []), ("domainKey" = [])),
    params(("campaignId" = String, Path, format = Uuid, description = "A voting campaign of the account")),
    responses(
        (status = 200, description = "The standings (D17.18). 404 for another account's campaign, a campaign that \
            is not a voting one, or (domain key) one that is not approved or not the campaign key's", body = Envelope<LeaderboardOut>),
        VotingAnyKeyErrors, NotFound,
    )
)]
pub async fn show(
    State(state): State<AppState>,
    caller: AnyKey<scope::CampaignsRead>,
    Path(id): Path<String>,
) -> ApiResult<LeaderboardOut> {
    Ok(ApiResponse::ok(first_read(&state, &caller, &id).await?.into()))
}

/// One event of the leaderboard stream, as an event-stream reader sees it: `event: leaderboard`
/// and `data`, the leaderboard object as JSON text.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct LeaderboardEvent {
    /// Always `leaderboard`.
    event: String,
    /// The leaderboard object (as `GET …/leaderboard` returns in `data`), as JSON text.
    data: String,
}

/// GET /api/white-label/v1/campaigns/{campaignId}/leaderboard/stream — Domain-key (or Signed) —
/// campaigns:read
#[utoipa::path(
    get, path = "/api/white-label/v1/campaigns/{campaignId}/leaderboard/stream", operation_id = "leaderboard_stream",
    tag = "participants",
    security(("domainKey" = []), ("signed" = [])),
    params(("campaignId" = String, Path, format = Uuid, description = "A voting campaign of the account")),
    responses(
        (status = 200, description = "`text/event-stream` (D17.18): `event: leaderboard` with the leaderboard object \
            (as `GET …/leaderboard` returns in `data`) at once, then after every change to the votes, at most one \
            a second; a comment line (`: keep-alive`) every 15 s. The stream ends when the server stops or the \
            campaign stops being readable; clients reconnect (EventSource does so by itself). Refusals are the \
            JSON envelope, before the stream starts", content_type = "text/event-stream", body = LeaderboardEvent),
        VotingAnyKeyErrors, NotFound,
    )
)]
pub async fn stream(
    State(state): State<AppState>,
    caller: AnyKey<scope::CampaignsRead>,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>>, ApiError> {
    let mut changes = state.live.changes(MIN_GAP);
    let first = first_read(&state, &caller, &id).await?;
    changes.sent();
    let feed = Feed {
        state,
        account_id: caller.account_id.to_string(),
        campaign_id: first.campaign_id.clone(),
        key_campaign: caller.campaign_id.clone(),
        signed: caller.scheme == Scheme::Signed,
        changes,
        pending: Some(first),
    };
    let stream = futures_util::stream::unfold(feed, |mut feed| async move {
        let board = feed.next().await?;
        Some((Ok(event(board)), feed))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive")))
}

fn event(board: Leaderboard) -> Event {
    let json = serde_json::to_string(&LeaderboardOut::from(board)).unwrap_or_default();
    Event::default().event("leaderboard").data(json)
}

/// One open stream: what it watches and its pace.
struct Feed {
    state: AppState,
    account_id: String,
    campaign_id: String,
    key_campaign: Option<String>,
    signed: bool,
    changes: Changes,
    /// The first read, sent before waiting for anything.
    pending: Option<Leaderboard>,
}

impl Feed {
    /// The next leaderboard to send; `None` ends the stream (the server is stopping, or the
    /// campaign can no longer be read by this caller). At most one a second: changes that
    /// arrive meanwhile are folded into one read.
    async fn next(&mut self) -> Option<Leaderboard> {
        if let Some(first) = self.pending.take() {
            return Some(first);
        }
        let (account, campaign) = (self.account_id.clone(), self.campaign_id.clone());
        let wanted = |e: &LiveEvent| {
            e.kind == LiveKind::Votes && e.account_id == account && e.campaign_id.as_deref() == Some(campaign.as_str())
        };
        self.changes.next(wanted).await?;
        let viewer =
            if self.signed { Viewer::Signed } else { Viewer::Public { only_campaign: self.key_campaign.as_deref() } };
        let board = leaderboard::read(&self.state, &self.account_id, &self.campaign_id, viewer).await.ok()?;
        self.changes.sent();
        Some(board)
    }
}

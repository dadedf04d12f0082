//! `/console/campaigns` (D17.30; owner and manager): the account's campaigns, 50 a page, newest
//! first (the list `GET /campaigns` reads), and each campaign's page: its ticket types with
//! price, quantity, sold and what remains, its successful payments per day (the newest 30 days
//! with sales) and, for a voting campaign, the votes of each nominee.
use axum::extract::{Path, RawQuery, State};
use minijinja::context;
use serde::Serialize;

use super::{render, Caller, ConsoleError, PageResult};
use crate::domain::campaigns::{Campaign, CampaignType};
use crate::domain::console::Page;
use crate::domain::is_uuid;
use crate::state::AppState;
use crate::store::campaigns::CampaignQuery;
use crate::store::participants::ParticipantQuery;

/// Rows a page lists.
const PER_PAGE: u32 = 50;
/// Days of sales a campaign page shows.
const SALES_DAYS: i64 = 30;

/// A campaign as a row of the list shows it.
#[derive(Serialize)]
struct Row {
    id: String,
    title: String,
    kind: &'static str,
    status: &'static str,
    start_date: i64,
    end_date: i64,
}

impl From<&Campaign> for Row {
    fn from(c: &Campaign) -> Row {
        Row {
            id: c.id.clone(),
            title: c.title.clone(),
            kind: c.campaign_type.as_str(),
            status: c.status.as_str(),
            start_date: c.start_date,
            end_date: c.end_date,
        }
    }
}

/// `?page=N` (1 when absent or not a number).
fn page_of(query: Option<&str>) -> u32 {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "page")
        .and_then(|(_, v)| v.parse::<u32>().ok())
        .filter(|p| (1..=100_000).contains(p))
        .unwrap_or(1)
}

/// GET /console/campaigns?page=
pub async fn list(State(state): State<AppState>, caller: Caller, RawQuery(query): RawQuery) -> PageResult {
    caller.open(Page::Campaigns)?;
    let page = page_of(query.as_deref());
    let q = CampaignQuery { page, limit: PER_PAGE, ..CampaignQuery::default() };
    let (items, total) = state.store.list_campaigns(caller.account_id(), &q).await?;
    let rows: Vec<Row> = items.iter().map(Row::from).collect();
    let pages = total.div_ceil(u64::from(PER_PAGE)).max(1);
    let ctx = context! { campaigns => rows, total, page, pages, prev => page - 1, next => page + 1 };
    Ok(render(&caller, Page::Campaigns, "campaigns.html", ctx))
}

/// A nominee and its votes.
#[derive(Serialize)]
struct Votes {
    name: String,
    code: String,
    status: &'static str,
    votes: i64,
}

/// GET /console/campaigns/{campaign_id} — another account's (or a malformed) id is 404.
pub async fn show(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> PageResult {
    caller.open(Page::Campaigns)?;
    if !is_uuid(&id) {
        return Err(ConsoleError::NotFound("campaign"));
    }
    let account = caller.account_id();
    let c = state.store.campaign(account, &id).await?;
    let ticket_types = state.store.campaign_ticket_types(account, &c.id).await?;
    let sales = state.store.campaign_sales_per_day(account, &c.id, SALES_DAYS).await?;
    let (mut nominees, nominee_total) = if c.campaign_type == CampaignType::Voting {
        let q = ParticipantQuery { campaign_id: Some(c.id.clone()), page: 1, limit: PER_PAGE, ..Default::default() };
        let (items, total) = state.store.list_participants(account, &q).await?;
        let lines: Vec<Votes> = items
            .into_iter()
            .map(|p| Votes { name: p.name, code: p.code, status: p.status.as_str(), votes: p.votes })
            .collect();
        (lines, total)
    } else {
        (Vec::new(), 0)
    };
    nominees.sort_by(|a, b| b.votes.cmp(&a.votes).then_with(|| a.name.cmp(&b.name)));
    let ctx = context! {
        campaign => Row::from(&c),
        vote_price => c.vote_price,
        ticketing => c.campaign_type == CampaignType::Ticketing,
        voting => c.campaign_type == CampaignType::Voting,
        ticket_types,
        sales,
        sales_days => SALES_DAYS,
        nominees,
        nominee_total,
    };
    Ok(render(&caller, Page::Campaigns, "campaign.html", ctx))
}

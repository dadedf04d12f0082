//! Leaderboard (D17.18, D17.40): who may read a voting campaign's standings, and the ranking.
//! Read by `GET /campaigns/:id/leaderboard` and re-read by its stream after every `votes` live
//! event (D17.5), so the rule and the numbers are the same on both.
use crate::domain::campaigns::{CampaignStatus, CampaignType};
use crate::domain::DomainError;
use crate::state::AppState;
use crate::store::participants::{shows_vote_counts, Standing};
use crate::store::StoreError;

use super::FlowResult;

/// Who asks: the signed form sees every voting campaign of the account; the domain-key form
/// sees approved ones (a campaign key its own only), and only when `showVoteCounts` is true.
#[derive(Debug, Clone, Copy)]
pub enum Viewer<'a> {
    Signed,
    Public { only_campaign: Option<&'a str> },
}

/// One line: competition rank (1, 1, 3).
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub id: String,
    pub name: String,
    pub code: String,
    pub votes: i64,
    pub rank: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Leaderboard {
    pub campaign_id: String,
    pub total_votes: i64,
    /// Epoch ms of the last change a line shows (the campaign's own when it has no nominees).
    pub updated_at: i64,
    pub lines: Vec<Line>,
}

/// The campaign's leaderboard as `viewer` may see it. Another account's campaign, one the
/// viewer may not see, and a campaign that is not a voting one are all 404 (`not_found`): a
/// leaderboard exists only for voting campaigns, and a 409 would tell a browser key that a
/// campaign it cannot see exists. Vote counts the organizer keeps hidden are 403
/// `vote_counts_hidden` for the public.
pub async fn read(
    state: &AppState,
    account_id: &str,
    campaign_id: &str,
    viewer: Viewer<'_>,
) -> FlowResult<Leaderboard> {
    let campaign = state.store.campaign(account_id, campaign_id).await?;
    let visible = match viewer {
        Viewer::Signed => true,
        Viewer::Public { only_campaign } => {
            campaign.status == CampaignStatus::Approved && only_campaign.is_none_or(|c| c == campaign.id)
        }
    };
    if !visible || campaign.campaign_type != CampaignType::Voting {
        return Err(StoreError::NotFound("campaign").into());
    }
    if matches!(viewer, Viewer::Public { .. }) && !shows_vote_counts(&campaign.metadata) {
        return Err(DomainError::Refused {
            status: 403,
            code: "vote_counts_hidden",
            message: "this campaign keeps its vote counts hidden (metadata.showVoteCounts)".into(),
        }
        .into());
    }
    let standings = state.store.standings(account_id, campaign_id).await?;
    let updated_at = standings.iter().map(|s| s.updated_at).max().unwrap_or(campaign.updated_at);
    let total_votes = standings.iter().map(|s| s.votes).sum();
    Ok(Leaderboard { campaign_id: campaign.id, total_votes, updated_at, lines: rank(standings) })
}

/// Votes descending, ties by name (then id, so the order is stable); tied votes share the
/// rank of the first of them, and the next rank skips as many (competition ranking, D17.40).
pub fn rank(mut standings: Vec<Standing>) -> Vec<Line> {
    standings.sort_by(|a, b| b.votes.cmp(&a.votes).then_with(|| a.name.cmp(&b.name)).then_with(|| a.id.cmp(&b.id)));
    let mut lines: Vec<Line> = Vec::with_capacity(standings.len());
    for (i, s) in standings.into_iter().enumerate() {
        let rank = match lines.last() {
            Some(prev) if prev.votes == s.votes => prev.rank,
            _ => i as u32 + 1,
        };
        lines.push(Line { id: s.id, name: s.name, code: s.code, votes: s.votes, rank });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, votes: i64) -> Standing {
        Standing { id: name.to_lowercase(), name: name.into(), code: name.into(), votes, updated_at: 0 }
    }

    #[test]
    fn ties_share_a_competition_rank_and_sort_by_name() {
        let lines = rank(vec![s("Yaw", 3), s("Kofi", 5), s("Ama", 5), s("Esi", 0), s("Abena", 0)]);
        let got: Vec<(&str, i64, u32)> = lines.iter().map(|l| (l.name.as_str(), l.votes, l.rank)).collect();
        assert_eq!(got, vec![("Ama", 5, 1), ("Kofi", 5, 1), ("Yaw", 3, 3), ("Abena", 0, 4), ("Esi", 0, 4)]);
        assert!(rank(Vec::new()).is_empty());
    }
}

//! Campaigns (spec "Campaign", D3.1–D3.4): types, the moderation state machine, slugs.
use super::DomainError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CampaignType {
    Voting,
    Donation,
    Ticketing,
}

impl CampaignType {
    pub fn as_str(self) -> &'static str {
        match self {
            CampaignType::Voting => "voting",
            CampaignType::Donation => "donation",
            CampaignType::Ticketing => "ticketing",
        }
    }
    pub fn parse(field: &str, s: &str) -> Result<Self, DomainError> {
        match s {
            "voting" => Ok(CampaignType::Voting),
            "donation" => Ok(CampaignType::Donation),
            "ticketing" => Ok(CampaignType::Ticketing),
            _ => Err(DomainError::field(field, "must be one of voting, donation, ticketing")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CampaignStatus {
    Draft,
    PendingApproval,
    Approved,
    Rejected,
    Archived,
}

impl CampaignStatus {
    pub const ALL: [CampaignStatus; 5] = [
        CampaignStatus::Draft,
        CampaignStatus::PendingApproval,
        CampaignStatus::Approved,
        CampaignStatus::Rejected,
        CampaignStatus::Archived,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CampaignStatus::Draft => "draft",
            CampaignStatus::PendingApproval => "pending_approval",
            CampaignStatus::Approved => "approved",
            CampaignStatus::Rejected => "rejected",
            CampaignStatus::Archived => "archived",
        }
    }

    pub fn parse(field: &str, s: &str) -> Result<Self, DomainError> {
        Self::ALL.into_iter().find(|v| v.as_str() == s).ok_or_else(|| {
            DomainError::field(field, "must be one of draft, pending_approval, approved, rejected, archived")
        })
    }

    /// The moves of D3.1. Staying in the same state is not a move and is always allowed.
    pub fn can_move_to(self, to: CampaignStatus) -> bool {
        use CampaignStatus::*;
        self == to
            || matches!(
                (self, to),
                (Draft, PendingApproval)
                    | (Draft, Archived)
                    | (PendingApproval, Approved)
                    | (PendingApproval, Rejected)
                    | (PendingApproval, Draft)
                    | (Rejected, Draft)
                    | (Rejected, Archived)
                    | (Approved, Archived)
            )
    }

    pub fn move_to(self, to: CampaignStatus) -> Result<CampaignStatus, DomainError> {
        if self.can_move_to(to) {
            Ok(to)
        } else {
            Err(DomainError::InvalidTransition(format!(
                "a campaign cannot move from {} to {}",
                self.as_str(),
                to.as_str()
            )))
        }
    }
}

/// Slug (D3.2): 3–100 characters of `[a-z0-9-]`.
pub fn parse_slug(field: &str, s: &str) -> Result<String, DomainError> {
    let ok =
        (3..=100).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(s.to_string())
    } else {
        Err(DomainError::field(field, "must be 3 to 100 characters of a-z, 0-9 and '-'"))
    }
}

/// A slug made from a title: ASCII letters and digits lower-cased, other runs become `-`.
pub fn slugify(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let mut s: String = out.trim_matches('-').chars().take(90).collect();
    s = s.trim_end_matches('-').to_string();
    while s.len() < 3 {
        s.push_str(if s.is_empty() { "campaign" } else { "-x" });
    }
    s
}

/// The lower-cased text searched by `?search=` (title and slug).
pub fn search_text(title: &str, slug: &str) -> String {
    format!("{}\n{}", title.to_lowercase(), slug)
}

#[cfg(test)]
mod tests {
    use super::CampaignStatus::*;
    use super::*;

    #[test]
    fn the_state_machine_allows_exactly_the_listed_moves() {
        let legal = [
            (Draft, PendingApproval),
            (Draft, Archived),
            (PendingApproval, Approved),
            (PendingApproval, Rejected),
            (PendingApproval, Draft),
            (Rejected, Draft),
            (Rejected, Archived),
            (Approved, Archived),
        ];
        for from in CampaignStatus::ALL {
            for to in CampaignStatus::ALL {
                let expected = from == to || legal.contains(&(from, to));
                assert_eq!(from.can_move_to(to), expected, "{from:?} -> {to:?}");
            }
        }
    }

    #[test]
    fn slugs_are_made_from_titles() {
        assert_eq!(slugify("Miss Ghana 2027!"), "miss-ghana-2027");
        assert_eq!(slugify("Éé"), "campaign");
        assert!(parse_slug("slug", &slugify(&"x".repeat(300))).is_ok());
    }
}

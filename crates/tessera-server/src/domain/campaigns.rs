//! Campaigns (spec "Campaign", D3.1–D3.4): the campaign, its types, the moderation state
//! machine, slugs, and the rules a create or update body is held to.
use serde_json::Value;

use super::check::{free_object, text, Check};
use super::time::parse_rfc3339;
use super::{money, DomainError};

/// A campaign of an account.
#[derive(Debug, Clone, PartialEq)]
pub struct Campaign {
    pub id: String,
    pub title: String,
    pub slug: String,
    pub description: String,
    pub campaign_type: CampaignType,
    pub status: CampaignStatus,
    pub start_date: i64,
    pub end_date: i64,
    /// Pesewas per vote (voting campaigns only).
    pub vote_price: Option<i64>,
    pub verification_required: bool,
    pub metadata: Value,
    pub ticket_type_count: i64,
    pub participant_count: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Campaign {
    /// What a create starts from: every field blank, a draft.
    fn blank() -> Campaign {
        Campaign {
            id: String::new(),
            title: String::new(),
            slug: String::new(),
            description: String::new(),
            campaign_type: CampaignType::Donation,
            status: CampaignStatus::Draft,
            start_date: 0,
            end_date: 0,
            vote_price: None,
            verification_required: false,
            metadata: Value::Object(Default::default()),
            ticket_type_count: 0,
            participant_count: 0,
            created_at: 0,
            updated_at: 0,
        }
    }
}

/// The fields of a campaign body as sent (`POST /campaigns`, or `PATCH` with every field
/// optional).
#[derive(Debug, Default, Clone, Copy)]
pub struct CampaignInput<'a> {
    pub title: Option<&'a str>,
    pub description: Option<&'a str>,
    pub campaign_type: Option<&'a str>,
    pub status: Option<&'a str>,
    pub start_date: Option<&'a str>,
    pub end_date: Option<&'a str>,
    pub metadata: Option<&'a Value>,
    pub slug: Option<&'a str>,
    pub vote_price: Option<&'a Value>,
    pub verification_required: Option<bool>,
}

fn date(check: &mut Check, field: &str, v: Option<&str>) -> Option<i64> {
    let parsed = parse_rfc3339(v?);
    if parsed.is_none() {
        check.fail(field, "must be an RFC 3339 date-time with offset, e.g. 2027-01-31T18:00:00Z");
    }
    parsed
}

/// A new campaign from a create body (D3.1–D3.2), and whether its slug was chosen (a chosen
/// slug that is taken is a conflict; a slug made from the title gets a number instead).
pub fn parse_new(input: &CampaignInput<'_>) -> Result<(Campaign, bool), DomainError> {
    apply(input, None)
}

/// `current` changed by an update body (D3.3): the same rules, and a status moves along D3.1.
pub fn parse_update(input: &CampaignInput<'_>, current: &Campaign) -> Result<Campaign, DomainError> {
    apply(input, Some(current)).map(|(c, _)| c)
}

/// Applies `input` to `base` (a blank campaign on create) under every rule of the spec and D3.
fn apply(input: &CampaignInput<'_>, base: Option<&Campaign>) -> Result<(Campaign, bool), DomainError> {
    let creating = base.is_none();
    let mut check = Check::new();
    let mut c = base.cloned().unwrap_or_else(Campaign::blank);
    if creating {
        for (field, missing) in [
            ("title", input.title.is_none()),
            ("description", input.description.is_none()),
            ("campaign_type", input.campaign_type.is_none()),
            ("start_date", input.start_date.is_none()),
            ("end_date", input.end_date.is_none()),
        ] {
            if missing {
                check.fail(field, "is required");
            }
        }
    }
    if let Some(t) = input.title.and_then(|t| check.take(text("title", t, 3, 255))) {
        c.title = t;
    }
    if let Some(d) = input.description.and_then(|d| check.take(text("description", d, 10, 5000))) {
        c.description = d;
    }
    if let Some(t) = input.campaign_type.and_then(|t| check.take(CampaignType::parse("campaign_type", t))) {
        if !creating && t != c.campaign_type && (c.ticket_type_count > 0 || c.participant_count > 0) {
            return Err(DomainError::Conflict(
                "the campaign type cannot change once it has ticket types or participants".into(),
            ));
        }
        c.campaign_type = t;
    }
    dates(&mut check, input, &mut c, creating);
    if let Some(m) = input.metadata {
        if check.take(free_object("metadata", m)).is_some() {
            c.metadata = m.clone();
        }
    }
    let slug_chosen = input.slug.is_some();
    if let Some(s) = input.slug.and_then(|s| check.take(parse_slug("slug", s))) {
        c.slug = s;
    } else if creating && !slug_chosen {
        c.slug = slugify(&c.title);
    }
    if let Some(v) = input.verification_required {
        c.verification_required = v;
    }
    vote_price(&mut check, input, &mut c);
    let status = input.status.and_then(|s| check.take(CampaignStatus::parse("status", s)));
    // Every 400 first; the state machine (409) only judges an otherwise valid request.
    check.finish()?;
    if let Some(s) = status {
        c.status = if creating { s } else { c.status.move_to(s)? };
    }
    Ok((c, slug_chosen))
}

/// `start_date` and `end_date`: each RFC 3339, the start before the end once both are known.
fn dates(check: &mut Check, input: &CampaignInput<'_>, c: &mut Campaign, creating: bool) {
    let before = check.len();
    if let Some(s) = date(check, "start_date", input.start_date) {
        c.start_date = s;
    }
    if let Some(e) = date(check, "end_date", input.end_date) {
        c.end_date = e;
    }
    let parsed = check.len() == before;
    let known = !creating || (input.start_date.is_some() && input.end_date.is_some());
    if (input.start_date.is_some() || input.end_date.is_some()) && parsed && known && c.start_date >= c.end_date {
        check.fail("end_date", "must be after start_date");
    }
}

/// `vote_price`: GHS, required and > 0 on voting campaigns, dropped on the others.
fn vote_price(check: &mut Check, input: &CampaignInput<'_>, c: &mut Campaign) {
    let before = check.len();
    if let Some(p) = input.vote_price.and_then(|p| check.take(money::from_ghs("vote_price", p))) {
        c.vote_price = Some(p);
    }
    if c.campaign_type == CampaignType::Voting {
        if check.len() == before && c.vote_price.is_none_or(|p| p <= 0) {
            check.fail("vote_price", "voting campaigns need a vote_price greater than 0");
        }
    } else {
        c.vote_price = None;
    }
}

str_enum! {
    /// What a campaign collects money for.
    pub enum CampaignType {
        Voting = "voting",
        Donation = "donation",
        Ticketing = "ticketing",
    } else "must be one of voting, donation, ticketing"
}

str_enum! {
    /// Moderation state (D3.1).
    pub enum CampaignStatus {
        Draft = "draft",
        PendingApproval = "pending_approval",
        Approved = "approved",
        Rejected = "rejected",
        Archived = "archived",
    } else "must be one of draft, pending_approval, approved, rejected, archived"
}

impl CampaignStatus {
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

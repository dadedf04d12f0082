//! Voting participants (nominees, D3.7): their states, short codes, and the rules a create body
//! is held to.
use super::check::{text, url, Check};
use super::DomainError;

str_enum! {
    /// Whether a nominee takes votes (`active`) or is shown without (`hidden`, `eliminated`).
    pub enum ParticipantStatus {
        Active = "active",
        Hidden = "hidden",
        Eliminated = "eliminated",
    } else "must be one of active, hidden, eliminated"
}

/// Nominee short code (typed on USSD): 1–16 characters of A–Z and 0–9, upper-cased.
pub fn parse_code(field: &str, s: &str) -> Result<String, DomainError> {
    let c = s.trim().to_ascii_uppercase();
    if (1..=16).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()) {
        Ok(c)
    } else {
        Err(DomainError::field(field, "must be 1 to 16 characters of A-Z and 0-9"))
    }
}

/// The code given to the n-th nominee when none is supplied: `001`, `002`, …
pub fn generated_code(n: i64) -> String {
    format!("{n:03}")
}

/// The fields of a `POST /participants` body as sent.
#[derive(Debug, Default, Clone, Copy)]
pub struct ParticipantInput<'a> {
    pub campaign_id: Option<&'a str>,
    pub name: Option<&'a str>,
    pub code: Option<&'a str>,
    pub description: Option<&'a str>,
    pub image_url: Option<&'a str>,
    pub status: Option<&'a str>,
}

/// A valid new nominee; without a code it gets the next free `NNN`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewParticipant {
    pub name: String,
    pub code: Option<String>,
    pub description: Option<String>,
    pub image_url: Option<String>,
    pub status: ParticipantStatus,
}

/// Parses a `POST /participants` body: the campaign it names and the nominee.
pub fn parse_new(i: &ParticipantInput<'_>) -> Result<(String, NewParticipant), DomainError> {
    let mut check = Check::new();
    let campaign = check.required("campaignId", i.campaign_id);
    let name = check.required("name", i.name).and_then(|n| check.take(text("name", n, 1, 255)));
    let code = i.code.and_then(|c| check.take(parse_code("code", c)));
    let description = i.description.and_then(|d| check.take(text("description", d, 0, 5000)));
    let image_url = i.image_url.and_then(|u| check.take(url("imageUrl", u, true)));
    let status = check.take(ParticipantStatus::parse("status", i.status.unwrap_or("active")));
    check.finish()?;
    let p = NewParticipant {
        name: name.unwrap_or_default(),
        code,
        description,
        image_url,
        status: status.unwrap_or(ParticipantStatus::Active),
    };
    Ok((campaign.unwrap_or_default().to_string(), p))
}

/// The fields of a `PATCH /participants/:id` body as sent (D17.15).
#[derive(Debug, Default, Clone, Copy)]
pub struct ParticipantPatchInput<'a> {
    pub name: Option<&'a str>,
    pub description: Option<&'a str>,
    pub image_url: Option<&'a str>,
    pub status: Option<&'a str>,
}

/// A valid change to a nominee: each field present is set, the others kept.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ParticipantPatch {
    pub name: Option<String>,
    pub description: Option<String>,
    pub image_url: Option<String>,
    pub status: Option<ParticipantStatus>,
}

/// Parses a `PATCH /participants/:id` body under the rules of creation (D3.7, D17.15).
pub fn parse_patch(i: &ParticipantPatchInput<'_>) -> Result<ParticipantPatch, DomainError> {
    let mut check = Check::new();
    let patch = ParticipantPatch {
        name: i.name.and_then(|n| check.take(text("name", n, 1, 255))),
        description: i.description.and_then(|d| check.take(text("description", d, 0, 5000))),
        image_url: i.image_url.and_then(|u| check.take(url("imageUrl", u, true))),
        status: i.status.and_then(|s| check.take(ParticipantStatus::parse("status", s))),
    };
    check.finish()?;
    Ok(patch)
}

/// The refusal of a vote for a hidden or eliminated nominee (409 `participant_not_votable`,
/// D17.15).
pub fn not_votable(status: ParticipantStatus) -> DomainError {
    DomainError::Refused {
        status: 409,
        code: "participant_not_votable",
        message: format!("this participant is {status} and does not take votes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_parsed_with_every_broken_rule_named() {
        let ok =
            ParticipantInput { campaign_id: Some("c"), name: Some(" Ama "), code: Some("ama1"), ..Default::default() };
        let (campaign, p) = parse_new(&ok).expect("valid");
        assert_eq!((campaign.as_str(), p.name.as_str(), p.code.as_deref()), ("c", "Ama", Some("AMA1")));
        assert_eq!(p.status, ParticipantStatus::Active);
        let bad = ParticipantInput {
            code: Some("a-b"),
            image_url: Some("http://x"),
            status: Some("gone"),
            ..Default::default()
        };
        let Err(DomainError::Validation(f)) = parse_new(&bad) else { panic!("must fail") };
        let fields: Vec<&str> = f.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["campaignId", "name", "code", "imageUrl", "status"]);
    }
}

//! Voting participants (nominees, D3.7).
use super::DomainError;

pub const STATUSES: [&str; 3] = ["active", "hidden", "eliminated"];

pub fn parse_status(field: &str, s: &str) -> Result<String, DomainError> {
    if STATUSES.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(DomainError::field(field, "must be one of active, hidden, eliminated"))
    }
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

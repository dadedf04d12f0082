//! Volunteer, vendor and partner applications (`POST /submissions`).
use super::DomainError;

pub const KINDS: [&str; 3] = ["volunteer", "vendor", "partner"];

pub fn parse_kind(field: &str, s: &str) -> Result<String, DomainError> {
    if KINDS.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(DomainError::field(field, "must be one of volunteer, vendor, partner"))
    }
}

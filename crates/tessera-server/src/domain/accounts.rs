//! Organization accounts: slug rules and the status that gates every request (D2.8).
use super::DomainError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountStatus {
    Pending,
    Enabled,
    Suspended,
    Revoked,
}

impl AccountStatus {
    pub const ALL: [AccountStatus; 4] =
        [AccountStatus::Pending, AccountStatus::Enabled, AccountStatus::Suspended, AccountStatus::Revoked];

    pub fn as_str(self) -> &'static str {
        match self {
            AccountStatus::Pending => "pending",
            AccountStatus::Enabled => "enabled",
            AccountStatus::Suspended => "suspended",
            AccountStatus::Revoked => "revoked",
        }
    }

    pub fn parse(s: &str) -> Result<Self, DomainError> {
        Self::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| DomainError::field("status", "must be one of pending, enabled, suspended, revoked"))
    }
}

/// Account slug: 3–64 characters of `[a-z0-9-]`, not starting or ending with `-`.
pub fn parse_slug(field: &str, s: &str, max: usize) -> Result<String, DomainError> {
    let ok = (3..=max).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if ok {
        Ok(s.to_string())
    } else {
        Err(DomainError::field(
            field,
            format!("must be 3 to {max} characters of a-z, 0-9 and '-', not starting or ending with '-'"),
        ))
    }
}

/// A hostname as the domain-key scheme compares it (D2.3): lower-case, no scheme, no port,
/// no trailing dot.
pub fn normalize_hostname(s: &str) -> Option<String> {
    let h = s.trim().trim_end_matches('.').to_ascii_lowercase();
    let valid = !h.is_empty()
        && h.len() <= 253
        && h.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    valid.then_some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_are_normalized_and_schemes_or_ports_refused() {
        assert_eq!(normalize_hostname("Vote.Example.COM."), Some("vote.example.com".into()));
        assert_eq!(normalize_hostname("localhost"), Some("localhost".into()));
        assert_eq!(normalize_hostname("https://a.com"), None);
        assert_eq!(normalize_hostname("a.com:443"), None);
        assert_eq!(normalize_hostname("a..com"), None);
    }

    #[test]
    fn slugs_follow_the_rule() {
        assert!(parse_slug("slug", "acme-events", 64).is_ok());
        assert!(parse_slug("slug", "ab", 64).is_err());
        assert!(parse_slug("slug", "Acme", 64).is_err());
        assert!(parse_slug("slug", "-acme", 64).is_err());
    }
}

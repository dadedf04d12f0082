//! API scopes (spec "Scheme 2", the Scope column of the route tables) and key kinds (D2.1).
use super::DomainError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Scope {
    SettingsRead = 1 << 0,
    SettingsWrite = 1 << 1,
    CampaignsRead = 1 << 2,
    CampaignsWrite = 1 << 3,
    TicketsRead = 1 << 4,
    TicketsWrite = 1 << 5,
    PaymentsWrite = 1 << 6,
    WithdrawalsWrite = 1 << 7,
    MyTicketsRead = 1 << 8,
    SubmissionsWrite = 1 << 9,
    NotificationsWrite = 1 << 10,
}

impl Scope {
    pub const ALL: [Scope; 11] = [
        Scope::SettingsRead,
        Scope::SettingsWrite,
        Scope::CampaignsRead,
        Scope::CampaignsWrite,
        Scope::TicketsRead,
        Scope::TicketsWrite,
        Scope::PaymentsWrite,
        Scope::WithdrawalsWrite,
        Scope::MyTicketsRead,
        Scope::SubmissionsWrite,
        Scope::NotificationsWrite,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::SettingsRead => "settings:read",
            Scope::SettingsWrite => "settings:write",
            Scope::CampaignsRead => "campaigns:read",
            Scope::CampaignsWrite => "campaigns:write",
            Scope::TicketsRead => "tickets:read",
            Scope::TicketsWrite => "tickets:write",
            Scope::PaymentsWrite => "payments:write",
            Scope::WithdrawalsWrite => "withdrawals:write",
            Scope::MyTicketsRead => "my-tickets:read",
            Scope::SubmissionsWrite => "submissions:write",
            Scope::NotificationsWrite => "notifications:write",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Scopes a browser-safe (public or campaign) key may carry: reads only.
    pub fn is_safe_read(self) -> bool {
        matches!(self, Scope::SettingsRead | Scope::CampaignsRead | Scope::TicketsRead)
    }
}

/// A set of scopes as a bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u32);

impl Scopes {
    pub const fn empty() -> Self {
        Scopes(0)
    }
    pub const fn of(list: &[Scope]) -> Self {
        let mut bits = 0;
        let mut i = 0;
        while i < list.len() {
            bits |= list[i] as u32;
            i += 1;
        }
        Scopes(bits)
    }
    pub fn contains(self, s: Scope) -> bool {
        self.0 & s as u32 != 0
    }
    pub fn contains_all(self, other: Scopes) -> bool {
        self.0 & other.0 == other.0
    }
    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.contains(*s))
    }
    /// Scopes in `other` that this set lacks.
    pub fn missing(self, other: Scopes) -> Vec<&'static str> {
        other.iter().filter(|s| !self.contains(*s)).map(Scope::as_str).collect()
    }
    /// Stored form: comma-separated names.
    pub fn to_csv(self) -> String {
        self.iter().map(Scope::as_str).collect::<Vec<_>>().join(",")
    }
    /// Parses a comma list; unknown names are refused.
    pub fn parse_csv(field: &str, s: &str) -> Result<Scopes, DomainError> {
        let mut bits = 0;
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let scope = Scope::parse(part).ok_or_else(|| {
                DomainError::field(
                    field,
                    format!("unknown scope {part:?}; known: {}", Scope::ALL.map(Scope::as_str).join(", ")),
                )
            })?;
            bits |= scope as u32;
        }
        Ok(Scopes(bits))
    }
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Scope::as_str).collect()
    }
}

/// Key kinds (D2.1); the key id shows the kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Public,
    Campaign,
    Private,
}

impl KeyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyKind::Public => "public",
            KeyKind::Campaign => "campaign",
            KeyKind::Private => "private",
        }
    }
    pub fn prefix(self) -> &'static str {
        match self {
            KeyKind::Public => "wl_pub_",
            KeyKind::Campaign => "wl_cmp_",
            KeyKind::Private => "wl_prv_",
        }
    }
    pub fn parse(s: &str) -> Result<Self, DomainError> {
        match s {
            "public" => Ok(KeyKind::Public),
            "campaign" => Ok(KeyKind::Campaign),
            "private" => Ok(KeyKind::Private),
            _ => Err(DomainError::field("kind", "must be one of private, public, campaign")),
        }
    }
    /// The kind a key id claims by its prefix.
    pub fn of_key_id(key_id: &str) -> Option<Self> {
        [KeyKind::Public, KeyKind::Campaign, KeyKind::Private].into_iter().find(|k| key_id.starts_with(k.prefix()))
    }
}

/// Capabilities beyond scopes. `withdrawals` is the "secret key only" flag (D2.1).
pub const CAPABILITY_WITHDRAWALS: &str = "withdrawals";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_lists_round_trip_and_unknown_names_are_refused() {
        let s = Scopes::parse_csv("scopes", "settings:read, campaigns:write").expect("parses");
        assert!(s.contains(Scope::SettingsRead) && s.contains(Scope::CampaignsWrite));
        assert_eq!(Scopes::parse_csv("scopes", &s.to_csv()), Ok(s));
        assert!(Scopes::parse_csv("scopes", "settings:admin").is_err());
        assert_eq!(s.missing(Scopes::of(&[Scope::SettingsRead, Scope::TicketsRead])), vec!["tickets:read"]);
    }
}

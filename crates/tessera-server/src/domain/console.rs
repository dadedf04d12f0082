//! The console's rules (D17.28–32, D17.43): organization member roles, the pages each role may
//! open, and where each lands after sign-in. No I/O.
use super::check::email;
use super::DomainError;

/// An organization member's role (D17.31).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything.
    Owner,
    /// Campaigns, ticket types, participants, payments read.
    Manager,
    /// Payments, ledger, withdrawals.
    Finance,
    /// The gate page only.
    Gate,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Owner, Role::Manager, Role::Finance, Role::Gate];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Manager => "manager",
            Role::Finance => "finance",
            Role::Gate => "gate",
        }
    }

    pub fn parse(field: &str, raw: &str) -> Result<Role, DomainError> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == raw.trim())
            .ok_or_else(|| DomainError::field(field, "must be one of owner, manager, finance, gate"))
    }

    /// May this role open `page`?
    pub fn may_open(self, page: Page) -> bool {
        use Page::*;
        match self {
            Role::Owner => page != Reseller,
            Role::Manager => matches!(page, Dashboard | Campaigns | Payments),
            Role::Finance => matches!(page, Dashboard | Payments | Ledger | Withdrawals),
            Role::Gate => page == Gate,
        }
    }

    /// The money figures (Gross, Fees, Net, Available, Pending, Held) on the dashboard.
    pub fn sees_money(self) -> bool {
        matches!(self, Role::Owner | Role::Finance)
    }

    /// The activity figures (Tickets sold, Check-ins, Votes) on the dashboard.
    pub fn sees_activity(self) -> bool {
        matches!(self, Role::Owner | Role::Manager)
    }

    /// Where a member lands after sign-in (D17.43).
    pub fn landing(self) -> Page {
        if self == Role::Gate {
            Page::Gate
        } else {
            Page::Dashboard
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The console's pages (D17.43), in navigation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    Dashboard,
    Campaigns,
    Payments,
    Ledger,
    Withdrawals,
    Team,
    Gate,
    Reseller,
}

impl Page {
    pub const ALL: [Page; 8] = [
        Page::Dashboard,
        Page::Campaigns,
        Page::Payments,
        Page::Ledger,
        Page::Withdrawals,
        Page::Team,
        Page::Gate,
        Page::Reseller,
    ];

    /// The page's path (D17.43).
    pub fn path(self) -> &'static str {
        match self {
            Page::Dashboard => "/console",
            Page::Campaigns => "/console/campaigns",
            Page::Payments => "/console/payments",
            Page::Ledger => "/console/ledger",
            Page::Withdrawals => "/console/withdrawals",
            Page::Team => "/console/team",
            Page::Gate => "/console/gate",
            Page::Reseller => "/console/reseller",
        }
    }

    /// Its link text in the navigation.
    pub fn title(self) -> &'static str {
        match self {
            Page::Dashboard => "Dashboard",
            Page::Campaigns => "Campaigns",
            Page::Payments => "Payments",
            Page::Ledger => "Ledger",
            Page::Withdrawals => "Withdrawals",
            Page::Team => "Team",
            Page::Gate => "Gate",
            Page::Reseller => "Reseller",
        }
    }
}

/// A console e-mail: checked for form; matched lower-cased (D17.10), stored as given.
pub fn member_email(field: &str, raw: &str) -> Result<String, DomainError> {
    email(field, raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_open_only_their_areas() {
        assert!(Role::Owner.may_open(Page::Team) && !Role::Owner.may_open(Page::Reseller));
        assert!(Role::Finance.may_open(Page::Ledger) && !Role::Finance.may_open(Page::Campaigns));
        assert!(Role::Manager.may_open(Page::Campaigns) && !Role::Manager.may_open(Page::Ledger));
        assert!(Page::ALL.iter().all(|p| Role::Gate.may_open(*p) == (*p == Page::Gate)));
        assert_eq!(Role::Gate.landing(), Page::Gate);
        assert_eq!(Role::Finance.landing(), Page::Dashboard);
        assert!(Role::parse("role", "admin").is_err());
    }
}

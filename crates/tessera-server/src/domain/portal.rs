//! Reseller portal rules (D10, D15, D16.14–18): roles and the permissions they grant, the
//! profile and member state machines, and who may grant what. No I/O.
use std::collections::BTreeSet;

use super::scopes::Scope;
use super::DomainError;

/// Permissions beyond the API scopes (D10.4).
pub const MEMBERS_MANAGE: &str = "members:manage";
pub const APPROVALS_DECIDE: &str = "approvals:decide";
pub const WITHDRAWALS_APPROVE: &str = "withdrawals:approve";
/// Permissions only an admin may grant (D16.15).
pub const PRIVILEGED: [&str; 3] = [MEMBERS_MANAGE, APPROVALS_DECIDE, WITHDRAWALS_APPROVE];

pub const ROLES: [&str; 5] = ["admin", "manager", "finance", "support", "viewer"];
pub const ADMIN: &str = "admin";

/// Every permission name: the API scopes plus the portal's own three.
pub fn all_permissions() -> Vec<&'static str> {
    Scope::ALL.iter().map(|s| s.as_str()).chain(PRIVILEGED).collect()
}

/// What a role grants (D16.14).
pub fn role_grants(role: &str) -> Vec<&'static str> {
    match role {
        "admin" => all_permissions(),
        "manager" => vec![
            "campaigns:read",
            "campaigns:write",
            "tickets:read",
            "tickets:write",
            "settings:read",
            "settings:write",
            "submissions:write",
            "notifications:write",
            "my-tickets:read",
            APPROVALS_DECIDE,
        ],
        "finance" => vec![
            "payments:write",
            "withdrawals:write",
            WITHDRAWALS_APPROVE,
            "campaigns:read",
            "tickets:read",
            "settings:read",
        ],
        "support" => vec!["campaigns:read", "tickets:read", "tickets:write", "my-tickets:read", "notifications:write"],
        "viewer" => vec!["campaigns:read", "tickets:read", "settings:read"],
        _ => Vec::new(),
    }
}

/// The union of the roles' grants and the member's own permissions.
pub fn effective_permissions(roles: &[String], permissions: &[String]) -> BTreeSet<String> {
    roles.iter().flat_map(|r| role_grants(r)).map(str::to_string).chain(permissions.iter().cloned()).collect()
}

/// Whether granting these roles and permissions needs an admin: a privileged permission, or a
/// role that carries one (admin, manager, finance).
pub fn needs_admin_to_grant(roles: &[String], permissions: &[String]) -> bool {
    permissions.iter().any(|p| PRIVILEGED.contains(&p.as_str()))
        || roles.iter().any(|r| role_grants(r).iter().any(|p| PRIVILEGED.contains(p)))
}

/// A list of distinct names, each from `allowed`; at most 32.
pub fn parse_names(field: &str, items: &[String], allowed: &[&str]) -> Result<Vec<String>, DomainError> {
    if items.len() > 32 {
        return Err(DomainError::field(field, "at most 32 items"));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if !allowed.contains(&item.as_str()) {
            return Err(DomainError::field(format!("{field}[{i}]"), format!("must be one of {}", allowed.join(", "))));
        }
        if !out.contains(item) {
            out.push(item.clone());
        }
    }
    Ok(out)
}

/// Reseller profile states (D10.2).
pub const PROFILE_STATES: [&str; 4] = ["draft", "enabled", "suspended", "disabled"];

/// A profile move from the portal (D10.2, D16.18): draft → enabled | disabled; enabled →
/// suspended | disabled; suspended → disabled (→ enabled is the operator's); disabled is final.
/// Staying is not a move.
pub fn portal_profile_move(from: &str, to: &str) -> Result<(), DomainError> {
    if from == to {
        return Ok(());
    }
    match (from, to) {
        ("draft", "enabled" | "disabled") | ("enabled", "suspended" | "disabled") | ("suspended", "disabled") => Ok(()),
        ("suspended", "enabled") => {
            Err(DomainError::InvalidTransition("a suspended reseller is lifted only by the platform operator".into()))
        }
        _ => Err(DomainError::InvalidTransition(format!("a reseller profile cannot move from {from} to {to}"))),
    }
}

/// A profile move by the operator (`admin reseller set-status`): the portal's moves plus
/// suspended → enabled; disabled stays final.
pub fn operator_profile_move(from: &str, to: &str) -> Result<(), DomainError> {
    if from == "suspended" && to == "enabled" {
        return Ok(());
    }
    portal_profile_move(from, to)
}

/// Member states (D15.2).
pub const MEMBER_STATES: [&str; 4] = ["pending", "active", "suspended", "revoked"];
pub const MEMBER_TYPES: [&str; 5] = ["owner", "operator", "finance", "support", "sub_creator"];

/// pending → active | revoked; active → suspended | revoked; suspended → active | revoked;
/// revoked is final. Staying is not a move.
pub fn member_move(from: &str, to: &str) -> Result<(), DomainError> {
    if from == to {
        return Ok(());
    }
    match (from, to) {
        ("pending", "active" | "revoked")
        | ("active", "suspended" | "revoked")
        | ("suspended", "active" | "revoked") => Ok(()),
        _ => Err(DomainError::InvalidTransition(format!("a member cannot move from {from} to {to}"))),
    }
}

/// Entity types of approval requests (spec "Approval request").
pub const ENTITY_TYPES: [&str; 8] =
    ["member", "campaign", "withdrawal", "payout", "payment_method", "ussd", "provider", "setting"];

/// Purposes of `otp/send` challenges (spec "OTP challenge").
pub const OTP_PURPOSES: [&str; 5] =
    ["login", "signup", "withdrawal_approval", "payment_method_verification", "campaign_approval"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_moves_follow_d10_2_and_only_the_operator_lifts_a_suspension() {
        assert!(portal_profile_move("draft", "enabled").is_ok());
        assert!(portal_profile_move("enabled", "suspended").is_ok());
        assert!(portal_profile_move("suspended", "enabled").is_err());
        assert!(operator_profile_move("suspended", "enabled").is_ok());
        assert!(portal_profile_move("disabled", "enabled").is_err());
        assert!(operator_profile_move("disabled", "enabled").is_err());
        assert!(portal_profile_move("enabled", "draft").is_err());
    }

    #[test]
    fn roles_grant_d16_14_and_privileged_grants_need_an_admin() {
        let p = effective_permissions(&["finance".into()], &[]);
        assert!(p.contains(WITHDRAWALS_APPROVE) && !p.contains(APPROVALS_DECIDE));
        assert!(needs_admin_to_grant(&["manager".into()], &[]));
        assert!(!needs_admin_to_grant(&["support".into()], &["tickets:read".into()]));
        assert!(needs_admin_to_grant(&[], &[MEMBERS_MANAGE.into()]));
        assert_eq!(effective_permissions(&["admin".into()], &[]).len(), all_permissions().len());
    }
}

//! Reseller portal rules (D10, D15, D16.14–19): roles and the permissions they grant, the
//! profile, member and approval-request states and their moves, who may grant what, and the
//! portal's request bodies parsed into types (approval requests, decisions, passcodes). No I/O.
use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::check::{email, free_object, phone, text, Check};
use super::scopes::Scope;
use super::{is_uuid, DomainError};

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

/// A named state with its wire and column spelling (`as_str`, `parse`, `Display`).
macro_rules! status_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $s:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($variant),+ }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($s => Some($name::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

status_enum! {
    /// A reseller profile's state (D10.2).
    ProfileStatus { Draft => "draft", Enabled => "enabled", Suspended => "suspended", Disabled => "disabled" }
}

impl ProfileStatus {
    /// Suspended and disabled resellers still read, but member, approval and otp/send writes
    /// stop (D16.18).
    pub fn is_inactive(self) -> bool {
        matches!(self, ProfileStatus::Suspended | ProfileStatus::Disabled)
    }
}

/// A profile move from the portal (D10.2, D16.18): draft → enabled | disabled; enabled →
/// suspended | disabled; suspended → disabled (→ enabled is the operator's); disabled is final.
/// Staying is not a move.
pub fn portal_profile_move(from: ProfileStatus, to: ProfileStatus) -> Result<(), DomainError> {
    use ProfileStatus::*;
    if from == to {
        return Ok(());
    }
    match (from, to) {
        (Draft, Enabled | Disabled) | (Enabled, Suspended | Disabled) | (Suspended, Disabled) => Ok(()),
        (Suspended, Enabled) => {
            Err(DomainError::InvalidTransition("a suspended reseller is lifted only by the platform operator".into()))
        }
        _ => Err(DomainError::InvalidTransition(format!("a reseller profile cannot move from {from} to {to}"))),
    }
}

/// A profile move by the operator (`admin reseller set-status`): the portal's moves plus
/// suspended → enabled; disabled stays final.
pub fn operator_profile_move(from: ProfileStatus, to: ProfileStatus) -> Result<(), DomainError> {
    if from == ProfileStatus::Suspended && to == ProfileStatus::Enabled {
        return Ok(());
    }
    portal_profile_move(from, to)
}

/// Member states (D15.2).
pub const MEMBER_STATES: [&str; 4] = ["pending", "active", "suspended", "revoked"];
pub const MEMBER_TYPES: [&str; 5] = ["owner", "operator", "finance", "support", "sub_creator"];

status_enum! {
    /// What a member is to the reseller (D15.2); the owner is set by the operator only
    /// (`admin reseller create`).
    MemberType {
        Owner => "owner", Operator => "operator", Finance => "finance", Support => "support",
        SubCreator => "sub_creator",
    }
}

status_enum! {
    /// A member's state (D15.2): `pending` is an invitation or a linked user not yet activated.
    MemberStatus { Pending => "pending", Active => "active", Suspended => "suspended", Revoked => "revoked" }
}

/// pending → active | revoked; active → suspended | revoked; suspended → active | revoked;
/// revoked is final. Staying is not a move.
pub fn member_move(from: MemberStatus, to: MemberStatus) -> Result<(), DomainError> {
    use MemberStatus::*;
    if from == to {
        return Ok(());
    }
    match (from, to) {
        (Pending, Active | Revoked) | (Active, Suspended | Revoked) | (Suspended, Active | Revoked) => Ok(()),
        _ => Err(DomainError::InvalidTransition(format!("a member cannot move from {from} to {to}"))),
    }
}

/// A new member, parsed (`POST …/members`): a linked user or an invitation by e-mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRequest {
    pub user_id: Option<String>,
    /// Lower-cased.
    pub email: Option<String>,
    pub creator_id: Option<String>,
    pub member_type: MemberType,
    pub display_name: Option<String>,
    pub roles: Vec<String>,
    pub permissions: Vec<String>,
}

/// The raw fields of a member body (create or change).
#[derive(Debug, Clone, Copy, Default)]
pub struct MemberFields<'a> {
    pub user_id: Option<&'a str>,
    pub email: Option<&'a str>,
    pub creator_id: Option<&'a str>,
    pub member_type: Option<&'a str>,
    pub display_name: Option<&'a str>,
    pub roles: Option<&'a [String]>,
    pub permissions: Option<&'a [String]>,
    pub status: Option<&'a str>,
}

fn member_type(check: &mut Check, v: Option<&str>) -> Option<MemberType> {
    match v.map(|t| (t, MemberType::parse(t))) {
        None => None,
        Some((_, Some(MemberType::Owner))) => {
            check.fail("memberType", "owner is set by the platform operator, not through the portal");
            None
        }
        Some((_, Some(t))) => Some(t),
        Some((_, None)) => {
            check.fail("memberType", format!("must be one of {}", MEMBER_TYPES[1..].join(", ")));
            None
        }
    }
}

/// The display name, roles and permissions of a member body, each checked.
fn grants(check: &mut Check, f: &MemberFields<'_>) -> (Option<String>, Option<Vec<String>>, Option<Vec<String>>) {
    let display_name = f.display_name.and_then(|d| check.take(text("displayName", d, 1, 255)));
    let roles = f.roles.and_then(|r| check.take(parse_names("roles", r, &ROLES)));
    let all = all_permissions();
    let permissions = f.permissions.and_then(|p| check.take(parse_names("permissions", p, &all)));
    (display_name, roles, permissions)
}

/// Parses a new member's body (member type operator unless named).
pub fn parse_member(f: &MemberFields<'_>) -> Result<MemberRequest, DomainError> {
    let mut check = Check::new();
    if f.user_id.is_some_and(|u| !is_uuid(u)) {
        check.fail("userId", "must be a UUID");
    }
    if f.creator_id.is_some_and(|u| !is_uuid(u)) {
        check.fail("creatorId", "must be a UUID");
    }
    let email = f.email.and_then(|e| check.take(portal_email("email", e)));
    if f.user_id.is_none() && f.email.is_none() {
        check.fail("email", "userId or email is required");
    }
    let kind = member_type(&mut check, f.member_type).unwrap_or(MemberType::Operator);
    let (display_name, roles, permissions) = grants(&mut check, f);
    check.finish()?;
    Ok(MemberRequest {
        user_id: f.user_id.map(str::to_string),
        email,
        creator_id: f.creator_id.map(str::to_string),
        member_type: kind,
        display_name,
        roles: roles.unwrap_or_default(),
        permissions: permissions.unwrap_or_default(),
    })
}

/// A change to a member, parsed (`PATCH …/members/:id`); `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberChange {
    pub member_type: Option<MemberType>,
    pub display_name: Option<String>,
    pub roles: Option<Vec<String>>,
    pub permissions: Option<Vec<String>>,
    pub status: Option<MemberStatus>,
}

/// Parses a member change: at least one field, each checked.
pub fn parse_member_change(f: &MemberFields<'_>) -> Result<MemberChange, DomainError> {
    let mut check = Check::new();
    let kind = member_type(&mut check, f.member_type);
    let (display_name, roles, permissions) = grants(&mut check, f);
    let status = f.status.and_then(|s| {
        let parsed = MemberStatus::parse(s);
        if parsed.is_none() {
            check.fail("status", format!("must be one of {}; got {s:?}", MEMBER_STATES.join(", ")));
        }
        parsed
    });
    if f.member_type.is_none()
        && f.display_name.is_none()
        && f.roles.is_none()
        && f.permissions.is_none()
        && f.status.is_none()
    {
        check.fail("body", "name at least one field to change");
    }
    check.finish()?;
    Ok(MemberChange { member_type: kind, display_name, roles, permissions, status })
}

/// What the portal may not do to a member (D15.2, D16.15): change the owner, or move its
/// status other than the member moves allow.
pub fn portal_member_change(
    before_type: MemberType,
    before: MemberStatus,
    after: MemberStatus,
) -> Result<(), DomainError> {
    if before_type == MemberType::Owner {
        return Err(DomainError::Conflict("the owner member cannot be changed through the portal".into()));
    }
    member_move(before, after)
}

/// Risk levels of a reseller profile.
pub const RISK_LEVELS: [&str; 3] = ["low", "medium", "high"];

/// A change to the reseller profile, parsed (`PATCH …/profile`); `None` leaves a field as it
/// is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileChange {
    pub status: Option<ProfileStatus>,
    pub require_sub_creator_approval: Option<bool>,
    pub allow_public_signup: Option<bool>,
    pub risk_level: Option<String>,
    pub settings: Option<Value>,
}

/// Parses a profile change: at least one field, each checked.
pub fn parse_profile_change(
    status: Option<&str>,
    require_sub_creator_approval: Option<bool>,
    allow_public_signup: Option<bool>,
    risk_level: Option<&str>,
    settings: Option<Value>,
) -> Result<ProfileChange, DomainError> {
    let mut check = Check::new();
    let parsed = status.and_then(|s| {
        let p = ProfileStatus::parse(s);
        if p.is_none() {
            check.fail("status", format!("must be one of {}; got {s:?}", PROFILE_STATES.join(", ")));
        }
        p
    });
    if risk_level.is_some_and(|r| !RISK_LEVELS.contains(&r)) {
        check.fail("riskLevel", format!("must be one of {}", RISK_LEVELS.join(", ")));
    }
    if let Some(s) = &settings {
        check.take(free_object("settings", s));
    }
    if status.is_none()
        && require_sub_creator_approval.is_none()
        && allow_public_signup.is_none()
        && risk_level.is_none()
        && settings.is_none()
    {
        check.fail("body", "name at least one field to change");
    }
    check.finish()?;
    Ok(ProfileChange {
        status: parsed,
        require_sub_creator_approval,
        allow_public_signup,
        risk_level: risk_level.map(str::to_string),
        settings,
    })
}

/// Entity types of approval requests (spec "Approval request").
pub const ENTITY_TYPES: [&str; 8] =
    ["member", "campaign", "withdrawal", "payout", "payment_method", "ussd", "provider", "setting"];

status_enum! {
    /// What an approval request is about; approval changes a member, a campaign or (Tessera's
    /// own requests) a withdrawal, the others are records for the reseller (D16.19).
    ApprovalEntity {
        Member => "member", Campaign => "campaign", Withdrawal => "withdrawal", Payout => "payout",
        PaymentMethod => "payment_method", Ussd => "ussd", Provider => "provider", Setting => "setting",
    }
}

/// Approval request states (D16.19).
pub const APPROVAL_STATES: [&str; 4] = ["pending", "approved", "rejected", "cancelled"];

status_enum! {
    /// An approval request's state: pending until decided (approved, rejected) or withdrawn by
    /// its requester (cancelled); every end is final.
    ApprovalStatus { Pending => "pending", Approved => "approved", Rejected => "rejected", Cancelled => "cancelled" }
}

/// The `status` filter of an approval-request list.
pub fn parse_approval_filter(status: Option<&str>) -> Result<Option<ApprovalStatus>, DomainError> {
    status
        .map(|s| {
            ApprovalStatus::parse(s).ok_or_else(|| {
                DomainError::field("status", format!("must be one of {}; got {s:?}", APPROVAL_STATES.join(", ")))
            })
        })
        .transpose()
}

status_enum! {
    /// A decider's verdict on a pending approval request.
    Decision { Approved => "approved", Rejected => "rejected" }
}

impl Decision {
    pub fn status(self) -> ApprovalStatus {
        match self {
            Decision::Approved => ApprovalStatus::Approved,
            Decision::Rejected => ApprovalStatus::Rejected,
        }
    }
}

/// A new approval request, parsed (`POST …/approval-requests`).
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalFiling {
    pub entity_type: ApprovalEntity,
    pub reason: Option<String>,
    /// A free-form object; `memberId`, `campaignId` and `withdrawalId` are UUIDs when present.
    pub payload: Value,
}

/// Parses the fields of an approval request body.
pub fn parse_filing(
    entity_type: Option<&str>,
    reason: Option<&str>,
    payload: Option<Value>,
) -> Result<ApprovalFiling, DomainError> {
    let mut check = Check::new();
    let entity = match entity_type {
        None => {
            check.fail("entityType", "is required");
            None
        }
        Some(t) => {
            let e = ApprovalEntity::parse(t);
            if e.is_none() {
                check.fail("entityType", format!("must be one of {}", ENTITY_TYPES.join(", ")));
            }
            e
        }
    };
    let reason = reason.and_then(|r| check.take(text("reason", r, 1, 1000)));
    let payload = payload.unwrap_or_else(|| Value::Object(Map::new()));
    check.take(free_object("requestPayload", &payload));
    for key in ["memberId", "campaignId", "withdrawalId"] {
        if payload.get(key).is_some_and(|v| !v.as_str().is_some_and(is_uuid)) {
            check.fail(format!("requestPayload.{key}"), "must be a UUID");
        }
    }
    check.finish()?;
    let entity_type = entity.ok_or_else(|| DomainError::field("entityType", "is required"))?;
    Ok(ApprovalFiling { entity_type, reason, payload })
}

/// What a `PATCH …/approval-requests/:id` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A decider approves or rejects.
    Decide(Decision),
    /// The requester withdraws their own request.
    Cancel,
}

/// A decision body, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRequest {
    pub verdict: Verdict,
    pub note: Option<String>,
}

/// Parses the fields of a decision body (the portal's; the CLI's takes no `cancelled`).
pub fn parse_decision(status: Option<&str>, note: Option<&str>) -> Result<DecisionRequest, DomainError> {
    let mut check = Check::new();
    let verdict = match status {
        Some("cancelled") => Some(Verdict::Cancel),
        Some(s) => Decision::parse(s).map(Verdict::Decide),
        None => None,
    };
    if verdict.is_none() {
        check.fail("status", "must be approved, rejected or cancelled");
    }
    let note = note.and_then(|n| check.take(text("note", n, 1, 1000)));
    check.finish()?;
    let verdict = verdict.ok_or_else(|| DomainError::field("status", "must be approved, rejected or cancelled"))?;
    Ok(DecisionRequest { verdict, note })
}

/// Purposes of `otp/send` challenges (spec "OTP challenge").
pub const OTP_PURPOSES: [&str; 5] =
    ["login", "signup", "withdrawal_approval", "payment_method_verification", "campaign_approval"];

/// A portal e-mail address: valid, then lower-cased whole (users are unique by it, D15.1).
pub fn portal_email(field: &str, raw: &str) -> Result<String, DomainError> {
    email(field, raw).map(|e| e.to_lowercase())
}

/// Where a passcode goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Email,
    Sms,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Email => "email",
            Channel::Sms => "sms",
        }
    }
}

/// An `otp/send` body, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtpSendRequest {
    pub channel: Channel,
    /// A lower-cased e-mail address or an E.164 phone number.
    pub recipient: String,
    /// One of [`OTP_PURPOSES`].
    pub purpose: &'static str,
}

/// Parses the fields of an `otp/send` body (whatsapp is refused: no gateway is configured).
pub fn parse_otp_send(
    channel: Option<&str>,
    recipient: Option<&str>,
    purpose: Option<&str>,
) -> Result<OtpSendRequest, DomainError> {
    let mut check = Check::new();
    let parsed = match channel {
        None => {
            check.fail("channel", "is required");
            None
        }
        Some("email") => Some(Channel::Email),
        Some("sms") => Some(Channel::Sms),
        Some("whatsapp") => {
            check.fail("channel", "whatsapp is not available: no WhatsApp gateway is configured");
            None
        }
        Some(_) => {
            check.fail("channel", "must be one of sms, email, whatsapp");
            None
        }
    };
    let recipient = match (channel, recipient) {
        (_, None) => {
            check.fail("recipient", "is required");
            None
        }
        (Some("sms" | "whatsapp"), Some(r)) => check.take(phone("recipient", r)),
        (_, Some(r)) => check.take(portal_email("recipient", r)),
    };
    let purpose = match purpose {
        None => {
            check.fail("purpose", "is required");
            None
        }
        Some(p) => {
            let known = OTP_PURPOSES.iter().find(|k| **k == p).copied();
            if known.is_none() {
                check.fail("purpose", format!("must be one of {}", OTP_PURPOSES.join(", ")));
            }
            known
        }
    };
    check.finish()?;
    match (parsed, recipient, purpose) {
        (Some(channel), Some(recipient), Some(purpose)) => Ok(OtpSendRequest { channel, recipient, purpose }),
        _ => Err(DomainError::field("body", "validated input missing")),
    }
}

/// A passcode presented for a challenge (`otp/verify`, sign-in, my-tickets verify-otp).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeTry {
    pub challenge_id: String,
    pub code: String,
}

/// Whether a presented code is 6 digits (anything else is a 400 before any store read).
pub fn is_code(code: &str) -> bool {
    code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit())
}

/// Parses the challenge id and code of a verify body.
pub fn parse_code_try(challenge_id: Option<&str>, code: Option<&str>) -> Result<CodeTry, DomainError> {
    let mut check = Check::new();
    let id = challenge_id.filter(|c| !c.is_empty() && c.len() <= 128);
    if id.is_none() {
        check.fail("challengeId", "is required");
    }
    match code {
        None => check.fail("code", "is required"),
        Some(c) if !is_code(c) => check.fail("code", "must be 6 digits"),
        Some(_) => {}
    }
    check.finish()?;
    match (id, code) {
        (Some(i), Some(c)) => Ok(CodeTry { challenge_id: i.to_string(), code: c.to_string() }),
        _ => Err(DomainError::field("body", "validated input missing")),
    }
}

/// A my-tickets `request-otp` body, parsed: the campaign (not yet checked to be a UUID: that
/// is a 404) and the holder's e-mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderPasscodeRequest {
    pub campaign_id: String,
    pub email: String,
}

/// Parses the fields of a my-tickets `request-otp` body.
pub fn parse_holder_passcode(
    campaign_id: Option<&str>,
    mail: Option<&str>,
) -> Result<HolderPasscodeRequest, DomainError> {
    let mut check = Check::new();
    if campaign_id.is_none() {
        check.fail("campaignId", "is required");
    }
    let mail = match mail {
        None => {
            check.fail("email", "is required");
            None
        }
        Some(e) => check.take(email("email", e)),
    };
    check.finish()?;
    match (campaign_id, mail) {
        (Some(c), Some(email)) => Ok(HolderPasscodeRequest { campaign_id: c.to_string(), email }),
        _ => Err(DomainError::field("body", "validated input missing")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_moves_follow_d10_2_and_only_the_operator_lifts_a_suspension() {
        use ProfileStatus::*;
        assert!(portal_profile_move(Draft, Enabled).is_ok());
        assert!(portal_profile_move(Enabled, Suspended).is_ok());
        assert!(portal_profile_move(Suspended, Enabled).is_err());
        assert!(operator_profile_move(Suspended, Enabled).is_ok());
        assert!(portal_profile_move(Disabled, Enabled).is_err());
        assert!(operator_profile_move(Disabled, Enabled).is_err());
        assert!(portal_profile_move(Enabled, Draft).is_err());
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

    #[test]
    fn statuses_read_back_what_they_write_and_only_known_names_parse() {
        for s in APPROVAL_STATES {
            assert_eq!(ApprovalStatus::parse(s).map(ApprovalStatus::as_str), Some(s));
        }
        for s in MEMBER_STATES {
            assert_eq!(MemberStatus::parse(s).map(|m| m.to_string()), Some(s.to_string()));
        }
        assert_eq!(serde_json::json!(ProfileStatus::Enabled), serde_json::json!("enabled"));
        assert_eq!(MemberType::parse("sub_creator"), Some(MemberType::SubCreator));
        assert!(ApprovalStatus::parse("PENDING").is_none());
    }

    #[test]
    fn a_decision_body_is_approved_rejected_or_cancelled_with_an_optional_note() {
        let d = parse_decision(Some("approved"), Some(" ok ")).expect("parse");
        assert_eq!(d, DecisionRequest { verdict: Verdict::Decide(Decision::Approved), note: Some("ok".into()) });
        assert_eq!(parse_decision(Some("cancelled"), None).map(|d| d.verdict), Ok(Verdict::Cancel));
        assert!(parse_decision(Some("pending"), None).is_err());
        assert!(parse_decision(None, None).is_err());
    }

    #[test]
    fn an_otp_send_body_names_every_broken_field_and_refuses_whatsapp() {
        let Err(DomainError::Validation(f)) = parse_otp_send(Some("whatsapp"), None, Some("nap")) else {
            panic!("expected a validation error");
        };
        let fields: Vec<&str> = f.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["channel", "recipient", "purpose"]);
        let ok = parse_otp_send(Some("email"), Some("Ama@Example.com"), Some("login")).expect("parse");
        assert_eq!((ok.channel, ok.recipient.as_str(), ok.purpose), (Channel::Email, "ama@example.com", "login"));
    }
}

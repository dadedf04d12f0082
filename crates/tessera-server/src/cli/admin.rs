//! `tessera admin …`: accounts, domains, keys (and later audit). Each command is a function
//! returning the JSON object it prints, so tests and the demo reuse them.
use serde_json::{json, Value};

use crate::auth::crypto::Keyring;
use crate::auth::keys::{new_key_id, new_secret};
use crate::domain::accounts::{normalize_hostname, parse_slug, AccountStatus};
use crate::domain::scopes::{KeyKind, Scopes, CAPABILITY_WITHDRAWALS};
use crate::domain::time::rfc3339;
use crate::domain::DomainError;
use crate::flows::approvals::ApprovalError;
use crate::store::accounts::Account;
use crate::store::keys::{KeyInfo, NewKey};
use crate::store::{Store, StoreError};

/// An admin failure: a message for stderr and a stable code.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct AdminError {
    pub code: &'static str,
    pub message: String,
}

impl From<DomainError> for AdminError {
    fn from(e: DomainError) -> Self {
        let message = match &e {
            DomainError::Validation(f) => {
                f.iter().map(|f| format!("{}: {}", f.field, f.message)).collect::<Vec<_>>().join("; ")
            }
            other => other.to_string(),
        };
        AdminError { code: "validation_failed", message }
    }
}

impl From<StoreError> for AdminError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => AdminError { code: "not_found", message: format!("{what} not found") },
            StoreError::Conflict(m) => AdminError { code: "conflict", message: m },
            other => AdminError { code: "internal", message: other.to_string() },
        }
    }
}

fn not_found(what: &str, id: &str) -> AdminError {
    AdminError { code: "not_found", message: format!("no {what} {id:?}") }
}

pub type AdminResult = Result<Value, AdminError>;

fn account_json(a: &Account) -> Value {
    json!({"id": a.id, "slug": a.slug, "platformName": a.platform_name, "status": a.status.as_str(), "createdAt": rfc3339(a.created_at)})
}

async fn account(store: &Store, slug: &str) -> Result<Account, AdminError> {
    store.account_by_slug(slug).await.map_err(|e| match e {
        StoreError::NotFound(_) => not_found("account", slug),
        other => other.into(),
    })
}

pub async fn account_create(store: &Store, slug: &str, name: &str, status: &str) -> AdminResult {
    let slug = parse_slug("slug", slug, 64)?;
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 255 {
        return Err(DomainError::field("name", "must be 1 to 255 characters").into());
    }
    let status = AccountStatus::parse(status)?;
    Ok(account_json(&store.create_account(&slug, name, status).await?))
}

pub async fn account_set_status(store: &Store, slug: &str, status: &str) -> AdminResult {
    let status = AccountStatus::parse(status)?;
    match store.set_account_status(slug, status).await {
        Ok(a) => Ok(account_json(&a)),
        Err(StoreError::NotFound(_)) => Err(not_found("account", slug)),
        Err(e) => Err(e.into()),
    }
}

pub async fn account_list(store: &Store) -> AdminResult {
    let accounts: Vec<Value> = store.list_accounts().await?.iter().map(account_json).collect();
    Ok(json!({ "accounts": accounts }))
}

pub async fn domain_add(store: &Store, slug: &str, hostname: &str, primary: bool, verified: bool) -> AdminResult {
    let acct = account(store, slug).await?;
    let host = normalize_hostname(hostname).ok_or_else(|| {
        AdminError::from(DomainError::field("hostname", "must be a bare hostname: no scheme, port or path"))
    })?;
    let d = store.add_domain(&acct.id, &host, primary, verified).await?;
    Ok(json!({"hostname": d.hostname, "isPrimary": d.is_primary, "sslStatus": d.ssl_status, "verified": d.verified}))
}

fn key_json(k: &KeyInfo) -> Value {
    json!({
        "keyId": k.key_id,
        "kind": k.kind.as_str(),
        "scopes": k.scopes.names(),
        "capabilities": k.capabilities,
        "campaignId": k.campaign_id,
        "status": k.status,
        "createdAt": rfc3339(k.created_at),
        "revokedAt": k.revoked_at.map(rfc3339),
    })
}

/// Creates a key; the secret is in the answer and nowhere else, ever.
pub async fn key_create(
    store: &Store,
    keyring: &Keyring,
    slug: &str,
    kind: &str,
    campaign: Option<&str>,
    scopes: &str,
    capabilities: &[String],
) -> AdminResult {
    let acct = account(store, slug).await?;
    let kind = KeyKind::parse(kind)?;
    let scopes = Scopes::parse_csv("scopes", scopes)?;
    if scopes == Scopes::empty() {
        return Err(DomainError::field("scopes", "at least one scope is required").into());
    }
    if kind != KeyKind::Private {
        if let Some(s) = scopes.iter().find(|s| !s.is_safe_read()) {
            return Err(DomainError::field(
                "scopes",
                format!("{} is not allowed on a {} key (browser keys carry settings:read, campaigns:read, tickets:read only)", s.as_str(), kind.as_str()),
            )
            .into());
        }
    }
    for c in capabilities {
        if c != CAPABILITY_WITHDRAWALS {
            return Err(
                DomainError::field("capability", format!("unknown capability {c:?}; known: withdrawals")).into()
            );
        }
        if kind != KeyKind::Private {
            return Err(DomainError::field("capability", "withdrawals is a private (secret) key capability").into());
        }
    }
    match (kind, campaign) {
        (KeyKind::Campaign, None) => {
            return Err(DomainError::field("campaign", "a campaign key needs --campaign").into())
        }
        (KeyKind::Campaign, Some(id)) if !store.campaign_exists(&acct.id, id).await? => {
            return Err(not_found("campaign of this account", id))
        }
        (KeyKind::Campaign, Some(_)) => {}
        (_, Some(_)) => return Err(DomainError::field("campaign", "only campaign keys take --campaign").into()),
        _ => {}
    }
    let key_id = new_key_id(kind);
    let secret = new_secret();
    let (secret_hash, secret_sealed) = match kind {
        KeyKind::Private => (None, Some(keyring.encrypt(&key_id, &secret))),
        _ => (Some(keyring.hash_secret(&secret)), None),
    };
    let mut caps = capabilities.to_vec();
    caps.dedup();
    let info = store
        .insert_key(NewKey {
            key_id: &key_id,
            account_id: &acct.id,
            kind,
            campaign_id: campaign,
            scopes,
            capabilities: &caps,
            secret_hash,
            secret_sealed,
        })
        .await?;
    Ok(json!({
        "keyId": info.key_id,
        "secret": secret,
        "key": format!("{key_id}:{secret}"),
        "kind": kind.as_str(),
        "scopes": scopes.names(),
        "capabilities": info.capabilities,
        "campaignId": info.campaign_id,
        "account": acct.slug,
    }))
}

pub async fn key_list(store: &Store, slug: &str) -> AdminResult {
    let acct = account(store, slug).await?;
    let keys: Vec<Value> = store.list_keys(&acct.id).await?.iter().map(key_json).collect();
    Ok(json!({ "account": acct.slug, "keys": keys }))
}

pub async fn key_revoke(store: &Store, key_id: &str) -> AdminResult {
    match store.revoke_key(key_id).await {
        Ok(k) => Ok(key_json(&k)),
        Err(StoreError::NotFound(_)) => Err(not_found("key", key_id)),
        Err(e) => Err(e.into()),
    }
}

/// `admin audit list`: the account's audit entries, newest first.
pub async fn audit_list(store: &Store, slug: &str, limit: i64) -> AdminResult {
    if !(1..=1000).contains(&limit) {
        return Err(DomainError::field("limit", "must be 1 to 1000").into());
    }
    let acct = account(store, slug).await?;
    let entries: Vec<Value> = store
        .audit_entries(&acct.id, limit)
        .await?
        .into_iter()
        .map(|e| {
            json!({
                "id": e.id, "keyId": e.key_id, "action": e.action, "entityType": e.entity_type, "entityId": e.entity_id,
                "summary": e.summary, "requestId": e.request_id, "createdAt": rfc3339(e.created_at),
            })
        })
        .collect();
    Ok(json!({ "account": acct.slug, "entries": entries }))
}

/// `admin ledger check`: the money audit of one account or all. The report says `ok: false`
/// with every discrepancy when a figure does not add up (the command then exits 1).
pub async fn ledger_check(store: &Store, slug: Option<&str>) -> AdminResult {
    if let Some(s) = slug {
        account(store, s).await?;
    }
    let found = store.check_ledger(slug).await?;
    Ok(json!({ "ok": found.is_empty(), "account": slug, "discrepancies": found }))
}

fn approval_json(r: &crate::store::approvals::ApprovalRequest) -> Value {
    json!({
        "id": r.id,
        "account": r.account_slug,
        "entityType": r.entity_type,
        "status": r.status,
        "reason": r.reason,
        "requestPayload": r.request_payload,
        "requestedBy": r.requested_by,
        "decidedBy": r.decided_by,
        "note": r.note,
        "createdAt": rfc3339(r.created_at),
        "decidedAt": r.decided_at.map(rfc3339),
    })
}

/// `admin approval list [--account SLUG]`: approval requests (D14.2, D16.19), oldest first.
pub async fn approval_list(store: &Store, slug: Option<&str>) -> AdminResult {
    let account_id = match slug {
        Some(s) => Some(account(store, s).await?.id),
        None => None,
    };
    let requests = crate::flows::approvals::list(store, account_id.as_deref(), None).await.map_err(approval_error)?;
    let requests: Vec<Value> = requests.iter().map(approval_json).collect();
    Ok(json!({ "account": slug, "approvals": requests }))
}

/// `admin approval decide --id ID --status approved|rejected [--note TEXT]`: an operator decides
/// any approval request; its effect (a withdrawal paid out or cancelled) is applied with it.
pub async fn approval_decide(store: &Store, id: &str, status: &str, note: Option<&str>) -> AdminResult {
    use crate::domain::portal::Decision;
    let decision = Decision::parse(status)
        .ok_or_else(|| AdminError::from(DomainError::field("status", "must be approved or rejected")))?;
    let note = note.map(str::trim).filter(|n| !n.is_empty());
    if note.is_some_and(|n| n.chars().count() > 1000) {
        return Err(DomainError::field("note", "must be at most 1000 characters").into());
    }
    let now = crate::domain::time::now_ms();
    match crate::flows::approvals::decide_as_operator(store, id, decision, note, now).await {
        Ok(r) => Ok(approval_json(&r)),
        Err(ApprovalError::Store(StoreError::NotFound(_))) => Err(not_found("approval request", id)),
        Err(e) => Err(approval_error(e)),
    }
}

fn approval_error(e: ApprovalError) -> AdminError {
    match e {
        ApprovalError::Store(s) => s.into(),
        other => AdminError { code: "insufficient_scope", message: other.to_string() },
    }
}

fn profile_json(slug: &str, p: &crate::store::portal::Profile) -> Value {
    json!({
        "account": slug, "id": p.id, "status": p.status, "requireSubCreatorApproval": p.require_sub_creator_approval,
        "allowPublicSignup": p.allow_public_signup, "riskLevel": p.risk_level, "updatedAt": rfc3339(p.updated_at),
    })
}

/// `admin reseller create --account SLUG --owner-email E` (D15.1): the account's reseller
/// profile (draft) and its owner (user, member type owner, role admin, active).
pub async fn reseller_create(store: &Store, slug: &str, owner_email: &str) -> AdminResult {
    let acct = account(store, slug).await?;
    let email = crate::domain::portal::portal_email("owner-email", owner_email)?;
    let (profile, owner) = store.create_reseller(&acct.id, &email, crate::domain::time::now_ms()).await?;
    let mut out = profile_json(&acct.slug, &profile);
    out["owner"] = json!({"memberId": owner.id, "userId": owner.user_id, "email": owner.email, "memberType": owner.member_type, "roles": owner.roles, "status": owner.status});
    Ok(out)
}

/// `admin reseller set-status --account SLUG --status enabled|suspended|disabled` (D16.18): the
/// operator's moves, which alone lift a suspension. Sessions read the profile on every
/// request, so a running server sees the change at once.
pub async fn reseller_set_status(store: &Store, slug: &str, status: &str) -> AdminResult {
    use crate::domain::portal::ProfileChange as ProfilePatch;
    use crate::store::portal::Actor;
    if !["enabled", "suspended", "disabled"].contains(&status) {
        return Err(DomainError::field("status", "must be enabled, suspended or disabled").into());
    }
    let acct = account(store, slug).await?;
    let patch = ProfilePatch { status: crate::domain::portal::ProfileStatus::parse(status), ..ProfilePatch::default() };
    let moved = store
        .update_reseller_profile(
            &acct.id,
            &patch,
            crate::domain::portal::operator_profile_move,
            &Actor::operator(),
            crate::domain::time::now_ms(),
        )
        .await;
    match moved {
        Ok(p) => Ok(profile_json(&acct.slug, &p)),
        Err(crate::store::UpdateError::Domain(DomainError::InvalidTransition(m))) => {
            Err(AdminError { code: "invalid_transition", message: m })
        }
        Err(crate::store::UpdateError::Domain(d)) => Err(d.into()),
        Err(crate::store::UpdateError::Store(s)) => Err(s.into()),
        Err(crate::store::UpdateError::Raced) => Err(AdminError { code: "conflict", message: "retry".into() }),
    }
}

/// `admin session create --email E` (D15.1): a portal session for an existing user with an
/// active member; the token is in the answer and nowhere else.
pub async fn session_create(store: &Store, keyring: &Keyring, email: &str) -> AdminResult {
    use crate::flows::customer_access::{operator_session, AccessError};
    let email = crate::domain::portal::portal_email("email", email)?;
    match operator_session(store, keyring, &email, crate::domain::time::now_ms()).await {
        Ok(s) => Ok(json!({"token": s.token, "expiresAt": rfc3339(s.expires_at)})),
        Err(AccessError::Store(StoreError::NotFound(what))) => Err(not_found(what, &email)),
        Err(AccessError::Store(e)) => Err(e.into()),
        Err(e) => Err(AdminError { code: "internal", message: e.to_string() }),
    }
}

fn member_json(slug: &str, m: &crate::store::console::OrgMember) -> Value {
    json!({"account": slug, "id": m.id, "email": m.email, "role": m.role, "createdAt": rfc3339(m.created_at)})
}

/// `admin member add --account SLUG --email E --role owner|manager|finance|gate` (D17.28).
pub async fn member_add(store: &Store, slug: &str, email: &str, role: &str) -> AdminResult {
    use crate::domain::console::{member_email, Role};
    let acct = account(store, slug).await?;
    let email = member_email("email", email)?;
    let role = Role::parse("role", role)?;
    let actor = crate::store::console::TeamActor::default();
    let m =
        crate::flows::console::add_member(store, &acct.id, &email, role, &actor, crate::domain::time::now_ms()).await?;
    Ok(member_json(&acct.slug, &m))
}

/// `admin member list --account SLUG` (D17.43).
pub async fn member_list(store: &Store, slug: &str) -> AdminResult {
    let acct = account(store, slug).await?;
    let members: Vec<Value> = store.org_members(&acct.id).await?.iter().map(|m| member_json(&acct.slug, m)).collect();
    Ok(json!({"account": acct.slug, "members": members}))
}

/// `admin member remove --account SLUG --email E` (D17.43): ends that member's sessions.
pub async fn member_remove(store: &Store, slug: &str, email: &str) -> AdminResult {
    let acct = account(store, slug).await?;
    let m = match store.org_member_by_email(&acct.id, email.trim()).await {
        Ok(m) => m,
        Err(StoreError::NotFound(what)) => return Err(not_found(what, email)),
        Err(e) => return Err(e.into()),
    };
    let actor = crate::store::console::TeamActor::default();
    let gone = crate::flows::console::remove_member(store, &acct.id, &m.id, &actor).await?;
    let mut out = member_json(&acct.slug, &gone);
    out["removed"] = json!(true);
    Ok(out)
}

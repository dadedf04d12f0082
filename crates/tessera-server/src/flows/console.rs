//! Console sign-in and sessions (D17.28, D17.43): one page signs in organization members and
//! reseller portal users.
//! - Step one mails a passcode (the D8.2 limits, answer and store work alike whether or not the
//!   address is anyone's) to an organization member or a reseller member or invitation.
//! - Step two, in one transaction with the passcode's use, opens an organization member's
//!   console session (`tcs_` token, `console_sessions`) or, for an address that is only a
//!   reseller's, a portal session (`tps_`, exactly as the portal's own sign-in). The cookie holds
//!   the token; both are 12 h sliding and stored as keyed hashes.
//! - Every form of a session carries a CSRF token derived from the session's hash, so it needs
//!   no row and dies with the session.
use serde_json::json;

use super::customer_access::{
    accept_sign_in, commit, open_member_session, portal_session, slid_end, AccessResult, Issued, Passcode,
    PORTAL_SESSION_MS,
};
use crate::auth::crypto::Keyring;
use crate::auth::sessions::new_token;
use crate::domain::console::{Page, Role};
use crate::domain::portal::CodeTry;
use crate::store::console::{self as console_store, Membership, OrgMember, TeamActor};
use crate::store::portal::PortalSession;
use crate::store::{Store, StoreError, StoreResult};

/// The purpose of console sign-in challenges (only these open a console session).
const CONSOLE_SIGN_IN: &str = "console_sign_in";
/// The prefix of organization members' session tokens (portal users' are `tps_`).
pub const MEMBER_TOKEN_PREFIX: &str = "tcs_";

/// Who a console session belongs to.
#[derive(Debug, Clone)]
pub enum Signed {
    /// An organization member (D17.28), and how many memberships its e-mail has.
    Member { session_hash: String, member: OrgMember, memberships: i64 },
    /// A reseller portal user (D17.30 "reseller console").
    Reseller(Box<PortalSession>),
}

impl Signed {
    /// The keyed hash of the session's token (the CSRF binding and sign-out's key).
    pub fn session_hash(&self) -> &str {
        match self {
            Signed::Member { session_hash, .. } => session_hash,
            Signed::Reseller(s) => &s.token_hash,
        }
    }

    pub fn account_id(&self) -> &str {
        match self {
            Signed::Member { member, .. } => &member.account_id,
            Signed::Reseller(s) => &s.member.account_id,
        }
    }
}

/// Step one: a challenge for the e-mail; the passcode goes only to a member or reseller user.
pub async fn request_sign_in(store: &Store, keyring: &Keyring, email: &str, now: i64) -> AccessResult<Issued> {
    let mut send = Passcode::sign_in(email, CONSOLE_SIGN_IN);
    send.throttle(store, now).await?;
    let account = match store.sign_in_org_member(email).await? {
        Some(m) => Some(m.account_id),
        None => store.sign_in_account(email).await?,
    };
    send.account_id = account.as_deref();
    let mail = account.as_ref().map(|_| json!({"action": "sign in to the console"}));
    send.issue(store, keyring, mail, now).await
}

/// A session opened: the cookie's token, its end, and where its holder lands.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub token: String,
    pub expires_at: i64,
    /// `None`: a reseller user (lands on the reseller page).
    pub role: Option<Role>,
}

impl SignedIn {
    /// Where the session's holder lands (D17.43).
    pub fn landing(&self) -> Page {
        self.role.map(Role::landing).unwrap_or(Page::Reseller)
    }
}

/// Step two: one try at the code; a right one opens the session in the same transaction.
pub async fn verify_sign_in(
    store: &Store,
    keyring: &Keyring,
    attempt: &CodeTry,
    request_id: Option<String>,
    now: i64,
) -> AccessResult<SignedIn> {
    let (c, mut tx) = accept_sign_in(store, keyring, attempt, CONSOLE_SIGN_IN, now).await?;
    let member = store.sign_in_org_member(&c.recipient).await?;
    let opened = match member {
        Some(m) => {
            let token = new_token(MEMBER_TOKEN_PREFIX);
            let expires_at = now + PORTAL_SESSION_MS;
            console_store::insert_session(&mut tx, &keyring.hash_secret(&token), &m, expires_at, request_id, now)
                .await?;
            SignedIn { token, expires_at, role: Some(m.role) }
        }
        None => {
            let o = open_member_session(&mut tx, keyring, &c.recipient, request_id, now).await?;
            SignedIn { token: o.token, expires_at: o.expires_at, role: None }
        }
    };
    commit(tx).await?;
    Ok(opened)
}

/// The live session of a cookie's token (`None`: unknown, expired, ended, member removed). A
/// use slides its end to 12 hours from now.
pub async fn session(store: &Store, keyring: &Keyring, token: &str, now: i64) -> AccessResult<Option<Signed>> {
    if !token.starts_with(MEMBER_TOKEN_PREFIX) {
        return Ok(portal_session(store, keyring, token, now).await?.map(|s| Signed::Reseller(Box::new(s))));
    }
    let Some(s) = store.console_session(&keyring.hash_secret(token), now).await? else {
        return Ok(None);
    };
    if !keyring.secret_matches(token, &s.token_hash) {
        return Ok(None);
    }
    if let Some(slid) = slid_end(s.expires_at, now) {
        store.touch_console_session(&s.token_hash, slid).await?;
    }
    Ok(Some(Signed::Member { session_hash: s.token_hash, member: s.member, memberships: s.memberships }))
}

/// Switches a member's session to another of its `memberships` (the caller's, read with its
/// session: the same e-mail, accounts not revoked). D17.28: proving the address with the
/// passcode signed the person in; which of its accounts they work in is a choice. In one
/// transaction the current session ends and the new one opens, audited. A member id not among
/// them, or a reseller user's session: 404.
pub async fn switch(
    store: &Store,
    keyring: &Keyring,
    signed: &Signed,
    memberships: &[Membership],
    member_id: &str,
    request_id: Option<String>,
    now: i64,
) -> StoreResult<SignedIn> {
    let Signed::Member { session_hash, .. } = signed else { return Err(StoreError::NotFound("account")) };
    let target =
        memberships.iter().map(|m| &m.member).find(|m| m.id == member_id).ok_or(StoreError::NotFound("account"))?;
    let token = new_token(MEMBER_TOKEN_PREFIX);
    let expires_at = now + PORTAL_SESSION_MS;
    let mut tx = store.begin().await?;
    console_store::end_session(&mut tx, session_hash).await?;
    console_store::insert_session(&mut tx, &keyring.hash_secret(&token), target, expires_at, request_id, now).await?;
    tx.commit().await?;
    Ok(SignedIn { token, expires_at, role: Some(target.role) })
}

/// Sign-out: the session ends.
pub async fn sign_out(store: &Store, signed: &Signed, request_id: Option<String>, now: i64) -> AccessResult<()> {
    match signed {
        Signed::Member { session_hash, .. } => Ok(store.end_console_session(session_hash).await?),
        Signed::Reseller(s) => {
            let actor = crate::store::portal::Actor {
                user_id: Some(s.user_id.clone()),
                member_id: Some(s.member.id.clone()),
                request_id,
            };
            super::customer_access::sign_out(store, s, &actor, now).await
        }
    }
}

/// The CSRF token of a session's forms (D17.28): a keyed hash of the session's own hash.
pub fn csrf_token(keyring: &Keyring, binding: &str) -> String {
    keyring.hash_secret(&format!("csrf:{binding}"))
}

/// Constant-time check of a form's CSRF token.
pub fn csrf_ok(keyring: &Keyring, binding: &str, presented: &str) -> bool {
    keyring.secret_matches(&format!("csrf:{binding}"), presented)
}

/// Adds a member (the CLI and the team page).
pub async fn add_member(
    store: &Store,
    account_id: &str,
    email: &str,
    role: Role,
    actor: &TeamActor,
    now: i64,
) -> StoreResult<OrgMember> {
    store.add_org_member(account_id, email, role, actor, now).await
}

/// Removes a member and ends its sessions (the last owner stays: 409).
pub async fn remove_member(
    store: &Store,
    account_id: &str,
    member_id: &str,
    actor: &TeamActor,
) -> StoreResult<OrgMember> {
    store.remove_org_member(account_id, member_id, actor).await
}

//! Customer access (D8, D10.1, D15.4, D16.16, D16.17): one-time passcodes and the sessions they
//! open, for ticket holders (my-tickets) and reseller-portal members (sign-in, `otp/send` and
//! `otp/verify`). The rules live here:
//! - who gets a code: a ticket holder of the campaign, an active member or invitation of a
//!   reseller, anyone `otp/send` names. The answer and the store work are the same whether or
//!   not the recipient qualifies: a challenge is always written, the passcode is queued only for
//!   one who does;
//! - the limits of D8.2: one code per recipient (and campaign) a minute, 5 an hour; a code
//!   lives 10 minutes and locks after 5 wrong tries; a challenge opens only what its purpose
//!   says, once;
//! - sessions: a holder's lives 24 hours, a member's 12 hours after its last use (slid at most
//!   once a minute); tokens and codes are stored as keyed hashes and never logged.
//!
//! A try at a code runs in one store transaction with what a right code opens.
use serde_json::{json, Value};

use crate::auth::crypto::Keyring;
use crate::auth::sessions::{code_hash, code_matches, new_code, new_token};
use crate::domain::notifications::{PASSCODE_EVENT, PORTAL_PASSCODE_EVENT};
use crate::domain::portal::{Channel, CodeTry, OtpSendRequest};
use crate::domain::DomainError;
use crate::store::customers::{self, Challenge, CustomerSession, NewChallenge, RecentSends};
use crate::store::notifications::NewNotification;
use crate::store::portal::{self as portal_store, Actor, Member, PortalSession};
use crate::store::tickets::Ticket;
use crate::store::{Store, StoreError, StoreTx};

/// A passcode lives 10 minutes (D8.2).
pub const CODE_LIFE_MS: i64 = 10 * 60_000;
/// One passcode per recipient (and campaign, for my-tickets) per minute (D8.2).
pub const RESEND_COOLDOWN_MS: i64 = 60_000;
/// At most 5 passcodes per recipient per hour (D8.2).
pub const SENDS_PER_HOUR: i64 = 5;
/// 5 wrong codes lock a challenge (D8.2).
pub const MAX_ATTEMPTS: i64 = 5;
/// A holder's session lives 24 hours (D8.3).
pub const HOLDER_SESSION_MS: i64 = 24 * 3_600_000;
/// A portal session lives 12 hours after its last use (D10.1).
pub const PORTAL_SESSION_MS: i64 = 12 * 3_600_000;
/// A session (the portal's or the console's) is written back (its expiry slid) at most once a
/// minute.
const SLIDE_EVERY_MS: i64 = 60_000;

/// The new end of a session of the portal or the console used at `now` (12 hours on), when it
/// is due to be written back; `None` while the stored end is less than [`SLIDE_EVERY_MS`] old,
/// so a busy session is not written on every request.
pub(super) fn slid_end(expires_at: i64, now: i64) -> Option<i64> {
    let slid = now + PORTAL_SESSION_MS;
    (slid - expires_at >= SLIDE_EVERY_MS).then_some(slid)
}

/// The purpose of my-tickets challenges in the shared challenge table.
const MY_TICKETS: &str = "my_tickets";
/// The purpose of portal sign-in challenges; only these open a portal session (D16.16).
const PORTAL_SIGN_IN: &str = "portal_sign_in";
/// Stored purposes of `otp/send` challenges carry this prefix, so that no other kind of
/// challenge is accepted where these are, and the other way round.
const OTP_SEND: &str = "otp_send:";

/// What checking a code found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verified {
    /// Right code: the challenge is consumed (what it opens is written in the same transaction).
    Accepted,
    /// Wrong code; tries left.
    Wrong {
        remaining: i64,
    },
    /// Five wrong tries before: no code is accepted any more.
    Locked,
    Expired,
    /// Already exchanged.
    Used,
}

/// A send refused by the D8.2 limits: wait this long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Throttled {
    pub retry_after_secs: u64,
    pub message: &'static str,
}

/// What customer access refuses.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Invalid(#[from] DomainError),
    /// The D8.2 send limits (429).
    #[error("{}", .0.message)]
    Throttled(Throttled),
    /// A code that did not open what was asked: wrong, locked, expired or used.
    #[error("passcode refused")]
    Refused(Verified),
    /// The code was right but the e-mail has no active or invited member any more (nothing
    /// written).
    #[error("no member")]
    NoMember,
    /// A holder's session token that is unknown or expired.
    #[error("unknown or expired session")]
    UnknownSession,
    /// Absent, or of another account, campaign or purpose (404 `what`).
    #[error("{0} not found")]
    NotFound(&'static str),
}

pub type AccessResult<T> = Result<T, AccessError>;

/// A challenge made: give its id back with the code.
#[derive(Debug, Clone)]
pub struct Issued {
    pub challenge_id: String,
    pub expires_at: i64,
}

/// A session opened: the token (shown once) and when it ends.
#[derive(Debug, Clone)]
pub struct Opened {
    pub token: String,
    pub expires_at: i64,
}

fn secs(ms: i64) -> u64 {
    u64::try_from((ms + 999) / 1000).unwrap_or(1).max(1)
}

/// The resend cooldown and the hourly cap of D8.2 over the recipient's recent challenges.
pub fn send_allowed(recent: &RecentSends, now: i64) -> Result<(), Throttled> {
    if let Some(newest) = recent.newest_in_campaign.filter(|t| now - t < RESEND_COOLDOWN_MS) {
        return Err(Throttled {
            retry_after_secs: secs(newest + RESEND_COOLDOWN_MS - now),
            message: "a passcode was sent to this address less than 60 seconds ago",
        });
    }
    if recent.last_hour >= SENDS_PER_HOUR {
        let oldest = recent.oldest_in_hour.unwrap_or(now);
        return Err(Throttled {
            retry_after_secs: secs(oldest + 3_600_000 - now),
            message: "5 passcodes were sent to this address in the last hour",
        });
    }
    Ok(())
}

/// Who a passcode is for and what it confirms.
pub(super) struct Passcode<'a> {
    pub(super) account_id: Option<&'a str>,
    pub(super) campaign_id: Option<&'a str>,
    pub(super) channel: Channel,
    pub(super) recipient: &'a str,
    pub(super) purpose: &'a str,
    pub(super) event: &'static str,
}

impl<'a> Passcode<'a> {
    /// A sign-in passcode for `email` (the portal's or the console's `purpose`), mailed with the
    /// portal's passcode event; its account is set once the e-mail is known to belong to one.
    pub(super) fn sign_in(email: &'a str, purpose: &'a str) -> Self {
        Passcode {
            account_id: None,
            campaign_id: None,
            channel: Channel::Email,
            recipient: email,
            purpose,
            event: PORTAL_PASSCODE_EVENT,
        }
    }

    /// 429 when the recipient had a code too recently or too often (D8.2).
    pub(super) async fn throttle(&self, store: &Store, now: i64) -> AccessResult<()> {
        let recent =
            store.recent_challenges(self.account_id, self.campaign_id, self.purpose, self.recipient, now).await?;
        send_allowed(&recent, now).map_err(AccessError::Throttled)
    }

    /// Writes the challenge and, when `mail` is given, queues the passcode with `mail`'s fields
    /// (plus `code` and `minutes`) in the same transaction.
    pub(super) async fn issue(
        &self,
        store: &Store,
        keyring: &Keyring,
        mail: Option<Value>,
        now: i64,
    ) -> AccessResult<Issued> {
        let id = new_token("otp_");
        let code = new_code();
        let hash = code_hash(keyring, &id, &code);
        let expires_at = now + CODE_LIFE_MS;
        let payload = mail.map(|mut p| {
            p["code"] = json!(code);
            p["minutes"] = json!(CODE_LIFE_MS / 60_000);
            p
        });
        let notify = payload.as_ref().map(|payload| NewNotification {
            channel: self.channel.as_str(),
            event_type: self.event,
            recipient: self.recipient,
            subject: None,
            payload,
        });
        let challenge = NewChallenge {
            id: &id,
            account_id: self.account_id,
            campaign_id: self.campaign_id,
            channel: self.channel.as_str(),
            recipient: self.recipient,
            purpose: self.purpose,
            code_hash: &hash,
            expires_at,
        };
        store.create_challenge(&challenge, notify, now).await?;
        Ok(Issued { challenge_id: id, expires_at })
    }
}

/// One try at a challenge, in the caller's transaction (which also writes what a right code
/// opens). A right code consumes the challenge; a wrong one counts. Only `Accepted` and `Wrong`
/// wrote.
pub(super) async fn try_code(tx: &mut StoreTx, c: &Challenge, matches: bool, now: i64) -> AccessResult<Verified> {
    if c.consumed_at.is_some() {
        return Ok(Verified::Used);
    }
    if c.attempts >= MAX_ATTEMPTS {
        return Ok(Verified::Locked);
    }
    if now >= c.expires_at {
        return Ok(Verified::Expired);
    }
    if !matches {
        let counted = customers::count_wrong_try(tx, &c.id, MAX_ATTEMPTS).await?;
        return Ok(if counted {
            Verified::Wrong { remaining: MAX_ATTEMPTS - c.attempts - 1 }
        } else {
            Verified::Locked
        });
    }
    let consumed = customers::consume_challenge(tx, &c.id, MAX_ATTEMPTS, now).await?;
    Ok(if consumed { Verified::Accepted } else { Verified::Used })
}

pub(super) async fn commit(tx: StoreTx) -> AccessResult<()> {
    tx.commit().await?;
    Ok(())
}

// ---- my-tickets (D8) ----

/// A campaign key (or a campaignId naming another campaign than the key's) sees only its own.
fn scoped(key_campaign: Option<&str>, campaign: &str) -> bool {
    key_campaign.is_none_or(|own| own == campaign)
}

/// `my-tickets/request-otp`: a challenge for the e-mail in the campaign; the passcode is mailed
/// only when the address holds tickets there.
pub async fn request_holder_passcode(
    store: &Store,
    keyring: &Keyring,
    account_id: &str,
    key_campaign: Option<&str>,
    campaign_id: &str,
    email: &str,
    now: i64,
) -> AccessResult<Issued> {
    if !scoped(key_campaign, campaign_id) {
        return Err(AccessError::NotFound("campaign"));
    }
    let title = store.campaign(account_id, campaign_id).await?.title;
    // Matched in lower case (D17.10): the challenge, its throttle and the session it opens name
    // the address lower-cased; tickets keep the address as the buyer gave it.
    let email = &email.to_lowercase();
    let send = Passcode {
        account_id: Some(account_id),
        campaign_id: Some(campaign_id),
        channel: Channel::Email,
        recipient: email,
        purpose: MY_TICKETS,
        event: PASSCODE_EVENT,
    };
    send.throttle(store, now).await?;
    let holds = !store.holder_tickets(account_id, campaign_id, email).await?.is_empty();
    let mail = holds.then(|| json!({"campaignId": campaign_id, "campaign": title}));
    send.issue(store, keyring, mail, now).await
}

/// `my-tickets/verify-otp`: a right code opens a holder session for the challenge's campaign
/// and e-mail, in the transaction that consumes the challenge.
pub async fn verify_holder_passcode(
    store: &Store,
    keyring: &Keyring,
    account_id: &str,
    key_campaign: Option<&str>,
    attempt: &CodeTry,
    now: i64,
) -> AccessResult<Opened> {
    let challenge = store.challenge(Some(account_id), &attempt.challenge_id).await?;
    if challenge.purpose != MY_TICKETS {
        return Err(AccessError::NotFound("challenge"));
    }
    if challenge.campaign_id.as_deref().is_some_and(|c| !scoped(key_campaign, c)) {
        return Err(AccessError::NotFound("challenge"));
    }
    let matches = code_matches(keyring, &challenge.id, &attempt.code, &challenge.code_hash);
    let token = new_token("tms_");
    let expires_at = now + HOLDER_SESSION_MS;
    let mut tx = store.begin().await?;
    let verdict = try_code(&mut tx, &challenge, matches, now).await?;
    if verdict == Verified::Accepted {
        let (Some(account), Some(campaign)) = (challenge.account_id.clone(), challenge.campaign_id.clone()) else {
            return Err(StoreError::Corrupt("a my-tickets challenge without account or campaign".into()).into());
        };
        let session = CustomerSession {
            account_id: account,
            campaign_id: campaign,
            email: challenge.recipient.clone(),
            expires_at,
        };
        customers::insert_customer_session(&mut tx, &keyring.hash_secret(&token), &session, &challenge.id, now).await?;
    }
    commit(tx).await?;
    match verdict {
        Verified::Accepted => Ok(Opened { token, expires_at }),
        other => Err(AccessError::Refused(other)),
    }
}

/// What a my-tickets call presents: the key's account (and campaign, for a campaign key), the
/// session token and the campaign the body names.
#[derive(Debug, Clone, Copy)]
pub struct Holder<'a> {
    pub account_id: &'a str,
    pub key_campaign: Option<&'a str>,
    pub token: Option<&'a str>,
    pub campaign: Option<&'a str>,
}

/// The holder session a body names: no token → 400; unknown or expired → 401; another
/// account's, or another campaign than the one named (or the key's) → 404.
pub async fn holder_session(
    store: &Store,
    keyring: &Keyring,
    h: &Holder<'_>,
    now: i64,
) -> AccessResult<CustomerSession> {
    let Some(token) = h.token.filter(|t| !t.is_empty() && t.len() <= 256) else {
        return Err(DomainError::field("sessionToken", "is required").into());
    };
    let Some((stored, s)) = store.customer_session(&keyring.hash_secret(token), now).await? else {
        return Err(AccessError::UnknownSession);
    };
    if !keyring.secret_matches(token, &stored) || s.account_id != h.account_id {
        return Err(AccessError::NotFound("session"));
    }
    if h.campaign.or(h.key_campaign).is_some_and(|c| c != s.campaign_id) {
        return Err(AccessError::NotFound("session"));
    }
    Ok(s)
}

/// `my-tickets/list`: the session's tickets in its campaign.
pub async fn holder_tickets(store: &Store, keyring: &Keyring, h: &Holder<'_>, now: i64) -> AccessResult<Vec<Ticket>> {
    let s = holder_session(store, keyring, h, now).await?;
    Ok(store.holder_tickets(&s.account_id, &s.campaign_id, &s.email).await?)
}

/// `my-tickets/qr`: one ticket of the session, by its code or QR token (`code` normalized).
pub async fn holder_ticket(
    store: &Store,
    keyring: &Keyring,
    h: &Holder<'_>,
    code: &str,
    now: i64,
) -> AccessResult<Ticket> {
    let tickets = holder_tickets(store, keyring, h, now).await?;
    tickets.into_iter().find(|t| t.ticket_code == code || t.qr_token == code).ok_or(AccessError::NotFound("ticket"))
}

// ---- the reseller portal (D10.1, D15.4, D16.16, D16.17) ----

/// Portal sign-in, step one: a challenge for the e-mail, wherever it was made (the answer must
/// not depend on whether the e-mail belongs to a reseller); the passcode is mailed only to an
/// active member or an invitation.
pub async fn request_sign_in(store: &Store, keyring: &Keyring, email: &str, now: i64) -> AccessResult<Issued> {
    let mut send = Passcode::sign_in(email, PORTAL_SIGN_IN);
    send.throttle(store, now).await?;
    let account = store.sign_in_account(email).await?;
    send.account_id = account.as_deref();
    let mail = account.as_ref().map(|_| json!({"action": "sign in to the reseller portal"}));
    send.issue(store, keyring, mail, now).await
}

/// Portal sign-in, step two: a right code, in one transaction, consumes the challenge, finds or
/// creates the user, makes an invitation of the e-mail its active member, and opens the
/// session (12 h), audited. An `otp/send` challenge opens no session and is not used up here.
pub async fn sign_in(
    store: &Store,
    keyring: &Keyring,
    attempt: &CodeTry,
    request_id: Option<String>,
    now: i64,
) -> AccessResult<Opened> {
    let (c, mut tx) = accept_sign_in(store, keyring, attempt, PORTAL_SIGN_IN, now).await?;
    let opened = open_member_session(&mut tx, keyring, &c.recipient, request_id, now).await?;
    commit(tx).await?;
    Ok(opened)
}

/// One try at a sign-in challenge of `purpose` (the portal's or the console's): a right code
/// returns the challenge and the open transaction that consumed it, in which the caller writes
/// the session it opens and commits. A wrong code is counted (committed) and refused; a
/// challenge of another purpose is 404 and not used up.
pub(super) async fn accept_sign_in(
    store: &Store,
    keyring: &Keyring,
    attempt: &CodeTry,
    purpose: &str,
    now: i64,
) -> AccessResult<(Challenge, StoreTx)> {
    let c = store.challenge(None, &attempt.challenge_id).await?;
    if c.purpose != purpose {
        return Err(AccessError::NotFound("challenge"));
    }
    let matches = code_matches(keyring, &c.id, &attempt.code, &c.code_hash);
    let mut tx = store.begin().await?;
    let verdict = try_code(&mut tx, &c, matches, now).await?;
    if verdict != Verified::Accepted {
        // A wrong code counts even though nothing opens.
        commit(tx).await?;
        return Err(AccessError::Refused(verdict));
    }
    Ok((c, tx))
}

/// In the transaction of an accepted sign-in challenge: finds or creates the user of the
/// e-mail, makes an invitation of it the user's active member, and opens a portal session
/// (12 h), audited. Shared by the portal's sign-in and the console's (D17.28).
pub(super) async fn open_member_session(
    tx: &mut StoreTx,
    keyring: &Keyring,
    recipient: &str,
    request_id: Option<String>,
    now: i64,
) -> AccessResult<Opened> {
    let token = new_token("tps_");
    let expires_at = now + PORTAL_SESSION_MS;
    let user_id = portal_store::user_for_email(tx, recipient, now).await?;
    let Some(mut member) = portal_store::sign_in_member(tx, Some(&user_id), recipient).await? else {
        return Err(AccessError::NoMember);
    };
    let actor = Actor { user_id: Some(user_id.clone()), member_id: Some(member.id.clone()), request_id };
    if member.user_id.is_none() {
        // An invitation of the e-mail: signing in makes it the user's active member (D15.2).
        if !portal_store::join_invitation(tx, &member.id, &user_id, now).await? {
            return Err(AccessError::NoMember);
        }
        member.user_id = Some(user_id.clone());
        member.status = crate::domain::portal::MemberStatus::Active;
        let summary = json!({"after": {"status": member.status}});
        portal_store::audit(tx, &member.account_id, &actor, "member.joined", "reseller_member", &member.id, summary)
            .await?;
    }
    open_portal_session(tx, &keyring.hash_secret(&token), &user_id, &member, &actor, expires_at, now, json!({}))
        .await?;
    Ok(Opened { token, expires_at })
}

/// Writes a portal session and its audit entry (`extra` joins the summary).
#[allow(clippy::too_many_arguments)]
async fn open_portal_session(
    tx: &mut StoreTx,
    token_hash: &str,
    user_id: &str,
    member: &Member,
    actor: &Actor,
    expires_at: i64,
    now: i64,
    mut extra: Value,
) -> AccessResult<()> {
    portal_store::insert_session(tx, token_hash, user_id, member, expires_at, now).await?;
    extra["expiresAt"] = json!(expires_at);
    portal_store::audit(tx, &member.account_id, actor, "session.created", "portal_session", &member.id, extra).await?;
    Ok(())
}

/// `admin session create`: a portal session (12 h) for an existing user with an active member.
pub async fn operator_session(store: &Store, keyring: &Keyring, email: &str, now: i64) -> AccessResult<Opened> {
    let token = new_token("tps_");
    let expires_at = now + PORTAL_SESSION_MS;
    let mut tx = store.begin().await?;
    let (user_id, member) = portal_store::active_member_of_email(&mut tx, email).await?;
    let actor = Actor::operator();
    let extra = json!({"userId": user_id});
    open_portal_session(&mut tx, &keyring.hash_secret(&token), &user_id, &member, &actor, expires_at, now, extra)
        .await?;
    commit(tx).await?;
    Ok(Opened { token, expires_at })
}

/// The live portal session of a bearer token (`None`: unknown, expired, ended, or its member no
/// longer active: 401). A use slides its end to 12 hours from now.
pub async fn portal_session(
    store: &Store,
    keyring: &Keyring,
    token: &str,
    now: i64,
) -> AccessResult<Option<PortalSession>> {
    let Some(session) = store.portal_session(&keyring.hash_secret(token), now).await? else {
        return Ok(None);
    };
    if !keyring.secret_matches(token, &session.token_hash) {
        return Ok(None);
    }
    if let Some(slid) = slid_end(session.expires_at, now) {
        store.touch_portal_session(&session.token_hash, slid).await?;
    }
    Ok(Some(session))
}

/// Logout: the session ends, audited.
pub async fn sign_out(store: &Store, session: &PortalSession, actor: &Actor, now: i64) -> AccessResult<()> {
    Ok(store.revoke_portal_session(session, actor, now).await?)
}

/// `otp/send`: a passcode for a purpose of the portal, by e-mail or SMS, to anyone the member
/// names (the D8.2 limits per recipient and purpose in the account).
pub async fn send_otp(
    store: &Store,
    keyring: &Keyring,
    account_id: &str,
    req: &OtpSendRequest,
    now: i64,
) -> AccessResult<Issued> {
    let stored_purpose = format!("{OTP_SEND}{}", req.purpose);
    let send = Passcode {
        account_id: Some(account_id),
        campaign_id: None,
        channel: req.channel,
        recipient: &req.recipient,
        purpose: &stored_purpose,
        event: PORTAL_PASSCODE_EVENT,
    };
    send.throttle(store, now).await?;
    let action = format!("confirm {}", req.purpose.replace('_', " "));
    send.issue(store, keyring, Some(json!({"action": action, "purpose": req.purpose})), now).await
}

/// `otp/verify`: one try at an `otp/send` challenge of the account, which opens nothing but
/// itself. Returns the purpose it confirmed. Sign-in challenges are not accepted (404, not used
/// up).
pub async fn verify_otp(
    store: &Store,
    keyring: &Keyring,
    account_id: &str,
    attempt: &CodeTry,
    now: i64,
) -> AccessResult<String> {
    let c = store.challenge(Some(account_id), &attempt.challenge_id).await?;
    let Some(purpose) = c.purpose.strip_prefix(OTP_SEND).map(str::to_string) else {
        return Err(AccessError::NotFound("challenge"));
    };
    let matches = code_matches(keyring, &c.id, &attempt.code, &c.code_hash);
    let mut tx = store.begin().await?;
    let verdict = try_code(&mut tx, &c, matches, now).await?;
    commit(tx).await?;
    match verdict {
        Verified::Accepted => Ok(purpose),
        other => Err(AccessError::Refused(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resend_within_a_minute_or_a_sixth_code_in_an_hour_waits() {
        let now = 10 * 3_600_000;
        let recent =
            |n, newest, oldest| RecentSends { last_hour: n, newest_in_campaign: newest, oldest_in_hour: oldest };
        assert_eq!(send_allowed(&recent(0, None, None), now), Ok(()));
        let t = send_allowed(&recent(1, Some(now - 20_000), Some(now - 20_000)), now).expect_err("cooldown");
        assert_eq!(t.retry_after_secs, 40);
        let t = send_allowed(&recent(5, Some(now - 120_000), Some(now - 3_000_000)), now).expect_err("cap");
        assert_eq!(t.retry_after_secs, 600);
        assert_eq!(send_allowed(&recent(4, Some(now - 120_000), Some(now - 3_000_000)), now), Ok(()));
    }
}

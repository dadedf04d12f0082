//! The credentials checks of D2.8 with the guards several instances share through Redis
//! (D17.1): the same checks in the same order as `auth` (the pieces both read are in
//! `credentials`), with the IP limit, the failure blocks,
//! the replay claim and the account limit decided by one round trip (`auth::shared`). A request
//! refused locally (headers, key, clock, signature) makes one round trip too, which counts it
//! against its IP and, for an unknown key id or a bad signature, against D2.9's blocks.
//!
//! Redis unreachable (D17.2): a signed request is refused with 503 `replay_store_unavailable`
//! and `Retry-After: 1` (a replay hole is worse than a short outage); a domain-key request is
//! served without limits; a refusal keeps its own answer.
use axum::body::{Body, Bytes, HttpBody as _};
use axum::http::request::Parts;

use super::client_ip;
use super::credentials::{
    approved_domain, blocked, caller, discard_refused_body, domain_key_domain, domain_key_head, domain_secret_matches,
    host_text, key_and_clock, signed_head, signed_path, AuthHeaders, IP_LIMITED,
};
use crate::auth::directory::AuthKey;
use crate::auth::guard::LimitInfo;
use crate::auth::keys::plausible_key_id;
use crate::auth::shared::{Failure, SharedGuards, Verdict};
use crate::domain::time::now_ms;
use crate::http::error::ApiError;
use crate::http::extract::{Caller, Scheme};
use crate::state::AppState;

/// What an admitted request carries on: its caller, its body, the per-IP limit's figures.
type Admitted = (Caller, Body, Option<LimitInfo>);

pub(super) async fn admit(
    state: &AppState,
    shared: &SharedGuards,
    parts: &Parts,
    hs: &AuthHeaders<'_>,
    body: Body,
) -> Result<Admitted, ApiError> {
    let ip = client_ip(&parts.headers, &parts.extensions, state.config.security.trust_forwarded_for).to_string();
    let guard = Guard { state, shared, ip: &ip };
    if hs.signed() {
        let (caller, bytes, limit) = signed(&guard, parts, hs, body).await?;
        Ok((caller, Body::from(bytes), limit))
    } else {
        let (caller, limit) = domain_keyed(&guard, hs).await?;
        Ok((caller, body, limit))
    }
}

struct Guard<'a> {
    state: &'a AppState,
    shared: &'a SharedGuards,
    ip: &'a str,
}

impl Guard<'_> {
    /// One round trip for a refused request: an IP over its limit or a blocked pair answers 429
    /// instead of `refusal` (as the edge and the pair guard would have, in memory).
    async fn refuse(&self, failure: Failure<'_>, refusal: ApiError) -> ApiError {
        match self.shared.refused(self.ip, failure).await {
            Ok(Verdict::IpLimited(info)) => ApiError::rate_limited(info, IP_LIMITED),
            Ok(Verdict::Blocked(secs)) => blocked(secs),
            _ => refusal,
        }
    }

    /// The active key with this id, from memory or the store; refusals counted (D2.9).
    async fn key(&self, key_id: &str) -> Result<std::sync::Arc<AuthKey>, ApiError> {
        let found = if plausible_key_id(key_id) {
            self.state.directory.key(key_id).await.map_err(ApiError::from)?
        } else {
            None
        };
        match found {
            Some(k) if k.is_active() => Ok(k),
            Some(_) => Err(self.refuse(Failure::Nothing, ApiError::invalid_key()).await),
            None => Err(self.refuse(Failure::UnknownKey, ApiError::invalid_key()).await),
        }
    }
}

/// The account limit's verdict as the caller extractor applies it (after status and scope).
fn account_verdict(account: Option<Result<LimitInfo, LimitInfo>>) -> Option<Result<Option<LimitInfo>, LimitInfo>> {
    Some(match account {
        None => Ok(None),
        Some(Ok(info)) => Ok(Some(info)),
        Some(Err(info)) => Err(info),
    })
}

async fn signed(
    g: &Guard<'_>,
    parts: &Parts,
    hs: &AuthHeaders<'_>,
    body: Body,
) -> Result<(Caller, Bytes, Option<LimitInfo>), ApiError> {
    let max = g.state.config.max_body_bytes;
    if !body.is_end_stream() && !hs.json_body() {
        discard_refused_body(body, hs.declared_length().unwrap_or(0), max).await;
        return Err(g.refuse(Failure::Nothing, ApiError::unsupported_media_type()).await);
    }
    let head = match signed_head(hs) {
        Ok(h) => h,
        Err(e) => return Err(g.refuse(Failure::Nothing, e).await),
    };
    let now = now_ms();
    let key = g.key(head.key_id).await?;
    let (hmac, ts) = match key_and_clock(g.state, &key, head.timestamp, now) {
        Ok(v) => v,
        Err(e) => return Err(g.refuse(Failure::Nothing, e).await),
    };
    if let Some(len) = hs.declared_length().filter(|len| *len > max) {
        discard_refused_body(body, len, max).await;
        return Err(g.refuse(Failure::Nothing, ApiError::payload_too_large(max)).await);
    }
    let bytes = if body.is_end_stream() {
        Bytes::new()
    } else {
        axum::body::to_bytes(body, max).await.map_err(|e| ApiError::body_unreadable(e, max))?
    };
    let Ok(mac) = hmac.verified_mac(head.timestamp, parts.method.as_str(), signed_path(parts), &bytes, head.signature)
    else {
        return Err(g.refuse(Failure::BadSecret(head.key_id), ApiError::invalid_signature()).await);
    };
    let ttl = ts + g.state.config.security.clock_tolerance_ms + 1 - now;
    let verdict = g
        .shared
        .signed(g.ip, head.key_id, &key.account_id, key.rate_limit_per_minute, head.nonce, &mac, ts, now, ttl)
        .await
        .map_err(|_| ApiError::replay_store_unavailable())?;
    let (ip_limit, account) = match verdict {
        Verdict::IpLimited(info) => return Err(ApiError::rate_limited(info, IP_LIMITED)),
        Verdict::Blocked(secs) => return Err(blocked(secs)),
        Verdict::BeforeEpoch => return Err(ApiError::stale_timestamp()),
        Verdict::Replayed => return Err(ApiError::replayed()),
        Verdict::Admitted { ip, account } => (ip, account),
    };
    // D2.7: a domain named on a signed route must be an approved domain of the account.
    let domain = match host_text(hs.domain) {
        None => None,
        Some(d) => Some(approved_domain(g.state, d, &key.info.account_id)?),
    };
    let mut c = caller(&key, Scheme::Signed, domain);
    c.account_limit = account_verdict(account);
    Ok((c, bytes, ip_limit))
}

async fn domain_keyed(g: &Guard<'_>, hs: &AuthHeaders<'_>) -> Result<(Caller, Option<LimitInfo>), ApiError> {
    let (domain, key_id, secret) = match domain_key_head(hs) {
        Ok(v) => v,
        Err(e) => return Err(g.refuse(Failure::Nothing, e).await),
    };
    let key = g.key(key_id).await?;
    if !domain_secret_matches(g.state, secret, &key) {
        return Err(g.refuse(Failure::BadSecret(key_id), ApiError::invalid_key()).await);
    }
    let mut c = match domain_key_domain(g.state, hs, domain, &key) {
        Ok(c) => c,
        Err(e) => return Err(g.refuse(Failure::Nothing, e).await),
    };
    match g.shared.admitted(g.ip, key_id, &key.account_id, key.rate_limit_per_minute).await {
        Ok(Verdict::IpLimited(info)) => Err(ApiError::rate_limited(info, IP_LIMITED)),
        Ok(Verdict::Blocked(secs)) => Err(blocked(secs)),
        Ok(Verdict::Admitted { ip, account }) => {
            c.account_limit = account_verdict(account);
            Ok((c, ip))
        }
        // Limits fail open (D17.2): public reads are served while Redis is away.
        Ok(Verdict::BeforeEpoch | Verdict::Replayed) | Err(_) => {
            c.account_limit = Some(Ok(None));
            Ok((c, None))
        }
    }
}

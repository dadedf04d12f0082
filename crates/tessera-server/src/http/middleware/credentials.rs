//! The credentials of version 1 routes as both auth paths read them: the in-memory path
//! ([`super::auth`]) and the one whose guards several instances share through Redis
//! (`shared_auth`, D17.1). The headers found in one pass ([`AuthHeaders`]), the signed head and
//! its key and clock (D2.8 steps 1–3), the signed path (D2.4), the domain-key head, secret and
//! domain (D2.3, D2.7), the caller they make, and the edge's question of which requests the
//! credentials layer counts. No state of its own, nothing written.
use axum::body::Body;
use axum::extract::OriginalUri;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};

use crate::auth::directory::AuthKey;
use crate::domain::accounts::normalize_hostname;
use crate::domain::scopes::KeyKind;
use crate::http::error::ApiError;
use crate::http::extract::{Caller, Scheme};
use crate::state::AppState;

/// Why the per-IP limit refused a request: the edge's refusal (the API's envelope and the
/// console's page alike) and the Redis path's, which counts the IP in its one round trip.
pub(super) const IP_LIMITED: &str = "too many requests from this address";

const DOMAIN_HEADER: &str = "x-white-label-domain";
const KEY_HEADER: &str = "x-white-label-key";
const SIGNED_HEADER_NAMES: [&str; 4] = [
    tessera_sign::HEADER_KEY_ID,
    tessera_sign::HEADER_SIGNATURE,
    tessera_sign::HEADER_TIMESTAMP,
    tessera_sign::HEADER_NONCE,
];

/// The header values this layer reads, found in one pass over the request's headers (a lookup
/// by name hashes the name; a request carries a handful of headers, and ten lookups cost more
/// than one walk). The first value of a repeated header counts, as with `HeaderMap::get`.
#[derive(Default)]
pub(super) struct AuthHeaders<'a> {
    key_id: Option<&'a HeaderValue>,
    signature: Option<&'a HeaderValue>,
    timestamp: Option<&'a HeaderValue>,
    nonce: Option<&'a HeaderValue>,
    key: Option<&'a HeaderValue>,
    pub(super) domain: Option<&'a HeaderValue>,
    origin: Option<&'a HeaderValue>,
    content_length: Option<&'a HeaderValue>,
    content_type: Option<&'a HeaderValue>,
}

impl<'a> AuthHeaders<'a> {
    pub(super) fn scan(h: &'a HeaderMap) -> Self {
        let mut a = AuthHeaders::default();
        for (name, value) in h {
            let slot = match name.as_str() {
                tessera_sign::HEADER_KEY_ID => &mut a.key_id,
                tessera_sign::HEADER_SIGNATURE => &mut a.signature,
                tessera_sign::HEADER_TIMESTAMP => &mut a.timestamp,
                tessera_sign::HEADER_NONCE => &mut a.nonce,
                KEY_HEADER => &mut a.key,
                DOMAIN_HEADER => &mut a.domain,
                "origin" => &mut a.origin,
                "content-length" => &mut a.content_length,
                "content-type" => &mut a.content_type,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        a
    }

    pub(super) fn signed(&self) -> bool {
        self.signed_values().iter().any(Option::is_some)
    }

    fn signed_values(&self) -> [Option<&'a HeaderValue>; 4] {
        [self.key_id, self.signature, self.timestamp, self.nonce]
    }

    pub(super) fn domain_keyed(&self) -> bool {
        self.key.is_some() || self.domain.is_some()
    }

    pub(super) fn declared_length(&self) -> Option<usize> {
        self.content_length.and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok())
    }

    /// D17.11: `application/json`, with parameters (a charset) allowed, in any letter case.
    pub(super) fn json_body(&self) -> bool {
        let Some(v) = text(self.content_type) else { return false };
        let essence = v.split(';').next().unwrap_or("").trim();
        essence.eq_ignore_ascii_case("application/json")
    }
}

/// A header's text; a value that is not visible ASCII counts as absent.
fn text(v: Option<&HeaderValue>) -> Option<&str> {
    v.and_then(|v| v.to_str().ok())
}

/// A header that names a domain or origin. A value that is not visible ASCII (so not UTF-8
/// text a hostname could be) is kept as present and unreadable, which no approved domain
/// matches: it is refused with 403 (D2.3, D2.7) instead of being read as absent.
pub(super) fn host_text(v: Option<&HeaderValue>) -> Option<&str> {
    const UNREADABLE: &str = "\u{fffd}";
    v.map(|v| v.to_str().unwrap_or(UNREADABLE))
}

/// The nonce rule of D2: 8 to 128 characters of `[A-Za-z0-9_-]` (public for the fuzz targets).
pub fn valid_nonce(n: &str) -> bool {
    (8..=128).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// 429 for a blocked key/IP pair or a probing IP (D2.9).
pub(super) fn blocked(secs: u64) -> ApiError {
    ApiError::retry_later(secs, "too many failed authentication attempts; blocked for a while")
}

pub(super) fn caller(key: &AuthKey, scheme: Scheme, domain: Option<String>) -> Caller {
    Caller {
        account_id: key.account_id.clone(),
        account_status: key.account_status,
        key_id: key.key_id.clone(),
        kind: key.info.kind,
        campaign_id: key.info.campaign_id.clone(),
        scopes: key.info.scopes,
        capabilities: key.info.capabilities.clone(),
        scheme,
        domain,
        rate_limit_per_minute: key.rate_limit_per_minute,
        account_limit: None,
    }
}

/// Whether the shared guards count this request in the credentials layer (one round trip with
/// the replay claim) rather than at the edge: an API route of version 1 with credentials.
pub fn counted_by_credentials(state: &AppState, path: &str, headers: &HeaderMap) -> bool {
    if state.shared.is_none() || !path.starts_with("/api/white-label/v1/") {
        return false;
    }
    let hs = AuthHeaders::scan(headers);
    hs.signed() || hs.domain_keyed()
}

/// The four signed headers' text (D2.8 step 1) and the nonce rule.
pub(super) struct SignedHead<'a> {
    pub(super) key_id: &'a str,
    pub(super) signature: &'a str,
    pub(super) timestamp: &'a str,
    pub(super) nonce: &'a str,
}

pub(super) fn signed_head<'a>(hs: &AuthHeaders<'a>) -> Result<SignedHead<'a>, ApiError> {
    let present = |v| text(v).filter(|v| !v.is_empty());
    let (Some(key_id), Some(signature), Some(timestamp), Some(nonce)) =
        (present(hs.key_id), present(hs.signature), present(hs.timestamp), present(hs.nonce))
    else {
        let mut e = ApiError::missing_auth("signed requests need all four signed headers");
        for (name, v) in SIGNED_HEADER_NAMES.iter().zip(hs.signed_values()) {
            if present(v).is_none() {
                e = e.with_detail(*name, "required");
            }
        }
        return Err(e);
    };
    if !valid_nonce(nonce) {
        return Err(ApiError::missing_auth("the nonce must be 8 to 128 characters of A-Z, a-z, 0-9, '_' and '-'")
            .with_detail(tessera_sign::HEADER_NONCE, "8 to 128 characters of [A-Za-z0-9_-]"));
    }
    Ok(SignedHead { key_id, signature, timestamp, nonce })
}

/// D2.8 steps 2–3 once the key is known: a private key (a browser key cannot sign: its secret
/// is only stored as a hash) and a timestamp inside the window and after this start.
pub(super) fn key_and_clock<'k>(
    state: &AppState,
    key: &'k AuthKey,
    timestamp: &str,
    now: i64,
) -> Result<(&'k tessera_sign::HmacKey, i64), ApiError> {
    let Some(hmac) = key.hmac_key().filter(|_| key.info.kind == KeyKind::Private) else {
        return Err(ApiError::invalid_key());
    };
    let tolerance = state.config.security.clock_tolerance_ms;
    let ts = tessera_sign::check_timestamp(timestamp, now, tolerance).map_err(|_| ApiError::stale_timestamp())?;
    if ts < state.started_at_ms && state.shared.is_none() {
        // After a restart the in-memory replay store is empty: refuse what it cannot vouch for.
        // A shared store (D17.39) vouches for what came before this start: its own epoch rules.
        return Err(ApiError::stale_timestamp());
    }
    Ok((hmac, ts))
}

/// The request target exactly as received (D2.4): the signed path.
pub(super) fn signed_path(parts: &Parts) -> &str {
    match parts.extensions.get::<OriginalUri>() {
        Some(u) => u.0.path_and_query().map(|p| p.as_str()).unwrap_or("/"),
        None => parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"),
    }
}

/// Reads and drops the body of a request refused for its declared size before answering 413.
/// A client is usually still sending when the refusal is ready; closing the connection with
/// unread data makes the kernel reset it, and the client then loses the 413 (it sees a broken
/// connection instead). Draining is bounded in bytes (a few times the limit) and in time, so a
/// huge or slow body costs little: past either bound the connection is simply closed.
pub(super) async fn discard_refused_body(body: Body, declared: usize, max_body_bytes: usize) {
    use axum::body::HttpBody as _;
    let budget = max_body_bytes.saturating_mul(4);
    if declared > budget {
        return;
    }
    let mut body = body;
    let drain = async {
        let mut seen = 0usize;
        while seen <= budget {
            match std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
                Some(Ok(frame)) => seen += frame.data_ref().map_or(0, |d| d.len()),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drain).await;
}

pub(super) fn approved_domain(state: &AppState, raw: &str, account_id: &str) -> Result<String, ApiError> {
    let host = normalize_hostname(raw).ok_or_else(ApiError::domain_not_allowed)?;
    match state.directory.domain_account(&host) {
        Some(owner) if owner == account_id => Ok(host),
        _ => Err(ApiError::domain_not_allowed()),
    }
}

/// The domain and key headers (spec Scheme 1): both present, a `<keyId>:<secret>` key that is
/// not a private key (D2.3).
pub(super) fn domain_key_head<'a>(hs: &AuthHeaders<'a>) -> Result<(&'a str, &'a str, &'a str), ApiError> {
    let (domain, key) = match (host_text(hs.domain), text(hs.key)) {
        (Some(d), Some(k)) if !d.is_empty() && !k.is_empty() => (d, k),
        (d, k) => {
            let mut e = ApiError::missing_auth("domain-key requests need x-white-label-domain and x-white-label-key");
            if d.is_none_or(str::is_empty) {
                e = e.with_detail(DOMAIN_HEADER, "required");
            }
            if k.is_none_or(str::is_empty) {
                e = e.with_detail(KEY_HEADER, "required");
            }
            return Err(e);
        }
    };
    let Some((key_id, secret)) = key.split_once(':') else {
        return Err(ApiError::invalid_key().with_detail(KEY_HEADER, "must be <keyId>:<secret>"));
    };
    if KeyKind::of_key_id(key_id) == Some(KeyKind::Private) {
        // D2.3: a private secret in a browser header has leaked. Refuse it and say so in the log.
        tracing::warn!(key_id, "private key sent in x-white-label-key; it should be revoked and rotated");
        return Err(ApiError::invalid_key().with_detail(KEY_HEADER, "private keys must never be sent from a browser"));
    }
    Ok((domain, key_id, secret))
}

/// The host of an `Origin` header value (`https://shop.example.com:443` → `shop.example.com`).
pub fn origin_host(origin: &str) -> Option<String> {
    let rest = origin.split_once("://").map(|(_, r)| r)?;
    let host = rest.split('/').next()?;
    let host = host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host);
    crate::domain::accounts::normalize_hostname(host)
}

/// The secret of a domain-key request against its stored keyed hash.
pub(super) fn domain_secret_matches(state: &AppState, secret: &str, key: &AuthKey) -> bool {
    match &key.secret {
        crate::auth::directory::KeySecret::Hash(hash) => state.directory.keyring().secret_matches(secret, hash),
        crate::auth::directory::KeySecret::Hmac(_) => false,
    }
}

/// The domain approved for the key's account, and an `Origin`, when sent, naming that domain.
pub(super) fn domain_key_domain(
    state: &AppState,
    hs: &AuthHeaders<'_>,
    domain: &str,
    key: &AuthKey,
) -> Result<Caller, ApiError> {
    let host = approved_domain(state, domain, &key.info.account_id)?;
    if let Some(origin) = host_text(hs.origin) {
        if origin_host(origin).as_deref() != Some(host.as_str()) {
            return Err(ApiError::domain_not_allowed()
                .with_detail("origin", "must be the domain named in x-white-label-domain"));
        }
    }
    Ok(caller(key, Scheme::DomainKey, Some(host)))
}

//! Credential checks for version 1 routes, in the order of D2.8 steps 1–5: headers present →
//! key known and active → timestamp → signature → replay. Account status, scope and the
//! per-account limit follow in the route's caller extractor (`http::extract`). Nothing is
//! written to the store on this path.
use axum::body::Body;
use axum::extract::{MatchedPath, OriginalUri, Request, State};
use axum::http::{header, HeaderMap, HeaderName};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::client_ip;
use super::edge::origin_host;
use crate::auth::directory::AuthKey;
use crate::auth::keys::plausible_key_id;
use crate::auth::replay::ReplayError;
use crate::domain::accounts::normalize_hostname;
use crate::domain::scopes::KeyKind;
use crate::domain::time::now_ms;
use crate::http::error::ApiError;
use crate::http::extract::{Caller, RateSlot, Scheme};
use crate::state::AppState;

const DOMAIN_HEADER: &str = "x-white-label-domain";
const KEY_HEADER: &str = "x-white-label-key";
// Header names built once: a lookup by `&str` parses and validates the name on every call.
static DOMAIN: HeaderName = HeaderName::from_static(DOMAIN_HEADER);
static KEY: HeaderName = HeaderName::from_static(KEY_HEADER);
static KEY_ID: HeaderName = HeaderName::from_static(tessera_sign::HEADER_KEY_ID);
static SIGNATURE: HeaderName = HeaderName::from_static(tessera_sign::HEADER_SIGNATURE);
static TIMESTAMP: HeaderName = HeaderName::from_static(tessera_sign::HEADER_TIMESTAMP);
static NONCE: HeaderName = HeaderName::from_static(tessera_sign::HEADER_NONCE);
const SIGNED_HEADERS: [&HeaderName; 4] = [&KEY_ID, &SIGNATURE, &TIMESTAMP, &NONCE];

fn header<'a>(h: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// A header that names a domain or origin. A value that is not visible ASCII (so not UTF-8
/// text a hostname could be) is kept as present and unreadable, which no approved domain
/// matches: it is refused with 403 (D2.3, D2.7) instead of being read as absent.
fn host_header<'a>(h: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    const UNREADABLE: &str = "\u{fffd}";
    h.get(name).map(|v| v.to_str().unwrap_or(UNREADABLE))
}

/// The nonce rule of D2: 8 to 128 characters of `[A-Za-z0-9_-]` (public for the fuzz targets).
pub fn valid_nonce(n: &str) -> bool {
    (8..=128).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// 429 for a blocked key/IP pair or a probing IP (D2.9).
fn blocked(secs: u64) -> ApiError {
    ApiError::retry_later(secs, "too many failed authentication attempts; blocked for a while")
}

fn caller(key: &AuthKey, scheme: Scheme, domain: Option<String>) -> Caller {
    Caller {
        account_id: key.info.account_id.clone(),
        account_status: key.account_status,
        key_id: key.info.key_id.clone(),
        kind: key.info.kind,
        campaign_id: key.info.campaign_id.clone(),
        scopes: key.info.scopes,
        capabilities: key.info.capabilities.clone(),
        scheme,
        domain,
        rate_limit_per_minute: key.rate_limit_per_minute,
    }
}

pub async fn layer(State(state): State<AppState>, req: Request, next: Next) -> Response {
    // The route template, for the access log written outside the router.
    let matched = req.extensions().get::<MatchedPath>().cloned();
    let signed = SIGNED_HEADERS.iter().any(|h| req.headers().contains_key(*h));
    let domain_keyed = req.headers().contains_key(&KEY) || req.headers().contains_key(&DOMAIN);
    let result = if signed {
        signed_request(&state, req).await
    } else if domain_keyed {
        domain_key_request(&state, req).await
    } else {
        Ok(req)
    };
    let mut resp = match result {
        Err(e) => e.into_response(),
        Ok(mut req) => {
            // Filled by the caller extractor's per-account limit; only an admitted request needs one.
            let slot = RateSlot::default();
            req.extensions_mut().insert(slot.clone());
            let mut resp = next.run(req).await;
            if let Some(info) = *slot.0.lock().unwrap_or_else(|p| p.into_inner()) {
                for (k, v) in crate::http::error::rate_limit_headers(info) {
                    resp.headers_mut().insert(k, v);
                }
            }
            resp
        }
    };
    if let Some(m) = matched {
        resp.extensions_mut().insert(m);
    }
    resp
}

async fn signed_request(state: &AppState, req: Request) -> Result<Request, ApiError> {
    // Work on the parts so that the headers are borrowed, not copied, on this hot path.
    let (parts, body) = req.into_parts();
    let h = &parts.headers;
    let (Some(key_id), Some(signature), Some(timestamp), Some(nonce)) = (
        header(h, &KEY_ID).filter(|v| !v.is_empty()),
        header(h, &SIGNATURE).filter(|v| !v.is_empty()),
        header(h, &TIMESTAMP).filter(|v| !v.is_empty()),
        header(h, &NONCE).filter(|v| !v.is_empty()),
    ) else {
        let mut e = ApiError::missing_auth("signed requests need all four signed headers");
        for m in SIGNED_HEADERS.iter().filter(|n| header(h, n).is_none_or(str::is_empty)) {
            e = e.with_detail(m.as_str(), "required");
        }
        return Err(e);
    };
    if !valid_nonce(nonce) {
        return Err(ApiError::missing_auth("the nonce must be 8 to 128 characters of A-Z, a-z, 0-9, '_' and '-'")
            .with_detail(tessera_sign::HEADER_NONCE, "8 to 128 characters of [A-Za-z0-9_-]"));
    }
    let ip = client_ip(h, &parts.extensions, state.config.security.trust_forwarded_for);
    let now = now_ms();
    let key = lookup(state, key_id, ip, now).await?;
    let Some(secret) = key.hmac_secret().filter(|_| key.info.kind == KeyKind::Private) else {
        // A browser key cannot sign: its secret is only stored as a hash.
        return Err(ApiError::invalid_key());
    };
    let tolerance = state.config.security.clock_tolerance_ms;
    let ts = tessera_sign::check_timestamp(timestamp, now, tolerance).map_err(|_| ApiError::stale_timestamp())?;
    if ts < state.started_at_ms {
        // After a restart the in-memory replay store is empty: refuse what it cannot vouch for.
        return Err(ApiError::stale_timestamp());
    }
    let declared = h.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    let path = match parts.extensions.get::<OriginalUri>() {
        Some(u) => u.0.path_and_query().map(|p| p.as_str()).unwrap_or("/"),
        None => parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"),
    };
    if let Some(len) = declared.filter(|len| *len > state.config.max_body_bytes) {
        discard_refused_body(body, len, state.config.max_body_bytes).await;
        return Err(ApiError::payload_too_large(state.config.max_body_bytes));
    }
    let bytes = if axum::body::HttpBody::is_end_stream(&body) {
        // A GET or DELETE without a body: nothing to collect.
        axum::body::Bytes::new()
    } else {
        axum::body::to_bytes(body, state.config.max_body_bytes)
            .await
            .map_err(|e| body_error(e, state.config.max_body_bytes))?
    };
    if tessera_sign::verify_signature(secret, timestamp, parts.method.as_str(), path, &bytes, signature).is_err() {
        state.guards.failures.bad_signature(key_id, ip, now);
        return Err(ApiError::invalid_signature());
    }
    match state.replay.claim(key_id, nonce, signature, now, ts + tolerance + 1) {
        Ok(()) => {}
        Err(ReplayError::Replayed) => return Err(ApiError::replayed()),
        Err(ReplayError::Full) => {
            if state.replay.should_warn_full(now) {
                tracing::warn!(
                    "replay store full; refusing signed requests until entries expire (raise security.replay_capacity)"
                );
            }
            return Err(ApiError::retry_later(5, "the server is busy; retry shortly"));
        }
    }
    // D2.7: a domain named on a signed route must be an approved domain of the account.
    let domain = match host_header(&parts.headers, &DOMAIN) {
        None => None,
        Some(d) => Some(approved_domain(state, d, &key.info.account_id)?),
    };
    let mut req = Request::from_parts(parts, Body::from(bytes));
    req.extensions_mut().insert(caller(&key, Scheme::Signed, domain));
    Ok(req)
}

/// 413 when the body outgrew the limit; 400 when it could not be read whole (the client cut it
/// short or sent broken chunking), which is not a size problem.
fn body_error(e: axum::Error, max_body_bytes: usize) -> ApiError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(s) = source {
        if s.is::<http_body_util::LengthLimitError>() {
            return ApiError::payload_too_large(max_body_bytes);
        }
        source = s.source();
    }
    ApiError::malformed_json("the request body could not be read whole (cut short by the client?)")
}

/// Reads and drops the body of a request refused for its declared size before answering 413.
/// A client is usually still sending when the refusal is ready; closing the connection with
/// unread data makes the kernel reset it, and the client then loses the 413 (it sees a broken
/// connection instead). Draining is bounded in bytes (a few times the limit) and in time, so a
/// huge or slow body costs little: past either bound the connection is simply closed.
async fn discard_refused_body(body: Body, declared: usize, max_body_bytes: usize) {
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

/// The active key with this id, unless this key id is blocked from this IP or the IP is blocked
/// for probing unknown key ids (D2.9).
async fn lookup(
    state: &AppState,
    key_id: &str,
    ip: std::net::IpAddr,
    now: i64,
) -> Result<std::sync::Arc<AuthKey>, ApiError> {
    let guard = &state.guards.failures;
    if let Some(secs) = guard.pair_blocked(key_id, ip, now) {
        return Err(blocked(secs));
    }
    let found =
        if plausible_key_id(key_id) { state.directory.key(key_id).await.map_err(ApiError::from)? } else { None };
    match found {
        Some(k) if k.is_active() => Ok(k),
        Some(_) => Err(ApiError::invalid_key()),
        None => {
            if let Some(secs) = guard.probe_blocked(ip, now) {
                return Err(blocked(secs));
            }
            guard.unknown_key(ip, now);
            Err(ApiError::invalid_key())
        }
    }
}

fn approved_domain(state: &AppState, raw: &str, account_id: &str) -> Result<String, ApiError> {
    let host = normalize_hostname(raw).ok_or_else(ApiError::domain_not_allowed)?;
    match state.directory.domain_account(&host) {
        Some(owner) if owner == account_id => Ok(host),
        _ => Err(ApiError::domain_not_allowed()),
    }
}

async fn domain_key_request(state: &AppState, req: Request) -> Result<Request, ApiError> {
    let (mut parts, body) = req.into_parts();
    let h = &parts.headers;
    let (domain, key) = match (host_header(h, &DOMAIN), header(h, &KEY)) {
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
    let ip = client_ip(h, &parts.extensions, state.config.security.trust_forwarded_for);
    let now = now_ms();
    let found = lookup(state, key_id, ip, now).await?;
    let matches = match &found.secret {
        crate::auth::directory::KeySecret::Hash(hash) => state.directory.keyring().secret_matches(secret, hash),
        crate::auth::directory::KeySecret::Hmac(_) => false,
    };
    if !matches {
        state.guards.failures.bad_signature(key_id, ip, now);
        return Err(ApiError::invalid_key());
    }
    let host = approved_domain(state, domain, &found.info.account_id)?;
    if let Some(origin) = host_header(h, &header::ORIGIN) {
        if origin_host(origin).as_deref() != Some(host.as_str()) {
            return Err(ApiError::domain_not_allowed()
                .with_detail("origin", "must be the domain named in x-white-label-domain"));
        }
    }
    let caller = caller(&found, Scheme::DomainKey, Some(host));
    parts.extensions.insert(caller);
    Ok(Request::from_parts(parts, body))
}

//! Credential checks for version 1 routes, in the order of D2.8 steps 1–5: headers present →
//! key known and active → timestamp → signature → replay. Account status, scope and the
//! per-account limit follow in the route's caller extractor (`http::extract`). Nothing is
//! written to the store on this path.
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use axum::body::{Body, HttpBody as _};
use axum::extract::{MatchedPath, OriginalUri, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use tower::Service;

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

/// The credentials layer of version 1 routes, as a `tower` service rather than an
/// `axum::middleware::from_fn`: a request whose key is in memory and which has no body to read
/// (every `GET`, and every refusal before the body) is checked synchronously in `call`, and the
/// route is called directly, without boxing a future or cloning the route's service (what
/// `from_fn` does for every request). Only a body to collect or a key to fetch from the store
/// takes the boxed, asynchronous path. Both paths run the same checks in the same order.
#[derive(Clone)]
pub struct AuthLayer(AppState);

impl AuthLayer {
    pub fn new(state: AppState) -> Self {
        AuthLayer(state)
    }
}

impl<S> tower::Layer<S> for AuthLayer {
    type Service = Auth<S>;
    fn layer(&self, inner: S) -> Auth<S> {
        Auth { state: self.0.clone(), inner }
    }
}

#[derive(Clone)]
pub struct Auth<S> {
    state: AppState,
    inner: S,
}

type BoxedResponse = Pin<Box<dyn Future<Output = Response> + Send>>;

impl<S> Service<Request> for Auth<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = AuthFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // The route template, for the access log written outside the router.
        let matched = req.extensions().get::<MatchedPath>().cloned();
        match admit_now(&self.state, req) {
            Admission::Admitted(mut req) => {
                let slot = rate_slot(&self.state, &mut req);
                AuthFuture::Route { fut: self.inner.call(req), slot, matched }
            }
            Admission::Refused(e) => AuthFuture::Ready { resp: Some(with_matched(e.into_response(), matched)) },
            Admission::Later(req) => {
                // `inner` was made ready by `poll_ready`; the clone left behind serves the next call.
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                let state = self.state.clone();
                let fut = Box::pin(async move {
                    match admit_later(&state, req).await {
                        Err(e) => e.into_response(),
                        Ok(mut req) => {
                            let slot = rate_slot(&state, &mut req);
                            let ip_limit = req.extensions().get::<IpLimit>().map(|l| l.0);
                            let resp = inner.call(req).await.unwrap_or_else(|e| match e {});
                            with_ip_headers(with_rate_headers(resp, slot), ip_limit)
                        }
                    }
                });
                AuthFuture::Boxed { fut, matched }
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// The answer of [`Auth`]: the route's own future (synchronous admission), a refusal ready
    /// at once, or the boxed asynchronous path.
    #[project = AuthFutureProj]
    pub enum AuthFuture<F> {
        Route { #[pin] fut: F, slot: Option<RateSlot>, matched: Option<MatchedPath> },
        Ready { resp: Option<Response> },
        Boxed { fut: BoxedResponse, matched: Option<MatchedPath> },
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for AuthFuture<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let resp = match self.project() {
            AuthFutureProj::Route { fut, slot, matched } => {
                let resp = ready!(fut.poll(cx)).unwrap_or_else(|e| match e {});
                with_matched(with_rate_headers(resp, slot.take()), matched.take())
            }
            AuthFutureProj::Ready { resp } => resp
                .take()
                .unwrap_or_else(|| ApiError::internal("auth future polled after it answered").into_response()),
            AuthFutureProj::Boxed { fut, matched } => with_matched(ready!(fut.as_mut().poll(cx)), matched.take()),
        };
        Poll::Ready(Ok(resp))
    }
}

/// A place for the per-account limit's figures, filled by the caller extractor; only when that
/// limit is on (otherwise there is nothing to report and nothing to allocate).
fn rate_slot(state: &AppState, req: &mut Request) -> Option<RateSlot> {
    if !state.guards.limits_accounts() {
        return None;
    }
    let slot = RateSlot::default();
    req.extensions_mut().insert(slot.clone());
    Some(slot)
}

fn with_rate_headers(mut resp: Response, slot: Option<RateSlot>) -> Response {
    if let Some(info) = slot.and_then(|s| *s.0.lock().unwrap_or_else(|p| p.into_inner())) {
        for (k, v) in crate::http::error::rate_limit_headers(info) {
            resp.headers_mut().insert(k, v);
        }
    }
    resp
}

/// The per-IP limit's figures of a request the shared guards admitted (what the edge reports
/// for requests it counts itself): under the account's, which are the tighter.
#[derive(Clone, Copy)]
struct IpLimit(crate::auth::guard::LimitInfo);

fn with_ip_headers(mut resp: Response, ip_limit: Option<crate::auth::guard::LimitInfo>) -> Response {
    if let Some(info) = ip_limit {
        for (k, v) in crate::http::error::rate_limit_headers(info) {
            resp.headers_mut().entry(k).or_insert(v);
        }
    }
    resp
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

fn with_matched(mut resp: Response, matched: Option<MatchedPath>) -> Response {
    if let Some(m) = matched {
        resp.extensions_mut().insert(m);
    }
    resp
}

enum Admission {
    Admitted(Request),
    Refused(ApiError),
    /// A body to collect or a key to fetch from the store: [`admit_later`].
    Later(Request),
}

/// The checks that need no waiting, in `call`.
fn admit_now(state: &AppState, req: Request) -> Admission {
    let (mut parts, body) = req.into_parts();
    let hs = AuthHeaders::scan(&parts.headers);
    if state.shared.is_some() && (hs.signed() || hs.domain_keyed()) {
        // Shared guards (D17.1): one round trip to Redis, on the asynchronous path.
        return Admission::Later(Request::from_parts(parts, body));
    }
    let checked = if hs.signed() {
        let max = state.config.max_body_bytes;
        if !body.is_end_stream() || hs.declared_length().is_some_and(|len| len > max) {
            return Admission::Later(Request::from_parts(parts, body));
        }
        signed_now(state, &parts, &hs)
    } else if hs.domain_keyed() {
        domain_key_now(state, &parts, &hs)
    } else {
        // No credentials: the route's extractor refuses with 401 and says which headers it takes.
        return Admission::Admitted(Request::from_parts(parts, body));
    };
    match checked {
        Ok(Some(caller)) => {
            parts.extensions.insert(caller);
            Admission::Admitted(Request::from_parts(parts, body))
        }
        // The key is not in memory: fetch it on the asynchronous path.
        Ok(None) => Admission::Later(Request::from_parts(parts, body)),
        Err(e) => Admission::Refused(e),
    }
}

/// The same checks with everything they may wait for: the key from the store, the body.
async fn admit_later(state: &AppState, req: Request) -> Result<Request, ApiError> {
    let (mut parts, body) = req.into_parts();
    let hs = AuthHeaders::scan(&parts.headers);
    if let Some(shared) = &state.shared {
        if hs.signed() || hs.domain_keyed() {
            let (caller, body, ip_limit) = super::shared_auth::admit(state, shared, &parts, &hs, body).await?;
            parts.extensions.insert(caller);
            if let Some(info) = ip_limit {
                parts.extensions.insert(IpLimit(info));
            }
            return Ok(Request::from_parts(parts, body));
        }
    }
    let (caller, body) = if hs.signed() {
        let (caller, bytes) = signed_later(state, &parts, &hs, body).await?;
        (Some(caller), Body::from(bytes))
    } else if hs.domain_keyed() {
        (Some(domain_key_later(state, &parts, &hs).await?), body)
    } else {
        (None, body)
    };
    if let Some(c) = caller {
        parts.extensions.insert(c);
    }
    Ok(Request::from_parts(parts, body))
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

/// A signed request without a body whose key is in memory. `Ok(None)`: the key must be
/// fetched ([`signed_later`]).
fn signed_now(state: &AppState, parts: &Parts, hs: &AuthHeaders<'_>) -> Result<Option<Caller>, ApiError> {
    let head = signed_head(hs)?;
    let ip = client_ip(&parts.headers, &parts.extensions, state.config.security.trust_forwarded_for);
    let now = now_ms();
    let Some(key) = lookup_now(state, head.key_id, ip, now)? else { return Ok(None) };
    let (hmac, ts) = key_and_clock(state, &key, head.timestamp, now)?;
    signed_finish(state, parts, hs, &head, &key, hmac, ts, &[], ip, now).map(Some)
}

async fn signed_later(
    state: &AppState,
    parts: &Parts,
    hs: &AuthHeaders<'_>,
    body: Body,
) -> Result<(Caller, axum::body::Bytes), ApiError> {
    let max = state.config.max_body_bytes;
    // D17.11, only here: a request without a body (every signed GET) never reaches this path
    // for its body, and may omit the content type.
    if !body.is_end_stream() && !hs.json_body() {
        discard_refused_body(body, hs.declared_length().unwrap_or(0), max).await;
        return Err(ApiError::unsupported_media_type());
    }
    let head = signed_head(hs)?;
    let ip = client_ip(&parts.headers, &parts.extensions, state.config.security.trust_forwarded_for);
    let now = now_ms();
    let key = lookup(state, head.key_id, ip, now).await?;
    let (hmac, ts) = key_and_clock(state, &key, head.timestamp, now)?;
    if let Some(len) = hs.declared_length().filter(|len| *len > max) {
        discard_refused_body(body, len, max).await;
        return Err(ApiError::payload_too_large(max));
    }
    let bytes = if body.is_end_stream() {
        // A GET or DELETE without a body: nothing to collect.
        axum::body::Bytes::new()
    } else {
        axum::body::to_bytes(body, max).await.map_err(|e| ApiError::body_unreadable(e, max))?
    };
    let caller = signed_finish(state, parts, hs, &head, &key, hmac, ts, &bytes, ip, now)?;
    Ok((caller, bytes))
}

/// The request target exactly as received (D2.4): the signed path.
pub(super) fn signed_path(parts: &Parts) -> &str {
    match parts.extensions.get::<OriginalUri>() {
        Some(u) => u.0.path_and_query().map(|p| p.as_str()).unwrap_or("/"),
        None => parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"),
    }
}

/// D2.8 steps 4–5 and D2.7: the signature over the body, the replay claim, the named domain.
#[allow(clippy::too_many_arguments)]
fn signed_finish(
    state: &AppState,
    parts: &Parts,
    hs: &AuthHeaders<'_>,
    head: &SignedHead<'_>,
    key: &AuthKey,
    hmac: &tessera_sign::HmacKey,
    ts: i64,
    body: &[u8],
    ip: std::net::IpAddr,
    now: i64,
) -> Result<Caller, ApiError> {
    let path = signed_path(parts);
    let Ok(mac) = hmac.verified_mac(head.timestamp, parts.method.as_str(), path, body, head.signature) else {
        state.guards.failures.bad_signature(head.key_id, ip, now);
        return Err(ApiError::invalid_signature());
    };
    let tolerance = state.config.security.clock_tolerance_ms;
    match state.replay.claim(head.key_id, head.nonce, &mac, now, ts + tolerance + 1) {
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
    let domain = match host_text(hs.domain) {
        None => None,
        Some(d) => Some(approved_domain(state, d, &key.info.account_id)?),
    };
    Ok(caller(key, Scheme::Signed, domain))
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

/// D2.9's guards before any key is looked at: a blocked key/IP pair.
fn pair_guard(state: &AppState, key_id: &str, ip: std::net::IpAddr, now: i64) -> Result<(), ApiError> {
    match state.guards.failures.pair_blocked(key_id, ip, now) {
        Some(secs) => Err(blocked(secs)),
        None => Ok(()),
    }
}

/// The active key with this id, from memory, unless this key id is blocked from this IP or the
/// IP is blocked for probing unknown key ids (D2.9). `Ok(None)`: not in memory, ask [`lookup`].
fn lookup_now(
    state: &AppState,
    key_id: &str,
    ip: std::net::IpAddr,
    now: i64,
) -> Result<Option<Arc<AuthKey>>, ApiError> {
    pair_guard(state, key_id, ip, now)?;
    if !plausible_key_id(key_id) {
        return judge(state, None, ip, now).map(Some);
    }
    match state.directory.key_in_memory(key_id) {
        Some(k) => judge(state, Some(k), ip, now).map(Some),
        None => Ok(None),
    }
}

/// [`lookup_now`], fetching the key from the store when it is not in memory.
async fn lookup(state: &AppState, key_id: &str, ip: std::net::IpAddr, now: i64) -> Result<Arc<AuthKey>, ApiError> {
    pair_guard(state, key_id, ip, now)?;
    let found =
        if plausible_key_id(key_id) { state.directory.key(key_id).await.map_err(ApiError::from)? } else { None };
    judge(state, found, ip, now)
}

fn judge(
    state: &AppState,
    found: Option<Arc<AuthKey>>,
    ip: std::net::IpAddr,
    now: i64,
) -> Result<Arc<AuthKey>, ApiError> {
    let guard = &state.guards.failures;
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

/// A domain-key request whose key is in memory. `Ok(None)`: the key must be fetched.
fn domain_key_now(state: &AppState, parts: &Parts, hs: &AuthHeaders<'_>) -> Result<Option<Caller>, ApiError> {
    let (domain, key_id, secret) = domain_key_head(hs)?;
    let ip = client_ip(&parts.headers, &parts.extensions, state.config.security.trust_forwarded_for);
    let now = now_ms();
    let Some(key) = lookup_now(state, key_id, ip, now)? else { return Ok(None) };
    domain_key_finish(state, hs, domain, key_id, secret, &key, ip, now).map(Some)
}

async fn domain_key_later(state: &AppState, parts: &Parts, hs: &AuthHeaders<'_>) -> Result<Caller, ApiError> {
    let (domain, key_id, secret) = domain_key_head(hs)?;
    let ip = client_ip(&parts.headers, &parts.extensions, state.config.security.trust_forwarded_for);
    let now = now_ms();
    let key = lookup(state, key_id, ip, now).await?;
    domain_key_finish(state, hs, domain, key_id, secret, &key, ip, now)
}

/// The secret against its stored keyed hash, the domain approved for the key's account, and
/// an `Origin`, when sent, naming that domain (D2.3, D2.7).
#[allow(clippy::too_many_arguments)]
fn domain_key_finish(
    state: &AppState,
    hs: &AuthHeaders<'_>,
    domain: &str,
    key_id: &str,
    secret: &str,
    key: &AuthKey,
    ip: std::net::IpAddr,
    now: i64,
) -> Result<Caller, ApiError> {
    if !domain_secret_matches(state, secret, key) {
        state.guards.failures.bad_signature(key_id, ip, now);
        return Err(ApiError::invalid_key());
    }
    domain_key_domain(state, hs, domain, key)
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

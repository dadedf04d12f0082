//! Credential checks for version 1 routes, in the order of D2.8 steps 1–5: headers present →
//! key known and active → timestamp → signature → replay. Account status, scope and the
//! per-account limit follow in the route's caller extractor (`http::extract`). Nothing is
//! written to the store on this path. What this path shares with the Redis one (`shared_auth`)
//! is in [`super::credentials`].
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use axum::body::{Body, HttpBody as _};
use axum::extract::{MatchedPath, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use tower::Service;

use super::client_ip;
use super::credentials::{
    approved_domain, blocked, caller, discard_refused_body, domain_key_domain, domain_key_head, domain_secret_matches,
    host_text, key_and_clock, signed_head, signed_path, AuthHeaders, SignedHead,
};
use crate::auth::directory::AuthKey;
use crate::auth::keys::plausible_key_id;
use crate::auth::replay::ReplayError;
use crate::domain::time::now_ms;
use crate::http::error::ApiError;
use crate::http::extract::{Caller, RateSlot, Scheme};
use crate::state::AppState;

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

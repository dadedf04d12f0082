//! The edge: the per-IP rate limit on API paths and console form posts (D2.10; provider callbacks exempt, D17.16) and CORS preflight for the
//! domain-key routes (D2.3: answered only for approved domains).
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::client_ip;
use super::credentials::{counted_by_credentials, origin_host, IP_LIMITED};
use crate::http::error::{rate_limit_headers, ApiError};
use crate::http::is_domain_key_path;
use crate::state::AppState;

/// The provider-callback routes, `/api/white-label/webhooks/{provider}`.
const CALLBACKS_PREFIX: &str = "/api/white-label/webhooks/";

pub const ALLOWED_HEADERS: &str = "content-type, x-white-label-domain, x-white-label-key, x-request-id";
pub const EXPOSED_HEADERS: &str = "x-request-id, ratelimit-limit, ratelimit-remaining, ratelimit-reset, retry-after";

pub async fn layer(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    // D17.16: provider callbacks are outside the per-IP limit (their signature check is first
    // and cheap); every other API route keeps it, and so do the console's form posts (sign-in
    // included: each writes), refused with an HTML page.
    let console_post = path.starts_with("/console/") && req.method() == Method::POST;
    if (!path.starts_with("/api/") && !console_post) || path.starts_with(CALLBACKS_PREFIX) {
        return next.run(req).await;
    }
    if req.method() == Method::OPTIONS && req.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) {
        return preflight(&state, &req);
    }
    // CORS headers go on every answer of a domain-key route to an approved origin, errors
    // included, so that a browser can read why it was refused. The auth middleware separately
    // requires the origin to be the domain the request names.
    let cors_origin = req
        .headers()
        .get(header::ORIGIN)
        .filter(|o| is_domain_key_path(path) && approved_origin(&state, o.to_str().ok()))
        .cloned();
    let ip = client_ip(req.headers(), req.extensions(), state.config.security.trust_forwarded_for);
    let verdict = match &state.shared {
        // A credentialed version 1 request is counted with its credentials, in one round trip.
        Some(_) if counted_by_credentials(&state, path, req.headers()) => Ok(None),
        Some(shared) => shared_ip_limit(shared, &ip).await,
        None => state.guards.per_ip.check(&ip),
    };
    let mut resp = match verdict {
        Ok(info) => {
            let mut resp = next.run(req).await;
            if let Some(info) = info {
                // The account limit, when one applied, is the tighter and already set.
                for (k, v) in rate_limit_headers(info) {
                    resp.headers_mut().entry(k).or_insert(v);
                }
            }
            resp
        }
        Err(info) if console_post => {
            crate::http::console::ConsoleError::Throttled(info.reset_secs, IP_LIMITED.to_string()).into_response()
        }
        Err(info) => ApiError::rate_limited(info, IP_LIMITED).into_response(),
    };
    if let Some(origin) = cors_origin {
        let h = resp.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSED_HEADERS));
        h.insert(header::VARY, HeaderValue::from_static("origin"));
    }
    resp
}

/// The per-IP limit in the shared guards (D17.1); it fails open when Redis is away (D17.2).
async fn shared_ip_limit(
    shared: &crate::auth::shared::SharedGuards,
    ip: &std::net::IpAddr,
) -> Result<Option<crate::auth::guard::LimitInfo>, crate::auth::guard::LimitInfo> {
    use crate::auth::shared::{Failure, Verdict};
    match shared.refused(&ip.to_string(), Failure::Nothing).await {
        Ok(Verdict::IpLimited(info)) => Err(info),
        Ok(Verdict::Admitted { ip, .. }) => Ok(ip),
        _ => Ok(None),
    }
}

/// Whether an `Origin` value is a verified domain of some account.
fn approved_origin(state: &AppState, origin: Option<&str>) -> bool {
    origin.and_then(origin_host).is_some_and(|h| state.directory.domain_account(&h).is_some())
}

fn preflight(state: &AppState, req: &Request) -> Response {
    let origin = req.headers().get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let approved = is_domain_key_path(req.uri().path()) && approved_origin(state, origin);
    let Some(origin) = origin.filter(|_| approved) else {
        return ApiError::domain_not_allowed().into_response();
    };
    let mut resp = StatusCode::NO_CONTENT.into_response();
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(origin) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
    }
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST"));
    h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static(ALLOWED_HEADERS));
    h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    h.insert(header::VARY, HeaderValue::from_static("origin"));
    resp
}

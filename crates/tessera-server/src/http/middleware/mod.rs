//! Middleware in request order: request id and access log → edge (per-IP limit, CORS
//! preflight) → route match → auth (credentials: keys on version 1 routes, the portal session on
//! portal routes) → handler.
pub mod auth;
pub mod credentials;
pub mod edge;
pub mod request_id;
pub mod session;
mod shared_auth;

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::http::{Extensions, HeaderMap};

/// The client IP: the socket peer, or the first `X-Forwarded-For` hop when configured to
/// trust a proxy.
pub fn client_ip(headers: &HeaderMap, extensions: &Extensions, trust_forwarded_for: bool) -> IpAddr {
    if trust_forwarded_for {
        if let Some(ip) = headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .and_then(|v| v.trim().parse().ok())
        {
            return ip;
        }
    }
    extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip()).unwrap_or(IpAddr::from([127, 0, 0, 1]))
}

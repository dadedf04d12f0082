//! The reseller portal's two layers (spec Scheme 3, D10.1, D15.5, D16.17, D16.26):
//! - [`envelope`], on every portal route: the portal's error body is `{success: false, error,
//!   code, details?}` with no `requestId` (the `x-request-id` header stays), whoever produced
//!   the error (a handler, an extractor, the session check);
//! - [`layer`], the third authentication piece beside the key schemes of `auth.rs`: it reads
//!   `Authorization: Bearer <token>`, finds the session by the token's keyed hash and compares
//!   it in constant time (`flows::customer_access::portal_session`, which also slides the
//!   12-hour expiry), refuses a key or signature (401), and hands the handler a
//!   [`PortalCaller`]. No handler reads the header.
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::domain::time::now_ms;
use crate::flows::customer_access::portal_session;
use crate::http::error::ApiError;
use crate::http::portal::PortalCaller;
use crate::state::AppState;

/// Key-scheme headers: a portal route refuses them (D16.17).
const KEY_HEADERS: [&str; 4] =
    [tessera_sign::HEADER_KEY_ID, tessera_sign::HEADER_SIGNATURE, "x-white-label-key", "x-white-label-domain"];

fn unauthorized(message: &'static str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "missing_auth", message).with_detail("authorization", "Bearer <token>")
}

fn bearer(req: &Request) -> Option<&str> {
    let v = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && token.len() <= 256).then_some(token)
}

pub async fn layer(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    if KEY_HEADERS.iter().any(|h| req.headers().contains_key(*h)) {
        return unauthorized("portal routes take a user session (Authorization: Bearer), not a key or signature")
            .into_response();
    }
    let Some(token) = bearer(&req) else {
        return unauthorized("sign in first: Authorization: Bearer <session token>").into_response();
    };
    let session = match portal_session(&state.store, state.keyring(), token, now_ms()).await {
        Ok(Some(s)) => s,
        Ok(None) => return unauthorized("the session is unknown, expired or ended; sign in again").into_response(),
        Err(e) => return ApiError::from(e).into_response(),
    };
    req.extensions_mut().insert(PortalCaller::new(session));
    next.run(req).await
}

/// Drops `requestId` from JSON bodies of portal answers (D16.26); everything else passes.
pub async fn envelope(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json || resp.status().is_success() {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
        return ApiError::internal("unreadable error body").into_response();
    };
    let out = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(serde_json::Value::Object(mut m)) => {
            m.remove("requestId");
            serde_json::to_vec(&m).unwrap_or_else(|_| bytes.to_vec())
        }
        _ => bytes.to_vec(),
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(out))
}

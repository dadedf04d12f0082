//! Request ids (D1.1), the access log (one line per request with method, route, status,
//! latency and requestId) and the request metrics (`telemetry::metrics::http_request`, by route
//! template, never a raw path). Being outermost, it also keeps every answer in the envelope:
//! over-long targets and header sections are refused here (414, 431) before hyper's own, larger
//! limits would answer without one, and a plain-text rejection from an axum extractor (an
//! invalid UTF-8 path parameter) is rewritten as an error envelope.
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::envelope::REQUEST_ID;
use crate::http::error::ApiError;

pub const HEADER: &str = "x-request-id";

/// Longest request target (path and query) answered other than 414.
pub const MAX_TARGET_BYTES: usize = 8 * 1024;
/// Most header fields, and most bytes of them, answered other than 431.
pub const MAX_HEADERS: usize = 100;
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

fn valid(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A fresh request id.
pub fn new_id() -> String {
    format!("req_{}", uuid::Uuid::now_v7().simple())
}

pub async fn layer(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = req
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| valid(v))
        .map(str::to_string)
        .unwrap_or_else(new_id);
    // The access line's fields are gathered only when it will be written.
    let log = tracing::enabled!(tracing::Level::INFO);
    let line = log.then(|| {
        let matched = req.extensions().get::<MatchedPath>().map(|m| m.as_str().to_string());
        (req.method().clone(), matched.unwrap_or_else(|| req.uri().path().to_string()))
    });
    let method = req.method().clone();
    let template = req.extensions().get::<MatchedPath>().cloned();
    let mut resp = REQUEST_ID
        .scope(id.clone(), async move {
            if let Some(refusal) = oversized(&req) {
                return refusal.into_response();
            }
            enveloped(next.run(req).await).await
        })
        .await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(HEADER, v);
    }
    let template = template.or_else(|| resp.extensions().get::<MatchedPath>().cloned());
    crate::telemetry::metrics::http_request(
        method.as_str(),
        template.as_ref().map_or(crate::telemetry::metrics::UNMATCHED, |m| m.as_str()),
        resp.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    if let Some((method, path)) = line {
        // The route template when matched (no ids in logs), else the raw path.
        let route = template.as_ref().map(|m| m.as_str()).unwrap_or(&path);
        tracing::info!(
            method = %method,
            route = %route,
            status = resp.status().as_u16(),
            latency_ms = started.elapsed().as_secs_f64() * 1000.0,
            request_id = %id,
            "request"
        );
    }
    resp
}

/// 414 for a request target over [`MAX_TARGET_BYTES`], 431 for more than [`MAX_HEADERS`] header
/// fields or [`MAX_HEADER_BYTES`] of them.
fn oversized(req: &Request) -> Option<ApiError> {
    let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target > MAX_TARGET_BYTES {
        return Some(ApiError::uri_too_long(MAX_TARGET_BYTES));
    }
    let h = req.headers();
    let bytes: usize = h.iter().map(|(k, v)| k.as_str().len() + v.len() + 4).sum();
    if h.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return Some(ApiError::headers_too_large(MAX_HEADERS, MAX_HEADER_BYTES));
    }
    None
}

/// A plain-text error from an axum extractor, rewritten as an error envelope.
async fn enveloped(resp: Response) -> Response {
    let plain = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/plain"));
    let status = resp.status();
    if !plain || !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    if status.is_server_error() {
        return ApiError::internal(format!("plain-text {status} from the router")).into_response();
    }
    let text = axum::body::to_bytes(resp.into_body(), 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).into_owned();
    let mut e = ApiError::new(status, "validation_failed", text.clone());
    if text.starts_with("Invalid URL") || text.contains("path") {
        e = e.with_detail("path", "a path parameter is not valid (it must be UTF-8 text of the right form)");
    }
    e.into_response()
}

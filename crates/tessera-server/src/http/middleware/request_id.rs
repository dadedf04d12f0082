//! Request ids (D1.1) and the access log: one line per request with method, route, status,
//! latency and requestId.
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

use crate::http::envelope::REQUEST_ID;

pub const HEADER: &str = "x-request-id";

fn valid(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

pub async fn layer(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = req
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| valid(v))
        .map(str::to_string)
        .unwrap_or_else(|| format!("req_{}", uuid::Uuid::now_v7().simple()));
    // The access line's fields are gathered only when it will be written.
    let log = tracing::enabled!(tracing::Level::INFO);
    let line = log.then(|| {
        let matched = req.extensions().get::<MatchedPath>().map(|m| m.as_str().to_string());
        (req.method().clone(), matched.unwrap_or_else(|| req.uri().path().to_string()))
    });
    let mut resp = REQUEST_ID.scope(id.clone(), next.run(req)).await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(HEADER, v);
    }
    if let Some((method, path)) = line {
        // The route template when matched (no ids in logs), else the raw path.
        let route = resp.extensions().get::<MatchedPath>().map(|m| m.as_str()).unwrap_or(&path);
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

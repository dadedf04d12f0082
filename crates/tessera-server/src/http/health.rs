//! Liveness, readiness and metrics, outside the version 1 envelope and auth.
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;

use crate::state::AppState;

/// GET /healthz — the process is up.
#[utoipa::path(get, path = "/healthz", operation_id = "health_live", tag = "health", responses((status = 200, description = "up")))]
pub async fn healthz() -> impl IntoResponse {
    Json(serde_json::json!({"status": "ok"}))
}

/// GET /readyz — the store answers.
#[utoipa::path(get, path = "/readyz", operation_id = "health_ready", tag = "health", responses((status = 200, description = "ready"), (status = 503, description = "store unreachable")))]
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    if state.store.ping().await {
        (StatusCode::OK, Json(serde_json::json!({"status": "ready"})))
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Json(serde_json::json!({"status": "unavailable"})))
    }
}

/// GET /metrics — Prometheus text format (D16.20), no auth; see `telemetry::metrics`.
pub async fn metrics() -> impl IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        crate::telemetry::metrics::render(),
    )
}

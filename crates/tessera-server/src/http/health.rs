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

/// GET /readyz — the store answers, and Redis too when instances share it (D17.2).
#[utoipa::path(get, path = "/readyz", operation_id = "health_ready", tag = "health", responses((status = 200, description = "ready: `{status: ready, checks: {database: ok, redis?: ok}}`"), (status = 503, description = "the database or Redis does not answer: `{status: unavailable, checks: {database: ok|unreachable, redis?: ok|unreachable}}`")))]
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let (database, redis) = match &state.shared {
        Some(shared) => {
            let (db, redis) = tokio::join!(state.store.ping(), shared.ping());
            (db, Some(redis))
        }
        None => (state.store.ping().await, None),
    };
    let word = |ok: bool| if ok { "ok" } else { "unreachable" };
    let mut checks = serde_json::json!({"database": word(database)});
    if let Some(r) = redis {
        checks["redis"] = word(r).into();
    }
    if database && redis.unwrap_or(true) {
        (StatusCode::OK, Json(serde_json::json!({"status": "ready", "checks": checks})))
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Json(serde_json::json!({"status": "unavailable", "checks": checks})))
    }
}

/// GET /metrics — Prometheus text format (D16.20), no auth; see `telemetry::metrics`.
pub async fn metrics() -> impl IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        crate::telemetry::metrics::render(),
    )
}

//! Foundation: health, envelope, signed and domain-key authentication end to end.
use serde_json::Value;

use crate::support::client::{assert_error, StatusCode};
use crate::support::server::{spawn, Backend};

async fn the_context_answers_a_signed_request(b: Backend) {
    let app = spawn(b).await;
    let body: Value = app.api().get("/api/white-label/v1/context", StatusCode::OK).await;
    assert_eq!(body["success"], true);
    assert_eq!(body["data"]["account"]["accountSlug"], app.account.slug.as_str());
    assert_eq!(body["data"]["domains"][0]["hostname"], app.account.domain.as_str());
    assert!(body["requestId"].as_str().is_some_and(|s| !s.is_empty()));
}

async fn a_signed_route_without_headers_is_401_missing_auth(b: Backend) {
    let app = spawn(b).await;
    let r =
        crate::support::client::raw(app.http.get(app.url("/api/white-label/v1/context")).send().await.expect("send"))
            .await;
    assert_error(&r, 401, "missing_auth");
}

on_both!(the_context_answers_a_signed_request, a_signed_route_without_headers_is_401_missing_auth);

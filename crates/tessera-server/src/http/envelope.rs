//! The response envelope of version 1 routes (spec "Endpoints", D1.1):
//! `{success: true, data, requestId}` (plus `pagination` on lists). The request id lives in a
//! task-local set by the request-id middleware, so every body and header carry the same value.
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

tokio::task_local! {
    /// The id of the request being served.
    pub static REQUEST_ID: String;
}

/// The current request id, or `"-"` outside a request.
pub fn request_id() -> String {
    REQUEST_ID.try_with(|id| id.clone()).unwrap_or_else(|_| "-".to_string())
}

/// `pagination` beside `data` on list routes (D1.8).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pagination {
    pub page: u32,
    pub limit: u32,
    pub total: u64,
    pub has_more: bool,
}

impl Pagination {
    /// Page `page` of `limit` items among `total`.
    pub fn of(page: u32, limit: u32, total: u64) -> Self {
        Pagination { page, limit, total, has_more: u64::from(page) * u64::from(limit) < total }
    }
}

/// Success envelope, as documented (the server builds it in [`ApiResponse`]).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<T> {
    /// Always `true`.
    pub success: bool,
    pub data: T,
    pub request_id: String,
}

/// List envelope, as documented.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListEnvelope<T> {
    pub success: bool,
    pub data: Vec<T>,
    pub pagination: Pagination,
    pub request_id: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a, T> {
    success: bool,
    data: &'a T,
    #[serde(skip_serializing_if = "Option::is_none")]
    pagination: Option<Pagination>,
    request_id: String,
}

/// A successful answer of a version 1 route.
pub struct ApiResponse<T> {
    status: StatusCode,
    data: T,
    pagination: Option<Pagination>,
}

impl<T: Serialize> ApiResponse<T> {
    pub fn ok(data: T) -> Self {
        ApiResponse { status: StatusCode::OK, data, pagination: None }
    }
    pub fn created(data: T) -> Self {
        ApiResponse { status: StatusCode::CREATED, data, pagination: None }
    }
    pub fn accepted(data: T) -> Self {
        ApiResponse { status: StatusCode::ACCEPTED, data, pagination: None }
    }
    pub fn list(data: T, pagination: Pagination) -> Self {
        ApiResponse { status: StatusCode::OK, data, pagination: Some(pagination) }
    }
}

/// A 200 whose `data` is JSON already rendered (for answers cached as bytes): the same envelope
/// as [`ApiResponse::ok`], assembled around the bytes instead of serializing `data` again.
pub fn ok_rendered(data_json: &[u8]) -> Response {
    ok_rendered_page(data_json, None)
}

/// [`ok_rendered`] with `pagination` (a list answer, as [`ApiResponse::list`]).
pub fn ok_rendered_page(data_json: &[u8], pagination: Option<&Pagination>) -> Response {
    let id = request_id();
    let mut body = Vec::with_capacity(data_json.len() + id.len() + 128);
    body.extend_from_slice(br#"{"success":true,"data":"#);
    body.extend_from_slice(data_json);
    if let Some(p) = pagination {
        body.extend_from_slice(br#","pagination":"#);
        if let Err(e) = serde_json::to_writer(&mut body, p) {
            return super::error::ApiError::internal(e).into_response();
        }
    }
    body.extend_from_slice(br#","requestId":"#);
    // Request ids are validated or generated as [A-Za-z0-9._-] (or "-"), but escape regardless.
    match serde_json::to_writer(&mut body, &id) {
        Ok(()) => body.push(b'}'),
        Err(e) => return super::error::ApiError::internal(e).into_response(),
    }
    (StatusCode::OK, [(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
}

impl<T: Serialize> IntoResponse for ApiResponse<T> {
    fn into_response(self) -> Response {
        let body = Body { success: true, data: &self.data, pagination: self.pagination, request_id: request_id() };
        match serde_json::to_vec(&body) {
            Ok(bytes) => (self.status, [(axum::http::header::CONTENT_TYPE, "application/json")], bytes).into_response(),
            Err(e) => super::error::ApiError::internal(e).into_response(),
        }
    }
}

//! `ApiError`: the one place where failures become statuses and error envelopes
//! (`{success: false, error, code, requestId, details?}`, spec "Errors" and D1.2–D1.3).
//! Internal causes are logged with the request id and never sent.
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::envelope::request_id;
use crate::auth::guard::LimitInfo;
use crate::domain::{DomainError, FieldError};
use crate::store::StoreError;

/// One item of `details`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Detail {
    /// The field, as a path into the body or query (`ticketTypes[0].price`) or a header name.
    pub field: String,
    pub message: String,
}

impl From<FieldError> for Detail {
    fn from(f: FieldError) -> Self {
        Detail { field: f.field, message: f.message }
    }
}

/// Error envelope of version 1 routes.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorEnvelope {
    /// Always `false`.
    pub success: bool,
    /// Human-readable message.
    pub error: String,
    /// Machine-readable code (D1.2), e.g. `validation_failed`, `invalid_signature`.
    pub code: String,
    pub request_id: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Detail>,
}

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    /// Borrowed when static (most refusals), so refusing allocates nothing for it.
    pub message: std::borrow::Cow<'static, str>,
    pub details: Vec<Detail>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

pub type ApiResult<T> = Result<super::envelope::ApiResponse<T>, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        ApiError { status, code, message: message.into(), details: Vec::new(), headers: Vec::new() }
    }

    pub fn with_detail(mut self, field: impl Into<String>, message: impl Into<String>) -> Self {
        self.details.push(Detail { field: field.into(), message: message.into() });
        self
    }

    pub fn validation(details: Vec<Detail>) -> Self {
        ApiError { details, ..Self::new(StatusCode::BAD_REQUEST, "validation_failed", "validation failed") }
    }
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::validation(vec![Detail { field: field.into(), message: message.into() }])
    }
    pub fn malformed_json(message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "malformed_json", message)
    }
    pub fn missing_auth(message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "missing_auth", message)
    }
    pub fn invalid_key() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_key", "the key is unknown, revoked or not valid for this scheme")
    }
    pub fn invalid_signature() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_signature", "the signature does not match the request")
    }
    pub fn stale_timestamp() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "stale_timestamp", "the timestamp is outside the accepted clock window")
    }
    pub fn replayed() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "replayed_request",
            "this nonce or signature was already used; sign again with a fresh timestamp and nonce",
        )
    }
    pub fn account_inactive(status: &str) -> Self {
        Self::new(StatusCode::FORBIDDEN, "account_inactive", format!("the account is {status}"))
    }
    pub fn insufficient_scope(missing: &[&str]) -> Self {
        let mut e = Self::new(
            StatusCode::FORBIDDEN,
            "insufficient_scope",
            format!("the key lacks the scope {}", missing.join(", ")),
        );
        for m in missing {
            e = e.with_detail("scope", format!("requires {m}"));
        }
        e
    }
    pub fn domain_not_allowed() -> Self {
        Self::new(StatusCode::FORBIDDEN, "domain_not_allowed", "the domain is not an approved domain of this account")
    }
    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", format!("{what} not found"))
    }
    pub fn conflict(message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }
    pub fn invalid_transition(message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self::new(StatusCode::CONFLICT, "invalid_transition", message)
    }
    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", format!("the body is larger than {limit} bytes"))
    }
    /// 415 (D17.11): a signed request with a body that is not declared `application/json`.
    pub fn unsupported_media_type() -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "a request with a body must send content-type: application/json",
        )
        .with_detail("content-type", "must be application/json (a charset parameter is allowed)")
    }
    /// 414 (D17.44).
    pub fn uri_too_long(limit: usize) -> Self {
        Self::new(StatusCode::URI_TOO_LONG, "uri_too_long", format!("the request target is longer than {limit} bytes"))
    }
    /// 431 (D17.44).
    pub fn headers_too_large(max_fields: usize, max_bytes: usize) -> Self {
        Self::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!("at most {max_fields} header fields and {max_bytes} bytes of them"),
        )
    }
    /// 400 for a request whose head could not be read (request line, a header's syntax, its
    /// `Content-Length` or `Transfer-Encoding` framing).
    pub fn malformed_request() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "validation_failed",
            "the request is malformed: its request line or header framing (Content-Length, Transfer-Encoding) \
             could not be read",
        )
    }
    /// 413 when a body outgrew the limit; 400 `malformed_json` when it could not be read whole
    /// (the client cut it short or sent broken chunked framing), which is not a size problem.
    pub fn body_unreadable(e: axum::Error, max_body_bytes: usize) -> Self {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(s) = source {
            if s.is::<http_body_util::LengthLimitError>() {
                return Self::payload_too_large(max_body_bytes);
            }
            source = s.source();
        }
        Self::malformed_json("the request body could not be read whole (cut short, or broken chunked framing)")
    }
    pub fn method_not_allowed() -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "this route does not take that method")
    }
    /// 502: no payment provider could take the request (D5.4, D16.6).
    pub fn provider_unavailable(message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self::new(StatusCode::BAD_GATEWAY, "provider_unavailable", message)
    }
    /// 429 with `Retry-After` and the RateLimit headers.
    pub fn rate_limited(info: LimitInfo, message: &'static str) -> Self {
        let mut e = Self::retry_later(info.reset_secs, message);
        e.headers.extend(rate_limit_headers(info));
        e
    }
    /// 429 with `Retry-After` only, where no request budget applies (an authentication block,
    /// a full replay store).
    /// D17.2: the shared replay store (Redis) does not answer; signed requests fail closed.
    pub fn replay_store_unavailable() -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "replay_store_unavailable",
            "the replay store is unavailable; retry shortly with a fresh signature",
        );
        e.headers.push((HeaderName::from_static("retry-after"), HeaderValue::from(1u32)));
        e
    }
    pub fn retry_later(retry_after_secs: u64, message: &'static str) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message);
        e.headers.push((HeaderName::from_static("retry-after"), HeaderValue::from(retry_after_secs)));
        e
    }
    /// A 500; the cause goes to the log under the request id, the client sees nothing of it.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(request_id = %request_id(), error = %cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; quote the requestId when reporting it",
        )
    }
}

/// `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`.
pub fn rate_limit_headers(info: LimitInfo) -> Vec<(HeaderName, HeaderValue)> {
    vec![
        (HeaderName::from_static("ratelimit-limit"), HeaderValue::from(info.limit)),
        (HeaderName::from_static("ratelimit-remaining"), HeaderValue::from(info.remaining)),
        (HeaderName::from_static("ratelimit-reset"), HeaderValue::from(info.reset_secs)),
    ]
}

impl ApiError {
    /// The documented `ErrorEnvelope` with this request id, written from borrowed parts into one
    /// buffer (no copy of the code, message or request id): refusals are the hot path of a flood.
    pub fn envelope_bytes(&self, request_id: &str) -> serde_json::Result<Vec<u8>> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Body<'a> {
            success: bool,
            error: &'a str,
            code: &'a str,
            request_id: &'a str,
            #[serde(skip_serializing_if = "<[Detail]>::is_empty")]
            details: &'a [Detail],
        }
        let mut buf = Vec::with_capacity(96 + self.message.len() + request_id.len());
        let body = Body { success: false, error: &self.message, code: self.code, request_id, details: &self.details };
        serde_json::to_writer(&mut buf, &body).map(|_| buf)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let write = |request_id: &str| self.envelope_bytes(request_id);
        let bytes = match super::envelope::REQUEST_ID.try_with(|id| write(id)).unwrap_or_else(|_| write("-")) {
            Ok(b) => b,
            Err(_) => return (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response(),
        };
        let mut resp = Response::new(axum::body::Body::from(bytes));
        *resp.status_mut() = self.status;
        resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (k, v) in self.headers {
            resp.headers_mut().insert(k, v);
        }
        resp
    }
}

impl From<DomainError> for ApiError {
    fn from(e: DomainError) -> Self {
        match e {
            DomainError::Validation(fields) => ApiError::validation(fields.into_iter().map(Detail::from).collect()),
            DomainError::InvalidTransition(m) => ApiError::invalid_transition(m),
            DomainError::Conflict(m) => ApiError::conflict(m),
            DomainError::Refused { status, code, message } => {
                ApiError::new(StatusCode::from_u16(status).unwrap_or(StatusCode::CONFLICT), code, message)
            }
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => ApiError::not_found(what),
            StoreError::Conflict(m) => ApiError::conflict(m),
            StoreError::SoldOut(m) => ApiError::new(StatusCode::CONFLICT, "sold_out", m),
            StoreError::InsufficientBalance(m) => ApiError::new(StatusCode::CONFLICT, "insufficient_balance", m),
            other => ApiError::internal(other),
        }
    }
}

impl From<crate::flows::FlowError> for ApiError {
    fn from(e: crate::flows::FlowError) -> Self {
        match e {
            crate::flows::FlowError::Domain(d) => d.into(),
            crate::flows::FlowError::Store(s) => s.into(),
            crate::flows::FlowError::ProviderUnavailable(m) => ApiError::provider_unavailable(m),
        }
    }
}

//! Notifications (spec "POST /notifications", Events; D9.2, D13.1, D16.11): queue an e-mail or
//! an SMS (202, the row and its job in one transaction) and read its delivery state.
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::{optional, pagination, reject_if_any, PageParams};
use crate::domain::check::{email, free_object, phone, text, Check};
use crate::domain::time::{now_ms, rfc3339};
use crate::domain::{DomainError, FieldError};
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{scope, ApiJson, ApiQuery, Signed};
use crate::http::openapi::{BodyErrors, NotFound, QueryErrors, SignedErrors};
use crate::state::AppState;
use crate::store::notifications::{NewNotification, Notification, NotificationQuery};

/// Body of `POST /notifications`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NotificationIn {
    /// `email` or `sms`.
    pub channel: Option<String>,
    /// Label for templates and analytics (1–100 characters of `a-z 0-9 . _ -`):
    /// `ticket.purchase.confirmed`, `vote.payment.success`, `donation.payment.success`,
    /// `campaign.status.updated` have templates; others need `payload.html` or `payload.text`.
    pub event_type: Option<String>,
    /// An e-mail address for `email`; a phone number (E.164, or Ghana local 0XXXXXXXXX) for `sms`.
    pub recipient: Option<String>,
    /// E-mail subject (up to 255 characters).
    pub subject: Option<String>,
    /// Template variables, or direct content (`title`, `html`, `text`); free-form, ≤ 16 KiB.
    #[schema(value_type = Option<Object>)]
    pub payload: Option<Value>,
}

/// A notification and its delivery state.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationOut {
    pub id: String,
    /// `email` or `sms`.
    pub channel: String,
    pub event_type: String,
    pub recipient: String,
    pub subject: Option<String>,
    /// `queued`, `sending`, `sent` or `failed`.
    pub status: String,
    /// Delivery attempts so far (at most 6).
    pub attempts: i64,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    pub sent_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Notification> for NotificationOut {
    fn from(n: Notification) -> Self {
        NotificationOut {
            id: n.id,
            channel: n.channel,
            event_type: n.event_type,
            recipient: n.recipient,
            subject: n.subject,
            status: n.status,
            attempts: n.attempts,
            last_error: n.last_error,
            sent_at: n.sent_at.map(rfc3339),
            created_at: rfc3339(n.created_at),
            updated_at: rfc3339(n.updated_at),
        }
    }
}

/// What `POST /notifications` answers (D16.11).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceptedOut {
    pub id: String,
    pub channel: String,
    /// Always `queued`.
    pub status: String,
    pub event_type: String,
}

fn parse_channel(field: &str, s: &str) -> Result<String, DomainError> {
    match s {
        "email" | "sms" => Ok(s.to_string()),
        _ => Err(DomainError::Validation(vec![FieldError::new(field, "must be email or sms")])),
    }
}

fn parse_status(field: &str, s: &str) -> Result<String, DomainError> {
    match s {
        "queued" | "sending" | "sent" | "failed" => Ok(s.to_string()),
        _ => Err(DomainError::Validation(vec![FieldError::new(field, "must be queued, sending, sent or failed")])),
    }
}

/// POST /api/white-label/v1/notifications — Signed — notifications:write
#[utoipa::path(
    post, path = "/api/white-label/v1/notifications", tag = "notifications", operation_id = "notifications_create",
    security(("signed" = [])),
    request_body(content = NotificationIn, example = json!({"channel": "email", "eventType": "event.reminder", "recipient": "ama@example.com", "subject": "Doors open at 6", "payload": {"title": "Doors open at 6", "text": "See you tonight."}})),
    responses(
        (status = 202, description = "Queued for delivery. Errors:; 400: A field is missing or invalid (`validation_failed`, details name each)", body = Envelope<AcceptedOut>),
        SignedErrors, BodyErrors,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Signed<scope::NotificationsWrite>,
    ApiJson(body): ApiJson<NotificationIn>,
) -> ApiResult<AcceptedOut> {
    let mut check = Check::new();
    let channel = match body.channel.as_deref() {
        None => {
            check.fail("channel", "is required");
            None
        }
        Some(c) => check.take(parse_channel("channel", c)),
    };
    let event_type = match body.event_type.as_deref() {
        None => {
            check.fail("eventType", "is required");
            None
        }
        Some(e)
            if e.is_empty()
                || e.len() > 100
                || !e.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b)) =>
        {
            check.fail("eventType", "must be 1 to 100 characters of a-z, 0-9, '.', '_' and '-'");
            None
        }
        Some(e) => Some(e.to_string()),
    };
    let recipient = match (body.recipient.as_deref(), channel.as_deref()) {
        (None, _) => {
            check.fail("recipient", "is required");
            None
        }
        (Some(r), Some("sms")) => check.take(phone("recipient", r)),
        (Some(r), Some(_)) => check.take(email("recipient", r)),
        (Some(_), None) => None,
    };
    let subject = body.subject.as_deref().and_then(|s| check.take(text("subject", s, 1, 255)));
    let payload = match body.payload {
        None => Some(Value::Object(Default::default())),
        Some(p) => check.take(free_object("payload", &p)).map(|_| p),
    };
    check.finish()?;
    let (Some(channel), Some(event_type), Some(recipient), Some(payload)) = (channel, event_type, recipient, payload)
    else {
        return Err(ApiError::internal("validated input missing"));
    };
    let n = NewNotification {
        channel: &channel,
        event_type: &event_type,
        recipient: &recipient,
        subject: subject.as_deref(),
        payload: &payload,
    };
    let created = state.store.create_notification(&caller.account_id, &n, now_ms()).await?;
    Ok(ApiResponse::accepted(AcceptedOut {
        id: created.id,
        channel: created.channel,
        status: created.status,
        event_type: created.event_type,
    }))
}

/// GET /api/white-label/v1/notifications/{id} — Signed — notifications:write
#[utoipa::path(
    get, path = "/api/white-label/v1/notifications/{id}", tag = "notifications", operation_id = "notifications_show",
    security(("signed" = [])),
    params(("id" = String, Path, description = "The notification id")),
    responses(
        (status = 200, body = Envelope<NotificationOut>),
        SignedErrors, NotFound,
    )
)]
pub async fn show(
    State(state): State<AppState>,
    caller: Signed<scope::NotificationsWrite>,
    Path(id): Path<String>,
) -> ApiResult<NotificationOut> {
    Ok(ApiResponse::ok(state.store.notification(&caller.account_id, &id).await?.into()))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// `queued`, `sending`, `sent` or `failed`.
    #[param(schema_with = status_schema)]
    pub status: Option<String>,
    /// `email` or `sms`.
    #[param(schema_with = channel_schema)]
    pub channel: Option<String>,
    /// Page number, from 1 (default 1).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1_000_000)]
    pub page: Option<String>,
    /// Items per page, 1–100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
}

// The document says what `parse_status`, `parse_channel` and the pager accept (schema-driven
// fuzzing found these four declared as free strings).
fn status_schema() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(&["queued", "sending", "sent", "failed"], "A notification status.")
}

fn channel_schema() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(&["email", "sms"], "A notification channel.")
}

/// GET /api/white-label/v1/notifications — Signed — notifications:write
#[utoipa::path(
    get, path = "/api/white-label/v1/notifications", tag = "notifications", operation_id = "notifications_list",
    security(("signed" = [])),
    params(ListParams),
    responses(
        (status = 200, description = "The account's notifications, newest first", body = ListEnvelope<NotificationOut>),
        SignedErrors, QueryErrors,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::NotificationsWrite>,
    ApiQuery(q): ApiQuery<ListParams>,
) -> ApiResult<Vec<NotificationOut>> {
    let mut details = Vec::new();
    let (page, limit) = PageParams { page: q.page, limit: q.limit }.parse(&mut details);
    let status = optional(&mut details, q.status.as_deref(), |s| parse_status("status", s))?;
    let channel = optional(&mut details, q.channel.as_deref(), |s| parse_channel("channel", s))?;
    reject_if_any(details)?;
    let (items, total) =
        state.store.list_notifications(&caller.account_id, &NotificationQuery { status, channel, page, limit }).await?;
    Ok(ApiResponse::list(items.into_iter().map(Into::into).collect(), pagination(page, limit, total)))
}

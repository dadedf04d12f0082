//! Notifications (spec "POST /notifications", Events; D9.2, D13.1, D16.11): queue an e-mail or
//! an SMS (202, the row and its job in one transaction) and read its delivery state.
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::domain::check::Check;
use crate::domain::notifications::{parse_request, NotificationChannel, NotificationInput, NotificationStatus};
use crate::domain::time::{now_ms, rfc3339};
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::ApiResult;
use crate::http::extract::{scope, ApiJson, ListFilters, ListQuery, Signed};
use crate::http::openapi::{string_enum, BodyErrors, NotFound, QueryErrors, SignedErrors};
use crate::state::AppState;
use crate::store::notifications::{Notification, NotificationQuery};

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

impl NotificationIn {
    /// The body's fields, for the domain's rules.
    fn input(&self) -> NotificationInput<'_> {
        NotificationInput {
            channel: self.channel.as_deref(),
            event_type: self.event_type.as_deref(),
            recipient: self.recipient.as_deref(),
            subject: self.subject.as_deref(),
            payload: self.payload.as_ref(),
        }
    }
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
            channel: n.channel.as_str().into(),
            event_type: n.event_type,
            recipient: n.recipient,
            subject: n.subject,
            status: n.status.as_str().into(),
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
    let created = state.store.create_notification(&caller.account_id, parse_request(&body.input())?, now_ms()).await?;
    Ok(ApiResponse::accepted(AcceptedOut {
        id: created.id,
        channel: created.channel.as_str().into(),
        status: created.status.as_str().into(),
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

/// The filters of `GET /notifications`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct NotificationFilters {
    /// `queued`, `sending`, `sent` or `failed`.
    #[param(schema_with = status_schema)]
    pub status: Option<String>,
    /// `email` or `sms`.
    #[param(schema_with = channel_schema)]
    pub channel: Option<String>,
}

impl ListFilters for NotificationFilters {
    type Parsed = (Option<NotificationStatus>, Option<NotificationChannel>);
    fn parse(self, check: &mut Check) -> Self::Parsed {
        let status = self.status.and_then(|s| check.take(NotificationStatus::parse("status", &s)));
        (status, self.channel.and_then(|c| check.take(NotificationChannel::parse("channel", &c))))
    }
}

// The document says what the filters and the pager accept (schema-driven fuzzing found these
// four declared as free strings).
fn status_schema() -> utoipa::openapi::schema::Object {
    string_enum(&NotificationStatus::NAMES, "A notification status.")
}

fn channel_schema() -> utoipa::openapi::schema::Object {
    string_enum(&NotificationChannel::NAMES, "A notification channel.")
}

/// GET /api/white-label/v1/notifications — Signed — notifications:write
#[utoipa::path(
    get, path = "/api/white-label/v1/notifications", tag = "notifications", operation_id = "notifications_list",
    security(("signed" = [])),
    params(ListQuery<NotificationFilters>),
    responses(
        (status = 200, description = "The account's notifications, newest first", body = ListEnvelope<NotificationOut>),
        SignedErrors, QueryErrors,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::NotificationsWrite>,
    q: ListQuery<NotificationFilters>,
) -> ApiResult<Vec<NotificationOut>> {
    let ((status, channel), (page, limit)) = (q.filters, q.page.bounds());
    let query = NotificationQuery { status, channel, page, limit };
    let (items, total) = state.store.list_notifications(&caller.account_id, &query).await?;
    Ok(ApiResponse::list(items.into_iter().map(Into::into).collect(), q.page.pagination(total)))
}

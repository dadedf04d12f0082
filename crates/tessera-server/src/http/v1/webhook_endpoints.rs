//! Webhook endpoint routes (D17.24, D17.27, D17.41): create (the only answer, with rotation, that
//! shows the secret), list, show, patch, delete (204), rotate-secret, test (a sample event sent at
//! once), replay (by event or by time range) and the attempt log. settings:write for every
//! change, settings:read for the reads. The secret is sealed here with the keyring under
//! `webhook:<endpoint id>`, as settings secrets are sealed by their handler.
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::openapi::schema::{Array, ArrayBuilder, SchemaType, Type};
use utoipa::ToSchema;

use super::audit;
use crate::domain::time::{now_ms, rfc3339};
use crate::domain::webhook_endpoints::{
    parse_new, parse_patch, parse_replay, parse_test_type, EndpointInput, EndpointStatus, Replay,
};
use crate::domain::webhooks::{new_secret, EventType};
use crate::domain::{is_uuid, new_id};
use crate::flows::webhooks::{send_test, Attempt};
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{parse_json, scope, ApiJson, ListQuery, NoFilters, Signed};
use crate::http::openapi::{string_enum, BodyErrors, NotFound, QueryErrors, SignedErrors};
use crate::http::portal::auth::EmptyIn;
use crate::state::AppState;
use crate::store::webhook_endpoints::{WebhookAttempt, WebhookEndpoint};

/// A field sent as `null` is `Some(Value::Null)`, an absent one `None` (serde's default would
/// make both `None`, and on a patch null clears while absent keeps).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// [`present`] for a text field that may be null.
fn present_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

fn event_types_schema() -> Array {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(string_enum(&EventType::NAMES, "An event type (D17.25)."))
        .min_items(Some(1))
        .description(Some("The event types sent to this endpoint (each named once); absent or null: every type."))
        .build()
}

fn status_schema() -> utoipa::openapi::schema::Object {
    string_enum(&EndpointStatus::NAMES, "enabled (sent its events) or disabled (sent none; set `manual`).")
}

/// Body of `POST /webhook-endpoints`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({
    "url": "https://hooks.example.com/tessera",
    "eventTypes": ["ticket.purchase.confirmed", "payment.refunded"],
    "description": "Order system"
}))]
pub struct WebhookEndpointIn {
    /// An https URL of a public host (D16.25), at most 2048 characters.
    #[schema(value_type = String, format = "uri", max_length = 2048, pattern = "^https://", required = true)]
    pub url: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = event_types_schema, required = false)]
    pub event_types: Option<Value>,
    /// At most 255 characters.
    #[schema(value_type = Option<String>, max_length = 255, required = false)]
    pub description: Option<String>,
}

/// Body of `PATCH /webhook-endpoints/{id}`: each field present is changed, the rest kept.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({"eventTypes": null, "status": "enabled"}))]
pub struct WebhookEndpointPatch {
    /// An https URL of a public host (D16.25), at most 2048 characters.
    #[schema(value_type = String, format = "uri", max_length = 2048, pattern = "^https://", required = false)]
    pub url: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = event_types_schema, required = false)]
    pub event_types: Option<Value>,
    /// At most 255 characters; null removes it.
    #[serde(default, deserialize_with = "present_text")]
    #[schema(value_type = Option<String>, max_length = 255, required = false)]
    pub description: Option<Option<String>>,
    /// `enabled` clears `disabledReason` (and the failing run); `disabled` sets it to `manual`.
    #[schema(schema_with = status_schema, required = false)]
    pub status: Option<String>,
}

/// Declares an answer that shows an endpoint: the endpoint's fields, listed once here for both
/// answers, with the documentation of the three whose meaning the answer states, then the
/// answer's own fields. (Nesting [`WebhookEndpointOut`] with `#[serde(flatten)]` would turn the
/// OpenAPI schema of the create answer into an `allOf`; the document keeps both flat.)
macro_rules! endpoint_answer {
    (
        $(#[$doc:meta])* $name:ident;
        event_types: $(#[$event_types:meta])*;
        status: $(#[$status:meta])*;
        disabled_reason: $(#[$disabled_reason:meta])*;
        $($(#[$own_doc:meta])* $own:ident: $own_ty:ty,)*
    ) => {
        $(#[$doc])*
        #[derive(Debug, Serialize, ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            pub id: String,
            pub url: String,
            pub description: Option<String>,
            $(#[$event_types])*
            pub event_types: Option<Vec<String>>,
            $(#[$status])*
            pub status: String,
            $(#[$disabled_reason])*
            pub disabled_reason: Option<String>,
            pub created_at: String,
            pub updated_at: String,
            $($(#[$own_doc])* pub $own: $own_ty,)*
        }
    };
}

endpoint_answer! {
    /// A webhook endpoint (D17.24); the secret is never shown here.
    WebhookEndpointOut;
    event_types: /// null: every type.
    ;
    status: /// `enabled` or `disabled`.
    ;
    disabled_reason: /// Why it is disabled: `gone` (it answered 410), `failing` (5 days of failures) or `manual`.
    ;
}

impl From<WebhookEndpoint> for WebhookEndpointOut {
    fn from(e: WebhookEndpoint) -> Self {
        WebhookEndpointOut {
            id: e.id,
            url: e.url,
            description: e.description,
            event_types: e.event_types,
            status: e.status.as_str().into(),
            disabled_reason: e.disabled_reason.map(|r| r.as_str().into()),
            created_at: rfc3339(e.created_at),
            updated_at: rfc3339(e.updated_at),
        }
    }
}

endpoint_answer! {
    /// What `POST /webhook-endpoints` answers: the endpoint and its signing secret, shown this once.
    WebhookEndpointCreatedOut;
    event_types: ;
    status: /// Always `enabled`.
    ;
    disabled_reason: ;
    /// `whsec_` and the base64 of 32 bytes (Standard Webhooks); shown only here and on rotation.
    secret: String,
}

impl WebhookEndpointCreatedOut {
    fn new(e: WebhookEndpoint, secret: String) -> Self {
        let WebhookEndpointOut { id, url, description, event_types, status, disabled_reason, created_at, updated_at } =
            e.into();
        WebhookEndpointCreatedOut {
            id,
            url,
            description,
            event_types,
            status,
            disabled_reason,
            created_at,
            updated_at,
            secret,
        }
    }
}

/// What `rotate-secret` answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretOut {
    /// The new `whsec_…` secret; the previous one keeps signing for 24 hours (D17.27).
    pub secret: String,
}

/// A new secret and its sealed form for the endpoint `id`.
fn sealed_secret(state: &AppState, id: &str) -> (String, String) {
    let secret = new_secret();
    let sealed = state.keyring().encrypt(&format!("webhook:{id}"), &secret);
    (secret, sealed)
}

/// An endpoint id from the path: ids that are not UUIDs cannot exist (404).
fn endpoint_id(id: &str) -> Result<&str, ApiError> {
    if is_uuid(id) {
        Ok(id)
    } else {
        Err(ApiError::not_found("webhook endpoint"))
    }
}

/// POST /api/white-label/v1/webhook-endpoints — Signed — settings:write
#[utoipa::path(
    post, path = "/api/white-label/v1/webhook-endpoints", operation_id = "webhook_endpoints_create", tag = "webhooks",
    security(("signed" = [])),
    request_body = WebhookEndpointIn,
    responses(
        (status = 201, description = "Created, enabled; the secret is shown only here and on rotation", body = Envelope<WebhookEndpointCreatedOut>),
        SignedErrors, BodyErrors,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsWrite>,
    ApiJson(body): ApiJson<WebhookEndpointIn>,
) -> ApiResult<WebhookEndpointCreatedOut> {
    let input = EndpointInput {
        url: body.url.as_deref(),
        description: body.description.as_deref().map(Some),
        event_types: body.event_types.as_ref(),
        status: None,
    };
    let new = parse_new(&input, state.config.security.allow_private_endpoints)?;
    let id = new_id();
    let (secret, sealed) = sealed_secret(&state, &id);
    let audit = audit(&caller, "webhook_endpoint.created", "webhook_endpoint");
    let e = state.store.create_webhook_endpoint(&caller.account_id, &id, &new, &sealed, audit, now_ms()).await?;
    Ok(ApiResponse::created(WebhookEndpointCreatedOut::new(e, secret)))
}

/// GET /api/white-label/v1/webhook-endpoints — Signed — settings:read
#[utoipa::path(
    get, path = "/api/white-label/v1/webhook-endpoints", operation_id = "webhook_endpoints_list", tag = "webhooks",
    security(("signed" = [])),
    params(ListQuery<NoFilters>),
    responses(
        (status = 200, description = "The account's endpoints, newest first", body = ListEnvelope<WebhookEndpointOut>),
        SignedErrors, QueryErrors,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsRead>,
    q: ListQuery<NoFilters>,
) -> ApiResult<Vec<WebhookEndpointOut>> {
    let (items, total) = state.store.webhook_endpoints(&caller.account_id, q.page.bounds()).await?;
    Ok(ApiResponse::list(items.into_iter().map(Into::into).collect(), q.page.pagination(total)))
}

/// GET /api/white-label/v1/webhook-endpoints/{id} — Signed — settings:read
#[utoipa::path(
    get, path = "/api/white-label/v1/webhook-endpoints/{id}", operation_id = "webhook_endpoints_show", tag = "webhooks",
    security(("signed" = [])),
    params(("id" = String, Path, format = Uuid, description = "Webhook endpoint id")),
    responses(
        (status = 200, body = Envelope<WebhookEndpointOut>),
        SignedErrors, NotFound,
    )
)]
pub async fn show(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsRead>,
    Path(id): Path<String>,
) -> ApiResult<WebhookEndpointOut> {
    Ok(ApiResponse::ok(state.store.webhook_endpoint(&caller.account_id, endpoint_id(&id)?).await?.into()))
}

/// PATCH /api/white-label/v1/webhook-endpoints/{id} — Signed — settings:write
#[utoipa::path(
    patch, path = "/api/white-label/v1/webhook-endpoints/{id}", operation_id = "webhook_endpoints_update", tag = "webhooks",
    security(("signed" = [])),
    params(("id" = String, Path, format = Uuid, description = "Webhook endpoint id")),
    request_body = WebhookEndpointPatch,
    responses(
        (status = 200, description = "Updated", body = Envelope<WebhookEndpointOut>),
        SignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsWrite>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<WebhookEndpointPatch>,
) -> ApiResult<WebhookEndpointOut> {
    let id = endpoint_id(&id)?;
    let input = EndpointInput {
        url: body.url.as_deref(),
        description: body.description.as_ref().map(Option::as_deref),
        event_types: body.event_types.as_ref(),
        status: body.status.as_deref(),
    };
    let patch = parse_patch(&input, state.config.security.allow_private_endpoints)?;
    let audit = audit(&caller, "webhook_endpoint.updated", "webhook_endpoint");
    let e = state.store.update_webhook_endpoint(&caller.account_id, id, &patch, audit, now_ms()).await?;
    Ok(ApiResponse::ok(e.into()))
}

/// DELETE /api/white-label/v1/webhook-endpoints/{id} — Signed — settings:write
#[utoipa::path(
    delete, path = "/api/white-label/v1/webhook-endpoints/{id}", operation_id = "webhook_endpoints_delete", tag = "webhooks",
    security(("signed" = [])),
    params(("id" = String, Path, format = Uuid, description = "Webhook endpoint id")),
    responses(
        (status = 204, description = "Deleted, with its pending deliveries and its attempt log (D17.41); no body"),
        SignedErrors, NotFound,
    )
)]
pub async fn delete(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsWrite>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let audit = audit(&caller, "webhook_endpoint.deleted", "webhook_endpoint");
    state.store.delete_webhook_endpoint(&caller.account_id, endpoint_id(&id)?, audit).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// POST /api/white-label/v1/webhook-endpoints/{id}/rotate-secret — Signed — settings:write
///
/// The body is optional (`{}`).
#[utoipa::path(
    post, path = "/api/white-label/v1/webhook-endpoints/{id}/rotate-secret", operation_id = "webhook_endpoints_rotate_secret", tag = "webhooks",
    security(("signed" = [])),
    params(("id" = String, Path, format = Uuid, description = "Webhook endpoint id")),
    request_body(content = EmptyIn, example = json!({})),
    responses(
        (status = 200, description = "The new secret; for 24 hours both are used, space-separated in `webhook-signature` (D17.27)", body = Envelope<SecretOut>),
        SignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn rotate_secret(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsWrite>,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<SecretOut> {
    if !body.is_empty() {
        parse_json::<EmptyIn>(&body)?;
    }
    let id = endpoint_id(&id)?;
    let (secret, sealed) = sealed_secret(&state, id);
    let audit = audit(&caller, "webhook_endpoint.secret_rotated", "webhook_endpoint");
    state.store.rotate_webhook_endpoint_secret(&caller.account_id, id, &sealed, audit, now_ms()).await?;
    Ok(ApiResponse::ok(SecretOut { secret }))
}

/// Body of `POST /webhook-endpoints/{id}/test`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"type": "ticket.purchase.confirmed"}))]
pub struct WebhookTestIn {
    /// The type of the sample event (the endpoint's filter does not apply).
    #[schema(schema_with = event_type_schema, required = true)]
    pub r#type: Option<String>,
}

fn event_type_schema() -> utoipa::openapi::schema::Object {
    string_enum(&EventType::NAMES, "An event type (D17.25).")
}

/// One request made to an endpoint.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptOut {
    /// The `webhook-id` sent.
    pub event_id: String,
    /// The answer's status; null when no answer came.
    pub status_code: Option<u16>,
    pub duration_ms: i64,
    /// What went wrong (timeout, refused address, non-2xx); null on success.
    pub error: Option<String>,
}

impl From<Attempt> for AttemptOut {
    fn from(a: Attempt) -> Self {
        AttemptOut { event_id: a.event_id, status_code: a.status_code, duration_ms: a.duration_ms, error: a.error }
    }
}

/// POST /api/white-label/v1/webhook-endpoints/{id}/test — Signed — settings:write
#[utoipa::path(
    post, path = "/api/white-label/v1/webhook-endpoints/{id}/test", operation_id = "webhook_endpoints_test", tag = "webhooks",
    security(("signed" = [])),
    params(("id" = String, Path, format = Uuid, description = "Webhook endpoint id")),
    request_body = WebhookTestIn,
    responses(
        (status = 202, description = "Sent once, now (no sequence, not in the feed, not retried, whatever the endpoint's filter; D17.41); the attempt is in the log", body = Envelope<AttemptOut>),
        SignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn test(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsWrite>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<WebhookTestIn>,
) -> ApiResult<AttemptOut> {
    let id = endpoint_id(&id)?;
    let event_type = parse_test_type(body.r#type.as_deref())?;
    // The flow reads the endpoint in the account (another account's is a 404, nothing sent).
    let attempt = send_test(&state, &caller.account_id, id, event_type).await?;
    Ok(ApiResponse::accepted(attempt.into()))
}

/// Body of `POST /webhook-endpoints/{id}/replay`: `{eventId}` or `{since, until}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(example = json!({"since": "2026-11-01T00:00:00Z", "until": "2026-11-02T00:00:00Z"}))]
pub struct WebhookReplayIn {
    /// Re-send this event of the account, whatever the endpoint's filter. Not with since/until.
    #[schema(value_type = Option<uuid::Uuid>, format = Uuid, required = false)]
    pub event_id: Option<String>,
    /// Re-send every event from this time (RFC 3339), with `until`; at most 31 days apart.
    #[schema(value_type = Option<String>, format = DateTime, required = false)]
    pub since: Option<String>,
    /// The end of the range (RFC 3339, inclusive), not before `since`.
    #[schema(value_type = Option<String>, format = DateTime, required = false)]
    pub until: Option<String>,
}

/// What a replay answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplayOut {
    /// How many deliveries were queued.
    pub queued: u64,
}

/// POST /api/white-label/v1/webhook-endpoints/{id}/replay — Signed — settings:write
#[utoipa::path(
    post, path = "/api/white-label/v1/webhook-endpoints/{id}/replay", operation_id = "webhook_endpoints_replay", tag = "webhooks",
    security(("signed" = [])),
    params(("id" = String, Path, format = Uuid, description = "Webhook endpoint id")),
    request_body = WebhookReplayIn,
    responses(
        (status = 202, description = "Queued: the event, or every event of the range the endpoint's filter takes, in sequence order, delivered before or not (D17.41); 404 for an eventId of another account", body = Envelope<ReplayOut>),
        SignedErrors, BodyErrors, NotFound,
    )
)]
pub async fn replay(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsWrite>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<WebhookReplayIn>,
) -> ApiResult<ReplayOut> {
    let id = endpoint_id(&id)?;
    let replay = parse_replay(body.event_id.as_deref(), body.since.as_deref(), body.until.as_deref())?;
    let (account, now) = (&caller.account_id, now_ms());
    let audit = audit(&caller, "webhook_endpoint.replayed", "webhook_endpoint");
    let queued = match replay {
        Replay::Event(event) if !is_uuid(&event) => return Err(ApiError::not_found("event")),
        Replay::Event(event) => state.store.replay_webhook_event(account, id, &event, audit, now).await?,
        Replay::Range { since, until } => {
            state.store.replay_webhook_range(account, id, (since, until), audit, now).await?
        }
    };
    Ok(ApiResponse::accepted(ReplayOut { queued }))
}

/// One attempt of the log.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptLogOut {
    /// The `webhook-id` sent.
    pub event_id: String,
    /// The answer's status; null when no answer came.
    pub status_code: Option<i64>,
    pub duration_ms: i64,
    pub error: Option<String>,
    /// When the request started.
    pub at: String,
}

impl From<WebhookAttempt> for AttemptLogOut {
    fn from(a: WebhookAttempt) -> Self {
        AttemptLogOut {
            event_id: a.event_id,
            status_code: a.status_code,
            duration_ms: a.duration_ms,
            error: a.error,
            at: rfc3339(a.at),
        }
    }
}

/// GET /api/white-label/v1/webhook-endpoints/{id}/attempts — Signed — settings:read
#[utoipa::path(
    get, path = "/api/white-label/v1/webhook-endpoints/{id}/attempts", operation_id = "webhook_endpoints_attempts", tag = "webhooks",
    security(("signed" = [])),
    params(("id" = String, Path, format = Uuid, description = "Webhook endpoint id"), ListQuery<NoFilters>),
    responses(
        (status = 200, description = "The endpoint's attempts (test events included), newest first", body = ListEnvelope<AttemptLogOut>),
        SignedErrors, QueryErrors, NotFound,
    )
)]
pub async fn attempts(
    State(state): State<AppState>,
    caller: Signed<scope::SettingsRead>,
    Path(id): Path<String>,
    q: ListQuery<NoFilters>,
) -> ApiResult<Vec<AttemptLogOut>> {
    let id = endpoint_id(&id)?;
    let (items, total) = state.store.webhook_attempts(&caller.account_id, id, q.page.bounds()).await?;
    Ok(ApiResponse::list(items.into_iter().map(Into::into).collect(), q.page.pagination(total)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_event_types_are_the_ones_the_domain_accepts() {
        let schema = serde_json::to_value(event_types_schema()).expect("schema");
        assert_eq!(schema["items"]["enum"], serde_json::json!(EventType::NAMES));
    }
}

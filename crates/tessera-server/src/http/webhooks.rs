//! `POST /api/white-label/webhooks/:provider` (spec Scheme 4, D6): provider callbacks. The
//! provider is checked before the body is read (400), the signature over the raw body bytes
//! before anything is stored (401), and the verified event is stored with its reconciliation
//! job before the 200 (durable hand-off). A duplicate answers 200 and stores nothing.
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::Json;
use secrecy::ExposeSecret;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::envelope::request_id;
use super::error::ApiError;
use super::openapi::WebhookErrors;
use crate::payments::{credentials, payments_settings};
use crate::providers::payments::{adapter, ProviderId};
use crate::state::AppState;
use crate::store::webhooks::NewWebhook;
use crate::telemetry::metrics;

/// The answer to an accepted callback (spec).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookAck {
    pub success: bool,
    /// The event is stored (or was already): Tessera reconciles it.
    pub processed: bool,
    pub provider: String,
    pub request_id: String,
}

/// Whether `signature` is the provider's signature of `body` with the platform's shared secret
/// or with the secret of the account that owns the event's reference, a charge's or a
/// withdrawal's (D6.1).
async fn signed_by_a_known_secret(state: &AppState, id: ProviderId, body: &[u8], signature: &str) -> bool {
    let provider = adapter(id);
    if let Some(shared) = state.config.providers.get(id.as_str()) {
        let secret = shared.secret_key.expose_secret();
        if !secret.is_empty() && provider.verify_signature(secret.as_bytes(), body, signature) {
            return true;
        }
    }
    // The account's own secret: found through the reference the (not yet trusted) body names.
    let reference = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("data")?.get("reference")?.as_str().map(str::to_string));
    let Some(reference) = reference else { return false };
    // A charge's reference, or a transfer's (the withdrawal id, D14.1).
    let account_id = match state.store.transaction_by_reference(&reference).await {
        Ok(Some(t)) => t.account_id,
        Ok(None) => match state.store.withdrawal_by_id(&reference).await {
            Ok(Some(w)) => w.account_id,
            _ => return false,
        },
        Err(_) => return false,
    };
    let Ok(settings) = payments_settings(state, &account_id).await else { return false };
    // An account on the shared defaults signs with the platform's secret, already tried above.
    if settings.get("useSharedDefaults").and_then(Value::as_bool) != Some(false) {
        return false;
    }
    credentials(state, &account_id, &settings, id)
        .is_some_and(|c| provider.verify_signature(c.secret_key.expose_secret().as_bytes(), body, signature))
}

/// POST /api/white-label/webhooks/{provider} — provider signature, no tenant key
#[utoipa::path(
    post, path = "/api/white-label/webhooks/{provider}", tag = "webhooks", operation_id = "webhooks_receive",
    params(("provider" = String, Path, description = "provider_a, provider_b or provider_c")),
    request_body(content = Object, description = "The provider's event, `{event, data: {id, reference, status, amount, currency, …}}`, \
        signed over the raw bytes: provider_a `x-provider_a-signature` = hex HMAC-SHA512, provider_b `x-provider_b-signature` and \
        provider_c `x-provider_c-signature` = hex HMAC-SHA256, with the provider secret key.",
        example = json!({"event": "charge.success", "data": {"id": "ch_1", "reference": "tsr_…", "status": "success", "amount": 5000, "currency": "GHS"}})),
    responses((status = 200, description = "Stored for reconciliation (or already stored)", body = WebhookAck), WebhookErrors)
)]
pub async fn receive(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    req: Request,
) -> Result<(StatusCode, Json<WebhookAck>), ApiError> {
    let Some(id) = ProviderId::parse(&provider) else {
        metrics::webhook_received("unsupported", "unsupported_provider");
        return Err(ApiError::field("provider", "unsupported provider; one of provider_a, provider_b, provider_c"));
    };
    let count = |outcome: &'static str| metrics::webhook_received(id.as_str(), outcome);
    let signature = req.headers().get(id.signature_header()).and_then(|v| v.to_str().ok()).map(str::to_string);
    let body = axum::body::to_bytes(req.into_body(), state.config.max_body_bytes)
        .await
        .map_err(|_| ApiError::payload_too_large(state.config.max_body_bytes))?;
    let Some(signature) = signature else {
        count("missing_signature");
        return Err(ApiError::missing_auth("the provider signature header is missing")
            .with_detail(id.signature_header(), "required"));
    };
    if !signed_by_a_known_secret(&state, id, &body, &signature).await {
        tracing::warn!(provider = id.as_str(), "webhook with a wrong signature refused");
        count("invalid_signature");
        return Err(ApiError::invalid_signature());
    }
    let event =
        adapter(id).parse_event(&body).map_err(|e| ApiError::malformed_json(format!("not a {provider} event: {e}")))?;
    let payload = std::str::from_utf8(&body).map_err(|_| ApiError::malformed_json("the body is not UTF-8"))?;
    let new = state
        .webhooks
        .write(NewWebhook {
            provider: id.as_str(),
            event_key: event.event_key(),
            event: event.event,
            reference: event.reference,
            payload: payload.to_string(),
        })
        .await?;
    count(if new { "stored" } else { "duplicate" });
    tracing::debug!(provider = id.as_str(), duplicate = !new, "webhook stored");
    Ok((
        StatusCode::OK,
        Json(WebhookAck { success: true, processed: true, provider: id.as_str().into(), request_id: request_id() }),
    ))
}

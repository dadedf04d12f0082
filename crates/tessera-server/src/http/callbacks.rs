//! `POST /api/white-label/webhooks/:provider` (the contract's provider-callback scheme, D6):
//! the provider is checked before the body is read (400); the signature check and the durable
//! hand-off are the callbacks flow's ([`crate::flows::callbacks::accept`]): a wrong signature is
//! 401, the verified callback is stored with its reconciliation job before the 200, and a duplicate
//! answers 200 and stores nothing.
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::envelope::request_id;
use super::error::ApiError;
use super::openapi::CallbackErrors;
use crate::flows::callbacks::{self, Arrival, Refused};
use crate::providers::payments::ProviderId;
use crate::state::AppState;
use crate::telemetry::metrics;

/// The answer to an accepted callback (spec).
// Published in the OpenAPI document under its former name, `WebhookAck` (and the doc lines
// here are its descriptions there).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = WebhookAck)]
#[serde(rename_all = "camelCase")]
pub struct CallbackAck {
    pub success: bool,
    /// The event is stored (or was already): Tessera reconciles it.
    pub processed: bool,
    pub provider: String,
    pub request_id: String,
}

/// POST /api/white-label/webhooks/{provider} — provider signature, no tenant key
#[utoipa::path(
    post, path = "/api/white-label/webhooks/{provider}", tag = "webhooks", operation_id = "webhooks_receive",
    params(("provider" = String, Path, description = "provider_a, provider_b or provider_c")),
    request_body(content = Object, description = "The provider's event in its own shape, signed over the raw bytes. \
        provider_a (Paystack): `{event, data: {id, reference, …}}` with `x-provider_a-signature` or Paystack's own \
        `x-paystack-signature` = hex HMAC-SHA512 with the secret key (D17.9). provider_b (Flutterwave v3): \
        `{event: \"charge.completed\", data: {id, tx_ref, …}}` (or the legacy flat `{txRef, status, …}`, and \
        `transfer.completed`) with `verif-hash` = the webhook hash or `flutterwave-signature` = base64 HMAC-SHA256 \
        with it. provider_c (Hubtel) calls the tokened path below. `x-provider_b-signature` and \
        `x-provider_c-signature` (hex HMAC-SHA256 with the secret key, D6.1) stay accepted. A callback is only a \
        trigger: Tessera asks the provider's own verify before it credits anything.",
        example = json!({"event": "charge.success", "data": {"id": "ch_1", "reference": "tsr_…", "status": "success", "amount": 5000, "currency": "GHS"}})),
    responses((status = 200, description = "Stored for reconciliation (or already stored)", body = CallbackAck), CallbackErrors)
)]
pub async fn receive(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    req: Request,
) -> Result<(StatusCode, Json<CallbackAck>), ApiError> {
    receive_at(state, &provider, None, req).await
}

/// POST /api/white-label/webhooks/{provider}/{callbackToken} — Hubtel's tokened callback path
#[utoipa::path(
    post, path = "/api/white-label/webhooks/{provider}/{callbackToken}", tag = "webhooks", operation_id = "webhooks_receive_tokened",
    params(("provider" = String, Path, description = "provider_c (Hubtel signs nothing: the token in the URL Tessera gave it authenticates the call)"),
        ("callbackToken" = String, Path, description = "The account's (or the platform's) provider_c `callbackToken`")),
    request_body(content = Object, description = "Hubtel's callback: `{ResponseCode, Status?, Data: {ClientReference, …}}`. \
        Only a trigger: Tessera then asks Hubtel's transaction status check (D18.3).",
        example = json!({"ResponseCode": "0000", "Status": "Success", "Data": {"ClientReference": "tsrx…", "Amount": 50.5, "CustomerPhoneNumber": "233241234567"}})),
    responses((status = 200, description = "Stored for reconciliation (or already stored)", body = CallbackAck), CallbackErrors)
)]
pub async fn receive_tokened(
    State(state): State<AppState>,
    Path((provider, token)): Path<(String, String)>,
    req: Request,
) -> Result<(StatusCode, Json<CallbackAck>), ApiError> {
    receive_at(state, &provider, Some(&token), req).await
}

/// Both routes: the provider is checked before the body is read (400); then the flow decides.
async fn receive_at(
    state: AppState,
    provider: &str,
    token: Option<&str>,
    req: Request,
) -> Result<(StatusCode, Json<CallbackAck>), ApiError> {
    let Some(id) = ProviderId::parse(provider) else {
        metrics::callback_received("unsupported", "unsupported_provider");
        let names = ProviderId::NAMES.join(", ");
        return Err(ApiError::field("provider", format!("unsupported provider; one of {names}")));
    };
    let count = |outcome: &'static str| metrics::callback_received(id.as_str(), outcome);
    let (parts, body) = req.into_parts();
    let max = state.config.max_body_bytes;
    let body = axum::body::to_bytes(body, max).await.map_err(|e| ApiError::body_unreadable(e, max))?;
    let arrival = Arrival { headers: &parts.headers, body: &body, token };
    if !callbacks::carries_authentication(id, &arrival) {
        count("missing_signature");
        return Err(ApiError::missing_auth("the provider signature header is missing")
            .with_detail(id.signature_header(), "required"));
    }
    let new = match callbacks::accept(&state, id, &arrival).await {
        Ok(new) => new,
        Err(Refused::Signature) => {
            count("invalid_signature");
            return Err(ApiError::invalid_signature());
        }
        Err(Refused::Malformed(m)) => return Err(ApiError::malformed_json(m)),
        Err(Refused::Store(e)) => return Err(e.into()),
    };
    count(if new { "stored" } else { "duplicate" });
    Ok((
        StatusCode::OK,
        Json(CallbackAck { success: true, processed: true, provider: id.as_str().into(), request_id: request_id() }),
    ))
}

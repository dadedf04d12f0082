//! Refund routes (D17.33, D17.38): a refund of a payment under an idempotency key, and the reads.
//! The rules and their effects live in `flows::refunds` and `store::refunds`.
//!
//! Idempotency is the withdrawals' (D16.12): only a created refund binds its key; a 400 or a
//! 409 (`not_refundable`, `refund_exceeds_payment`, `ticket_not_refundable`,
//! `insufficient_balance`) binds nothing. The same key and body again replays the first 201 with
//! `idempotent-replayed: true`; another body → 409 `idempotency_key_reused`.
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::withdrawals::{answer, ask};
use crate::domain::is_uuid;
use crate::domain::refunds::parse_request;
use crate::flows::refunds;
use crate::http::envelope::{ApiResponse, Envelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{parse_json_value, scope, ApiJson, Signed};
use crate::http::openapi::{BodyErrors, NotFound, SignedErrors};
use crate::state::AppState;
use crate::views::refunds::refund_data;
pub use crate::views::refunds::RefundOut;

/// Body of `POST /payments/:reference/refunds` (D17.33). Nothing named: the whole remainder.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
pub struct RefundIn {
    /// GHS, > 0, at most 2 decimals; at most what was paid less what is already refunded or
    /// being refunded. Votes: a whole multiple of the vote price. Ticket purchases: only the
    /// whole remainder (name `ticketCodes` for part of one).
    #[schema(value_type = Option<f64>, minimum = 0.01, multiple_of = 0.01)]
    pub amount: Option<Value>,
    /// At most 500 characters.
    pub reason: Option<String>,
    /// Tickets of this purchase to refund (valid, not checked in); they set the amount.
    pub ticket_codes: Option<Vec<Value>>,
}

crate::error_responses! {
    /// 409 of a refund (D17.33–34, D17.38).
    RefundConflict = crate::http::error::ErrorEnvelope {
        409 => "`not_refundable` (the payment is not a successful paid one), `refund_exceeds_payment` (more \
                than what is left, pending refunds counted), `ticket_not_refundable` (a named ticket is checked \
                in, void or of another purchase), `insufficient_balance`, `refund_not_supported` (the payment's \
                provider cannot refund it: Hubtel refunds only mobile-money payments of a known payer, D18.3), \
                or `idempotency_key_reused`. Nothing \
                is written and the key stays free.",
    }
}

/// `ticket_codes_required` names the field it is about (400s name their field).
fn refused(e: ApiError) -> ApiError {
    if e.code == "ticket_codes_required" {
        return e.with_detail("ticketCodes", "required to refund part of a ticket purchase");
    }
    e
}

/// POST /api/white-label/v1/payments/{reference}/refunds — Signed — payments:write
#[utoipa::path(
    post, path = "/api/white-label/v1/payments/{reference}/refunds", tag = "payments", operation_id = "refunds_create",
    security(("signed" = [])),
    params(
        ("reference" = String, Path, description = "The payment's reference"),
        ("X-Idempotency-Key" = String, Header, description = "Required. 1–255 printable ASCII characters, scoped to the \
            account and kept 24 h. The same key with the same JSON body replays the first 201; another body → 409."),
    ),
    request_body(content = RefundIn, example = json!({"reason": "Event cancelled", "ticketCodes": ["TKT-7Q2M-XK4P"]})),
    responses(
        (status = 201, description = "Filed `pending`: the tickets are void, the votes taken back, the donation marked and \
            the amount held at once; the refund worker refunds it at the provider. 400 also answers a missing \
            `X-Idempotency-Key` (`idempotency_key_required`) and `ticket_codes_required` (an amount below the \
            remainder of a ticket purchase).", body = Envelope<RefundOut>),
        SignedErrors, BodyErrors, NotFound, RefundConflict,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Signed<scope::PaymentsWrite>,
    Path(reference): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    let ask = ask(&caller, &headers, &body)?;
    let parse = || -> Result<_, ApiError> {
        parse_json_value::<RefundIn>(body.clone())?;
        Ok(parse_request(&body)?)
    };
    answer(refunds::request(&state, &ask, &reference, parse, refund_data).await.map_err(refused)?)
}

/// GET /api/white-label/v1/payments/{reference}/refunds — Signed — payments:write
#[utoipa::path(
    get, path = "/api/white-label/v1/payments/{reference}/refunds", tag = "payments", operation_id = "refunds_list",
    security(("signed" = [])),
    params(("reference" = String, Path, description = "The payment's reference")),
    responses((status = 200, description = "The payment's refunds, newest first", body = Envelope<Vec<RefundOut>>), SignedErrors, NotFound)
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::PaymentsWrite>,
    Path(reference): Path<String>,
) -> ApiResult<Vec<RefundOut>> {
    let items = state.store.refunds_of(&caller.account_id, &reference).await?;
    Ok(ApiResponse::ok(items.into_iter().map(Into::into).collect()))
}

/// GET /api/white-label/v1/refunds/{id} — Signed — payments:write
#[utoipa::path(
    get, path = "/api/white-label/v1/refunds/{id}", tag = "payments", operation_id = "refunds_show",
    security(("signed" = [])),
    params(("id" = String, Path, description = "The refund id")),
    responses((status = 200, description = "The refund", body = Envelope<RefundOut>), SignedErrors, NotFound)
)]
pub async fn show(
    State(state): State<AppState>,
    caller: Signed<scope::PaymentsWrite>,
    Path(id): Path<String>,
) -> ApiResult<RefundOut> {
    if !is_uuid(&id) {
        return Err(ApiError::not_found("refund"));
    }
    Ok(ApiResponse::ok(state.store.refund(&caller.account_id, &id).await?.into()))
}

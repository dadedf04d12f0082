//! Withdrawal routes (spec "POST /withdrawals", "Withdrawal"; D9.1, D14, D16.12): creation under
//! an idempotency key with the balance hold, and the reads.
//!
//! Idempotency (D9.1, D16.12, Stripe's model): the key is claimed in the transaction that
//! creates the withdrawal and stores its 201, so only a created withdrawal binds a key. A 400
//! (invalid body) or a 409 `insufficient_balance` binds nothing: the client may correct the
//! body, or retry once money arrived, under the same key. A later request with the key and the
//! same JSON value gets the stored 201 again with `idempotent-replayed: true` and
//! `original-request`; another body → 409 `idempotency_key_reused`.
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::domain::is_uuid;
use crate::domain::scopes::CAPABILITY_WITHDRAWALS;
use crate::domain::withdrawals::{
    parse_idempotency_key, parse_request, request_hash, WithdrawalStatus, IDEMPOTENCY_HEADER,
};
use crate::flows::payouts::{self, Requested};
use crate::http::envelope::{request_id, ApiResponse, Envelope, ListEnvelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{parse_json_value, scope, ApiJson, ListFilters, ListQuery, Signed};
use crate::http::openapi::{BodyErrors, NotFound, ProviderErrors, QueryErrors, SignedErrors, WithdrawalConflict};
use crate::state::AppState;
use crate::store::withdrawals::{KeyState, StoredResponse, Withdrawal};
pub use crate::views::withdrawals::WithdrawalOut;

/// Body of `POST /withdrawals` (spec "Withdrawal").
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct WithdrawalIn {
    /// GHS, > 0, at most 2 decimals; at most the available balance.
    #[schema(value_type = f64, minimum = 0.01, multiple_of = 0.01)]
    pub amount: Option<Value>,
    /// The bank's or mobile-money channel's name (1–100 characters).
    pub bank_name: Option<String>,
    /// The bank or channel code, 2–32 of `[A-Za-z0-9_-]` (e.g. `GCB`, `MTN`).
    pub bank_code: Option<String>,
    /// The recipient's account or mobile-money number (5–34 letters and digits).
    pub account_number: Option<String>,
    /// The recipient's account name (2–100 characters).
    pub account_name: Option<String>,
}

pub(crate) fn key_reused(in_flight: bool) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "idempotency_key_reused",
        if in_flight {
            "a request with this idempotency key is still running; retry it later"
        } else {
            "this idempotency key was used with another body"
        },
    )
}

/// The first answer again, with its own requestId and the replay headers (D16.12).
pub(crate) fn replay(stored: StoredResponse) -> Response {
    let mut resp = ApiResponse::created(stored.data).into_response();
    if let Ok(status) = StatusCode::from_u16(stored.status) {
        *resp.status_mut() = status;
    }
    let h = resp.headers_mut();
    h.insert(HeaderName::from_static("idempotent-replayed"), HeaderValue::from_static("true"));
    if let Ok(v) = HeaderValue::from_str(&stored.original_request_id) {
        h.insert(HeaderName::from_static("original-request"), v);
    }
    resp
}

/// The answer a known key gets (also for refunds, D17.33).
pub(crate) fn answer(state: KeyState) -> Result<Response, ApiError> {
    match state {
        KeyState::Replay(stored) => Ok(replay(stored)),
        KeyState::Reused { in_flight } => Err(key_reused(in_flight)),
        // The claim lost and the winner's row is gone again (expired meanwhile): retry.
        KeyState::Free => Err(key_reused(true)),
    }
}

/// POST /api/white-label/v1/withdrawals — Signed, secret key only — withdrawals:write plus the
/// withdrawals capability
#[utoipa::path(
    post, path = "/api/white-label/v1/withdrawals", tag = "withdrawals", operation_id = "withdrawals_create",
    security(("signed" = [])),
    params(("X-Idempotency-Key" = String, Header, description = "Required. 1–255 printable ASCII characters, scoped to the account \
        and kept 24 h. The same key with the same JSON body replays the first 201; with another body → 409 `idempotency_key_reused`.")),
    request_body(content = WithdrawalIn, example = json!({"amount": 150.5, "bank_name": "MTN Mobile Money", "bank_code": "MTN",
        "account_number": "0241234567", "account_name": "Ama Mensah"})),
    responses(
        (status = 201, description = "Created: `pending` (paid out by the payout worker) or `awaiting_approval` above \
            `operations.withdrawalApprovalAbove`; the amount is held at once. A replay carries the first answer's data. \
            400 also answers a missing `X-Idempotency-Key` (`idempotency_key_required`) or a malformed one; 403 a key \
            without the `withdrawals` capability; 502 an account with no payout provider (nothing held).",
            body = Envelope<WithdrawalOut>,
            headers(
                ("idempotent-replayed" = String, description = "`true` when this is the stored first answer, replayed"),
                ("original-request" = String, description = "On a replay: the requestId of the request that created it"),
            )),
        SignedErrors, BodyErrors, WithdrawalConflict, ProviderErrors,
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Signed<scope::WithdrawalsWrite>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    if !caller.has_capability(CAPABILITY_WITHDRAWALS) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "insufficient_scope",
            "the key lacks the withdrawals capability (a secret key with it is required)",
        )
        .with_detail("capability", "requires withdrawals"));
    }
    let Some(raw_key) = headers.get(IDEMPOTENCY_HEADER) else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "idempotency_key_required",
            "the X-Idempotency-Key header is required",
        )
        .with_detail("X-Idempotency-Key", "required"));
    };
    let key = raw_key
        .to_str()
        .ok()
        .and_then(|k| parse_idempotency_key(k).ok())
        .ok_or_else(|| ApiError::field("X-Idempotency-Key", "must be 1 to 255 printable ASCII characters"))?;
    let ask = payouts::Ask {
        account_id: &caller.account_id,
        key_id: &caller.key_id,
        request_id: &request_id(),
        idempotency_key: &key,
        request_hash: &request_hash(&body),
    };
    let parse = || -> Result<_, ApiError> {
        parse_json_value::<WithdrawalIn>(body.clone())?;
        Ok(parse_request(&body)?)
    };
    let render = |w: &Withdrawal| serde_json::to_value(WithdrawalOut::from(w.clone())).unwrap_or_default();
    match payouts::request(&state, ask, parse, render).await? {
        Requested::Created(data) => Ok(ApiResponse::created(data).into_response()),
        Requested::Known(key) => answer(key),
    }
}

/// GET /api/white-label/v1/withdrawals/{id} — Signed — withdrawals:write
#[utoipa::path(
    get, path = "/api/white-label/v1/withdrawals/{id}", tag = "withdrawals", operation_id = "withdrawals_show",
    security(("signed" = [])),
    params(("id" = String, Path, description = "The withdrawal id")),
    responses((status = 200, description = "The withdrawal", body = Envelope<WithdrawalOut>), SignedErrors, NotFound)
)]
pub async fn show(
    State(state): State<AppState>,
    caller: Signed<scope::WithdrawalsWrite>,
    Path(id): Path<String>,
) -> ApiResult<WithdrawalOut> {
    if !is_uuid(&id) {
        return Err(ApiError::not_found("withdrawal"));
    }
    Ok(ApiResponse::ok(state.store.withdrawal(&caller.account_id, &id).await?.into()))
}

/// The filters of `GET /withdrawals`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WithdrawalFilters {
    /// One withdrawal status.
    #[param(schema_with = status_schema)]
    pub status: Option<String>,
}

impl ListFilters for WithdrawalFilters {
    type Parsed = Option<WithdrawalStatus>;
    fn parse(self, check: &mut crate::domain::check::Check) -> Self::Parsed {
        self.status.and_then(|s| check.take(WithdrawalStatus::parse("status", &s)))
    }
}

fn status_schema() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(
        &["awaiting_approval", "pending", "processing", "completed", "failed", "cancelled"],
        "A withdrawal status (D9.1, D14.2).",
    )
}

/// GET /api/white-label/v1/withdrawals — Signed — withdrawals:write
#[utoipa::path(
    get, path = "/api/white-label/v1/withdrawals", tag = "withdrawals", operation_id = "withdrawals_list",
    security(("signed" = [])),
    params(ListQuery<WithdrawalFilters>),
    responses((status = 200, description = "The account's withdrawals, newest first", body = ListEnvelope<WithdrawalOut>), SignedErrors, QueryErrors)
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::WithdrawalsWrite>,
    q: ListQuery<WithdrawalFilters>,
) -> ApiResult<Vec<WithdrawalOut>> {
    let (items, total) = state.store.list_withdrawals(&caller.account_id, q.filters, q.page.bounds()).await?;
    Ok(ApiResponse::list(items.into_iter().map(Into::into).collect(), q.page.pagination(total)))
}

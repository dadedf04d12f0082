//! The account's money (D12.4, D16.2–3): balance and ledger entries, each a sum or a row of
//! the append-only ledger.
use axum::extract::State;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::money::to_ghs;
use crate::domain::payments::CURRENCY;
use crate::domain::time::{now_ms, rfc3339};
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::ApiResult;
use crate::http::extract::{scope, ListQuery, NoFilters, Signed};
use crate::http::openapi::{QueryErrors, SignedErrors};
use crate::state::AppState;

/// D16.3, in GHS.
#[derive(Debug, Serialize, ToSchema)]
pub struct BalanceOut {
    /// Settled money not held by withdrawals: what withdrawals may draw on.
    #[schema(value_type = f64)]
    pub available: Value,
    /// Confirmed charges and their fees not settled yet.
    #[schema(value_type = f64)]
    pub pending: Value,
    /// Held by withdrawals in flight.
    #[schema(value_type = f64)]
    pub held: Value,
    pub currency: String,
}

/// GET /api/white-label/v1/balance — Signed — withdrawals:write
#[utoipa::path(
    get, path = "/api/white-label/v1/balance", tag = "ledger", operation_id = "balance_show",
    security(("signed" = [])),
    responses((status = 200, description = "Sums of the ledger, GHS (D16.3)", body = Envelope<BalanceOut>), SignedErrors)
)]
pub async fn balance(State(state): State<AppState>, caller: Signed<scope::WithdrawalsWrite>) -> ApiResult<BalanceOut> {
    let b = state.store.balance(&caller.account_id, now_ms()).await?;
    Ok(ApiResponse::ok(BalanceOut {
        available: to_ghs(b.available),
        pending: to_ghs(b.pending),
        held: to_ghs(b.held),
        currency: CURRENCY.into(),
    }))
}

/// A ledger entry (D16.2).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntryOut {
    pub id: String,
    /// `charge`, `fee`, `withdrawal_hold`, `withdrawal_release`, `withdrawal_debit`.
    pub kind: String,
    /// Signed GHS.
    #[schema(value_type = f64)]
    pub amount: Value,
    /// The transaction reference or the withdrawal id.
    pub reference: String,
    pub created_at: String,
    /// When the entry counts as available (D16.3).
    pub settles_at: String,
}

/// GET /api/white-label/v1/ledger — Signed — withdrawals:write
#[utoipa::path(
    get, path = "/api/white-label/v1/ledger", tag = "ledger", operation_id = "ledger_list",
    security(("signed" = [])),
    params(ListQuery<NoFilters>),
    responses((status = 200, description = "Ledger entries, newest first", body = ListEnvelope<LedgerEntryOut>), SignedErrors, QueryErrors)
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::WithdrawalsWrite>,
    q: ListQuery<NoFilters>,
) -> ApiResult<Vec<LedgerEntryOut>> {
    let (items, total) = state.store.ledger_entries(&caller.account_id, None, q.page.bounds()).await?;
    let out = items
        .into_iter()
        .map(|e| LedgerEntryOut {
            id: e.id,
            kind: e.kind,
            amount: to_ghs(e.amount),
            reference: e.reference,
            created_at: rfc3339(e.created_at),
            settles_at: rfc3339(e.settles_at),
        })
        .collect();
    Ok(ApiResponse::list(out, q.page.pagination(total)))
}

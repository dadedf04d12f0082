//! `/console/withdrawals` (D17.30, D17.43): the account's withdrawals (newest first, 50 a page)
//! with the available balance, the request form, and four eyes on those awaiting approval.
//!
//! The form goes through exactly the API's path (`flows::payouts`): the same body rules (the
//! domain's `parse_request`, its field errors shown beside the fields), the same idempotency (a
//! hidden `idempotency_key` made when the page is rendered, so a double submit or a browser
//! retry makes one withdrawal), the same hold and approval threshold. The member who asked is
//! recorded on the withdrawal; a withdrawal above the threshold is decided by another finance or
//! owner member (`flows::approvals::decide_in_console`), never by the one who asked.
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect};
use minijinja::{context, Value};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as Json};

use super::view::{render_status, FieldErrors};
use super::{Caller, ConsoleError, PageResult, Posted};
use crate::domain::console::Page;
use crate::domain::portal::Decision;
use crate::domain::time::now_ms;
use crate::domain::withdrawals::{parse_idempotency_key, parse_request, request_hash, WithdrawalStatus};
use crate::domain::{is_uuid, new_id};
use crate::flows::approvals::{self, ApprovalError};
use crate::flows::idempotency::{Ask, KeyState, Requested};
use crate::flows::{payouts, FlowError};
use crate::http::envelope::request_id;
use crate::state::AppState;
use crate::store::idempotency::StoredResponse;
use crate::store::withdrawals::Withdrawal;
use crate::store::StoreError;

/// Rows a page shows.
const PER_PAGE: u32 = 50;
/// The request form's fields, in order.
const FIELDS: [&str; 5] = ["amount", "bank_name", "bank_code", "account_number", "account_name"];

/// `?page=` and `?done=` (the notice after a successful post).
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    pub page: Option<String>,
    pub done: Option<String>,
}

/// One row of the table.
#[derive(Serialize)]
struct Row {
    id: String,
    status: &'static str,
    amount: i64,
    bank_name: String,
    account_number: String,
    account_name: String,
    failure_reason: Option<String>,
    created_at: i64,
    /// Awaiting approval and the viewer may decide it (four eyes).
    decide: bool,
    /// Awaiting approval and the viewer asked for it.
    waiting: bool,
}

fn row(w: Withdrawal, me: &str) -> Row {
    let awaiting = w.status == WithdrawalStatus::AwaitingApproval;
    let mine = w.requested_by.as_deref() == Some(me);
    Row {
        status: w.status.as_str(),
        amount: w.amount,
        decide: awaiting && !mine,
        waiting: awaiting && mine,
        id: w.id,
        bank_name: w.bank_name,
        account_number: w.account_number,
        account_name: w.account_name,
        failure_reason: w.failure_reason,
        created_at: w.created_at,
    }
}

fn notice(done: Option<&str>) -> Option<&'static str> {
    Some(match done? {
        "requested" => "Withdrawal requested; it will be paid out.",
        "awaiting" => "Withdrawal requested; it is waiting for a second member's approval.",
        "approved" => "Withdrawal approved; it will be paid out.",
        "rejected" => "Withdrawal rejected; its amount is available again.",
        _ => return None,
    })
}

/// The page: the balance, the form (`values`, `errors`), one page of withdrawals.
async fn page(state: &AppState, caller: &Caller, status: StatusCode, number: u32, form: Value) -> PageResult {
    let account = caller.account_id();
    let me = caller.member().map(|m| m.id.as_str()).unwrap_or_default();
    let balance = state.store.balance(account, now_ms()).await?;
    let (items, total) = state.store.list_withdrawals(account, None, (number, PER_PAGE)).await?;
    let rows: Vec<Row> = items.into_iter().map(|w| row(w, me)).collect();
    let next = (u64::from(number) * u64::from(PER_PAGE) < total).then_some(number + 1);
    let ctx = context! {
        available => balance.available, pending => balance.pending, held => balance.held,
        rows => rows, total => total, page => number, next => next, prev => (number > 1).then_some(number - 1),
        idempotency_key => new_id(), ..form
    };
    Ok(render_status(status, caller, Page::Withdrawals, "withdrawals.html", ctx))
}

/// A 400: the page again with the posted values and the errors beside their fields.
async fn refused(state: &AppState, posted: &Posted, errors: FieldErrors) -> PageResult {
    let values: Map<String, Json> = FIELDS.iter().map(|f| (f.to_string(), json!(posted.form.get(f)))).collect();
    let form = context! { values => values, errors => errors };
    page(state, &posted.caller, StatusCode::BAD_REQUEST, 1, form).await
}

fn form_error(message: impl Into<String>) -> FieldErrors {
    let mut e = FieldErrors::default();
    e.add("form", message);
    e
}

/// The posted form as the API's JSON body: the amount a number when it reads as one; an
/// empty field is absent ("is required").
fn body_of(posted: &Posted) -> Json {
    let mut body = Map::new();
    for f in FIELDS {
        let v = posted.form.get(f);
        if v.is_empty() {
            continue;
        }
        let amount = (f == "amount").then(|| serde_json::from_str::<serde_json::Number>(v).ok()).flatten();
        body.insert(f.to_string(), amount.map(Json::Number).unwrap_or_else(|| json!(v)));
    }
    Json::Object(body)
}

/// GET /console/withdrawals
pub async fn list(State(state): State<AppState>, caller: Caller, Query(q): Query<ListQuery>) -> PageResult {
    caller.open(Page::Withdrawals)?;
    let number = q.page.as_deref().and_then(|p| p.parse::<u32>().ok()).filter(|p| *p >= 1).unwrap_or(1);
    let form =
        context! { notice => notice(q.done.as_deref()), values => context! {}, errors => FieldErrors::default() };
    page(&state, &caller, StatusCode::OK, number, form).await
}

/// POST /console/withdrawals: asks for a withdrawal, as `POST /withdrawals` does.
pub async fn create(State(state): State<AppState>, posted: Posted) -> PageResult {
    posted.caller.open(Page::Withdrawals)?;
    let Some(member) = posted.caller.member() else { return Err(ConsoleError::NotFound("member")) };
    let Ok(idempotency_key) = parse_idempotency_key(posted.form.get("idempotency_key")) else {
        return refused(&state, &posted, form_error("The form has expired; reload the page and try again.")).await;
    };
    let body = body_of(&posted);
    let ask = Ask {
        account_id: posted.caller.account_id().to_string(),
        key_id: format!("console:{}", member.id),
        request_id: request_id(),
        idempotency_key,
        request_hash: request_hash(&body),
    };
    let parse = || parse_request(&body).map_err(FlowError::from);
    let render = |w: &Withdrawal| json!({ "id": w.id, "status": w.status.as_str() });
    let errors = match payouts::request_by(&state, &ask, Some(&member.id), parse, render).await {
        Ok(Requested::Created(data) | Requested::Known(KeyState::Replay(StoredResponse { data, .. }))) => {
            let done = if data["status"] == "awaiting_approval" { "awaiting" } else { "requested" };
            return Ok(Redirect::to(&format!("/console/withdrawals?done={done}")).into_response());
        }
        // The same form is still being sent (a double click): the list shows how it went.
        Ok(Requested::Known(KeyState::Reused { in_flight: true } | KeyState::Free)) => {
            return Ok(Redirect::to(Page::Withdrawals.path()).into_response());
        }
        Ok(Requested::Known(KeyState::Reused { in_flight: false })) => {
            form_error("This form was already sent with other values; reload the page to ask again.")
        }
        Err(FlowError::Domain(e)) => FieldErrors::from_domain(&e),
        Err(FlowError::Store(StoreError::InsufficientBalance(m))) => form_error(format!("Insufficient balance: {m}.")),
        Err(FlowError::ProviderUnavailable(m)) => form_error(format!("No payout provider: {m}.")),
        Err(FlowError::Store(e)) => return Err(e.into()),
    };
    refused(&state, &posted, errors).await
}

/// POST /console/withdrawals/{withdrawal_id}/decide: approve or reject one awaiting approval.
pub async fn decide(State(state): State<AppState>, Path(id): Path<String>, posted: Posted) -> PageResult {
    posted.caller.open(Page::Withdrawals)?;
    let Some(member) = posted.caller.member() else { return Err(ConsoleError::NotFound("member")) };
    if !is_uuid(&id) {
        return Err(ConsoleError::NotFound("withdrawal"));
    }
    let Some(decision) = Decision::parse(posted.form.get("decision")) else {
        return refused(&state, &posted, form_error("Choose Approve or Reject.")).await;
    };
    let account = posted.caller.account_id();
    let decided =
        approvals::decide_in_console(&state.store, account, &id, decision, &member.id, Some(request_id()), now_ms())
            .await;
    match decided {
        Ok(_) => Ok(Redirect::to(&format!("/console/withdrawals?done={}", decision.as_str())).into_response()),
        Err(ApprovalError::OwnRequest | ApprovalError::NotPermitted | ApprovalError::NotRequester) => {
            Err(ConsoleError::Forbidden("you asked for this withdrawal; a second member approves or rejects it".into()))
        }
        Err(ApprovalError::Store(StoreError::Conflict(m))) => refused(&state, &posted, form_error(m)).await,
        Err(ApprovalError::Store(e)) => Err(e.into()),
    }
}

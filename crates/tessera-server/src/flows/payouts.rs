//! Payouts (D9.1, D14.1, D16.5, D16.8, D16.12–13): a withdrawal from the request to the money
//! leaving, or coming back.
//!
//! [`request`]: under the caller's idempotency key, a known key is answered first (the stored
//! first answer again, or 409 for another body) before the body is even checked; then the
//! account must have a payout provider (502 otherwise, nothing held); the withdrawal is
//! `awaiting_approval` when its amount is above `operations.withdrawalApprovalAbove`, else
//! `pending`; the store writes it, its hold, its payout job or approval request, its audit
//! entry and the answer to replay in one transaction (insufficient balance → 409, nothing
//! written, the key stays free).
//!
//! [`step`] (the payout worker, per claimed job) and [`reconcile`] (a transfer callback):
//! - a `pending` withdrawal: the provider is first asked for a transfer with the reference (the
//!   withdrawal id) and one that exists is adopted; only then is a transfer created (a
//!   `Duplicate` answer is adopted too). So a crash between the provider's answer and the move
//!   to `processing` is redone without paying twice. The move to `processing` is conditional;
//! - a `processing` withdrawal is polled with the verify API `payments.verify_interval_seconds`
//!   after its creation, then at doubling intervals up to 5 minutes, until it ends;
//! - the provider's `success` completes it (release + debit), `failed` fails it (release); both
//!   in one transaction that also ends the job, from an open state only;
//! - provider errors retry at doubling delays from 1 s to 60 s; a provider unreachable for 24 h
//!   fails a withdrawal whose transfer was never created, and releases its hold; a provider that
//!   refuses the transfer itself (a 4xx) fails it at once (nothing was paid).
//!
//! Transfer callbacks are a trigger to ask the verify API, never proof on their own (D6.2–3).
use serde_json::Value;

use crate::domain::money::to_ghs;
use crate::domain::new_id;
use crate::domain::payments::{next_poll_delay_ms, retry_delay_ms, CURRENCY};
use crate::domain::settings::OperationsSettings;
use crate::domain::time::now_ms;
use crate::domain::webhooks::EventType;
use crate::domain::withdrawals::{needs_approval, WithdrawalRequest, WithdrawalStatus, PROVIDER_DOWN_LIMIT_MS};
use crate::providers::payments::{adapter, ProviderError, ProviderId, RemoteStatus, TransferRequest, TransferState};
use crate::state::AppState;
use crate::store::idempotency as keys;
use crate::store::jobs::{self, queue};
use crate::store::ledger::{self, kind};
use crate::store::withdrawals::{self, Withdrawal};
use crate::store::{events, StoreError, StoreResult, StoreTx};

use super::idempotency::{self, Ask, Requested};
use super::routing::{credentials_now, payments_settings, payout_route};
use super::schedule::first_poll_ms;
use super::{FlowError, Next};

/// The account's approval threshold (`operations.withdrawalApprovalAbove`), in pesewas.
async fn approval_threshold(state: &AppState, account_id: &str) -> Result<Option<i64>, StoreError> {
    let operations = state.store.settings_category(account_id, "operations").await?;
    Ok(OperationsSettings::from_value(&operations).withdrawal_approval_above)
}

/// Asks for a withdrawal (see the module docs). `parse` checks the body, after the key's state
/// was read; `render` makes the answer's `data` from the new withdrawal.
pub async fn request<E: From<FlowError>>(
    state: &AppState,
    ask: &Ask,
    parse: impl FnOnce() -> Result<WithdrawalRequest, E>,
    render: impl FnOnce(&Withdrawal) -> Value,
) -> Result<Requested, E> {
    request_by(state, ask, None, parse, render).await
}

/// As [`request`], asked by a console member (`requested_by`, recorded on the withdrawal in
/// its creating transaction: a second member approves it, D17.30).
pub async fn request_by<E: From<FlowError>>(
    state: &AppState,
    ask: &Ask,
    requested_by: Option<&str>,
    parse: impl FnOnce() -> Result<WithdrawalRequest, E>,
    render: impl FnOnce(&Withdrawal) -> Value,
) -> Result<Requested, E> {
    let store_error = |e: StoreError| E::from(FlowError::Store(e));
    if let Some(known) = idempotency::known(state, ask).await.map_err(store_error)? {
        return Ok(known);
    }
    let req = parse()?;
    let account_id = ask.account_id.as_str();
    let settings = payments_settings(state, account_id).await.map_err(store_error)?;
    let Some(route) = payout_route(state, account_id, &settings) else {
        let message = "no payout provider is configured for this account; nothing was held";
        return Err(E::from(FlowError::ProviderUnavailable(message.into())));
    };
    let threshold = approval_threshold(state, account_id).await.map_err(store_error)?;
    let status = if needs_approval(req.amount, threshold) {
        WithdrawalStatus::AwaitingApproval
    } else {
        WithdrawalStatus::Pending
    };
    let now = now_ms();
    let w = Withdrawal {
        id: new_id(),
        account_id: account_id.to_string(),
        status,
        amount: req.amount,
        currency: CURRENCY.to_string(),
        bank_name: req.bank_name,
        bank_code: req.bank_code,
        account_number: req.account_number,
        account_name: req.account_name,
        provider: route.provider.as_str().to_string(),
        failure_reason: None,
        idempotency_key: ask.idempotency_key.clone(),
        transfer_created: false,
        provider_down_since: None,
        created_at: now,
        updated_at: now,
        requested_by: requested_by.map(str::to_string),
    };
    let data = render(&w);
    let reason = format!(
        "withdrawal of {} GHS is above the approval threshold of {} GHS",
        to_ghs(w.amount),
        to_ghs(threshold.unwrap_or(0))
    );
    file(state, &w, ask, data, &reason).await.map_err(store_error)
}

/// Files the withdrawal `w` under its idempotency key in one transaction (see the module docs):
/// the account locked, the key claimed (a concurrent request with it won: how the key stands),
/// the available balance checked (below the amount: `InsufficientBalance`, nothing written and
/// the key free), then the withdrawal, its `withdrawal_hold`, its payout job or its approval
/// request (`approval_reason`), and `data`, the 201 its key replays.
async fn file(
    state: &AppState,
    w: &Withdrawal,
    ask: &Ask,
    data: Value,
    approval_reason: &str,
) -> StoreResult<Requested> {
    let now = w.created_at;
    let mut tx = state.store.begin().await?;
    withdrawals::lock_account(&mut tx, state.store.backend(), &w.account_id).await?;
    if let Some(key) = keys::claim(&mut tx, ask, now).await? {
        tx.rollback().await?;
        return Ok(Requested::Known(key));
    }
    let available = withdrawals::available_in(&mut tx, &w.account_id, now).await?;
    if available < w.amount {
        tx.rollback().await?;
        return Err(StoreError::InsufficientBalance(format!(
            "the available balance ({}) does not cover {}",
            to_ghs(available.max(0)),
            to_ghs(w.amount)
        )));
    }
    withdrawals::insert(&mut tx, w).await?;
    ledger::entry(&mut tx, &w.account_id, kind::WITHDRAWAL_HOLD, -w.amount, &w.id, now, now).await?;
    if w.status == WithdrawalStatus::AwaitingApproval {
        withdrawals::request_approval(&mut tx, w, approval_reason, now).await?;
    } else {
        jobs::enqueue(&mut tx, queue::PAYOUT, &w.id, now, now).await?;
    }
    keys::complete(&mut tx, ask, "withdrawal.create", "withdrawal", &w.id, &data).await?;
    tx.commit().await?;
    Ok(Requested::Created(data))
}

/// Why a payout step could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PayoutError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the payout provider {0} is not configured for this account")]
    NotConfigured(String),
}

impl PayoutError {
    /// Worth retrying later (the provider may come back, or be configured again).
    pub fn is_transient(&self) -> bool {
        match self {
            PayoutError::Provider(e) => e.is_transient(),
            PayoutError::NotConfigured(_) => true,
            PayoutError::Store(_) => true,
        }
    }
}

/// Where a withdrawal stands after one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Completed,
    Failed,
    /// The transfer exists and is not settled yet.
    Processing,
    /// The provider knows no transfer for a withdrawal that is not pending (callbacks only).
    UnknownTransfer,
    /// Already ended, or awaiting approval: nothing to do.
    Unchanged,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "withdrawal_completed",
            Outcome::Failed => "withdrawal_failed",
            Outcome::Processing => "processing",
            Outcome::UnknownTransfer => "unknown_transfer",
            Outcome::Unchanged => "unchanged",
        }
    }
}

/// Applies the provider's view of the transfer: ends the withdrawal when the transfer did.
async fn apply(state: &AppState, w: &Withdrawal, remote: &TransferState) -> Result<Outcome, PayoutError> {
    let now = now_ms();
    if remote.amount != w.amount {
        // The reference is ours and unique at the provider; another amount means someone else
        // created it. Never settle money on it: operators look at it.
        tracing::error!(withdrawal = %w.id, expected = w.amount, reported = remote.amount, "transfer amount differs; left open");
        return Ok(Outcome::Processing);
    }
    Ok(match remote.status {
        RemoteStatus::Success => {
            end(state, &w.id, WithdrawalStatus::Completed, None, now).await?;
            Outcome::Completed
        }
        RemoteStatus::Failed => {
            let reason = remote.reason.clone().unwrap_or_else(|| "the provider reported the transfer failed".into());
            end(state, &w.id, WithdrawalStatus::Failed, Some(&reason), now).await?;
            Outcome::Failed
        }
        RemoteStatus::Pending => Outcome::Processing,
    })
}

/// One step for a withdrawal: pay it out if pending (`may_create`), else ask the provider how
/// its transfer stands; then apply the answer.
async fn advance(state: &AppState, w: &Withdrawal, may_create: bool) -> Result<Outcome, PayoutError> {
    if !w.status.is_payable() {
        return Ok(Outcome::Unchanged);
    }
    let provider = ProviderId::parse(&w.provider).ok_or_else(|| PayoutError::NotConfigured(w.provider.clone()))?;
    let creds = credentials_now(state, &w.account_id, provider)
        .await?
        .ok_or_else(|| PayoutError::NotConfigured(w.provider.clone()))?;
    let api = adapter(provider);
    let pending = w.status == WithdrawalStatus::Pending;
    let remote = match api.verify_transfer(&state.outbound, &creds, &w.id).await {
        // D16.13: a transfer with this reference exists (a crash after creating it): adopt it.
        Ok(t) => t,
        Err(ProviderError::NotFound) if pending && may_create => {
            let request = TransferRequest {
                reference: &w.id,
                amount: w.amount,
                currency: &w.currency,
                account_name: &w.account_name,
                account_number: &w.account_number,
                bank_code: &w.bank_code,
                bank_name: &w.bank_name,
                reason: "Tessera withdrawal",
            };
            match api.create_transfer(&state.outbound, &creds, &request).await {
                Ok(t) => t,
                Err(ProviderError::Duplicate) => api.verify_transfer(&state.outbound, &creds, &w.id).await?,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ProviderError::NotFound) => return Ok(Outcome::UnknownTransfer),
        Err(e) => return Err(e.into()),
    };
    if pending {
        state.store.mark_processing(&w.id, now_ms()).await?;
    } else {
        state.store.note_provider_up(&w.id).await?;
    }
    apply(state, w, &remote).await
}

/// A transfer callback's reconciliation (D6.3): asks the provider, then completes or fails.
pub async fn reconcile(state: &AppState, w: &Withdrawal) -> Result<Outcome, PayoutError> {
    advance(state, w, false).await
}

/// The payout worker's step for a claimed job of withdrawal `w` (`step_ms`: the job's last
/// delay): pays out or polls, and says when to come back.
pub async fn step(state: &AppState, w: &Withdrawal, step_ms: i64) -> Result<Next, StoreError> {
    let now = now_ms();
    if !w.status.is_payable() {
        return Ok(Next::Done);
    }
    match advance(state, w, true).await {
        // Ended: the store ended the job with the change.
        Ok(Outcome::Completed | Outcome::Failed | Outcome::Unchanged) => Ok(Next::Done),
        // D16.5: polled on the charge schedule, counted from the transfer's creation.
        Ok(Outcome::Processing | Outcome::UnknownTransfer) => Ok(Next::Later {
            delay_ms: next_poll_delay_ms(first_poll_ms(state), step_ms),
            not_after: None,
            error: None,
        }),
        Err(e) if e.is_transient() => {
            let since = state.store.note_provider_down(&w.id, now).await?;
            if now - since >= PROVIDER_DOWN_LIMIT_MS && w.status == WithdrawalStatus::Pending {
                tracing::warn!(withdrawal = %w.id, error = %e, "payout provider unreachable for 24 hours; failed and released");
                let reason = "the payout provider was unreachable for 24 hours";
                end(state, &w.id, WithdrawalStatus::Failed, Some(reason), now_ms()).await?;
                return Ok(Next::Done);
            }
            let delay_ms = retry_delay_ms(step_ms);
            tracing::warn!(withdrawal = %w.id, error = %e, retry_ms = delay_ms, "payout step failed; retried");
            Ok(Next::Later { delay_ms, not_after: None, error: Some(e.to_string()) })
        }
        Err(e) if w.status == WithdrawalStatus::Pending => {
            // The provider refused the transfer itself (a 4xx): nothing was paid, release.
            tracing::warn!(withdrawal = %w.id, error = %e, "the provider refused the transfer; failed and released");
            let reason = format!("the provider refused the transfer: {e}");
            end(state, &w.id, WithdrawalStatus::Failed, Some(&reason), now_ms()).await?;
            Ok(Next::Done)
        }
        Err(e) => {
            tracing::warn!(withdrawal = %w.id, error = %e, "transfer status unreadable; retried");
            Ok(Next::Later { delay_ms: retry_delay_ms(step_ms), not_after: None, error: Some(e.to_string()) })
        }
    }
}

/// The transfer's outcome (D16.2): `completed` (released and debited) or `failed` (released),
/// from an open state only, once, with its `withdrawal.succeeded` or `withdrawal.failed` event
/// (D17.25) in the same transaction. Returns whether it moved.
async fn end(state: &AppState, id: &str, to: WithdrawalStatus, reason: Option<&str>, now: i64) -> StoreResult<bool> {
    let mut tx = state.store.begin().await?;
    if !end_in(&mut tx, id, &withdrawals::OPEN, to, reason, now).await? {
        return Ok(false);
    }
    let event =
        if to == WithdrawalStatus::Completed { EventType::WithdrawalSucceeded } else { EventType::WithdrawalFailed };
    if let Some(w) = withdrawals::read_in(&mut tx, id).await? {
        events::record(&mut tx, &w.account_id, event, &super::events::withdrawal_data(&w), now).await?;
    }
    tx.commit().await?;
    Ok(true)
}

/// A withdrawal's end in the caller's transaction: its status moved to `to` from one of `from`
/// only, its hold released (`withdrawal_release`) and, when it completed, the money debited
/// (`withdrawal_debit`), its payout job ended. Returns whether it moved.
async fn end_in(
    tx: &mut StoreTx,
    id: &str,
    from: &[WithdrawalStatus],
    to: WithdrawalStatus,
    reason: Option<&str>,
    now: i64,
) -> StoreResult<bool> {
    let Some((account_id, amount)) = withdrawals::mark_ended(tx, id, from, to, reason, now).await? else {
        return Ok(false);
    };
    ledger::entry(tx, &account_id, kind::WITHDRAWAL_RELEASE, amount, id, now, now).await?;
    if to == WithdrawalStatus::Completed {
        ledger::entry(tx, &account_id, kind::WITHDRAWAL_DEBIT, -amount, id, now, now).await?;
    }
    jobs::finish(tx, queue::PAYOUT, id).await?;
    Ok(true)
}

/// Rejection of a withdrawal held for approval (D14.2), in the decision's transaction: cancelled
/// with its hold released. Returns whether it moved.
pub(crate) async fn reject_in(tx: &mut StoreTx, id: &str, now: i64) -> StoreResult<bool> {
    let awaiting = [WithdrawalStatus::AwaitingApproval];
    end_in(tx, id, &awaiting, WithdrawalStatus::Cancelled, Some("rejected at approval"), now).await
}

//! Payouts (D14.1, D16.5, D16.8, D16.13): the worker that pays a withdrawal out and follows its
//! transfer to the end. A `payout` job (subject: the withdrawal id) is claimed with a lease:
//! - a `pending` withdrawal: the provider is first asked for a transfer with the reference (the
//!   withdrawal id) and one that exists is adopted; only then is a transfer created (a
//!   `Duplicate` answer is adopted too). So a crash between the provider's answer and the move
//!   to `processing` is redone without paying twice. The move to `processing` is conditional;
//! - a `processing` withdrawal is polled with the verify API `payments.verify_interval_seconds`
//!   after its creation, then at doubling intervals up to 5 minutes, until it ends;
//! - the provider's `success` completes it (release + debit), `failed` fails it (release); both
//!   in one transaction that also ends the job, from an open state only;
//! - provider errors retry at doubling delays from 1 s to 60 s; a provider unreachable for 24 h
//!   fails a withdrawal whose transfer was never created, and releases its hold.
//!
//! Transfer webhooks (`transfer.success` / `transfer.failed`) reach [`reconcile`] through the
//! webhook worker: a trigger to ask the verify API, never proof on their own (D6.2–3).
use crate::domain::payments::{next_poll_delay_ms, retry_delay_ms};
use crate::domain::time::now_ms;
use crate::domain::withdrawals::{WithdrawalStatus, PROVIDER_DOWN_LIMIT_MS};
use crate::payments::{credentials, payments_settings};
use crate::providers::payments::{adapter, ProviderError, ProviderId, RemoteStatus, TransferRequest, TransferState};
use crate::state::AppState;
use crate::store::jobs::queue;
use crate::store::withdrawals::Withdrawal;
use crate::store::StoreError;

use super::charges::first_poll_ms;

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
    fn is_transient(&self) -> bool {
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
            state.store.complete_withdrawal(&w.id, now).await?;
            Outcome::Completed
        }
        RemoteStatus::Failed => {
            let reason = remote.reason.clone().unwrap_or_else(|| "the provider reported the transfer failed".into());
            state.store.fail_withdrawal(&w.id, &reason, now).await?;
            Outcome::Failed
        }
        RemoteStatus::Pending => Outcome::Processing,
    })
}

/// One step for a withdrawal: pay it out if pending (`may_create`), else ask the provider how
/// its transfer stands; then apply the answer.
pub async fn advance(state: &AppState, w: &Withdrawal, may_create: bool) -> Result<Outcome, PayoutError> {
    if !w.is_payable() {
        return Ok(Outcome::Unchanged);
    }
    let provider = ProviderId::parse(&w.provider).ok_or_else(|| PayoutError::NotConfigured(w.provider.clone()))?;
    let settings = payments_settings(state, &w.account_id).await?;
    let creds = credentials(state, &w.account_id, &settings, provider)
        .ok_or_else(|| PayoutError::NotConfigured(w.provider.clone()))?;
    let api = adapter(provider);
    let pending = w.status == WithdrawalStatus::Pending.as_str();
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

/// Runs one due payout job. Returns whether there was one.
pub async fn try_execute_one(state: &AppState) -> anyhow::Result<bool> {
    let now = now_ms();
    let worker = state.worker_id.as_str();
    let Some(job) = state.store.claim_job(queue::PAYOUT, worker, now, super::lease_ms(state)).await? else {
        return Ok(false);
    };
    let Some(w) = state.store.withdrawal_by_id(&job.subject).await? else {
        state.store.finish_job(&job).await?;
        return Ok(true);
    };
    if !w.is_payable() {
        state.store.finish_job(&job).await?;
        return Ok(true);
    }
    match advance(state, &w, true).await {
        // Ended: the store ended the job with the change.
        Ok(Outcome::Completed | Outcome::Failed | Outcome::Unchanged) => {}
        Ok(Outcome::Processing | Outcome::UnknownTransfer) => {
            // D16.5: polled on the charge schedule, counted from the transfer's creation.
            let step = next_poll_delay_ms(first_poll_ms(state), job.step_ms);
            state.store.reschedule_job(&job, worker, now_ms() + step, step, None).await?;
        }
        Err(e) if e.is_transient() => {
            let since = state.store.note_provider_down(&w.id, now).await?;
            if now - since >= PROVIDER_DOWN_LIMIT_MS && w.status == WithdrawalStatus::Pending.as_str() {
                tracing::warn!(withdrawal = %w.id, error = %e, "payout provider unreachable for 24 hours; failed and released");
                state
                    .store
                    .fail_withdrawal(&w.id, "the payout provider was unreachable for 24 hours", now_ms())
                    .await?;
                return Ok(true);
            }
            let step = retry_delay_ms(job.step_ms);
            tracing::warn!(withdrawal = %w.id, error = %e, retry_ms = step, "payout step failed; retried");
            state.store.reschedule_job(&job, worker, now_ms() + step, step, Some(&e.to_string())).await?;
        }
        Err(e) if w.status == WithdrawalStatus::Pending.as_str() => {
            // The provider refused the transfer itself (a 4xx): nothing was paid, release.
            tracing::warn!(withdrawal = %w.id, error = %e, "the provider refused the transfer; failed and released");
            state.store.fail_withdrawal(&w.id, &format!("the provider refused the transfer: {e}"), now_ms()).await?;
        }
        Err(e) => {
            let step = retry_delay_ms(job.step_ms);
            tracing::warn!(withdrawal = %w.id, error = %e, "transfer status unreadable; retried");
            state.store.reschedule_job(&job, worker, now_ms() + step, step, Some(&e.to_string())).await?;
        }
    }
    Ok(true)
}

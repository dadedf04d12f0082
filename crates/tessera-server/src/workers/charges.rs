//! Pending charges (D16.4–5): a charge whose callback never comes is verified with its provider
//! `payments.verify_interval_seconds` after initialization, then at doubling intervals up to
//! 5 minutes; at hold expiry the provider is asked once more, then the transaction is marked
//! `abandoned` and its inventory released.
use crate::domain::payments::{next_poll_delay_ms, retry_delay_ms, TxStatus};
use crate::domain::time::now_ms;
use crate::payments::{confirm, ConfirmError, Confirmed};
use crate::state::AppState;
use crate::store::jobs::queue;

/// The first poll's delay after initialization, milliseconds.
pub fn first_poll_ms(state: &AppState) -> i64 {
    ((state.config.payments.verify_interval_seconds * 1000.0).round() as i64).max(1)
}

/// Polls or expires one due pending charge. Returns whether there was one.
pub async fn try_execute_one(state: &AppState) -> anyhow::Result<bool> {
    let now = now_ms();
    let worker = state.worker_id.as_str();
    let Some(job) = state.store.claim_job(queue::CHARGE, worker, now, super::lease_ms(state)).await? else {
        return Ok(false);
    };
    let Some(t) = state.store.transaction_by_reference(&job.subject).await? else {
        state.store.finish_job(&job).await?;
        return Ok(true);
    };
    if t.status != TxStatus::Pending.as_str() || t.credited {
        state.store.finish_job(&job).await?;
        return Ok(true);
    }
    let expired = now >= t.hold_expires_at;
    let result = if t.mismatch { Ok(Confirmed::Mismatch) } else { confirm(state, &t).await };
    let (delay, error) = match result {
        // A mismatched charge is never credited; it only waits for its hold's release.
        Ok(Confirmed::Mismatch) if !expired => (t.hold_expires_at - now, None),
        Ok(Confirmed::Pending) if !expired => {
            let step = next_poll_delay_ms(first_poll_ms(state), job.step_ms);
            (step, None)
        }
        Ok(Confirmed::Pending | Confirmed::Mismatch) => {
            state.store.close_transaction(&t.reference, TxStatus::Abandoned, now_ms()).await?;
            return Ok(true);
        }
        // Settled one way or the other: the store ended the job with the change.
        Ok(_) => {
            state.store.finish_job(&job).await?;
            return Ok(true);
        }
        Err(e) if expired => {
            tracing::warn!(reference = %t.reference, error = %e, "hold expired and the provider could not confirm; abandoned");
            state.store.close_transaction(&t.reference, TxStatus::Abandoned, now_ms()).await?;
            return Ok(true);
        }
        Err(ConfirmError::Provider(e)) => (retry_delay_ms(job.step_ms), Some(e.to_string())),
        Err(e) => (retry_delay_ms(job.step_ms), Some(e.to_string())),
    };
    // Never sleep past the hold's expiry: that is when the last question is asked.
    let run_at = (now_ms() + delay).min(t.hold_expires_at.max(now));
    state.store.reschedule_job(&job, worker, run_at, delay, error.as_deref()).await?;
    Ok(true)
}

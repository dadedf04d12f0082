//! Pending charges (D16.4–5): claims due `charge` jobs and runs the fulfilment flow's poll step
//! ([`crate::flows::fulfilment::poll`]) on each: verify with the provider, credit and fulfil,
//! or release at hold expiry.
use crate::domain::time::now_ms;
use crate::flows::{fulfilment, Next};
use crate::state::AppState;
use crate::store::jobs::queue;

/// Polls or expires one due pending charge. Returns whether there was one.
pub async fn try_execute_one(state: &AppState) -> anyhow::Result<bool> {
    let Some(job) = state.store.claim_job(queue::CHARGE, &state.worker_id, now_ms(), super::lease_ms(state)).await?
    else {
        return Ok(false);
    };
    let next = match state.store.transaction_by_reference(&job.subject).await? {
        Some(t) => fulfilment::poll(state, &t, job.step_ms).await?,
        None => Next::Done,
    };
    super::follow(state, &job, next).await?;
    Ok(true)
}

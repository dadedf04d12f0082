//! Mobile-money charges of USSD votes (D17.21): claims due `momo_charge` jobs and runs the USSD
//! flow's charge step ([`crate::flows::ussd::charge`]) on each, after the caller's session has
//! ended (the handset shows the provider's prompt only once our menu is closed).
use crate::domain::time::now_ms;
use crate::flows::ussd;
use crate::state::AppState;
use crate::store::jobs::queue;

/// Makes one due mobile-money charge. Returns whether there was one.
pub async fn try_execute_one(state: &AppState) -> anyhow::Result<bool> {
    let Some(job) = state.store.claim_job(queue::MOMO, &state.worker_id, now_ms(), super::lease_ms(state)).await?
    else {
        return Ok(false);
    };
    let next = ussd::charge(state, &job.subject, job.step_ms).await?;
    super::follow(state, &job, next).await?;
    Ok(true)
}

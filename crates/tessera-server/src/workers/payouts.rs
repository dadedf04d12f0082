//! Payouts (D14.1, D16.5, D16.8, D16.13): claims due `payout` jobs (subject: the withdrawal id)
//! and runs [`crate::flows::payouts::step`] on each: pay the withdrawal out, or poll its
//! transfer until it ends.
use crate::domain::time::now_ms;
use crate::flows::{payouts, Next};
use crate::state::AppState;
use crate::store::jobs::queue;

/// Runs one due payout job. Returns whether there was one.
pub async fn try_execute_one(state: &AppState) -> anyhow::Result<bool> {
    let Some(job) = state.store.claim_job(queue::PAYOUT, &state.worker_id, now_ms(), super::lease_ms(state)).await?
    else {
        return Ok(false);
    };
    let next = match state.store.withdrawal_by_id(&job.subject).await? {
        Some(w) => payouts::step(state, &w, job.step_ms).await?,
        None => Next::Done,
    };
    super::follow(state, &job, next).await?;
    Ok(true)
}

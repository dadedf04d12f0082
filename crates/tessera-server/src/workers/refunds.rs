//! Refunds (D17.36–37): claims due `refund` jobs (subject: the refund id) and runs
//! [`crate::flows::refunds::step`] on each: create the refund at the provider once, then poll it
//! until it ends. And `campaign_cancel` jobs (subject: the campaign id): each step files one batch
//! of a cancelled campaign's refunds ([`crate::flows::refunds::file_cancellations`]).
use crate::domain::time::now_ms;
use crate::flows::{refunds, Next};
use crate::state::AppState;
use crate::store::jobs::queue;

/// Runs one due refund job. Returns whether there was one.
pub async fn try_execute_one(state: &AppState) -> anyhow::Result<bool> {
    let Some(job) = state.store.claim_job(queue::REFUND, &state.worker_id, now_ms(), super::lease_ms(state)).await?
    else {
        return Ok(false);
    };
    let next = match state.store.refund_by_id(&job.subject).await? {
        Some(r) => refunds::step(state, &r, job.step_ms).await?,
        None => Next::Done,
    };
    super::follow(state, &job, next).await?;
    Ok(true)
}

/// Runs one due cancellation batch. Returns whether there was one.
pub async fn try_file_one(state: &AppState) -> anyhow::Result<bool> {
    let Some(job) =
        state.store.claim_job(queue::CAMPAIGN_CANCEL, &state.worker_id, now_ms(), super::lease_ms(state)).await?
    else {
        return Ok(false);
    };
    let next = refunds::file_cancellations(state, &job.subject).await?;
    super::follow(state, &job, next).await?;
    Ok(true)
}

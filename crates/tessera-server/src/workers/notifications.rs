//! Notification delivery (D9.2, D13, D16.11): claims `notification` jobs and runs one attempt of
//! [`crate::flows::notifications::attempt`] on each (render, send by e-mail or SMS, record the
//! outcome; the retry schedule is the flow's). Rendering runs on the render pool of
//! `crate::views::notifications` (this worker waits for it) and a confirmation's QR images are
//! drawn once, kept until the notification is final (item 5).
use crate::domain::time::now_ms;
use crate::flows::notifications::{self, Attempted};
use crate::state::AppState;
use crate::store::jobs::queue;

/// Delivers one due notification. Returns whether there was one.
pub async fn try_execute_one(state: &AppState) -> anyhow::Result<bool> {
    execute_due(state, now_ms()).await
}

/// As [`try_execute_one`] with the clock given (tests step through the retry schedule).
pub async fn execute_due(state: &AppState, now: i64) -> anyhow::Result<bool> {
    let worker = state.worker_id.as_str();
    let Some(job) = state.store.claim_job(queue::NOTIFICATION, worker, now, super::lease_ms(state)).await? else {
        return Ok(false);
    };
    match notifications::attempt(state, &job.subject, now).await? {
        Attempted::Nothing => state.store.finish_job(&job).await?,
        Attempted::Final => {}
        Attempted::Retry { delay_ms, error } => {
            state.store.reschedule_job(&job, worker, now + delay_ms, delay_ms, Some(&error)).await?
        }
    }
    Ok(true)
}

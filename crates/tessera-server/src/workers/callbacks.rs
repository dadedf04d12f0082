//! Reconciliation of stored provider callbacks (D6.2–3): claims due callback jobs (queue
//! `webhook` in the rows, [`queue::CALLBACK`]) and runs [`crate::flows::callbacks::reconcile`]
//! on each (a trigger to ask the provider's verify API, never proof on its own).
use crate::domain::time::now_ms;
use crate::flows::{callbacks, Next};
use crate::state::AppState;
use crate::store::jobs::queue;

/// Reconciles one due callback. Returns whether there was one.
pub async fn try_execute_one(state: &AppState) -> anyhow::Result<bool> {
    let Some(job) = state.store.claim_job(queue::CALLBACK, &state.worker_id, now_ms(), super::lease_ms(state)).await?
    else {
        return Ok(false);
    };
    let next = match state.store.callback_by_id(&job.subject).await? {
        Some(callback) => callbacks::reconcile(state, &callback, job.step_ms).await?,
        None => Next::Done,
    };
    super::follow(state, &job, next).await?;
    Ok(true)
}

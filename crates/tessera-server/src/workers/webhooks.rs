//! Reconciliation of stored provider callbacks (D6.2–3): claims due `webhook` jobs and runs
//! [`crate::flows::callbacks::reconcile`] on each event (a trigger to ask the provider's verify
//! API, never proof on its own).
use crate::domain::time::now_ms;
use crate::flows::{callbacks, Next};
use crate::state::AppState;
use crate::store::jobs::queue;

/// Reconciles one due webhook event. Returns whether there was one.
pub async fn try_execute_one(state: &AppState) -> anyhow::Result<bool> {
    let Some(job) = state.store.claim_job(queue::WEBHOOK, &state.worker_id, now_ms(), super::lease_ms(state)).await?
    else {
        return Ok(false);
    };
    let next = match state.store.webhook_event(&job.subject).await? {
        Some(event) => callbacks::reconcile(state, &event, job.step_ms).await?,
        None => Next::Done,
    };
    super::follow(state, &job, next).await?;
    Ok(true)
}

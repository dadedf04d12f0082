//! Reconciliation of stored provider callbacks (D6.2–3): each event is a trigger to ask the
//! provider's verify API about its charge or transfer, then to apply what the provider says
//! (charges through `payments::confirm`, transfers through `workers::payouts::reconcile`).
use crate::domain::payments::retry_delay_ms;
use crate::domain::time::now_ms;
use crate::payments::{confirm, ConfirmError};
use crate::state::AppState;
use crate::store::jobs::queue;

use super::payouts::{self, PayoutError};

/// Reconciles one due webhook event. Returns whether there was one.
pub async fn try_execute_one(state: &AppState) -> anyhow::Result<bool> {
    let now = now_ms();
    let worker = state.worker_id.as_str();
    let Some(job) = state.store.claim_job(queue::WEBHOOK, worker, now, super::lease_ms(state)).await? else {
        return Ok(false);
    };
    let Some(event) = state.store.webhook_event(&job.subject).await? else {
        state.store.finish_job(&job).await?;
        return Ok(true);
    };
    let outcome = match event.event.as_str() {
        "charge.success" | "charge.failed" => match state.store.transaction_by_reference(&event.reference).await? {
            None => "unknown_reference".to_string(),
            Some(t) if t.provider.as_deref() != Some(event.provider.as_str()) => "provider_mismatch".to_string(),
            Some(t) => match confirm(state, &t).await {
                Ok(c) => c.as_str().to_string(),
                Err(ConfirmError::Provider(e)) if e.is_transient() => {
                    let step = retry_delay_ms(job.step_ms);
                    tracing::warn!(event = %event.id, error = %e, "provider unreachable; the event is retried");
                    state.store.reschedule_job(&job, worker, now_ms() + step, step, Some(&e.to_string())).await?;
                    return Ok(true);
                }
                Err(e) => format!("error: {e}"),
            },
        },
        "transfer.success" | "transfer.failed" => match state.store.withdrawal_by_id(&event.reference).await? {
            None => "unknown_reference".to_string(),
            Some(w) if w.provider != event.provider => "provider_mismatch".to_string(),
            Some(w) => match payouts::reconcile(state, &w).await {
                Ok(o) => o.as_str().to_string(),
                Err(PayoutError::Provider(e)) if e.is_transient() => {
                    let step = retry_delay_ms(job.step_ms);
                    tracing::warn!(event = %event.id, error = %e, "provider unreachable; the event is retried");
                    state.store.reschedule_job(&job, worker, now_ms() + step, step, Some(&e.to_string())).await?;
                    return Ok(true);
                }
                Err(e) => format!("error: {e}"),
            },
        },
        _ => "ignored".to_string(),
    };
    tracing::info!(provider = %event.provider, event = %event.event, outcome = %outcome, "webhook reconciled");
    state.store.finish_webhook(&event.id, &outcome, now_ms()).await?;
    Ok(true)
}

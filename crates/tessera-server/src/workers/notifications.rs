//! Notification delivery (D9.2, D13, D16.11): claims `notification` jobs, renders the message
//! (crate::notify) and sends it by e-mail or SMS. Attempts: at once, then 1 m, 5 m, 30 m, 2 h and
//! 6 h after the attempt before (× `notifications.retry_scale`, D11.4); after the sixth failure
//! the notification is `failed` with its last error. A message that cannot be rendered fails at
//! once with the reason. A passcode is scrubbed from the stored payload once the message is final.
//! Rendering runs on crate::notify's render pool (this worker waits for it) and a
//! confirmation's QR images are drawn once, kept until the notification is final (item 5).
use serde_json::json;

use crate::domain::time::now_ms;
use crate::notify::{carries_passcode, forget_rendered, render, send_email, send_sms};
use crate::state::AppState;
use crate::store::jobs::queue;
use crate::telemetry::metrics;

/// Delays before attempts 2 to 6, milliseconds (D9.2).
pub const RETRY_DELAYS_MS: [i64; 5] = [60_000, 300_000, 1_800_000, 7_200_000, 21_600_000];
/// Attempts before `failed`.
pub const MAX_ATTEMPTS: i64 = 6;

/// The delay after failed attempt `attempt` (1-based), scaled.
pub fn retry_delay_ms(attempt: i64, scale: f64) -> i64 {
    let i = usize::try_from(attempt.clamp(1, 5) - 1).unwrap_or(0);
    (RETRY_DELAYS_MS[i] as f64 * scale).round() as i64
}

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
    let Some(n) = state.store.notification_by_id(&job.subject).await? else {
        state.store.finish_job(&job).await?;
        return Ok(true);
    };
    let Some(attempt) = state.store.start_attempt(&n.id, now).await? else {
        state.store.finish_job(&job).await?;
        return Ok(true);
    };
    let scrub = carries_passcode(&n.event_type).then(|| json!({"scrubbed": true}));
    let rendered = match render(state, &n).await {
        Ok(r) => r,
        Err(reason) => {
            tracing::warn!(notification = %n.id, event_type = %n.event_type, %reason, "notification cannot be rendered; failed");
            state
                .store
                .notification_failed(&n.id, &format!("cannot render: {reason}"), scrub.as_ref(), now_ms())
                .await?;
            forget_rendered(&n.id);
            return Ok(true);
        }
    };
    let channel: &'static str = n.channel.as_str();
    let sent = match n.channel.as_str() {
        "sms" => send_sms(state, &n, &rendered).await,
        _ => send_email(state, &n, &rendered).await,
    };
    match sent {
        Ok(()) => {
            tracing::info!(notification = %n.id, channel = %n.channel, event_type = %n.event_type, attempt, "notification sent");
            state.store.notification_sent(&n.id, scrub.as_ref(), now_ms()).await?;
            forget_rendered(&n.id);
            metrics::notification_outcome(channel, "sent");
        }
        Err(error) if attempt >= MAX_ATTEMPTS => {
            tracing::warn!(notification = %n.id, channel = %n.channel, attempt, %error, "notification failed for good");
            state.store.notification_failed(&n.id, &error, scrub.as_ref(), now_ms()).await?;
            forget_rendered(&n.id);
            metrics::notification_outcome(channel, "failed");
        }
        Err(error) => {
            let delay = retry_delay_ms(attempt, state.config.notifications.retry_scale);
            tracing::warn!(notification = %n.id, channel = %n.channel, attempt, delay_ms = delay, %error, "notification attempt failed; retrying");
            state.store.notification_retry(&n.id, &error, now).await?;
            state.store.reschedule_job(&job, worker, now + delay, delay, Some(&error)).await?;
            metrics::notification_outcome(channel, "retry");
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    #[test]
    fn retries_follow_the_d9_schedule_scaled() {
        let d: Vec<i64> = (1..=5).map(|a| super::retry_delay_ms(a, 1.0)).collect();
        assert_eq!(d, vec![60_000, 300_000, 1_800_000, 7_200_000, 21_600_000]);
        assert_eq!(super::retry_delay_ms(1, 0.001), 60);
    }
}

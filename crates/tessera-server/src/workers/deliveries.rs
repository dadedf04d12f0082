//! Outbound webhook delivery (D17.26, D17.41): each step claims one endpoint that has pending
//! deliveries and sends its due events in order (`flows::webhooks::deliver_next`). The endpoint's
//! lease is its claim, so there is no job row: the deliveries themselves are the queue.
use crate::state::AppState;

/// The longest a delivery loop sleeps when it found nothing to do, milliseconds (a new event
/// waits at most this long for its first attempt, beyond `workers.poll_ms` when that is shorter).
pub const IDLE_MS_MAX: u64 = 100;

/// Delivers the due events of one endpoint. Returns whether there was an endpoint to work on.
pub async fn try_execute_one(state: &AppState) -> anyhow::Result<bool> {
    crate::flows::webhooks::deliver_next(state).await
}

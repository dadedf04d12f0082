//! Outbound webhooks (D17.24–27, D17.41): an account's events delivered to its endpoints,
//! signed as Standard Webhooks, in `sequence` order per endpoint, retried on the schedule, and
//! the test events sent at once.
use crate::domain::webhooks::EventType;
use crate::state::AppState;

use super::FlowResult;

/// One request made to an endpoint, as the attempt log keeps it.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub event_id: String,
    /// The answer's status; `None` when no answer came.
    pub status_code: Option<u16>,
    pub duration_ms: i64,
    pub error: Option<String>,
}

/// `POST /webhook-endpoints/:id/test {type}` (D17.27, D17.41): sends a sample event of `event_type`
/// to the account's endpoint at once (no sequence, not in the feed, not retried, whatever the
/// endpoint's filter) and records the attempt. Another account's endpoint → not found.
pub async fn send_test(
    state: &AppState,
    account_id: &str,
    endpoint_id: &str,
    event_type: EventType,
) -> FlowResult<Attempt> {
    let _ = (state, account_id, endpoint_id, event_type);
    Err(super::FlowError::ProviderUnavailable("test events are not built yet".into()))
}

//! The polling schedule every pending provider operation shares (D16.5): charges (checkout,
//! fulfilment, USSD), transfers (payouts) and refunds are first asked about this long after they
//! started, then at the doubling delays of `domain::payments::next_poll_delay_ms`. Its own home so
//! that the flows that open a pending operation and those that poll it need not import each other.
use crate::state::AppState;

/// The first poll of a pending charge comes `payments.verify_interval_seconds` after its
/// initialization (D16.5), milliseconds.
pub fn first_poll_ms(state: &AppState) -> i64 {
    ((state.config.payments.verify_interval_seconds * 1000.0).round() as i64).max(1)
}

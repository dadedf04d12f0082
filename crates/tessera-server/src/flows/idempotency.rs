//! Requests under an idempotency key (D9.1, D16.12), as withdrawals ([`super::payouts`]) and
//! refunds ([`super::refunds`], D17.33) take them: a known key is answered first, before the
//! body is even checked (the stored first answer again, or why the key cannot be used); a free
//! one lets the request run, and the store claims the key in the transaction that creates the
//! thing (`store::idempotency`).
use serde_json::Value;

use crate::domain::time::now_ms;
use crate::state::AppState;
pub use crate::store::idempotency::{Ask, KeyState};
use crate::store::StoreResult;

/// What a request under a key led to.
#[derive(Debug)]
pub enum Requested {
    /// Created now: the answer's `data` (also stored for replays).
    Created(Value),
    /// The key was known: its stored answer, or why it cannot be used (see [`KeyState`]).
    Known(KeyState),
}

/// How the ask's key stands before the body is checked: `Some` answers the request at once;
/// `None`, the key is free and the request runs.
pub async fn known(state: &AppState, ask: &Ask) -> StoreResult<Option<Requested>> {
    Ok(match state.store.idempotency_key_state(ask, now_ms()).await? {
        KeyState::Free => None,
        known => Some(Requested::Known(known)),
    })
}

//! Flows: one home per flow that moves money or reaches people, between `http` (and `workers`)
//! above and `store` and `providers` below. A flow holds the business rules of one journey:
//! what is allowed, in which order things happen, which provider is asked, what is written
//! together. Handlers parse a request into a domain type, call one flow function and render its
//! result; workers claim a job and call the same flow functions; the store runs the queries and
//! transactions a flow asks for. No axum here, and nothing here imports `http` or `workers`.
//!
//! - [`checkout`]: initialize a payment (price against the catalogue, fees, inventory hold,
//!   provider routing with fallback, free purchases).
//! - [`fulfilment`]: a charge the provider confirmed → ledger → tickets, votes or donation, once.
//! - [`payouts`]: a withdrawal → balance hold → (approval) → transfer → completed or failed.
//! - [`idempotency`]: a request under an idempotency key (withdrawals, refunds): a known key's
//!   answer first.
//! - [`routing`]: which provider and credentials an account's charge or payout goes to, and its
//!   fee rule.
//! - [`schedule`]: when a pending charge, transfer or refund is first polled (D16.5).
//! - [`callbacks`]: a provider's callback verified and stored, later reconciled through
//!   [`fulfilment`] or [`payouts`].
//! - [`approvals`]: four-eyes approval requests, their decisions and effects.
//! - [`campaigns`]: every campaign status change and its announcement (the organizer's e-mail,
//!   the `campaign.status.updated` event), in the change's transaction.
//! - [`leaderboard`]: who may read a voting campaign's standings, and their ranking.
//! - [`modules`]: the guard of the routes an account turned off (`operations.modules`).
//! - [`customer_access`]: one-time passcodes and sessions for ticket holders and portal members.
//! - [`notifications`]: one attempt at a queued notification: render, send by e-mail or SMS,
//!   retry or end.
//! - [`ussd`]: votes by dial: a gateway request moves the caller's stored session one screen; the
//!   mobile-money charge a confirmed vote leads to.
pub mod approvals;
pub mod callbacks;
pub mod campaigns;
pub mod checkout;
pub mod console;
pub mod customer_access;
pub mod events;
pub mod fulfilment;
pub mod gate;
pub mod idempotency;
pub mod leaderboard;
pub mod modules;
pub mod notifications;
pub mod payouts;
pub mod refunds;
pub mod routing;
pub mod schedule;
pub mod ussd;
pub mod webhooks;

use crate::domain::DomainError;
use crate::store::StoreError;

/// What a flow refuses or fails with; `http` turns it into a status and an envelope.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// Input or state the rules refuse (400 with details, 409).
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// Not found (404), sold out, insufficient balance (409), or the database failed (500).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No payment provider could take the request (502 `provider_unavailable`).
    #[error("{0}")]
    ProviderUnavailable(String),
}

pub type FlowResult<T> = Result<T, FlowError>;

/// What a worker does with its claimed job after a flow's step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Nothing more to do: the job ends (a flow whose change ended it already left nothing).
    Done,
    /// Come back after `delay_ms` (the job's new step), but not after `not_after` (epoch ms)
    /// when set, noting `error` when the step failed.
    Later { delay_ms: i64, not_after: Option<i64>, error: Option<String> },
}

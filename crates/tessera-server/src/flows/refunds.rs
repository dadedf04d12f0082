//! Refunds (D17.33–38, D17.42) and campaign cancellations (D17.37): money back through the
//! provider that took it.
//!
//! [`request`]: under the caller's idempotency key (D16.12), a known key is answered first (the
//! stored 201 again, or 409 for another body) before the body is checked; then the store files
//! the refund with all its effects in one transaction (see `store::refunds`), or refuses it
//! whole (409 `not_refundable`, `refund_exceeds_payment`, `ticket_not_refundable`,
//! `insufficient_balance`; 400 `ticket_codes_required`) and the key stays free.
//!
//! [`step`] (the refund worker, per claimed `refund` job) and [`reconcile`] (a refund webhook):
//! - a refund the provider does not hold yet is created there with [`PaymentProvider::create_refund`],
//!   which is idempotent by the refund id (the provider answers the refund it already has), so a
//!   crash between the provider's answer and recording it is redone without refunding twice;
//! - then it is polled with `verify_refund` on the transfer schedule (D16.5) until it ends;
//! - the provider's `success` succeeds it (release + debit, `refunded` += X, the
//!   `payment.refunded` event and the buyer's e-mail, one transaction); `failed` fails it
//!   (release, every effect undone);
//! - provider errors retry at doubling delays; a provider unreachable for 24 h fails a refund it
//!   never held; a provider that refuses the creation (a 4xx) fails it at once.
//!
//! Refund webhooks name the charge: every pending refund of it is asked about (D6.2: a webhook
//! is only a trigger).
//!
//! [`cancel`] archives a campaign and, with refunds, leaves a `campaign_cancel` job;
//! [`file_cancellations`] (its worker step) files the buyers' refunds in batches so that 10,000
//! payments never run inside a request.
//!
//! [`PaymentProvider::create_refund`]: crate::providers::payments::PaymentProvider::create_refund
use serde_json::{json, Value};

use crate::domain::payments::{next_poll_delay_ms, retry_delay_ms, CURRENCY};
use crate::domain::refunds::{RefundAsk, RefundStatus};
use crate::domain::time::now_ms;
use crate::domain::webhooks::EventType;
use crate::domain::withdrawals::PROVIDER_DOWN_LIMIT_MS;
use crate::providers::payments::{adapter, ProviderError, ProviderId, RefundRequest, RefundState, RemoteStatus};
use crate::state::AppState;
use crate::store::audit::Audit;
use crate::store::campaigns::Campaign;
use crate::store::notifications::{queue_notification, NewNotification};
use crate::store::refunds::{self, Cancelled, Filed, NewRefund, Refund};
use crate::store::{payments, StoreError, StoreResult};

use super::schedule::first_poll_ms;
use super::idempotency::{self, Ask, Requested};
use super::routing::credentials_now;
use super::{FlowError, Next};

/// How many payments one step of a cancellation files (one transaction each batch).
pub const CANCEL_BATCH: i64 = 200;

/// The notification (and its e-mail template) of a succeeded refund (D17.37, D17.42).
pub const REFUND_NOTIFICATION: &str = "payment.refunded";

/// Asks for a refund of the payment `reference` (see the module docs). `parse` checks the body
/// after the key's state was read; `render` makes the answer's `data` from the new refund.
pub async fn request<E: From<FlowError>>(
    state: &AppState,
    ask: &Ask,
    reference: &str,
    parse: impl FnOnce() -> Result<RefundAsk, E>,
    render: fn(&Refund) -> Value,
) -> Result<Requested, E> {
    let store_error = |e: StoreError| E::from(FlowError::Store(e));
    if let Some(known) = idempotency::known(state, ask).await.map_err(store_error)? {
        return Ok(known);
    }
    let body = parse()?;
    let id = crate::domain::new_id();
    let new = NewRefund { id: &id, ask, reference, body: &body, now: now_ms() };
    match state.store.create_refund(&new, render).await.map_err(store_error)? {
        Filed::Created(_, data) => Ok(Requested::Created(data)),
        Filed::Key(key) => Ok(Requested::Known(key)),
        Filed::Refused(e) => Err(E::from(FlowError::Domain(e))),
    }
}

/// Why a refund step could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RefundError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the provider {0} is not configured for this account")]
    NotConfigured(String),
}

impl RefundError {
    /// Worth retrying later (the provider may come back, or be configured again).
    pub fn is_transient(&self) -> bool {
        match self {
            RefundError::Provider(e) => e.is_transient(),
            RefundError::NotConfigured(_) | RefundError::Store(_) => true,
        }
    }
}

/// Where a refund stands after one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    Failed,
    /// The provider holds it and has not settled it yet.
    Pending,
    /// The provider knows no such refund (callbacks only: they never create).
    Unknown,
    /// Already ended: nothing to do.
    Unchanged,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "refund_succeeded",
            Outcome::Failed => "refund_failed",
            Outcome::Pending => "refund_pending",
            Outcome::Unknown => "unknown_refund",
            Outcome::Unchanged => "unchanged",
        }
    }
}

/// Applies the provider's view of the refund: ends it when the provider did.
async fn apply(state: &AppState, r: &Refund, remote: &RefundState) -> StoreResult<Outcome> {
    if remote.amount != r.amount {
        // The refund id is ours and unique at the provider; another amount means someone else
        // made it. Never settle money on it: operators look at it.
        tracing::error!(refund = %r.id, expected = r.amount, reported = remote.amount, "refund amount differs; left pending");
        return Ok(Outcome::Pending);
    }
    let now = now_ms();
    Ok(match remote.status {
        RemoteStatus::Success => {
            succeed(state, &r.id, now).await?;
            Outcome::Succeeded
        }
        RemoteStatus::Failed => {
            let why = remote.reason.clone().unwrap_or_else(|| "the provider reported the refund failed".into());
            fail(state, &r.id, &why, now).await?;
            Outcome::Failed
        }
        RemoteStatus::Pending => Outcome::Pending,
    })
}

/// One step: creates the refund at the provider when it does not hold it yet (`may_create`),
/// else asks how it stands; then applies the answer.
async fn advance(state: &AppState, r: &Refund, may_create: bool) -> Result<Outcome, RefundError> {
    if r.status != RefundStatus::Pending {
        return Ok(Outcome::Unchanged);
    }
    let provider = ProviderId::parse(&r.provider).ok_or_else(|| RefundError::NotConfigured(r.provider.clone()))?;
    let creds = credentials_now(state, &r.account_id, provider)
        .await?
        .ok_or_else(|| RefundError::NotConfigured(r.provider.clone()))?;
    let api = adapter(provider);
    let req = RefundRequest {
        refund_id: &r.id,
        transaction_reference: &r.transaction_reference,
        amount: r.amount,
        currency: CURRENCY,
        reason: r.reason.as_deref(),
    };
    let remote = if !r.provider_created && may_create {
        api.create_refund(&state.outbound, &creds, &req).await?
    } else {
        match api.verify_refund(&state.outbound, &creds, &req).await {
            Ok(s) => s,
            // Created once by id: asking again returns the one the provider has.
            Err(ProviderError::NotFound) if may_create => api.create_refund(&state.outbound, &creds, &req).await?,
            Err(ProviderError::NotFound) => return Ok(Outcome::Unknown),
            Err(e) => return Err(e.into()),
        }
    };
    if !r.provider_created {
        state.store.mark_refund_created(&r.id, remote.provider_id.as_deref(), now_ms()).await?;
    }
    Ok(apply(state, r, &remote).await?)
}

/// A refund webhook's reconciliation: asks the provider about every pending refund of the
/// charge it names (of that provider). Returns the outcomes, for the stored event.
pub async fn reconcile(state: &AppState, provider: &str, reference: &str) -> Result<String, RefundError> {
    let pending = state.store.pending_refunds_of(reference).await?;
    let mut outcomes = Vec::new();
    for r in pending.iter().filter(|r| r.provider == provider) {
        outcomes.push(advance(state, r, false).await?.as_str());
    }
    Ok(if outcomes.is_empty() { "no_pending_refund".to_string() } else { outcomes.join(",") })
}

/// The refund worker's step for a claimed job of refund `r` (`step_ms`: the job's last delay).
pub async fn step(state: &AppState, r: &Refund, step_ms: i64) -> Result<Next, StoreError> {
    if r.status != RefundStatus::Pending {
        return Ok(Next::Done);
    }
    let now = now_ms();
    match advance(state, r, true).await {
        Ok(Outcome::Succeeded | Outcome::Failed | Outcome::Unchanged) => Ok(Next::Done),
        Ok(Outcome::Pending | Outcome::Unknown) => Ok(Next::Later {
            delay_ms: next_poll_delay_ms(first_poll_ms(state), step_ms),
            not_after: None,
            error: None,
        }),
        Err(e) if e.is_transient() => {
            let since = state.store.note_refund_provider_down(&r.id, now).await?;
            if now - since >= PROVIDER_DOWN_LIMIT_MS && !r.provider_created {
                tracing::warn!(refund = %r.id, error = %e, "refund provider unreachable for 24 hours; failed and restored");
                fail(state, &r.id, "the provider was unreachable for 24 hours", now_ms()).await?;
                return Ok(Next::Done);
            }
            let delay_ms = retry_delay_ms(step_ms);
            tracing::warn!(refund = %r.id, error = %e, retry_ms = delay_ms, "refund step failed; retried");
            Ok(Next::Later { delay_ms, not_after: None, error: Some(e.to_string()) })
        }
        Err(e) if !r.provider_created => {
            // The provider refused the refund itself (a 4xx): nothing was refunded, restore.
            tracing::warn!(refund = %r.id, error = %e, "the provider refused the refund; failed and restored");
            fail(state, &r.id, &format!("the provider refused the refund: {e}"), now_ms()).await?;
            Ok(Next::Done)
        }
        Err(e) => {
            tracing::warn!(refund = %r.id, error = %e, "refund status unreadable; retried");
            Ok(Next::Later { delay_ms: retry_delay_ms(step_ms), not_after: None, error: Some(e.to_string()) })
        }
    }
}

/// Success (D17.38): the store's move, with the `payment.refunded` event (the payment as
/// `GET /payments/:reference` shows it) and the buyer's e-mail in the same transaction.
async fn succeed(state: &AppState, id: &str, now: i64) -> StoreResult<bool> {
    let mut tx = state.store.begin().await?;
    let Some(r) = refunds::succeed(&mut tx, id, now).await? else { return Ok(false) };
    super::events::payment(&mut tx, &r.transaction_reference, EventType::PaymentRefunded, now).await?;
    if let Some(t) = payments::read_in(&mut tx, &r.transaction_reference).await? {
        let payload = json!({
            "reference": t.reference,
            "refundId": r.id,
            "transactionType": t.transaction_type.as_str(),
            "campaignId": t.campaign_id,
            "amount": r.amount,
            "ticketCodes": r.ticket_codes,
        });
        let n = NewNotification {
            channel: "email",
            event_type: REFUND_NOTIFICATION,
            recipient: &t.email,
            subject: None,
            payload: &payload,
        };
        queue_notification(&mut tx, &r.account_id, &n, now).await?;
    }
    tx.commit().await?;
    Ok(true)
}

/// Failure (D17.35): the store's move, which undoes every effect.
async fn fail(state: &AppState, id: &str, why: &str, now: i64) -> StoreResult<bool> {
    let mut tx = state.store.begin().await?;
    if !refunds::fail(&mut tx, id, why, now).await? {
        return Ok(false);
    }
    tx.commit().await?;
    Ok(true)
}

/// `POST /campaigns/:campaignId/cancel` (D17.37): see `Store::cancel_campaign`.
pub async fn cancel(
    state: &AppState,
    account_id: &str,
    campaign_id: &str,
    reason: Option<&str>,
    refund: bool,
    audit: Audit<'_>,
    render: fn(&Campaign) -> Value,
) -> StoreResult<Cancelled> {
    state.store.cancel_campaign(account_id, campaign_id, reason, refund, audit, render).await
}

/// The cancellation worker's step for a claimed `campaign_cancel` job: files one batch of the
/// buyers' refunds, and comes back at once until none is left.
pub async fn file_cancellations(state: &AppState, campaign_id: &str) -> Result<Next, StoreError> {
    let filed = state.store.file_cancel_refunds(campaign_id, CANCEL_BATCH).await?;
    if filed == 0 {
        return Ok(Next::Done);
    }
    tracing::info!(campaign = %campaign_id, filed, "cancellation refunds filed");
    Ok(Next::Later { delay_ms: 0, not_after: None, error: None })
}

//! Fulfilment (D5.5–7, D6.2–3, D13.2, D16.2, D16.4): a charge the provider confirmed becomes
//! money in the ledger and what was bought, exactly once, whatever asks (the provider's callback
//! through the callbacks worker, the charge poller, `POST /payments/verify`):
//! 1. [`confirm`] asks the transaction's provider for the charge: a callback is only a trigger,
//!    the provider's verify API is the proof;
//! 2. a success with the amount, currency and reference expected is [`settle`]d: in ONE store
//!    transaction the credit is claimed (`credited` 0 → 1, so a second settle changes nothing),
//!    the seats held for it are sold (a payment that came after its hold expired takes seats only
//!    if some are still free; without room it stays `abandoned`, credited and marked `paidLate`
//!    for the organizer to refund), the `charge` and `fee` entries are written (available after
//!    the settlement delay), the tickets, votes or donation are issued and the buyer's
//!    confirmation is queued, and the polling job ends;
//! 3. another amount or currency is flagged (`mismatch`): never credited, its seats released at
//!    hold expiry; a failure [`release`]s the seats (from `pending` only).
use serde_json::json;

use crate::domain::ledger::kind;
use crate::domain::payments::{next_poll_delay_ms, retry_delay_ms, Attendee, TransactionType, TxStatus};
use crate::domain::time::now_ms;
use crate::domain::webhooks::EventType;
use crate::providers::payments::{adapter, ChargeFacts, ProviderError, ProviderId, RemoteStatus};
use crate::state::AppState;
use crate::store::jobs::{self, queue};
use crate::store::live::{LiveEvent, LiveKind};
use crate::store::notifications::{queue_notification, NewNotification};
use crate::store::payments::{self, Settled, Transaction};
use crate::store::ticket_types::inventory;
use crate::store::tickets::{self, NewTickets};
use crate::store::{donations, ledger, participants, StoreError, StoreResult, StoreTx};

use super::events;
use super::routing::credentials_now;
use super::schedule::first_poll_ms;
use super::Next;

/// What asking the provider about a charge led to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmed {
    /// Credited and fulfilled now.
    Fulfilled,
    /// Credited now, but paid too late for its seats (D16.4).
    CreditedOnly,
    /// The provider reports another amount or currency: flagged, not credited (D5.5).
    Mismatch,
    /// The provider reports failure: released (from pending).
    Failed,
    /// Not paid yet, or unknown to the provider.
    Pending,
    /// Nothing to do: already final or credited.
    Unchanged,
}

impl Confirmed {
    pub fn as_str(self) -> &'static str {
        match self {
            Confirmed::Fulfilled => "fulfilled",
            Confirmed::CreditedOnly => "credited_paid_late",
            Confirmed::Mismatch => "mismatch",
            Confirmed::Failed => "failed",
            Confirmed::Pending => "pending",
            Confirmed::Unchanged => "unchanged",
        }
    }
}

/// Why a confirmation could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConfirmError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the provider {0} is no longer configured for this account")]
    NotConfigured(&'static str),
}

/// Asks the transaction's provider for the charge and applies what it says, exactly as a
/// callback would (D5.7, D6.2–3).
pub async fn confirm(state: &AppState, t: &Transaction) -> Result<Confirmed, ConfirmError> {
    confirm_paid_by(state, t, None).await
}

/// [`confirm`], for a callback that names the paying number (Hubtel's checkout callback): kept
/// with the payment when the provider's own check says it is paid (D18.45).
pub async fn confirm_paid_by(
    state: &AppState,
    t: &Transaction,
    payer: Option<&str>,
) -> Result<Confirmed, ConfirmError> {
    if t.credited || !t.status.takes_credit() {
        return Ok(Confirmed::Unchanged);
    }
    let Some(provider) = t.provider.as_deref().and_then(ProviderId::parse) else {
        return Ok(Confirmed::Pending);
    };
    let creds =
        credentials_now(state, &t.account_id, provider).await?.ok_or(ConfirmError::NotConfigured(provider.as_str()))?;
    let remote = match adapter(provider).verify_charge(&state.outbound, &creds, &t.reference).await {
        Ok(r) => r,
        Err(ProviderError::NotFound) => return Ok(Confirmed::Pending),
        Err(e) => return Err(e.into()),
    };
    let now = now_ms();
    Ok(match remote.status {
        // Credited at its price when the provider reports more (D18.1, D18.45).
        RemoteStatus::Success
            if remote.amount >= t.amount && remote.currency == t.currency && remote.reference == t.reference =>
        {
            let facts = ChargeFacts {
                provider_charge_id: remote.provider_id.as_deref(),
                method: remote.method.as_deref(),
                payer: remote.payer.as_deref().or(payer),
                network: None,
            };
            state.store.note_charge(&t.reference, facts).await?;
            match settle(state, &t.reference, now).await? {
                Settled::Fulfilled => Confirmed::Fulfilled,
                Settled::CreditedOnly => Confirmed::CreditedOnly,
                Settled::Unchanged => Confirmed::Unchanged,
            }
        }
        RemoteStatus::Success => {
            tracing::warn!(
                reference = %t.reference, expected = t.amount, reported = remote.amount,
                currency = %remote.currency, "provider reports another amount or currency; not credited"
            );
            state.store.flag_mismatch(&t.reference, now).await?;
            Confirmed::Mismatch
        }
        RemoteStatus::Failed if t.status == TxStatus::Pending => {
            if release(state, &t.reference, TxStatus::Failed, now).await? {
                Confirmed::Failed
            } else {
                Confirmed::Unchanged
            }
        }
        RemoteStatus::Failed => Confirmed::Unchanged,
        RemoteStatus::Pending => Confirmed::Pending,
    })
}

/// The charge poller's step for a claimed job of transaction `t` (`step_ms`: the job's last
/// delay), D16.4–5: a charge whose callback never comes is verified with its provider
/// `payments.verify_interval_seconds` after initialization, then at doubling intervals up to
/// 5 minutes, never sleeping past its hold's expiry; at expiry the provider is asked once more,
/// then the transaction is `abandoned` and its seats released. A mismatched charge is never
/// credited; it only waits for its hold's release.
pub async fn poll(state: &AppState, t: &Transaction, step_ms: i64) -> StoreResult<Next> {
    let now = now_ms();
    if t.status != TxStatus::Pending || t.credited {
        return Ok(Next::Done);
    }
    let expired = now >= t.hold_expires_at;
    let result = if t.mismatch { Ok(Confirmed::Mismatch) } else { confirm(state, t).await };
    let (delay_ms, error) = match result {
        Ok(Confirmed::Mismatch) if !expired => (t.hold_expires_at - now, None),
        Ok(Confirmed::Pending) if !expired => (next_poll_delay_ms(first_poll_ms(state), step_ms), None),
        Ok(Confirmed::Pending | Confirmed::Mismatch) => {
            release(state, &t.reference, TxStatus::Abandoned, now_ms()).await?;
            return Ok(Next::Done);
        }
        // Settled one way or the other: the store ended the job with the change.
        Ok(_) => return Ok(Next::Done),
        Err(e) if expired => {
            tracing::warn!(reference = %t.reference, error = %e, "hold expired and the provider could not confirm; abandoned");
            release(state, &t.reference, TxStatus::Abandoned, now_ms()).await?;
            return Ok(Next::Done);
        }
        Err(e) => (retry_delay_ms(step_ms), Some(e.to_string())),
    };
    // Never sleep past the hold's expiry: that is when the last question is asked.
    Ok(Next::Later { delay_ms, not_after: Some(t.hold_expires_at.max(now)), error })
}

/// Credits a confirmed charge and fulfils it, in one store transaction (see the module docs).
/// Runs at most once per transaction whatever calls it, however often.
pub async fn settle(state: &AppState, reference: &str, now: i64) -> StoreResult<Settled> {
    let delay = i64::try_from(state.config.payments.settlement_delay_seconds.saturating_mul(1000)).unwrap_or(0);
    let mut tx = state.store.begin().await?;
    let Some(t) = payments::read_in(&mut tx, reference).await? else {
        return Ok(Settled::Unchanged);
    };
    if t.credited || t.mismatch || !t.status.takes_credit() {
        return Ok(Settled::Unchanged);
    }
    if !payments::claim_credit(&mut tx, reference, t.status, now).await? {
        return Ok(Settled::Unchanged);
    }
    // The inventory: a held reservation becomes sold; a late payment takes seats only if some
    // are still free.
    let room = match (t.transaction_type, t.ticket_type_id.as_deref()) {
        (TransactionType::Ticket, Some(tt)) if t.reserved > 0 => {
            inventory::sell_held(&mut tx, tt, t.reserved, t.quantity, now).await?;
            true
        }
        (TransactionType::Ticket, Some(tt)) => inventory::sell_if_free(&mut tx, tt, t.quantity, now).await?,
        _ => true,
    };
    let status = if room { TxStatus::Success } else { TxStatus::Abandoned };
    let paid_late = t.status == TxStatus::Abandoned;
    payments::record_paid(&mut tx, reference, status, room, paid_late, now).await?;
    let settles_at = now + delay;
    ledger::entry(&mut tx, &t.account_id, kind::CHARGE, t.amount, reference, settles_at, now).await?;
    if t.fees > 0 {
        ledger::entry(&mut tx, &t.account_id, kind::FEE, -t.fees, reference, settles_at, now).await?;
    }
    if room {
        fulfil(&mut tx, &Purchase::of(&t), now).await?;
    }
    jobs::finish(&mut tx, queue::CHARGE, reference).await?;
    tx.commit().await?;
    Ok(if room { Settled::Fulfilled } else { Settled::CreditedOnly })
}

/// Moves a pending transaction to `failed` or `abandoned` and gives its seats back, once
/// (D6.3, D16.4). A mismatched one stays `pending` (never failed by this) and only gives its
/// seats back. Its polling job ends either way. Returns whether anything changed.
pub async fn release(state: &AppState, reference: &str, to: TxStatus, now: i64) -> StoreResult<bool> {
    let mut tx = state.store.begin().await?;
    let changed = release_in(&mut tx, reference, to, now).await?;
    tx.commit().await?;
    Ok(changed)
}

/// [`release`] in the caller's transaction (a USSD caller cancelling a pending vote).
pub(crate) async fn release_in(tx: &mut StoreTx, reference: &str, to: TxStatus, now: i64) -> StoreResult<bool> {
    let Some(t) = payments::read_in(tx, reference).await? else {
        return Ok(false);
    };
    if t.status != TxStatus::Pending || t.credited {
        jobs::finish(tx, queue::CHARGE, reference).await?;
        return Ok(false);
    }
    let next = if t.mismatch { TxStatus::Pending } else { to };
    if !payments::release(tx, reference, next, t.reserved, now).await? {
        return Ok(false);
    }
    if let (Some(tt), true) = (t.ticket_type_id.as_deref(), t.reserved > 0) {
        inventory::release(tx, tt, t.reserved, now).await?;
    }
    if next == TxStatus::Failed {
        events::payment(tx, reference, EventType::PaymentFailed, now).await?;
    }
    jobs::finish(tx, queue::CHARGE, reference).await?;
    Ok(true)
}

/// What a fulfilment needs of its transaction.
pub(super) struct Purchase<'a> {
    pub reference: &'a str,
    pub account_id: &'a str,
    pub kind: TransactionType,
    pub campaign_id: &'a str,
    pub ticket_type_id: Option<&'a str>,
    pub participant_id: Option<&'a str>,
    pub quantity: i64,
    pub price: i64,
    pub amount: i64,
    pub email: &'a str,
    pub full_name: Option<&'a str>,
    pub attendees: &'a [Attendee],
}

impl<'a> Purchase<'a> {
    pub(super) fn of(t: &'a Transaction) -> Self {
        Purchase {
            reference: &t.reference,
            account_id: &t.account_id,
            kind: t.transaction_type,
            campaign_id: &t.campaign_id,
            ticket_type_id: t.ticket_type_id.as_deref(),
            participant_id: t.participant_id.as_deref(),
            quantity: t.quantity,
            price: t.price,
            amount: t.amount,
            email: &t.email,
            full_name: t.full_name.as_deref(),
            attendees: &t.attendees,
        }
    }
}

/// Issues what was bought (tickets one per unit, votes, the donation) and queues the buyer's
/// confirmation e-mail (D13.2), in the caller's transaction. The seats were already counted sold.
pub(super) async fn fulfil(conn: &mut StoreTx, p: &Purchase<'_>, now: i64) -> StoreResult<()> {
    let event_type = match p.kind {
        TransactionType::Ticket => {
            let ticket_type_id = p.ticket_type_id.ok_or_else(|| StoreError::Corrupt("ticket without type".into()))?;
            let new = NewTickets {
                account_id: p.account_id,
                campaign_id: p.campaign_id,
                ticket_type_id,
                reference: p.reference,
                attendee_name: p.full_name,
                attendee_email: p.email,
                quantity: p.quantity,
                attendees: p.attendees,
            };
            tickets::issue(conn, &new, now).await?;
            "ticket.purchase.confirmed"
        }
        TransactionType::Vote => {
            let participant = p.participant_id.ok_or_else(|| StoreError::Corrupt("vote without participant".into()))?;
            participants::add_votes(conn, participant, p.quantity, now).await?;
            // Leaderboards on every instance re-read at commit (D17.5, D17.18).
            let event = LiveEvent {
                account_id: p.account_id.into(),
                campaign_id: Some(p.campaign_id.into()),
                kind: LiveKind::Votes,
            };
            conn.publish(event).await?;
            "vote.payment.success"
        }
        TransactionType::Donation => {
            donations::record(conn, p.account_id, p.campaign_id, p.reference, p.price, p.email, now).await?;
            "donation.payment.success"
        }
    };
    let payload = json!({
        "reference": p.reference,
        "transactionType": p.kind.as_str(),
        "campaignId": p.campaign_id,
        "quantity": p.quantity,
        "amount": p.amount,
    });
    let n = NewNotification { channel: "email", event_type, recipient: p.email, subject: None, payload: &payload };
    queue_notification(conn, p.account_id, &n, now).await?;
    // The organization's backend hears of it in the same transaction (D17.25).
    events::payment(conn, p.reference, events::payment_success(p.kind), now).await?;
    Ok(())
}

/// `POST /payments/verify` (D5.7): asks the provider about the account's transaction now,
/// applies what it says as a callback would, and returns the transaction as it then stands.
/// A provider that cannot answer → 502; another account's reference → 404.
pub async fn verify(state: &AppState, account_id: &str, reference: &str) -> super::FlowResult<Transaction> {
    let t = state.store.transaction(account_id, reference).await?;
    match confirm(state, &t).await {
        Ok(_) => {}
        Err(ConfirmError::Store(e)) => return Err(e.into()),
        Err(e) => {
            return Err(super::FlowError::ProviderUnavailable(format!("could not verify with the provider: {e}")))
        }
    }
    Ok(state.store.transaction(account_id, reference).await?)
}

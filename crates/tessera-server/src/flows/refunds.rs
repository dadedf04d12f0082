//! Refunds (D17.33–38, D17.42) and campaign cancellations (D17.37): money back through the
//! provider that took it.
//!
//! [`request`]: under the caller's idempotency key (D16.12), a known key is answered first (the
//! stored 201 again, or 409 for another body) before the body is checked; then, in one
//! transaction (the account locked first on PostgreSQL, `withdrawals::lock_account`, so refunds
//! and withdrawals of an account see each other's holds): the key claimed, the refund planned
//! from the payment as it stands there ([`crate::domain::refunds::plan`]) and filed with all its
//! effects in a fixed order (`file`: balance, claim on the payment, voids, votes, donation,
//! refund, `refund_hold`, `refund` job; each a guarded statement of `store::refunds`), or
//! refused whole (409 `not_refundable`, `refund_exceeds_payment`, `ticket_not_refundable`,
//! `insufficient_balance`; 400 `ticket_codes_required`) and the key stays free.
//!
//! [`step`] (the refund worker, per claimed `refund` job) and [`reconcile`] (a refund callback):
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
//! Refund callbacks name the charge: every pending refund of it is asked about (D6.2: a callback
//! is only a trigger).
//!
//! [`cancel`] archives a campaign and, with refunds, leaves a `campaign_cancel` job;
//! [`file_cancellations`] (its worker step) files the buyers' refunds in batches so that 10,000
//! payments never run inside a request.
//!
//! [`PaymentProvider::create_refund`]: crate::providers::payments::PaymentProvider::create_refund
use serde_json::{json, Value};

use crate::domain::payments::TransactionType;
use crate::domain::payments::{next_poll_delay_ms, retry_delay_ms, CURRENCY};
use crate::domain::refunds::{exceeds, plan, ticket_not_refundable, Plan, RefundAsk, RefundStatus};
use crate::domain::time::now_ms;
use crate::domain::webhooks::EventType;
use crate::domain::withdrawals::PROVIDER_DOWN_LIMIT_MS;
use crate::domain::DomainError;
use crate::providers::payments::{adapter, ProviderError, ProviderId, RefundRequest, RefundState, RemoteStatus};
use crate::state::AppState;
use crate::store::audit::Audit;
use crate::store::campaigns::Campaign;
use crate::store::idempotency as keys;
use crate::store::jobs::{self, queue};
use crate::store::ledger::{self, kind};
use crate::store::notifications::{queue_notification, NewNotification};
use crate::store::payments::{self, Transaction};
use crate::store::refunds::{self, PaymentFigure, Refund, RefundCounts};
use crate::store::withdrawals::lock_account;
use crate::store::{StoreError, StoreResult, StoreTx};

use super::idempotency::{self, Ask, Requested};
use super::routing::credentials_now;
use super::schedule::first_poll_ms;
use super::{FlowError, FlowResult, Next};

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
    Ok(file_asked(state, ask, reference, &body, render).await?)
}

/// Files the refund asked for under `ask` in one transaction: the key claimed, the refund
/// planned from the payment as it stands in the transaction, its writes, the key's answer. Any
/// refusal drops the transaction whole (and leaves the key free).
async fn file_asked(
    state: &AppState,
    ask: &Ask,
    reference: &str,
    body: &RefundAsk,
    render: fn(&Refund) -> Value,
) -> FlowResult<Requested> {
    let now = now_ms();
    let mut tx = state.store.begin().await?;
    lock_account(&mut tx, state.store.backend(), &ask.account_id).await?;
    if let Some(key) = keys::claim(&mut tx, ask, now).await? {
        tx.rollback().await?;
        return Ok(Requested::Known(key));
    }
    let t = match payments::read_in(&mut tx, reference).await? {
        Some(t) if t.account_id == ask.account_id => t,
        _ => return Err(StoreError::NotFound("payment").into()),
    };
    let (paid, tickets) = refunds::paid_in(&mut tx, &t).await?;
    let plan = plan(&paid, body, &tickets)?;
    let id = crate::domain::new_id();
    let filing = Filing {
        id: &id,
        reason: body.reason.as_deref(),
        idempotency_key: Some(&ask.idempotency_key),
        campaign_cancel: false,
    };
    let refund = file(&mut tx, &t, &plan, &filing, None, now).await?;
    let data = render(&refund);
    keys::complete(&mut tx, ask, "refund.create", "refund", &refund.id, &data).await?;
    tx.commit().await?;
    Ok(Requested::Created(data))
}

/// How a planned refund is filed: its id, why, the key it was asked under, and whether a
/// cancellation filed it.
struct Filing<'a> {
    id: &'a str,
    reason: Option<&'a str>,
    idempotency_key: Option<&'a str>,
    campaign_cancel: bool,
}

fn insufficient(available: i64, amount: i64) -> DomainError {
    DomainError::Refused {
        status: 409,
        code: "insufficient_balance",
        message: format!(
            "the available balance ({}) does not cover the refund of {}",
            crate::domain::money::to_ghs(available.max(0)),
            crate::domain::money::to_ghs(amount)
        ),
    }
}

/// Why the payment's provider cannot refund it (D18.3: Hubtel sends mobile money back to the
/// payer, so a card payment or one of an unknown payer cannot be): 409 `refund_not_supported`.
fn unsupported(t: &Transaction) -> Option<DomainError> {
    let provider = ProviderId::parse(t.provider.as_deref()?)?;
    let why = adapter(provider).refund_refusal(&t.facts())?;
    Some(DomainError::Refused { status: 409, code: "refund_not_supported", message: why })
}

/// Writes a planned refund and its effects in `tx`, in this order: the balance checked
/// (`balance`: what is available when the caller already knows it under the account's lock; a
/// cancellation's batch reads it once instead of summing the ledger per payment), the claim on
/// the payment, the voids, the votes taken back, the donation's refunded amount, the refund,
/// its `refund_hold` and its `refund` job. A refusal (`FlowError::Domain`) may come after some
/// writes: the caller drops the transaction.
async fn file(
    tx: &mut StoreTx,
    t: &Transaction,
    plan: &Plan,
    filing: &Filing<'_>,
    balance: Option<i64>,
    now: i64,
) -> FlowResult<Refund> {
    let provider = match t.provider.as_deref() {
        Some(p) if t.amount > 0 => p.to_string(),
        _ => {
            return Err(DomainError::Refused {
                status: 409,
                code: "not_refundable",
                message: "only a successful, paid transaction can be refunded".into(),
            }
            .into())
        }
    };
    if let Some(refused) = unsupported(t) {
        return Err(refused.into());
    }
    let available = match balance {
        Some(b) => b,
        None => refunds::available(tx, &t.account_id, now).await?,
    };
    if available < plan.amount {
        return Err(insufficient(available, plan.amount).into());
    }
    if !refunds::claim_on_payment(tx, &t.reference, plan.amount, now).await? {
        return Err(exceeds(t.amount - t.refund_claimed - plan.amount).into());
    }
    let voided = refunds::void_tickets(tx, filing.id, t, &plan.ticket_codes).await?;
    if let Some(lost) = plan.ticket_codes.iter().find(|c| !voided.contains(c)) {
        // A check-in (or another refund) took the ticket after the plan was read.
        return Err(ticket_not_refundable(lost).into());
    }
    refunds::take_back_votes(tx, t, -plan.votes, now).await?;
    if t.transaction_type == TransactionType::Donation {
        refunds::add_donation_refunded(tx, &t.reference, plan.amount).await?;
    }
    let refund = Refund {
        id: filing.id.to_string(),
        account_id: t.account_id.clone(),
        transaction_reference: t.reference.clone(),
        provider,
        amount: plan.amount,
        status: RefundStatus::Pending,
        reason: filing.reason.map(str::to_string),
        ticket_codes: plan.ticket_codes.clone(),
        votes: plan.votes,
        campaign_cancel: filing.campaign_cancel,
        provider_refund_id: None,
        provider_created: false,
        failure_reason: None,
        provider_down_since: None,
        created_at: now,
        updated_at: now,
    };
    refunds::insert(tx, &refund, filing.idempotency_key).await?;
    ledger::entry(tx, &refund.account_id, kind::REFUND_HOLD, -refund.amount, &refund.id, now, now).await?;
    jobs::enqueue(tx, queue::REFUND, &refund.id, now, now).await?;
    Ok(refund)
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
    let payment = state.store.transaction_by_reference(&r.transaction_reference).await?;
    let taken = state.store.provider_refund_ids_of(&r.transaction_reference, &r.id).await?;
    let req = RefundRequest {
        refund_id: &r.id,
        transaction_reference: &r.transaction_reference,
        amount: r.amount,
        currency: CURRENCY,
        reason: r.reason.as_deref(),
        charge: payment.as_ref().map(|t| t.facts()).unwrap_or_default(),
        filed_at: r.created_at,
        provider_refund_id: r.provider_refund_id.as_deref(),
        taken: &taken,
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

/// A refund callback's reconciliation: asks the provider about every pending refund of the
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

/// Success (D17.38): `pending → succeeded`, once, with `refund_release` +X and `refund_debit`
/// −X, `refunded` += X on the payment, the job ended, the `payment.refunded` event (the payment
/// as `GET /payments/:reference` shows it) and the buyer's e-mail, in one transaction.
async fn succeed(state: &AppState, id: &str, now: i64) -> StoreResult<bool> {
    let mut tx = state.store.begin().await?;
    let Some(r) = refunds::mark_succeeded(&mut tx, id, now).await? else { return Ok(false) };
    ledger::entry(&mut tx, &r.account_id, kind::REFUND_RELEASE, r.amount, id, now, now).await?;
    ledger::entry(&mut tx, &r.account_id, kind::REFUND_DEBIT, -r.amount, id, now, now).await?;
    refunds::add_to_payment(&mut tx, &r.transaction_reference, PaymentFigure::Refunded, r.amount, now).await?;
    jobs::finish(&mut tx, queue::REFUND, id).await?;
    let t = payments::read_in(&mut tx, &r.transaction_reference).await?.ok_or(StoreError::NotFound("payment"))?;
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
    super::events::payment_of(&mut tx, t, EventType::PaymentRefunded, now).await?;
    tx.commit().await?;
    Ok(true)
}

/// Failure (D17.35, D17.38): `pending → failed`, once, with `refund_release` +X, the claim on
/// the payment given back, its tickets valid again, its votes and the donation's refunded
/// amount restored, and the job ended, in one transaction.
async fn fail(state: &AppState, id: &str, why: &str, now: i64) -> StoreResult<bool> {
    let mut tx = state.store.begin().await?;
    let Some(r) = refunds::mark_failed(&mut tx, id, why, now).await? else { return Ok(false) };
    ledger::entry(&mut tx, &r.account_id, kind::REFUND_RELEASE, r.amount, id, now, now).await?;
    refunds::add_to_payment(&mut tx, &r.transaction_reference, PaymentFigure::Claimed, -r.amount, now).await?;
    refunds::restore_tickets(&mut tx, id).await?;
    // Only a donation purchase has a donation row.
    refunds::add_donation_refunded(&mut tx, &r.transaction_reference, -r.amount).await?;
    if r.votes != 0 {
        if let Some(t) = payments::read_in(&mut tx, &r.transaction_reference).await? {
            refunds::take_back_votes(&mut tx, &t, r.votes, now).await?;
        }
    }
    jobs::finish(&mut tx, queue::REFUND, id).await?;
    tx.commit().await?;
    Ok(true)
}

/// A cancellation's outcome: the campaign as it now is and its refund counters.
#[derive(Debug, Clone)]
pub struct Cancelled {
    pub campaign: Campaign,
    pub refunds: RefundCounts,
}

/// `POST /campaigns/:campaignId/cancel` (D17.37, D17.38): the campaign archived
/// ([`super::campaigns::archive_in`]: its `campaign.status.updated` event when that moved it),
/// sales stopped (checkout sells only approved campaigns), and with `refund` a
/// `campaign_cancel` job that files the buyers' refunds ([`file_cancellations`]), in one
/// transaction.
pub async fn cancel(
    state: &AppState,
    account_id: &str,
    campaign_id: &str,
    reason: Option<&str>,
    refund: bool,
    audit: Audit<'_>,
) -> StoreResult<Cancelled> {
    let now = now_ms();
    let mut tx = state.store.begin().await?;
    let (campaign, start_refunds) =
        super::campaigns::archive_in(&mut tx, account_id, campaign_id, reason, refund, audit, now).await?;
    if start_refunds {
        jobs::enqueue(&mut tx, queue::CAMPAIGN_CANCEL, campaign_id, now, now).await?;
    }
    tx.commit().await?;
    let refunds = state.store.refund_counts(campaign_id).await?;
    Ok(Cancelled { campaign, refunds })
}

/// The cancellation worker's step for a claimed `campaign_cancel` job: files one batch of the
/// buyers' refunds, and comes back at once until none is left.
pub async fn file_cancellations(state: &AppState, campaign_id: &str) -> Result<Next, StoreError> {
    let filed = file_cancel_batch(state, campaign_id, CANCEL_BATCH).await?;
    if filed == 0 {
        return Ok(Next::Done);
    }
    tracing::info!(campaign = %campaign_id, filed, "cancellation refunds filed");
    Ok(Next::Later { delay_ms: 0, not_after: None, error: None })
}

/// Files the full refund of up to `limit` successful payments of a cancelled campaign that have
/// none from the cancellation yet, in one transaction (D17.37). A payment the balance cannot
/// cover gets a `failed` refund (nothing held, nothing voided) so that the campaign's counters
/// show it. Returns how many payments it handled: 0 once every one has been (the job then ends).
async fn file_cancel_batch(state: &AppState, campaign_id: &str, limit: i64) -> StoreResult<usize> {
    let now = now_ms();
    let mut tx = state.store.begin().await?;
    let Some(filing) = refunds::cancel_filing_in(&mut tx, campaign_id).await? else { return Ok(0) };
    lock_account(&mut tx, state.store.backend(), &filing.account_id).await?;
    let refs = refunds::cancel_candidates_in(&mut tx, campaign_id, limit).await?;
    let mut handled = 0;
    // Read once under the lock; each refund filed below takes its amount from it.
    let mut balance = refunds::available(&mut tx, &filing.account_id, now).await?;
    for reference in &refs {
        let Some(t) = payments::read_in(&mut tx, reference).await? else { continue };
        handled += 1;
        let (paid, tickets) = refunds::paid_in(&mut tx, &t).await?;
        let plan = Plan {
            amount: t.amount - t.refund_claimed,
            // Whatever can still be voided; a ticket already used stays as it is.
            ticket_codes: tickets.iter().filter(|k| k.valid && !k.checked_in).map(|k| k.code.clone()).collect(),
            votes: (paid.quantity - paid.votes_refunded).max(0) * i64::from(paid.kind == TransactionType::Vote),
        };
        let id = crate::domain::new_id();
        // A payment its provider cannot refund keeps a failed refund saying why (D18.3).
        if let Some(refused) = unsupported(&t) {
            refunds::insert_failed(&mut tx, &id, &t, plan.amount, &filing.reason, &refused.to_string(), now).await?;
            continue;
        }
        if balance < plan.amount {
            let why = format!("{}", insufficient(balance, plan.amount));
            refunds::insert_failed(&mut tx, &id, &t, plan.amount, &filing.reason, &why, now).await?;
            continue;
        }
        let how = Filing { id: &id, reason: Some(&filing.reason), idempotency_key: None, campaign_cancel: true };
        match file(&mut tx, &t, &plan, &how, Some(balance), now).await {
            Ok(_) => balance -= plan.amount,
            Err(FlowError::Store(e)) => return Err(e),
            // Cannot happen under the account lock (or the single writer) with the plan read in
            // this transaction; refuse the batch rather than write half of one.
            Err(e) => return Err(StoreError::Conflict(e.to_string())),
        }
    }
    if handled == 0 {
        jobs::finish(&mut tx, queue::CAMPAIGN_CANCEL, campaign_id).await?;
    }
    tx.commit().await?;
    Ok(handled)
}

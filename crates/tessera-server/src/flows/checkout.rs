//! Checkout (D5.1–4, D12.1–3, D16.1, D16.4–6, D16.24): a payment initialized, in both forms of
//! `POST /payments/initialize`.
//! 1. The callback URL must be https on an approved domain of the account (no open redirect).
//! 2. The order is priced against the catalogue ([`price`]): the campaign approved, running and
//!    of the right type; the ticket type active, of that campaign and within `max_per_person`;
//!    the participant active; a stated amount exactly the price (votes: a whole multiple of the
//!    vote price); each ticket's attendee answers those of the type's `required_attendee_fields`
//!    that are required, e-mail fields with addresses, no unknown keys (D17.12).
//! 3. The account's fee rule quotes the charge (the customer or the organizer bears the fee).
//! 4. A free purchase completes at once: seats sold, success, fulfilled, in one transaction.
//! 5. Otherwise the pending transaction, its seat hold and its polling job are written in one
//!    transaction (sold out → 409, nothing written), then the providers the routing rule names
//!    are asked in order; a transient failure falls through to the next, a refusal stops. When
//!    none takes the charge, the transaction and its hold are dropped as if never opened (502).
use crate::domain::campaigns::{CampaignStatus, CampaignType};
use crate::domain::money::to_ghs;
use crate::domain::participants::ParticipantStatus;
use crate::domain::payments::{new_reference, Order, TransactionType, TxStatus, CURRENCY};
use crate::domain::ticket_types::TicketTypeStatus;
use crate::domain::time::now_ms;
use crate::domain::DomainError;
use crate::providers::payments::{adapter, ChargeRequest, ProviderError};
use crate::state::AppState;
use crate::store::jobs::{self, queue};
use crate::store::payments::{self, NewTransaction};
use crate::store::ticket_types::inventory::{self, Take};
use crate::store::tickets::Ticket;
use crate::store::{StoreError, StoreTx};

use super::fulfilment::{fulfil, Purchase};
use super::modules::{self, Module};
use super::routing::{fee_policy, payments_settings, routes};
use super::schedule::first_poll_ms;
use super::{FlowError, FlowResult};

/// An initialized payment.
#[derive(Debug)]
pub struct Initialized {
    pub reference: String,
    pub kind: TransactionType,
    /// `pending` until the provider confirms; `success` at once for a free purchase.
    pub status: TxStatus,
    /// The provider that took the charge (none for a free purchase).
    pub provider: Option<&'static str>,
    pub authorization_url: Option<String>,
    pub access_code: Option<String>,
    /// Pesewas the customer is charged, and of fee.
    pub amount: i64,
    pub fees: i64,
    /// When the seat hold ends (none once settled).
    pub expires_at: Option<i64>,
    /// Tickets issued at once (free purchases).
    pub tickets: Vec<Ticket>,
}

/// What the catalogue says an order costs and fulfils.
struct Priced {
    price: i64,
    quantity: i64,
}

/// A `callbackUrl` must be https on an approved domain of the account; http and loopback are
/// allowed only where the platform allows private endpoints (dev and demo). No open redirect.
async fn check_callback(state: &AppState, account_id: &str, url: &str) -> FlowResult<()> {
    let bad = || {
        FlowError::from(DomainError::field("callbackUrl", "must be an https URL on an approved domain of the account"))
    };
    let parsed = url::Url::parse(url).map_err(|_| bad())?;
    let host = parsed.host_str().ok_or_else(bad)?.trim_end_matches('.').to_ascii_lowercase();
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad());
    }
    let local = matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]");
    if state.config.security.allow_private_endpoints && local && matches!(parsed.scheme(), "http" | "https") {
        return Ok(());
    }
    if parsed.scheme() != "https" {
        return Err(bad());
    }
    let view = state.directory.account_view(account_id).await?;
    if view.domains.iter().any(|d| d.verified && d.hostname.eq_ignore_ascii_case(&host)) {
        Ok(())
    } else {
        Err(bad())
    }
}

/// Prices an order against the catalogue (D5.2–3; see the module docs).
async fn price(state: &AppState, account: &str, o: &mut Order) -> FlowResult<Priced> {
    let conflict = |m: &str| FlowError::from(DomainError::Conflict(m.to_string()));
    let campaign = state.store.campaign(account, &o.campaign_id).await?;
    let wanted = match o.kind {
        TransactionType::Ticket => CampaignType::Ticketing,
        TransactionType::Vote => CampaignType::Voting,
        TransactionType::Donation => CampaignType::Donation,
    };
    if campaign.campaign_type != wanted {
        return Err(DomainError::field(o.campaign_field, format!("must be a {} campaign", wanted.as_str())).into());
    }
    if campaign.status != CampaignStatus::Approved {
        return Err(conflict("the campaign is not approved"));
    }
    let now = now_ms();
    if now < campaign.start_date || now > campaign.end_date {
        return Err(conflict("the campaign is not running (outside its start and end dates)"));
    }
    match o.kind {
        TransactionType::Ticket => {
            let tt = state.store.ticket_type(account, o.ticket_type_id.as_deref().unwrap_or_default()).await?;
            if tt.campaign_id != campaign.id {
                return Err(StoreError::NotFound("ticket type").into());
            }
            if tt.status != TicketTypeStatus::Active {
                return Err(conflict("this ticket type is not on sale"));
            }
            if o.quantity > tt.max_per_person {
                let message = format!("must be at most {} (max_per_person)", tt.max_per_person);
                return Err(DomainError::field(o.quantity_field, message).into());
            }
            o.check_attendees(&tt.required_attendee_fields)?;
            let price = tt.price * o.quantity;
            if o.amount.is_some_and(|a| a != price) {
                return Err(
                    DomainError::field("amount", format!("must equal quantity × price = {}", to_ghs(price))).into()
                );
            }
            Ok(Priced { price, quantity: o.quantity })
        }
        TransactionType::Vote => {
            let p = state.store.participant(account, o.participant_id.as_deref().unwrap_or_default()).await?;
            if p.campaign_id != campaign.id {
                return Err(StoreError::NotFound("participant").into());
            }
            if p.status != ParticipantStatus::Active {
                return Err(crate::domain::participants::not_votable(p.status).into());
            }
            let vote_price =
                campaign.vote_price.filter(|v| *v > 0).ok_or_else(|| conflict("the campaign has no vote_price"))?;
            let amount = o.amount.unwrap_or_default();
            if amount % vote_price != 0 {
                let message = format!("must be a whole multiple of the vote price {}", to_ghs(vote_price));
                return Err(DomainError::field("amount", message).into());
            }
            Ok(Priced { price: amount, quantity: amount / vote_price })
        }
        TransactionType::Donation => Ok(Priced { price: o.amount.unwrap_or_default(), quantity: 1 }),
    }
}

fn sold_out() -> StoreError {
    StoreError::SoldOut("not enough tickets of this type are left for that quantity".into())
}

/// Initializes a payment for the account (see the module docs).
pub async fn initialize(state: &AppState, account: &str, order: Order) -> FlowResult<Initialized> {
    let channel = order.channel;
    let (t, settings) = prepare(state, account, order).await?;
    let now = now_ms();
    if t.amount == 0 {
        return complete_free(state, t, now).await;
    }
    charge(state, t, &routes(state, account, &settings, channel), now).await
}

/// An order checked and priced against the catalogue, its fee quoted, as the transaction it
/// would open (no provider yet), with the account's payments settings it was quoted under.
pub(crate) async fn prepare(
    state: &AppState,
    account: &str,
    mut order: Order,
) -> FlowResult<(NewTransaction, crate::domain::settings::PaymentsSettings)> {
    let module = match order.kind {
        TransactionType::Ticket => Module::Ticketing,
        TransactionType::Vote => Module::Voting,
        TransactionType::Donation => Module::Donations,
    };
    modules::require(state, account, module).await?;
    if let Some(url) = &order.callback_url {
        check_callback(state, account, url).await?;
    }
    let priced = price(state, account, &mut order).await?;
    let settings = payments_settings(state, account).await?;
    let quote = fee_policy(state, &settings).quote(priced.price);
    let now = now_ms();
    let hold_ms = i64::try_from(state.config.payments.hold_seconds.saturating_mul(1000)).unwrap_or(i64::MAX / 2);
    let t = NewTransaction {
        reference: new_reference(),
        account_id: account.to_string(),
        transaction_type: order.kind,
        amount: quote.amount,
        fees: quote.fees,
        price: quote.price,
        currency: CURRENCY.to_string(),
        provider: None,
        channel: order.channel.to_string(),
        email: order.email,
        phone: order.phone,
        full_name: order.full_name,
        // The checkout's own return address, else the account's (D18.45); else the provider's
        // adapter sends the customer to `{http.public_url}/pay/done`.
        callback_url: order.callback_url.or_else(|| settings.callback_url.clone()),
        description: order.description,
        campaign_id: order.campaign_id,
        ticket_type_id: order.ticket_type_id,
        participant_id: order.participant_id,
        quantity: priced.quantity,
        metadata: order.metadata,
        attendees: order.attendees,
        hold_expires_at: now + hold_ms,
    };
    Ok((t, settings))
}

/// A purchase that costs nothing (D16.6): success at once, no provider, seats sold and
/// fulfilled in the same transaction. Sold out → 409, nothing written.
async fn complete_free(state: &AppState, t: NewTransaction, now: i64) -> FlowResult<Initialized> {
    let mut tx = state.store.begin().await?;
    if let (TransactionType::Ticket, Some(tt)) = (t.transaction_type, &t.ticket_type_id) {
        if !inventory::take(&mut tx, &t.account_id, tt, t.quantity, Take::Sell, now).await? {
            return Err(sold_out().into());
        }
    }
    payments::insert(&mut tx, &t, TxStatus::Success, 0, true, now).await?;
    let stored = payments::read_in(&mut tx, &t.reference).await?.ok_or(StoreError::NotFound("payment"))?;
    fulfil(&mut tx, &Purchase::of(&stored), now).await?;
    tx.commit().await?;
    let tickets = state.store.tickets_of(&t.reference).await?;
    Ok(Initialized {
        reference: t.reference,
        kind: t.transaction_type,
        status: TxStatus::Success,
        provider: None,
        authorization_url: None,
        access_code: None,
        amount: 0,
        fees: 0,
        expires_at: None,
        tickets,
    })
}

/// Opens the pending transaction with its seat hold and polling job, then asks the providers
/// in order (see the module docs).
async fn charge(
    state: &AppState,
    mut t: NewTransaction,
    candidates: &[super::routing::Route],
    now: i64,
) -> FlowResult<Initialized> {
    let Some(first) = candidates.first() else {
        return Err(FlowError::ProviderUnavailable("no payment provider is configured for this account".into()));
    };
    t.provider = Some(first.provider.as_str().to_string());
    open(state, &t, now + first_poll_ms(state), now).await?;
    let request = ChargeRequest {
        reference: &t.reference,
        amount: t.amount,
        currency: CURRENCY,
        email: &t.email,
        name: t.full_name.as_deref(),
        phone: t.phone.as_deref(),
        description: t.description.as_deref(),
        callback_url: t.callback_url.as_deref(),
        metadata: &t.metadata,
        // D18.2: a web checkout may ask for mobile money (`metadata.paymentMethod`), which
        // Flutterwave charges through its own mobile-money page.
        method: t.metadata.get("paymentMethod").and_then(serde_json::Value::as_str),
        network: t.metadata.get("network").and_then(serde_json::Value::as_str),
    };
    let mut last_error = None;
    for route in candidates {
        match adapter(route.provider).initialize(&state.outbound, &route.credentials, &request).await {
            Ok(init) => {
                let provider = route.provider.as_str();
                let (url, code) = (&init.authorization_url, &init.access_code);
                state.store.attach_charge(&t.reference, provider, url, code, now_ms()).await?;
                return Ok(Initialized {
                    reference: t.reference.clone(),
                    kind: t.transaction_type,
                    status: TxStatus::Pending,
                    provider: Some(provider),
                    authorization_url: Some(init.authorization_url),
                    access_code: Some(init.access_code),
                    amount: t.amount,
                    fees: t.fees,
                    expires_at: Some(t.hold_expires_at),
                    tickets: Vec::new(),
                });
            }
            Err(e) => {
                tracing::warn!(provider = route.provider.as_str(), error = %e, "charge initialization failed");
                let transient = e.is_transient();
                last_error = Some(e);
                if !transient {
                    break;
                }
            }
        }
    }
    drop_unpaid(state, &t.reference, now_ms()).await?;
    Err(FlowError::ProviderUnavailable(match last_error {
        Some(ProviderError::Unreachable(_)) | None => {
            "no payment provider could be reached; nothing was reserved".to_string()
        }
        Some(e) => format!("the payment provider refused the charge ({e}); nothing was reserved"),
    }))
}

/// The pending transaction, its seat hold (tickets) and its verify-polling job, in one
/// transaction. Sold out → 409, nothing written.
async fn open(state: &AppState, t: &NewTransaction, first_poll_at: i64, now: i64) -> FlowResult<()> {
    let mut tx = state.store.begin().await?;
    open_in(&mut tx, t, first_poll_at, now).await?;
    tx.commit().await?;
    Ok(())
}

/// [`open`] in the caller's transaction, for a flow that writes more with it (a USSD vote's
/// charge job and session).
pub(crate) async fn open_in(tx: &mut StoreTx, t: &NewTransaction, first_poll_at: i64, now: i64) -> FlowResult<()> {
    let mut reserved = 0;
    if let (TransactionType::Ticket, Some(tt)) = (t.transaction_type, &t.ticket_type_id) {
        if !inventory::take(tx, &t.account_id, tt, t.quantity, Take::Hold, now).await? {
            return Err(sold_out().into());
        }
        reserved = t.quantity;
    }
    payments::insert(tx, t, TxStatus::Pending, reserved, false, now).await?;
    jobs::enqueue(tx, queue::CHARGE, &t.reference, first_poll_at, now).await?;
    Ok(())
}

/// No provider took the charge (D5.4, D16.6): the transaction, its hold and its job go, as if
/// it had never been opened.
async fn drop_unpaid(state: &AppState, reference: &str, now: i64) -> FlowResult<()> {
    let mut tx = state.store.begin().await?;
    if let Some(t) = payments::read_in(&mut tx, reference).await?.filter(|t| t.status == TxStatus::Pending) {
        if let (Some(tt), true) = (t.ticket_type_id.as_deref(), t.reserved > 0) {
            inventory::release(&mut tx, tt, t.reserved, now).await?;
        }
        jobs::finish(&mut tx, queue::CHARGE, reference).await?;
        payments::delete(&mut tx, reference).await?;
    }
    tx.commit().await?;
    Ok(())
}

//! Outbound events (D17.25–26, D17.41): what a change reports, recorded in the change's own
//! transaction with the object the API returns for it (a payment as `GET /payments/:reference`
//! shows it, a ticket as D16.9, a withdrawal, a campaign as `GET /campaigns/:campaignId`), so an
//! event exists exactly when its change does. [`crate::flows::webhooks`] delivers them.
//!
//! Only flows record events (`store::events::record` is the statement they call), each in the
//! transaction of the change it reports: check-ins ([`crate::flows::gate`]), withdrawals
//! ([`crate::flows::payouts`]), campaign status changes ([`crate::flows::campaigns`]), payments
//! ([`payment`]: fulfilment and refunds).
use serde::Serialize;
use serde_json::Value;

use crate::domain::payments::TransactionType;
use crate::domain::webhooks::EventType;
use crate::store::campaigns::Campaign;
use crate::store::payments::Transaction;
use crate::store::tickets::Ticket;
use crate::store::withdrawals::Withdrawal;
use crate::store::{donations, events, payments, tickets, StoreError, StoreResult};
use crate::views::campaigns::CampaignOut;
use crate::views::payments::payment_out;
use crate::views::tickets::TicketOut;
use crate::views::withdrawals::WithdrawalOut;

fn to_data(view: impl Serialize) -> Value {
    // The views are plain strings, numbers and maps with string keys: serializing cannot fail.
    serde_json::to_value(view).unwrap_or(Value::Null)
}

/// `data` of `ticket.checked_in`: the ticket (D16.9).
pub fn ticket_data(t: &Ticket) -> Value {
    to_data(TicketOut::from(t.clone()))
}

/// `data` of `withdrawal.*`: the withdrawal (D16.12).
pub fn withdrawal_data(w: &Withdrawal) -> Value {
    to_data(WithdrawalOut::from(w.clone()))
}

/// `data` of `campaign.status.updated`: the campaign as the signed read shows it (D17.41).
pub fn campaign_data(c: &Campaign) -> Value {
    to_data(CampaignOut::from(c.clone(), true))
}

/// The success event of a paid (or free) purchase of this kind.
pub fn payment_success(kind: TransactionType) -> EventType {
    match kind {
        TransactionType::Ticket => EventType::TicketPurchaseConfirmed,
        TransactionType::Vote => EventType::VotePaymentSuccess,
        TransactionType::Donation => EventType::DonationPaymentSuccess,
    }
}

/// Records a payment event in the caller's transaction: `data` is the transaction as the
/// payment reads show it at this point of the transaction, with its tickets, votes or donation.
pub(crate) async fn payment(
    conn: &mut sqlx::AnyConnection,
    reference: &str,
    event_type: EventType,
    now: i64,
) -> StoreResult<()> {
    let t = payments::read_in(conn, reference).await?.ok_or(StoreError::NotFound("payment"))?;
    payment_of(conn, t, event_type, now).await
}

/// [`payment`] for a transaction the caller already read in this transaction (as it now is).
pub(crate) async fn payment_of(
    conn: &mut sqlx::AnyConnection,
    t: Transaction,
    event_type: EventType,
    now: i64,
) -> StoreResult<()> {
    let reference = t.reference.as_str();
    let issued = tickets::tickets_of_in(conn, reference).await?.into_iter().map(TicketOut::from).collect();
    let donation = match t.transaction_type {
        TransactionType::Donation => donations::donation_of_in(conn, reference).await?,
        _ => None,
    };
    let account_id = t.account_id.clone();
    events::record(conn, &account_id, event_type, &to_data(payment_out(t, issued, donation)), now).await?;
    Ok(())
}

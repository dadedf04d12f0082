//! A transaction as the payment routes and the payment events show it (D12.1).
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::tickets::TicketOut;
use crate::domain::money::to_ghs;
use crate::domain::payments::TransactionType;
use crate::domain::time::rfc3339;
use crate::store::payments::Transaction;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VotesOut {
    pub participant_id: String,
    pub count: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DonationOut {
    pub id: String,
}

/// A transaction (D12.1).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentOut {
    pub reference: String,
    pub transaction_type: String,
    /// `pending`, `success`, `failed`, `abandoned`.
    pub status: String,
    /// GHS charged.
    #[schema(value_type = f64)]
    pub amount: Value,
    /// GHS of fee.
    #[schema(value_type = f64)]
    pub fees: Value,
    /// amount − fees.
    #[schema(value_type = f64)]
    pub net: Value,
    pub currency: String,
    pub provider: Option<String>,
    pub channel: String,
    pub email: String,
    pub campaign_id: String,
    pub ticket_type_id: Option<String>,
    /// Tickets bought, or votes bought.
    pub quantity: i64,
    pub authorization_url: Option<String>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub created_at: String,
    pub paid_at: Option<String>,
    pub expires_at: String,
    /// The provider reported another amount or currency: not credited, not fulfilled.
    pub mismatch: bool,
    /// Paid after its hold expired (D16.4).
    pub paid_late: bool,
    /// GHS given back by succeeded refunds (D17.33).
    #[schema(value_type = f64)]
    pub refunded: Value,
    pub tickets: Vec<TicketOut>,
    pub votes: Option<VotesOut>,
    pub donation: Option<DonationOut>,
}

pub fn payment_out(t: Transaction, tickets: Vec<TicketOut>, donation: Option<String>) -> PaymentOut {
    let votes = (t.transaction_type == TransactionType::Vote).then(|| VotesOut {
        participant_id: t.participant_id.clone().unwrap_or_default(),
        count: if t.fulfilled { t.quantity } else { 0 },
    });
    PaymentOut {
        amount: to_ghs(t.amount),
        fees: to_ghs(t.fees),
        net: to_ghs(t.amount - t.fees),
        refunded: to_ghs(t.refunded),
        created_at: rfc3339(t.created_at),
        paid_at: t.paid_at.map(rfc3339),
        expires_at: rfc3339(t.hold_expires_at),
        donation: donation.map(|id| DonationOut { id }),
        votes,
        tickets,
        reference: t.reference,
        transaction_type: t.transaction_type.as_str().into(),
        status: t.status.as_str().into(),
        currency: t.currency,
        provider: t.provider,
        channel: t.channel,
        email: t.email,
        campaign_id: t.campaign_id,
        ticket_type_id: t.ticket_type_id,
        quantity: t.quantity,
        authorization_url: t.authorization_url,
        metadata: t.metadata,
        mismatch: t.mismatch,
        paid_late: t.paid_late,
    }
}

//! A refund as its routes show it (D17.33), and a campaign's refund counters (D17.37).
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::money::to_ghs;
use crate::domain::time::rfc3339;
use crate::store::refunds::{Refund, RefundCounts};

/// A refund (D17.33, D17.38).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefundOut {
    pub id: String,
    /// The refunded payment's reference.
    pub reference: String,
    /// GHS.
    #[schema(value_type = f64)]
    pub amount: Value,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    pub reason: Option<String>,
    /// The tickets this refund voided (empty for votes and donations).
    pub ticket_codes: Vec<String>,
    /// Why it failed (null otherwise).
    pub failure_reason: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Refund> for RefundOut {
    fn from(r: Refund) -> Self {
        RefundOut {
            id: r.id,
            reference: r.transaction_reference,
            amount: to_ghs(r.amount),
            status: r.status.as_str().into(),
            reason: r.reason,
            ticket_codes: r.ticket_codes,
            failure_reason: r.failure_reason,
            created_at: rfc3339(r.created_at),
            updated_at: rfc3339(r.updated_at),
        }
    }
}

/// The refund as `data` (of the 201, stored for replays).
pub fn refund_data(r: &Refund) -> Value {
    // Plain strings, numbers and arrays: serializing cannot fail.
    serde_json::to_value(RefundOut::from(r.clone())).unwrap_or(Value::Null)
}

/// `refunds` of a campaign (D17.37): how many of its payments' refunds were filed, and how many
/// of them succeeded and failed so far.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct RefundCountsOut {
    pub requested: i64,
    pub succeeded: i64,
    pub failed: i64,
}

impl From<RefundCounts> for RefundCountsOut {
    fn from(c: RefundCounts) -> Self {
        RefundCountsOut { requested: c.requested, succeeded: c.succeeded, failed: c.failed }
    }
}

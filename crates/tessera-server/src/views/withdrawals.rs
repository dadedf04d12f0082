//! A withdrawal as its routes and the withdrawal events show it (D16.12).
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::money::to_ghs;
use crate::domain::time::rfc3339;
use crate::store::withdrawals::Withdrawal;

/// A withdrawal (D16.12).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WithdrawalOut {
    pub id: String,
    /// `awaiting_approval`, `pending`, `processing`, `completed`, `failed`, `cancelled`.
    pub status: String,
    /// GHS.
    #[schema(value_type = f64)]
    pub amount: Value,
    #[serde(rename = "bank_name")]
    pub bank_name: String,
    #[serde(rename = "bank_code")]
    pub bank_code: String,
    #[serde(rename = "account_number")]
    pub account_number: String,
    #[serde(rename = "account_name")]
    pub account_name: String,
    /// Why the transfer failed or the withdrawal was cancelled (null otherwise).
    pub failure_reason: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Withdrawal> for WithdrawalOut {
    fn from(w: Withdrawal) -> Self {
        WithdrawalOut {
            id: w.id,
            status: w.status.as_str().into(),
            amount: to_ghs(w.amount),
            bank_name: w.bank_name,
            bank_code: w.bank_code,
            account_number: w.account_number,
            account_name: w.account_name,
            failure_reason: w.failure_reason,
            created_at: rfc3339(w.created_at),
            updated_at: rfc3339(w.updated_at),
        }
    }
}

//! Typed views of the response `data` of the routes the SDK knows. Unknown fields are kept
//! out of the way (serde ignores them), so newer servers stay compatible.
use serde::{Deserialize, Serialize};

/// `pagination` beside `data` on list routes (D1.8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pagination {
    pub page: u32,
    pub limit: u32,
    pub total: u64,
    pub has_more: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAccount {
    pub id: String,
    pub account_slug: String,
    pub platform_name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Branding {
    pub platform_name: String,
    pub primary_domain: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Domain {
    pub hostname: String,
    pub is_primary: bool,
    pub ssl_status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSummary {
    pub provider: String,
    /// `account` or `platform` (D17.13).
    pub source: String,
    pub is_default: bool,
    pub is_fallback: bool,
}

/// `GET /context`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    pub account: ContextAccount,
    pub branding: Branding,
    pub domains: Vec<Domain>,
    pub settings: serde_json::Map<String, serde_json::Value>,
    pub provider_summary: Vec<ProviderSummary>,
}

/// A ticket, wherever listed (D16.9).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    pub id: String,
    pub ticket_code: String,
    pub status: String,
    pub checked_in: bool,
    pub checked_in_at: Option<String>,
    pub checked_in_by: Option<String>,
    pub ticket_type: serde_json::Value,
    pub campaign: serde_json::Value,
    pub attendee: serde_json::Value,
}

/// `POST /payments/initialize` (both forms). Amounts are GHS.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentInit {
    pub reference: String,
    pub status: String,
    pub transaction_type: String,
    pub provider: Option<String>,
    pub authorization_url: Option<String>,
    pub access_code: Option<String>,
    pub amount: f64,
    pub fees: f64,
    pub currency: String,
    pub expires_at: Option<String>,
    #[serde(default)]
    pub tickets: Vec<Ticket>,
}

/// A transaction (`GET /payments/:reference`, `POST /payments/verify`, `GET /payments`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Payment {
    pub reference: String,
    pub transaction_type: String,
    /// `pending`, `success`, `failed`, `abandoned`.
    pub status: String,
    pub amount: f64,
    pub fees: f64,
    pub net: f64,
    pub currency: String,
    pub provider: Option<String>,
    pub email: String,
    pub campaign_id: String,
    pub quantity: i64,
    pub created_at: String,
    pub paid_at: Option<String>,
    pub mismatch: bool,
    pub paid_late: bool,
    #[serde(default)]
    pub tickets: Vec<Ticket>,
    pub votes: Option<serde_json::Value>,
    pub donation: Option<serde_json::Value>,
}

/// `GET /balance`, GHS.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Balance {
    pub available: f64,
    pub pending: f64,
    pub held: f64,
    pub currency: String,
}

/// An item of `GET /ledger`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntry {
    pub id: String,
    pub kind: String,
    pub amount: f64,
    pub reference: String,
    pub created_at: String,
}

/// A withdrawal (`POST /withdrawals`, `GET /withdrawals/:id`), GHS.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Withdrawal {
    pub id: String,
    /// `awaiting_approval`, `pending`, `processing`, `completed`, `failed`, `cancelled`.
    pub status: String,
    pub amount: f64,
    #[serde(rename = "bank_name")]
    pub bank_name: String,
    #[serde(rename = "bank_code")]
    pub bank_code: String,
    #[serde(rename = "account_number")]
    pub account_number: String,
    #[serde(rename = "account_name")]
    pub account_name: String,
    pub failure_reason: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// `POST /tickets/verify` Form 2 (D7.3).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TicketVerification {
    /// `checked_in`, `already_checked_in`, `valid`, `void` or `campaign_archived`.
    pub result: String,
    pub status: String,
    pub ticket_code: String,
    pub checked_in: bool,
    pub checked_in_at: Option<String>,
    pub checked_in_by: Option<String>,
    pub ticket_type: serde_json::Value,
    pub campaign: serde_json::Value,
    pub attendee: serde_json::Value,
}

/// `POST /my-tickets/request-otp` (D8.1).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OtpChallenge {
    pub challenge_id: String,
    pub expires_at: String,
}

/// `POST /my-tickets/verify-otp` (D8.3).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerSession {
    pub session_token: String,
    pub expires_at: String,
}

/// A ticket as its holder sees it (`POST /my-tickets/list`): the ticket and its QR token.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MyTicket {
    #[serde(flatten)]
    pub ticket: Ticket,
    pub qr_token: String,
}

/// `POST /my-tickets/qr`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TicketQr {
    pub ticket_code: String,
    pub svg: String,
    pub png_base64: String,
}

/// A notification and its delivery state (D13.1).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    pub id: String,
    pub channel: String,
    /// `queued`, `sending`, `sent`, `failed`.
    pub status: String,
    pub event_type: String,
    pub recipient: Option<String>,
    pub subject: Option<String>,
    #[serde(default)]
    pub attempts: i64,
    pub last_error: Option<String>,
    pub sent_at: Option<String>,
}

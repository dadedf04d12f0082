//! Withdrawals (spec "Withdrawal", D9.1, D14, D16.12): the request's rules, the states, the
//! idempotency key and the canonical body it is bound to. No I/O.
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::check::{self, Check};
use super::money::positive_ghs;
use super::DomainError;

/// How long an idempotency key and its first answer are kept (D9.1).
pub const IDEMPOTENCY_TTL_MS: i64 = 24 * 3600 * 1000;

/// How long a payout's provider may stay unreachable before the payout fails (D16.8).
pub const PROVIDER_DOWN_LIMIT_MS: i64 = 24 * 3600 * 1000;

/// The header that names the idempotency key.
pub const IDEMPOTENCY_HEADER: &str = "x-idempotency-key";

/// Withdrawal states (D9.1, D16.12): `awaiting_approval → pending | cancelled`,
/// `pending → processing → completed | failed` (and `pending → completed | failed` when the
/// provider settles the transfer before the move to processing was recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithdrawalStatus {
    AwaitingApproval,
    Pending,
    Processing,
    Completed,
    Failed,
    Cancelled,
}

impl WithdrawalStatus {
    pub const ALL: [WithdrawalStatus; 6] = [
        WithdrawalStatus::AwaitingApproval,
        WithdrawalStatus::Pending,
        WithdrawalStatus::Processing,
        WithdrawalStatus::Completed,
        WithdrawalStatus::Failed,
        WithdrawalStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WithdrawalStatus::AwaitingApproval => "awaiting_approval",
            WithdrawalStatus::Pending => "pending",
            WithdrawalStatus::Processing => "processing",
            WithdrawalStatus::Completed => "completed",
            WithdrawalStatus::Failed => "failed",
            WithdrawalStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(field: &str, s: &str) -> Result<WithdrawalStatus, DomainError> {
        WithdrawalStatus::ALL.into_iter().find(|v| v.as_str() == s).ok_or_else(|| {
            DomainError::field(
                field,
                "must be one of awaiting_approval, pending, processing, completed, failed, cancelled",
            )
        })
    }

    /// The status as a stored row names it.
    pub fn from_stored(s: &str) -> Option<Self> {
        WithdrawalStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Ended, however it ended: `completed`, `failed` or `cancelled` (its hold was released).
    pub fn is_final(self) -> bool {
        matches!(self, WithdrawalStatus::Completed | WithdrawalStatus::Failed | WithdrawalStatus::Cancelled)
    }

    /// Waiting for the provider (a payout job exists or will be claimed): `pending` or
    /// `processing`.
    pub fn is_payable(self) -> bool {
        matches!(self, WithdrawalStatus::Pending | WithdrawalStatus::Processing)
    }
}

/// A valid withdrawal request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithdrawalRequest {
    /// Pesewas, > 0.
    pub amount: i64,
    pub bank_name: String,
    pub bank_code: String,
    pub account_number: String,
    pub account_name: String,
}

fn required_text(check: &mut Check, body: &Value, field: &str, min: usize, max: usize) -> Option<String> {
    match body.get(field) {
        None | Some(Value::Null) => {
            check.fail(field, "is required");
            None
        }
        Some(Value::String(s)) => check.take(check::text(field, s, min, max)),
        Some(_) => {
            check.fail(field, "must be a string");
            None
        }
    }
}

/// Parses a `POST /withdrawals` body (already known to be an object with only known fields).
pub fn parse_request(body: &Value) -> Result<WithdrawalRequest, DomainError> {
    let mut check = Check::new();
    let amount = positive_ghs(&mut check, "amount", body.get("amount"));
    let bank_name = required_text(&mut check, body, "bank_name", 1, 100);
    let bank_code = required_text(&mut check, body, "bank_code", 2, 32);
    if let Some(code) = &bank_code {
        if !code.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            check
                .fail("bank_code", "must be 2 to 32 of A-Z, a-z, 0-9, _ and - (a bank or mobile-money code, e.g. MTN)");
        }
    }
    let account_number = required_text(&mut check, body, "account_number", 5, 34);
    if let Some(n) = &account_number {
        if !n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'+') {
            check.fail("account_number", "must be 5 to 34 letters and digits (an account or mobile-money number)");
        }
    }
    let account_name = required_text(&mut check, body, "account_name", 2, 100);
    check.finish()?;
    Ok(WithdrawalRequest {
        amount: amount.unwrap_or_default(),
        bank_name: bank_name.unwrap_or_default(),
        bank_code: bank_code.unwrap_or_default(),
        account_number: account_number.unwrap_or_default(),
        account_name: account_name.unwrap_or_default(),
    })
}

/// Checks an `X-Idempotency-Key`: 1–255 printable ASCII characters (D16.12).
pub fn parse_idempotency_key(s: &str) -> Result<String, DomainError> {
    if s.is_empty() || s.len() > 255 || !s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(DomainError::field(IDEMPOTENCY_HEADER, "must be 1 to 255 printable ASCII characters"));
    }
    Ok(s.to_string())
}

/// The JSON value with object keys sorted and no spacing: two bodies that are the same JSON
/// value (D16.12: key order and spacing do not matter) have the same canonical form.
pub fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical_json(&m[k.as_str()])))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(canonical_json).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// SHA-256 hex of the canonical body: what an idempotency key is bound to.
pub fn request_hash(v: &Value) -> String {
    hex::encode(Sha256::digest(canonical_json(v).as_bytes()))
}

/// Whether an amount needs approval: strictly above the threshold, when one is set (D16.12).
pub fn needs_approval(amount: i64, threshold: Option<i64>) -> bool {
    threshold.is_some_and(|t| amount > t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_same_json_value_hashes_the_same() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": [1, 2], "x": "s"}}"#).expect("json");
        let b: Value = serde_json::from_str(r#"{"a":{"x":"s","y":[1,2]},"b":1}"#).expect("json");
        assert_eq!(request_hash(&a), request_hash(&b));
        assert_ne!(request_hash(&a), request_hash(&json!({"b": 2, "a": {"x": "s", "y": [1, 2]}})));
    }

    #[test]
    fn requests_are_checked_field_by_field() {
        let ok = json!({"amount": 12.5, "bank_name": "MTN Mobile Money", "bank_code": "MTN", "account_number": "0241234567", "account_name": "Ama Mensah"});
        assert_eq!(parse_request(&ok).map(|r| r.amount), Ok(1250));
        let bad = json!({"amount": 0, "bank_code": "M", "account_number": "12", "account_name": ""});
        let Err(DomainError::Validation(f)) = parse_request(&bad) else { panic!("must fail") };
        let fields: Vec<&str> = f.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["amount", "bank_name", "bank_code", "account_number", "account_name"]);
        assert!(parse_idempotency_key("").is_err());
        assert!(parse_idempotency_key("k\u{7f}").is_err());
        assert!(parse_idempotency_key(&"k".repeat(256)).is_err());
        assert!(parse_idempotency_key("order-42 retry").is_ok());
        assert!(needs_approval(1001, Some(1000)) && !needs_approval(1000, Some(1000)) && !needs_approval(5, None));
    }
}

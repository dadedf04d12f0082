//! Payments (D5, D12, D16.1–6): transaction types and states, fees, references and ticket codes.
//! No I/O.
use rand::Rng;

use super::DomainError;

pub const CURRENCY: &str = "GHS";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionType {
    Ticket,
    Vote,
    Donation,
}

impl TransactionType {
    pub fn as_str(self) -> &'static str {
        match self {
            TransactionType::Ticket => "ticket",
            TransactionType::Vote => "vote",
            TransactionType::Donation => "donation",
        }
    }

    pub fn parse(field: &str, s: &str) -> Result<Self, DomainError> {
        match s {
            "ticket" => Ok(TransactionType::Ticket),
            "vote" => Ok(TransactionType::Vote),
            "donation" => Ok(TransactionType::Donation),
            _ => Err(DomainError::field(field, "must be one of vote, donation, ticket")),
        }
    }
}

/// D5.5 / D16.4: pending → success | failed | abandoned; abandoned → success when paid late.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxStatus {
    Pending,
    Success,
    Failed,
    Abandoned,
}

impl TxStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TxStatus::Pending => "pending",
            TxStatus::Success => "success",
            TxStatus::Failed => "failed",
            TxStatus::Abandoned => "abandoned",
        }
    }

    pub fn parse(field: &str, s: &str) -> Result<Self, DomainError> {
        match s {
            "pending" => Ok(TxStatus::Pending),
            "success" => Ok(TxStatus::Success),
            "failed" => Ok(TxStatus::Failed),
            "abandoned" => Ok(TxStatus::Abandoned),
            _ => Err(DomainError::field(field, "must be one of pending, success, failed, abandoned")),
        }
    }
}

pub const CHANNELS: [&str; 5] = ["web", "ussd", "telegram", "whatsapp", "withdrawal"];

pub fn parse_channel(field: &str, s: &str) -> Result<&'static str, DomainError> {
    CHANNELS
        .into_iter()
        .find(|c| *c == s)
        .ok_or_else(|| DomainError::field(field, format!("must be one of {}", CHANNELS.join(", "))))
}

/// Who pays the fee (D12.3, D16.1; `organizer` by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeeBearer {
    Customer,
    Organizer,
}

/// The fee rule in force for an account: a percentage in hundredths of a percent (250 = 2.5 %)
/// and a fixed part in pesewas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeePolicy {
    pub percent_hundredths: i64,
    pub fixed: i64,
    pub bearer: FeeBearer,
}

/// What a purchase costs the customer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quote {
    /// What the customer is charged.
    pub amount: i64,
    /// The fee on the price.
    pub fees: i64,
    /// The price of what is bought.
    pub price: i64,
}

impl FeePolicy {
    /// `fee = round_half_even(price × percent / 100) + fixed` (D12.3); a free purchase has no fee.
    pub fn fee(&self, price: i64) -> i64 {
        if price == 0 {
            return 0;
        }
        round_half_even(i128::from(price) * i128::from(self.percent_hundredths), 10_000) + self.fixed
    }

    /// D16.1: `customer` adds the fee on top of the price; `organizer` takes it out of the credit.
    pub fn quote(&self, price: i64) -> Quote {
        let fees = self.fee(price);
        let amount = match self.bearer {
            FeeBearer::Customer => price + fees,
            FeeBearer::Organizer => price,
        };
        Quote { amount, fees, price }
    }
}

/// `n / d` rounded to the nearest integer, ties to even (banker's rounding), for n ≥ 0, d > 0.
pub fn round_half_even(n: i128, d: i128) -> i64 {
    let (q, r) = (n / d, n % d);
    let q = match (2 * r).cmp(&d) {
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal if q % 2 == 1 => q + 1,
        _ => q,
    };
    i64::try_from(q).unwrap_or(i64::MAX)
}

/// A fee percentage (0–20, at most 2 decimals) in hundredths of a percent.
pub fn percent_hundredths(p: f64) -> Option<i64> {
    let scaled = p * 100.0;
    let rounded = scaled.round();
    ((0.0..=2000.0).contains(&rounded) && (scaled - rounded).abs() < 1e-6).then_some(rounded as i64)
}

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

fn crockford(n: usize) -> String {
    let mut rng = rand::thread_rng();
    (0..n).map(|_| CROCKFORD[rng.gen_range(0..32)] as char).collect()
}

/// A transaction reference, as sent to the provider (D16.24): `tsr_` + 26 Crockford characters
/// (130 random bits), safe in every provider's reference alphabet.
pub fn new_reference() -> String {
    format!("tsr_{}", crockford(26).to_ascii_lowercase())
}

/// A ticket code (D7.1): 20 Crockford base32 characters (100 random bits) in groups of four,
/// human-typable: `7K3M-Q9XD-…`.
pub fn new_ticket_code() -> String {
    let raw = crockford(20);
    raw.as_bytes().chunks(4).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join("-")
}

/// A QR token (D7.1): a separate unguessable value (256 bits) that resolves to the same ticket.
pub fn new_qr_token() -> String {
    let bytes: [u8; 32] = rand::thread_rng().gen();
    format!("qr_{}", hex::encode(bytes))
}

/// A typed ticket code normalized as Crockford base32 reads it (case-insensitive, O→0, I/L→1,
/// dashes and spaces ignored), regrouped in fours.
pub fn normalize_ticket_code(s: &str) -> String {
    let chars: Vec<char> = s
        .chars()
        .filter(|c| !matches!(c, '-' | ' '))
        .map(|c| match c.to_ascii_uppercase() {
            'O' => '0',
            'I' | 'L' => '1',
            other => other,
        })
        .collect();
    chars.chunks(4).map(|c| c.iter().collect::<String>()).collect::<Vec<_>>().join("-")
}

/// Polling (D16.5): the delay after `previous` (0 for the first poll), doubling up to 5 minutes.
pub fn next_poll_delay_ms(first_ms: i64, previous_ms: i64) -> i64 {
    if previous_ms <= 0 {
        first_ms.max(1)
    } else {
        (previous_ms * 2).min(300_000).max(first_ms.max(1))
    }
}

/// Provider errors (D16.8): doubling delays from 1 s up to 60 s.
pub fn retry_delay_ms(previous_ms: i64) -> i64 {
    if previous_ms <= 0 {
        1_000
    } else {
        (previous_ms * 2).min(60_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fees_round_half_even_and_fall_on_the_right_side() {
        let p = FeePolicy { percent_hundredths: 250, fixed: 0, bearer: FeeBearer::Organizer };
        // 2.5 % of 1.00 GHS = 2.5 pesewas → 2 (even); of 1.40 GHS = 3.5 → 4.
        assert_eq!(p.fee(100), 2);
        assert_eq!(p.fee(140), 4);
        assert_eq!(p.quote(10_000), Quote { amount: 10_000, fees: 250, price: 10_000 });
        let c = FeePolicy { percent_hundredths: 300, fixed: 50, bearer: FeeBearer::Customer };
        assert_eq!(c.quote(10_000), Quote { amount: 10_350, fees: 350, price: 10_000 });
        assert_eq!(c.quote(0), Quote { amount: 0, fees: 0, price: 0 });
    }

    #[test]
    fn codes_are_typable_and_normalize() {
        let code = new_ticket_code();
        assert_eq!(code.len(), 24);
        assert_eq!(normalize_ticket_code(&code.to_lowercase()), code);
        assert_eq!(normalize_ticket_code("abcd efgh-oilx"), "ABCD-EFGH-011X");
        assert!(new_reference().starts_with("tsr_"));
        assert_ne!(new_qr_token(), new_qr_token());
    }

    #[test]
    fn polls_double_up_to_five_minutes() {
        assert_eq!(next_poll_delay_ms(5_000, 0), 5_000);
        assert_eq!(next_poll_delay_ms(5_000, 5_000), 10_000);
        assert_eq!(next_poll_delay_ms(5_000, 200_000), 300_000);
        assert_eq!(retry_delay_ms(0), 1_000);
        assert_eq!(retry_delay_ms(40_000), 60_000);
        assert_eq!(percent_hundredths(2.5), Some(250));
        assert_eq!(percent_hundredths(20.5), None);
        assert_eq!(percent_hundredths(1.005), None);
    }
}

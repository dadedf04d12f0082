//! Refunds (D17.33–38, D17.42): the request's rules, the states, and what a refund takes back
//! (its amount, the tickets it voids, the votes it removes). No I/O.
//!
//! The plan ([`plan`]) is made inside the store's transaction from the payment as it then
//! stands; the store's conditional updates (the ceiling on `refund_claimed`, the voids on
//! `status = 'valid' AND checked_in = 0`) are what keep it true under concurrency.
use serde_json::Value;

use super::check::{self, Check};
use super::money::{from_ghs, to_ghs};
use super::payments::TransactionType;
use super::DomainError;

str_enum! {
    /// D17.38: `pending → succeeded | failed`.
    pub enum RefundStatus {
        Pending = "pending",
        Succeeded = "succeeded",
        Failed = "failed",
    } else "must be one of pending, succeeded, failed"
}

impl RefundStatus {
    /// The status as a stored row names it.
    pub fn from_stored(s: &str) -> Option<Self> {
        RefundStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Pending and succeeded refunds hold their effects and their claim on the payment.
    pub fn is_live(self) -> bool {
        matches!(self, RefundStatus::Pending | RefundStatus::Succeeded)
    }
}

/// A reason is at most this long (characters).
pub const REASON_MAX: usize = 500;

/// At most this many ticket codes in one request.
pub const TICKET_CODES_MAX: usize = 1000;

/// A valid `POST /payments/:reference/refunds` body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefundAsk {
    /// Pesewas, > 0, when given.
    pub amount: Option<i64>,
    pub reason: Option<String>,
    /// Distinct codes, in the order given, when given.
    pub ticket_codes: Option<Vec<String>>,
}

/// Parses the body (an object; unknown fields were refused by the wire type).
pub fn parse_request(body: &Value) -> Result<RefundAsk, DomainError> {
    let mut check = Check::new();
    let amount = match body.get("amount") {
        None | Some(Value::Null) => None,
        Some(v) => match check.take(from_ghs("amount", v)) {
            Some(0) => {
                check.fail("amount", "must be greater than 0");
                None
            }
            other => other,
        },
    };
    let reason = match body.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => check.take(check::text("reason", s, 0, REASON_MAX)).filter(|s| !s.is_empty()),
        Some(_) => {
            check.fail("reason", "must be a string");
            None
        }
    };
    let ticket_codes = match body.get("ticketCodes") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            let mut codes: Vec<String> = Vec::with_capacity(items.len());
            if items.is_empty() {
                check.fail("ticketCodes", "must name at least one ticket code (or be left out)");
            } else if items.len() > TICKET_CODES_MAX {
                check.fail("ticketCodes", format!("must name at most {TICKET_CODES_MAX} codes"));
            }
            for (i, item) in items.iter().enumerate() {
                match item.as_str().map(str::trim).filter(|s| !s.is_empty() && s.len() <= 64) {
                    Some(code) if codes.iter().any(|c| c == code) => {
                        check.fail(format!("ticketCodes[{i}]"), "is named twice");
                    }
                    Some(code) => codes.push(code.to_string()),
                    None => check.fail(format!("ticketCodes[{i}]"), "must be a ticket code (1 to 64 characters)"),
                }
            }
            Some(codes)
        }
        Some(_) => {
            check.fail("ticketCodes", "must be an array of ticket codes");
            None
        }
    };
    check.finish()?;
    Ok(RefundAsk { amount, reason, ticket_codes })
}

/// The payment as a refund sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paid {
    pub kind: TransactionType,
    /// Whether the transaction is `success` (only those are refundable).
    pub success: bool,
    /// What the customer paid (the ceiling, D17.38), pesewas.
    pub amount: i64,
    /// Tickets or votes bought.
    pub quantity: i64,
    /// What pending and succeeded refunds already claim.
    pub refund_claimed: i64,
    /// The campaign's vote price (vote purchases).
    pub vote_price: Option<i64>,
    /// Votes pending and succeeded refunds already took back.
    pub votes_refunded: i64,
}

/// One ticket of the purchase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaidTicket {
    pub code: String,
    pub valid: bool,
    pub checked_in: bool,
}

/// What a refund takes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Pesewas, > 0.
    pub amount: i64,
    /// Tickets to void.
    pub ticket_codes: Vec<String>,
    /// Votes to take back.
    pub votes: i64,
}

fn refused(code: &'static str, message: impl Into<String>) -> DomainError {
    DomainError::Refused { status: 409, code, message: message.into() }
}

/// 409 `refund_exceeds_payment`.
pub fn exceeds(remainder: i64) -> DomainError {
    refused(
        "refund_exceeds_payment",
        format!("the refund is more than what is left of the payment ({} GHS)", to_ghs(remainder.max(0))),
    )
}

/// 409 `ticket_not_refundable`.
pub fn ticket_not_refundable(code: &str) -> DomainError {
    refused(
        "ticket_not_refundable",
        format!(
            "ticket {code} is not a valid, unused ticket of this purchase (checked in, void, or another purchase's)"
        ),
    )
}

/// What `ask` refunds of `paid` (D17.33, D17.35, D17.38):
/// - only a `success` payment of a price (409 `not_refundable`); at most what is left
///   (409 `refund_exceeds_payment`); nothing named: the whole remainder;
/// - ticket purchases: `ticketCodes` (valid, not checked in, of this purchase; 409
///   `ticket_not_refundable`) set the amount to their share of what was paid (the remainder when
///   they are every ticket left); an amount alone must be the whole remainder (400
///   `ticket_codes_required` when less); a whole refund voids every ticket left;
/// - vote purchases: a whole multiple of the vote price, or the whole remainder;
/// - donations: any amount up to the remainder.
pub fn plan(paid: &Paid, ask: &RefundAsk, tickets: &[PaidTicket]) -> Result<Plan, DomainError> {
    if !paid.success || paid.amount <= 0 {
        return Err(refused("not_refundable", "only a successful, paid transaction can be refunded"));
    }
    let remainder = paid.amount - paid.refund_claimed;
    if remainder <= 0 || ask.amount.is_some_and(|a| a > remainder) {
        return Err(exceeds(remainder));
    }
    if ask.ticket_codes.is_some() && paid.kind != TransactionType::Ticket {
        return Err(DomainError::field("ticketCodes", "only ticket purchases have tickets to refund"));
    }
    match paid.kind {
        TransactionType::Ticket => plan_tickets(paid, ask, tickets, remainder),
        TransactionType::Vote => {
            let votes_left = (paid.quantity - paid.votes_refunded).max(0);
            let amount = ask.amount.unwrap_or(remainder);
            if amount == remainder {
                return Ok(Plan { amount, ticket_codes: Vec::new(), votes: votes_left });
            }
            let price = paid.vote_price.filter(|p| *p > 0).unwrap_or(paid.amount.max(1));
            if amount % price != 0 {
                return Err(DomainError::field(
                    "amount",
                    format!(
                        "must be a whole multiple of the vote price ({} GHS), or the whole remainder",
                        to_ghs(price)
                    ),
                ));
            }
            let votes = amount / price;
            if votes > votes_left {
                return Err(exceeds(remainder));
            }
            Ok(Plan { amount, ticket_codes: Vec::new(), votes })
        }
        TransactionType::Donation => {
            Ok(Plan { amount: ask.amount.unwrap_or(remainder), ticket_codes: Vec::new(), votes: 0 })
        }
    }
}

fn plan_tickets(paid: &Paid, ask: &RefundAsk, tickets: &[PaidTicket], remainder: i64) -> Result<Plan, DomainError> {
    // Tickets not yet voided by an earlier refund: what the remainder pays for.
    let left: Vec<&PaidTicket> = tickets.iter().filter(|t| t.valid).collect();
    let Some(codes) = &ask.ticket_codes else {
        if ask.amount.is_some_and(|a| a < remainder) {
            return Err(DomainError::Refused {
                status: 400,
                code: "ticket_codes_required",
                message: "a ticket purchase is refunded whole or by ticketCodes; name the tickets to refund part of it"
                    .into(),
            });
        }
        if let Some(used) = left.iter().find(|t| t.checked_in) {
            return Err(ticket_not_refundable(&used.code));
        }
        let ticket_codes = left.iter().map(|t| t.code.clone()).collect();
        return Ok(Plan { amount: remainder, ticket_codes, votes: 0 });
    };
    for code in codes {
        if !left.iter().any(|t| &t.code == code && !t.checked_in) {
            return Err(ticket_not_refundable(code));
        }
    }
    let amount = if codes.len() == left.len() {
        remainder
    } else {
        let unit = paid.amount / paid.quantity.max(1);
        (unit * codes.len() as i64).min(remainder)
    };
    if ask.amount.is_some_and(|a| a != amount) {
        return Err(DomainError::field(
            "amount",
            format!("must be the price of the named tickets ({} GHS), or be left out", to_ghs(amount)),
        ));
    }
    if amount <= 0 {
        return Err(exceeds(remainder));
    }
    Ok(Plan { amount, ticket_codes: codes.clone(), votes: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paid(kind: TransactionType, amount: i64, quantity: i64) -> Paid {
        Paid { kind, success: true, amount, quantity, refund_claimed: 0, vote_price: Some(100), votes_refunded: 0 }
    }

    fn ticket(code: &str, valid: bool, checked_in: bool) -> PaidTicket {
        PaidTicket { code: code.into(), valid, checked_in }
    }

    fn code_of(e: DomainError) -> String {
        match e {
            DomainError::Refused { code, .. } => code.into(),
            DomainError::Validation(f) => format!("400:{}", f[0].field),
            other => other.to_string(),
        }
    }

    #[test]
    fn bodies_are_checked_field_by_field() {
        let ok = parse_request(&json!({"amount": 12.5, "reason": " dup ", "ticketCodes": ["A", "B"]})).expect("ok");
        assert_eq!(ok.amount, Some(1250));
        assert_eq!(ok.reason.as_deref(), Some("dup"));
        assert_eq!(ok.ticket_codes, Some(vec!["A".to_string(), "B".to_string()]));
        assert_eq!(parse_request(&json!({})).expect("ok"), RefundAsk::default());
        let Err(DomainError::Validation(f)) =
            parse_request(&json!({"amount": 1.005, "reason": "x".repeat(501), "ticketCodes": ["A", "A", 3]}))
        else {
            panic!("must fail")
        };
        let fields: Vec<&str> = f.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["amount", "reason", "ticketCodes[1]", "ticketCodes[2]"]);
        assert!(parse_request(&json!({"amount": 0})).is_err());
        assert!(parse_request(&json!({"ticketCodes": "A"})).is_err());
    }

    #[test]
    fn ticket_refunds_are_whole_or_by_code() {
        let p = paid(TransactionType::Ticket, 3000, 3);
        let ts = [ticket("A", true, false), ticket("B", true, true), ticket("C", true, false)];
        let whole = RefundAsk::default();
        assert_eq!(code_of(plan(&p, &whole, &ts).expect_err("refused")), "ticket_not_refundable");
        let some = RefundAsk { ticket_codes: Some(vec!["A".into()]), ..Default::default() };
        assert_eq!(
            plan(&p, &some, &ts).expect("plan"),
            Plan { amount: 1000, ticket_codes: vec!["A".into()], votes: 0 }
        );
        let used = RefundAsk { ticket_codes: Some(vec!["B".into()]), ..Default::default() };
        assert_eq!(code_of(plan(&p, &used, &ts).expect_err("refused")), "ticket_not_refundable");
        let part = RefundAsk { amount: Some(1000), ..Default::default() };
        assert_eq!(code_of(plan(&p, &part, &ts).expect_err("refused")), "ticket_codes_required");
        let too_much = RefundAsk { amount: Some(3001), ..Default::default() };
        assert_eq!(code_of(plan(&p, &too_much, &ts).expect_err("refused")), "refund_exceeds_payment");
        let fresh = [ticket("A", true, false), ticket("B", false, false)];
        let after = Paid { refund_claimed: 1000, ..paid(TransactionType::Ticket, 3000, 3) };
        // The last ticket left takes the remainder (rounding stays with it).
        assert_eq!(plan(&after, &whole, &fresh).expect("plan").amount, 2000);
    }

    #[test]
    fn vote_and_donation_refunds_follow_their_rules() {
        let v = paid(TransactionType::Vote, 1000, 10);
        assert_eq!(plan(&v, &RefundAsk::default(), &[]).expect("plan").votes, 10);
        let three = RefundAsk { amount: Some(300), ..Default::default() };
        assert_eq!(plan(&v, &three, &[]).expect("plan").votes, 3);
        let odd = RefundAsk { amount: Some(250), ..Default::default() };
        assert_eq!(code_of(plan(&v, &odd, &[]).expect_err("refused")), "400:amount");
        let d = paid(TransactionType::Donation, 5000, 1);
        assert_eq!(plan(&d, &three, &[]).expect("plan").amount, 300);
        let pending = Paid { success: false, ..d.clone() };
        assert_eq!(code_of(plan(&pending, &three, &[]).expect_err("refused")), "not_refundable");
        let codes = RefundAsk { ticket_codes: Some(vec!["A".into()]), ..Default::default() };
        assert_eq!(code_of(plan(&d, &codes, &[]).expect_err("refused")), "400:ticketCodes");
    }
}

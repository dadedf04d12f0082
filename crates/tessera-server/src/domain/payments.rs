//! Payments (D5, D12, D16.1–6, D17.12): transaction types and states, fees, references, ticket
//! codes and attendee answers. No I/O.
use std::collections::BTreeMap;

use rand::Rng;
use serde_json::Value;

use super::check::{self, Check};
use super::money::positive_ghs;
use super::{is_uuid, DomainError};

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

    /// The type as a stored row names it.
    pub fn from_stored(s: &str) -> Option<Self> {
        Self::parse("", s).ok()
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

    /// The status as a stored row names it.
    pub fn from_stored(s: &str) -> Option<Self> {
        Self::parse("", s).ok()
    }

    /// Still open to a credit: `pending`, or `abandoned` when the payment comes after its hold
    /// expired (D16.4).
    pub fn takes_credit(self) -> bool {
        matches!(self, TxStatus::Pending | TxStatus::Abandoned)
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

/// A checkout or routed payment as the body asked for it, checked field by field but not yet
/// priced against the catalogue (D5.1–3). Both forms of `POST /payments/initialize` parse into it.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    pub kind: TransactionType,
    pub campaign_id: String,
    pub ticket_type_id: Option<String>,
    pub participant_id: Option<String>,
    /// Tickets asked for.
    pub quantity: i64,
    /// Form 2's amount (the price), pesewas.
    pub amount: Option<i64>,
    pub email: String,
    pub phone: Option<String>,
    pub full_name: Option<String>,
    pub callback_url: Option<String>,
    pub channel: &'static str,
    pub metadata: Value,
    pub description: Option<String>,
    /// One attendee per ticket (D17.12), in ticket order; empty when the body sent none.
    pub attendees: Vec<Attendee>,
    /// How the body named the campaign, the quantity and the attendees, for error details.
    pub campaign_field: &'static str,
    pub quantity_field: &'static str,
    pub attendees_field: &'static str,
}

/// Who one ticket is for and their answers to the ticket type's `required_attendee_fields`
/// (D17.12). Name and e-mail default to the buyer's when absent.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Attendee {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default)]
    pub answers: BTreeMap<String, String>,
}

/// `attendees` (Form 1) or `metadata.attendees` (Form 2): absent, or an array of exactly
/// `quantity` objects `{full_name?, email?, answers: {<key>: <string>}}` (D17.12).
fn attendees(check: &mut Check, field: &str, v: Option<&Value>, quantity: i64) -> Vec<Attendee> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Vec::new();
    };
    let Some(items) = v.as_array() else {
        check.fail(field, "must be an array of one object per ticket");
        return Vec::new();
    };
    if i64::try_from(items.len()).ok() != Some(quantity) {
        check.fail(field, format!("must have one item per ticket ({quantity})"));
        return Vec::new();
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = |k: &str| format!("{field}[{i}].{k}");
        let Some(obj) = item.as_object() else {
            check.fail(format!("{field}[{i}]"), "must be an object");
            continue;
        };
        let mut a = Attendee::default();
        if obj.get("answers").is_none_or(Value::is_null) {
            check.fail(at("answers"), "is required");
        }
        for (k, val) in obj {
            match (k.as_str(), val) {
                (_, Value::Null) => {}
                ("full_name", Value::String(s)) => a.full_name = check.take(check::text(&at(k), s, 1, 255)),
                ("email", Value::String(s)) => a.email = check.take(check::email(&at(k), s)),
                ("full_name" | "email", _) => check.fail(at(k), "must be a string"),
                ("answers", Value::Object(m)) => {
                    for (key, answer) in m {
                        match answer.as_str() {
                            Some(s) => {
                                let value = check.take(check::text(&format!("{}.{key}", at(k)), s, 0, 1000));
                                a.answers.insert(key.clone(), value.unwrap_or_default());
                            }
                            None => check.fail(format!("{}.{key}", at(k)), "must be a string"),
                        }
                    }
                }
                ("answers", _) => check.fail(at(k), "must be an object of strings"),
                _ => check.fail(at(k), "unknown field"),
            }
        }
        out.push(a);
    }
    out
}

impl Order {
    /// Checks the attendees against the ticket type's `required_attendee_fields` (D17.12):
    /// every `required` field answered (non-blank) for every ticket, `email` answers e-mail
    /// addresses, no answer to a field the type does not ask. E-mail answers are normalized.
    pub fn check_attendees(&mut self, fields: &Value) -> Result<(), DomainError> {
        let fields: Vec<(&str, &str, bool)> = fields
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|f| {
                        let key = f.get("key")?.as_str()?;
                        let ty = f.get("type").and_then(Value::as_str).unwrap_or("text");
                        Some((key, ty, f.get("required").and_then(Value::as_bool).unwrap_or(false)))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut check = Check::new();
        let wanted = usize::try_from(self.quantity).unwrap_or(0);
        if self.attendees.is_empty() && fields.iter().any(|f| f.2) {
            self.attendees = vec![Attendee::default(); wanted];
        }
        for (i, a) in self.attendees.iter_mut().enumerate() {
            let at = |key: &str| format!("{}[{i}].answers.{key}", self.attendees_field);
            for key in a.answers.keys() {
                if !fields.iter().any(|f| f.0 == key) {
                    check.fail(at(key), "unknown field: not one of the ticket type's required_attendee_fields");
                }
            }
            for &(key, ty, required) in &fields {
                match a.answers.get_mut(key) {
                    Some(answer) if answer.trim().is_empty() && required => check.fail(at(key), "is required"),
                    Some(answer) if ty == "email" && !answer.trim().is_empty() => {
                        if let Some(e) = check.take(check::email(&at(key), answer)) {
                            *answer = e;
                        }
                    }
                    None if required => check.fail(at(key), "is required"),
                    _ => {}
                }
            }
        }
        check.finish()
    }
}

/// A member of the body, `null` read as absent (as an `Option` field deserializes it).
fn member<'a>(body: &'a Value, name: &str) -> Option<&'a Value> {
    body.get(name).filter(|v| !v.is_null())
}

fn required<'a>(check: &mut Check, field: &str, v: Option<&'a Value>) -> Option<&'a str> {
    let s = v.and_then(Value::as_str);
    if s.is_none() {
        check.fail(field, "is required");
    }
    s
}

fn uuid_field(check: &mut Check, field: &str, v: Option<&str>) -> Option<String> {
    match v {
        Some(s) if is_uuid(s) => Some(s.to_string()),
        Some(_) => {
            check.fail(field, "must be a UUID");
            None
        }
        None => None,
    }
}

fn quantity(check: &mut Check, field: &str, v: Option<&Value>, default: Option<i64>) -> i64 {
    match (v, default) {
        (None, Some(d)) => d,
        (None, None) => {
            check.fail(field, "is required");
            1
        }
        (Some(v), _) => match v.as_i64() {
            Some(n) if (1..=100).contains(&n) => n,
            _ => {
                check.fail(field, "must be a whole number from 1 to 100");
                1
            }
        },
    }
}

fn metadata(check: &mut Check, v: Option<&Value>) -> Value {
    match v {
        None => Value::Object(Default::default()),
        Some(m) => {
            check.take(check::free_object("metadata", m));
            m.clone()
        }
    }
}

fn full_name(check: &mut Check, field: &str, v: Option<&Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => check.take(check::text(field, s, 1, 255)),
        Some(_) => {
            check.fail(field, "must be a string");
            None
        }
    }
}

fn email(check: &mut Check, body: &Value) -> Option<String> {
    required(check, "email", member(body, "email")).and_then(|e| check.take(check::email("email", e)))
}

/// Form 1 of `POST /payments/initialize`, a ticket checkout (a body already known to have only
/// the form's fields, of their JSON types).
pub fn parse_checkout(body: &Value) -> Result<Order, DomainError> {
    let mut check = Check::new();
    let asked = required(&mut check, "campaign_id", member(body, "campaign_id"));
    let campaign_id = uuid_field(&mut check, "campaign_id", asked);
    let asked = required(&mut check, "ticket_id", member(body, "ticket_id"));
    let ticket_type_id = uuid_field(&mut check, "ticket_id", asked);
    let email = email(&mut check, body);
    let quantity = quantity(&mut check, "quantity", member(body, "quantity"), None);
    let full_name = full_name(&mut check, "full_name", member(body, "full_name"));
    let callback_url = member(body, "callbackUrl")
        .and_then(Value::as_str)
        .and_then(|u| check.take(check::url("callbackUrl", u, false)));
    let metadata = metadata(&mut check, member(body, "metadata"));
    let attendees = attendees(&mut check, "attendees", member(body, "attendees"), quantity);
    check.finish()?;
    Ok(Order {
        kind: TransactionType::Ticket,
        campaign_id: campaign_id.unwrap_or_default(),
        ticket_type_id,
        participant_id: None,
        quantity,
        amount: None,
        email: email.unwrap_or_default(),
        phone: None,
        full_name,
        callback_url,
        channel: "web",
        metadata,
        description: None,
        attendees,
        campaign_field: "campaign_id",
        quantity_field: "quantity",
        attendees_field: "attendees",
    })
}

/// Form 2 of `POST /payments/initialize`, a routed payment for a vote, a donation or tickets
/// (a body already known to have only the form's fields, of their JSON types).
pub fn parse_routed(body: &Value) -> Result<Order, DomainError> {
    let mut check = Check::new();
    let text = |name: &str| member(body, name);
    let kind = required(&mut check, "transactionType", text("transactionType"))
        .and_then(|t| check.take(TransactionType::parse("transactionType", t)));
    let amount = positive_ghs(&mut check, "amount", text("amount"));
    let email = email(&mut check, body);
    let phone = required(&mut check, "phoneNumber", text("phoneNumber"))
        .and_then(|p| check.take(check::phone("phoneNumber", p)));
    let callback_url = required(&mut check, "callbackUrl", text("callbackUrl"))
        .and_then(|u| check.take(check::url("callbackUrl", u, false)));
    let channel = match text("channel").and_then(Value::as_str) {
        None => Some("web"),
        Some(c) => check.take(parse_channel("channel", c)),
    };
    let description =
        text("description").and_then(Value::as_str).and_then(|d| check.take(check::text("description", d, 0, 500)));
    let metadata = metadata(&mut check, text("metadata"));
    let meta = |k: &str| metadata.get(k).and_then(Value::as_str).map(str::to_string);
    let campaign_id = meta("campaignId");
    if campaign_id.is_none() {
        check.fail("metadata.campaignId", "is required");
    }
    let campaign_id = uuid_field(&mut check, "metadata.campaignId", campaign_id.as_deref());
    let (mut ticket_type_id, mut participant_id, mut quantity_asked, mut name) = (None, None, 1, None);
    let mut attendees_asked = Vec::new();
    match kind {
        Some(TransactionType::Vote) => {
            let p = meta("participantId");
            if p.is_none() {
                check.fail("metadata.participantId", "is required for a vote");
            }
            participant_id = uuid_field(&mut check, "metadata.participantId", p.as_deref());
        }
        Some(TransactionType::Ticket) => {
            let t = meta("ticketTypeId");
            if t.is_none() {
                check.fail("metadata.ticketTypeId", "is required for a ticket");
            }
            ticket_type_id = uuid_field(&mut check, "metadata.ticketTypeId", t.as_deref());
            quantity_asked = quantity(&mut check, "metadata.quantity", metadata.get("quantity"), Some(1));
            name = full_name(&mut check, "metadata.full_name", metadata.get("full_name"));
            attendees_asked = attendees(&mut check, "metadata.attendees", metadata.get("attendees"), quantity_asked);
        }
        _ => {}
    }
    check.finish()?;
    Ok(Order {
        kind: kind.unwrap_or(TransactionType::Donation),
        campaign_id: campaign_id.unwrap_or_default(),
        ticket_type_id,
        participant_id,
        quantity: quantity_asked,
        amount,
        email: email.unwrap_or_default(),
        phone,
        full_name: name,
        callback_url,
        channel: channel.unwrap_or("web"),
        metadata,
        description,
        attendees: attendees_asked,
        campaign_field: "metadata.campaignId",
        quantity_field: "metadata.quantity",
        attendees_field: "metadata.attendees",
    })
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
    fn attendees_answer_the_ticket_types_fields() {
        let body = serde_json::json!({
            "campaign_id": "0190a4c4-0000-7000-8000-000000000001", "ticket_id": "0190a4c4-0000-7000-8000-000000000002",
            "email": "a@b.co", "quantity": 2,
            "attendees": [{"answers": {"org": "Acme", "mail": "x@Y.example"}}, {"email": "k@b.co", "answers": {}}],
        });
        let fields = serde_json::json!([
            {"key": "org", "label": "Org", "type": "text", "required": true},
            {"key": "mail", "label": "Mail", "type": "email", "required": false},
        ]);
        let mut o = parse_checkout(&body).expect("shape");
        let Err(DomainError::Validation(errors)) = o.check_attendees(&fields) else { panic!("a missing answer") };
        let named: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(named, vec!["attendees[1].answers.org"]);
        let mut body = body;
        body["attendees"][1]["answers"]["org"] = "Beta".into();
        let mut o = parse_checkout(&body).expect("shape");
        o.check_attendees(&fields).expect("answered");
        assert_eq!(o.attendees[0].answers["mail"], "x@y.example");
        assert_eq!(o.attendees[1].email.as_deref(), Some("k@b.co"));
        body["attendees"] = serde_json::json!([{"answers": {"org": 1}}]);
        assert!(parse_checkout(&body).is_err(), "one item for two tickets, an answer not a string");
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

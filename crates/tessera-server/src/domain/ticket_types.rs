//! Ticket types (spec "Ticket type", D3.5): kinds, statuses, bounds, attendee fields.
use serde_json::{json, Value};

use super::check::{text, Check};
use super::money;
use super::DomainError;

pub const KINDS: [&str; 6] = ["paid", "free", "early_bird", "vip", "student", "group"];
pub const FIELD_TYPES: [&str; 6] = ["text", "email", "phone", "number", "select", "date"];

str_enum! {
    /// Whether a ticket type is on sale (`active`); `sold_out` is derived, never stored.
    pub enum TicketTypeStatus {
        Active = "active",
        Inactive = "inactive",
        Archived = "archived",
    } else "must be one of active, inactive, archived"
}

fn one_of(field: &str, s: &str, allowed: &[&str]) -> Result<String, DomainError> {
    if allowed.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(DomainError::field(field, format!("must be one of {}", allowed.join(", "))))
    }
}

/// A validated ticket type, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTicketType {
    pub name: String,
    pub description: Option<String>,
    pub kind: String,
    pub price: i64,
    pub quantity_available: i64,
    pub max_per_person: i64,
    pub status: TicketTypeStatus,
    pub required_attendee_fields: Value,
}

/// The raw inputs of one ticket type (from `POST /ticket-types` or one bootstrap item).
pub struct TicketTypeInput<'a> {
    pub name: Option<&'a str>,
    pub description: Option<&'a str>,
    pub ticket_type: Option<&'a str>,
    pub price: Option<&'a Value>,
    pub quantity_available: Option<&'a Value>,
    pub status: Option<&'a str>,
    pub is_free: Option<bool>,
    pub max_per_person: Option<&'a Value>,
    pub required_attendee_fields: Option<&'a Value>,
}

fn int_in(field: &str, v: &Value, min: i64, max: i64) -> Result<i64, DomainError> {
    match v.as_i64() {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(DomainError::field(field, format!("must be a whole number from {min} to {max}"))),
    }
}

/// Validates one ticket type; `prefix` names the fields (`""` or `ticketTypes[2].`).
pub fn parse(prefix: &str, i: &TicketTypeInput<'_>, check: &mut Check) -> Option<NewTicketType> {
    let f = |name: &str| format!("{prefix}{name}");
    let name = match i.name {
        Some(n) => check.take(text(&f("name"), n, 1, 255)),
        None => {
            check.fail(f("name"), "is required");
            None
        }
    };
    let description = i.description.and_then(|d| check.take(text(&f("description"), d, 0, 5000)));
    let kind = check.take(one_of(&f("ticket_type"), i.ticket_type.unwrap_or("paid"), &KINDS));
    let price = match i.price {
        Some(p) => check.take(money::from_ghs(&f("price"), p)),
        None => {
            check.fail(f("price"), "is required");
            None
        }
    };
    let quantity = match i.quantity_available {
        Some(q) => check.take(int_in(&f("quantity_available"), q, 0, 1_000_000)),
        None => {
            check.fail(f("quantity_available"), "is required");
            None
        }
    };
    let max_per_person = match i.max_per_person {
        Some(m) => check.take(int_in(&f("max_per_person"), m, 1, 100)),
        None => Some(10),
    };
    let status = check.take(TicketTypeStatus::parse(&f("status"), i.status.unwrap_or("active")));
    if let (Some(is_free), Some(price)) = (i.is_free, price) {
        if is_free != (price == 0) {
            check.fail(f("is_free"), "must be true exactly when price is 0");
        }
    }
    let fields = match i.required_attendee_fields {
        None | Some(Value::Null) => Some(json!([])),
        Some(v) => attendee_fields(&f("required_attendee_fields"), v, check),
    };
    Some(NewTicketType {
        name: name?,
        description,
        kind: kind?,
        price: price?,
        quantity_available: quantity?,
        max_per_person: max_per_person?,
        status: status?,
        required_attendee_fields: fields?,
    })
}

/// Parses `POST /ticket-types`: the campaign it names and the ticket type.
pub fn parse_new(campaign_id: Option<&str>, i: &TicketTypeInput<'_>) -> Result<(String, NewTicketType), DomainError> {
    let mut check = Check::new();
    let campaign = check.required("campaignId", campaign_id);
    let parsed = parse("", i, &mut check);
    check.finish()?;
    Ok((campaign.unwrap_or_default().to_string(), parsed.ok_or_else(incomplete)?))
}

/// Parses `POST /ticket-types/bootstrap`: the campaign it names and its 1–50 ticket types.
pub fn parse_bootstrap(
    campaign_id: Option<&str>,
    items: Option<&[TicketTypeInput<'_>]>,
) -> Result<(String, Vec<NewTicketType>), DomainError> {
    let mut check = Check::new();
    let campaign = check.required("campaignId", campaign_id);
    let mut types = Vec::new();
    match items {
        None => check.fail("ticketTypes", "is required"),
        Some(list) if list.is_empty() || list.len() > 50 => check.fail("ticketTypes", "must have 1 to 50 items"),
        Some(list) => {
            for (n, item) in list.iter().enumerate() {
                types.extend(parse(&format!("ticketTypes[{n}]."), item, &mut check));
            }
        }
    }
    check.finish()?;
    Ok((campaign.unwrap_or_default().to_string(), types))
}

/// The fields of a `PATCH /ticket-types/:id` body as sent (D17.15).
#[derive(Debug, Default, Clone, Copy)]
pub struct TicketTypePatchInput<'a> {
    pub name: Option<&'a str>,
    pub description: Option<&'a str>,
    pub price: Option<&'a Value>,
    pub quantity_available: Option<&'a Value>,
    pub max_per_person: Option<&'a Value>,
    pub status: Option<&'a str>,
}

/// A valid change to a ticket type: each field present is set, the others kept. The quantity's
/// floor (sold + held) is the store's to check, in the updating statement.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TicketTypePatch {
    pub name: Option<String>,
    pub description: Option<String>,
    pub price: Option<i64>,
    pub quantity_available: Option<i64>,
    pub max_per_person: Option<i64>,
    pub status: Option<TicketTypeStatus>,
}

/// Parses a `PATCH /ticket-types/:id` body under the rules of creation (D3.5, D17.15).
pub fn parse_patch(i: &TicketTypePatchInput<'_>) -> Result<TicketTypePatch, DomainError> {
    let mut check = Check::new();
    let patch = TicketTypePatch {
        name: i.name.and_then(|n| check.take(text("name", n, 1, 255))),
        description: i.description.and_then(|d| check.take(text("description", d, 0, 5000))),
        price: i.price.and_then(|p| check.take(money::from_ghs("price", p))),
        quantity_available: i
            .quantity_available
            .and_then(|q| check.take(int_in("quantity_available", q, 0, 1_000_000))),
        max_per_person: i.max_per_person.and_then(|m| check.take(int_in("max_per_person", m, 1, 100))),
        status: i.status.and_then(|s| check.take(TicketTypeStatus::parse("status", s))),
    };
    check.finish()?;
    Ok(patch)
}

/// The refusal of a quantity below what is already sold or held (409 `quantity_below_sold`).
pub fn quantity_below_sold(sold_and_held: i64) -> DomainError {
    DomainError::Refused {
        status: 409,
        code: "quantity_below_sold",
        message: format!("quantity_available cannot go below the {sold_and_held} seats already sold or held"),
    }
}

/// A parse that broke no rule yet returned nothing (cannot happen: every field it needs is
/// either required or defaulted).
fn incomplete() -> DomainError {
    DomainError::field("body", "is incomplete")
}

/// `required_attendee_fields`: at most 50 items `{key, label, type, required, options?}`, keys
/// unique and `[a-z][a-z0-9_]*` (≤ 64), `type` one of [`FIELD_TYPES`], `select` needs `options`.
fn attendee_fields(field: &str, v: &Value, check: &mut Check) -> Option<Value> {
    let Some(items) = v.as_array() else {
        check.fail(field, "must be an array");
        return None;
    };
    if items.len() > 50 {
        check.fail(field, "must have at most 50 items");
        return None;
    }
    let before = check.len();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (n, item) in items.iter().enumerate() {
        let at = |k: &str| format!("{field}[{n}].{k}");
        let Some(obj) = item.as_object() else {
            check.fail(format!("{field}[{n}]"), "must be an object");
            continue;
        };
        for k in obj.keys() {
            if !["key", "label", "type", "required", "options"].contains(&k.as_str()) {
                check.fail(at(k), "unknown field");
            }
        }
        let key = obj.get("key").and_then(Value::as_str).unwrap_or("");
        let key_ok = (1..=64).contains(&key.len())
            && key.starts_with(|c: char| c.is_ascii_lowercase())
            && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !key_ok {
            check.fail(at("key"), "must be 1 to 64 characters of a-z, 0-9 and '_', starting with a letter");
        } else if !seen.insert(key.to_string()) {
            check.fail(at("key"), "must be unique");
        }
        let label = obj.get("label").and_then(Value::as_str).map(|l| text(&at("label"), l, 1, 255));
        let label = match label {
            Some(r) => check.take(r),
            None => {
                check.fail(at("label"), "is required");
                None
            }
        };
        let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
        if !FIELD_TYPES.contains(&ty) {
            check.fail(at("type"), format!("must be one of {}", FIELD_TYPES.join(", ")));
        }
        let required = match obj.get("required") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                check.fail(at("required"), "must be a boolean");
                false
            }
        };
        let options = obj.get("options");
        let options_ok = match (ty, options) {
            ("select", Some(Value::Array(o))) => {
                !o.is_empty() && o.len() <= 100 && o.iter().all(|x| x.as_str().is_some_and(|s| !s.is_empty()))
            }
            ("select", _) => false,
            (_, None) => true,
            (_, Some(_)) => {
                check.fail(at("options"), "only select fields take options");
                true
            }
        };
        if !options_ok {
            check.fail(at("options"), "a select field needs 1 to 100 non-empty string options");
        }
        let mut o = json!({"key": key, "label": label.unwrap_or_default(), "type": ty, "required": required});
        if let Some(opts) = options.filter(|_| ty == "select") {
            o["options"] = opts.clone();
        }
        out.push(o);
    }
    (check.len() == before).then_some(Value::Array(out))
}

/// What a buyer may still buy: quantity less sold and held.
pub fn remaining(quantity: i64, sold: i64, held: i64) -> i64 {
    (quantity - sold - held).max(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(price: &'a Value, fields: Option<&'a Value>) -> TicketTypeInput<'a> {
        TicketTypeInput {
            name: Some("VIP"),
            description: None,
            ticket_type: None,
            price: Some(price),
            quantity_available: Some(&Value::Null),
            status: None,
            is_free: Some(true),
            max_per_person: None,
            required_attendee_fields: fields,
        }
    }

    #[test]
    fn every_broken_rule_is_named() {
        let price = json!(10);
        let fields = json!([{"key": "Bad Key", "label": "", "type": "colour", "required": "yes"}, {"key": "a", "label": "A", "type": "select"}]);
        let mut c = Check::new();
        assert!(parse("", &input(&price, Some(&fields)), &mut c).is_none());
        let DomainError::Validation(errs) = c.finish().expect_err("invalid") else { panic!("validation") };
        let names: Vec<_> = errs.iter().map(|e| e.field.as_str()).collect();
        for expected in [
            "quantity_available",
            "is_free",
            "required_attendee_fields[0].key",
            "required_attendee_fields[0].label",
            "required_attendee_fields[0].type",
            "required_attendee_fields[0].required",
            "required_attendee_fields[1].options",
        ] {
            assert!(names.contains(&expected), "{expected} missing from {names:?}");
        }
    }
}

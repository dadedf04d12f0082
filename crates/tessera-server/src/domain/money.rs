//! Money (D1.5): GHS major units on the wire as JSON numbers with at most 2 decimals; integer
//! pesewas inside.
use serde_json::Value;

use super::DomainError;

/// Largest amount accepted anywhere: 10 million GHS.
pub const MAX_PESEWAS: i64 = 1_000_000_000;

/// Parses a GHS amount into pesewas; refuses non-numbers, non-finite values, more than two
/// decimals, negatives and amounts over [`MAX_PESEWAS`].
pub fn from_ghs(field: &str, v: &Value) -> Result<i64, DomainError> {
    let Some(n) = v.as_f64().filter(|n| n.is_finite()) else {
        return Err(DomainError::field(field, "must be a number of GHS"));
    };
    // The shortest decimal form that reads back as this number (`12.5000001`, never an
    // exponent) says how many decimals the client wrote: any past the second is refused, not
    // rounded away (D1.5).
    let decimals = n.to_string().split_once('.').map_or(0, |(_, frac)| frac.len());
    if decimals > 2 {
        return Err(DomainError::field(field, "must have at most 2 decimals"));
    }
    let rounded = (n * 100.0).round();
    if rounded < 0.0 {
        return Err(DomainError::field(field, "must not be negative"));
    }
    if rounded > MAX_PESEWAS as f64 {
        return Err(DomainError::field(field, "is too large"));
    }
    Ok(rounded as i64)
}

/// A required amount of more than 0 GHS (`null` reads as absent), its errors recorded in `check`.
pub fn positive_ghs(check: &mut super::check::Check, field: &str, v: Option<&Value>) -> Option<i64> {
    match v.filter(|v| !v.is_null()) {
        None => {
            check.fail(field, "is required");
            None
        }
        Some(v) => match check.take(from_ghs(field, v)) {
            Some(0) => {
                check.fail(field, "must be greater than 0");
                None
            }
            other => other,
        },
    }
}

/// Pesewas as a GHS JSON number (`1250` → `12.5`).
pub fn to_ghs(pesewas: i64) -> Value {
    if pesewas % 100 == 0 {
        Value::from(pesewas / 100)
    } else {
        serde_json::Number::from_f64(pesewas as f64 / 100.0).map(Value::Number).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn amounts_convert_exactly() {
        assert_eq!(from_ghs("a", &json!(12.5)), Ok(1250));
        assert_eq!(from_ghs("a", &json!(19.99)), Ok(1999));
        assert_eq!(from_ghs("a", &json!(0)), Ok(0));
        assert!(from_ghs("a", &json!(1.005)).is_err());
        assert!(from_ghs("a", &json!(12.5000001)).is_err());
        assert!(from_ghs("a", &json!(0.0000001)).is_err());
        assert_eq!(from_ghs("a", &json!(0.29)), Ok(29));
        assert_eq!(from_ghs("a", &json!(1e3)), Ok(100_000));
        assert!(from_ghs("a", &json!(-1)).is_err());
        assert!(from_ghs("a", &json!("12")).is_err());
        assert_eq!(to_ghs(1250), json!(12.5));
        assert_eq!(to_ghs(1200), json!(12));
        assert_eq!(to_ghs(1999), json!(19.99));
    }
}

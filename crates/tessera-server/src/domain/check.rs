//! Collects every broken rule of one input, so a 400 names all failing fields at once.
use serde_json::Value;

use super::{DomainError, FieldError};

#[derive(Default, Debug)]
pub struct Check(Vec<FieldError>);

impl Check {
    pub fn new() -> Self {
        Check(Vec::new())
    }

    pub fn fail(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError::new(field, message));
    }

    /// Keeps the value of a parse, or records its error and returns `None`.
    pub fn take<T>(&mut self, r: Result<T, DomainError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(DomainError::Validation(mut f)) => {
                self.0.append(&mut f);
                None
            }
            Err(other) => {
                self.fail("body", other.to_string());
                None
            }
        }
    }

    /// A field that must be present: its value, or "is required" recorded.
    pub fn required<T>(&mut self, field: &str, v: Option<T>) -> Option<T> {
        if v.is_none() {
            self.fail(field, "is required");
        }
        v
    }

    /// How many rules are broken so far.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn is_ok(&self) -> bool {
        self.0.is_empty()
    }

    pub fn finish(self) -> Result<(), DomainError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(DomainError::Validation(self.0))
        }
    }
}

/// A string of `min..=max` characters after trimming. A required string (`min` ≥ 1) needs at
/// least one visible character: one made only of zero-width or control characters looks empty.
pub fn text(field: &str, s: &str, min: usize, max: usize) -> Result<String, DomainError> {
    let t = s.trim();
    let n = t.chars().count();
    if n < min || n > max {
        return Err(DomainError::field(field, format!("must be {min} to {max} characters")));
    }
    if min > 0 && t.chars().all(invisible) {
        return Err(DomainError::field(field, "must contain a visible character"));
    }
    Ok(t.to_string())
}

/// Characters that print nothing: white space, controls, zero-width and direction marks.
fn invisible(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
        )
}

/// Free-form objects (`metadata`, `payload`, `config`, `fields`): an object of at most 16 KiB
/// serialized and nesting depth at most 8 (D1.4).
pub fn free_object(field: &str, v: &Value) -> Result<(), DomainError> {
    fn depth(v: &Value) -> usize {
        match v {
            Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
            Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    if !v.is_object() {
        return Err(DomainError::field(field, "must be an object"));
    }
    if v.to_string().len() > 16 * 1024 {
        return Err(DomainError::field(field, "must be at most 16 KiB serialized"));
    }
    if depth(v) > 8 {
        return Err(DomainError::field(field, "must be nested at most 8 levels deep"));
    }
    Ok(())
}

/// A plausible e-mail address (one `@`, a dotted domain, no spaces), lower-cased domain.
pub fn email(field: &str, s: &str) -> Result<String, DomainError> {
    let s = s.trim();
    let ok = s.len() <= 254
        && s.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && !domain.contains('@')
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        });
    if !ok {
        return Err(DomainError::field(field, "must be an e-mail address"));
    }
    let (local, domain) = s.split_once('@').unwrap_or((s, ""));
    Ok(format!("{local}@{}", domain.to_ascii_lowercase()))
}

/// A phone number in E.164, or a Ghana local number `0XXXXXXXXX` normalized to `+233…` (D9.2).
pub fn phone(field: &str, s: &str) -> Result<String, DomainError> {
    let compact: String = s.chars().filter(|c| !matches!(c, ' ' | '-' | '(' | ')')).collect();
    if compact.len() == 10 && compact.starts_with('0') && compact.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(format!("+233{}", &compact[1..]));
    }
    if let Some(rest) = compact.strip_prefix('+') {
        if (8..=15).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_digit()) && !rest.starts_with('0') {
            return Ok(compact);
        }
    }
    Err(DomainError::field(field, "must be an E.164 number (+233…) or a Ghana number 0XXXXXXXXX"))
}

/// An absolute http(s) URL of at most 2048 characters.
pub fn url(field: &str, s: &str, https_only: bool) -> Result<String, DomainError> {
    let s = s.trim();
    let rest = s.strip_prefix("https://").or_else(|| if https_only { None } else { s.strip_prefix("http://") });
    let ok = s.len() <= 2048
        && rest.is_some_and(|r| {
            let host = r.split(['/', '?', '#']).next().unwrap_or("");
            !host.is_empty() && !r.chars().any(|c| c.is_whitespace())
        });
    if !ok {
        let scheme = if https_only { "https" } else { "http(s)" };
        return Err(DomainError::field(field, format!("must be an absolute {scheme} URL")));
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phones_normalize_ghana_local_numbers() {
        assert_eq!(phone("p", "024 123 4567"), Ok("+233241234567".into()));
        assert_eq!(phone("p", "+233241234567"), Ok("+233241234567".into()));
        assert!(phone("p", "12345").is_err());
    }

    #[test]
    fn emails_and_urls_are_checked() {
        assert_eq!(email("e", "Ama@Example.COM"), Ok("Ama@example.com".into()));
        assert!(email("e", "no-at-sign").is_err());
        assert!(url("u", "https://cdn.example.com/a.png", true).is_ok());
        assert!(url("u", "http://cdn.example.com/a.png", true).is_err());
        assert!(url("u", "javascript:alert(1)", false).is_err());
    }

    #[test]
    fn a_text_of_zero_width_characters_only_is_refused() {
        assert!(text("t", "\u{200B}\u{200D}\u{FEFF}", 1, 10).is_err());
        assert_eq!(text("t", "a\u{200B}", 1, 10).as_deref(), Ok("a\u{200B}"));
        assert!(text("t", "", 0, 10).is_ok());
    }

    #[test]
    fn free_objects_are_bounded() {
        assert!(free_object("m", &serde_json::json!({"a": {"b": 1}})).is_ok());
        assert!(free_object("m", &serde_json::json!([1])).is_err());
        let deep = serde_json::from_str::<Value>(&format!("{}1{}", "{\"a\":".repeat(9), "}".repeat(9))).expect("json");
        assert!(free_object("m", &deep).is_err());
    }
}

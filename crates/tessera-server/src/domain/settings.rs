//! Settings (D4): categories, secret masking, and the provider summary shown by `/context`.
use serde_json::{Map, Value};

use super::DomainError;

pub const CATEGORIES: [&str; 9] =
    ["branding", "permissions", "payments", "notifications", "ussd", "webhooks", "analytics", "security", "operations"];

pub const PROVIDERS: [&str; 3] = ["provider_a", "provider_b", "provider_c"];

pub fn parse_category(field: &str, s: &str) -> Result<&'static str, DomainError> {
    CATEGORIES
        .into_iter()
        .find(|c| *c == s)
        .ok_or_else(|| DomainError::field(field, format!("unknown category {s:?}; one of {}", CATEGORIES.join(", "))))
}

/// Secret-looking keys (D4.3): write-only, encrypted at rest, read back masked.
pub fn is_secret_key(key: &str) -> bool {
    matches!(key, "secretKey" | "password" | "apiKey") || key.ends_with("Secret")
}

/// A stored secret as the API shows it: `"••••" + last 4`.
pub fn mask(plain_tail: &str) -> String {
    format!("••••{plain_tail}")
}

/// Items of `providerSummary`: one per configured payment provider, never a secret.
pub fn provider_summary(payments: Option<&Value>) -> Vec<Value> {
    let Some(p) = payments.and_then(Value::as_object) else { return Vec::new() };
    let default = p.get("defaultProvider").and_then(Value::as_str);
    let fallback = p.get("fallbackProvider").and_then(Value::as_str);
    let providers = p.get("providers").and_then(Value::as_object);
    let shared = p.get("useSharedDefaults").and_then(Value::as_bool).unwrap_or(false);
    let mut names: Vec<&str> = PROVIDERS
        .into_iter()
        .filter(|n| Some(*n) == default || Some(*n) == fallback || providers.is_some_and(|m| m.contains_key(*n)))
        .collect();
    names.sort_by_key(|n| (Some(*n) != default, Some(*n) != fallback, *n));
    names
        .into_iter()
        .map(|name| {
            let role = if Some(name) == default {
                "default"
            } else if Some(name) == fallback {
                "fallback"
            } else {
                "configured"
            };
            let own = providers.and_then(|m| m.get(name)).and_then(Value::as_object);
            let configured = shared || own.is_some_and(|o| o.get("secretKey").is_some_and(|v| !v.is_null()));
            let mut item = Map::new();
            item.insert("name".into(), name.into());
            item.insert("role".into(), role.into());
            item.insert("configured".into(), configured.into());
            item.insert("usesSharedDefaults".into(), (shared && own.is_none()).into());
            Value::Object(item)
        })
        .collect()
}

/// Marker key of a sealed secret as stored: `{"$sealed": "<ciphertext>", "last4": "abcd"}`.
pub const SEALED: &str = "$sealed";

/// Replaces every sealed secret in `v` by its mask, in place.
pub fn mask_sealed(v: &mut Value) {
    match v {
        Value::Object(m) if m.contains_key(SEALED) => {
            let tail = m.get("last4").and_then(Value::as_str).unwrap_or("").to_string();
            *v = Value::String(mask(&tail));
        }
        Value::Object(m) => m.values_mut().for_each(mask_sealed),
        Value::Array(a) => a.iter_mut().for_each(mask_sealed),
        _ => {}
    }
}

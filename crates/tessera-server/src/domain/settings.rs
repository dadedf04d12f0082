//! Settings (D4): categories, secret masking, and the provider summary shown by `/context`.
use serde_json::{Map, Value};

use super::check::Check;
use super::DomainError;
use crate::providers::payments::ProviderId;

pub const CATEGORIES: [&str; 9] =
    ["branding", "permissions", "payments", "notifications", "ussd", "webhooks", "analytics", "security", "operations"];

/// The provider names, from the one list in `providers::payments`.
pub const PROVIDERS: [&str; ProviderId::COUNT] = ProviderId::NAMES;

pub fn parse_category(field: &str, s: &str) -> Result<&'static str, DomainError> {
    CATEGORIES
        .into_iter()
        .find(|c| *c == s)
        .ok_or_else(|| DomainError::field(field, format!("unknown category {s:?}; one of {}", CATEGORIES.join(", "))))
}

/// The categories a `GET /settings` query asks for: `categories` (or `categories[]`) as a comma
/// list or repeated, each named once in the order first asked; all when none is asked.
pub fn parse_categories(pairs: impl IntoIterator<Item = (String, String)>) -> Result<Vec<&'static str>, DomainError> {
    let mut check = Check::new();
    let mut wanted: Vec<&'static str> = Vec::new();
    for (k, v) in pairs {
        if k != "categories" && k != "categories[]" {
            check.fail(k, "unknown field");
            continue;
        }
        for c in v.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            if let Some(c) = check.take(parse_category("categories", c)) {
                if !wanted.contains(&c) {
                    wanted.push(c);
                }
            }
        }
    }
    check.finish()?;
    Ok(if wanted.is_empty() { CATEGORIES.to_vec() } else { wanted })
}

/// The `config` of a `PATCH /settings/:category` body: a free-form object (D1.4) whose keys
/// pass [`check_patch`].
pub fn parse_patch(config: Option<Value>) -> Result<Value, DomainError> {
    let patch = match config {
        Some(p @ Value::Object(_)) => p,
        Some(_) => return Err(DomainError::field("config", "must be an object")),
        None => return Err(DomainError::field("config", "is required")),
    };
    super::check::free_object("config", &patch)?;
    check_patch("config", &patch)?;
    Ok(patch)
}

/// Secret-looking keys (D4.3): write-only, encrypted at rest, read back masked.
pub fn is_secret_key(key: &str) -> bool {
    matches!(key, "secretKey" | "password" | "apiKey" | "callbackToken") || key.ends_with("Secret")
}

/// A stored secret as the API shows it: `"••••" + last 4`.
pub fn mask(plain_tail: &str) -> String {
    format!("••••{plain_tail}")
}

/// Secrets this short or shorter show no characters at all in their mask: four characters of
/// an eight-character secret would be half of it.
pub const SHORT_SECRET_CHARS: usize = 8;

/// The characters a mask may show of `plain`: the last 4, or none for a short secret.
pub fn visible_tail(plain: &str) -> String {
    let n = plain.chars().count();
    if n <= SHORT_SECRET_CHARS {
        return String::new();
    }
    plain.chars().skip(n - 4).collect()
}

/// Checks a settings patch before it is merged: no key may start with `$` (the namespace of
/// the sealed marker, so a client cannot forge a sealed value), and a secret-looking key holds
/// a string (or `null`, which deletes it), at any depth, inside arrays too.
pub fn check_patch(field: &str, patch: &Value) -> Result<(), DomainError> {
    let mut check = Check::new();
    check_patch_at(field, patch, &mut check);
    check.finish()
}

fn check_patch_at(path: &str, v: &Value, check: &mut Check) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{path}.{k}");
                if k.starts_with('$') {
                    check.fail(p, "keys starting with '$' are reserved");
                    continue;
                }
                if is_secret_key(k) && !matches!(child, Value::String(_) | Value::Null) {
                    check.fail(p, "a secret must be a string");
                    continue;
                }
                check_patch_at(&p, child, check);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                check_patch_at(&format!("{path}[{i}]"), child, check);
            }
        }
        _ => {}
    }
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

/// RFC 7396 JSON merge patch: objects merge recursively, `null` deletes, anything else replaces.
/// A secret sent back as its mask (`"••••abcd"`) means "unchanged" and is skipped.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        let mut next = patch.clone();
        // An array comes back whole: a secret in it sent back as its mask keeps the sealed value
        // stored at the same place.
        keep_masked(&mut next, target);
        *target = next;
        return;
    };
    if !target.is_object() || target.get(SEALED).is_some() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if is_secret_key(k) && v.as_str().is_some_and(|s| s.starts_with("••••")) {
            continue;
        }
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn is_sealed(v: &Value) -> bool {
    v.get(SEALED).is_some()
}

/// Replaces every plaintext secret string by `seal(path, plaintext)` (which returns the sealed
/// object). Already sealed values are left alone.
/// Objects inside arrays are walked too (a list of webhook endpoints, each with a secret).
pub fn seal_secrets(v: &mut Value, path: &str, seal: &dyn Fn(&str, &str) -> Value) {
    match v {
        Value::Object(m) => {
            if is_sealed_map(m) {
                return;
            }
            for (k, child) in m.iter_mut() {
                let p = format!("{path}.{k}");
                match child {
                    Value::String(s) if is_secret_key(k) => *child = seal(&p, s),
                    _ => seal_secrets(child, &p, seal),
                }
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter_mut().enumerate() {
                seal_secrets(child, &format!("{path}[{i}]"), seal);
            }
        }
        _ => {}
    }
}

/// In a value that replaces `old` whole, a secret given as the mask of the sealed secret at the
/// same place in `old` takes that sealed value back (the client read the mask and sent it back).
fn keep_masked(new: &mut Value, old: &Value) {
    match (new, old) {
        (Value::Object(n), Value::Object(o)) => {
            for (k, child) in n.iter_mut() {
                let Some(before) = o.get(k) else { continue };
                match child {
                    Value::String(s) if is_secret_key(k) && is_sealed(before) => {
                        let tail = before.get("last4").and_then(Value::as_str).unwrap_or("");
                        if *s == mask(tail) {
                            *child = before.clone();
                        }
                    }
                    _ => keep_masked(child, before),
                }
            }
        }
        (Value::Array(n), Value::Array(o)) => {
            for (child, before) in n.iter_mut().zip(o) {
                keep_masked(child, before);
            }
        }
        _ => {}
    }
}

fn is_sealed_map(m: &Map<String, Value>) -> bool {
    m.contains_key(SEALED)
}

const CHANNELS: [&str; 5] = ["web", "ussd", "telegram", "whatsapp", "withdrawal"];
pub const MODULES: [&str; 5] = ["voting", "donations", "ticketing", "submissions", "myTickets"];

struct V<'a> {
    check: &'a mut Check,
}

impl V<'_> {
    fn fail(&mut self, path: &str, msg: impl Into<String>) {
        self.check.fail(format!("config.{path}"), msg);
    }
    fn bool(&mut self, o: &Map<String, Value>, k: &str, path: &str) {
        if let Some(v) = o.get(k) {
            if !v.is_boolean() {
                self.fail(&format!("{path}{k}"), "must be a boolean");
            }
        }
    }
    /// A string (or a sealed secret) of 1..=max characters.
    fn string(&mut self, o: &Map<String, Value>, k: &str, path: &str, max: usize) -> Option<String> {
        match o.get(k) {
            None => None,
            Some(v) if is_sealed(v) => None,
            Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= max => Some(s.clone()),
            Some(_) => {
                self.fail(&format!("{path}{k}"), format!("must be a string of 1 to {max} characters"));
                None
            }
        }
    }
    fn one_of(&mut self, o: &Map<String, Value>, k: &str, path: &str, allowed: &[&str]) -> Option<String> {
        let s = o.get(k)?;
        match s.as_str() {
            Some(s) if allowed.contains(&s) => Some(s.to_string()),
            _ => {
                self.fail(&format!("{path}{k}"), format!("must be one of {}", allowed.join(", ")));
                None
            }
        }
    }
    fn number(&mut self, o: &Map<String, Value>, k: &str, path: &str, min: f64, max: f64) {
        if let Some(v) = o.get(k) {
            if !v.as_f64().is_some_and(|n| n.is_finite() && n >= min && n <= max) {
                self.fail(&format!("{path}{k}"), format!("must be a number from {min} to {max}"));
            }
        }
    }
    fn object<'v>(&mut self, o: &'v Map<String, Value>, k: &str, path: &str) -> Option<&'v Map<String, Value>> {
        match o.get(k) {
            None => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => {
                self.fail(&format!("{path}{k}"), "must be an object");
                None
            }
        }
    }
    fn url(&mut self, o: &Map<String, Value>, k: &str, path: &str) {
        if let Some(s) = self.string(o, k, path, 2048) {
            if super::check::url("", &s, false).is_err() {
                self.fail(&format!("{path}{k}"), "must be an absolute http(s) URL");
            }
        }
    }
}

// Typed views of the categories the code reads (`notifications`, `operations`; `payments`
// beside them): each reads a stored category object as the rules of `validate` let it be, and
// reads what is absent or unusable as the documented default.

/// The `payments` settings category as the payment flows read it (D4, D5.4, D11.2, D12.3,
/// D14.1). Unknown or mistyped members read as absent (the settings route validated them on
/// the way in); provider names stay names here, routing resolves them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PaymentsSettings {
    /// `useSharedDefaults` (default true): the platform's provider credentials, not the account's.
    pub use_shared_defaults: bool,
    /// `channels.<channel>.provider`.
    pub channel_providers: std::collections::BTreeMap<String, String>,
    pub default_provider: Option<String>,
    pub fallback_provider: Option<String>,
    pub payout_provider: Option<String>,
    /// `providers.<name>`: the account's own credentials.
    pub own: std::collections::BTreeMap<String, OwnProvider>,
    pub fee_percent: Option<f64>,
    pub fee_fixed: Option<f64>,
    pub fee_bearer: Option<super::payments::FeeBearer>,
}

/// An account's own credentials for one provider: the secret as stored (sealed) and an optional
/// base URL of its own.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OwnProvider {
    pub sealed_secret: Option<String>,
    pub base_url: Option<String>,
}

impl PaymentsSettings {
    /// Reads the stored category object (`{}` when the account has none).
    pub fn from_value(v: &Value) -> Self {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let entries = |k: &str| v.get(k).and_then(Value::as_object).into_iter().flatten();
        PaymentsSettings {
            use_shared_defaults: v.get("useSharedDefaults").and_then(Value::as_bool).unwrap_or(true),
            channel_providers: entries("channels")
                .filter_map(|(channel, c)| Some((channel.clone(), text(c.get("provider"))?)))
                .collect(),
            default_provider: text(v.get("defaultProvider")),
            fallback_provider: text(v.get("fallbackProvider")),
            payout_provider: text(v.get("payoutProvider")),
            own: entries("providers")
                .map(|(name, p)| {
                    let sealed = p.get("secretKey").and_then(|s| s.get(SEALED));
                    let own = OwnProvider { sealed_secret: text(sealed), base_url: text(p.get("baseUrl")) };
                    (name.clone(), own)
                })
                .collect(),
            fee_percent: v.get("feePercent").and_then(Value::as_f64),
            fee_fixed: v.get("feeFixed").and_then(Value::as_f64),
            fee_bearer: v.get("feeBearer").and_then(Value::as_str).map(|b| match b {
                "customer" => super::payments::FeeBearer::Customer,
                _ => super::payments::FeeBearer::Organizer,
            }),
        }
    }

    /// The fee rule in force (D12.3): the account's `feePercent`, `feeFixed`, `feeBearer`, each
    /// falling back to the platform's default percentage and fixed part; `organizer` bears it
    /// unless `customer` is set.
    pub fn fee_policy(&self, default_percent: f64, default_fixed: f64) -> super::payments::FeePolicy {
        let pct = self.fee_percent.or(Some(default_percent)).and_then(super::payments::percent_hundredths).unwrap_or(0);
        let fixed = self.fee_fixed.unwrap_or(default_fixed).max(0.0);
        super::payments::FeePolicy {
            percent_hundredths: pct,
            fixed: (fixed * 100.0).round() as i64,
            bearer: self.fee_bearer.unwrap_or(super::payments::FeeBearer::Organizer),
        }
    }
}

/// A non-empty string after trimming (a setting left blank counts as not set).
fn setting_str(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// The ciphertext of a sealed secret at `key` (D4.3), if one is stored there.
fn sealed_at(v: &Value, key: &str) -> Option<String> {
    v.get(key)?.get(SEALED)?.as_str().map(str::to_string)
}

/// The `branding` category as messages show it (D13.4): each a non-empty string after trimming.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrandingSettings {
    pub platform_name: Option<String>,
    pub logo_url: Option<String>,
    pub primary_color: Option<String>,
    pub support_email: Option<String>,
}

impl BrandingSettings {
    /// The typed view of a stored `branding` object (`{}` when never written).
    pub fn from_value(v: &Value) -> Self {
        BrandingSettings {
            platform_name: setting_str(v, "platformName"),
            logo_url: setting_str(v, "logoUrl"),
            primary_color: setting_str(v, "primaryColor"),
            support_email: setting_str(v, "supportEmail"),
        }
    }
}

/// The `ussd` category (D17.19, D17.40).
#[derive(Debug, Clone, PartialEq)]
pub struct UssdSettings {
    /// Answers only when `true`.
    pub enabled: bool,
    /// The sealed `callbackToken`.
    pub token_sealed: Option<String>,
    pub service_code: Option<String>,
    /// The one voting campaign the code serves; every approved one when unset.
    pub campaign_id: Option<String>,
    pub provider: Option<ProviderId>,
    /// 1000 unless a count of 1 or more is set.
    pub max_votes: i64,
}

impl UssdSettings {
    /// The typed view of a stored `ussd` object (`{}` when never written).
    pub fn from_value(v: &Value) -> Self {
        UssdSettings {
            enabled: v.get("enabled").and_then(Value::as_bool).unwrap_or(false),
            token_sealed: sealed_at(v, "callbackToken"),
            service_code: setting_str(v, "serviceCode"),
            campaign_id: setting_str(v, "campaignId"),
            provider: setting_str(v, "provider").and_then(|p| ProviderId::parse(&p)),
            max_votes: v.get("maxVotes").and_then(Value::as_i64).filter(|n| *n >= 1).unwrap_or(1000),
        }
    }
}

/// The `notifications` category (D9.2, D13.2–D13.3).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NotificationsSettings {
    /// Where campaign status changes are mailed (D13.2), as stored.
    pub organizer_email: Option<String>,
    /// The account's own SMTP server, when `email.smtpHost` is set.
    pub email: Option<SmtpSettings>,
    pub sms: SmsSettings,
}

/// `notifications.email`: the account's SMTP server and sender.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SmtpSettings {
    pub host: String,
    /// 25 unless a valid port is set.
    pub port: u16,
    pub username: Option<String>,
    /// The sealed password (`notifications.config.email.password`).
    pub password_sealed: Option<String>,
    pub from_address: Option<String>,
    pub from_name: Option<String>,
    /// `email.smtpTls` (D17.7): STARTTLS unless set.
    pub tls: SmtpTls,
}

/// How e-mail reaches its SMTP server (D17.7): `starttls` (the default; the server must offer
/// STARTTLS), `tls` (implicit TLS, usual on port 465) or `none` (plain, only where private
/// endpoints are allowed, D16.25). A TLS failure never falls back to plain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SmtpTls {
    #[default]
    StartTls,
    Implicit,
    None,
}

impl SmtpTls {
    /// The values of `notifications.email.smtpTls`.
    pub const NAMES: [&'static str; 3] = ["starttls", "tls", "none"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "starttls" => Some(SmtpTls::StartTls),
            "tls" => Some(SmtpTls::Implicit),
            "none" => Some(SmtpTls::None),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SmtpTls::StartTls => "starttls",
            SmtpTls::Implicit => "tls",
            SmtpTls::None => "none",
        }
    }
}

/// `notifications.sms`: the account's HTTP SMS gateway.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SmsSettings {
    pub base_url: Option<String>,
    /// The sealed key (`notifications.config.sms.apiKey`).
    pub api_key_sealed: Option<String>,
    pub sender_id: Option<String>,
}

impl NotificationsSettings {
    /// The typed view of a stored `notifications` object (`{}` when never written).
    pub fn from_value(v: &Value) -> Self {
        let email = v.get("email").filter(|e| setting_str(e, "smtpHost").is_some()).map(|e| SmtpSettings {
            host: setting_str(e, "smtpHost").unwrap_or_default(),
            port: e.get("smtpPort").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()).unwrap_or(25),
            username: setting_str(e, "username"),
            password_sealed: sealed_at(e, "password"),
            from_address: setting_str(e, "fromAddress"),
            from_name: setting_str(e, "fromName"),
            tls: setting_str(e, "smtpTls").and_then(|t| SmtpTls::parse(&t)).unwrap_or_default(),
        });
        let sms = v.get("sms").map_or_else(SmsSettings::default, |s| SmsSettings {
            base_url: setting_str(s, "baseUrl"),
            api_key_sealed: sealed_at(s, "apiKey"),
            sender_id: setting_str(s, "senderId"),
        });
        NotificationsSettings {
            organizer_email: v
                .get("organizerEmail")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            email,
            sms,
        }
    }
}

/// The `operations` category: modules and the withdrawal approval threshold (D14.2).
#[derive(Debug, Clone, PartialEq)]
pub struct OperationsSettings {
    /// Withdrawals strictly above this many pesewas wait for an approval; none when unset.
    pub withdrawal_approval_above: Option<i64>,
    /// Each of [`MODULES`], in that order: on unless set to `false`.
    pub modules: [(&'static str, bool); MODULES.len()],
}

impl OperationsSettings {
    /// The typed view of a stored `operations` object (`{}` when never written).
    pub fn from_value(v: &Value) -> Self {
        let configured = v.get("modules");
        OperationsSettings {
            withdrawal_approval_above: v
                .get("withdrawalApprovalAbove")
                .filter(|t| !t.is_null())
                .and_then(|t| super::money::from_ghs("withdrawalApprovalAbove", t).ok()),
            modules: MODULES.map(|m| (m, configured.and_then(|c| c.get(m)).and_then(Value::as_bool).unwrap_or(true))),
        }
    }
}

/// Validates the known keys of a category's (merged) config (D4.2). Unknown keys are kept.
pub fn validate(category: &str, config: &Value) -> Result<(), DomainError> {
    super::check::free_object("config", config)?;
    let Some(o) = config.as_object() else { return Err(DomainError::field("config", "must be an object")) };
    let mut check = Check::new();
    let mut v = V { check: &mut check };
    match category {
        "payments" => {
            v.bool(o, "useSharedDefaults", "");
            let default = v.one_of(o, "defaultProvider", "", &PROVIDERS);
            let fallback = v.one_of(o, "fallbackProvider", "", &PROVIDERS);
            v.one_of(o, "payoutProvider", "", &PROVIDERS);
            if default.is_some() && default == fallback {
                v.fail("fallbackProvider", "must differ from defaultProvider");
            }
            v.number(o, "feePercent", "", 0.0, 20.0);
            if let Some(fee) = o.get("feeFixed") {
                if super::money::from_ghs("config.feeFixed", fee).is_err() {
                    v.fail("feeFixed", "must be a GHS amount ≥ 0 with at most 2 decimals");
                }
            }
            v.one_of(o, "feeBearer", "", &["customer", "organizer"]);
            if let Some(providers) = v.object(o, "providers", "") {
                for (name, cfg) in providers {
                    let path = format!("providers.{name}.");
                    if !PROVIDERS.contains(&name.as_str()) {
                        v.fail(
                            &format!("providers.{name}"),
                            format!("unknown provider; one of {}", PROVIDERS.join(", ")),
                        );
                        continue;
                    }
                    let Some(cfg) = cfg.as_object() else {
                        v.fail(&format!("providers.{name}"), "must be an object");
                        continue;
                    };
                    v.string(cfg, "secretKey", &path, 512);
                    v.string(cfg, "publicKey", &path, 512);
                    v.url(cfg, "baseUrl", &path);
                }
            }
            if let Some(channels) = v.object(o, "channels", "") {
                for (name, cfg) in channels {
                    if !CHANNELS.contains(&name.as_str()) {
                        v.fail(&format!("channels.{name}"), format!("unknown channel; one of {}", CHANNELS.join(", ")));
                        continue;
                    }
                    match cfg.as_object() {
                        Some(c) => {
                            v.one_of(c, "provider", &format!("channels.{name}."), &PROVIDERS);
                        }
                        None => v.fail(&format!("channels.{name}"), "must be an object"),
                    }
                }
            }
        }
        "notifications" => {
            if let Some(addr) = v.string(o, "organizerEmail", "", 254) {
                if super::check::email("", &addr).is_err() {
                    v.fail("organizerEmail", "must be an e-mail address");
                }
            }
            if let Some(email) = v.object(o, "email", "") {
                v.string(email, "smtpHost", "email.", 255);
                if let Some(port) = email.get("smtpPort") {
                    if !port.as_u64().is_some_and(|p| (1..=65535).contains(&p)) {
                        v.fail("email.smtpPort", "must be a whole number from 1 to 65535");
                    }
                }
                v.string(email, "username", "email.", 255);
                v.string(email, "password", "email.", 512);
                if let Some(addr) = v.string(email, "fromAddress", "email.", 254) {
                    if super::check::email("", &addr).is_err() {
                        v.fail("email.fromAddress", "must be an e-mail address");
                    }
                }
                v.string(email, "fromName", "email.", 255);
                v.one_of(email, "smtpTls", "email.", &SmtpTls::NAMES);
            }
            if let Some(sms) = v.object(o, "sms", "") {
                v.url(sms, "baseUrl", "sms.");
                v.string(sms, "apiKey", "sms.", 512);
                v.string(sms, "senderId", "sms.", 11);
            }
        }
        "operations" => {
            // D14.2: withdrawals strictly above this many GHS wait for an approval.
            if let Some(limit) = o.get("withdrawalApprovalAbove") {
                if !limit.is_null() && super::money::from_ghs("withdrawalApprovalAbove", limit).is_err() {
                    v.fail("withdrawalApprovalAbove", "must be a GHS amount ≥ 0 with at most 2 decimals (or null)");
                }
            }
            if let Some(modules) = v.object(o, "modules", "") {
                for (name, on) in modules {
                    if !MODULES.contains(&name.as_str()) {
                        v.fail(&format!("modules.{name}"), format!("unknown module; one of {}", MODULES.join(", ")));
                    } else if !on.is_boolean() {
                        v.fail(&format!("modules.{name}"), "must be a boolean");
                    }
                }
            }
        }
        "security" => {
            if let Some(n) = o.get("rateLimitPerMinute") {
                if !n.as_u64().is_some_and(|n| (1..=1_000_000).contains(&n)) {
                    v.fail("rateLimitPerMinute", "must be a whole number from 1 to 1000000 (requests per minute; it can only tighten the platform limit)");
                }
            }
        }
        "ussd" => {
            // D17.19, D17.40.
            v.bool(o, "enabled", "");
            if let Some(token) = o.get("callbackToken").and_then(Value::as_str) {
                if !(16..=256).contains(&token.chars().count()) {
                    v.fail("callbackToken", "must be 16 to 256 characters (a secret the gateway sends as ?token=)");
                }
            }
            if let Some(code) = v.string(o, "serviceCode", "", 32) {
                let body = code.strip_prefix('*').and_then(|c| c.strip_suffix('#'));
                let ok =
                    body.is_some_and(|b| b.split('*').all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit())));
                if !ok {
                    v.fail("serviceCode", "must be a USSD code such as *920*44#");
                }
            }
            v.string(o, "campaignId", "", 64);
            v.one_of(o, "provider", "", &PROVIDERS);
            if let Some(n) = o.get("maxVotes") {
                if !n.as_i64().is_some_and(|n| (1..=1_000_000).contains(&n)) {
                    v.fail("maxVotes", "must be a whole number from 1 to 1000000");
                }
            }
        }
        "branding" => {
            v.string(o, "platformName", "", 255);
            v.url(o, "logoUrl", "");
        }
        _ => {}
    }
    check.finish()
}

/// Outbound URLs an account supplies (provider and SMS `baseUrl`) must pass the private-address
/// guard (D16.25): https to a public host unless the platform allows private endpoints; so must
/// plain SMTP (`email.smtpTls: none`, D17.7).
pub fn check_outbound_urls(category: &str, config: &Value, allow_private: bool) -> Result<(), DomainError> {
    let mut urls: Vec<(String, &str)> = Vec::new();
    match category {
        "payments" => {
            if let Some(providers) = config.get("providers").and_then(Value::as_object) {
                for (name, cfg) in providers {
                    if let Some(url) = cfg.get("baseUrl").and_then(Value::as_str) {
                        urls.push((format!("config.providers.{name}.baseUrl"), url));
                    }
                }
            }
        }
        "notifications" => {
            if let Some(url) = config.pointer("/sms/baseUrl").and_then(Value::as_str) {
                urls.push(("config.sms.baseUrl".into(), url));
            }
        }
        _ => {}
    }
    let mut check = Check::new();
    // Plain SMTP sends the password and the mail in clear: loopback rigs only (D17.7, D17.44).
    if category == "notifications"
        && !allow_private
        && config.pointer("/email/smtpTls").and_then(Value::as_str) == Some(SmtpTls::None.as_str())
    {
        check.fail(
            "config.email.smtpTls",
            "none (plain SMTP) is allowed only where private endpoints are allowed; use starttls or tls",
        );
    }
    for (field, url) in urls {
        if let Err(why) = super::urls::check_account_url(url, allow_private) {
            check.fail(field, why);
        }
    }
    check.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7396_and_keeps_masked_secrets() {
        let mut t = json!({"a": 1, "b": {"c": 2, "d": 3}, "secretKey": {"$sealed": "x", "last4": "abcd"}});
        merge_patch(&mut t, &json!({"a": null, "b": {"c": 5}, "e": [1], "secretKey": "••••abcd"}));
        assert_eq!(t, json!({"b": {"c": 5, "d": 3}, "e": [1], "secretKey": {"$sealed": "x", "last4": "abcd"}}));
    }

    #[test]
    fn payments_rules_name_the_field() {
        let bad = json!({"defaultProvider": "provider_a", "fallbackProvider": "provider_a", "feePercent": 25, "providers": {"provider_z": {}}});
        let DomainError::Validation(errs) = validate("payments", &bad).expect_err("invalid") else { panic!() };
        let fields: Vec<_> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["config.fallbackProvider", "config.feePercent", "config.providers.provider_z"]);
        assert!(validate(
            "payments",
            &json!({"defaultProvider": "provider_b", "providers": {"provider_b": {"secretKey": "sk"}}})
        )
        .is_ok());
    }

    #[test]
    fn secrets_are_sealed_wherever_they_are() {
        let mut v = json!({"providers": {"provider_a": {"secretKey": "sk_live_123456"}}, "webhookSecret": "whsec", "plain": "x"});
        seal_secrets(&mut v, "config", &|_, s| json!({SEALED: "enc", "last4": &s[s.len() - 4..]}));
        assert_eq!(v["providers"]["provider_a"]["secretKey"]["last4"], "3456");
        assert_eq!(v["webhookSecret"][SEALED], "enc");
        assert_eq!(v["plain"], "x");
        mask_sealed(&mut v);
        assert_eq!(v["providers"]["provider_a"]["secretKey"], "••••3456");
    }

    #[test]
    fn secrets_inside_arrays_are_sealed_and_a_sent_back_mask_keeps_them() {
        let seal = |_: &str, s: &str| json!({SEALED: format!("enc:{s}"), "last4": visible_tail(s)});
        let mut v = json!({"endpoints": [{"url": "u", "signingSecret": "whsec_abcdefgh1234"}, {"apiKey": "short"}]});
        seal_secrets(&mut v, "config", &seal);
        assert_eq!(v["endpoints"][0]["signingSecret"][SEALED], "enc:whsec_abcdefgh1234");
        assert_eq!(v["endpoints"][1]["apiKey"]["last4"], "");
        let stored = v.clone();
        merge_patch(&mut v, &json!({"endpoints": [{"url": "u2", "signingSecret": "••••1234"}, {"apiKey": "••••"}]}));
        assert_eq!(v["endpoints"][0]["signingSecret"], stored["endpoints"][0]["signingSecret"]);
        assert_eq!(v["endpoints"][1]["apiKey"], stored["endpoints"][1]["apiKey"]);
        assert_eq!(v["endpoints"][0]["url"], "u2");
        mask_sealed(&mut v);
        assert_eq!(v["endpoints"][0]["signingSecret"], "••••1234");
        assert_eq!(v["endpoints"][1]["apiKey"], "••••");
    }

    #[test]
    fn a_patch_refuses_dollar_keys_and_non_string_secrets_at_any_depth() {
        assert!(check_patch("config", &json!({"a": [{"b": {"apiKey": "x", "password": null}}]})).is_ok());
        let DomainError::Validation(errs) =
            check_patch("config", &json!({"$sealed": "x", "a": [{"apiKey": 5}], "b": {"$x": 1}})).expect_err("bad")
        else {
            panic!()
        };
        let mut fields: Vec<_> = errs.iter().map(|e| e.field.as_str()).collect();
        fields.sort();
        assert_eq!(fields, ["config.$sealed", "config.a[0].apiKey", "config.b.$x"]);
    }

    #[test]
    fn plain_smtp_is_refused_unless_private_endpoints_are_allowed() {
        let plain = json!({"email": {"smtpHost": "127.0.0.1", "smtpTls": "none"}});
        assert!(validate("notifications", &plain).is_ok());
        let DomainError::Validation(errs) = check_outbound_urls("notifications", &plain, false).expect_err("refused")
        else {
            panic!()
        };
        assert_eq!(errs[0].field, "config.email.smtpTls");
        assert!(check_outbound_urls("notifications", &plain, true).is_ok());
        let DomainError::Validation(errs) =
            validate("notifications", &json!({"email": {"smtpTls": "ssl"}})).expect_err("unknown")
        else {
            panic!()
        };
        assert_eq!(errs[0].field, "config.email.smtpTls");
        let tls = NotificationsSettings::from_value(&json!({"email": {"smtpHost": "h", "smtpTls": "tls"}}));
        assert_eq!(tls.email.map(|e| e.tls), Some(SmtpTls::Implicit));
    }

    #[test]
    fn short_secrets_show_no_characters() {
        assert_eq!(visible_tail("12345678"), "");
        assert_eq!(visible_tail("123456789"), "6789");
    }

    #[test]
    fn typed_views_read_what_is_set_and_default_the_rest() {
        let n = NotificationsSettings::from_value(&json!({
            "organizerEmail": "ops@example.com",
            "email": {"smtpHost": " smtp.example.com ", "smtpPort": 70000, "password": {SEALED: "ct", "last4": ""}},
            "sms": {"baseUrl": "https://sms.example.com", "senderId": "  "}
        }));
        assert_eq!(n.organizer_email.as_deref(), Some("ops@example.com"));
        let smtp = n.email.expect("smtp");
        assert_eq!(
            (smtp.host.as_str(), smtp.port, smtp.password_sealed.as_deref()),
            ("smtp.example.com", 25, Some("ct"))
        );
        assert_eq!((n.sms.base_url.as_deref(), n.sms.sender_id), (Some("https://sms.example.com"), None));
        assert_eq!(smtp.tls, SmtpTls::StartTls, "STARTTLS unless set");
        assert_eq!(
            NotificationsSettings::from_value(&json!({"email": {"smtpHost": ""}})),
            NotificationsSettings::default()
        );

        let o = OperationsSettings::from_value(&json!({"withdrawalApprovalAbove": 10.5, "modules": {"voting": false}}));
        assert_eq!(o.withdrawal_approval_above, Some(1050));
        assert_eq!(o.modules[0], ("voting", false));
        assert!(o.modules[1..].iter().all(|(_, on)| *on));
        assert_eq!(OperationsSettings::from_value(&Value::Null).withdrawal_approval_above, None);
    }
}

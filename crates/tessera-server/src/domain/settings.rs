//! Settings (D4): categories, secret masking, merge patches, and each category's members with
//! their rules, read through one typed struct per category (`rules` holds the member types,
//! `read` the reading that names every broken rule at its path).
mod read;
mod rules;

use serde::Deserialize;
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
    matches!(key, "secretKey" | "password" | "apiKey" | "callbackToken" | "webhookHash") || key.ends_with("Secret")
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

// Each category the code reads or checks is one struct below: its members are named once (camel
// case, as stored), each of a type from `rules` that holds its rule; unknown members are kept
// (D4.2). `validate` reports every broken rule, in declaration order, at its path; the typed
// views (`PaymentsSettings` and the rest) read a stored object with what breaks a rule, or is
// absent, as the documented default.

#[derive(Debug)]
struct ProviderNames;
impl rules::Names for ProviderNames {
    const ALL: &'static [&'static str] = &PROVIDERS;
    const NOUN: &'static str = "provider";
}

#[derive(Debug)]
struct ChannelNames;
impl rules::Names for ChannelNames {
    const ALL: &'static [&'static str] = &CHANNELS;
    const NOUN: &'static str = "channel";
}

#[derive(Debug)]
struct ModuleNames;
impl rules::Names for ModuleNames {
    const ALL: &'static [&'static str] = &MODULES;
    const NOUN: &'static str = "module";
}

/// The `payments` category as stored (D4, D5.4, D11.2, D12.3, D14.1).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PaymentsConfig {
    use_shared_defaults: Option<rules::Flag>,
    default_provider: Option<rules::Provider>,
    fallback_provider: Option<rules::Provider>,
    payout_provider: Option<rules::Provider>,
    fee_percent: Option<rules::Number<0, 20>>,
    fee_fixed: Option<rules::Ghs>,
    fee_bearer: Option<rules::Bearer>,
    /// Where a customer returns after paying when the checkout names no `callbackUrl` (D18.45).
    callback_url: Option<rules::Url>,
    providers: Option<rules::Named<ProviderNames, ProviderConfig>>,
    channels: Option<rules::Named<ChannelNames, ChannelConfig>>,
}

/// `payments.providers.<name>`: the account's own credentials for one provider.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ProviderConfig {
    secret_key: Option<rules::Text<512>>,
    public_key: Option<rules::Text<512>>,
    base_url: Option<rules::Url>,
    /// Flutterwave's webhook secret hash (D18.2), write-only.
    webhook_hash: Option<rules::Text<512>>,
    /// Hubtel's API id, POS sales and prepaid deposit account numbers (D18.3).
    api_id: Option<rules::Text<128>>,
    pos_sales_id: Option<rules::Text<64>>,
    prepaid_deposit_id: Option<rules::Text<64>>,
    /// The token of Hubtel's callback path (D18.3), write-only.
    callback_token: Option<rules::PathToken>,
}

/// `payments.channels.<channel>`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ChannelConfig {
    provider: Option<rules::Provider>,
}

/// The `notifications` category as stored (D9.2, D13.2–D13.3, D17.7).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct NotificationsConfig {
    organizer_email: Option<rules::EmailAddress<254>>,
    email: Option<EmailConfig>,
    sms: Option<SmsConfig>,
}

/// `notifications.email`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct EmailConfig {
    smtp_host: Option<rules::Text<255>>,
    smtp_port: Option<rules::Port>,
    username: Option<rules::Text<255>>,
    password: Option<rules::Text<512>>,
    from_address: Option<rules::EmailAddress<254>>,
    from_name: Option<rules::Text<255>>,
    smtp_tls: Option<SmtpTls>,
}

/// `notifications.sms` (D13.3, D18.4).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct SmsConfig {
    provider: Option<SmsProvider>,
    /// The Africa's Talking application's username (required with `provider: africastalking`).
    username: Option<rules::Text<255>>,
    base_url: Option<rules::Url>,
    api_key: Option<rules::Text<512>>,
    sender_id: Option<rules::Text<11>>,
}

/// The `operations` category as stored (D14.2, D17.9).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct OperationsConfig {
    /// Withdrawals strictly above this many GHS wait for an approval.
    withdrawal_approval_above: Option<rules::GhsOrNull>,
    modules: Option<rules::Named<ModuleNames, rules::Flag>>,
}

/// The `security` category as stored (D16.19).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct SecurityConfig {
    rate_limit_per_minute: Option<rules::RateLimit>,
}

/// The `ussd` category as stored (D17.19, D17.40).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct UssdConfig {
    enabled: Option<rules::Flag>,
    callback_token: Option<rules::CallbackToken>,
    service_code: Option<rules::ServiceCode>,
    campaign_id: Option<rules::Text<64>>,
    provider: Option<rules::PushProvider>,
    max_votes: Option<rules::Whole<1, 1_000_000>>,
}

/// The `branding` category as stored (D13.4).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct BrandingConfig {
    platform_name: Option<rules::Text<255>>,
    logo_url: Option<rules::Url>,
    /// Not checked: the layout uses it only when it looks like a colour.
    primary_color: Option<Value>,
    support_email: Option<Value>,
}

/// A member read as text when it is a string (trimmed, blank as not set), whatever its rule.
fn loose_text(v: &Option<Value>) -> Option<String> {
    v.as_ref().and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

fn trimmed<const MAX: usize>(t: &Option<rules::Text<MAX>>) -> Option<String> {
    t.as_ref().and_then(rules::Text::trimmed)
}

fn sealed<const MAX: usize>(t: &Option<rules::Text<MAX>>) -> Option<String> {
    t.as_ref().and_then(rules::Text::sealed)
}

/// The `payments` settings category as the payment flows read it (D4, D5.4, D11.2, D12.3,
/// D14.1). Members that break their rule read as absent (the settings route checked them on the
/// way in); provider names stay names here, routing resolves them.
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
    /// `callbackUrl`: the return address of a checkout that names none (D18.45).
    pub callback_url: Option<String>,
}

/// An account's own credentials for one provider: the secret as stored (sealed) and an optional
/// base URL of its own.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OwnProvider {
    pub sealed_secret: Option<String>,
    pub base_url: Option<String>,
    /// `webhookHash` and `callbackToken` as stored (sealed), D18.2–3.
    pub sealed_webhook_hash: Option<String>,
    pub sealed_callback_token: Option<String>,
    pub api_id: Option<String>,
    pub pos_sales_id: Option<String>,
    pub prepaid_deposit_id: Option<String>,
}

fn url_text(u: &Option<rules::Url>) -> Option<String> {
    u.as_ref().and_then(|u| u.0.raw()).map(str::to_string)
}

impl PaymentsSettings {
    /// Reads the stored category object (`{}` when the account has none).
    pub fn from_value(v: &Value) -> Self {
        let c: PaymentsConfig = read::read(v).0;
        let name = |p: &Option<rules::Provider>| p.as_ref().map(|p| p.0.clone());
        PaymentsSettings {
            use_shared_defaults: c.use_shared_defaults.is_none_or(|f| f.0),
            channel_providers: c
                .channels
                .map(|ch| ch.0.into_iter().filter_map(|(channel, cfg)| Some((channel, name(&cfg.provider)?))).collect())
                .unwrap_or_default(),
            default_provider: name(&c.default_provider),
            fallback_provider: name(&c.fallback_provider),
            payout_provider: name(&c.payout_provider),
            own: c
                .providers
                .map(|p| {
                    p.0.into_iter()
                        .map(|(name, cfg)| {
                            let own = OwnProvider {
                                sealed_secret: sealed(&cfg.secret_key),
                                base_url: url_text(&cfg.base_url),
                                sealed_webhook_hash: sealed(&cfg.webhook_hash),
                                sealed_callback_token: cfg.callback_token.as_ref().and_then(|t| t.0.clone()),
                                api_id: trimmed(&cfg.api_id),
                                pos_sales_id: trimmed(&cfg.pos_sales_id),
                                prepaid_deposit_id: trimmed(&cfg.prepaid_deposit_id),
                            };
                            (name, own)
                        })
                        .collect()
                })
                .unwrap_or_default(),
            fee_percent: c.fee_percent.map(|n| n.0),
            fee_fixed: c.fee_fixed.and_then(|g| g.0),
            fee_bearer: c.fee_bearer.map(|b| b.0),
            callback_url: url_text(&c.callback_url),
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
        let c: BrandingConfig = read::read(v).0;
        BrandingSettings {
            platform_name: trimmed(&c.platform_name),
            logo_url: c.logo_url.and_then(|u| u.0.trimmed()),
            primary_color: loose_text(&c.primary_color),
            support_email: loose_text(&c.support_email),
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
        let c: UssdConfig = read::read(v).0;
        UssdSettings {
            enabled: c.enabled.is_some_and(|f| f.0),
            token_sealed: c.callback_token.and_then(|t| t.0),
            service_code: c.service_code.and_then(|s| s.0.trimmed()),
            campaign_id: trimmed(&c.campaign_id),
            provider: c.provider.and_then(|p| ProviderId::parse(&p.0)),
            max_votes: c.max_votes.map_or(1000, |n| n.0),
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

/// Which wire the account's SMS go over (D18.4): its own HTTP gateway (D13.3, the default) or
/// Africa's Talking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SmsProvider {
    #[default]
    Http,
    AfricasTalking,
}

impl SmsProvider {
    /// The values of `notifications.sms.provider`.
    pub const NAMES: [&'static str; 2] = ["http", "africastalking"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "http" => Some(SmsProvider::Http),
            "africastalking" => Some(SmsProvider::AfricasTalking),
            _ => None,
        }
    }
}

/// `notifications.sms`: the account's SMS wire, its gateway and the sender its messages carry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SmsSettings {
    /// `http` unless `africastalking` is set.
    pub provider: SmsProvider,
    /// Africa's Talking's application username.
    pub username: Option<String>,
    /// The gateway's base URL; Africa's Talking has a default, the HTTP gateway none.
    pub base_url: Option<String>,
    /// The sealed key (`notifications.config.sms.apiKey`).
    pub api_key_sealed: Option<String>,
    pub sender_id: Option<String>,
}

impl NotificationsSettings {
    /// The typed view of a stored `notifications` object (`{}` when never written).
    pub fn from_value(v: &Value) -> Self {
        let c: NotificationsConfig = read::read(v).0;
        let email = c.email.and_then(|e| {
            Some(SmtpSettings {
                host: trimmed(&e.smtp_host)?,
                port: e.smtp_port.map_or(25, |p| p.0),
                username: trimmed(&e.username),
                password_sealed: sealed(&e.password),
                from_address: e.from_address.and_then(|a| a.0.trimmed()),
                from_name: trimmed(&e.from_name),
                tls: e.smtp_tls.unwrap_or_default(),
            })
        });
        let sms = c.sms.map_or_else(SmsSettings::default, |s| SmsSettings {
            provider: s.provider.unwrap_or_default(),
            username: trimmed(&s.username),
            base_url: s.base_url.and_then(|u| u.0.trimmed()),
            api_key_sealed: sealed(&s.api_key),
            sender_id: trimmed(&s.sender_id),
        });
        let organizer_email = c.organizer_email.and_then(|a| a.0.raw().map(str::to_string)).filter(|s| !s.is_empty());
        NotificationsSettings { organizer_email, email, sms }
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
        let c: OperationsConfig = read::read(v).0;
        let modules = c.modules.unwrap_or_default().0;
        OperationsSettings {
            withdrawal_approval_above: c.withdrawal_approval_above.and_then(|t| t.0),
            modules: MODULES.map(|m| (m, modules.get(m).is_none_or(|on| on.0))),
        }
    }
}

/// Validates the known keys of a category's (merged) config (D4.2). Unknown keys are kept.
pub fn validate(category: &str, config: &Value) -> Result<(), DomainError> {
    super::check::free_object("config", config)?;
    if !config.is_object() {
        return Err(DomainError::field("config", "must be an object"));
    }
    let broken = match category {
        "payments" => {
            let (c, mut broken) = read::read::<PaymentsConfig>(config);
            let (default, fallback) = (c.default_provider.map(|p| p.0), c.fallback_provider.map(|p| p.0));
            if default.is_some() && default == fallback {
                // Reported after the rules of the provider members, before the fees'.
                let members = read::members::<PaymentsConfig>();
                let rank = |path: &str| {
                    let top = path.split(['.', '[']).next().unwrap_or(path);
                    members.iter().position(|m| *m == top).unwrap_or(members.len())
                };
                let last = rank("payoutProvider");
                let at = broken.iter().take_while(|(path, _)| rank(path) <= last).count();
                broken.insert(at, ("fallbackProvider".into(), "must differ from defaultProvider".into()));
            }
            // The USSD channel's provider must push a prompt without a page (D18.5).
            if let Some(why) = config
                .pointer("/channels/ussd/provider")
                .and_then(Value::as_str)
                .and_then(|p| PROVIDERS.contains(&p).then(|| rules::push_refusal(p)).flatten())
            {
                broken.push(("channels.ussd.provider".into(), why));
            }
            broken
        }
        "notifications" => {
            let (c, mut broken) = read::read::<NotificationsConfig>(config);
            // Africa's Talking names the application in every call: refused at save without it.
            if let Some(sms) = c.sms.filter(|s| s.provider == Some(SmsProvider::AfricasTalking)) {
                if trimmed(&sms.username).is_none() && !broken.iter().any(|(path, _)| path == "sms.username") {
                    broken.push(("sms.username".into(), "is required when sms.provider is africastalking".into()));
                }
            }
            broken
        }
        "operations" => read::read::<OperationsConfig>(config).1,
        "security" => read::read::<SecurityConfig>(config).1,
        "ussd" => read::read::<UssdConfig>(config).1,
        "branding" => read::read::<BrandingConfig>(config).1,
        _ => Vec::new(),
    };
    let mut check = Check::new();
    for (path, message) in broken {
        check.fail(format!("config.{path}"), message);
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
    fn the_sms_provider_is_named_and_africastalking_needs_its_username() {
        let fields = |config: Value| match validate("notifications", &config) {
            Ok(()) => Vec::new(),
            Err(DomainError::Validation(errs)) => errs.into_iter().map(|e| e.field).collect(),
            Err(e) => panic!("{e:?}"),
        };
        assert_eq!(fields(json!({"sms": {"provider": "twilio"}})), ["config.sms.provider"]);
        assert_eq!(fields(json!({"sms": {"provider": "africastalking"}})), ["config.sms.username"]);
        assert_eq!(fields(json!({"sms": {"provider": "africastalking", "username": " "}})), ["config.sms.username"]);
        assert_eq!(fields(json!({"sms": {"provider": "africastalking", "username": 5}})), ["config.sms.username"]);
        assert!(fields(json!({"sms": {"provider": "africastalking", "username": "sandbox"}})).is_empty());
        assert!(fields(json!({"sms": {"provider": "http"}})).is_empty());
        let n =
            NotificationsSettings::from_value(&json!({"sms": {"provider": "africastalking", "username": " akwaaba "}}));
        assert_eq!((n.sms.provider, n.sms.username.as_deref()), (SmsProvider::AfricasTalking, Some("akwaaba")));
        assert_eq!(NotificationsSettings::from_value(&json!({"sms": {}})).sms.provider, SmsProvider::Http);
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

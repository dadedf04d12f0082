//! Settings: embedded defaults (`config/default.toml`) < optional TOML file < environment <
//! flags. Secrets (the master key) are wrapped so they never print in `Debug`.
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use secrecy::SecretString;
use serde::Deserialize;

use crate::domain::settings::SmtpTls;
use crate::providers::payments::ProviderId;

const DEFAULTS: &str = include_str!("../../../config/default.toml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub database_url: String,
    pub log_format: LogFormat,
    pub log_filter: String,
    pub max_body_bytes: usize,
    pub db_max_connections: u32,
    pub security: SecurityConfig,
    pub payments: PaymentsConfig,
    pub workers: WorkersConfig,
    pub notifications: NotificationsConfig,
    pub webhooks: WebhooksConfig,
    pub email: EmailConfig,
    pub providers: ProvidersConfig,
    pub http: HttpConfig,
    pub metrics: MetricsConfig,
    pub redis: RedisConfig,
    #[serde(skip)]
    pub master_key: Option<SecretString>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityConfig {
    pub clock_tolerance_ms: i64,
    pub rate_limit_per_account: u32,
    pub rate_limit_per_account_burst: u32,
    pub rate_limit_per_ip: u32,
    pub rate_limit_per_ip_burst: u32,
    pub auth_failure_limit: u32,
    pub auth_failure_window_secs: u64,
    pub auth_block_secs: u64,
    pub replay_capacity: usize,
    pub trust_forwarded_for: bool,
    pub auth_cache_refresh_ms: u64,
    pub allow_private_endpoints: bool,
    /// A PEM bundle of certificates trusted besides the built-in roots (SMTP TLS, D17.7);
    /// empty: none. Env TESSERA_EXTRA_CA_FILE.
    pub extra_ca_file: String,
}

/// `[http]`: connection limits of the listener (D16.21).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// A request head must arrive whole within this long, else the connection is closed.
    pub header_read_timeout_ms: u64,
    /// A connection that moves no byte for this long is closed.
    pub idle_timeout_ms: u64,
    /// Connections served at once; further clients wait in the kernel's accept queue.
    pub max_connections: usize,
    /// Tessera as the world reaches it (`https://pay.example.com`), for the callback and return
    /// URLs a provider is given (D18.3, D18.45). Empty: unknown (provider_c is then not
    /// configured). Env TESSERA_PUBLIC_URL.
    #[serde(default)]
    pub public_url: String,
}

/// Why `serve` will not start beside another instance (D17.3): the process exits 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartRefused(pub String);

/// `[redis]`: the shared replay store and counters of several instances (D17.1).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    /// Empty: in memory. Secret (it may carry a password). Env REDIS_URL.
    pub url: SecretString,
    pub key_prefix: String,
    pub timeout_ms: u64,
    pub connections: usize,
}

impl RedisConfig {
    /// Whether instances share their guards through Redis.
    pub fn enabled(&self) -> bool {
        use secrecy::ExposeSecret as _;
        !self.url.expose_secret().trim().is_empty()
    }
}

/// `[metrics]`: the Prometheus endpoint (D16.20).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Serve `GET /metrics` at all.
    pub enabled: bool,
    /// Empty: on the main listener. An address (`127.0.0.1:9090`): there only.
    pub listen: String,
}

impl MetricsConfig {
    /// The separate address of `/metrics`, when one is configured.
    pub fn own_address(&self) -> anyhow::Result<Option<SocketAddr>> {
        if self.listen.trim().is_empty() {
            return Ok(None);
        }
        self.listen.trim().parse().map(Some).map_err(|e| anyhow::anyhow!("metrics.listen {:?}: {e}", self.listen))
    }
}

/// `[payments]`: holds, polling, settlement and the platform's default fee (D11.4, D16.3, D16.5).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaymentsConfig {
    pub hold_seconds: u64,
    pub verify_interval_seconds: f64,
    pub settlement_delay_seconds: u64,
    pub fee_percent: f64,
    pub fee_fixed: f64,
}

/// `[workers]` (D11.4, D16.8).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkersConfig {
    pub poll_ms: u64,
    pub lease_seconds: u64,
    pub enabled: bool,
}

impl WorkersConfig {
    /// The lease of a claim, milliseconds (at least a second).
    pub fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease_seconds.saturating_mul(1000)).unwrap_or(30_000).max(1_000)
    }
}

/// `[notifications]` (D11.4).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationsConfig {
    pub retry_scale: f64,
}

/// `[webhooks]`: outbound webhook delivery (D17.26).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhooksConfig {
    /// Multiplies the retry schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h).
    pub retry_scale: f64,
    /// How long one delivery may take before it counts as failed, milliseconds.
    pub timeout_ms: u64,
}

/// `[email]`: the platform's SMTP server for accounts without their own (D13.3).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailConfig {
    /// `smtp://…` (STARTTLS required), `smtps://…` (implicit TLS) or `smtp://…?tls=none` (plain,
    /// D17.7); empty: none. Secret (it may carry a password).
    pub smtp_url: SecretString,
    pub from: String,
}

/// `%XX` escapes of a URL's user or password decoded (`+` stays `+`).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex =
            b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The platform's SMTP server as `[email] smtp_url` names it.
#[derive(Clone)]
pub struct SmtpEndpoint {
    pub host: String,
    pub port: u16,
    pub tls: SmtpTls,
    pub credentials: Option<(String, String)>,
}

impl EmailConfig {
    /// The parsed `smtp_url`; `None` when empty. The error never shows the URL (it may hold a
    /// password).
    pub fn endpoint(&self) -> Result<Option<SmtpEndpoint>, String> {
        use secrecy::ExposeSecret as _;
        let url = self.smtp_url.expose_secret().trim();
        if url.is_empty() {
            return Ok(None);
        }
        let parsed =
            url::Url::parse(url).map_err(|_| "the platform's [email] smtp_url is not a valid URL".to_string())?;
        let mut tls = match parsed.scheme() {
            "smtp" => SmtpTls::StartTls,
            "smtps" => SmtpTls::Implicit,
            _ => return Err("the platform's [email] smtp_url must be smtp:// (STARTTLS) or smtps:// (TLS)".into()),
        };
        for (k, v) in parsed.query_pairs() {
            match (k.as_ref(), v.as_ref(), tls) {
                ("tls", "none", SmtpTls::StartTls | SmtpTls::None) => tls = SmtpTls::None,
                _ => {
                    return Err("the platform's [email] smtp_url takes one query parameter, tls=none, on smtp://".into())
                }
            }
        }
        let host = parsed.host_str().unwrap_or_default().trim_matches(['[', ']']).to_string();
        if host.is_empty() {
            return Err("the platform's [email] smtp_url has no host".into());
        }
        let credentials = (!parsed.username().is_empty())
            .then(|| (percent_decode(parsed.username()), percent_decode(parsed.password().unwrap_or_default())));
        let port = parsed.port().unwrap_or(if tls == SmtpTls::Implicit { 465 } else { 25 });
        Ok(Some(SmtpEndpoint { host, port, tls, credentials }))
    }
}

/// `[providers]`: the platform's shared provider credentials (D11.2): `timeout_ms` and one
/// `[providers.<name>]` table per provider of the provider list ([`ProviderId`]).
#[derive(Debug, Clone)]
pub struct ProvidersConfig {
    pub timeout_ms: u64,
    /// By provider name; every provider has an entry (empty when not configured).
    pub by_name: BTreeMap<String, ProviderConfig>,
}

/// The keys of `[providers]`: `timeout_ms`, then the provider names.
const PROVIDERS_FIELDS: [&str; ProviderId::COUNT + 1] = {
    let mut fields = ["timeout_ms"; ProviderId::COUNT + 1];
    let mut i = 0;
    while i < ProviderId::COUNT {
        fields[i + 1] = ProviderId::NAMES[i];
        i += 1;
    }
    fields
};

/// As a struct with one field per provider would read: an unknown key is refused with the list of
/// known ones, and a provider the file leaves out gets an empty entry.
impl<'de> Deserialize<'de> for ProvidersConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = ProvidersConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("struct ProvidersConfig")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<ProvidersConfig, A::Error> {
                let mut timeout_ms = None;
                let mut by_name = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "timeout_ms" {
                        timeout_ms = Some(map.next_value()?);
                    } else if ProviderId::parse(&key).is_some() {
                        by_name.insert(key, map.next_value()?);
                    } else {
                        return Err(serde::de::Error::unknown_field(&key, &PROVIDERS_FIELDS));
                    }
                }
                let timeout_ms = timeout_ms.ok_or_else(|| serde::de::Error::missing_field("timeout_ms"))?;
                for name in ProviderId::NAMES {
                    by_name.entry(name.to_string()).or_insert_with(ProviderConfig::default);
                }
                Ok(ProvidersConfig { timeout_ms, by_name })
            }
        }
        d.deserialize_struct("ProvidersConfig", &PROVIDERS_FIELDS, Fields)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Empty: the provider's own API (Hubtel's five hosts).
    pub base_url: String,
    /// Empty: not configured.
    pub secret_key: SecretString,
    /// Flutterwave's webhook secret hash (D18.45, `[providers.provider_b] webhook_hash`).
    #[serde(default)]
    pub webhook_hash: SecretString,
    /// Hubtel's API id, POS sales and prepaid deposit accounts and callback token (D18.45).
    #[serde(default)]
    pub api_id: String,
    #[serde(default)]
    pub pos_sales_id: String,
    #[serde(default)]
    pub prepaid_deposit_id: String,
    #[serde(default)]
    pub callback_token: SecretString,
}

impl ProvidersConfig {
    /// The shared credentials of a provider by its identifier (`provider_a` …).
    pub fn get(&self, name: &str) -> Option<&ProviderConfig> {
        self.by_name.get(name)
    }

    /// The same, to change (tests set the shared credentials this way).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut ProviderConfig> {
        self.by_name.get_mut(name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// Values given as flags; `None` leaves the lower layers in force.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub config_file: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
    pub listen: Option<SocketAddr>,
}

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn env_parse<T: std::str::FromStr>(name: &str) -> anyhow::Result<Option<T>>
where
    T::Err: std::fmt::Display,
{
    match env(name) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|e| anyhow::anyhow!("{name}={v:?}: {e}")),
    }
}

/// `1`/`true`/`on` or `0`/`false`/`off`.
fn env_flag(name: &str, v: &str) -> anyhow::Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        other => anyhow::bail!("{name} must be 1 or 0, not {other:?}"),
    }
}

impl Config {
    /// The defaults alone, as `tessera serve` sees them with nothing set.
    pub fn defaults() -> Self {
        // The embedded file is part of the binary and checked by a unit test.
        toml::from_str(DEFAULTS).unwrap_or_else(|e| panic!("embedded config/default.toml is invalid: {e}"))
    }

    /// Builds the effective configuration from every layer.
    pub fn load(over: &Overrides) -> anyhow::Result<Self> {
        let mut table: toml::Table = toml::from_str(DEFAULTS).context("embedded defaults")?;
        let file = over.config_file.clone().or_else(|| env("TESSERA_CONFIG").map(PathBuf::from));
        if let Some(path) = file {
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            let user: toml::Table = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
            merge(&mut table, user);
        }
        let mut cfg: Config = table.try_into().context("configuration")?;

        if let Some(v) = env_parse("TESSERA_LISTEN")? {
            cfg.listen = v;
        }
        if let Some(v) = env("TESSERA_DATA_DIR") {
            cfg.data_dir = v.into();
        }
        if let Some(v) = env("DATABASE_URL").or_else(|| env("TESSERA_DATABASE_URL")) {
            cfg.database_url = v;
        }
        if let Some(v) = env("TESSERA_LOG_FORMAT") {
            cfg.log_format = match v.as_str() {
                "json" => LogFormat::Json,
                "text" => LogFormat::Text,
                other => anyhow::bail!("TESSERA_LOG_FORMAT must be text or json, not {other:?}"),
            };
        }
        if let Some(v) = env("TESSERA_LOG") {
            cfg.log_filter = v;
        }
        let s = &mut cfg.security;
        if let Some(v) = env_parse("TESSERA_RATE_LIMIT_PER_ACCOUNT")? {
            s.rate_limit_per_account = v;
        }
        if let Some(v) = env_parse("TESSERA_RATE_LIMIT_PER_IP")? {
            s.rate_limit_per_ip = v;
        }
        if let Some(v) = env_parse("TESSERA_AUTH_FAILURE_LIMIT")? {
            s.auth_failure_limit = v;
        }
        if let Some(v) = env("TESSERA_ALLOW_PRIVATE_ENDPOINTS") {
            s.allow_private_endpoints = env_flag("TESSERA_ALLOW_PRIVATE_ENDPOINTS", &v)?;
        }
        if let Some(v) = env("TESSERA_EXTRA_CA_FILE") {
            s.extra_ca_file = v;
        }
        let p = &mut cfg.payments;
        if let Some(v) = env_parse("TESSERA_PAYMENT_HOLD_SECONDS")? {
            p.hold_seconds = v;
        }
        if let Some(v) = env_parse("TESSERA_PAYMENT_VERIFY_INTERVAL_SECONDS")? {
            p.verify_interval_seconds = v;
        }
        if let Some(v) = env_parse("TESSERA_PAYMENT_SETTLEMENT_DELAY_SECONDS")? {
            p.settlement_delay_seconds = v;
        }
        if let Some(v) = env_parse("TESSERA_WORKER_POLL_MS")? {
            cfg.workers.poll_ms = v;
        }
        if let Some(v) = env("TESSERA_WORKERS_ENABLED") {
            cfg.workers.enabled = env_flag("TESSERA_WORKERS_ENABLED", &v)?;
        }
        if let Some(v) = env("TESSERA_WORKERS") {
            cfg.workers.enabled = env_flag("TESSERA_WORKERS", &v)?;
        }
        if let Some(v) = env("REDIS_URL") {
            cfg.redis.url = SecretString::from(v);
        }
        if let Some(v) = env("TESSERA_REDIS_KEY_PREFIX") {
            cfg.redis.key_prefix = v;
        }
        if cfg.redis.timeout_ms == 0 || cfg.redis.connections == 0 {
            anyhow::bail!("redis.timeout_ms and redis.connections must be > 0");
        }
        if let Some(v) = env_parse("TESSERA_NOTIFICATION_RETRY_SCALE")? {
            cfg.notifications.retry_scale = v;
        }
        if let Some(v) = env_parse("TESSERA_WEBHOOKS_RETRY_SCALE")? {
            cfg.webhooks.retry_scale = v;
        }
        if let Some(v) = env_parse("TESSERA_WEBHOOKS_TIMEOUT_MS")? {
            cfg.webhooks.timeout_ms = v;
        }
        if let Some(v) = env("TESSERA_SMTP_URL") {
            cfg.email.smtp_url = SecretString::from(v);
        }
        if let Some(v) = env("TESSERA_EMAIL_FROM") {
            cfg.email.from = v;
        }
        for (name, provider) in cfg.providers.by_name.iter_mut() {
            // `provider_a` → TESSERA_PROVIDER_A_BASE_URL, TESSERA_PROVIDER_A_SECRET_KEY.
            let name = name.to_ascii_uppercase();
            if let Some(v) = env(&format!("TESSERA_{name}_BASE_URL")) {
                provider.base_url = v;
            }
            if let Some(v) = env(&format!("TESSERA_{name}_SECRET_KEY")) {
                provider.secret_key = SecretString::from(v);
            }
            // D18.45: TESSERA_PROVIDER_B_WEBHOOK_HASH, TESSERA_PROVIDER_C_API_ID, …
            if let Some(v) = env(&format!("TESSERA_{name}_WEBHOOK_HASH")) {
                provider.webhook_hash = SecretString::from(v);
            }
            if let Some(v) = env(&format!("TESSERA_{name}_API_ID")) {
                provider.api_id = v;
            }
            if let Some(v) = env(&format!("TESSERA_{name}_POS_SALES_ID")) {
                provider.pos_sales_id = v;
            }
            if let Some(v) = env(&format!("TESSERA_{name}_PREPAID_DEPOSIT_ID")) {
                provider.prepaid_deposit_id = v;
            }
            if let Some(v) = env(&format!("TESSERA_{name}_CALLBACK_TOKEN")) {
                provider.callback_token = SecretString::from(v);
            }
        }
        let h = &mut cfg.http;
        if let Some(v) = env("TESSERA_PUBLIC_URL") {
            h.public_url = v;
        }
        if let Some(v) = env_parse("TESSERA_HTTP_HEADER_READ_TIMEOUT_MS")? {
            h.header_read_timeout_ms = v;
        }
        if let Some(v) = env_parse("TESSERA_HTTP_IDLE_TIMEOUT_MS")? {
            h.idle_timeout_ms = v;
        }
        if let Some(v) = env_parse("TESSERA_HTTP_MAX_CONNECTIONS")? {
            h.max_connections = v;
        }
        if h.header_read_timeout_ms == 0 || h.idle_timeout_ms == 0 || h.max_connections == 0 {
            anyhow::bail!("http.header_read_timeout_ms, http.idle_timeout_ms and http.max_connections must be > 0");
        }
        if let Some(v) = env("TESSERA_METRICS_ENABLED") {
            cfg.metrics.enabled = env_flag("TESSERA_METRICS_ENABLED", &v)?;
        }
        if let Ok(v) = std::env::var("TESSERA_METRICS_LISTEN") {
            cfg.metrics.listen = v;
        }
        cfg.metrics.own_address()?;
        let smtp = cfg.email.endpoint().map_err(|e| anyhow::anyhow!(e))?;
        if smtp.is_some_and(|e| e.tls == SmtpTls::None) && !cfg.security.allow_private_endpoints {
            anyhow::bail!(
                "email.smtp_url ?tls=none (plain SMTP) needs security.allow_private_endpoints; use smtp:// (STARTTLS) or smtps://"
            );
        }
        if !cfg.security.extra_ca_file.is_empty() {
            let path = &cfg.security.extra_ca_file;
            let pem = std::fs::read_to_string(path).with_context(|| format!("security.extra_ca_file {path}"))?;
            if !pem.contains("-----BEGIN CERTIFICATE-----") {
                anyhow::bail!("security.extra_ca_file {path} holds no PEM certificate");
            }
        }
        if !(cfg.payments.verify_interval_seconds.is_finite() && cfg.payments.verify_interval_seconds > 0.0) {
            anyhow::bail!("payments.verify_interval_seconds must be a positive number");
        }
        if !(cfg.webhooks.retry_scale.is_finite() && cfg.webhooks.retry_scale >= 0.0) {
            anyhow::bail!("webhooks.retry_scale must be a number ≥ 0");
        }
        if cfg.webhooks.timeout_ms == 0 {
            anyhow::bail!("webhooks.timeout_ms must be > 0");
        }
        if !(cfg.notifications.retry_scale.is_finite() && cfg.notifications.retry_scale >= 0.0) {
            anyhow::bail!("notifications.retry_scale must be a number ≥ 0");
        }
        cfg.master_key = env("TESSERA_MASTER_KEY").map(SecretString::from);

        if let Some(v) = &over.data_dir {
            cfg.data_dir = v.clone();
        }
        if let Some(v) = &over.database_url {
            cfg.database_url = v.clone();
        }
        if let Some(v) = over.listen {
            cfg.listen = v;
        }
        Ok(cfg)
    }

    /// The database to open: the configured URL, or SQLite in the data directory.
    pub fn effective_database_url(&self) -> String {
        if self.database_url.is_empty() {
            format!("sqlite://{}?mode=rwc", self.sqlite_path().display())
        } else {
            self.database_url.clone()
        }
    }

    pub fn sqlite_path(&self) -> PathBuf {
        self.data_dir.join("tessera.db")
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_defaults_parse_and_match_the_spec() {
        let c = Config::defaults();
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.max_body_bytes, 1 << 20);
        assert_eq!(c.security.clock_tolerance_ms, 300_000);
        assert_eq!(c.security.rate_limit_per_account, 1200);
        assert_eq!(c.security.rate_limit_per_ip, 600);
        assert_eq!(c.http.header_read_timeout_ms, 30_000);
        assert_eq!(c.http.idle_timeout_ms, 60_000);
        assert!(c.http.max_connections >= 10_000);
        assert!(c.metrics.enabled);
        assert_eq!(c.metrics.own_address().ok(), Some(None));
        assert_eq!(c.providers.by_name.keys().map(String::as_str).collect::<Vec<_>>(), ProviderId::NAMES);
    }

    #[test]
    fn smtp_urls_name_their_tls() {
        let at = |u: &str| {
            EmailConfig { smtp_url: SecretString::from(u.to_string()), from: String::new() }
                .endpoint()
                .map(|e| e.map(|e| (e.host, e.port, e.tls, e.credentials)))
        };
        assert_eq!(at("").ok(), Some(None));
        assert_eq!(
            at("smtp://mail.example.com").ok(),
            Some(Some(("mail.example.com".into(), 25, SmtpTls::StartTls, None)))
        );
        assert_eq!(
            at("smtps://u%40x:p%3Aw+@mail.example.com").ok(),
            Some(Some(("mail.example.com".into(), 465, SmtpTls::Implicit, Some(("u@x".into(), "p:w+".into())))))
        );
        assert_eq!(
            at("smtp://127.0.0.1:2525?tls=none").ok(),
            Some(Some(("127.0.0.1".into(), 2525, SmtpTls::None, None)))
        );
        for bad in ["smtps://h?tls=none", "smtp://h?tls=maybe", "http://h", "smtp://"] {
            assert!(at(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn provider_tables_are_the_provider_list() {
        let c: ProvidersConfig =
            toml::from_str("timeout_ms = 5\n[provider_a]\nbase_url = \"u\"\nsecret_key = \"\"\n").expect("providers");
        assert_eq!(c.get("provider_a").map(|p| p.base_url.as_str()), Some("u"));
        assert_eq!(c.get("provider_b").map(|p| p.base_url.as_str()), Some(""));
        let e =
            toml::from_str::<ProvidersConfig>("timeout_ms = 5\n[provider_z]\n").map(|_| ()).map_err(|e| e.to_string());
        assert!(e.is_err_and(|e| e.contains("unknown field `provider_z`, expected one of `timeout_ms`, `provider_a`")));
    }
}

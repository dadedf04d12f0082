//! The sandbox (D11.3, D18.6): an in-memory stand-in for every peer Tessera talks to, served on
//! loopback for demos, integration scripts and tests. It is a product, not a mock: it speaks the
//! real wires — Paystack's API under `/provider_a` ([`api`]), Flutterwave v3 under `/provider_b`
//! ([`flutterwave`]), Hubtel under `/provider_c` ([`hubtel`]: its five hosts' paths under one
//! base URL), the SMS gateway under `/sms`, SMTP on its own listener — serves a checkout page,
//! signs its callbacks with the secret each charge was created with (D6.1's
//! `x-<provider>-signature`: the sandbox knows no account's Flutterwave hash, D18.45), and has a
//! control API under `/sandbox` to settle charges, transfers and refunds ([`refunds`]), cause
//! outages and faults, and read what it received. It also plays the USSD gateways and the handset
//! in front of Tessera (D17.23, [`ussd`]), and receives Tessera's own outbound webhooks in a
//! verifying inbox (D17.26, [`inbox`]).
//!
//! One state serves every wire: charges, transfers and refunds are kept as each wire names them
//! (Hubtel's references are letters and digits, D18.45), and the control API, the checkout page
//! and the in-process handle find them by Tessera's reference too (`tsr_x…` ↔ `tsrx…`, a UUID ↔
//! its 32 hex digits; a refund also by the provider's id of it, which is how a Flutterwave refund
//! is known: its wire carries no id of Tessera's). Faults and outages apply to all three.
//!
//! It keeps nothing on disk and delivers callbacks to loopback addresses only: it is for demos
//! and tests, never for money.
mod api;
mod checkout;
mod control;
mod flutterwave;
mod hubtel;
mod inbox;
mod refunds;
mod sms;
mod smtp;
mod ussd;

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use anyhow::Context as _;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use rand::Rng as _;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::providers::outbound::FilteringResolver;
use crate::providers::payments::wire::sign_hmac_hex;
use crate::providers::payments::ProviderId;

/// Where the sandbox listens and where it sends callbacks.
#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// HTTP listener (provider APIs, checkout, SMS gateway, control API).
    pub listen: SocketAddr,
    /// SMTP sink listener; none when `None`.
    pub smtp_listen: Option<SocketAddr>,
    /// Tessera's base URL: callbacks go to `<notify_url>/api/white-label/webhooks/<provider>`.
    pub notify_url: Option<String>,
}

/// Starts sandboxes.
pub struct Sandbox;

impl Sandbox {
    /// Binds the listeners and serves until [`SandboxHandle::stop`] or the handle is dropped.
    pub async fn start(opts: SandboxOptions) -> anyhow::Result<SandboxHandle> {
        let listener = tokio::net::TcpListener::bind(opts.listen)
            .await
            .with_context(|| format!("sandbox: binding {}", opts.listen))?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() {
            tracing::warn!(%addr, "the sandbox is listening beyond loopback: anyone who reaches it can settle charges");
        }
        let smtp = match opts.smtp_listen {
            Some(a) => {
                Some(tokio::net::TcpListener::bind(a).await.with_context(|| format!("sandbox: binding SMTP on {a}"))?)
            }
            None => None,
        };
        let smtp_addr = match &smtp {
            Some(l) => Some(l.local_addr()?),
            None => None,
        };
        let stop = CancellationToken::new();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(FilteringResolver { keep: is_loopback }))
            .build()?;
        let shared = Arc::new(Shared {
            base_url: format!("http://{addr}"),
            notify_url: RwLock::new(opts.notify_url),
            db: Mutex::new(Db::default()),
            http,
            stop: stop.clone(),
            smtp_tls: smtp::SinkTls::generate().context("sandbox: the SMTP sink's certificate")?,
        });
        let app = router(shared.clone());
        let token = stop.clone();
        tokio::spawn(async move {
            let served = axum::serve(listener, app).with_graceful_shutdown(token.cancelled_owned()).await;
            if let Err(e) = served {
                tracing::error!(error = %e, "sandbox HTTP listener failed");
            }
        });
        if let Some(l) = smtp {
            tokio::spawn(smtp::serve(l, shared.clone(), false));
        }
        Ok(SandboxHandle { shared, smtp_addr })
    }
}

/// A running sandbox; dropping it stops it.
pub struct SandboxHandle {
    shared: Arc<Shared>,
    smtp_addr: Option<SocketAddr>,
}

impl SandboxHandle {
    /// `http://<addr>`.
    pub fn base_url(&self) -> &str {
        &self.shared.base_url
    }

    /// A provider's base URL: `http://<addr>/<provider>`, e.g. for `provider_a`.
    pub fn provider_url(&self, provider: &str) -> String {
        format!("{}/{provider}", self.shared.base_url)
    }

    /// The SMS gateway's base URL (`http://<addr>/sms`).
    pub fn sms_url(&self) -> String {
        format!("{}/sms", self.shared.base_url)
    }

    pub fn smtp_addr(&self) -> Option<SocketAddr> {
        self.smtp_addr
    }

    /// The PEM of the CA that issued the SMTP sink's certificate (what a client trusts).
    pub fn ca_pem(&self) -> &str {
        &self.shared.smtp_tls.ca_pem
    }

    /// Writes [`Self::ca_pem`] to `<dir>/sandbox-ca.pem` (D17.44) and returns that path.
    pub fn write_ca_pem(&self, dir: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("sandbox-ca.pem");
        std::fs::write(&path, self.ca_pem()).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// Opens a second SMTP listener that speaks implicit TLS (as on port 465) with the same
    /// certificate; returns its address.
    pub async fn listen_smtps(&self, addr: SocketAddr) -> anyhow::Result<SocketAddr> {
        let l =
            tokio::net::TcpListener::bind(addr).await.with_context(|| format!("sandbox: binding SMTPS on {addr}"))?;
        let bound = l.local_addr()?;
        tokio::spawn(smtp::serve(l, self.shared.clone(), true));
        Ok(bound)
    }

    /// Where callbacks go from now on (Tessera's base URL).
    pub fn set_notify_url(&self, url: impl Into<String>) {
        if let Ok(mut n) = self.shared.notify_url.write() {
            *n = Some(url.into());
        }
    }

    /// A charge's record, as `GET /sandbox/charges/:reference` shows it.
    pub fn charge(&self, reference: &str) -> Option<Value> {
        self.shared.db().charge(reference).map(|c| c.record(&self.shared.base_url))
    }

    /// A transfer's record, as `GET /sandbox/transfers/:reference` shows it.
    pub fn transfer(&self, reference: &str) -> Option<Value> {
        let db = self.shared.db();
        db.transfers.get(&db.transfer_key(reference)?).map(Transfer::record)
    }

    /// Every transfer's record of one provider, newest first.
    pub fn transfers_of(&self, provider: &str) -> Vec<Value> {
        let db = self.shared.db();
        let mut all: Vec<&Transfer> = db.transfers.values().filter(|t| t.provider.as_str() == provider).collect();
        all.sort_by_key(|t| std::cmp::Reverse(t.id));
        all.into_iter().map(Transfer::record).collect()
    }

    /// A refund's record by Tessera's refund id (or the provider's id of it), as
    /// `GET /sandbox/refunds/:id` shows it.
    pub fn refund(&self, id: &str) -> Option<Value> {
        let db = self.shared.db();
        db.refunds.get(&db.refund_key(id)?).map(refunds::Refund::record)
    }

    /// Every refund's record, newest first, as `GET /sandbox/refunds` shows them.
    pub fn refunds(&self) -> Vec<Value> {
        let db = self.shared.db();
        let mut all: Vec<&refunds::Refund> = db.refunds.values().collect();
        all.sort_by_key(|r| std::cmp::Reverse(r.seq));
        all.into_iter().map(refunds::Refund::record).collect()
    }

    /// The callbacks the sandbox sent Tessera (`GET /sandbox/webhooks`), newest first.
    pub fn callbacks(&self) -> Vec<Value> {
        newest_first(&self.shared.db().callbacks)
    }

    /// The webhook inbox's URL (`POST` deliveries here; `GET` lists them).
    pub fn inbox_url(&self) -> String {
        format!("{}/sandbox/webhooks/inbox", self.shared.base_url)
    }

    /// Registers a `whsec_…` secret the inbox verifies deliveries with, as
    /// `POST /sandbox/webhooks/inbox/secrets` does.
    pub fn add_inbox_secret(&self, secret: &str) -> anyhow::Result<()> {
        inbox::register(&self.shared, secret).map(|_| ()).map_err(anyhow::Error::msg)
    }

    /// Deliveries the inbox received, newest first, as `GET /sandbox/webhooks/inbox` shows them.
    pub fn inbox(&self) -> Vec<Value> {
        newest_first(&self.shared.db().inbox)
    }

    /// SMS messages received, newest first.
    pub fn sms(&self) -> Vec<Value> {
        newest_first(&self.shared.db().sms)
    }

    /// E-mails received over SMTP, newest first.
    pub fn mail(&self) -> Vec<Value> {
        newest_first(&self.shared.db().mail)
    }

    /// Charge records whose phone ends with `digits`, newest first, as
    /// `GET /sandbox/charges?phone=` shows them.
    pub fn charges_for_phone(&self, digits: &str) -> Vec<Value> {
        self.shared.charges_for_phone(digits)
    }

    /// A USSD session's record, as `GET /sandbox/ussd/sessions/:id` shows it.
    pub fn ussd_session(&self, id: &str) -> Option<Value> {
        ussd::session_record(&self.shared, id)
    }

    /// The faults in force, as `GET /sandbox/faults` shows them.
    pub fn faults(&self) -> Faults {
        self.shared.db().faults
    }

    /// Replaces the faults in force (what `POST /sandbox/faults` does field by field).
    pub fn set_faults(&self, faults: Faults) {
        self.shared.db().faults = faults.clamped();
    }

    /// Puts a provider (or `sms`) down or back up, as the control API does.
    pub fn set_outage(&self, service: &str, down: bool) {
        self.shared.set_down(service, down);
    }

    /// Stops serving (also done on drop).
    pub fn stop(self) {}
}

impl Drop for SandboxHandle {
    fn drop(&mut self) {
        self.shared.stop.cancel();
    }
}

/// Only loopback peers: the sandbox never sends anything off the machine.
fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v| v.is_loopback()),
    }
}

/// Lists are kept bounded: the oldest entries go first.
const KEEP: usize = 1000;

fn push_bounded(list: &mut Vec<Value>, v: Value) {
    if list.len() >= KEEP {
        list.remove(0);
    }
    list.push(v);
}

fn newest_first(list: &[Value]) -> Vec<Value> {
    list.iter().rev().cloned().collect()
}

pub(crate) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

pub(crate) fn random_token(len: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::thread_rng();
    (0..len).map(|_| CHARS[rng.gen_range(0..CHARS.len())] as char).collect()
}

/// Settlement of a charge or a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Pending,
    Success,
    Failed,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Pending => "pending",
            Outcome::Success => "success",
            Outcome::Failed => "failed",
        }
    }
}

/// How a charge is paid: at the checkout page (a card, by default) or by approving a prompt
/// on a handset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Channel {
    Card,
    MobileMoney,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Card => "card",
            Channel::MobileMoney => "mobile_money",
        }
    }
}

/// Faults the sandbox injects (`/sandbox/faults`): into the callbacks it sends and into the
/// answers of charge-creating calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Faults {
    /// Percent of callbacks recorded as dropped and never sent (0–100). On the wire
    /// `webhookDropPercent`, the control API's published name.
    #[serde(rename = "webhookDropPercent")]
    pub callback_drop_percent: u8,
    /// Percent of callbacks sent twice, the same signed body (0–100); `webhookDuplicatePercent`.
    #[serde(rename = "webhookDuplicatePercent")]
    pub callback_duplicate_percent: u8,
    /// Delay before answering `transaction/initialize`, `/charge` and `/charges` (ms, at most
    /// 60 000); the charge is made before the wait, as a provider slower than its client's
    /// timeout would.
    pub charge_delay_ms: u64,
}

impl Faults {
    /// The longest charge delay the sandbox accepts.
    pub const MAX_DELAY_MS: u64 = 60_000;

    fn clamped(self) -> Faults {
        Faults {
            callback_drop_percent: self.callback_drop_percent.min(100),
            callback_duplicate_percent: self.callback_duplicate_percent.min(100),
            charge_delay_ms: self.charge_delay_ms.min(Self::MAX_DELAY_MS),
        }
    }
}

/// True with probability `percent` / 100.
fn roll(percent: u8) -> bool {
    percent > 0 && rand::thread_rng().gen_range(0..100u8) < percent
}

#[derive(Debug, Clone)]
pub(crate) struct Charge {
    pub id: u64,
    pub provider: ProviderId,
    pub secret: String,
    pub reference: String,
    pub amount: i64,
    pub currency: String,
    pub email: String,
    pub callback_url: Option<String>,
    pub metadata: Value,
    pub access_code: String,
    pub status: Outcome,
    pub paid_at: Option<String>,
    pub created_at: String,
    pub channel: Channel,
    /// The phone of a mobile-money charge, as it came on the wire.
    pub phone: Option<String>,
    /// The network of a mobile-money charge (`mtn`, `vod`, `atl`).
    pub network: Option<String>,
    /// How many charge-creating calls named this reference, refused duplicates included.
    pub prompts: u32,
    /// The customer's name, when the call gave one.
    pub name: Option<String>,
    /// What is paid for, when the call said (Flutterwave's title, Hubtel's description).
    pub description: Option<String>,
    /// Where this charge's callbacks go when its wire names the URL (Hubtel's `callbackUrl`,
    /// `PrimaryCallbackURL`); otherwise `<notify_url>/api/white-label/webhooks/<provider>`.
    pub notify_url: Option<String>,
    /// Where the checkout sends a customer who declines (Hubtel's `cancellationUrl`).
    pub cancel_url: Option<String>,
    /// The paying number (`233…`) once paid: the handset's, or the checkout's.
    pub payer: Option<String>,
}

impl Charge {
    /// A new pending card charge as a charge-creating call asks for it; the call sets what
    /// else it carries (callback URL, mobile-money phone and network). Its id comes with
    /// [`Shared::open_charge`].
    pub fn pending(
        provider: ProviderId,
        secret: String,
        reference: &str,
        amount: i64,
        currency: &str,
        email: &str,
        metadata: Value,
    ) -> Charge {
        Charge {
            id: 0,
            provider,
            secret,
            reference: reference.to_string(),
            amount,
            currency: currency.to_string(),
            email: email.to_string(),
            callback_url: None,
            metadata,
            access_code: match provider {
                // Hubtel's checkoutId is 32 hex digits.
                ProviderId::C => random_hex(32),
                _ => random_token(16),
            },
            status: Outcome::Pending,
            paid_at: None,
            created_at: now_rfc3339(),
            channel: Channel::Card,
            phone: None,
            network: None,
            prompts: 1,
            name: None,
            description: None,
            notify_url: None,
            cancel_url: None,
            payer: None,
        }
    }

    /// What the sandbox charges: 1.95 %, rounded down, as a provider's fee would be.
    pub fn fees(&self) -> i64 {
        match self.status {
            Outcome::Success => self.amount * 195 / 10_000,
            _ => 0,
        }
    }

    /// The provider's id of the charge: a number for Paystack and Flutterwave, Hubtel's
    /// `checkoutId` / `TransactionId` (32 hex digits).
    pub fn wire_id(&self) -> Value {
        match self.provider {
            ProviderId::C => json!(self.access_code),
            _ => json!(self.id),
        }
    }

    pub fn checkout_url(&self, base: &str) -> String {
        format!("{base}/checkout/{}", self.reference)
    }

    /// The control API's view (never the secret).
    pub fn record(&self, base: &str) -> Value {
        json!({
            "id": self.wire_id(),
            "provider": self.provider.as_str(),
            "reference": tessera_form(&self.reference),
            "status": self.status.as_str(),
            "amount": self.amount,
            "currency": self.currency,
            "fees": self.fees(),
            "email": self.email,
            "callbackUrl": self.callback_url,
            "metadata": self.metadata,
            "accessCode": self.access_code,
            "checkoutUrl": self.checkout_url(base),
            "paidAt": self.paid_at,
            "createdAt": self.created_at,
            "channel": self.channel.as_str(),
            "phone": self.phone,
            "network": self.network,
            "prompts": self.prompts,
            "payer": self.payer,
            "wireReference": self.reference,
        })
    }

    /// The callback of a settled charge in its provider's wire.
    pub fn callback(&self) -> Callback {
        let body = match self.provider {
            ProviderId::A => self.paystack_callback(),
            ProviderId::B => flutterwave::charge_callback(self),
            ProviderId::C => hubtel::charge_callback(self),
        };
        Callback::new(self.provider, &self.secret, body, &self.reference, self.notify_url.clone())
    }

    /// The D6 callback body (Paystack's).
    fn paystack_callback(&self) -> Value {
        let event = if self.status == Outcome::Success { "charge.success" } else { "charge.failed" };
        json!({
            "event": event,
            "data": {
                "id": self.wire_id(),
                "reference": self.reference,
                "status": self.status.as_str(),
                "amount": self.amount,
                "currency": self.currency,
                "fees": self.fees(),
                "paid_at": self.paid_at,
                "channel": self.channel.as_str(),
                "customer": {"email": self.email},
            }
        })
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Transfer {
    pub id: u64,
    pub provider: ProviderId,
    pub secret: String,
    pub reference: String,
    pub amount: i64,
    pub currency: String,
    /// The narration sent with the transfer.
    pub reason: String,
    pub recipient: Value,
    pub transfer_code: String,
    pub status: Outcome,
    pub failure_reason: Option<String>,
    pub created_at: String,
    pub completed_at: Option<String>,
    /// Where its callback goes when the wire names the URL (Hubtel's `PrimaryCallbackURL`).
    pub notify_url: Option<String>,
}

impl Transfer {
    /// The provider's id: a number for Paystack and Flutterwave, Hubtel's `TransactionId`.
    pub fn wire_id(&self) -> Value {
        match self.provider {
            ProviderId::C => json!(self.transfer_code),
            _ => json!(self.id),
        }
    }

    pub fn record(&self) -> Value {
        json!({
            "id": self.wire_id(),
            "provider": self.provider.as_str(),
            "reference": tessera_form(&self.reference),
            "status": self.status.as_str(),
            "amount": self.amount,
            "currency": self.currency,
            "reason": self.reason,
            "recipient": self.recipient,
            "transferCode": self.transfer_code,
            "failureReason": self.failure_reason,
            "createdAt": self.created_at,
            "completedAt": self.completed_at,
        })
    }

    /// The callback of a settled transfer in its provider's wire.
    pub fn callback(&self) -> Callback {
        let body = match self.provider {
            ProviderId::A => self.paystack_callback(),
            ProviderId::B => flutterwave::transfer_callback(self),
            ProviderId::C => hubtel::send_callback(&hubtel::Send::of_transfer(self)),
        };
        Callback::new(self.provider, &self.secret, body, &self.reference, self.notify_url.clone())
    }

    fn paystack_callback(&self) -> Value {
        let event = if self.status == Outcome::Success { "transfer.success" } else { "transfer.failed" };
        let mut data = json!({
            "id": self.wire_id(),
            "reference": self.reference,
            "status": self.status.as_str(),
            "amount": self.amount,
            "currency": self.currency,
            "fees": 0,
            "customer": {"email": null},
        });
        if let (Some(reason), Some(d)) = (&self.failure_reason, data.as_object_mut()) {
            d.insert("reason".into(), json!(reason));
        }
        json!({"event": event, "data": data})
    }
}

impl refunds::Refund {
    /// The callback of a settled refund in its wire, naming the refunded charge (here, beside
    /// the charge's and the transfer's, so that the wires need not import each other).
    pub fn callback(&self) -> Callback {
        let failed = self.status == Outcome::Failed;
        let body = match self.provider {
            ProviderId::A => {
                let event = if failed { "refund.failed" } else { "refund.processed" };
                json!({"event": event, "data": self.paystack()})
            }
            ProviderId::B => flutterwave::refund_callback(self),
            ProviderId::C => hubtel::send_callback(&hubtel::Send::of_refund(self)),
        };
        Callback::new(self.provider, &self.secret, body, &self.id, self.notify_url.clone())
    }
}

#[derive(Default)]
pub(crate) struct Db {
    pub charges: HashMap<String, Charge>,
    pub transfers: HashMap<String, Transfer>,
    /// Refunds by Tessera's refund id ([`refunds`]).
    pub refunds: HashMap<String, refunds::Refund>,
    /// Paystack recipient codes → (secret, recipient details).
    pub recipients: HashMap<String, (String, Value)>,
    /// The callbacks sent to Tessera (`GET /sandbox/webhooks`).
    pub callbacks: Vec<Value>,
    pub sms: Vec<Value>,
    pub mail: Vec<Value>,
    /// Outbound webhooks Tessera delivered to the inbox ([`inbox`]).
    pub inbox: Vec<Value>,
    /// The secrets the inbox verifies them with.
    pub inbox_secrets: Vec<String>,
    pub down: HashSet<String>,
    pub faults: Faults,
    pub ussd: ussd::Sessions,
    seq: u64,
}

impl Db {
    pub fn next_id(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The key of the charge `reference` names, in Tessera's form or the wire's (D18.45:
    /// `tsr_x…` is Hubtel's `tsrx…`).
    pub fn charge_key(&self, reference: &str) -> Option<String> {
        aliases(reference).into_iter().find(|k| self.charges.contains_key(k))
    }

    pub fn charge_mut(&mut self, reference: &str) -> Option<&mut Charge> {
        let key = self.charge_key(reference)?;
        self.charges.get_mut(&key)
    }

    pub fn charge(&self, reference: &str) -> Option<&Charge> {
        self.charges.get(&self.charge_key(reference)?)
    }

    /// The key of the transfer `reference` names (a withdrawal id, or Hubtel's without dashes).
    pub fn transfer_key(&self, reference: &str) -> Option<String> {
        aliases(reference).into_iter().find(|k| self.transfers.contains_key(k))
    }

    /// The key of the refund `id` names: Tessera's refund id (Hubtel's without dashes), or the
    /// provider's own id of it (Flutterwave's number).
    pub fn refund_key(&self, id: &str) -> Option<String> {
        aliases(id).into_iter().find(|k| self.refunds.contains_key(k)).or_else(|| {
            self.refunds.iter().find(|(_, r)| r.seq.to_string() == id || r.code == id).map(|(k, _)| k.clone())
        })
    }
}

/// Hubtel's alphabet (D18.45): a reference's letters and digits.
pub(crate) fn alnum(s: &str) -> String {
    s.chars().filter(char::is_ascii_alphanumeric).collect()
}

/// Tessera's form of a reference as a wire may carry it (D18.45): Hubtel's `tsrx…` is
/// `tsr_x…`, 32 hex digits are a UUID with its dashes; anything else is as it is.
pub(crate) fn tessera_form(s: &str) -> String {
    if s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return format!("{}-{}-{}-{}-{}", &s[..8], &s[8..12], &s[12..16], &s[16..20], &s[20..]);
    }
    match s.strip_prefix("tsr") {
        Some(rest) if rest.len() == 26 && rest.bytes().all(|b| b.is_ascii_alphanumeric()) => format!("tsr_{rest}"),
        _ => s.to_string(),
    }
}

/// The keys a reference may be stored under: itself, its wire form, its Tessera form.
fn aliases(s: &str) -> Vec<String> {
    let mut out = vec![s.to_string()];
    for k in [alnum(s), tessera_form(s)] {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

pub(crate) fn random_hex(len: usize) -> String {
    const HEX: &[u8] = b"0123456789abcdef";
    let mut rng = rand::thread_rng();
    (0..len).map(|_| HEX[rng.gen_range(0..HEX.len())] as char).collect()
}

/// A callback to send: its body in its provider's wire, the secret it is signed with, where it
/// goes (the URL its wire named, else Tessera's callback route for the provider).
pub(crate) struct Callback {
    pub provider: ProviderId,
    pub secret: String,
    pub body: Value,
    /// What the delivery log names it by (Tessera's form of its reference).
    pub reference: String,
    pub url: Option<String>,
}

impl Callback {
    pub fn new(provider: ProviderId, secret: &str, body: Value, reference: &str, url: Option<String>) -> Callback {
        Callback { provider, secret: secret.to_string(), body, reference: tessera_form(reference), url }
    }
}

pub(crate) struct Shared {
    pub base_url: String,
    notify_url: RwLock<Option<String>>,
    db: Mutex<Db>,
    http: reqwest::Client,
    stop: CancellationToken,
    /// The SMTP sink's certificate and CA (D17.7).
    smtp_tls: smtp::SinkTls,
}

impl Shared {
    /// The in-memory state; a panic elsewhere never makes it unusable.
    pub fn db(&self) -> MutexGuard<'_, Db> {
        self.db.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn is_down(&self, service: &str) -> bool {
        self.db().down.contains(service)
    }

    pub fn set_down(&self, service: &str, down: bool) {
        let mut db = self.db();
        if down {
            db.down.insert(service.to_string());
        } else {
            db.down.remove(service);
        }
    }

    fn notify_url(&self) -> Option<String> {
        self.notify_url.read().ok().and_then(|n| n.clone())
    }

    /// Waits the faults' `chargeDelayMs` (charge-creating calls call it before answering).
    pub async fn charge_delay(&self) {
        let ms = self.db().faults.charge_delay_ms;
        if ms > 0 {
            tokio::select! {
                _ = self.stop.cancelled() => {}
                _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
            }
        }
    }

    /// Records a new charge under a fresh id, or, when its reference is taken, counts the call
    /// on the charge that has it and answers `None` (the caller refuses the duplicate).
    pub fn open_charge(&self, mut c: Charge) -> Option<Charge> {
        let mut db = self.db();
        if db.charges.contains_key(&c.reference) {
            Self::count_prompt(&mut db, &c.reference);
            return None;
        }
        c.id = db.next_id();
        db.charges.insert(c.reference.clone(), c.clone());
        Some(c)
    }

    /// Counts a charge-creating call for `reference` on its charge (a refused duplicate too).
    pub fn count_prompt(db: &mut Db, reference: &str) {
        if let Some(c) = db.charges.get_mut(reference) {
            c.prompts = c.prompts.saturating_add(1);
        }
    }

    pub fn charges_for_phone(&self, digits: &str) -> Vec<Value> {
        let db = self.db();
        let mut found: Vec<&Charge> =
            db.charges.values().filter(|c| c.phone.as_deref().is_some_and(|p| p.ends_with(digits))).collect();
        found.sort_by_key(|c| std::cmp::Reverse(c.id));
        found.into_iter().map(|c| c.record(&self.base_url)).collect()
    }

    /// Sends a signed callback: the first attempt now, up to 3 more in the background
    /// (0.5 s, 1 s, 2 s later) while the answer is a network error or not a 2xx. Every wire's
    /// body is signed with D6.1's `x-<provider>-signature` under the secret it was made with
    /// (hex HMAC-SHA512 for provider_a, hex HMAC-SHA256 for the others, D18.45).
    pub async fn deliver(self: &Arc<Self>, cb: Callback) {
        let Callback { provider, secret, body, reference, url } = cb;
        let event = event_of(&body);
        let url = match url {
            Some(u) => u,
            None => match self.notify_url() {
                Some(base) => format!("{}/api/white-label/webhooks/{}", base.trim_end_matches('/'), provider.as_str()),
                None => {
                    self.record_delivery(provider, &event, &reference, "", Err("no notify URL set".into()), 1);
                    return;
                }
            },
        };
        let bytes = body.to_string().into_bytes();
        let signature = match provider {
            ProviderId::A => sign_hmac_hex::<sha2::Sha512>(secret.as_bytes(), &bytes),
            _ => sign_hmac_hex::<sha2::Sha256>(secret.as_bytes(), &bytes),
        };
        let attempt = Attempt { provider, event, reference, url, bytes, signature };
        let faults = self.db().faults;
        if roll(faults.callback_drop_percent) {
            self.record_delivery(
                attempt.provider,
                &attempt.event,
                &attempt.reference,
                &attempt.url,
                Err(DROPPED.into()),
                1,
            );
            return;
        }
        let delivered = self.attempt(&attempt, 1).await;
        if roll(faults.callback_duplicate_percent) {
            // The same signed body again, as a provider that re-sends does.
            self.attempt(&attempt, 1).await;
        }
        if delivered {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            for (n, delay_ms) in [(2, 500), (3, 1000), (4, 2000)] {
                tokio::select! {
                    _ = me.stop.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(delay_ms)) => {}
                }
                if me.attempt(&attempt, n).await {
                    return;
                }
            }
        });
    }

    async fn attempt(&self, a: &Attempt, n: u32) -> bool {
        let outcome = if !loopback_url(&a.url) {
            Err("the sandbox delivers to loopback addresses only".to_string())
        } else {
            self.http
                .post(&a.url)
                .header("content-type", "application/json")
                .header(a.provider.signature_header(), &a.signature)
                .body(a.bytes.clone())
                .send()
                .await
                .map(|r| r.status().as_u16())
                .map_err(|e| e.to_string())
        };
        let ok = matches!(outcome, Ok(200..=299));
        self.record_delivery(a.provider, &a.event, &a.reference, &a.url, outcome, n);
        ok
    }

    fn record_delivery(
        &self,
        provider: ProviderId,
        event: &str,
        reference: &str,
        url: &str,
        outcome: Result<u16, String>,
        attempt: u32,
    ) {
        let (status, error) = match outcome {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e)),
        };
        let dropped = error.as_deref() == Some(DROPPED);
        let entry = json!({
            "dropped": dropped,
            "provider": provider.as_str(),
            "event": event,
            "reference": reference,
            "url": url,
            "status": status,
            "error": error,
            "attempt": attempt,
            "at": now_rfc3339(),
        });
        push_bounded(&mut self.db().callbacks, entry);
    }
}

/// What the delivery log calls a callback: its `event` (Paystack, Flutterwave), else Hubtel's
/// `Status` / `ResponseCode`.
fn event_of(body: &Value) -> String {
    if let Some(e) = body["event"].as_str() {
        return e.to_string();
    }
    let code = body["ResponseCode"].as_str().unwrap_or_default();
    format!("hubtel.{}", if code == "0000" { "success" } else { "failed" })
}

/// The error of a delivery the faults dropped.
const DROPPED: &str = "dropped by the sandbox's faults (not sent)";

struct Attempt {
    provider: ProviderId,
    event: String,
    reference: String,
    url: String,
    bytes: Vec<u8>,
    signature: String,
}

/// Literal hosts must be loopback; names are held to loopback by the client's resolver.
fn loopback_url(url: &str) -> bool {
    let Ok(u) = reqwest::Url::parse(url) else { return false };
    let Some(host) = u.host_str() else { return false };
    match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        Ok(ip) => is_loopback(ip),
        Err(_) => true,
    }
}

/// `Authorization: Bearer <secret>`, non-empty.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_string())
}

/// The gateway's and the control API's error body: `{"error": {"code", "message"}}`.
pub(crate) fn gateway_error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": {"code": code, "message": message.into()}}))).into_response()
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .merge(api::paystack_routes(shared.clone()))
        .nest("/provider_b", flutterwave::routes(shared.clone()))
        .nest("/provider_c", hubtel::routes(shared.clone()))
        .merge(sms::routes(shared.clone()))
        .merge(checkout::routes(shared.clone()))
        .merge(control::routes(shared.clone()))
        .merge(inbox::routes(shared.clone()))
        .merge(refunds::routes(shared.clone()))
        .merge(ussd::routes(shared))
        .fallback(|| async { gateway_error(StatusCode::NOT_FOUND, "not_found", "no such sandbox route") })
}

//! Payment providers (D11.1): one trait, one adapter file per provider. `provider_a` speaks
//! Paystack's API, `provider_b` Flutterwave's v3 API (D18.2) and `provider_c` Hubtel
//! ([`hubtel`], D18.3).
//!
//! The list of providers is the one `providers!` table below: it makes [`ProviderId`], its
//! names (the callback route's `:provider`, the settings' `defaultProvider` and `providers.<name>`,
//! the configuration's `[providers.<name>]` and `TESSERA_<NAME>_…`) and [`adapter`]. Adding a
//! real provider is one new adapter file and one line in that table.
//!
//! Amounts cross this boundary in pesewas; Flutterwave's and Hubtel's wires take decimal GHS,
//! converted exactly inside their adapters (D18.1, [`wire::ghs`], [`wire::pesewas_at`]).
//!
//! Refunds (D17.36, contract of issue 26): [`PaymentProvider::create_refund`] makes a refund
//! once per Tessera refund id, whatever the retries (each wire's way: Paystack's note, Hubtel's
//! ClientReference, Flutterwave's listing), and [`PaymentProvider::verify_refund`] polls it, as
//! transfers are polled (D16.5).
pub mod flutterwave;
pub mod hubtel;
pub mod provider_a;
pub mod wire;

use secrecy::SecretString;
use serde_json::Value;

use super::outbound::Outbound;

/// Declares the providers: `Variant => "name", adapter, [other signature headers];` one line
/// each.
macro_rules! providers {
    ($($variant:ident => $name:literal, $adapter:expr, [$($alt:literal),*];)+) => {
        /// A provider identifier of the callback route, the settings and the configuration (D4.2).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ProviderId {
            $($variant,)+
        }

        impl ProviderId {
            /// How many providers there are.
            pub const COUNT: usize = [$($name),+].len();
            /// Every provider, in the order routing tries them when none is named.
            pub const ALL: [ProviderId; Self::COUNT] = [$(ProviderId::$variant),+];
            /// Every provider's name, in the order of [`ProviderId::ALL`].
            pub const NAMES: [&'static str; Self::COUNT] = [$($name),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(ProviderId::$variant => $name,)+
                }
            }

            /// The callback signature header, `x-<name>-signature` (D6.1).
            pub fn signature_header(self) -> &'static str {
                match self {
                    $(ProviderId::$variant => concat!("x-", $name, "-signature"),)+
                }
            }

            /// Every header the callback signature is accepted in: [`Self::signature_header`]
            /// first, then the provider's own (D17.9: Paystack's `x-paystack-signature`).
            pub fn signature_headers(self) -> &'static [&'static str] {
                match self {
                    $(ProviderId::$variant => &[concat!("x-", $name, "-signature"), $($alt),*],)+
                }
            }
        }

        /// The adapter of a provider.
        pub fn adapter(id: ProviderId) -> &'static dyn PaymentProvider {
            match id {
                $(ProviderId::$variant => &$adapter,)+
            }
        }
    };
}

providers! {
    A => "provider_a", provider_a::ProviderA, ["x-paystack-signature"];
    B => "provider_b", flutterwave::Flutterwave, [];
    C => "provider_c", hubtel::Hubtel, [];
}

impl ProviderId {
    pub fn parse(s: &str) -> Option<ProviderId> {
        ProviderId::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// Whether the provider can charge a handset without a page (USSD votes, D18.5): the
    /// settings refuse one that cannot as `ussd.provider`.
    pub fn can_push(self) -> bool {
        adapter(self).can_push()
    }
}

/// Where and as whom to call a provider.
#[derive(Clone, Debug)]
pub struct Credentials {
    /// Base URL without a trailing slash, e.g. `http://127.0.0.1:8090/provider_a`. Empty: the
    /// provider's own hosts ([`PaymentProvider::default_base_url`]; Hubtel has five).
    pub base_url: String,
    pub secret_key: SecretString,
    /// True when the account supplied the URL: the call goes through the private-address guard.
    pub account_supplied: bool,
    /// What one provider's wire needs beyond a key (D18.2–3, D18.45).
    pub extra: Extra,
}

/// A provider's credentials beyond its secret key: Flutterwave's webhook hash, Hubtel's ids
/// and callback token, and the server's public address (the URLs Hubtel calls back).
#[derive(Clone, Debug, Default)]
pub struct Extra {
    /// Flutterwave's `verif-hash` / `flutterwave-signature` secret (`webhookHash`).
    pub webhook_hash: Option<SecretString>,
    /// Hubtel's API id (the user of Basic auth; the secret key is its password).
    pub api_id: Option<String>,
    /// Hubtel's POS sales account number (checkout, receive money, status).
    pub pos_sales_id: Option<String>,
    /// Hubtel's prepaid deposit account number (send money: refunds, transfers).
    pub prepaid_deposit_id: Option<String>,
    /// The token of Hubtel's callback path (`/api/white-label/webhooks/provider_c/{token}`).
    pub callback_token: Option<SecretString>,
    /// `http.public_url` without a trailing slash: Tessera as the world reaches it.
    pub public_url: Option<String>,
}

/// What Tessera knows of a paid charge beyond its amount (D18.2–3, D18.45): a refund on some
/// wires needs it (Flutterwave's transaction id; Hubtel sends mobile money back to the payer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChargeFacts<'a> {
    /// The provider's own id of the charge (Flutterwave's `data.id`).
    pub provider_charge_id: Option<&'a str>,
    /// `card` or `mobile_money`, when the provider said.
    pub method: Option<&'a str>,
    /// The paying phone number, international form without `+` (`233241234567`).
    pub payer: Option<&'a str>,
    /// The payer's network: `mtn`, `vod` or `atl`.
    pub network: Option<&'a str>,
}

/// An inbound callback as it arrived: what each wire authenticates (D6.1, D18.2–3).
#[derive(Debug, Clone, Copy)]
pub struct CallbackAuth<'a> {
    pub headers: &'a reqwest::header::HeaderMap,
    pub body: &'a [u8],
    /// The path token of `POST /webhooks/:provider/:token` (Hubtel's), when the URL has one.
    pub token: Option<&'a str>,
}

/// A charge to create (`reference` is Tessera's, D16.24).
#[derive(Debug, Clone)]
pub struct ChargeRequest<'a> {
    pub reference: &'a str,
    /// Pesewas.
    pub amount: i64,
    pub currency: &'a str,
    pub email: &'a str,
    /// The customer's name and phone, when the checkout has them (Flutterwave's `customer`).
    pub name: Option<&'a str>,
    pub phone: Option<&'a str>,
    /// What is paid for, as the checkout page shows it (the campaign's title).
    pub description: Option<&'a str>,
    pub callback_url: Option<&'a str>,
    pub metadata: &'a Value,
    /// `mobile_money` when the checkout asked to pay by mobile money on the web (D18.2:
    /// Flutterwave's Ghana mobile-money charge); `None` for the provider's own page.
    pub method: Option<&'a str>,
    /// The payer's network (`mtn`, `vod`, `atl`) when the checkout named it.
    pub network: Option<&'a str>,
}

/// A mobile-money charge to make (D17.21): the customer approves a prompt on their handset, so
/// there is no checkout page; the result arrives by callback or verify poll like a card charge's.
#[derive(Debug, Clone)]
pub struct MobileMoneyCharge<'a> {
    /// Tessera's reference: a retried call with it never charges twice.
    pub reference: &'a str,
    /// Pesewas.
    pub amount: i64,
    pub currency: &'a str,
    pub email: &'a str,
    /// The phone number in international form without `+`: `233241234567`.
    pub msisdn: &'a str,
    /// `mtn`, `vod` or `atl`.
    pub network: &'a str,
    /// The customer's name, when known (Hubtel's `CustomerName`).
    pub name: Option<&'a str>,
    /// What is paid for (Hubtel's `Description`).
    pub description: Option<&'a str>,
    pub metadata: &'a Value,
}

/// What the provider answers to a new charge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargeInit {
    pub authorization_url: String,
    pub access_code: String,
}

/// A charge's or a transfer's state at the provider, mapped to three outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteStatus {
    /// Not settled yet (Paystack's `abandoned`, `ongoing`, `pending`, `processing`, `queued`…).
    Pending,
    Success,
    /// Failed, declined or reversed.
    Failed,
}

/// A charge as the provider's verify API reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargeState {
    pub reference: String,
    pub status: RemoteStatus,
    /// Pesewas.
    pub amount: i64,
    pub currency: String,
    /// The provider's own id of the charge (Flutterwave's `data.id`, kept for refunds).
    pub provider_id: Option<String>,
    /// `card` or `mobile_money`, when the provider says (Hubtel's `paymentMethod`).
    pub method: Option<String>,
    /// The paying number (`233…`), when the provider says.
    pub payer: Option<String>,
    /// A failed charge's reason as the provider gives it (Hubtel's codes, D18.3).
    pub reason: Option<String>,
}

/// A payout to create (reference = the withdrawal id, D14.1).
#[derive(Debug, Clone)]
pub struct TransferRequest<'a> {
    pub reference: &'a str,
    /// Pesewas.
    pub amount: i64,
    pub currency: &'a str,
    pub account_name: &'a str,
    pub account_number: &'a str,
    pub bank_code: &'a str,
    pub bank_name: &'a str,
    pub reason: &'a str,
}

/// A transfer as the provider reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferState {
    pub reference: String,
    pub status: RemoteStatus,
    /// Pesewas.
    pub amount: i64,
    pub currency: String,
    /// The provider's failure reason, when it gives one.
    pub reason: Option<String>,
}

/// A refund to create at the provider (D17.36): `refund_id` is Tessera's refund id, its reference at the provider.
#[derive(Debug, Clone)]
pub struct RefundRequest<'a> {
    /// Tessera's refund id: the gateway's `reference`, Paystack's `merchant_note`.
    pub refund_id: &'a str,
    /// The refunded charge's reference (Tessera's, D16.24).
    pub transaction_reference: &'a str,
    /// Pesewas.
    pub amount: i64,
    pub currency: &'a str,
    pub reason: Option<&'a str>,
    /// What Tessera knows of the refunded charge (Flutterwave refunds by its id; Hubtel sends
    /// mobile money back to its payer).
    pub charge: ChargeFacts<'a>,
    /// When Tessera filed the refund (Unix ms): a listing for a lost answer looks from then.
    pub filed_at: i64,
    /// The provider's id of this refund, once an answer gave one (Flutterwave polls by it).
    pub provider_refund_id: Option<&'a str>,
    /// The provider ids of the charge's other refunds: a listing that looks for this refund's
    /// lost answer never adopts one of them (D18.2).
    pub taken: &'a [String],
}

/// A refund as the provider reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundState {
    /// Tessera's refund id (the one asked about).
    pub refund_id: String,
    /// The provider's own id of the refund (Paystack's number; the refund id on the gateway).
    pub provider_id: Option<String>,
    pub status: RemoteStatus,
    /// Pesewas.
    pub amount: i64,
    /// When it failed: the provider's failure reason, if it gives one. Otherwise the reason the
    /// refund was asked with, as the provider keeps it.
    pub reason: Option<String>,
}

/// A verified callback body, read into the D6 shape `{event, data: {id, reference, status,
/// amount, currency, …}}`. Only a trigger: the worker confirms with the verify API (D6.2).
/// `event` is the provider's own field name (and the stored column's), not one of Tessera's
/// outbound events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderCallback {
    /// What the callback is about, whatever the wire calls it.
    pub kind: CallbackKind,
    /// `charge.success`, `charge.failed`, `transfer.success`, `transfer.failed`, the refund
    /// events `refund.processed` (Paystack), `refund.success` (gateway) and `refund.failed`
    /// (others are stored and ignored).
    pub event: String,
    /// The provider's id of the charge, transfer or refund (`data.id`), when present.
    pub id: Option<String>,
    /// The charge's or the transfer's reference. For a refund event it is the refunded CHARGE's
    /// reference (both wires name the transaction in refund callbacks), not the refund's.
    pub reference: String,
    /// The paying number the callback names (Hubtel's checkout callback), `233…`: kept once a
    /// status check confirms the payment (D18.45).
    pub payer: Option<String>,
}

/// What a callback is about (the reconciliation it triggers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallbackKind {
    /// A charge: `reference` is the payment's; its verify decides.
    Charge,
    /// A transfer: `reference` is the withdrawal id.
    Transfer,
    /// A refund: `reference` is the refunded charge's.
    Refund,
    /// Money sent out by reference, a withdrawal's or a refund's id (Hubtel's send money).
    Send,
    /// Anything else: stored and ignored.
    Other,
}

impl ProviderCallback {
    /// The idempotency key of D16.7: `event` + `data.id` when present, else `event` +
    /// `data.reference`.
    pub fn event_key(&self) -> String {
        match &self.id {
            Some(id) => format!("{}:id:{}", self.event, id),
            None => format!("{}:ref:{}", self.event, self.reference),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// Network error, timeout or a 5xx: routing falls back (D5.4), workers retry (D16.8).
    #[error("provider unreachable: {0}")]
    Unreachable(String),
    /// The provider knows no charge, transfer or refund with this reference.
    #[error("the provider has no such reference")]
    NotFound,
    /// A transfer or charge with this reference exists already (D16.13, D17.21).
    #[error("the provider already has this reference")]
    Duplicate,
    /// A 4xx other than the above (bad key, refused request), or a 2xx we could not read.
    #[error("provider refused: {0}")]
    Rejected(String),
    /// The URL is refused by the private-address guard (D16.25).
    #[error("blocked outbound address: {0}")]
    Blocked(String),
}

impl ProviderError {
    /// Errors after which another provider (or a later retry) may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, ProviderError::Unreachable(_))
    }
}

pub type ProviderResult<T> = Result<T, ProviderError>;

/// One payment provider's API, client side. Implementations are stateless: the HTTP client and
/// the credentials come with every call.
#[async_trait::async_trait]
pub trait PaymentProvider: Send + Sync {
    fn id(&self) -> ProviderId;

    /// The provider's API when the settings name none (`https://api.paystack.co` …); empty when
    /// the adapter picks hosts per call (Hubtel).
    fn default_base_url(&self) -> &'static str;

    /// Whether these credentials are enough to call the provider (routing skips it otherwise).
    fn configured(&self, creds: &Credentials) -> bool {
        !creds.base_url.is_empty()
    }

    /// Whether the provider can charge a handset without a page (USSD votes, D18.5).
    fn can_push(&self) -> bool {
        true
    }

    /// Why a paid charge cannot be refunded on this wire (D18.3: Hubtel refunds mobile money
    /// only), or `None` when it can.
    fn refund_refusal(&self, _charge: &ChargeFacts<'_>) -> Option<String> {
        None
    }

    /// The wire's own callback authentication with `creds`, beyond D6.1's HMAC
    /// ([`Self::verify_signature`]): Flutterwave's `verif-hash` and `flutterwave-signature`,
    /// Hubtel's path token. Constant time.
    fn authenticate(&self, _creds: &Credentials, _callback: &CallbackAuth<'_>) -> bool {
        false
    }

    /// Whether the callback carries any of the wire's own authentication (else a missing D6.1
    /// header is answered 401 "missing").
    fn carries_authentication(&self, _callback: &CallbackAuth<'_>) -> bool {
        false
    }

    /// Creates a charge; the customer pays at `authorization_url`.
    async fn initialize(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &ChargeRequest<'_>,
    ) -> ProviderResult<ChargeInit>;

    /// Makes a mobile-money charge: the provider sends the approval prompt to the handset. A
    /// reference used before → [`ProviderError::Duplicate`] (the caller treats it as already
    /// charged).
    async fn charge_mobile_money(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &MobileMoneyCharge<'_>,
    ) -> ProviderResult<()>;

    /// Asks for a charge's state by Tessera's reference.
    async fn verify_charge(&self, http: &Outbound, creds: &Credentials, reference: &str)
        -> ProviderResult<ChargeState>;

    /// Creates a transfer (with its recipient, where the provider needs one first).
    async fn create_transfer(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &TransferRequest<'_>,
    ) -> ProviderResult<TransferState>;

    /// Asks for a transfer's state by Tessera's reference.
    async fn verify_transfer(
        &self,
        http: &Outbound,
        creds: &Credentials,
        reference: &str,
    ) -> ProviderResult<TransferState>;

    /// Creates the refund, or returns the one the provider already has for `refund_id` (never two).
    async fn create_refund(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &RefundRequest<'_>,
    ) -> ProviderResult<RefundState>;

    /// The refund's state; ProviderError::NotFound when the provider has none for `refund_id`.
    async fn verify_refund(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &RefundRequest<'_>,
    ) -> ProviderResult<RefundState>;

    /// Checks a callback's signature header value over the raw body with `secret` (D6.1), in
    /// constant time.
    fn verify_signature(&self, secret: &[u8], body: &[u8], signature: &str) -> bool;

    /// Reads a callback body (after its signature was verified).
    fn parse_callback(&self, body: &[u8]) -> Result<ProviderCallback, String>;
}

//! Routing (D5.4, D11.2, D12.3, D14.1, D16.6): which provider an account's charge or payout goes
//! to and with which credentials, and the account's fee rule. The account's `payments` settings
//! are read once per call, typed ([`PaymentsSettings`]).
use secrecy::{ExposeSecret, SecretString};

use crate::domain::payments::FeePolicy;
use crate::domain::settings::PaymentsSettings;
use crate::providers::payments::{adapter, Credentials, Extra, ProviderId};
use crate::state::AppState;
use crate::store::StoreError;

/// A provider to call and how.
#[derive(Clone, Debug)]
pub struct Route {
    pub provider: ProviderId,
    pub credentials: Credentials,
}

/// The account's `payments` settings, typed (`{}` → every default).
pub async fn payments_settings(state: &AppState, account_id: &str) -> Result<PaymentsSettings, StoreError> {
    Ok(PaymentsSettings::from_value(&state.store.settings_category(account_id, "payments").await?))
}

/// The platform's shared credentials of one provider (D11.2, D18.45); `None` when they are not
/// enough to call it.
pub fn platform_credentials(state: &AppState, id: ProviderId) -> Option<Credentials> {
    let platform = state.config.providers.get(id.as_str())?;
    let text = |s: &str| Some(s.trim()).filter(|s| !s.is_empty()).map(str::to_string);
    let secret = |s: &SecretString| text(s.expose_secret()).map(SecretString::from);
    let creds = Credentials {
        base_url: base_url(id, &platform.base_url),
        secret_key: platform.secret_key.clone(),
        account_supplied: false,
        extra: Extra {
            webhook_hash: secret(&platform.webhook_hash),
            api_id: text(&platform.api_id),
            pos_sales_id: text(&platform.pos_sales_id),
            prepaid_deposit_id: text(&platform.prepaid_deposit_id),
            callback_token: secret(&platform.callback_token),
            public_url: public_url(state),
        },
    };
    usable(id, creds)
}

/// The credentials of one provider for an account (D11.2): the platform's shared ones unless
/// the account set `useSharedDefaults: false`, then its own (its sealed secrets opened with the
/// master key, its own base URL or the platform's). Not enough to call it → not configured.
pub fn credentials(
    state: &AppState,
    account_id: &str,
    settings: &PaymentsSettings,
    id: ProviderId,
) -> Option<Credentials> {
    if settings.use_shared_defaults {
        return platform_credentials(state, id);
    }
    let platform = state.config.providers.get(id.as_str())?;
    let own = settings.own.get(id.as_str())?;
    let open = |member: &str, sealed: Option<&String>| {
        let path = format!("payments.config.providers.{}.{member}", id.as_str());
        state.unseal_setting(account_id, &path, Some(sealed?.as_str())).filter(|s| !s.is_empty())
    };
    let secret = open("secretKey", own.sealed_secret.as_ref())?;
    let (base, account_supplied) = match &own.base_url {
        Some(url) => (url.clone(), true),
        None => (platform.base_url.clone(), false),
    };
    let creds = Credentials {
        base_url: base_url(id, &base),
        secret_key: SecretString::from(secret),
        account_supplied,
        extra: Extra {
            webhook_hash: open("webhookHash", own.sealed_webhook_hash.as_ref()).map(SecretString::from),
            api_id: own.api_id.clone(),
            pos_sales_id: own.pos_sales_id.clone(),
            prepaid_deposit_id: own.prepaid_deposit_id.clone(),
            callback_token: open("callbackToken", own.sealed_callback_token.as_ref()).map(SecretString::from),
            public_url: public_url(state),
        },
    };
    usable(id, creds)
}

/// `http.public_url` without its trailing slash, when set.
fn public_url(state: &AppState) -> Option<String> {
    Some(state.config.http.public_url.trim().trim_end_matches('/')).filter(|u| !u.is_empty()).map(str::to_string)
}

/// A base URL without its trailing slash; empty → the provider's own ([`PaymentProvider::default_base_url`]).
fn base_url(id: ProviderId, configured: &str) -> String {
    let url = configured.trim().trim_end_matches('/');
    if url.is_empty() { adapter(id).default_base_url() } else { url }.to_string()
}

/// The credentials when they hold a secret and all the provider's wire needs.
fn usable(id: ProviderId, creds: Credentials) -> Option<Credentials> {
    (!creds.secret_key.expose_secret().trim().is_empty() && adapter(id).configured(&creds)).then_some(creds)
}

/// The first configured provider, in the platform's order.
fn first_configured(state: &AppState, account_id: &str, settings: &PaymentsSettings) -> Option<ProviderId> {
    ProviderId::ALL.into_iter().find(|p| credentials(state, account_id, settings, *p).is_some())
}

/// Providers to try for a charge on `channel`, in order (D5.4): the channel's provider, else the
/// default, else the first configured; then the fallback. Unconfigured ones are skipped.
pub fn routes(state: &AppState, account_id: &str, settings: &PaymentsSettings, channel: &str) -> Vec<Route> {
    let named = |v: Option<&String>| v.and_then(|s| ProviderId::parse(s));
    let primary = named(settings.channel_providers.get(channel))
        .or(named(settings.default_provider.as_ref()))
        .or_else(|| first_configured(state, account_id, settings));
    let fallback = named(settings.fallback_provider.as_ref());
    let mut out: Vec<Route> = Vec::new();
    for id in [primary, fallback].into_iter().flatten() {
        // A USSD vote is charged only by a provider that can push a prompt without a page (D18.5).
        if out.iter().any(|r| r.provider == id) || (channel == "ussd" && !adapter(id).can_push()) {
            continue;
        }
        if let Some(credentials) = credentials(state, account_id, settings, id) {
            out.push(Route { provider: id, credentials });
        }
    }
    out
}

/// The account's payout provider (D14.1): `payoutProvider`, else `defaultProvider`, else the
/// first configured one; `None` when that provider has no credentials.
pub fn payout_route(state: &AppState, account_id: &str, settings: &PaymentsSettings) -> Option<Route> {
    let named = |v: &Option<String>| v.as_deref().and_then(ProviderId::parse);
    let id = named(&settings.payout_provider)
        .or_else(|| named(&settings.default_provider))
        .or_else(|| first_configured(state, account_id, settings))?;
    credentials(state, account_id, settings, id).map(|credentials| Route { provider: id, credentials })
}

/// The fee rule in force (D12.3): the account's, each part falling back to the platform's.
pub fn fee_policy(state: &AppState, settings: &PaymentsSettings) -> FeePolicy {
    settings.fee_policy(state.config.payments.fee_percent, state.config.payments.fee_fixed)
}

/// The credentials of the provider a stored charge or transfer names, as the account's settings
/// stand now; `None` when it is no longer configured.
pub async fn credentials_now(
    state: &AppState,
    account_id: &str,
    provider: ProviderId,
) -> Result<Option<Credentials>, StoreError> {
    let settings = payments_settings(state, account_id).await?;
    Ok(credentials(state, account_id, &settings, provider))
}

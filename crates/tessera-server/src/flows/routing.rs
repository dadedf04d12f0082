//! Routing (D5.4, D11.2, D12.3, D14.1, D16.6): which provider an account's charge or payout goes
//! to and with which credentials, and the account's fee rule. The account's `payments` settings
//! are read once per call, typed ([`PaymentsSettings`]).
use secrecy::{ExposeSecret, SecretString};

use crate::domain::payments::FeePolicy;
use crate::domain::settings::PaymentsSettings;
use crate::providers::payments::{Credentials, ProviderId};
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

/// The credentials of one provider for an account (D11.2): the platform's shared ones unless
/// the account set `useSharedDefaults: false`, then its own (its sealed secret opened with the
/// master key, its own base URL or the platform's). No secret or no base URL → not configured.
pub fn credentials(
    state: &AppState,
    account_id: &str,
    settings: &PaymentsSettings,
    id: ProviderId,
) -> Option<Credentials> {
    let platform = state.config.providers.get(id.as_str())?;
    if settings.use_shared_defaults {
        let secret = platform.secret_key.expose_secret();
        return (!secret.is_empty() && !platform.base_url.is_empty()).then(|| Credentials {
            base_url: platform.base_url.trim_end_matches('/').to_string(),
            secret_key: platform.secret_key.clone(),
            account_supplied: false,
        });
    }
    let own = settings.own.get(id.as_str())?;
    let sealed = own.sealed_secret.as_deref()?;
    let path = format!("payments.config.providers.{}.secretKey", id.as_str());
    let secret = state.unseal_setting(account_id, &path, Some(sealed))?;
    let (base_url, account_supplied) = match &own.base_url {
        Some(url) => (url.clone(), true),
        None => (platform.base_url.clone(), false),
    };
    (!secret.is_empty() && !base_url.is_empty()).then(|| Credentials {
        base_url: base_url.trim_end_matches('/').to_string(),
        secret_key: SecretString::from(secret),
        account_supplied,
    })
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
        if out.iter().any(|r| r.provider == id) {
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

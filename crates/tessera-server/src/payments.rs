//! Payment flows shared by the routes and the workers: which provider an account's charge goes
//! to and with which credentials (D5.4, D11.2, D16.6), the account's fee rule (D12.3), and
//! confirming a charge with the provider's verify API before anything is credited (D6.2).
//! Sits below `http` and `workers`, above `store` and `providers`.
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

use crate::domain::payments::{percent_hundredths, FeeBearer, FeePolicy, TxStatus};
use crate::domain::settings::SEALED;
use crate::domain::time::now_ms;
use crate::providers::payments::{adapter, Credentials, ProviderError, ProviderId, RemoteStatus};
use crate::state::AppState;
use crate::store::payments::{Settled, Transaction};
use crate::store::StoreError;

/// A provider to call and how.
#[derive(Clone, Debug)]
pub struct Route {
    pub provider: ProviderId,
    pub credentials: Credentials,
}

/// The account's payments settings as stored (sealed secrets), `{}` when none.
pub async fn payments_settings(state: &AppState, account_id: &str) -> Result<Value, StoreError> {
    Ok(state
        .store
        .settings(account_id)
        .await?
        .into_iter()
        .find_map(|(category, config)| (category == "payments").then_some(config))
        .unwrap_or_else(|| Value::Object(Default::default())))
}

/// The credentials of one provider for an account (D11.2): the platform's shared ones unless
/// the account set `useSharedDefaults: false`, then its own. No secret → not configured.
pub fn credentials(state: &AppState, account_id: &str, settings: &Value, id: ProviderId) -> Option<Credentials> {
    let shared = settings.get("useSharedDefaults").and_then(Value::as_bool).unwrap_or(true);
    let platform = state.config.providers.get(id.as_str())?;
    if shared {
        let secret = platform.secret_key.expose_secret();
        return (!secret.is_empty() && !platform.base_url.is_empty()).then(|| Credentials {
            base_url: platform.base_url.trim_end_matches('/').to_string(),
            secret_key: platform.secret_key.clone(),
            account_supplied: false,
        });
    }
    let own = settings.get("providers").and_then(|p| p.get(id.as_str()))?;
    let sealed = own.get("secretKey").and_then(|s| s.get(SEALED)).and_then(Value::as_str)?;
    let path = format!("settings:{account_id}:payments.config.providers.{}.secretKey", id.as_str());
    let plain = state.keyring().decrypt(&path, sealed)?;
    let secret = String::from_utf8(plain.expose_secret().clone()).ok()?;
    let (base_url, account_supplied) = match own.get("baseUrl").and_then(Value::as_str) {
        Some(url) => (url.to_string(), true),
        None => (platform.base_url.clone(), false),
    };
    (!secret.is_empty() && !base_url.is_empty()).then(|| Credentials {
        base_url: base_url.trim_end_matches('/').to_string(),
        secret_key: SecretString::from(secret),
        account_supplied,
    })
}

/// Providers to try for a charge on `channel`, in order (D5.4): the channel's provider, else the
/// default, else the first configured; then the fallback. Unconfigured ones are skipped.
pub fn routes(state: &AppState, account_id: &str, settings: &Value, channel: &str) -> Vec<Route> {
    let named = |v: Option<&Value>| v.and_then(Value::as_str).and_then(ProviderId::parse);
    let channel_provider = named(settings.get("channels").and_then(|c| c.get(channel)).and_then(|c| c.get("provider")));
    let default = named(settings.get("defaultProvider"));
    let fallback = named(settings.get("fallbackProvider"));
    let configured = |id: ProviderId| credentials(state, account_id, settings, id);
    let primary =
        channel_provider.or(default).or_else(|| ProviderId::ALL.into_iter().find(|p| configured(*p).is_some()));
    let mut out: Vec<Route> = Vec::new();
    for id in [primary, fallback].into_iter().flatten() {
        if out.iter().any(|r| r.provider == id) {
            continue;
        }
        if let Some(credentials) = configured(id) {
            out.push(Route { provider: id, credentials });
        }
    }
    out
}

/// The account's payout provider (D14.1): `payoutProvider`, else `defaultProvider`, else the
/// first configured one; `None` when that provider has no credentials.
pub fn payout_route(state: &AppState, account_id: &str, settings: &Value) -> Option<Route> {
    let named = |k: &str| settings.get(k).and_then(Value::as_str).and_then(ProviderId::parse);
    let id = named("payoutProvider")
        .or_else(|| named("defaultProvider"))
        .or_else(|| ProviderId::ALL.into_iter().find(|p| credentials(state, account_id, settings, *p).is_some()))?;
    credentials(state, account_id, settings, id).map(|credentials| Route { provider: id, credentials })
}

/// The fee rule in force (D12.3): the account's `feePercent`, `feeFixed`, `feeBearer`, each
/// falling back to the platform's default.
pub fn fee_policy(state: &AppState, settings: &Value) -> FeePolicy {
    let pct = settings
        .get("feePercent")
        .and_then(Value::as_f64)
        .or(Some(state.config.payments.fee_percent))
        .and_then(percent_hundredths)
        .unwrap_or(0);
    let fixed = settings.get("feeFixed").and_then(Value::as_f64).unwrap_or(state.config.payments.fee_fixed).max(0.0);
    let bearer = match settings.get("feeBearer").and_then(Value::as_str) {
        Some("customer") => FeeBearer::Customer,
        _ => FeeBearer::Organizer,
    };
    FeePolicy { percent_hundredths: pct, fixed: (fixed * 100.0).round() as i64, bearer }
}

/// What asking the provider about a charge led to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmed {
    /// Credited and fulfilled now.
    Fulfilled,
    /// Credited now, but paid too late for its seats (D16.4).
    CreditedOnly,
    /// The provider reports another amount or currency: flagged, not credited (D5.5).
    Mismatch,
    /// The provider reports failure: released (from pending).
    Failed,
    /// Not paid yet, or unknown to the provider.
    Pending,
    /// Nothing to do: already final or credited.
    Unchanged,
}

impl Confirmed {
    pub fn as_str(self) -> &'static str {
        match self {
            Confirmed::Fulfilled => "fulfilled",
            Confirmed::CreditedOnly => "credited_paid_late",
            Confirmed::Mismatch => "mismatch",
            Confirmed::Failed => "failed",
            Confirmed::Pending => "pending",
            Confirmed::Unchanged => "unchanged",
        }
    }
}

/// Why a confirmation could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConfirmError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the provider {0} is no longer configured for this account")]
    NotConfigured(&'static str),
}

/// Asks the transaction's provider for the charge and applies what it says, exactly as a
/// webhook would (D5.7, D6.2–3): a callback is a trigger, the verify API is the proof.
pub async fn confirm(state: &AppState, t: &Transaction) -> Result<Confirmed, ConfirmError> {
    let open = t.status == TxStatus::Pending.as_str() || t.status == TxStatus::Abandoned.as_str();
    if t.credited || !open {
        return Ok(Confirmed::Unchanged);
    }
    let Some(provider) = t.provider.as_deref().and_then(ProviderId::parse) else {
        return Ok(Confirmed::Pending);
    };
    let settings = payments_settings(state, &t.account_id).await?;
    let creds =
        credentials(state, &t.account_id, &settings, provider).ok_or(ConfirmError::NotConfigured(provider.as_str()))?;
    let remote = match adapter(provider).verify_charge(&state.outbound, &creds, &t.reference).await {
        Ok(r) => r,
        Err(ProviderError::NotFound) => return Ok(Confirmed::Pending),
        Err(e) => return Err(e.into()),
    };
    let now = now_ms();
    Ok(match remote.status {
        RemoteStatus::Success
            if remote.amount == t.amount && remote.currency == t.currency && remote.reference == t.reference =>
        {
            let delay = i64::try_from(state.config.payments.settlement_delay_seconds.saturating_mul(1000)).unwrap_or(0);
            match state.store.settle_success(&t.reference, delay, now).await? {
                Settled::Fulfilled => Confirmed::Fulfilled,
                Settled::CreditedOnly => Confirmed::CreditedOnly,
                Settled::Unchanged => Confirmed::Unchanged,
            }
        }
        RemoteStatus::Success => {
            tracing::warn!(
                reference = %t.reference, expected = t.amount, reported = remote.amount,
                currency = %remote.currency, "provider reports another amount or currency; not credited"
            );
            state.store.flag_mismatch(&t.reference, now).await?;
            Confirmed::Mismatch
        }
        RemoteStatus::Failed if t.status == TxStatus::Pending.as_str() => {
            if state.store.close_transaction(&t.reference, TxStatus::Failed, now).await? {
                Confirmed::Failed
            } else {
                Confirmed::Unchanged
            }
        }
        RemoteStatus::Failed => Confirmed::Unchanged,
        RemoteStatus::Pending => Confirmed::Pending,
    })
}

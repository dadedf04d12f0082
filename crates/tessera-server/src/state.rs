//! `AppState`: what handlers and workers share (store, key directory, guards, provider
//! clients). It sits below `http/` and `workers/` and above `store/`, `auth/` and `domain/`:
//! `http` and `workers` import this module, never `app`, so the layers stay a line, not a circle.
use std::ops::Deref;
use std::sync::Arc;

use anyhow::Context as _;

use crate::auth::crypto::Keyring;
use crate::auth::directory::KeyDirectory;
use crate::auth::guard::Guards;
use crate::auth::replay::ReplayStore;
use crate::config::Config;
use crate::providers::outbound::Outbound;
use crate::store::callbacks::CallbackWriter;
use crate::store::Store;

pub struct AppInner {
    pub config: Config,
    pub store: Store,
    pub directory: KeyDirectory,
    pub replay: ReplayStore,
    pub guards: Guards,
    /// The guards several instances share through Redis (D17.1), when `redis.url` is set:
    /// then `replay` and the in-memory counters of `guards` are not used on API routes.
    pub shared: Option<crate::auth::shared::SharedGuards>,
    /// Signed timestamps older than this are refused (D2.6).
    pub started_at_ms: i64,
    pub openapi_json: String,
    /// This process's name on the jobs it claims (handed back at shutdown, D16.22).
    pub worker_id: String,
    /// Group-committing writer of provider callbacks (D6.2 hand-off).
    pub callbacks: CallbackWriter,
    /// Group-committing writer of the gate's check-ins (D7.3).
    pub checkins: crate::store::tickets::CheckinWriter,
    /// Outbound HTTP to providers and gateways (D16.25).
    pub outbound: Outbound,
    /// Live changes committed on any instance (D17.5).
    pub live: crate::live::Live,
}

/// Shared state; cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<AppInner>);

impl AppState {
    pub fn new(inner: AppInner) -> Self {
        AppState(Arc::new(inner))
    }

    /// The master keyring (sealed settings secrets, private key secrets).
    pub fn keyring(&self) -> &Keyring {
        self.directory.keyring()
    }

    /// Opens a sealed settings secret of the account at `path`
    /// (`notifications.config.sms.apiKey`, `ussd.config.callbackToken` …); `None` when there is
    /// none or it does not open.
    pub fn unseal_setting(&self, account_id: &str, path: &str, sealed: Option<&str>) -> Option<String> {
        use secrecy::ExposeSecret as _;
        let plain = self.keyring().decrypt(&format!("settings:{account_id}:{path}"), sealed?)?;
        String::from_utf8(plain.expose_secret().clone()).ok()
    }
}

impl Deref for AppState {
    type Target = AppInner;
    fn deref(&self) -> &AppInner {
        &self.0
    }
}

/// Opens the store and the master key as the server and the operator CLI both do.
pub async fn open_store(config: &Config) -> anyhow::Result<(Store, Arc<Keyring>)> {
    let keyring = Keyring::load_or_create(config.data_dir(), config.master_key.as_ref()).context("master key")?;
    let store =
        Store::open(&config.effective_database_url(), config.db_max_connections).await.context("opening the store")?;
    Ok((store, Arc::new(keyring)))
}

//! The key directory: what authentication reads on every request (keys with their secrets
//! ready to check, account status, verified domains), kept in memory so that a flood of requests,
//! bad signatures included, does not touch the store; and the account view (account, domains,
//! masked settings) that `/context`, `/config` and `/settings` read.
//!
//! Freshness: every change to keys, account status or domains bumps `auth_generation` in the
//! same transaction, whoever makes it (this server or the operator CLI). The server polls that
//! one counter every `auth_cache_refresh_ms` (default 1 s) and drops the cache when it moved, so
//! a revocation takes effect within that interval on every instance. Settings writes bump the
//! counter too, and the instance that wrote drops its account view at once.
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use secrecy::ExposeSecret;
use serde_json::{Map, Value};

use super::crypto::Keyring;
use crate::domain::accounts::AccountStatus;
use crate::store::accounts::Account;
use crate::store::domains::Domain;
use crate::store::keys::KeyInfo;
use crate::store::{Store, StoreError, StoreResult};

/// The secret side of a key, ready to check.
pub enum KeySecret {
    /// Public and campaign keys: keyed hash of the secret.
    Hash(String),
    /// Private keys: the decrypted HMAC secret, made ready to verify (HMAC's keyed state is
    /// computed once per key, not per request).
    Hmac(tessera_sign::HmacKey),
}

pub struct AuthKey {
    pub info: KeyInfo,
    /// `info.account_id` and `info.key_id`, shared: every admitted request's caller holds them,
    /// and sharing costs a reference count where a copy cost an allocation.
    pub account_id: Arc<str>,
    pub key_id: Arc<str>,
    pub secret: KeySecret,
    pub account_status: AccountStatus,
    pub rate_limit_per_minute: Option<u32>,
}

impl AuthKey {
    pub fn is_active(&self) -> bool {
        self.info.status == "active"
    }

    pub fn hmac_key(&self) -> Option<&tessera_sign::HmacKey> {
        match &self.secret {
            KeySecret::Hmac(k) => Some(k),
            KeySecret::Hash(_) => None,
        }
    }
}

const MAX_CACHED_KEYS: usize = 100_000;

/// What an account shows of itself: read together, cached together.
pub struct AccountView {
    pub account: Account,
    pub domains: Vec<Domain>,
    /// Every stored settings category, secrets masked (D4.3).
    pub settings: Map<String, Value>,
    /// The `data` of `GET /context`, rendered once per view (it depends on nothing else), so
    /// that a signed read of it costs a copy rather than a clone and a serialization.
    pub context_json: std::sync::OnceLock<Vec<u8>>,
}

pub struct KeyDirectory {
    store: Store,
    keyring: Arc<Keyring>,
    keys: RwLock<HashMap<String, Arc<AuthKey>>>,
    /// Verified hostname → account id.
    domains: RwLock<Arc<HashMap<String, String>>>,
    views: RwLock<HashMap<String, Arc<AccountView>>>,
    generation: AtomicI64,
}

impl KeyDirectory {
    pub async fn load(store: Store, keyring: Arc<Keyring>) -> StoreResult<Self> {
        let dir = KeyDirectory {
            generation: AtomicI64::new(store.auth_generation().await?),
            store,
            keyring,
            keys: RwLock::new(HashMap::new()),
            domains: RwLock::new(Arc::new(HashMap::new())),
            views: RwLock::new(HashMap::new()),
        };
        dir.reload_domains().await?;
        Ok(dir)
    }

    pub fn keyring(&self) -> &Keyring {
        &self.keyring
    }

    async fn reload_domains(&self) -> StoreResult<()> {
        let map: HashMap<String, String> = self.store.verified_domains().await?.into_iter().collect();
        *self.domains.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(map);
        Ok(())
    }

    /// Re-reads the generation counter and drops cached state if it moved. Called by the
    /// refresh loop; tests call it directly after changing keys with the CLI.
    pub async fn refresh(&self) -> StoreResult<bool> {
        let current = self.store.auth_generation().await?;
        if current == self.generation.load(Ordering::Acquire) {
            return Ok(false);
        }
        self.keys.write().unwrap_or_else(|p| p.into_inner()).clear();
        self.views.write().unwrap_or_else(|p| p.into_inner()).clear();
        self.reload_domains().await?;
        self.generation.store(current, Ordering::Release);
        Ok(true)
    }

    /// The key if this instance holds it in memory already (no store read): the auth layer's
    /// synchronous path; `None` sends it to [`KeyDirectory::key`].
    pub fn key_in_memory(&self, key_id: &str) -> Option<Arc<AuthKey>> {
        self.keys.read().unwrap_or_else(|p| p.into_inner()).get(key_id).cloned()
    }

    /// The key with this id, from memory or the store. Unknown ids are not cached (they are
    /// bounded by the failure guard instead).
    pub async fn key(&self, key_id: &str) -> StoreResult<Option<Arc<AuthKey>>> {
        if let Some(k) = self.key_in_memory(key_id) {
            return Ok(Some(k));
        }
        let generation = self.generation.load(Ordering::Acquire);
        let Some(row) = self.store.key_for_auth(key_id).await? else { return Ok(None) };
        let secret = match (&row.secret_sealed, &row.secret_hash) {
            (Some(sealed), _) => {
                let secret = self.keyring.decrypt(key_id, sealed).ok_or_else(|| {
                    StoreError::Corrupt(format!("key {key_id}: secret does not decrypt under this master key"))
                })?;
                KeySecret::Hmac(tessera_sign::HmacKey::new(secret.expose_secret()))
            }
            (None, Some(hash)) => KeySecret::Hash(hash.clone()),
            (None, None) => return Err(StoreError::Corrupt(format!("key {key_id} has no secret"))),
        };
        let key = Arc::new(AuthKey {
            account_id: row.info.account_id.as_str().into(),
            key_id: row.info.key_id.as_str().into(),
            info: row.info,
            secret,
            account_status: row.account_status,
            rate_limit_per_minute: row.rate_limit_per_minute,
        });
        self.remember(&self.keys, generation, key_id, &key);
        Ok(Some(key))
    }

    /// The account's view, from memory or the store (three reads, then cached).
    pub async fn account_view(&self, account_id: &str) -> StoreResult<Arc<AccountView>> {
        if let Some(v) = self.views.read().unwrap_or_else(|p| p.into_inner()).get(account_id) {
            return Ok(v.clone());
        }
        let generation = self.generation.load(Ordering::Acquire);
        let (account, domains, settings) = tokio::try_join!(
            self.store.account(account_id),
            self.store.list_domains(account_id),
            self.store.settings(account_id)
        )?;
        let settings = settings
            .into_iter()
            .map(|(category, mut config)| {
                crate::domain::settings::mask_sealed(&mut config);
                (category, config)
            })
            .collect();
        let view = Arc::new(AccountView { account, domains, settings, context_json: Default::default() });
        self.remember(&self.views, generation, account_id, &view);
        Ok(view)
    }

    /// Caches what was read under `generation`, only if nothing changed meanwhile, so that a
    /// concurrent refresh is never undone. A full cache starts over rather than grow.
    fn remember<V>(&self, cache: &RwLock<HashMap<String, Arc<V>>>, generation: i64, id: &str, value: &Arc<V>) {
        if self.generation.load(Ordering::Acquire) != generation {
            return;
        }
        let mut map = cache.write().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_CACHED_KEYS {
            map.clear();
        }
        map.insert(id.to_string(), value.clone());
    }

    /// Drops the cached view of an account this instance just changed.
    pub fn forget_account(&self, account_id: &str) {
        self.views.write().unwrap_or_else(|p| p.into_inner()).remove(account_id);
    }

    /// The account owning this verified hostname.
    pub fn domain_account(&self, hostname: &str) -> Option<String> {
        self.domains.read().unwrap_or_else(|p| p.into_inner()).get(hostname).cloned()
    }
}

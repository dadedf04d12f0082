//! A real server on port 0 with a fresh database and a fresh account; its queues drained by hand.
use std::sync::Arc;

use serde_json::Value;
use tessera_client::Client;
use tessera_server::app::Application;
use tessera_server::auth::crypto::Keyring;
use tessera_server::cli::admin;
use tessera_server::config::{Config, Overrides};
use tessera_server::state::AppState;
use tessera_server::store::Store;
use tessera_server::workers;

pub const ALL_PRIVATE_SCOPES: &str = "settings:read,settings:write,campaigns:read,campaigns:write,tickets:read,tickets:write,payments:write,withdrawals:write,my-tickets:read,submissions:write,notifications:write";
pub const PUBLIC_SCOPES: &str = "settings:read,campaigns:read,tickets:read";

#[derive(Clone, Debug)]
pub enum Backend {
    Sqlite,
    Postgres(String),
}

impl Backend {
    pub fn postgres() -> Option<Backend> {
        std::env::var("TESSERA_TEST_DATABASE_URL").ok().filter(|v| !v.is_empty()).map(Backend::Postgres)
    }
}

/// A key as `admin key create --json` returned it.
#[derive(Clone, Debug)]
pub struct TestKey {
    pub key_id: String,
    pub secret: String,
}

impl TestKey {
    pub fn header(&self) -> String {
        format!("{}:{}", self.key_id, self.secret)
    }
}

#[derive(Clone, Debug)]
pub struct TestAccount {
    pub id: String,
    pub slug: String,
    pub domain: String,
    /// Private key with every scope.
    pub private: TestKey,
    /// Public key with the safe read scopes.
    pub public: TestKey,
}

pub struct TestApp {
    pub base_url: String,
    pub state: AppState,
    pub store: Store,
    pub keyring: Arc<Keyring>,
    pub config: Config,
    pub database_url: String,
    pub http: reqwest::Client,
    pub account: TestAccount,
    _data_dir: tempfile::TempDir,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn unique(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let r: u32 = rand_u32();
    format!("{prefix}-{n}-{r:08x}")
}

fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0),
    );
    h.finish() as u32
}

/// A fresh PostgreSQL schema in the test database, as a URL whose connections use it.
async fn postgres_schema(base: &str) -> String {
    use sqlx::Executor;
    sqlx::any::install_default_drivers();
    let schema = unique("t").replace('-', "_");
    let mut conn =
        <sqlx::AnyConnection as sqlx::Connection>::connect(base).await.expect("connect to TESSERA_TEST_DATABASE_URL");
    conn.execute(format!("CREATE SCHEMA {schema}").as_str()).await.expect("create schema");
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options=-c%20search_path%3D{schema}")
}

/// A database URL for a process the test starts itself: a fresh schema on PostgreSQL.
pub async fn postgres_schema_url(backend: &Backend) -> String {
    match backend {
        Backend::Postgres(base) => postgres_schema(base).await,
        Backend::Sqlite => String::new(),
    }
}

/// `TESSERA_TEST_REDIS_URL`: run every test server with its guards in Redis (D17.1).
pub fn test_redis_url() -> Option<String> {
    std::env::var("TESSERA_TEST_REDIS_URL").ok().filter(|v| !v.is_empty())
}

pub async fn spawn(backend: Backend) -> TestApp {
    spawn_with(backend, |_| {}).await
}

/// Starts a server with the test configuration, adjusted by `tweak`.
pub async fn spawn_with(backend: Backend, tweak: impl FnOnce(&mut Config)) -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = Config::load(&Overrides::default()).expect("config");
    config.data_dir = dir.path().to_path_buf();
    config.listen = "127.0.0.1:0".parse().expect("addr");
    config.master_key = None;
    config.database_url = match &backend {
        Backend::Sqlite => String::new(),
        Backend::Postgres(base) => postgres_schema(base).await,
    };
    config.db_max_connections = 4;
    if let Some(url) = test_redis_url() {
        // The whole suite runs with shared guards too (issue 23): each server its own key space.
        config.redis.url = url.into();
        config.redis.key_prefix = format!("tessera:{}:", unique("t"));
        // The suite runs many servers at once on a small machine: a slow answer there is load,
        // not an outage (the outage tests in cluster.rs stop their own Redis).
        config.redis.timeout_ms = 5_000;
    }
    tweak(&mut config);
    let no_key = TestKey { key_id: String::new(), secret: String::new() };
    let nobody = TestAccount {
        id: String::new(),
        slug: String::new(),
        domain: String::new(),
        private: no_key.clone(),
        public: no_key,
    };
    let mut t = launch(config, dir, nobody, "build app").await;
    t.account = t.new_account("acct").await;
    t
}

/// Another instance of `app`'s deployment (D17.3–5): the same configuration and database (on
/// PostgreSQL the same schema, so it serves the same accounts; `app.account` works on it), its
/// own port and data dir holding the same master key. Two instances of one PostgreSQL schema
/// must both have `redis.url` set, or the second is refused; a SQLite data dir has one
/// instance only, so this is for PostgreSQL.
pub async fn spawn_second(app: &TestApp) -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = app.config.data_dir.join("master.key");
    if key.exists() {
        std::fs::copy(&key, dir.path().join("master.key")).expect("copy master.key");
    }
    let mut config = app.config.clone();
    config.data_dir = dir.path().to_path_buf();
    config.listen = "127.0.0.1:0".parse().expect("addr");
    launch(config, dir, app.account.clone(), "build the second instance").await
}

/// Builds the application of `config`, serves it until the `TestApp` is dropped, and opens its
/// store beside it.
async fn launch(config: Config, dir: tempfile::TempDir, account: TestAccount, what: &str) -> TestApp {
    let app = Application::build(config.clone()).await.expect(what);
    let base_url = format!("http://{}", app.local_addr());
    let state = app.state();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.run_until_stopped(async move {
        let _ = rx.await;
    }));
    let (store, keyring) = tessera_server::state::open_store(&config).await.expect("store");
    TestApp {
        base_url,
        state,
        store,
        keyring,
        database_url: config.effective_database_url(),
        config,
        http: reqwest::Client::new(),
        account,
        _data_dir: dir,
        shutdown: Some(tx),
    }
}

fn key_of(v: &Value) -> TestKey {
    TestKey {
        key_id: v["keyId"].as_str().expect("keyId").to_string(),
        secret: v["secret"].as_str().expect("secret").to_string(),
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    /// A fresh enabled account with a verified primary domain, a private key with every scope and
    /// a public key.
    pub async fn new_account(&self, prefix: &str) -> TestAccount {
        let slug = unique(prefix);
        let created =
            admin::account_create(&self.store, &slug, &format!("{slug} Events"), "enabled").await.expect("account");
        let domain = format!("{slug}.example.com");
        admin::domain_add(&self.store, &slug, &domain, true, true).await.expect("domain");
        let private = self.create_key(&slug, "private", None, ALL_PRIVATE_SCOPES, &[]).await;
        let public = self.create_key(&slug, "public", None, PUBLIC_SCOPES, &[]).await;
        self.refresh().await;
        TestAccount { id: created["id"].as_str().expect("id").to_string(), slug, domain, private, public }
    }

    pub async fn create_key(
        &self,
        slug: &str,
        kind: &str,
        campaign: Option<&str>,
        scopes: &str,
        caps: &[&str],
    ) -> TestKey {
        let caps: Vec<String> = caps.iter().map(|c| c.to_string()).collect();
        let v = admin::key_create(&self.store, &self.keyring, slug, kind, campaign, scopes, &caps).await.expect("key");
        self.refresh().await;
        key_of(&v)
    }

    /// What the server's refresh tick does, now (tests never sleep).
    pub async fn refresh(&self) {
        self.state.directory.refresh().await.expect("refresh");
    }

    /// A signed client for the default account's private key.
    pub fn client(&self) -> Client {
        self.client_for(&self.account.private)
    }

    pub fn client_for(&self, key: &TestKey) -> Client {
        Client::new(&self.base_url, &key.key_id, &key.secret).expect("client")
    }

    /// Runs the real `tessera` binary against this app's store.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
        cmd.arg("--data-dir").arg(&self.config.data_dir);
        if !self.config.database_url.is_empty() {
            cmd.arg("--database-url").arg(&self.config.database_url);
        }
        cmd.args(args).env_remove("DATABASE_URL").env_remove("TESSERA_MASTER_KEY");
        cmd.output().expect("run tessera")
    }
}

/// A key of the default account with only `scopes`.
pub async fn key_with(app: &TestApp, kind: &str, campaign: Option<&str>, scopes: &str) -> TestKey {
    app.create_key(&app.account.slug, kind, campaign, scopes, &[]).await
}

/// What the workers would do next, done now: every queue run until it is empty.
pub async fn drain(app: &TestApp) {
    workers::drain(&app.state).await.expect("drain");
}

/// The audit entries of one entity, newest first (through the operator CLI).
pub fn audit_actions(app: &TestApp, entity: &str) -> Vec<Value> {
    let out = app.cli(&["admin", "audit", "list", "--account", &app.account.slug, "--json"]);
    assert!(out.status.success(), "audit list: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    v["entries"].as_array().expect("entries").iter().filter(|e| e["entityId"] == entity).cloned().collect()
}

//! Persistence. One store layer whose SQL runs unchanged on SQLite and PostgreSQL through
//! sqlx's `Any` driver. Every method on tenant data takes the `AccountId` first; every change is
//! one transaction.
//!
//! SQLite is set up for a server: WAL, `synchronous=NORMAL`, foreign keys, a busy timeout on
//! every connection, all writes through one writer connection and reads through a read-only
//! pool. On PostgreSQL both handles are the same pool.
pub mod accounts;
pub mod approvals;
pub mod audit;
pub mod callbacks;
pub mod campaigns;
pub mod console;
pub mod console_campaigns;
pub mod console_figures;
pub mod customers;
pub mod domains;
pub mod donations;
pub mod events;
pub mod group_commit;
pub mod idempotency;
pub mod instance;
pub mod jobs;
pub mod keys;
pub mod ledger;
pub mod live;
pub mod notifications;
pub mod page_cache;
pub mod participants;
pub mod payments;
pub mod portal;
pub mod query;
pub mod refunds;
pub mod settings;
pub mod sqlite_read;
pub mod submissions;
pub mod ticket_types;
pub mod tickets;
pub mod ussd;
pub mod webhook_deliveries;
pub mod webhook_endpoints;
pub mod withdrawals;

use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};

/// A write transaction held by a flow while it applies its rules: the store's functions that
/// take `&mut StoreTx` run their statements inside it, and nothing is visible to others until
/// [`StoreTx::commit`]. Dropped without a commit, it rolls back. This is how a change that spans
/// resources (a payment credited, its seats sold, its tickets issued, its e-mail queued) stays
/// one transaction while its rules live in `flows`, not in SQL.
pub struct StoreTx {
    tx: sqlx::Transaction<'static, sqlx::Any>,
    backend: Backend,
    live: std::sync::Arc<live::LiveBus>,
    /// SQLite: live events published in this transaction, delivered after its commit.
    published: Vec<live::LiveEvent>,
}

impl StoreTx {
    /// The database this transaction runs on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub async fn commit(self) -> StoreResult<()> {
        self.tx.commit().await?;
        for event in self.published {
            self.live.deliver(event);
        }
        Ok(())
    }

    /// Undoes everything now (dropping it does the same, later).
    pub async fn rollback(self) -> StoreResult<()> {
        self.tx.rollback().await?;
        Ok(())
    }

    /// Publishes a live change (D17.5) that is delivered once this transaction commits, and
    /// never if it rolls back: on PostgreSQL a NOTIFY in the transaction, on SQLite the
    /// in-process bus after [`StoreTx::commit`].
    pub async fn publish(&mut self, event: live::LiveEvent) -> StoreResult<()> {
        match self.backend {
            Backend::Postgres => live::notify_in(&mut self.tx, self.backend, &self.live, &[event]).await,
            Backend::Sqlite => {
                self.published.push(event);
                Ok(())
            }
        }
    }

    /// [`StoreTx::publish`] for several changes at once: on PostgreSQL one statement whatever
    /// their number.
    pub async fn publish_all(&mut self, events: Vec<live::LiveEvent>) -> StoreResult<()> {
        match self.backend {
            Backend::Postgres => live::notify_in(&mut self.tx, self.backend, &self.live, &events).await,
            Backend::Sqlite => {
                self.published.extend(events);
                Ok(())
            }
        }
    }
}

impl std::ops::Deref for StoreTx {
    type Target = sqlx::AnyConnection;
    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl std::ops::DerefMut for StoreTx {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.tx
    }
}

/// What the store can fail with. Handlers see `NotFound` and `Conflict`; the rest is internal.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The entity (`"campaign"`, `"account"`, …) is absent or belongs to another account.
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("conflict: {0}")]
    Conflict(String),
    /// Not enough inventory left for the quantity asked (409 `sold_out`).
    #[error("sold out: {0}")]
    SoldOut(String),
    /// The available balance does not cover a withdrawal (409 `insufficient_balance`).
    #[error("insufficient balance: {0}")]
    InsufficientBalance(String),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// A read on the synchronous SQLite path ([`sqlite_read`]) failed.
    #[error("database read: {0}")]
    Read(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// An update refused by the rules or by the store.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    #[error(transparent)]
    Domain(#[from] crate::domain::DomainError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The row changed between read and write (retried; surfaces only when retries run out).
    #[error("the campaign changed while this update ran; retry")]
    Raced,
}

impl From<sqlx::Error> for UpdateError {
    fn from(e: sqlx::Error) -> Self {
        UpdateError::Store(StoreError::Db(e))
    }
}

/// Maps a unique-constraint violation to `Conflict` with the given message.
pub(crate) fn unique_to_conflict(e: sqlx::Error, message: &str) -> StoreError {
    match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Conflict(message.to_string()),
        _ => StoreError::Db(e),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The store handle; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    writer: AnyPool,
    reader: AnyPool,
    backend: Backend,
    /// SQLite files only: small hot reads run in place ([`sqlite_read`]).
    fast_reader: Option<std::sync::Arc<sqlite_read::SyncReader>>,
    /// Rendered list pages, valid while `data_version` stands (SQLite files only).
    pages: std::sync::Arc<page_cache::PageCache>,
    /// Live changes (D17.5): the in-process bus and, on PostgreSQL, this store's schema.
    live: std::sync::Arc<live::LiveBus>,
}

const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "foundation", include_str!("../../migrations/0001_foundation.sql")),
    (2, "catalogue", include_str!("../../migrations/0002_catalogue.sql")),
    (3, "payments", include_str!("../../migrations/0003_payments.sql")),
    (4, "withdrawals", include_str!("../../migrations/0004_withdrawals.sql")),
    (5, "tickets", include_str!("../../migrations/0005_tickets.sql")),
    (6, "portal", include_str!("../../migrations/0006_portal.sql")),
    (7, "list_order", include_str!("../../migrations/0007_list_order.sql")),
    (8, "attendee_answers", include_str!("../../migrations/0008_attendee_answers.sql")),
    (9, "email_case", include_str!("../../migrations/0009_email_case.sql")),
    (10, "ussd", include_str!("../../migrations/0010_ussd.sql")),
    (11, "webhooks", include_str!("../../migrations/0011_webhooks.sql")),
    (12, "refunds", include_str!("../../migrations/0012_refunds.sql")),
    (13, "console", include_str!("../../migrations/0013_console.sql")),
    (14, "wires", include_str!("../../migrations/0014_wires.sql")),
];

impl Store {
    /// Opens (creating the SQLite file if needed) and migrates.
    pub async fn open(url: &str, max_connections: u32) -> anyhow::Result<Store> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Backend::Postgres
        } else {
            anyhow::bail!("unsupported database URL scheme (use sqlite: or postgres:)");
        };
        let store = match backend {
            Backend::Sqlite => {
                if let Some(path) = sqlite_file(url) {
                    if let Some(dir) = std::path::Path::new(&path).parent() {
                        std::fs::create_dir_all(dir).ok();
                    }
                }
                // No ping before lending a connection: a broken one fails its query and is
                // dropped, and the ping was a round trip on every read.
                let writer = AnyPoolOptions::new()
                    .test_before_acquire(false)
                    .max_connections(1)
                    .min_connections(1)
                    .acquire_timeout(Duration::from_secs(30))
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            conn.execute("PRAGMA busy_timeout = 10000").await?;
                            conn.execute("PRAGMA journal_mode = WAL").await?;
                            conn.execute("PRAGMA synchronous = NORMAL").await?;
                            conn.execute("PRAGMA foreign_keys = ON").await?;
                            Ok(())
                        })
                    })
                    .connect_with(AnyConnectOptions::from_str(&writer_url(url))?)
                    .await?;
                let ro_url = read_only_url(url);
                let reader = AnyPoolOptions::new()
                    .test_before_acquire(false)
                    .max_connections(max_connections.max(1))
                    .acquire_timeout(Duration::from_secs(30))
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            conn.execute("PRAGMA busy_timeout = 10000").await?;
                            conn.execute("PRAGMA foreign_keys = ON").await?;
                            Ok(())
                        })
                    })
                    .connect_lazy_with(AnyConnectOptions::from_str(&ro_url)?);
                let fast_reader = sqlite_file(url).map(|p| std::sync::Arc::new(sqlite_read::SyncReader::new(p)));
                Store {
                    writer,
                    reader,
                    backend,
                    fast_reader,
                    pages: Default::default(),
                    live: live::LiveBus::new(None),
                }
            }
            Backend::Postgres => {
                let pool = AnyPoolOptions::new()
                    .max_connections(max_connections.max(2))
                    .acquire_timeout(Duration::from_secs(30))
                    .connect_with(AnyConnectOptions::from_str(url)?)
                    .await?;
                // The schema names this deployment's live events and its instance lock (D17.3,
                // D17.5): one database may hold several deployments (and the tests' servers).
                let (schema,): (String,) = sqlx::query_as("SELECT current_schema()::text").fetch_one(&pool).await?;
                let live = live::LiveBus::new(Some(schema));
                Store {
                    writer: pool.clone(),
                    reader: pool,
                    backend,
                    fast_reader: None,
                    pages: Default::default(),
                    live,
                }
            }
        };
        store.migrate().await?;
        Ok(store)
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Opens a write transaction on the writer (see [`StoreTx`]).
    pub async fn begin(&self) -> StoreResult<StoreTx> {
        let tx = self.writer().begin().await?;
        Ok(StoreTx { tx, backend: self.backend, live: self.live.clone(), published: Vec::new() })
    }

    /// Live changes of this store (D17.5): subscribe, or deliver what a listener received.
    pub fn live(&self) -> &live::LiveBus {
        &self.live
    }

    pub(crate) fn writer(&self) -> &AnyPool {
        &self.writer
    }

    pub(crate) fn reader(&self) -> &AnyPool {
        &self.reader
    }

    /// The database's current version and the page cache valid for it, when pages can be cached
    /// (a SQLite file; see `page_cache`). `None` means: read and render afresh.
    pub fn page_cache(&self) -> Option<(i64, &page_cache::PageCache)> {
        let version = self.fast_reader.as_ref()?.data_version().ok()?;
        Some((version, &self.pages))
    }

    /// The synchronous SQLite reader, on a SQLite file (not PostgreSQL, not `:memory:`).
    pub(crate) fn fast_reader(&self) -> Option<&sqlite_read::SyncReader> {
        self.fast_reader.as_deref()
    }

    /// Applies the embedded migrations not yet applied, each in its own transaction.
    /// On PostgreSQL an advisory lock keeps two starting processes from racing.
    async fn migrate(&self) -> anyhow::Result<()> {
        let mut conn = self.writer.acquire().await?;
        if self.backend == Backend::Postgres {
            conn.execute("SELECT pg_advisory_lock(7419327)").await?;
        }
        let result = async {
            conn.execute(
                "CREATE TABLE IF NOT EXISTS tessera_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
            )
            .await?;
            for (version, name, sql) in MIGRATIONS {
                let done: Option<(i64,)> = sqlx::query_as("SELECT version FROM tessera_migrations WHERE version = $1")
                    .bind(version)
                    .fetch_optional(&mut *conn)
                    .await?;
                if done.is_some() {
                    continue;
                }
                let mut tx = sqlx::Connection::begin(&mut *conn).await?;
                sqlx::raw_sql(sql).execute(&mut *tx).await?;
                sqlx::query("INSERT INTO tessera_migrations (version, name, applied_at) VALUES ($1, $2, $3)")
                    .bind(version)
                    .bind(*name)
                    .bind(crate::domain::time::now_ms())
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                tracing::info!(version, name, "applied migration");
            }
            anyhow::Ok(())
        }
        .await;
        if self.backend == Backend::Postgres {
            conn.execute("SELECT pg_advisory_unlock(7419327)").await?;
        }
        result
    }

    /// `GET /readyz`: the store answers a trivial query.
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").execute(&self.reader).await.is_ok()
    }
}

fn sqlite_file(url: &str) -> Option<String> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next()?;
    (!path.is_empty() && path != ":memory:").then(|| path.to_string())
}

/// The writer opens the file read-write and creates it when missing, as the data-dir default
/// does: a `sqlite://path` URL without a `mode` would otherwise fail on a new file. An explicit
/// `mode` is kept.
fn writer_url(url: &str) -> String {
    if sqlite_file(url).is_none()
        || url.split_once('?').is_some_and(|(_, q)| q.split('&').any(|p| p.starts_with("mode=")))
    {
        return url.to_string();
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}mode=rwc")
}

fn read_only_url(url: &str) -> String {
    let base = url.split('?').next().unwrap_or(url);
    format!("{base}?mode=ro")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sqlite_url_without_a_mode_is_created_when_missing() {
        assert_eq!(writer_url("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db?mode=rwc");
        assert_eq!(writer_url("sqlite://x.db?cache=shared"), "sqlite://x.db?cache=shared&mode=rwc");
        assert_eq!(writer_url("sqlite://x.db?mode=ro"), "sqlite://x.db?mode=ro");
        assert_eq!(writer_url("sqlite::memory:"), "sqlite::memory:");
    }
}

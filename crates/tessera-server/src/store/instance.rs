//! The start guard of a serving instance (D17.3, D17.39): who else may serve the same data.
//! - PostgreSQL: a session advisory lock on one dedicated connection held for the instance's
//!   life, keyed by Tessera and the schema (one database may hold several deployments, and the
//!   tests' servers each have their own schema). With Redis it is taken in shared mode, without
//!   Redis exclusively, so any number of instances with Redis may serve, one without may serve
//!   alone, and any mix of the two is refused.
//! - SQLite: one process per data dir, by an OS lock on `<data_dir>/tessera.lock` (released by
//!   the kernel when the process dies, so a SIGKILLed server never blocks its restart).
//!
//! The operator CLI (`tessera admin`) takes neither: it runs beside a serving instance.
use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::Connection as _;
use tokio_util::sync::CancellationToken;

/// How often the lock's connection is checked (and, once lost, retaken).
const CHECK_EVERY: Duration = Duration::from_secs(10);
/// How long a starting instance waits for a lock a just-killed predecessor still holds.
const TAKE_GRACE: Duration = Duration::from_secs(3);
/// How often it asks meanwhile.
const TAKE_RETRY: Duration = Duration::from_millis(100);

/// The lock key: Tessera's and the schema's, as one bigint for `pg_try_advisory_lock*`.
const KEY_SQL: &str = "('x' || substr(md5('tessera:instance:' || current_schema()), 1, 16))::bit(64)::bigint";

/// Why a guard could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// Another instance holds the data (exit 2, D17.3); the message says what to do.
    #[error("{0}")]
    Refused(String),
    #[error("taking the instance lock: {0}")]
    Failed(#[from] anyhow::Error),
}

/// What an instance holds while it serves; [`InstanceGuard::release`] gives it back.
#[derive(Debug)]
pub struct InstanceGuard {
    held: Held,
}

#[derive(Debug)]
enum Held {
    /// The open lock file; closing it releases the lock.
    Sqlite { _file: std::fs::File },
    /// The task that holds the lock's connection; cancelling it closes the connection.
    Postgres { stop: CancellationToken, task: Option<tokio::task::JoinHandle<()>> },
}

/// What the guard needs of the configuration.
#[derive(Debug, Clone)]
pub struct GuardSpec<'a> {
    /// The effective database URL (`sqlite:…` or `postgres:…`).
    pub database_url: &'a str,
    pub data_dir: &'a Path,
    /// Whether this instance shares its replay store through Redis (`REDIS_URL`).
    pub shared: bool,
}

impl InstanceGuard {
    /// Takes the guard for `spec`, or says who holds it.
    pub async fn take(spec: GuardSpec<'_>) -> Result<InstanceGuard, GuardError> {
        let held = if spec.database_url.starts_with("sqlite:") {
            Held::Sqlite { _file: lock_data_dir(spec.data_dir)? }
        } else {
            let mut conn = connect(spec.database_url).await?;
            let mut waited = Duration::ZERO;
            let (schema, got) = loop {
                let (schema, got) = try_lock(&mut conn, spec.shared).await.map_err(GuardError::Failed)?;
                // A predecessor killed a moment ago (SIGKILL, a crash, then an immediate restart by
                // systemd) holds the lock until the database notices its session ended: wait that
                // out before refusing, rather than fail the restart.
                if got || waited >= TAKE_GRACE {
                    break (schema, got);
                }
                tokio::time::sleep(TAKE_RETRY).await;
                waited += TAKE_RETRY;
            };
            if !got {
                return Err(GuardError::Refused(refusal(&schema, spec.shared)));
            }
            tracing::info!(schema, mode = if spec.shared { "shared" } else { "exclusive" }, "instance lock taken");
            let stop = CancellationToken::new();
            let task = tokio::spawn(hold(conn, spec.database_url.to_string(), spec.shared, stop.clone()));
            Held::Postgres { stop, task: Some(task) }
        };
        Ok(InstanceGuard { held })
    }

    /// Gives the lock back now (a server stopping lets the next one start on the same data).
    pub async fn release(mut self) {
        if let Held::Postgres { stop, task } = &mut self.held {
            stop.cancel();
            if let Some(task) = task.take() {
                let _ = task.await;
            }
        }
        // The lock file closes when `self` drops here.
    }
}

impl Drop for InstanceGuard {
    fn drop(&mut self) {
        // Dropped without `release` (a build that failed after taking it): the holder closes
        // its connection on its own.
        if let Held::Postgres { stop, .. } = &self.held {
            stop.cancel();
        }
    }
}

fn lock_path(data_dir: &Path) -> PathBuf {
    data_dir.join("tessera.lock")
}

fn lock_data_dir(data_dir: &Path) -> Result<std::fs::File, GuardError> {
    let path = lock_path(data_dir);
    let open = || -> std::io::Result<std::fs::File> {
        std::fs::create_dir_all(data_dir)?;
        std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path)
    };
    let file = open().map_err(|e| GuardError::Failed(anyhow::anyhow!("opening {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(GuardError::Refused(format!(
            "another tessera instance serves the data dir {} (it holds {}); SQLite allows one instance per data dir, \
             with or without REDIS_URL: stop it first, or use PostgreSQL and REDIS_URL for several instances (D17.3)",
            data_dir.display(),
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(GuardError::Failed(anyhow::anyhow!("locking {}: {e}", path.display())))
        }
    }
}

fn refusal(schema: &str, shared: bool) -> String {
    if shared {
        format!(
            "another tessera instance serves this database (schema {schema}) without REDIS_URL; \
             instances on one database must all set REDIS_URL, or one alone serves without it (D17.3, D17.39)"
        )
    } else {
        format!(
            "another tessera instance serves this database (schema {schema}); without REDIS_URL only one instance \
             may serve it: set REDIS_URL on every instance to run several (D17.3, D17.39)"
        )
    }
}

async fn connect(url: &str) -> Result<sqlx::PgConnection, GuardError> {
    sqlx::PgConnection::connect(url).await.map_err(|e| GuardError::Failed(anyhow::anyhow!("connecting: {e}")))
}

/// Tries the lock in the mode `shared` asks; answers the schema and whether it was taken.
async fn try_lock(conn: &mut sqlx::PgConnection, shared: bool) -> anyhow::Result<(String, bool)> {
    let function = if shared { "pg_try_advisory_lock_shared" } else { "pg_try_advisory_lock" };
    let sql = format!("SELECT current_schema()::text, {function}({KEY_SQL})");
    Ok(sqlx::query_as(&sql).fetch_one(conn).await?)
}

/// Holds the lock's connection until `stop`. A lost connection is logged loudly (another
/// instance without Redis could now start beside this one) and the lock taken again as soon as
/// the database answers; the instance keeps serving meanwhile.
async fn hold(conn: sqlx::PgConnection, url: String, shared: bool, stop: CancellationToken) {
    let mut conn = Some(conn);
    let mut tick = tokio::time::interval(CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        conn = match conn.take() {
            Some(mut c) => match c.ping().await {
                Ok(()) => Some(c),
                Err(e) => {
                    tracing::error!(error = %e, "instance lock LOST: its database connection failed; retaking it (D17.3)");
                    None
                }
            },
            None => retake(&url, shared).await,
        };
    }
    if let Some(c) = conn {
        // Closing the session releases the lock now rather than when the server notices.
        let _ = c.close().await;
    }
}

async fn retake(url: &str, shared: bool) -> Option<sqlx::PgConnection> {
    let mut c = connect(url).await.ok()?;
    match try_lock(&mut c, shared).await {
        Ok((schema, true)) => {
            tracing::warn!(schema, "instance lock taken again");
            Some(c)
        }
        Ok((schema, false)) => {
            tracing::error!(schema, "instance lock NOT retaken: {}", refusal(&schema, shared));
            None
        }
        Err(e) => {
            tracing::error!(error = %e, "instance lock still lost");
            None
        }
    }
}

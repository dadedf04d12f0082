//! Live changes across instances (D17.5): the receiving half, one per process. Flows publish in
//! their transaction (`StoreTx::publish`, `store::live`); here every instance's subscribers
//! (the leaderboard stream, the console counters) receive what committed anywhere:
//! - PostgreSQL: one `PgListener` on `tessera_events` per instance, keeping the events of its
//!   own schema (the database may hold other deployments, and the tests' servers) and handing
//!   them to the in-process bus. Events this instance published come back the same way.
//! - SQLite: the store hands events to the bus itself after each commit.
//!
//! Events are hints, not records: a subscriber re-reads the store, so an event missed while the
//! listener reconnects costs a late refresh, never a wrong number.
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::store::live::{LiveEvent, CHANNEL};
use crate::store::{Backend, Store};

/// How long the listener waits before asking again after PostgreSQL could not be reached.
const RETRY: Duration = Duration::from_secs(1);

pub struct Live {
    store: Store,
    stop: CancellationToken,
    /// Cancelled when the server starts to stop: open streams (the leaderboard's) end then, so
    /// the graceful stop, which waits for every response to finish, never waits on them.
    closing: CancellationToken,
    listener: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Live {
    /// Starts listening (PostgreSQL) before it returns, so nothing committed after the instance
    /// is built is missed.
    pub async fn start(store: Store, database_url: &str) -> anyhow::Result<Live> {
        let stop = CancellationToken::new();
        let listener = match store.backend() {
            Backend::Sqlite => None,
            Backend::Postgres => {
                let mut listener =
                    sqlx::postgres::PgListener::connect(database_url).await.context("live changes: connecting")?;
                listener.listen(CHANNEL).await.context("live changes: LISTEN")?;
                Some(tokio::spawn(listen(listener, store.clone(), stop.clone())))
            }
        };
        Ok(Live { store, stop, closing: CancellationToken::new(), listener: std::sync::Mutex::new(listener) })
    }

    /// Every event committed from now on, on any instance serving this database and schema.
    pub fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
        self.store.live().subscribe()
    }

    /// Cancelled when the server begins its graceful stop; a live stream ends on it.
    pub fn closing(&self) -> CancellationToken {
        self.closing.clone()
    }

    /// A live view's pace: subscribed now (before the view's first read, so nothing committed
    /// in between is missed), re-reads at most once per `gap`.
    pub fn changes(&self, gap: Duration) -> Changes {
        Changes { events: self.subscribe(), closing: self.closing(), gap, sent_at: None }
    }

    /// Stops listening (the server is stopping).
    pub async fn stop(&self) {
        self.closing.cancel();
        self.stop.cancel();
        let task = self.listener.lock().ok().and_then(|mut l| l.take());
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

/// When a live view (the leaderboard stream, the console counters) re-reads the store: after an
/// event it wants (or a lag: events are hints), never sooner than `gap` after its last send,
/// with the events that arrived meanwhile folded into that one read.
pub struct Changes {
    events: broadcast::Receiver<LiveEvent>,
    closing: CancellationToken,
    gap: Duration,
    sent_at: Option<tokio::time::Instant>,
}

impl Changes {
    /// Notes that the view just sent (its first read included).
    pub fn sent(&mut self) {
        self.sent_at = Some(tokio::time::Instant::now());
    }

    /// Waits until the view should re-read: `Some(())`, or `None` when the server is stopping.
    pub async fn next(&mut self, wanted: impl Fn(&LiveEvent) -> bool) -> Option<()> {
        use broadcast::error::RecvError;
        loop {
            let received = tokio::select! {
                _ = self.closing.cancelled() => return None,
                r = self.events.recv() => r,
            };
            match received {
                Ok(e) if wanted(&e) => break,
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => break,
                Err(RecvError::Closed) => return None,
            }
        }
        if let Some(at) = self.sent_at {
            tokio::select! {
                _ = self.closing.cancelled() => return None,
                _ = tokio::time::sleep_until(at + self.gap) => {}
            }
        }
        while self.events.try_recv().is_ok() {}
        Some(())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn listen(mut listener: sqlx::postgres::PgListener, store: Store, stop: CancellationToken) {
    loop {
        let received = tokio::select! {
            _ = stop.cancelled() => return,
            r = listener.recv() => r,
        };
        match received {
            Ok(n) => {
                if let Some(event) = store.live().decode(n.payload()) {
                    store.live().deliver(event);
                }
            }
            // `recv` reconnects (and listens again) by itself on its next call; this is the case
            // where PostgreSQL did not answer that attempt.
            Err(e) => {
                tracing::warn!(error = %e, "live changes: listener lost PostgreSQL; retrying");
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(RETRY) => {}
                }
            }
        }
    }
}

//! The application: builds the state, the router and the workers from config, and serves until a
//! shutdown signal (in-flight requests finish first). Nothing below imports this module.
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::auth::directory::KeyDirectory;
use crate::auth::guard::Guards;
use crate::auth::replay::ReplayStore;
use crate::config::{Config, StartRefused};
use crate::domain::time::now_ms;
use crate::providers::outbound::Outbound;
use crate::state::AppInner;
pub use crate::state::{open_store, AppState};
use crate::store::instance::{GuardError, GuardSpec, InstanceGuard};

pub struct Application {
    listener: TcpListener,
    state: AppState,
    /// Who else may serve this data (D17.3, D17.39); given back when serving stops.
    guard: InstanceGuard,
}

impl Application {
    /// Binds the listener (port 0 picks a free port) and prepares the state.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        // First, so that a refused instance (exit 2) touches nothing and never listens.
        let guard = take_guard(&config).await?;
        let (store, keyring) = open_store(&config).await?;
        let directory = KeyDirectory::load(store.clone(), keyring).await?;
        let shared = match config.redis.enabled() {
            true => Some(crate::auth::shared::SharedGuards::new(&config.redis, &config.security)?),
            false => None,
        };
        if let Some(shared) = &shared {
            // Unreachable: start anyway (D17.39); signed requests answer 503 until it answers.
            shared.begin_epoch(now_ms()).await;
        }
        let listener = TcpListener::bind(config.listen).await.with_context(|| format!("binding {}", config.listen))?;
        let state = AppState::new(AppInner {
            replay: ReplayStore::new(config.security.replay_capacity),
            guards: Guards::new(&config.security),
            shared,
            started_at_ms: now_ms(),
            openapi_json: crate::http::openapi().to_json().context("openapi")?,
            worker_id: crate::domain::new_id(),
            callbacks: crate::store::callbacks::callback_writer(store.clone()),
            checkins: crate::flows::gate::checkin_writer(store.clone()),
            outbound: Outbound::new(
                Duration::from_millis(config.providers.timeout_ms),
                config.security.allow_private_endpoints,
            )?,
            live: crate::live::Live::start(store.clone(), &config.effective_database_url()).await?,
            directory,
            store,
            config,
        });
        // Operators read which instances run jobs from here (D17.4).
        tracing::info!(
            workers = if state.config.workers.enabled { "on" } else { "off" },
            redis = state.config.redis.enabled(),
            "instance ready"
        );
        Ok(Application { listener, state, guard })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or_else(|_| self.state.config.listen)
    }

    pub fn state(&self) -> AppState {
        self.state.clone()
    }

    /// Serves until `shutdown` resolves, then lets in-flight requests finish.
    pub async fn run_until_stopped(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let cancel = CancellationToken::new();
        let background = tokio::spawn(maintenance(self.state.clone(), cancel.clone()));
        let probe = self.state.shared.is_some().then(|| {
            let (state, cancel) = (self.state.clone(), cancel.clone());
            tokio::spawn(async move {
                if let Some(shared) = &state.shared {
                    shared.probe(cancel).await;
                }
            })
        });
        let workers =
            if self.state.config.workers.enabled { crate::workers::spawn(&self.state, &cancel) } else { Vec::new() };
        let app = crate::http::router(self.state.clone());
        // Open live streams end as the stop begins (the graceful stop waits for every response).
        let closing = self.state.live.closing();
        let shutdown = async move {
            shutdown.await;
            closing.cancel();
        };
        let result = crate::http::serve::run(self.listener, app, &self.state.config, shutdown).await;
        cancel.cancel();
        let _ = background.await;
        if let Some(p) = probe {
            let _ = p.await;
        }
        // Each worker finishes the job it is on; whatever is still claimed goes back (D16.22).
        for w in workers {
            let _ = w.await;
        }
        match self.state.store.release_claims(&self.state.worker_id).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(jobs = n, "handed claimed jobs back"),
            Err(e) => tracing::warn!(error = %e, "handing claimed jobs back failed; their leases will expire"),
        }
        self.state.live.stop().await;
        // Given back here, not when the last state handle goes: a test (or an operator) that
        // stopped this server may start the next one on the same data at once.
        self.guard.release().await;
        result
    }
}

/// Takes the start guard (D17.3, D17.39), turning "someone else serves this data" into the
/// refusal that exits 2.
async fn take_guard(config: &Config) -> anyhow::Result<InstanceGuard> {
    let url = config.effective_database_url();
    let spec = GuardSpec { database_url: &url, data_dir: config.data_dir(), shared: config.redis.enabled() };
    match InstanceGuard::take(spec).await {
        Ok(guard) => Ok(guard),
        Err(GuardError::Refused(why)) => Err(StartRefused(why).into()),
        Err(GuardError::Failed(e)) => Err(e.context("instance lock")),
    }
}

/// Periodic upkeep: refresh the key directory, purge the replay store and idle limiter keys,
/// forget day-old USSD sessions.
async fn maintenance(state: AppState, cancel: CancellationToken) {
    let refresh = Duration::from_millis(state.config.security.auth_cache_refresh_ms.max(50));
    let mut tick = tokio::time::interval(refresh);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_purge = now_ms();
    let mut last_queue_gauge = 0;
    let mut last_session_prune = 0;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(e) = state.directory.refresh().await {
            tracing::warn!(error = %e, "refreshing the key directory failed; keeping the cached one");
        }
        let now = now_ms();
        if now - last_queue_gauge >= 5_000 {
            crate::telemetry::metrics::upkeep();
            queue_gauges(&state, now).await;
            last_queue_gauge = now;
        }
        if now - last_purge >= 30_000 {
            state.replay.purge(now);
            state.guards.retain_recent();
            last_purge = now;
        }
        // USSD sessions last minutes; a day later nobody repeats their requests.
        if now - last_session_prune >= 600_000 {
            if let Err(e) = state.store.prune_ussd_sessions(now - 86_400_000).await {
                tracing::warn!(error = %e, "pruning old USSD sessions failed");
            }
            last_session_prune = now;
        }
    }
}

/// Worker queue depth and the age of the oldest job, per queue (issue 12's metrics).
async fn queue_gauges(state: &AppState, now: i64) {
    let Ok(stats) = state.store.queue_stats().await else { return };
    for queue in crate::store::jobs::queue::ALL {
        let s = stats.iter().find(|s| s.queue == queue);
        crate::telemetry::metrics::job_queue_depth(queue, s.map_or(0, |s| u64::try_from(s.depth).unwrap_or(0)));
        let age = s.and_then(|s| s.oldest_created_at).map_or(0.0, |t| (now - t).max(0) as f64 / 1000.0);
        crate::telemetry::metrics::oldest_job_age(queue, age);
    }
}

/// A future that resolves on SIGINT or SIGTERM. The handlers are installed when this is
/// called, not when the future is first polled, so call it before announcing that the server
/// listens: a signal in between would otherwise kill the process without a graceful stop.
pub fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        let mut terminate = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {},
                _ = terminate.recv() => {},
            }
            tracing::info!("shutdown signal received; finishing in-flight requests");
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("shutdown signal received; finishing in-flight requests");
        })
    }
}

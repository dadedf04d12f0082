//! Background workers (D16.8, D16.22). Work that outlives a request is a job row written in the
//! same transaction as the change that caused it. Each worker claims one job at a time with a
//! lease (`workers.lease_seconds`), so a job of a killed process is redone once its lease runs
//! out, and every effect a job has is guarded so that redoing it changes nothing. A worker only
//! claims, calls its flow's step (`crate::flows`) and does what the step says next.
//! `try_execute_one` runs one due job (tests drain queues with it); `spawn` runs the loops
//! until the token is cancelled, then hands claimed jobs back.
pub mod callbacks;
pub mod charges;
pub mod deliveries;
pub mod momo;
pub mod notifications;
pub mod payouts;
pub mod refunds;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::domain::time::now_ms;
use crate::flows::Next;
use crate::state::AppState;
use crate::store::jobs::Job;

/// The outcome of one `try_execute_one`: whether a job was found.
pub type Step = Pin<Box<dyn Future<Output = anyhow::Result<bool>> + Send>>;

/// A worker loop: its name, one step, and the longest it sleeps when idle (ms; `workers.poll_ms`
/// when shorter).
type Worker = (&'static str, fn(AppState) -> Step, u64);

/// Queues no one waits on closely: they sleep `workers.poll_ms` when idle.
const POLL: u64 = u64::MAX;

/// The lease of a claim, milliseconds.
pub(crate) fn lease_ms(state: &AppState) -> i64 {
    state.config.workers.lease_ms()
}

/// Ends a claimed job, or hands it back to run again, as the flow's step said.
async fn follow(state: &AppState, job: &Job, next: Next) -> anyhow::Result<()> {
    match next {
        Next::Done => state.store.finish_job(job).await?,
        Next::Later { delay_ms, not_after, error } => {
            let run_at = (now_ms() + delay_ms).min(not_after.unwrap_or(i64::MAX));
            state.store.reschedule_job(job, &state.worker_id, run_at, delay_ms, error.as_deref()).await?;
        }
    }
    Ok(())
}

/// Starts every worker loop. Two loops per queue, so one slow provider call does not hold up
/// the rest of the queue.
pub fn spawn(state: &AppState, cancel: &CancellationToken) -> Vec<JoinHandle<()>> {
    let workers: [Worker; 8] = [
        ("callbacks", |s| Box::pin(async move { callbacks::try_execute_one(&s).await }), POLL),
        ("charges", |s| Box::pin(async move { charges::try_execute_one(&s).await }), POLL),
        ("payouts", |s| Box::pin(async move { payouts::try_execute_one(&s).await }), POLL),
        ("notifications", |s| Box::pin(async move { notifications::try_execute_one(&s).await }), POLL),
        ("momo", |s| Box::pin(async move { momo::try_execute_one(&s).await }), POLL),
        // An organization's backend waits on these: deliveries look for work at least every 100 ms.
        ("deliveries", |s| Box::pin(async move { deliveries::try_execute_one(&s).await }), deliveries::IDLE_MS_MAX),
        ("refunds", |s| Box::pin(async move { refunds::try_execute_one(&s).await }), POLL),
        ("cancellations", |s| Box::pin(async move { refunds::try_file_one(&s).await }), POLL),
    ];
    let mut handles = Vec::new();
    for (name, step, idle_max_ms) in workers {
        for _ in 0..2 {
            handles.push(tokio::spawn(run(state.clone(), cancel.clone(), name, step, idle_max_ms)));
        }
    }
    handles
}

async fn run(
    state: AppState,
    cancel: CancellationToken,
    name: &'static str,
    step: fn(AppState) -> Step,
    idle_max_ms: u64,
) {
    let idle = Duration::from_millis(state.config.workers.poll_ms.min(idle_max_ms).max(1));
    while !cancel.is_cancelled() {
        let found = match step(state.clone()).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(worker = name, error = %e, "worker step failed; retrying after a pause");
                false
            }
        };
        if !found {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(idle) => {}
            }
        }
    }
}

/// Runs every queue until none has a due job (tests; no sleeps). Returns how many ran.
pub async fn drain(state: &AppState) -> anyhow::Result<usize> {
    let mut ran = 0;
    loop {
        let mut any = false;
        while callbacks::try_execute_one(state).await? {
            ran += 1;
            any = true;
        }
        while charges::try_execute_one(state).await? {
            ran += 1;
            any = true;
        }
        while payouts::try_execute_one(state).await? {
            ran += 1;
            any = true;
        }
        while notifications::try_execute_one(state).await? {
            ran += 1;
            any = true;
        }
        while momo::try_execute_one(state).await? {
            ran += 1;
            any = true;
        }
        while deliveries::try_execute_one(state).await? {
            ran += 1;
            any = true;
        }
        while refunds::try_file_one(state).await? {
            ran += 1;
            any = true;
        }
        while refunds::try_execute_one(state).await? {
            ran += 1;
            any = true;
        }
        if !any {
            return Ok(ran);
        }
    }
}

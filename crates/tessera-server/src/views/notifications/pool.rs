//! The render pool (item 5): CPU-heavy rendering (QR images, templates) runs on a few
//! dedicated threads (half the cores, at least one), never on the runtime threads that answer
//! requests. A caller waits (asynchronously) for a free thread, so at most that many renders run
//! at once and none queue unboundedly.
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use tokio::sync::{oneshot, Semaphore};

type Job = Box<dyn FnOnce() + Send>;

struct Pool {
    jobs: Mutex<mpsc::Sender<Job>>,
    permits: Semaphore,
}

fn threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get() / 2).unwrap_or(1).max(1)
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = std::sync::Arc::new(Mutex::new(rx));
        let n = threads();
        for i in 0..n {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new().name(format!("tessera-render-{i}")).spawn(move || loop {
                let job = match rx.lock() {
                    Ok(r) => r.recv(),
                    Err(_) => return,
                };
                match job {
                    Ok(job) => job(),
                    Err(_) => return,
                }
            });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "render thread could not start");
            }
        }
        Pool { jobs: Mutex::new(tx), permits: Semaphore::new(n) }
    })
}

/// Runs `f` on the render pool and waits for its result.
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let pool = pool();
    let _permit = pool.permits.acquire().await.map_err(|_| "the render pool is closed".to_string())?;
    let (tx, rx) = oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(f());
    });
    pool.jobs
        .lock()
        .map_err(|_| "the render pool is poisoned".to_string())?
        .send(job)
        .map_err(|_| "the render pool is gone".to_string())?;
    rx.await.map_err(|_| "a render panicked".to_string())
}

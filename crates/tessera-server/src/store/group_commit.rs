//! Group commit: many small writes that arrive together share one database transaction.
//! Each caller still gets its answer only after the transaction holding its write committed, so
//! nothing is acknowledged before it is durable; a burst pays for one commit, not one per write.
//! Used by the callback hand-off (D6.2) and the gate's check-ins (D7.3), whose writes are tiny and
//! arrive by the thousand.
use std::future::Future;
use std::pin::Pin;

use tokio::sync::{mpsc, oneshot};

use super::{Store, StoreError, StoreResult};

/// Most writes one transaction takes.
const MAX_BATCH: usize = 256;

/// Writes a batch in one transaction and answers per item, in order.
pub type WriteBatch<I, O> =
    for<'a> fn(&'a Store, &'a [I]) -> Pin<Box<dyn Future<Output = StoreResult<Vec<O>>> + Send + 'a>>;

type Pending<I, O> = (I, oneshot::Sender<StoreResult<O>>);

/// A group-committing writer; cheap to clone. Its task ends when the last handle is dropped.
pub struct GroupCommit<I, O> {
    queue: mpsc::Sender<Pending<I, O>>,
}

impl<I, O> Clone for GroupCommit<I, O> {
    fn clone(&self) -> Self {
        GroupCommit { queue: self.queue.clone() }
    }
}

impl<I, O> std::fmt::Debug for GroupCommit<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GroupCommit")
    }
}

impl<I: Send + Sync + 'static, O: Send + 'static> GroupCommit<I, O> {
    pub fn start(store: Store, write: WriteBatch<I, O>) -> Self {
        let (queue, mut rx) = mpsc::channel::<Pending<I, O>>(4 * MAX_BATCH);
        tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                let mut items = vec![first.0];
                let mut replies = vec![first.1];
                while items.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok((item, reply)) => {
                            items.push(item);
                            replies.push(reply);
                        }
                        Err(_) => break,
                    }
                }
                match write(&store, &items).await {
                    Ok(answers) => {
                        for (reply, answer) in replies.into_iter().zip(answers) {
                            let _ = reply.send(Ok(answer));
                        }
                    }
                    // One write the database refuses must not fail the others: each alone.
                    Err(_) => {
                        for (item, reply) in items.iter().zip(replies) {
                            let answer = write(&store, std::slice::from_ref(item)).await.and_then(|mut v| {
                                v.pop().ok_or_else(|| StoreError::Corrupt("a batch write answered nothing".into()))
                            });
                            let _ = reply.send(answer);
                        }
                    }
                }
            }
        });
        GroupCommit { queue }
    }

    /// Writes `item` with whatever else is waiting; returns once its transaction committed.
    pub async fn write(&self, item: I) -> StoreResult<O> {
        let stopped = || StoreError::Corrupt("the group-commit writer has stopped".into());
        let (reply, answer) = oneshot::channel();
        self.queue.send((item, reply)).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

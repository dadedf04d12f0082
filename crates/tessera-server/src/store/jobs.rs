//! The job queue (ARCHITECTURE "Store", D16.8): work that outlives a request is a row written
//! in the same transaction as the change that caused it. A worker claims a due job by setting
//! its lease; a job whose worker died is claimed again when the lease has run out. A job ends by
//! being deleted in the same transaction as the effect it finishes, so a crash at any point
//! either leaves the job (redone; effects are guarded) or the finished effect.
use sqlx::Row;

use super::{Store, StoreResult};
use crate::domain::new_id;

/// The queues.
pub mod queue {
    /// Stored provider callbacks awaiting reconciliation (subject: the callback's id). The
    /// stored queue name is still `webhook` (written in rows; no migration).
    pub const CALLBACK: &str = "webhook";
    /// Pending charges: verify polling and hold expiry (subject: transaction reference).
    pub const CHARGE: &str = "charge";
    /// Withdrawals to pay out and transfers to poll (subject: withdrawal id).
    pub const PAYOUT: &str = "payout";
    /// Queued notifications (subject: notification id).
    pub const NOTIFICATION: &str = "notification";
    /// Mobile-money charges of USSD votes to make at the provider (subject: transaction
    /// reference, D17.21).
    pub const MOMO: &str = "momo_charge";
    /// Refunds to create at the provider and to poll (subject: refund id, D17.36).
    pub const REFUND: &str = "refund";
    /// Cancelled campaigns whose buyers' refunds are still to file (subject: campaign id,
    /// D17.37).
    pub const CAMPAIGN_CANCEL: &str = "campaign_cancel";
    /// Every queue, for metrics.
    pub const ALL: [&str; 7] = [CALLBACK, CHARGE, PAYOUT, NOTIFICATION, MOMO, REFUND, CAMPAIGN_CANCEL];
}

#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub queue: String,
    pub subject: String,
    /// Claims so far, this one included.
    pub attempts: i64,
    /// The last delay of a doubling schedule (0 before the first).
    pub step_ms: i64,
    pub created_at: i64,
}

/// Adds a job in the caller's transaction; a job already queued for the subject stays as it is.
pub(crate) async fn enqueue(
    conn: &mut sqlx::AnyConnection,
    queue: &str,
    subject: &str,
    run_at: i64,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO jobs (id, queue, subject, run_at, created_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (queue, subject) DO NOTHING",
    )
    .bind(new_id())
    .bind(queue)
    .bind(subject)
    .bind(run_at)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Ends the subject's job in the caller's transaction (no-op when there is none).
pub(crate) async fn finish(conn: &mut sqlx::AnyConnection, queue: &str, subject: &str) -> StoreResult<()> {
    sqlx::query("DELETE FROM jobs WHERE queue = $1 AND subject = $2").bind(queue).bind(subject).execute(conn).await?;
    Ok(())
}

/// Depth and age of a queue, for metrics and operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStats {
    pub queue: String,
    pub depth: i64,
    pub oldest_created_at: Option<i64>,
}

impl Store {
    /// Claims the next due job of `queue` for `worker` until `now + lease_ms`.
    pub async fn claim_job(&self, queue: &str, worker: &str, now: i64, lease_ms: i64) -> StoreResult<Option<Job>> {
        // A lost race (another worker claimed the candidate first) tries the next candidate.
        for _ in 0..8 {
            let Some(row) = sqlx::query(
                "SELECT id, queue, subject, attempts, step_ms, created_at FROM jobs \
                 WHERE queue = $1 AND run_at <= $2 AND lease_until < $2 ORDER BY run_at LIMIT 1",
            )
            .bind(queue)
            .bind(now)
            .fetch_optional(self.reader())
            .await?
            else {
                return Ok(None);
            };
            let id: String = row.try_get("id")?;
            let claimed = sqlx::query(
                "UPDATE jobs SET lease_until = $1, claimed_by = $2, attempts = attempts + 1 \
                 WHERE id = $3 AND lease_until < $4",
            )
            .bind(now + lease_ms)
            .bind(worker)
            .bind(&id)
            .bind(now)
            .execute(self.writer())
            .await?
            .rows_affected();
            if claimed == 1 {
                return Ok(Some(Job {
                    id,
                    queue: row.try_get("queue")?,
                    subject: row.try_get("subject")?,
                    attempts: row.try_get::<i64, _>("attempts")? + 1,
                    step_ms: row.try_get("step_ms")?,
                    created_at: row.try_get("created_at")?,
                }));
            }
        }
        Ok(None)
    }

    /// Hands a claimed job back to run again at `run_at` (a retry or the next poll).
    pub async fn reschedule_job(
        &self,
        job: &Job,
        worker: &str,
        run_at: i64,
        step_ms: i64,
        error: Option<&str>,
    ) -> StoreResult<()> {
        sqlx::query(
            "UPDATE jobs SET run_at = $1, step_ms = $2, last_error = $3, lease_until = 0, claimed_by = NULL \
             WHERE id = $4 AND claimed_by = $5",
        )
        .bind(run_at)
        .bind(step_ms)
        .bind(error)
        .bind(&job.id)
        .bind(worker)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Deletes a job on its own (when its effect needed no transaction of its own).
    pub async fn finish_job(&self, job: &Job) -> StoreResult<()> {
        sqlx::query("DELETE FROM jobs WHERE id = $1").bind(&job.id).execute(self.writer()).await?;
        Ok(())
    }

    /// SIGTERM (D16.22): hands every job this worker still holds back to the queue at once.
    pub async fn release_claims(&self, worker: &str) -> StoreResult<u64> {
        Ok(sqlx::query("UPDATE jobs SET lease_until = 0, claimed_by = NULL WHERE claimed_by = $1")
            .bind(worker)
            .execute(self.writer())
            .await?
            .rows_affected())
    }

    /// Depth and oldest job of every queue that has jobs.
    pub async fn queue_stats(&self) -> StoreResult<Vec<QueueStats>> {
        let rows = sqlx::query(
            "SELECT queue, COUNT(*) AS depth, MIN(created_at) AS oldest FROM jobs GROUP BY queue ORDER BY queue",
        )
        .fetch_all(self.reader())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(QueueStats {
                    queue: r.try_get("queue")?,
                    depth: r.try_get("depth")?,
                    oldest_created_at: r.try_get("oldest")?,
                })
            })
            .collect()
    }
}

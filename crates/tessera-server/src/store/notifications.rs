//! Notifications (D9.2, D13): a row and its `notification` job written in one transaction
//! (D13.1), the reads, and the delivery states the worker moves them through:
//! queued → sending → sent | failed (back to queued between attempts, with `lastError`).
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::jobs::{self, queue};
use super::query::{Arg, Filter};
use super::{Store, StoreError, StoreResult};
use crate::domain::new_id;
use crate::domain::notifications::{NotificationChannel, NotificationRequest, NotificationStatus};

#[derive(Debug, Clone)]
pub struct Notification {
    pub id: String,
    pub account_id: String,
    pub channel: NotificationChannel,
    pub event_type: String,
    pub recipient: String,
    pub subject: Option<String>,
    pub payload: Value,
    pub status: NotificationStatus,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub sent_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What a new notification says.
#[derive(Debug, Clone)]
pub struct NewNotification<'a> {
    pub channel: &'a str,
    pub event_type: &'a str,
    pub recipient: &'a str,
    pub subject: Option<&'a str>,
    pub payload: &'a Value,
}

const COLUMNS: &str = "id, account_id, channel, event_type, recipient, subject, payload, status, attempts, \
    last_error, sent_at, created_at, updated_at";

fn from_row(r: &AnyRow) -> StoreResult<Notification> {
    let payload: String = r.try_get("payload")?;
    let channel: String = r.try_get("channel")?;
    let status: String = r.try_get("status")?;
    let corrupt = |what: &str| StoreError::Corrupt(format!("notification {what}"));
    Ok(Notification {
        id: r.try_get("id")?,
        account_id: r.try_get("account_id")?,
        channel: NotificationChannel::parse("channel", &channel).map_err(|_| corrupt("channel"))?,
        event_type: r.try_get("event_type")?,
        recipient: r.try_get("recipient")?,
        subject: r.try_get("subject")?,
        payload: serde_json::from_str(&payload)
            .map_err(|e| StoreError::Corrupt(format!("notification payload: {e}")))?,
        status: NotificationStatus::parse("status", &status).map_err(|_| corrupt("status"))?,
        attempts: r.try_get("attempts")?,
        last_error: r.try_get("last_error")?,
        sent_at: r.try_get("sent_at")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Queues a notification and its delivery job in the caller's transaction; returns its id.
pub(crate) async fn queue_notification(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    n: &NewNotification<'_>,
    now: i64,
) -> StoreResult<String> {
    let id = new_id();
    sqlx::query(
        "INSERT INTO notifications (id, account_id, channel, event_type, recipient, subject, payload, status, \
         created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8, $8)",
    )
    .bind(&id)
    .bind(account_id)
    .bind(n.channel)
    .bind(n.event_type)
    .bind(n.recipient)
    .bind(n.subject)
    .bind(n.payload.to_string())
    .bind(now)
    .execute(&mut *conn)
    .await?;
    jobs::enqueue(conn, queue::NOTIFICATION, &id, now, now).await?;
    Ok(id)
}

/// Which notifications a list shows.
#[derive(Debug, Default, Clone)]
pub struct NotificationQuery {
    pub status: Option<NotificationStatus>,
    pub channel: Option<NotificationChannel>,
    pub page: u32,
    pub limit: u32,
}

impl Store {
    /// `POST /notifications`: the row and its job in one transaction (D13.1).
    pub async fn create_notification(
        &self,
        account_id: &str,
        r: NotificationRequest,
        now: i64,
    ) -> StoreResult<Notification> {
        let n = NewNotification {
            channel: r.channel.as_str(),
            event_type: &r.event_type,
            recipient: &r.recipient,
            subject: r.subject.as_deref(),
            payload: &r.payload,
        };
        let mut tx = self.writer().begin().await?;
        let id = queue_notification(&mut tx, account_id, &n, now).await?;
        tx.commit().await?;
        Ok(Notification {
            id,
            account_id: account_id.to_string(),
            channel: r.channel,
            event_type: r.event_type,
            recipient: r.recipient,
            subject: r.subject,
            payload: r.payload,
            status: NotificationStatus::Queued,
            attempts: 0,
            last_error: None,
            sent_at: None,
            created_at: now,
            updated_at: now,
        })
    }

    /// One notification of the account.
    pub async fn notification(&self, account_id: &str, id: &str) -> StoreResult<Notification> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM notifications WHERE id = $1 AND account_id = $2"))
            .bind(id)
            .bind(account_id)
            .fetch_optional(self.reader())
            .await?
            .ok_or(StoreError::NotFound("notification"))?;
        from_row(&row)
    }

    /// A notification by id alone (the worker, which got the id from the queue).
    pub async fn notification_by_id(&self, id: &str) -> StoreResult<Option<Notification>> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM notifications WHERE id = $1"))
            .bind(id)
            .fetch_optional(self.writer())
            .await?;
        row.as_ref().map(from_row).transpose()
    }

    /// A page of the account's notifications, newest first.
    pub async fn list_notifications(
        &self,
        account_id: &str,
        q: &NotificationQuery,
    ) -> StoreResult<(Vec<Notification>, u64)> {
        let mut f = Filter::new();
        f.and("account_id = ?", Arg::Text(account_id.into()));
        if let Some(s) = q.status {
            f.and("status = ?", Arg::Text(s.as_str().into()));
        }
        if let Some(c) = q.channel {
            f.and("channel = ?", Arg::Text(c.as_str().into()));
        }
        self.page(COLUMNS, "FROM notifications", "created_at DESC, id DESC", &f, (q.page, q.limit), from_row).await
    }

    /// An attempt starts: `sending`, one more attempt. Returns the attempt's number, or `None`
    /// when the notification is already final.
    pub async fn start_attempt(&self, id: &str, now: i64) -> StoreResult<Option<i64>> {
        let row = sqlx::query(
            "UPDATE notifications SET status = 'sending', attempts = attempts + 1, updated_at = $1 \
             WHERE id = $2 AND status IN ('queued', 'sending') RETURNING attempts",
        )
        .bind(now)
        .bind(id)
        .fetch_optional(self.writer())
        .await?;
        Ok(row.map(|r| r.try_get::<i64, _>("attempts")).transpose()?)
    }

    /// Delivered: `sent`, and the job ends with it. `scrub` replaces the payload (a passcode
    /// is not kept once it has been sent).
    pub async fn notification_sent(&self, id: &str, scrub: Option<&Value>, now: i64) -> StoreResult<()> {
        self.end_notification(id, NotificationStatus::Sent, None, scrub, now).await
    }

    /// Given up: `failed` with the last error, and the job ends with it.
    pub async fn notification_failed(&self, id: &str, error: &str, scrub: Option<&Value>, now: i64) -> StoreResult<()> {
        self.end_notification(id, NotificationStatus::Failed, Some(error), scrub, now).await
    }

    async fn end_notification(
        &self,
        id: &str,
        status: NotificationStatus,
        error: Option<&str>,
        scrub: Option<&Value>,
        now: i64,
    ) -> StoreResult<()> {
        let mut tx = self.writer().begin().await?;
        sqlx::query(
            "UPDATE notifications SET status = $1, last_error = COALESCE($2, last_error), \
             sent_at = CASE WHEN $1 = 'sent' THEN $3 ELSE sent_at END, updated_at = $3, \
             payload = COALESCE($4, payload) WHERE id = $5",
        )
        .bind(status.as_str())
        .bind(error)
        .bind(now)
        .bind(scrub.map(Value::to_string))
        .bind(id)
        .execute(&mut *tx)
        .await?;
        jobs::finish(&mut tx, queue::NOTIFICATION, id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// An attempt failed and another will follow: back to `queued` with the error.
    pub async fn notification_retry(&self, id: &str, error: &str, now: i64) -> StoreResult<()> {
        sqlx::query("UPDATE notifications SET status = 'queued', last_error = $1, updated_at = $2 WHERE id = $3")
            .bind(error)
            .bind(now)
            .bind(id)
            .execute(self.writer())
            .await?;
        Ok(())
    }
}

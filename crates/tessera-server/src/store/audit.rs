//! The audit log: every create, update and status change, written in the same transaction as
//! the change itself.
use serde_json::Value;
use sqlx::Row;

use super::{Store, StoreResult};
use crate::domain::{new_id, time::now_ms};

/// Who did what to which entity.
pub struct Audit<'a> {
    pub key_id: Option<&'a str>,
    pub request_id: Option<String>,
    pub action: &'a str,
    pub entity_type: &'a str,
    pub entity_id: &'a str,
    /// `{"before": …, "after": …}` summaries; never secrets.
    pub summary: Value,
}

#[derive(Debug, Clone)]
pub struct AuditEntry {
    pub id: String,
    pub key_id: Option<String>,
    pub action: String,
    pub entity_type: String,
    pub entity_id: String,
    pub summary: Value,
    pub request_id: Option<String>,
    pub created_at: i64,
}

pub(crate) async fn record(conn: &mut sqlx::AnyConnection, account_id: &str, a: &Audit<'_>) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO audit_log (id, account_id, key_id, action, entity_type, entity_id, summary, request_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(new_id())
    .bind(account_id)
    .bind(a.key_id)
    .bind(a.action)
    .bind(a.entity_type)
    .bind(a.entity_id)
    .bind(a.summary.to_string())
    .bind(a.request_id.as_deref())
    .bind(now_ms())
    .execute(conn)
    .await?;
    Ok(())
}

/// Several audit entries (each with its account) in one statement, as one transaction's part.
pub(crate) async fn record_many(conn: &mut sqlx::AnyConnection, entries: &[(&str, Audit<'_>)]) -> StoreResult<()> {
    // Nine parameters a row; the callers' batches (at most a few hundred) stay far under the
    // databases' parameter limits.
    let rows: Vec<String> = (0..entries.len())
        .map(|i| {
            let p: Vec<String> = (1..=9).map(|c| format!("${}", i * 9 + c)).collect();
            format!("({})", p.join(", "))
        })
        .collect();
    let sql = format!(
        "INSERT INTO audit_log (id, account_id, key_id, action, entity_type, entity_id, summary, request_id, created_at) \
         VALUES {}",
        rows.join(", ")
    );
    let now = now_ms();
    let mut q = sqlx::query(&sql);
    for (account_id, a) in entries {
        q = q
            .bind(new_id())
            .bind(*account_id)
            .bind(a.key_id)
            .bind(a.action)
            .bind(a.entity_type)
            .bind(a.entity_id)
            .bind(a.summary.to_string())
            .bind(a.request_id.as_deref())
            .bind(now);
    }
    q.execute(conn).await?;
    Ok(())
}

impl Store {
    /// Newest first.
    pub async fn audit_entries(&self, account_id: &str, limit: i64) -> StoreResult<Vec<AuditEntry>> {
        let rows = sqlx::query(
            "SELECT id, key_id, action, entity_type, entity_id, summary, request_id, created_at FROM audit_log \
             WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
        )
        .bind(account_id)
        .bind(limit)
        .fetch_all(self.reader())
        .await?;
        rows.iter()
            .map(|r| {
                let summary: String = r.try_get("summary")?;
                Ok(AuditEntry {
                    id: r.try_get("id")?,
                    key_id: r.try_get("key_id")?,
                    action: r.try_get("action")?,
                    entity_type: r.try_get("entity_type")?,
                    entity_id: r.try_get("entity_id")?,
                    summary: serde_json::from_str(&summary).unwrap_or(Value::Null),
                    request_id: r.try_get("request_id")?,
                    created_at: r.try_get("created_at")?,
                })
            })
            .collect()
    }
}

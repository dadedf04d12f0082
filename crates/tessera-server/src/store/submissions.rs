//! Volunteer, vendor and partner applications.
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::audit::{record, Audit};
use super::query::{Arg, Filter};
use super::{Store, StoreError, StoreResult};
use crate::domain::new_id;
use crate::domain::submissions::{NewSubmission, SubmissionKind, SubmissionStatus};
use crate::domain::time::now_ms;

#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    pub id: String,
    pub campaign_id: Option<String>,
    pub kind: SubmissionKind,
    pub name: String,
    pub email: String,
    pub phone: Option<String>,
    pub message: Option<String>,
    pub fields: Value,
    pub status: SubmissionStatus,
    pub created_at: i64,
}

#[derive(Debug, Default, Clone)]
pub struct SubmissionQuery {
    pub kind: Option<SubmissionKind>,
    pub campaign_id: Option<String>,
    pub page: u32,
    pub limit: u32,
}

const COLUMNS: &str = "id, campaign_id, kind, name, email, phone, message, fields, status, created_at";

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("submission {what}"))
}

fn from_row(r: &AnyRow) -> StoreResult<Submission> {
    let fields: String = r.try_get("fields")?;
    let kind: String = r.try_get("kind")?;
    let status: String = r.try_get("status")?;
    Ok(Submission {
        id: r.try_get("id")?,
        campaign_id: r.try_get("campaign_id")?,
        kind: SubmissionKind::parse("kind", &kind).map_err(|_| corrupt("kind"))?,
        name: r.try_get("name")?,
        email: r.try_get("email")?,
        phone: r.try_get("phone")?,
        message: r.try_get("message")?,
        fields: serde_json::from_str(&fields).map_err(|_| corrupt("fields"))?,
        status: SubmissionStatus::parse("status", &status).map_err(|_| corrupt("status"))?,
        created_at: r.try_get("created_at")?,
    })
}

impl Store {
    /// Stores an application, `received`; a campaign id must be one of the account's campaigns.
    pub async fn create_submission(
        &self,
        account_id: &str,
        new: NewSubmission,
        audit: Audit<'_>,
    ) -> StoreResult<Submission> {
        let mut tx = self.writer().begin().await?;
        let s = Submission {
            id: new_id(),
            campaign_id: new.campaign_id,
            kind: new.kind,
            name: new.name,
            email: new.email,
            phone: new.phone,
            message: new.message,
            fields: new.fields,
            status: SubmissionStatus::Received,
            created_at: now_ms(),
        };
        if let Some(c) = &s.campaign_id {
            let found = sqlx::query("SELECT 1 FROM campaigns WHERE account_id = $1 AND id = $2")
                .bind(account_id)
                .bind(c)
                .fetch_optional(&mut *tx)
                .await?;
            if found.is_none() {
                return Err(StoreError::NotFound("campaign"));
            }
        }
        sqlx::query(
            "INSERT INTO submissions (id, account_id, campaign_id, kind, name, email, phone, message, fields, status, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(&s.id)
        .bind(account_id)
        .bind(s.campaign_id.as_deref())
        .bind(s.kind.as_str())
        .bind(&s.name)
        .bind(&s.email)
        .bind(s.phone.as_deref())
        .bind(s.message.as_deref())
        .bind(s.fields.to_string())
        .bind(s.status.as_str())
        .bind(s.created_at)
        .execute(&mut *tx)
        .await?;
        let summary = serde_json::json!({"after": {"type": s.kind.as_str(), "campaignId": s.campaign_id}});
        record(&mut tx, account_id, &Audit { entity_id: &s.id, summary, ..audit }).await?;
        tx.commit().await?;
        Ok(s)
    }

    pub async fn list_submissions(&self, account_id: &str, q: &SubmissionQuery) -> StoreResult<(Vec<Submission>, u64)> {
        let mut f = Filter::new();
        f.and("account_id = ?", Arg::Text(account_id.into()));
        if let Some(k) = q.kind {
            f.and("kind = ?", Arg::Text(k.as_str().into()));
        }
        if let Some(c) = &q.campaign_id {
            f.and("campaign_id = ?", Arg::Text(c.clone()));
        }
        self.page(COLUMNS, "FROM submissions", "created_at DESC, id DESC", &f, (q.page, q.limit), from_row).await
    }
}

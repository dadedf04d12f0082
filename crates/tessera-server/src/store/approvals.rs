//! Approval requests' persistence (spec "Approval request"; D14.2, D16.19): the rows, their
//! reads, filing and cancelling (each one transaction with its audit entry), and the query
//! functions a decision runs inside the transaction that `flows::approvals` opens: the
//! conditional status move, the effects on members and campaigns, the audit entry. Whether a
//! move or an effect is allowed is the flow's to judge; every write here is conditional, so two
//! concurrent decisions of one request cannot both pass.
use serde_json::{json, Value};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::audit::{self, Audit};
use super::campaigns::{self, Campaign};
use super::portal::{audit as portal_audit, Actor};
use super::query::{Arg, Filter};
use super::{Store, StoreError, StoreResult};
use crate::domain::campaigns::CampaignStatus;
use crate::domain::new_id;
use crate::domain::portal::{ApprovalEntity, ApprovalStatus, MemberStatus};

/// An approval request (D16.19).
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub id: String,
    pub account_id: String,
    pub account_slug: String,
    pub entity_type: ApprovalEntity,
    pub status: ApprovalStatus,
    pub reason: Option<String>,
    pub request_payload: Value,
    /// The member who filed it; `None` when Tessera filed it (a withdrawal above the threshold).
    pub requested_by: Option<String>,
    pub decided_by: Option<String>,
    pub note: Option<String>,
    pub created_at: i64,
    pub decided_at: Option<i64>,
}

const APPROVAL_COLUMNS: &str = "r.id, r.account_id, a.slug AS account_slug, r.entity_type, r.status, r.reason, \
    r.request_payload, r.requested_by, r.decided_by, r.note, r.created_at, r.decided_at";

fn approval_from_row(r: &AnyRow) -> StoreResult<ApprovalRequest> {
    let payload: String = r.try_get("request_payload")?;
    let entity: String = r.try_get("entity_type")?;
    let status: String = r.try_get("status")?;
    Ok(ApprovalRequest {
        id: r.try_get("id")?,
        account_id: r.try_get("account_id")?,
        account_slug: r.try_get("account_slug")?,
        entity_type: ApprovalEntity::parse(&entity)
            .ok_or_else(|| StoreError::Corrupt(format!("approval request entity type {entity:?}")))?,
        status: ApprovalStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("approval request status {status:?}")))?,
        reason: r.try_get("reason")?,
        request_payload: serde_json::from_str(&payload)
            .map_err(|_| StoreError::Corrupt("approval request payload".into()))?,
        requested_by: r.try_get("requested_by")?,
        decided_by: r.try_get("decided_by")?,
        note: r.try_get("note")?,
        created_at: r.try_get("created_at")?,
        decided_at: r.try_get("decided_at")?,
    })
}

/// Who decided, as the audit entry records it.
#[derive(Debug, Clone)]
pub enum DecisionAudit<'a> {
    /// A member in the portal on a member's request: the entry names the user and member.
    Portal(&'a Actor),
    /// On Tessera's own request (a member) or by the operator (`operator`): the entry carries
    /// `decidedBy`.
    Decider { decided_by: &'a str, request_id: Option<String> },
}

impl Store {
    /// Approval requests, oldest first: of one account or all, optionally of one status.
    pub async fn list_approvals(
        &self,
        account_id: Option<&str>,
        status: Option<ApprovalStatus>,
    ) -> StoreResult<Vec<ApprovalRequest>> {
        let mut f = Filter::new();
        if let Some(a) = account_id {
            f.and("r.account_id = ?", Arg::Text(a.into()));
        }
        if let Some(s) = status {
            f.and("r.status = ?", Arg::Text(s.as_str().into()));
        }
        let sql = format!(
            "SELECT {APPROVAL_COLUMNS} FROM approval_requests r JOIN accounts a ON a.id = r.account_id{} \
             ORDER BY r.created_at, r.id",
            f.where_sql()
        );
        let rows = f.bind(sqlx::query(&sql)).fetch_all(self.reader()).await?;
        rows.iter().map(approval_from_row).collect()
    }

    /// One approval request; `account_id` scopes it when given (the portal), not for operators.
    pub async fn approval(&self, account_id: Option<&str>, id: &str) -> StoreResult<ApprovalRequest> {
        let row = sqlx::query(&format!(
            "SELECT {APPROVAL_COLUMNS} FROM approval_requests r JOIN accounts a ON a.id = r.account_id WHERE r.id = $1"
        ))
        .bind(id)
        .fetch_optional(self.reader())
        .await?
        .filter(|r| account_id.is_none_or(|a| r.try_get::<String, _>("account_id").is_ok_and(|x| x == a)))
        .ok_or(StoreError::NotFound("approval request"))?;
        approval_from_row(&row)
    }

    /// The approval request Tessera filed for the account's withdrawal `withdrawal_id` (above
    /// the threshold, D14.2), newest first; another account's looks like none (404).
    pub async fn withdrawal_approval(&self, account_id: &str, withdrawal_id: &str) -> StoreResult<ApprovalRequest> {
        // The payload is written as exactly this JSON text when the withdrawal is created.
        let payload = json!({ "withdrawalId": withdrawal_id }).to_string();
        let row = sqlx::query(&format!(
            "SELECT {APPROVAL_COLUMNS} FROM approval_requests r JOIN accounts a ON a.id = r.account_id \
             WHERE r.account_id = $1 AND r.entity_type = 'withdrawal' AND r.requested_by IS NULL \
             AND r.request_payload = $2 ORDER BY r.created_at DESC, r.id DESC LIMIT 1"
        ))
        .bind(account_id)
        .bind(payload)
        .fetch_optional(self.reader())
        .await?
        .ok_or(StoreError::NotFound("approval request"))?;
        approval_from_row(&row)
    }

    /// Files an approval request (pending) for a member, audited.
    pub async fn file_approval(
        &self,
        account_id: &str,
        entity_type: ApprovalEntity,
        reason: Option<&str>,
        payload: &Value,
        actor: &Actor,
        now: i64,
    ) -> StoreResult<ApprovalRequest> {
        let id = new_id();
        let mut tx = self.writer().begin().await?;
        sqlx::query(
            "INSERT INTO approval_requests (id, account_id, entity_type, status, reason, request_payload, requested_by, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&id)
        .bind(account_id)
        .bind(entity_type.as_str())
        .bind(ApprovalStatus::Pending.as_str())
        .bind(reason)
        .bind(payload.to_string())
        .bind(actor.member_id.as_deref())
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let after = json!({"status": ApprovalStatus::Pending, "entityType": entity_type, "reason": reason,
                           "requestPayload": payload});
        portal_audit(&mut tx, account_id, actor, "approval.create", "approval_request", &id, json!({"after": after}))
            .await?;
        tx.commit().await?;
        self.approval(Some(account_id), &id).await
    }

    /// The requester's own pending request becomes `cancelled`, audited. `false`: it was not
    /// pending or not theirs (nothing written).
    pub async fn cancel_approval(
        &self,
        account_id: &str,
        id: &str,
        note: Option<&str>,
        actor: &Actor,
        now: i64,
    ) -> StoreResult<bool> {
        let mut tx = self.writer().begin().await?;
        let n = sqlx::query(
            "UPDATE approval_requests SET status = 'cancelled', decided_by = $1, note = $2, decided_at = $3 \
             WHERE id = $4 AND account_id = $5 AND status = 'pending' AND requested_by = $6",
        )
        .bind(actor.member_id.as_deref())
        .bind(note)
        .bind(now)
        .bind(id)
        .bind(account_id)
        .bind(actor.member_id.as_deref())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        let summary =
            json!({"before": {"status": ApprovalStatus::Pending}, "after": {"status": ApprovalStatus::Cancelled}});
        portal_audit(&mut tx, account_id, actor, "approval.cancel", "approval_request", id, summary).await?;
        tx.commit().await?;
        Ok(true)
    }
}

/// Moves a pending request to `status` (approved or rejected), in the caller's transaction.
/// `account_id` scopes the write when given. Returns whether it moved (a request already
/// decided does not).
pub(crate) async fn mark_decided(
    conn: &mut sqlx::AnyConnection,
    account_id: Option<&str>,
    id: &str,
    status: ApprovalStatus,
    decided_by: Option<&str>,
    note: Option<&str>,
    now: i64,
) -> StoreResult<bool> {
    let scope = if account_id.is_some() { " AND account_id = $6" } else { "" };
    let sql = format!(
        "UPDATE approval_requests SET status = $1, decided_by = $2, note = $3, decided_at = $4 \
         WHERE id = $5{scope} AND status = 'pending'"
    );
    let mut q = sqlx::query(&sql).bind(status.as_str()).bind(decided_by).bind(note).bind(now).bind(id);
    if let Some(a) = account_id {
        q = q.bind(a);
    }
    Ok(q.execute(&mut *conn).await?.rows_affected() == 1)
}

/// The audit entry of a decision, in the decision's transaction.
pub(crate) async fn audit_decision(
    conn: &mut sqlx::AnyConnection,
    request: &ApprovalRequest,
    status: ApprovalStatus,
    note: Option<&str>,
    by: &DecisionAudit<'_>,
) -> StoreResult<()> {
    let action = if status == ApprovalStatus::Approved { "approval.approve" } else { "approval.reject" };
    let before = json!({"status": ApprovalStatus::Pending});
    match by {
        DecisionAudit::Portal(actor) => {
            let summary = json!({"before": before, "after": {"status": status, "note": note},
                                 "requestPayload": request.request_payload});
            portal_audit(conn, &request.account_id, actor, action, "approval_request", &request.id, summary).await
        }
        DecisionAudit::Decider { decided_by, request_id } => {
            let summary = json!({
                "before": before,
                "after": {"status": status, "decidedBy": decided_by, "note": note},
                "requestPayload": request.request_payload,
            });
            let entry = Audit {
                key_id: None,
                request_id: request_id.clone(),
                action,
                entity_type: "approval_request",
                entity_id: &request.id,
                summary,
            };
            audit::record(conn, &request.account_id, &entry).await
        }
    }
}

/// The member effect: a pending member becomes active, audited. Returns whether it moved.
pub(crate) async fn activate_member(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    id: &str,
    actor: &Actor,
    now: i64,
) -> StoreResult<bool> {
    let n = sqlx::query(
        "UPDATE reseller_members SET status = 'active', updated_at = $1 WHERE account_id = $2 AND id = $3 AND status = 'pending'",
    )
    .bind(now)
    .bind(account_id)
    .bind(id)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if n != 1 {
        return Ok(false);
    }
    let summary = json!({"before": {"status": MemberStatus::Pending}, "after": {"status": MemberStatus::Active}});
    portal_audit(conn, account_id, actor, "member.status_changed", "reseller_member", id, summary).await?;
    Ok(true)
}

/// The campaign effect's statements: `before` moves to approved (conditional on its status being
/// unchanged), with the campaign's own audit entry; `flows::campaigns` announces it. Returns the campaign as it now
/// is, or `None` when it did not move.
pub(crate) async fn approve_campaign(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    before: &Campaign,
    actor: &Actor,
    now: i64,
) -> StoreResult<Option<Campaign>> {
    let updated_at = now.max(before.updated_at + 1);
    let n = sqlx::query(
        "UPDATE campaigns SET status = 'approved', updated_at = $1 WHERE account_id = $2 AND id = $3 AND status = $4",
    )
    .bind(updated_at)
    .bind(account_id)
    .bind(&before.id)
    .bind(before.status.as_str())
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if n != 1 {
        return Ok(None);
    }
    let after = Campaign { status: CampaignStatus::Approved, updated_at, ..before.clone() };
    let summary = json!({"before": campaigns::summary(before), "after": campaigns::summary(&after)});
    portal_audit(conn, account_id, actor, "campaign.status_changed", "campaign", &before.id, summary).await?;
    Ok(Some(after))
}

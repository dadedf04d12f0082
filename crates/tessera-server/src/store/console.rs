//! The console's persistence (D17.28, D17.43): organization members and their browser sessions.
//! Every member method takes the account id first; every change is one transaction with its
//! audit entry (`by`: the operator or the member who made it). Session tokens are stored only as
//! keyed hashes (`flows::console` hashes and compares them).
use serde_json::{json, Value};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::audit::{record, Audit};
use super::{unique_to_conflict, Store, StoreError, StoreResult};
use crate::domain::console::Role;
use crate::domain::new_id;

/// An organization member.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrgMember {
    pub id: String,
    pub account_id: String,
    pub email: String,
    pub role: Role,
    pub created_at: i64,
}

/// One of an e-mail's memberships, with its account's name.
#[derive(Debug, Clone)]
pub struct Membership {
    pub member: OrgMember,
    pub account_name: String,
}

/// A live console session and its member.
#[derive(Debug, Clone)]
pub struct ConsoleSession {
    pub token_hash: String,
    pub expires_at: i64,
    pub member: OrgMember,
    /// How many memberships its member's e-mail has (1: nothing to switch to).
    pub memberships: i64,
}

/// Who changed the team: the operator (CLI) or a member (the team page).
#[derive(Debug, Clone, Default)]
pub struct TeamActor {
    pub member_id: Option<String>,
    pub request_id: Option<String>,
}

impl TeamActor {
    fn json(&self) -> Value {
        match &self.member_id {
            None => json!("operator"),
            Some(m) => json!({"orgMemberId": m}),
        }
    }
}

const COLUMNS: &str = "m.id, m.account_id, m.email, m.role, m.created_at";

fn member(r: &AnyRow) -> StoreResult<OrgMember> {
    let role: String = r.try_get("role")?;
    Ok(OrgMember {
        id: r.try_get("id")?,
        account_id: r.try_get("account_id")?,
        email: r.try_get("email")?,
        role: Role::parse("role", &role).map_err(|_| StoreError::Corrupt(format!("org member role {role}")))?,
        created_at: r.try_get("created_at")?,
    })
}

async fn audit(
    conn: &mut sqlx::AnyConnection,
    m: &OrgMember,
    actor: &TeamActor,
    action: &str,
    mut summary: Value,
) -> StoreResult<()> {
    summary["by"] = actor.json();
    let entry = Audit {
        key_id: None,
        request_id: actor.request_id.clone(),
        action,
        entity_type: "org_member",
        entity_id: &m.id,
        summary,
    };
    record(conn, &m.account_id, &entry).await
}

impl Store {
    /// Adds a member (409 when the e-mail is already a member of the account).
    pub async fn add_org_member(
        &self,
        account_id: &str,
        email: &str,
        role: Role,
        actor: &TeamActor,
        now: i64,
    ) -> StoreResult<OrgMember> {
        let m = OrgMember {
            id: new_id(),
            account_id: account_id.to_string(),
            email: email.to_string(),
            role,
            created_at: now,
        };
        let mut tx = self.writer().begin().await?;
        sqlx::query(
            "INSERT INTO org_members (id, account_id, email, email_lc, role, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&m.id)
        .bind(account_id)
        .bind(email)
        .bind(email.to_lowercase())
        .bind(role.as_str())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|e| unique_to_conflict(e, "this e-mail is already a member of the account"))?;
        audit(&mut tx, &m, actor, "org_member.added", json!({"after": {"email": email, "role": role}})).await?;
        tx.commit().await?;
        Ok(m)
    }

    /// The account's members, oldest first.
    pub async fn org_members(&self, account_id: &str) -> StoreResult<Vec<OrgMember>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM org_members m WHERE m.account_id = $1 ORDER BY m.created_at, m.id"
        ))
        .bind(account_id)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(member).collect()
    }

    /// The member of the account with this e-mail (case-insensitive).
    pub async fn org_member_by_email(&self, account_id: &str, email: &str) -> StoreResult<OrgMember> {
        let row =
            sqlx::query(&format!("SELECT {COLUMNS} FROM org_members m WHERE m.account_id = $1 AND m.email_lc = $2"))
                .bind(account_id)
                .bind(email.to_lowercase())
                .fetch_optional(self.reader())
                .await?;
        row.as_ref().map(member).transpose()?.ok_or(StoreError::NotFound("member"))
    }

    /// The member an e-mail signs in as: its oldest membership of an account not revoked.
    pub async fn sign_in_org_member(&self, email: &str) -> StoreResult<Option<OrgMember>> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM org_members m JOIN accounts a ON a.id = m.account_id \
             WHERE m.email_lc = $1 AND a.status <> 'revoked' ORDER BY m.created_at, m.id LIMIT 1"
        ))
        .bind(email.to_lowercase())
        .fetch_optional(self.reader())
        .await?;
        row.as_ref().map(member).transpose()
    }

    /// Every membership of an e-mail in accounts not revoked, oldest first, with the account's
    /// name: the accounts a signed-in member may switch between (D17.28).
    pub async fn org_memberships(&self, email: &str) -> StoreResult<Vec<Membership>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS}, a.platform_name FROM org_members m JOIN accounts a ON a.id = m.account_id \
             WHERE m.email_lc = $1 AND a.status <> 'revoked' ORDER BY m.created_at, m.id"
        ))
        .bind(email.to_lowercase())
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(|r| Ok(Membership { account_name: r.try_get("platform_name")?, member: member(r)? })).collect()
    }

    /// Removes a member and ends its sessions, in one transaction. The last owner of an account
    /// stays (409).
    pub async fn remove_org_member(
        &self,
        account_id: &str,
        member_id: &str,
        actor: &TeamActor,
    ) -> StoreResult<OrgMember> {
        let mut tx = self.writer().begin().await?;
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM org_members m WHERE m.account_id = $1 AND m.id = $2"))
            .bind(account_id)
            .bind(member_id)
            .fetch_optional(&mut *tx)
            .await?;
        let m = row.as_ref().map(member).transpose()?.ok_or(StoreError::NotFound("member"))?;
        if m.role == Role::Owner {
            let owners: i64 =
                sqlx::query("SELECT COUNT(*) AS n FROM org_members WHERE account_id = $1 AND role = 'owner'")
                    .bind(account_id)
                    .fetch_one(&mut *tx)
                    .await?
                    .try_get("n")?;
            if owners <= 1 {
                return Err(StoreError::Conflict("the last owner of an account cannot be removed".into()));
            }
        }
        sqlx::query("DELETE FROM console_sessions WHERE member_id = $1").bind(&m.id).execute(&mut *tx).await?;
        let gone = sqlx::query("DELETE FROM org_members WHERE id = $1 AND account_id = $2")
            .bind(&m.id)
            .bind(account_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if gone == 0 {
            return Err(StoreError::NotFound("member"));
        }
        audit(&mut tx, &m, actor, "org_member.removed", json!({"before": {"email": m.email, "role": m.role}})).await?;
        tx.commit().await?;
        Ok(m)
    }

    /// The live session of a token hash (`None`: unknown, expired, ended, its member removed or its
    /// account revoked), with how many memberships its e-mail has (counted in the same read, so
    /// that only a person with several reads the list of them).
    pub async fn console_session(&self, token_hash: &str, now: i64) -> StoreResult<Option<ConsoleSession>> {
        let row = sqlx::query(&format!(
            "SELECT s.token_hash, s.expires_at, {COLUMNS}, \
             (SELECT COUNT(*) FROM org_members o WHERE o.email_lc = m.email_lc) AS memberships \
             FROM console_sessions s JOIN org_members m ON m.id = s.member_id \
             JOIN accounts a ON a.id = m.account_id WHERE s.token_hash = $1 AND s.expires_at > $2 AND a.status <> 'revoked'"
        ))
        .bind(token_hash)
        .bind(now)
        .fetch_optional(self.reader())
        .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(ConsoleSession {
            token_hash: r.try_get("token_hash")?,
            expires_at: r.try_get("expires_at")?,
            member: member(&r)?,
            memberships: r.try_get("memberships")?,
        }))
    }

    /// Slides a session's end (only ever later).
    pub async fn touch_console_session(&self, token_hash: &str, expires_at: i64) -> StoreResult<()> {
        sqlx::query("UPDATE console_sessions SET expires_at = $1 WHERE token_hash = $2 AND expires_at < $3")
            .bind(expires_at)
            .bind(token_hash)
            .bind(expires_at)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Sign-out: the session ends.
    pub async fn end_console_session(&self, token_hash: &str) -> StoreResult<()> {
        end_session(&mut *self.writer().acquire().await?, token_hash).await
    }
}

/// Ends a session (sign-out; a switch to another membership, in the switch's transaction).
pub(crate) async fn end_session(conn: &mut sqlx::AnyConnection, token_hash: &str) -> StoreResult<()> {
    sqlx::query("DELETE FROM console_sessions WHERE token_hash = $1").bind(token_hash).execute(&mut *conn).await?;
    Ok(())
}

/// Opens a session for a member (the token's keyed hash), audited, in the caller's transaction
/// (the one that consumed the sign-in passcode).
pub(crate) async fn insert_session(
    conn: &mut sqlx::AnyConnection,
    token_hash: &str,
    m: &OrgMember,
    expires_at: i64,
    request_id: Option<String>,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO console_sessions (token_hash, member_id, account_id, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_hash)
    .bind(&m.id)
    .bind(&m.account_id)
    .bind(expires_at)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    let actor = TeamActor { member_id: Some(m.id.clone()), request_id };
    audit(conn, m, &actor, "console_session.created", json!({"expiresAt": expires_at})).await
}

//! The reseller portal's persistence (D10, D15, D16.14–18): users, reseller profiles, members
//! and invitations, portal sessions (their rules are `flows::customer_access`'s; approval
//! requests are `store::approvals`). Every method on reseller data takes the account id first;
//! every change is one transaction with its audit entry (actor: the user and member, or the
//! operator; never a token or passcode). State moves are conditional updates, so two concurrent
//! moves of one row cannot both pass.
use serde_json::{json, Value};
use sqlx::any::AnyRow;
use sqlx::Row;

use super::audit::{record, Audit};
use super::{unique_to_conflict, Store, StoreError, StoreResult};
use crate::domain::new_id;
use crate::domain::portal::{
    MemberChange, MemberRequest, MemberStatus, MemberType, ProfileChange, ProfileStatus, ADMIN,
};

/// Who made a change, for the audit entry.
#[derive(Debug, Clone, Default)]
pub struct Actor {
    /// `None` with `member_id` `None`: the platform operator (CLI).
    pub user_id: Option<String>,
    pub member_id: Option<String>,
    pub request_id: Option<String>,
}

impl Actor {
    pub fn operator() -> Self {
        Actor::default()
    }

    fn json(&self) -> Value {
        match (&self.user_id, &self.member_id) {
            (None, None) => json!("operator"),
            (u, m) => json!({"userId": u, "memberId": m}),
        }
    }
}

pub(crate) async fn audit(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    actor: &Actor,
    action: &str,
    entity_type: &str,
    entity_id: &str,
    mut summary: Value,
) -> StoreResult<()> {
    if let Some(m) = summary.as_object_mut() {
        m.insert("by".into(), actor.json());
    }
    let entry = Audit { key_id: None, request_id: actor.request_id.clone(), action, entity_type, entity_id, summary };
    record(conn, account_id, &entry).await
}

#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub id: String,
    pub account_id: String,
    pub status: ProfileStatus,
    pub require_sub_creator_approval: bool,
    pub allow_public_signup: bool,
    pub risk_level: String,
    pub settings: Value,
    pub created_at: i64,
    pub updated_at: i64,
}

const PROFILE_COLUMNS: &str = "id, account_id, status, require_sub_creator_approval, allow_public_signup, risk_level, \
    settings, created_at, updated_at";

fn profile_status(r: &AnyRow, col: &str) -> StoreResult<ProfileStatus> {
    let s: String = r.try_get(col)?;
    ProfileStatus::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("reseller profile status {s:?}")))
}

fn profile_from_row(r: &AnyRow) -> StoreResult<Profile> {
    let settings: String = r.try_get("settings")?;
    Ok(Profile {
        id: r.try_get("id")?,
        account_id: r.try_get("account_id")?,
        status: profile_status(r, "status")?,
        require_sub_creator_approval: r.try_get::<i64, _>("require_sub_creator_approval")? != 0,
        allow_public_signup: r.try_get::<i64, _>("allow_public_signup")? != 0,
        risk_level: r.try_get("risk_level")?,
        settings: serde_json::from_str(&settings).map_err(|_| StoreError::Corrupt("reseller settings".into()))?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub id: String,
    pub account_id: String,
    pub user_id: Option<String>,
    pub email: Option<String>,
    pub creator_id: Option<String>,
    pub member_type: MemberType,
    pub display_name: Option<String>,
    pub roles: Vec<String>,
    pub permissions: Vec<String>,
    pub status: MemberStatus,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Member {
    /// An invitation: no user yet, waiting for a sign-in with its e-mail (D15.2).
    pub fn is_invitation(&self) -> bool {
        self.user_id.is_none() && self.status == MemberStatus::Pending
    }
    pub fn is_admin(&self) -> bool {
        self.roles.iter().any(|r| r == ADMIN)
    }
}

const MEMBER_COLUMNS: &str = "m.id, m.account_id, m.user_id, m.email, m.creator_id, m.member_type, m.display_name, \
    m.roles, m.permissions, m.status, m.created_at, m.updated_at";

fn names(r: &AnyRow, col: &str) -> StoreResult<Vec<String>> {
    let s: String = r.try_get(col)?;
    serde_json::from_str(&s).map_err(|_| StoreError::Corrupt(format!("member {col}")))
}

fn member_from_row(r: &AnyRow) -> StoreResult<Member> {
    Ok(Member {
        id: r.try_get("id")?,
        account_id: r.try_get("account_id")?,
        user_id: r.try_get("user_id")?,
        email: r.try_get("email")?,
        creator_id: r.try_get("creator_id")?,
        member_type: {
            let t: String = r.try_get("member_type")?;
            MemberType::parse(&t).ok_or_else(|| StoreError::Corrupt(format!("member type {t:?}")))?
        },
        display_name: r.try_get("display_name")?,
        roles: names(r, "roles")?,
        permissions: names(r, "permissions")?,
        status: {
            let s: String = r.try_get("status")?;
            MemberStatus::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("member status {s:?}")))?
        },
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

fn member_summary(m: &Member) -> Value {
    json!({
        "userId": m.user_id, "email": m.email, "memberType": m.member_type, "displayName": m.display_name,
        "roles": m.roles, "permissions": m.permissions, "status": m.status,
    })
}

/// A live portal session with who holds it.
#[derive(Debug, Clone)]
pub struct PortalSession {
    pub token_hash: String,
    pub user_id: String,
    pub email: String,
    pub member: Member,
    pub profile_status: ProfileStatus,
    pub expires_at: i64,
}

/// Accounts where a user or e-mail is a live (not revoked) member or invitation.
async fn memberships(
    conn: &mut sqlx::AnyConnection,
    user_id: Option<&str>,
    email: Option<&str>,
) -> StoreResult<Vec<String>> {
    let rows = sqlx::query(
        "SELECT m.account_id FROM reseller_members m LEFT JOIN users u ON u.id = m.user_id \
         WHERE m.status <> 'revoked' AND (m.user_id = $1 OR lower(m.email) = lower($2) OR lower(u.email) = lower($3))",
    )
    .bind(user_id.unwrap_or(""))
    .bind(email.unwrap_or(""))
    .bind(email.unwrap_or(""))
    .fetch_all(&mut *conn)
    .await?;
    rows.iter().map(|r| r.try_get::<String, _>("account_id").map_err(StoreError::from)).collect()
}

/// A user belongs to one reseller (D16.16): 409 when the person is a live member or invitation
/// of this reseller or of another.
async fn ensure_unaffiliated(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    user_id: Option<&str>,
    email: Option<&str>,
) -> StoreResult<()> {
    let found = memberships(conn, user_id, email).await?;
    if found.iter().any(|a| a != account_id) {
        return Err(StoreError::Conflict("this person already belongs to another reseller".into()));
    }
    if !found.is_empty() {
        return Err(StoreError::Conflict("this person is already a member or invited".into()));
    }
    Ok(())
}

/// The user with this e-mail (in any case, D17.10), created when missing. Returns its id.
pub(crate) async fn user_for_email(conn: &mut sqlx::AnyConnection, email: &str, now: i64) -> StoreResult<String> {
    let find = "SELECT id FROM users WHERE lower(email) = lower($1) ORDER BY created_at, id LIMIT 1";
    if let Some(row) = sqlx::query(find).bind(email).fetch_optional(&mut *conn).await? {
        return Ok(row.try_get("id")?);
    }
    sqlx::query("INSERT INTO users (id, email, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
        .bind(new_id())
        .bind(email)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    let row = sqlx::query(find).bind(email).fetch_one(&mut *conn).await?;
    Ok(row.try_get("id")?)
}

/// Opens a portal session (token stored hashed) for a member of a user.
pub(crate) async fn insert_session(
    conn: &mut sqlx::AnyConnection,
    token_hash: &str,
    user_id: &str,
    member: &Member,
    expires_at: i64,
    now: i64,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO portal_sessions (token_hash, user_id, member_id, account_id, expires_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(token_hash)
    .bind(user_id)
    .bind(&member.id)
    .bind(&member.account_id)
    .bind(expires_at)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn member_in(conn: &mut sqlx::AnyConnection, account_id: &str, id: &str) -> StoreResult<Member> {
    let row =
        sqlx::query(&format!("SELECT {MEMBER_COLUMNS} FROM reseller_members m WHERE m.account_id = $1 AND m.id = $2"))
            .bind(account_id)
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?
            .ok_or(StoreError::NotFound("member"))?;
    member_from_row(&row)
}

/// The member a user signs in as: an active member of the user, else an invitation of the
/// e-mail. Suspended and revoked members do not sign in.
pub(crate) async fn sign_in_member(
    conn: &mut sqlx::AnyConnection,
    user_id: Option<&str>,
    email: &str,
) -> StoreResult<Option<Member>> {
    let row = sqlx::query(&format!(
        "SELECT {MEMBER_COLUMNS} FROM reseller_members m \
         WHERE (m.user_id = $1 AND m.status = 'active') OR (m.user_id IS NULL AND lower(m.email) = lower($2) AND m.status = 'pending') \
         ORDER BY m.created_at LIMIT 1"
    ))
    .bind(user_id.unwrap_or(""))
    .bind(email)
    .fetch_optional(&mut *conn)
    .await?;
    row.as_ref().map(member_from_row).transpose()
}

impl Store {
    /// `admin reseller create`: the profile (draft) and its owner (user found or created, member
    /// type owner, role admin, active), in one transaction.
    pub async fn create_reseller(
        &self,
        account_id: &str,
        owner_email: &str,
        now: i64,
    ) -> StoreResult<(Profile, Member)> {
        let mut tx = self.writer().begin().await?;
        let profile_id = new_id();
        sqlx::query(
            "INSERT INTO reseller_profiles (id, account_id, status, require_sub_creator_approval, allow_public_signup, \
             risk_level, settings, created_at, updated_at) VALUES ($1, $2, 'draft', 0, 0, 'low', '{}', $3, $4)",
        )
        .bind(&profile_id)
        .bind(account_id)
        .bind(now)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|e| unique_to_conflict(e, "this account already has a reseller profile"))?;
        let user_id = user_for_email(&mut tx, owner_email, now).await?;
        ensure_unaffiliated(&mut tx, account_id, Some(&user_id), Some(owner_email)).await?;
        let member = Member {
            id: new_id(),
            account_id: account_id.to_string(),
            user_id: Some(user_id),
            email: Some(owner_email.to_string()),
            creator_id: None,
            member_type: MemberType::Owner,
            display_name: None,
            roles: vec![ADMIN.into()],
            permissions: Vec::new(),
            status: MemberStatus::Active,
            created_at: now,
            updated_at: now,
        };
        insert_member(&mut tx, &member).await?;
        let actor = Actor::operator();
        audit(
            &mut tx,
            account_id,
            &actor,
            "reseller.created",
            "reseller_profile",
            &profile_id,
            json!({"after": {"status": "draft"}}),
        )
        .await?;
        audit(
            &mut tx,
            account_id,
            &actor,
            "member.created",
            "reseller_member",
            &member.id,
            json!({"after": member_summary(&member)}),
        )
        .await?;
        tx.commit().await?;
        Ok((self.reseller_profile(account_id).await?, member))
    }

    /// The account's reseller profile (404 when the account is no reseller).
    pub async fn reseller_profile(&self, account_id: &str) -> StoreResult<Profile> {
        let row = sqlx::query(&format!("SELECT {PROFILE_COLUMNS} FROM reseller_profiles WHERE account_id = $1"))
            .bind(account_id)
            .fetch_optional(self.writer())
            .await?
            .ok_or(StoreError::NotFound("reseller profile"))?;
        profile_from_row(&row)
    }

    /// Applies `patch` to the profile. `check_move(from, to)` judges a status move (the portal's
    /// rules or the operator's); the write is conditional on the row being unchanged.
    pub async fn update_reseller_profile(
        &self,
        account_id: &str,
        patch: &ProfileChange,
        check_move: fn(ProfileStatus, ProfileStatus) -> Result<(), crate::domain::DomainError>,
        actor: &Actor,
        now: i64,
    ) -> Result<Profile, super::UpdateError> {
        let mut tx = self.writer().begin().await.map_err(StoreError::from)?;
        let row = sqlx::query(&format!("SELECT {PROFILE_COLUMNS} FROM reseller_profiles WHERE account_id = $1"))
            .bind(account_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(StoreError::from)?
            .ok_or(StoreError::NotFound("reseller profile"))?;
        let before = profile_from_row(&row)?;
        let mut after = before.clone();
        if let Some(s) = patch.status {
            check_move(before.status, s)?;
            after.status = s;
        }
        if let Some(v) = patch.require_sub_creator_approval {
            after.require_sub_creator_approval = v;
        }
        if let Some(v) = patch.allow_public_signup {
            after.allow_public_signup = v;
        }
        if let Some(v) = &patch.risk_level {
            after.risk_level = v.clone();
        }
        if let Some(v) = &patch.settings {
            after.settings = v.clone();
        }
        after.updated_at = now.max(before.updated_at + 1);
        let n = sqlx::query(
            "UPDATE reseller_profiles SET status = $1, require_sub_creator_approval = $2, allow_public_signup = $3, \
             risk_level = $4, settings = $5, updated_at = $6 WHERE account_id = $7 AND updated_at = $8",
        )
        .bind(after.status.as_str())
        .bind(i64::from(after.require_sub_creator_approval))
        .bind(i64::from(after.allow_public_signup))
        .bind(&after.risk_level)
        .bind(after.settings.to_string())
        .bind(after.updated_at)
        .bind(account_id)
        .bind(before.updated_at)
        .execute(&mut *tx)
        .await
        .map_err(StoreError::from)?
        .rows_affected();
        if n != 1 {
            return Err(StoreError::Conflict("the profile changed while this update ran; retry".into()).into());
        }
        let view = |p: &Profile| {
            json!({"status": p.status, "requireSubCreatorApproval": p.require_sub_creator_approval,
                   "allowPublicSignup": p.allow_public_signup, "riskLevel": p.risk_level})
        };
        let action = if before.status != after.status { "reseller.status_changed" } else { "reseller.updated" };
        audit(
            &mut tx,
            account_id,
            actor,
            action,
            "reseller_profile",
            &before.id,
            json!({"before": view(&before), "after": view(&after)}),
        )
        .await?;
        tx.commit().await.map_err(StoreError::from)?;
        Ok(after)
    }

    /// Members and invitations of the reseller, oldest first.
    pub async fn reseller_members(&self, account_id: &str) -> StoreResult<Vec<Member>> {
        let rows = sqlx::query(&format!(
            "SELECT {MEMBER_COLUMNS} FROM reseller_members m WHERE m.account_id = $1 ORDER BY m.created_at, m.id"
        ))
        .bind(account_id)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(member_from_row).collect()
    }

    pub async fn reseller_member(&self, account_id: &str, id: &str) -> StoreResult<Member> {
        let mut conn = self.reader().acquire().await?;
        member_in(&mut conn, account_id, id).await
    }

    /// Adds a member (pending): linked to an existing user, or an invitation by e-mail.
    pub async fn create_reseller_member(
        &self,
        account_id: &str,
        m: &MemberRequest,
        actor: &Actor,
        now: i64,
    ) -> StoreResult<Member> {
        let mut tx = self.writer().begin().await?;
        let mut email = m.email.clone();
        if let Some(u) = &m.user_id {
            let row = sqlx::query("SELECT email FROM users WHERE id = $1")
                .bind(u)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound("user"))?;
            let user_email: String = row.try_get("email")?;
            if email.as_ref().is_some_and(|e| !e.eq_ignore_ascii_case(&user_email)) {
                return Err(StoreError::Conflict("email is not the e-mail of userId".into()));
            }
            email = Some(user_email);
        }
        ensure_unaffiliated(&mut tx, account_id, m.user_id.as_deref(), email.as_deref()).await?;
        let member = Member {
            id: new_id(),
            account_id: account_id.to_string(),
            user_id: m.user_id.clone(),
            email,
            creator_id: m.creator_id.clone(),
            member_type: m.member_type,
            display_name: m.display_name.clone(),
            roles: m.roles.clone(),
            permissions: m.permissions.clone(),
            status: MemberStatus::Pending,
            created_at: now,
            updated_at: now,
        };
        insert_member(&mut tx, &member).await?;
        let action = if member.user_id.is_none() { "member.invited" } else { "member.created" };
        audit(
            &mut tx,
            account_id,
            actor,
            action,
            "reseller_member",
            &member.id,
            json!({"after": member_summary(&member)}),
        )
        .await?;
        tx.commit().await?;
        Ok(member)
    }

    /// Applies `patch` to a member. `judge(before, after)` refuses what the caller may not do
    /// (the owner, an illegal move: D15.2, D16.15). A member leaving `active` loses every
    /// session in the same transaction (D16.17).
    pub async fn update_reseller_member(
        &self,
        account_id: &str,
        id: &str,
        patch: &MemberChange,
        judge: impl Fn(&Member, &Member) -> Result<(), crate::domain::DomainError>,
        actor: &Actor,
        now: i64,
    ) -> Result<Member, super::UpdateError> {
        let mut tx = self.writer().begin().await.map_err(StoreError::from)?;
        let before = member_in(&mut tx, account_id, id).await?;
        let mut after = before.clone();
        if let Some(v) = patch.member_type {
            after.member_type = v;
        }
        if let Some(v) = &patch.display_name {
            after.display_name = Some(v.clone());
        }
        if let Some(v) = &patch.roles {
            after.roles = v.clone();
        }
        if let Some(v) = &patch.permissions {
            after.permissions = v.clone();
        }
        if let Some(v) = patch.status {
            after.status = v;
        }
        judge(&before, &after)?;
        after.updated_at = now.max(before.updated_at + 1);
        let n = sqlx::query(
            "UPDATE reseller_members SET member_type = $1, display_name = $2, roles = $3, permissions = $4, status = $5, \
             updated_at = $6 WHERE account_id = $7 AND id = $8 AND updated_at = $9",
        )
        .bind(after.member_type.as_str())
        .bind(after.display_name.as_deref())
        .bind(json!(after.roles).to_string())
        .bind(json!(after.permissions).to_string())
        .bind(after.status.as_str())
        .bind(after.updated_at)
        .bind(account_id)
        .bind(id)
        .bind(before.updated_at)
        .execute(&mut *tx)
        .await
        .map_err(StoreError::from)?
        .rows_affected();
        if n != 1 {
            return Err(StoreError::Conflict("the member changed while this update ran; retry".into()).into());
        }
        if before.status == MemberStatus::Active && after.status != MemberStatus::Active {
            revoke_member_sessions(&mut tx, id, now).await?;
        }
        let action = if before.status != after.status { "member.status_changed" } else { "member.updated" };
        audit(
            &mut tx,
            account_id,
            actor,
            action,
            "reseller_member",
            id,
            json!({"before": member_summary(&before), "after": member_summary(&after)}),
        )
        .await?;
        tx.commit().await.map_err(StoreError::from)?;
        Ok(after)
    }

    /// The account whose reseller would send a sign-in passcode to this e-mail: an active member
    /// of its user, or an invitation of the e-mail (D16.16). `None`: nobody; nothing is sent.
    pub async fn sign_in_account(&self, email: &str) -> StoreResult<Option<String>> {
        let mut conn = self.reader().acquire().await?;
        let user: Option<String> = sqlx::query("SELECT id FROM users WHERE lower(email) = lower($1) LIMIT 1")
            .bind(email)
            .fetch_optional(&mut *conn)
            .await?
            .map(|r| r.try_get("id"))
            .transpose()?;
        Ok(sign_in_member(&mut conn, user.as_deref(), email).await?.map(|m| m.account_id))
    }

    /// The live session of a token hash: not revoked, not expired, its member active. `None`
    /// otherwise (401). The caller compares the hash again in constant time.
    pub async fn portal_session(&self, token_hash: &str, now: i64) -> StoreResult<Option<PortalSession>> {
        let row = sqlx::query(&format!(
            "SELECT s.token_hash, s.expires_at, u.id AS uid, u.email AS uemail, p.status AS profile_status, {MEMBER_COLUMNS} \
             FROM portal_sessions s JOIN users u ON u.id = s.user_id JOIN reseller_members m ON m.id = s.member_id \
             JOIN reseller_profiles p ON p.account_id = m.account_id \
             WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 AND m.status = 'active' \
             AND m.user_id = s.user_id"
        ))
        .bind(token_hash)
        .bind(now)
        .fetch_optional(self.reader())
        .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(PortalSession {
            token_hash: r.try_get("token_hash")?,
            user_id: r.try_get("uid")?,
            email: r.try_get("uemail")?,
            member: member_from_row(&r)?,
            profile_status: profile_status(&r, "profile_status")?,
            expires_at: r.try_get("expires_at")?,
        }))
    }

    /// Slides a session's end (12 h after this use).
    pub async fn touch_portal_session(&self, token_hash: &str, expires_at: i64) -> StoreResult<()> {
        sqlx::query("UPDATE portal_sessions SET expires_at = $1 WHERE token_hash = $2 AND revoked_at IS NULL AND expires_at < $3")
            .bind(expires_at)
            .bind(token_hash)
            .bind(expires_at)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Logout: the session ends, audited.
    pub async fn revoke_portal_session(&self, s: &PortalSession, actor: &Actor, now: i64) -> StoreResult<()> {
        let mut tx = self.writer().begin().await?;
        sqlx::query("UPDATE portal_sessions SET revoked_at = $1 WHERE token_hash = $2 AND revoked_at IS NULL")
            .bind(now)
            .bind(&s.token_hash)
            .execute(&mut *tx)
            .await?;
        audit(&mut tx, &s.member.account_id, actor, "session.revoked", "portal_session", &s.member.id, json!({}))
            .await?;
        tx.commit().await?;
        Ok(())
    }
}

async fn insert_member(conn: &mut sqlx::AnyConnection, m: &Member) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO reseller_members (id, account_id, user_id, email, creator_id, member_type, display_name, roles, \
         permissions, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(&m.id)
    .bind(&m.account_id)
    .bind(m.user_id.as_deref())
    .bind(m.email.as_deref())
    .bind(m.creator_id.as_deref())
    .bind(m.member_type.as_str())
    .bind(m.display_name.as_deref())
    .bind(json!(m.roles).to_string())
    .bind(json!(m.permissions).to_string())
    .bind(m.status.as_str())
    .bind(m.created_at)
    .bind(m.updated_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Ends every session of a member (suspended or revoked, D16.17).
async fn revoke_member_sessions(conn: &mut sqlx::AnyConnection, member_id: &str, now: i64) -> StoreResult<()> {
    sqlx::query("UPDATE portal_sessions SET revoked_at = $1 WHERE member_id = $2 AND revoked_at IS NULL")
        .bind(now)
        .bind(member_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// An invitation becomes the user's active member when its e-mail signs in (D15.2). Returns
/// whether it moved (it may have been revoked or taken meanwhile).
pub(crate) async fn join_invitation(
    conn: &mut sqlx::AnyConnection,
    member_id: &str,
    user_id: &str,
    now: i64,
) -> StoreResult<bool> {
    let n = sqlx::query(
        "UPDATE reseller_members SET user_id = $1, status = 'active', updated_at = $2 \
         WHERE id = $3 AND user_id IS NULL AND status = 'pending'",
    )
    .bind(user_id)
    .bind(now)
    .bind(member_id)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// The user of an e-mail and their active member (`admin session create`): `NotFound("user")`
/// or `NotFound("active member of this user")` otherwise.
pub(crate) async fn active_member_of_email(
    conn: &mut sqlx::AnyConnection,
    email: &str,
) -> StoreResult<(String, Member)> {
    let user_id: String = sqlx::query("SELECT id FROM users WHERE lower(email) = lower($1) LIMIT 1")
        .bind(email)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound("user"))?
        .try_get("id")?;
    let member = sqlx::query(&format!(
        "SELECT {MEMBER_COLUMNS} FROM reseller_members m WHERE m.user_id = $1 AND m.status = 'active' LIMIT 1"
    ))
    .bind(&user_id)
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(StoreError::NotFound("active member of this user"))?;
    Ok((user_id, member_from_row(&member)?))
}

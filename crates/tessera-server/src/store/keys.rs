//! API keys. Secrets never leave this layer in the clear except through the auth path, which
//! decrypts private secrets to check HMACs.
use sqlx::any::AnyRow;
use sqlx::Row;

use super::accounts::bump_auth_generation;
use super::{Store, StoreError, StoreResult};
use crate::domain::accounts::AccountStatus;
use crate::domain::scopes::{KeyKind, Scopes};
use crate::domain::time::now_ms;

/// A key as listed (no secret material).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    pub key_id: String,
    pub account_id: String,
    pub kind: KeyKind,
    pub campaign_id: Option<String>,
    pub scopes: Scopes,
    pub capabilities: Vec<String>,
    pub status: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// A key with what authentication needs: its sealed or hashed secret and its account's status.
#[derive(Debug, Clone)]
pub struct AuthKeyRow {
    pub info: KeyInfo,
    pub secret_hash: Option<String>,
    pub secret_sealed: Option<String>,
    pub account_status: AccountStatus,
    /// The account's own tighter request limit (`security.rateLimitPerMinute`), if set.
    pub rate_limit_per_minute: Option<u32>,
}

/// What `insert_key` stores.
pub struct NewKey<'a> {
    pub key_id: &'a str,
    pub account_id: &'a str,
    pub kind: KeyKind,
    pub campaign_id: Option<&'a str>,
    pub scopes: Scopes,
    pub capabilities: &'a [String],
    pub secret_hash: Option<String>,
    pub secret_sealed: Option<String>,
}

const COLUMNS: &str =
    "k.key_id, k.account_id, k.kind, k.campaign_id, k.scopes, k.capabilities, k.status, k.created_at, k.revoked_at";

fn info_from_row(r: &AnyRow) -> StoreResult<KeyInfo> {
    let kind: String = r.try_get("kind")?;
    let scopes: String = r.try_get("scopes")?;
    let caps: String = r.try_get("capabilities")?;
    Ok(KeyInfo {
        key_id: r.try_get("key_id")?,
        account_id: r.try_get("account_id")?,
        kind: KeyKind::parse(&kind).map_err(|_| StoreError::Corrupt(format!("key kind {kind:?}")))?,
        campaign_id: r.try_get("campaign_id")?,
        scopes: Scopes::parse_csv("scopes", &scopes).map_err(|_| StoreError::Corrupt(format!("scopes {scopes:?}")))?,
        capabilities: caps.split(',').filter(|c| !c.is_empty()).map(str::to_string).collect(),
        status: r.try_get("status")?,
        created_at: r.try_get("created_at")?,
        revoked_at: r.try_get("revoked_at")?,
    })
}

impl Store {
    pub async fn insert_key(&self, k: NewKey<'_>) -> StoreResult<KeyInfo> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        sqlx::query(
            "INSERT INTO api_keys (key_id, account_id, kind, campaign_id, scopes, capabilities, secret_hash, secret_sealed, status, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'active', $9)",
        )
        .bind(k.key_id)
        .bind(k.account_id)
        .bind(k.kind.as_str())
        .bind(k.campaign_id)
        .bind(k.scopes.to_csv())
        .bind(k.capabilities.join(","))
        .bind(k.secret_hash)
        .bind(k.secret_sealed)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        bump_auth_generation(&mut *tx).await?;
        tx.commit().await?;
        Ok(KeyInfo {
            key_id: k.key_id.into(),
            account_id: k.account_id.into(),
            kind: k.kind,
            campaign_id: k.campaign_id.map(str::to_string),
            scopes: k.scopes,
            capabilities: k.capabilities.to_vec(),
            status: "active".into(),
            created_at: now,
            revoked_at: None,
        })
    }

    pub async fn list_keys(&self, account_id: &str) -> StoreResult<Vec<KeyInfo>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM api_keys k WHERE k.account_id = $1 ORDER BY k.created_at, k.key_id"
        ))
        .bind(account_id)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(info_from_row).collect()
    }

    /// Revokes a key; revoking twice is a no-op that returns the key as it is.
    pub async fn revoke_key(&self, key_id: &str) -> StoreResult<KeyInfo> {
        let mut tx = self.writer().begin().await?;
        sqlx::query("UPDATE api_keys SET status = 'revoked', revoked_at = $1 WHERE key_id = $2 AND status = 'active'")
            .bind(now_ms())
            .bind(key_id)
            .execute(&mut *tx)
            .await?;
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM api_keys k WHERE k.key_id = $1"))
            .bind(key_id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound("key"))?;
        bump_auth_generation(&mut *tx).await?;
        tx.commit().await?;
        info_from_row(&row)
    }

    /// One indexed read: the key and its account's status.
    pub async fn key_for_auth(&self, key_id: &str) -> StoreResult<Option<AuthKeyRow>> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS}, k.secret_hash, k.secret_sealed, a.status AS account_status, s.config AS security \
             FROM api_keys k JOIN accounts a ON a.id = k.account_id \
             LEFT JOIN settings s ON s.account_id = k.account_id AND s.category = 'security' WHERE k.key_id = $1"
        ))
        .bind(key_id)
        .fetch_optional(self.reader())
        .await?;
        let Some(r) = row else { return Ok(None) };
        let status: String = r.try_get("account_status")?;
        let security: Option<String> = r.try_get("security")?;
        let rate_limit_per_minute = security
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .and_then(|v| v.get("rateLimitPerMinute").and_then(serde_json::Value::as_u64))
            .and_then(|n| u32::try_from(n).ok());
        Ok(Some(AuthKeyRow {
            rate_limit_per_minute,
            info: info_from_row(&r)?,
            secret_hash: r.try_get("secret_hash")?,
            secret_sealed: r.try_get("secret_sealed")?,
            account_status: AccountStatus::parse(&status)
                .map_err(|_| StoreError::Corrupt(format!("account status {status:?}")))?,
        }))
    }
}

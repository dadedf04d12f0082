//! Settings by category (D4): one JSON object per (account, category).
use serde_json::Value;
use sqlx::Row;

use super::audit::{record, Audit};
use super::{Backend, Store, StoreError, StoreResult};
use crate::domain::time::now_ms;
use crate::domain::DomainError;

/// `{"before": {...}, "after": {...}}` over the top-level keys that changed, secrets masked.
fn changed_keys_summary(before: &Value, after: &Value) -> Value {
    let empty = serde_json::Map::new();
    let (b, a) = (before.as_object().unwrap_or(&empty), after.as_object().unwrap_or(&empty));
    let mut keys: Vec<&String> = b.keys().chain(a.keys()).filter(|k| b.get(*k) != a.get(*k)).collect();
    keys.sort();
    keys.dedup();
    let pick = |m: &serde_json::Map<String, Value>| {
        let mut out: Value = keys
            .iter()
            .filter_map(|k| m.get(*k).map(|v| ((*k).clone(), v.clone())))
            .collect::<serde_json::Map<_, _>>()
            .into();
        crate::domain::settings::mask_sealed(&mut out);
        out
    };
    serde_json::json!({ "before": pick(b), "after": pick(a) })
}

impl Store {
    /// One category's stored config object, `{}` when the account never wrote it.
    pub async fn settings_category(&self, account_id: &str, category: &str) -> StoreResult<Value> {
        let row = sqlx::query("SELECT config FROM settings WHERE account_id = $1 AND category = $2")
            .bind(account_id)
            .bind(category)
            .fetch_optional(self.reader())
            .await?;
        match row {
            None => Ok(Value::Object(Default::default())),
            Some(r) => {
                let text: String = r.try_get("config")?;
                serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("settings {category}: {e}")))
            }
        }
    }

    /// Every stored category of the account, sorted by name.
    pub async fn settings(&self, account_id: &str) -> StoreResult<Vec<(String, Value)>> {
        let rows = sqlx::query("SELECT category, config FROM settings WHERE account_id = $1 ORDER BY category")
            .bind(account_id)
            .fetch_all(self.reader())
            .await?;
        rows.iter()
            .map(|r| {
                let category: String = r.try_get("category")?;
                let text: String = r.try_get("config")?;
                let value = serde_json::from_str(&text)
                    .map_err(|e| StoreError::Corrupt(format!("settings {category}: {e}")))?;
                Ok((category, value))
            })
            .collect()
    }

    /// Read-modify-write of one category in one transaction: `change` gets the stored object
    /// (`{}` when none) and returns the new one. The row is locked (PostgreSQL) or the single
    /// writer serializes (SQLite), so concurrent patches never lose each other's keys.
    pub async fn update_setting(
        &self,
        account_id: &str,
        category: &str,
        change: impl FnOnce(Value) -> Result<Value, DomainError>,
        audit: Audit<'_>,
    ) -> Result<Value, super::UpdateError> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        sqlx::query(
            "INSERT INTO settings (account_id, category, config, updated_at) VALUES ($1, $2, '{}', $3) \
             ON CONFLICT (account_id, category) DO NOTHING",
        )
        .bind(account_id)
        .bind(category)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let lock = if self.backend() == Backend::Postgres { " FOR UPDATE" } else { "" };
        let text: String =
            sqlx::query(&format!("SELECT config FROM settings WHERE account_id = $1 AND category = $2{lock}"))
                .bind(account_id)
                .bind(category)
                .fetch_one(&mut *tx)
                .await?
                .try_get("config")?;
        let current: Value =
            serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("settings {category}: {e}")))?;
        let next = change(current.clone())?;
        let summary = changed_keys_summary(&current, &next);
        sqlx::query("UPDATE settings SET config = $1, updated_at = $2 WHERE account_id = $3 AND category = $4")
            .bind(next.to_string())
            .bind(now)
            .bind(account_id)
            .bind(category)
            .execute(&mut *tx)
            .await?;
        // Cached keys (security's limit override) and account views (masked settings) on every
        // instance reload when this counter moves.
        super::accounts::bump_auth_generation(&mut *tx).await?;
        record(&mut tx, account_id, &Audit { entity_id: category, summary, ..audit }).await?;
        tx.commit().await?;
        Ok(next)
    }
}

//! Settings by category (D4): one JSON object per (account, category).
use sqlx::Row;

use super::{Store, StoreError, StoreResult};
use crate::domain::time::now_ms;

impl Store {
    /// Every stored category of the account, sorted by name.
    pub async fn settings(&self, account_id: &str) -> StoreResult<Vec<(String, serde_json::Value)>> {
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

    /// Replaces one category's stored object.
    pub async fn put_setting(&self, account_id: &str, category: &str, config: &serde_json::Value) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO settings (account_id, category, config, updated_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (account_id, category) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at",
        )
        .bind(account_id)
        .bind(category)
        .bind(config.to_string())
        .bind(now_ms())
        .execute(self.writer())
        .await?;
        Ok(())
    }
}

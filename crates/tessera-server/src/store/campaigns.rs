//! Campaigns of an account.
use super::{Store, StoreResult};

impl Store {
    /// Whether the campaign exists and belongs to the account.
    pub async fn campaign_exists(&self, account_id: &str, campaign_id: &str) -> StoreResult<bool> {
        Ok(sqlx::query("SELECT 1 FROM campaigns WHERE account_id = $1 AND id = $2")
            .bind(account_id)
            .bind(campaign_id)
            .fetch_optional(self.reader())
            .await?
            .is_some())
    }
}

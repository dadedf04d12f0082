//! Organization accounts (operator CLI; read by authentication and `GET /context`).
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{unique_to_conflict, Store, StoreError, StoreResult};
use crate::domain::accounts::AccountStatus;
use crate::domain::{new_id, time::now_ms};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub id: String,
    pub slug: String,
    pub platform_name: String,
    pub status: AccountStatus,
    pub created_at: i64,
}

const COLUMNS: &str = "id, slug, platform_name, status, created_at";

fn from_row(r: &AnyRow) -> StoreResult<Account> {
    let status: String = r.try_get("status")?;
    Ok(Account {
        id: r.try_get("id")?,
        slug: r.try_get("slug")?,
        platform_name: r.try_get("platform_name")?,
        status: AccountStatus::parse(&status).map_err(|_| StoreError::Corrupt(format!("account status {status:?}")))?,
        created_at: r.try_get("created_at")?,
    })
}

pub(crate) async fn bump_auth_generation<'c, E: sqlx::Executor<'c, Database = sqlx::Any>>(e: E) -> StoreResult<()> {
    sqlx::query("UPDATE auth_generation SET value = value + 1 WHERE id = 1").execute(e).await?;
    Ok(())
}

impl Store {
    pub async fn create_account(&self, slug: &str, platform_name: &str, status: AccountStatus) -> StoreResult<Account> {
        let now = now_ms();
        let id = new_id();
        sqlx::query(
            "INSERT INTO accounts (id, slug, platform_name, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)",
        )
        .bind(&id)
        .bind(slug)
        .bind(platform_name)
        .bind(status.as_str())
        .bind(now)
        .execute(self.writer())
        .await
        .map_err(|e| unique_to_conflict(e, "an account with this slug already exists"))?;
        Ok(Account { id, slug: slug.into(), platform_name: platform_name.into(), status, created_at: now })
    }

    pub async fn set_account_status(&self, slug: &str, status: AccountStatus) -> StoreResult<Account> {
        let mut tx = self.writer().begin().await?;
        let n = sqlx::query("UPDATE accounts SET status = $1, updated_at = $2 WHERE slug = $3")
            .bind(status.as_str())
            .bind(now_ms())
            .bind(slug)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound("account"));
        }
        bump_auth_generation(&mut *tx).await?;
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM accounts WHERE slug = $1"))
            .bind(slug)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        from_row(&row)
    }

    pub async fn list_accounts(&self) -> StoreResult<Vec<Account>> {
        let rows = sqlx::query(&format!("SELECT {COLUMNS} FROM accounts ORDER BY created_at, slug"))
            .fetch_all(self.reader())
            .await?;
        rows.iter().map(from_row).collect()
    }

    pub async fn account_by_slug(&self, slug: &str) -> StoreResult<Account> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM accounts WHERE slug = $1"))
            .bind(slug)
            .fetch_optional(self.reader())
            .await?
            .ok_or(StoreError::NotFound("account"))?;
        from_row(&row)
    }

    pub async fn account(&self, account_id: &str) -> StoreResult<Account> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM accounts WHERE id = $1"))
            .bind(account_id)
            .fetch_optional(self.reader())
            .await?
            .ok_or(StoreError::NotFound("account"))?;
        from_row(&row)
    }

    /// The counter the auth cache compares against (see `auth_generation` in the schema).
    pub async fn auth_generation(&self) -> StoreResult<i64> {
        Ok(sqlx::query("SELECT value FROM auth_generation WHERE id = 1")
            .fetch_one(self.reader())
            .await?
            .try_get("value")?)
    }
}

//! Approved website domains of an account (domain-key scheme, CORS, `GET /context`).
use sqlx::any::AnyRow;
use sqlx::Row;

use super::accounts::bump_auth_generation;
use super::{unique_to_conflict, Store, StoreResult};
use crate::domain::{new_id, time::now_ms};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    pub hostname: String,
    pub is_primary: bool,
    pub verified: bool,
    pub ssl_status: String,
}

fn from_row(r: &AnyRow) -> StoreResult<Domain> {
    Ok(Domain {
        hostname: r.try_get("hostname")?,
        is_primary: r.try_get::<i64, _>("is_primary")? != 0,
        verified: r.try_get::<i64, _>("verified")? != 0,
        ssl_status: r.try_get("ssl_status")?,
    })
}

impl Store {
    /// Adds a domain; a new primary domain demotes the previous one in the same transaction.
    pub async fn add_domain(
        &self,
        account_id: &str,
        hostname: &str,
        primary: bool,
        verified: bool,
    ) -> StoreResult<Domain> {
        // sslStatus: "active" once verified (the operator vouches for the certificate), else
        // "pending". Values: pending, active, failed.
        let ssl_status = if verified { "active" } else { "pending" };
        let mut tx = self.writer().begin().await?;
        if primary {
            sqlx::query("UPDATE domains SET is_primary = 0 WHERE account_id = $1")
                .bind(account_id)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(
            "INSERT INTO domains (id, account_id, hostname, is_primary, verified, ssl_status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(new_id())
        .bind(account_id)
        .bind(hostname)
        .bind(primary as i64)
        .bind(verified as i64)
        .bind(ssl_status)
        .bind(now_ms())
        .execute(&mut *tx)
        .await
        .map_err(|e| unique_to_conflict(e, "this hostname is already registered"))?;
        bump_auth_generation(&mut *tx).await?;
        tx.commit().await?;
        Ok(Domain { hostname: hostname.into(), is_primary: primary, verified, ssl_status: ssl_status.into() })
    }

    pub async fn list_domains(&self, account_id: &str) -> StoreResult<Vec<Domain>> {
        let rows = sqlx::query(
            "SELECT hostname, is_primary, verified, ssl_status FROM domains WHERE account_id = $1 ORDER BY is_primary DESC, hostname",
        )
        .bind(account_id)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(from_row).collect()
    }

    /// Every verified hostname with its account (loaded into the auth cache).
    pub async fn verified_domains(&self) -> StoreResult<Vec<(String, String)>> {
        let rows =
            sqlx::query("SELECT hostname, account_id FROM domains WHERE verified = 1").fetch_all(self.reader()).await?;
        rows.iter().map(|r| Ok((r.try_get("hostname")?, r.try_get("account_id")?))).collect()
    }
}

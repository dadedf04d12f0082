//! USSD sessions (D17.20, D17.22): where each caller is, stored so that a process restart
//! mid-session resumes. A session is saved in the flow's transaction, with what it caused (a
//! vote and its charge job, a cancellation), and only if nobody else saved it since it was read:
//! of two copies of one gateway request racing, one wins and the other shows its screen.
use sqlx::any::AnyRow;
use sqlx::Row;

use super::{Store, StoreError, StoreResult};
use crate::domain::ussd::Step;

/// A session as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct UssdSession {
    pub account_id: String,
    pub gateway: String,
    pub session_id: String,
    /// `233…` form.
    pub msisdn: String,
    /// `mtn`, `vod` or `atl`, when known.
    pub network: Option<String>,
    pub step: Step,
    /// The last screen shown (sent again when a gateway repeats a request).
    pub screen: String,
    pub ended: bool,
    /// Inputs consumed so far (Africa's Talking repeats them all in every request).
    pub inputs: i64,
    /// Hubtel's last `Sequence`.
    pub sequence: i64,
    /// The vote this session confirmed or acted on.
    pub reference: Option<String>,
    pub created_at: i64,
    /// Also the session's version: every save moves it forward.
    pub updated_at: i64,
}

const COLUMNS: &str = "account_id, gateway, session_id, msisdn, network, step, screen, ended, inputs, sequence, \
                       reference, created_at, updated_at";

fn from_row(r: &AnyRow) -> StoreResult<UssdSession> {
    let step: String = r.try_get("step")?;
    Ok(UssdSession {
        account_id: r.try_get("account_id")?,
        gateway: r.try_get("gateway")?,
        session_id: r.try_get("session_id")?,
        msisdn: r.try_get("msisdn")?,
        network: r.try_get("network")?,
        step: serde_json::from_str(&step).map_err(|_| StoreError::Corrupt("ussd session step".into()))?,
        screen: r.try_get("screen")?,
        ended: r.try_get::<i64, _>("ended")? != 0,
        inputs: r.try_get("inputs")?,
        sequence: r.try_get("sequence")?,
        reference: r.try_get("reference")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

impl Store {
    /// A gateway's session of the account, if it was seen.
    pub async fn ussd_session(
        &self,
        account_id: &str,
        gateway: &str,
        session_id: &str,
    ) -> StoreResult<Option<UssdSession>> {
        // The writer: a session read on a replica that lags would lose the caller's last step.
        sqlx::query(&format!(
            "SELECT {COLUMNS} FROM ussd_sessions WHERE account_id = $1 AND gateway = $2 AND session_id = $3"
        ))
        .bind(account_id)
        .bind(gateway)
        .bind(session_id)
        .fetch_optional(self.writer())
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
    }

    /// Forgets sessions untouched since `before` (ms); returns how many.
    pub async fn prune_ussd_sessions(&self, before: i64) -> StoreResult<u64> {
        let r =
            sqlx::query("DELETE FROM ussd_sessions WHERE updated_at < $1").bind(before).execute(self.writer()).await?;
        Ok(r.rows_affected())
    }
}

/// Saves a session in the caller's transaction. `read_at` is the `updated_at` the session had
/// when it was read (`None`: it was not there). Returns false, changing nothing, when another
/// request saved it in between.
pub(crate) async fn save(conn: &mut sqlx::AnyConnection, s: &UssdSession, read_at: Option<i64>) -> StoreResult<bool> {
    let step = serde_json::to_string(&s.step).map_err(|e| StoreError::Corrupt(format!("ussd step: {e}")))?;
    let q = match read_at {
        None => sqlx::query(
            "INSERT INTO ussd_sessions (account_id, gateway, session_id, msisdn, network, step, screen, ended, inputs, \
             sequence, reference, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
             ON CONFLICT (account_id, gateway, session_id) DO NOTHING",
        ),
        Some(_) => sqlx::query(
            "UPDATE ussd_sessions SET msisdn = $4, network = $5, step = $6, screen = $7, ended = $8, inputs = $9, \
             sequence = $10, reference = $11, created_at = $12, updated_at = $13 \
             WHERE account_id = $1 AND gateway = $2 AND session_id = $3 AND updated_at = $14",
        ),
    };
    let mut q = q
        .bind(&s.account_id)
        .bind(&s.gateway)
        .bind(&s.session_id)
        .bind(&s.msisdn)
        .bind(s.network.as_deref())
        .bind(step)
        .bind(&s.screen)
        .bind(i64::from(s.ended))
        .bind(s.inputs)
        .bind(s.sequence)
        .bind(s.reference.as_deref())
        .bind(s.created_at)
        .bind(s.updated_at);
    if let Some(v) = read_at {
        q = q.bind(v);
    }
    let r = q.execute(conn).await?;
    Ok(r.rows_affected() == 1)
}

//! Outbound webhook delivery (D17.26, D17.41): the endpoint as the unit of work. A worker claims
//! an enabled endpoint that has a pending delivery and whose lease is free, sends its pending
//! deliveries one at a time in `(sequence, created_at, id)` order, and records each request's
//! outcome (the attempt, the delivery's new state, the endpoint's failing run or disabling) in
//! one transaction. An endpoint whose next delivery is not yet due is parked: no owner, and
//! `lease_until` at the time it is due, so no worker looks at it before then.
//!
//! The lease owner is a token of one claim (the process's worker id and a fresh id), not the
//! process: two loops of one process never mistake each other's claim for their own.
use sqlx::Row;

use super::{Store, StoreResult};
use crate::domain::new_id;
use crate::domain::webhooks::FAILING_DISABLES_AFTER_MS;

/// The longest response body kept with an attempt, characters.
pub const RESPONSE_KEPT_CHARS: usize = 256;

/// What the sender needs of an endpoint: where to send and what to sign with. The sealed
/// secrets never leave the store and the flow that opens them.
#[derive(Debug, Clone)]
pub struct SendingEndpoint {
    pub id: String,
    pub account_id: String,
    pub url: String,
    /// `enabled` or `disabled`.
    pub status: String,
    pub secret_sealed: String,
    pub previous_secret_sealed: Option<String>,
    pub previous_secret_until: Option<i64>,
}

/// A claimed endpoint: its id and the claim's token.
#[derive(Debug, Clone)]
pub struct Claim {
    pub endpoint_id: String,
    pub owner: String,
}

/// The endpoint's next pending delivery, with its event and the endpoint as it is now (a
/// rotation or a new URL between two sends takes effect on the next one).
#[derive(Debug, Clone)]
pub struct Head {
    pub delivery_id: String,
    pub attempts: i64,
    pub next_at: i64,
    pub event_id: String,
    pub sequence: i64,
    pub event_type: String,
    /// The event's JSON object, exactly as stored.
    pub data: String,
    pub created_at: i64,
    pub endpoint: SendingEndpoint,
}

/// What came of one request to an endpoint.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub event_id: String,
    pub status_code: Option<u16>,
    pub duration_ms: i64,
    pub error: Option<String>,
    /// The start of the answer's body (cut to [`RESPONSE_KEPT_CHARS`] here).
    pub response: Option<String>,
    pub at: i64,
}

/// What a delivery's attempt did to it, decided by the flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A 2xx: delivered; the endpoint's failing run ends.
    Delivered,
    /// A 410: the endpoint is disabled (`gone`) at once; the delivery stays pending.
    Gone,
    /// Any other failure, retried at `next_at`.
    Retry { next_at: i64 },
    /// Any other failure with the retries used up: the delivery is `failed`.
    Failed,
}

/// What recording an outcome did to the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointAfter {
    /// Still enabled.
    Enabled,
    /// Disabled by this outcome (`gone`, or `failing` for 5 days).
    Disabled(&'static str),
}

const SENDING_COLUMNS: &str = "w.id AS w_id, w.account_id AS w_account_id, w.url AS w_url, w.status AS w_status, \
     w.secret_sealed AS w_secret_sealed, w.previous_secret_sealed AS w_previous_secret_sealed, \
     w.previous_secret_until AS w_previous_secret_until";

fn sending_from_row(r: &sqlx::any::AnyRow) -> StoreResult<SendingEndpoint> {
    Ok(SendingEndpoint {
        id: r.try_get("w_id")?,
        account_id: r.try_get("w_account_id")?,
        url: r.try_get("w_url")?,
        status: r.try_get("w_status")?,
        secret_sealed: r.try_get("w_secret_sealed")?,
        previous_secret_sealed: r.try_get("w_previous_secret_sealed")?,
        previous_secret_until: r.try_get("w_previous_secret_until")?,
    })
}

/// `s` cut to at most `max` characters (on a character boundary).
pub fn cut(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

async fn insert_attempt(
    conn: &mut sqlx::AnyConnection,
    account_id: &str,
    endpoint_id: &str,
    a: &AttemptRecord,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO webhook_attempts (id, account_id, endpoint_id, event_id, status_code, duration_ms, error, \
         response, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(new_id())
    .bind(account_id)
    .bind(endpoint_id)
    .bind(&a.event_id)
    .bind(a.status_code.map(i64::from))
    .bind(a.duration_ms)
    .bind(a.error.as_deref())
    .bind(a.response.as_deref().map(|r| cut(r, RESPONSE_KEPT_CHARS).to_string()))
    .bind(a.at)
    .execute(conn)
    .await?;
    Ok(())
}

impl Store {
    /// Claims an enabled endpoint with a pending delivery whose lease is free, for `owner`
    /// until `now + lease_ms`. The endpoints that waited longest come first.
    pub async fn claim_webhook_endpoint(&self, owner: &str, now: i64, lease_ms: i64) -> StoreResult<Option<Claim>> {
        // A lost race (another worker claimed the candidate first) tries the next candidate.
        for _ in 0..8 {
            let Some(row) = sqlx::query(
                "SELECT w.id FROM webhook_endpoints w WHERE w.status = 'enabled' \
                 AND (w.lease_until IS NULL OR w.lease_until < $1) \
                 AND EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = w.id AND d.status = 'pending') \
                 ORDER BY COALESCE(w.lease_until, 0), w.id LIMIT 1",
            )
            .bind(now)
            .fetch_optional(self.reader())
            .await?
            else {
                return Ok(None);
            };
            let id: String = row.try_get("id")?;
            let claimed = sqlx::query(
                "UPDATE webhook_endpoints SET lease_owner = $1, lease_until = $2 WHERE id = $3 \
                 AND status = 'enabled' AND (lease_until IS NULL OR lease_until < $4)",
            )
            .bind(owner)
            .bind(now + lease_ms)
            .bind(&id)
            .bind(now)
            .execute(self.writer())
            .await?
            .rows_affected();
            if claimed == 1 {
                return Ok(Some(Claim { endpoint_id: id, owner: owner.to_string() }));
            }
        }
        Ok(None)
    }

    /// Extends a claim to `now + lease_ms`; false when the claim was lost (expired and taken,
    /// or the endpoint disabled or deleted), and the worker must stop.
    pub async fn renew_webhook_lease(&self, claim: &Claim, now: i64, lease_ms: i64) -> StoreResult<bool> {
        let renewed = sqlx::query(
            "UPDATE webhook_endpoints SET lease_until = $1 WHERE id = $2 AND lease_owner = $3 AND status = 'enabled'",
        )
        .bind(now + lease_ms)
        .bind(&claim.endpoint_id)
        .bind(&claim.owner)
        .execute(self.writer())
        .await?
        .rows_affected();
        Ok(renewed == 1)
    }

    /// Ends a claim: free at once (`until` = `None`: nothing due, or the worker yields), or
    /// parked until the next delivery is due. A claim already lost is left alone.
    pub async fn release_webhook_endpoint(&self, claim: &Claim, until: Option<i64>) -> StoreResult<()> {
        sqlx::query(
            "UPDATE webhook_endpoints SET lease_owner = NULL, lease_until = $1 WHERE id = $2 AND lease_owner = $3",
        )
        .bind(until)
        .bind(&claim.endpoint_id)
        .bind(&claim.owner)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// The claimed endpoint's next pending delivery with its event, while the endpoint is
    /// enabled; `None` when there is none (or the endpoint was disabled meanwhile).
    pub async fn webhook_head(&self, endpoint_id: &str) -> StoreResult<Option<Head>> {
        let row = sqlx::query(&format!(
            "SELECT d.id AS d_id, d.attempts AS d_attempts, d.next_at AS d_next_at, e.id AS e_id, \
             e.sequence AS e_sequence, e.type AS e_type, e.data AS e_data, e.created_at AS e_created_at, \
             {SENDING_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id \
             JOIN webhook_endpoints w ON w.id = d.endpoint_id \
             WHERE d.endpoint_id = $1 AND d.status = 'pending' AND w.status = 'enabled' \
             ORDER BY d.sequence, d.created_at, d.id LIMIT 1"
        ))
        .bind(endpoint_id)
        .fetch_optional(self.reader())
        .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(Head {
            delivery_id: r.try_get("d_id")?,
            attempts: r.try_get("d_attempts")?,
            next_at: r.try_get("d_next_at")?,
            event_id: r.try_get("e_id")?,
            sequence: r.try_get("e_sequence")?,
            event_type: r.try_get("e_type")?,
            data: r.try_get("e_data")?,
            created_at: r.try_get("e_created_at")?,
            endpoint: sending_from_row(&r)?,
        }))
    }

    /// Records one attempt of `head` and what it did, in one transaction: the attempt row;
    /// the delivery delivered, retried later or failed (only while it is still pending: a
    /// worker that lost its claim mid-request cannot undo another's success); the endpoint's
    /// failing run started or ended; the endpoint disabled on a 410 or after 5 days of failing.
    pub async fn record_webhook_outcome(
        &self,
        head: &Head,
        attempt: &AttemptRecord,
        outcome: Outcome,
    ) -> StoreResult<EndpointAfter> {
        let now = attempt.at;
        let ep = &head.endpoint;
        let mut tx = self.begin().await?;
        insert_attempt(&mut tx, &ep.account_id, &ep.id, attempt).await?;
        let mut after = EndpointAfter::Enabled;
        match outcome {
            Outcome::Delivered => {
                sqlx::query(
                    "UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, updated_at = $1 \
                     WHERE id = $2 AND status = 'pending'",
                )
                .bind(now)
                .bind(&head.delivery_id)
                .execute(&mut *tx)
                .await?;
                // Conditional: most successes follow successes, and an unchanged row is not rewritten.
                sqlx::query(
                    "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL",
                )
                .bind(&ep.id)
                .execute(&mut *tx)
                .await?;
            }
            Outcome::Gone => {
                let disabled = sqlx::query(
                    "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'gone', lease_owner = NULL, \
                     lease_until = NULL, updated_at = $1 WHERE id = $2 AND status = 'enabled'",
                )
                .bind(now)
                .bind(&ep.id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if disabled == 1 {
                    after = EndpointAfter::Disabled("gone");
                }
            }
            Outcome::Retry { .. } | Outcome::Failed => {
                let (status, next_at) = match outcome {
                    Outcome::Retry { next_at } => ("pending", next_at),
                    _ => ("failed", now),
                };
                sqlx::query(
                    "UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, next_at = $2, updated_at = $3 \
                     WHERE id = $4 AND status = 'pending'",
                )
                .bind(status)
                .bind(next_at)
                .bind(now)
                .bind(&head.delivery_id)
                .execute(&mut *tx)
                .await?;
                sqlx::query("UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $1) WHERE id = $2")
                    .bind(now)
                    .bind(&ep.id)
                    .execute(&mut *tx)
                    .await?;
                let disabled = sqlx::query(
                    "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'failing', lease_owner = NULL, \
                     lease_until = NULL, updated_at = $1 WHERE id = $2 AND status = 'enabled' AND failing_since <= $3",
                )
                .bind(now)
                .bind(&ep.id)
                .bind(now - FAILING_DISABLES_AFTER_MS)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if disabled == 1 {
                    after = EndpointAfter::Disabled("failing");
                }
            }
        }
        tx.commit().await?;
        Ok(after)
    }

    /// The account's endpoint as the sender needs it (a test event); another account's
    /// endpoint is not found.
    pub async fn sending_endpoint(&self, account_id: &str, endpoint_id: &str) -> StoreResult<SendingEndpoint> {
        let row = sqlx::query(&format!(
            "SELECT {SENDING_COLUMNS} FROM webhook_endpoints w WHERE w.id = $1 AND w.account_id = $2"
        ))
        .bind(endpoint_id)
        .bind(account_id)
        .fetch_optional(self.reader())
        .await?;
        match row {
            Some(r) => sending_from_row(&r),
            None => Err(super::StoreError::NotFound("webhook endpoint")),
        }
    }

    /// Records a test event's attempt (D17.27): in the attempt log, touching neither the
    /// endpoint's failing run nor any delivery.
    pub async fn record_webhook_test_attempt(
        &self,
        endpoint: &SendingEndpoint,
        attempt: &AttemptRecord,
    ) -> StoreResult<()> {
        let mut conn = self.writer().acquire().await?;
        insert_attempt(&mut conn, &endpoint.account_id, &endpoint.id, attempt).await
    }

    /// `serve --demo`: the demo account's endpoint described `description`, pointed at `url`
    /// and enabled; created (every type, the secret `seal` returns for the new id) when missing.
    /// The routes create endpoints through their own store module; this is the demo's shortcut
    /// so that each start finds the one endpoint it made before.
    pub async fn ensure_demo_webhook_endpoint(
        &self,
        account_id: &str,
        url: &str,
        description: &str,
        seal: impl FnOnce(&str) -> String,
        now: i64,
    ) -> StoreResult<SendingEndpoint> {
        let mut tx = self.begin().await?;
        let found: Option<String> = sqlx::query(
            "SELECT id FROM webhook_endpoints WHERE account_id = $1 AND description = $2 ORDER BY created_at LIMIT 1",
        )
        .bind(account_id)
        .bind(description)
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| r.try_get("id"))
        .transpose()?;
        let id = match found {
            Some(id) => {
                sqlx::query(
                    "UPDATE webhook_endpoints SET url = $1, status = 'enabled', disabled_reason = NULL, \
                     failing_since = NULL, lease_owner = NULL, lease_until = NULL, updated_at = $2 WHERE id = $3",
                )
                .bind(url)
                .bind(now)
                .bind(&id)
                .execute(&mut *tx)
                .await?;
                id
            }
            None => {
                let id = new_id();
                sqlx::query(
                    "INSERT INTO webhook_endpoints (id, account_id, url, description, event_types, status, \
                     secret_sealed, created_at, updated_at) VALUES ($1, $2, $3, $4, NULL, 'enabled', $5, $6, $6)",
                )
                .bind(&id)
                .bind(account_id)
                .bind(url)
                .bind(description)
                .bind(seal(&id))
                .bind(now)
                .execute(&mut *tx)
                .await?;
                id
            }
        };
        tx.commit().await?;
        self.sending_endpoint(account_id, &id).await
    }
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn a_kept_response_is_cut_on_a_character_boundary() {
        assert_eq!(cut("abc", 2), "ab");
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("ééé", 2), "éé");
        assert_eq!(cut("", 5), "");
    }
}

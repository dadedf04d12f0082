//! Outbound webhooks (D17.24–27, D17.41): an account's events delivered to its endpoints,
//! signed as Standard Webhooks, in `sequence` order per endpoint, retried on the schedule, and
//! the test events sent at once.
//!
//! The endpoint is the unit of work ([`deliver_next`]): a worker claims one with a lease
//! (`store::webhook_deliveries`), sends its due deliveries one at a time, and records each
//! request's outcome in one transaction before the next goes, so order holds among the events
//! still being delivered and an event is sent again (same `webhook-id`) only when its outcome
//! was never recorded (a kill while the request was on the wire: at least once, D17.41).
//! Every request goes through the outbound guard (D16.25) with the account's URL treated as
//! untrusted: a refusal is recorded as the attempt's error, like any failure to connect.
use std::time::{Duration, Instant};

use rand::Rng as _;
use secrecy::ExposeSecret as _;
use serde_json::Value;

use crate::domain::money::to_ghs;
use crate::domain::new_id;
use crate::domain::time::{now_ms, rfc3339};
use crate::domain::webhooks::{retry_delay_ms, signature, EventType};
use crate::providers::outbound::is_blocked;
use crate::state::AppState;
use crate::store::webhook_deliveries::{
    cut, AttemptRecord, Claim, EndpointAfter, Outcome, SendingEndpoint, RESPONSE_KEPT_CHARS,
};
use crate::telemetry::metrics;
use crate::views::campaigns::CampaignOut;
use crate::views::payments::{DonationOut, PaymentOut, VotesOut};
use crate::views::tickets::{Attendee, IdName, IdTitle, TicketOut};
use crate::views::withdrawals::WithdrawalOut;

use super::FlowResult;

/// One request made to an endpoint, as the attempt log keeps it.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub event_id: String,
    /// The answer's status; `None` when no answer came.
    pub status_code: Option<u16>,
    pub duration_ms: i64,
    pub error: Option<String>,
}

/// Deliveries sent per claim before the endpoint is handed back: a busy endpoint shares the
/// workers with the account's other endpoints, and a stopping worker ends its step soon.
pub const DELIVERIES_PER_CLAIM: usize = 50;

/// No new request starts after this long in one claim (milliseconds): a slow endpoint that
/// does answer must not hold a stopping worker for 50 timeouts.
pub const CLAIM_BUDGET_MS: i64 = 1_000;

/// `user-agent` of every delivery.
pub const USER_AGENT: &str = "Tessera-Webhooks/1";

/// The bytes of an answer read to keep its start with the attempt.
const RESPONSE_READ_BYTES: usize = 1024;

/// Claims one endpoint that has a pending delivery and delivers its due events in order until
/// none is left, the next is not yet due (the endpoint is parked until it is), the endpoint is
/// disabled, the claim is lost, or [`DELIVERIES_PER_CLAIM`] went or [`CLAIM_BUDGET_MS`] passed.
/// Returns whether it found an endpoint to work on.
pub async fn deliver_next(state: &AppState) -> anyhow::Result<bool> {
    let lease_ms = lease_ms(state);
    // A token per claim: two loops of one process never take each other's claim for theirs.
    let owner = format!("{}:{}", state.worker_id, new_id());
    let now = now_ms();
    let Some(claim) = state.store.claim_webhook_endpoint(&owner, now, lease_ms).await? else {
        return Ok(false);
    };
    deliver_claimed(state, &claim, now, lease_ms).await?;
    Ok(true)
}

/// The claim's lease: the workers' lease, and never shorter than one request may take, or a
/// slow endpoint's claim would run out mid-request and a second worker send the next event
/// (or the same one) beside it.
fn lease_ms(state: &AppState) -> i64 {
    let lease = state.config.workers.lease_ms();
    let timeout = i64::try_from(state.config.webhooks.timeout_ms).unwrap_or(i64::MAX / 2);
    lease.max(timeout.saturating_add(1_000))
}

/// Sends the due deliveries of the endpoint claimed at `claimed_at`.
async fn deliver_claimed(state: &AppState, claim: &Claim, claimed_at: i64, lease_ms: i64) -> anyhow::Result<()> {
    let store = &state.store;
    let mut held_until = claimed_at + lease_ms;
    let request_ms = i64::try_from(state.config.webhooks.timeout_ms).unwrap_or(i64::MAX / 2).saturating_add(1_000);
    for _ in 0..DELIVERIES_PER_CLAIM {
        let Some(head) = store.webhook_head(&claim.endpoint_id).await? else {
            store.release_webhook_endpoint(claim, None).await?;
            return Ok(());
        };
        let now = now_ms();
        if head.next_at > now {
            store.release_webhook_endpoint(claim, Some(head.next_at)).await?;
            return Ok(());
        }
        if now - claimed_at > CLAIM_BUDGET_MS {
            break;
        }
        // Renewed only when what is left of the lease might not cover one more request: a
        // write per delivery saved, and the lease still never runs out mid-request.
        if held_until - now < request_ms {
            if !store.renew_webhook_lease(claim, now, lease_ms).await? {
                tracing::info!(endpoint = %claim.endpoint_id, "webhook endpoint's claim lost; another worker has it");
                return Ok(());
            }
            held_until = now + lease_ms;
        }
        let body = event_body(&head.event_type, head.created_at, Some(head.sequence), &head.data);
        let sent = send(state, &head.endpoint, &head.event_id, &body).await;
        let at = now_ms();
        let jitter = rand::thread_rng().gen_range(-1.0..=1.0);
        let outcome = outcome_of(sent.status_code, head.attempts + 1, at, state.config.webhooks.retry_scale, jitter);
        let record = sent.record(&head.event_id, at);
        let after = store.record_webhook_outcome(&head, &record, outcome).await?;
        metrics::webhook_delivery(match outcome {
            Outcome::Delivered => "delivered",
            Outcome::Gone => "gone",
            Outcome::Retry { .. } => "retry",
            Outcome::Failed => "failed",
        });
        match outcome {
            Outcome::Delivered => {}
            _ => tracing::info!(
                endpoint = %claim.endpoint_id,
                event = %head.event_id,
                status = ?sent.status_code,
                error = sent.error.as_deref().unwrap_or(""),
                attempts = head.attempts + 1,
                ?outcome,
                "webhook delivery failed"
            ),
        }
        if let EndpointAfter::Disabled(reason) = after {
            tracing::warn!(endpoint = %claim.endpoint_id, reason, "webhook endpoint disabled");
            return Ok(());
        }
    }
    // Handed back free: the next step (this worker's or another's) claims it again at once.
    store.release_webhook_endpoint(claim, None).await?;
    Ok(())
}

/// What an attempt's answer does to its delivery: a 2xx delivers it, a 410 disables the
/// endpoint, anything else (no answer included) is retried on the schedule or, with the
/// retries used up, fails it. `failures` counts this attempt.
pub fn outcome_of(status: Option<u16>, failures: i64, now: i64, scale: f64, jitter: f64) -> Outcome {
    match status {
        Some(s) if (200..300).contains(&s) => Outcome::Delivered,
        Some(410) => Outcome::Gone,
        _ => match retry_delay_ms(failures, scale, jitter) {
            Some(delay) => Outcome::Retry { next_at: now.saturating_add(delay) },
            None => Outcome::Failed,
        },
    }
}

/// The delivery body (D17.26): `{"type","timestamp","sequence","data"}`, built by hand so that
/// `data` is byte for byte the stored text the feed shows too.
pub fn event_body(event_type: &str, created_at_ms: i64, sequence: Option<i64>, data: &str) -> String {
    let t = Value::String(event_type.to_string());
    let ts = Value::String(rfc3339(created_at_ms));
    let seq = sequence.map_or_else(|| "null".to_string(), |s| s.to_string());
    format!(r#"{{"type":{t},"timestamp":{ts},"sequence":{seq},"data":{data}}}"#)
}

/// `webhook-signature`: the current secret's `v1,…`, then, during a rotation's grace, a space
/// and the previous secret's (D17.27). `None` when the current secret does not decode.
pub fn signature_header(current: &str, previous: Option<&str>, id: &str, ts_secs: i64, body: &str) -> Option<String> {
    let mut header = signature(current, id, ts_secs, body)?;
    if let Some(p) = previous.and_then(|p| signature(p, id, ts_secs, body)) {
        header.push(' ');
        header.push_str(&p);
    }
    Some(header)
}

/// Opens one of an endpoint's sealed secrets (key id `webhook:<endpoint id>`).
fn open_secret(state: &AppState, endpoint_id: &str, sealed: &str) -> Option<String> {
    let plain = state.keyring().decrypt(&format!("webhook:{endpoint_id}"), sealed)?;
    String::from_utf8(plain.expose_secret().clone()).ok()
}

/// What one request to an endpoint came to.
struct Sent {
    status_code: Option<u16>,
    error: Option<String>,
    response: Option<String>,
    duration_ms: i64,
}

impl Sent {
    fn record(&self, event_id: &str, at: i64) -> AttemptRecord {
        AttemptRecord {
            event_id: event_id.to_string(),
            status_code: self.status_code,
            duration_ms: self.duration_ms,
            error: self.error.clone(),
            response: self.response.clone(),
            at,
        }
    }
}

/// Signs and sends `body` as event `event_id` to the endpoint. Never fails: whatever went wrong
/// (the guard's refusal, no connection, a timeout, a non-2xx answer) is the attempt's error.
async fn send(state: &AppState, endpoint: &SendingEndpoint, event_id: &str, body: &str) -> Sent {
    let started = Instant::now();
    let result = try_send(state, endpoint, event_id, body).await;
    let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    match result {
        Ok((status, response)) => Sent {
            status_code: Some(status),
            error: (!(200..300).contains(&status)).then(|| format!("the endpoint answered {status}")),
            response: Some(response),
            duration_ms,
        },
        Err(error) => Sent { status_code: None, error: Some(error), response: None, duration_ms },
    }
}

async fn try_send(
    state: &AppState,
    endpoint: &SendingEndpoint,
    event_id: &str,
    body: &str,
) -> Result<(u16, String), String> {
    let client = state
        .outbound
        .client_for(&endpoint.url, true)
        .map_err(|why| format!("refused by the outbound guard: {why}"))?;
    let now = now_ms();
    let ts = now.div_euclid(1000);
    let current = open_secret(state, &endpoint.id, &endpoint.secret_sealed)
        .ok_or_else(|| "the endpoint's secret cannot be opened".to_string())?;
    let previous = match (&endpoint.previous_secret_sealed, endpoint.previous_secret_until) {
        (Some(sealed), Some(until)) if until > now => open_secret(state, &endpoint.id, sealed),
        _ => None,
    };
    let signed = signature_header(&current, previous.as_deref(), event_id, ts, body)
        .ok_or_else(|| "the endpoint's secret is not a valid whsec_ secret".to_string())?;
    let timeout = Duration::from_millis(state.config.webhooks.timeout_ms.max(1));
    let mut response = client
        .post(&endpoint.url)
        .timeout(timeout)
        .header("webhook-id", event_id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", signed)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::USER_AGENT, USER_AGENT)
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| describe(&e, timeout))?;
    let status = response.status().as_u16();
    // Only the start of the answer is kept; a large or endless body is not read on.
    let mut start = Vec::new();
    while start.len() < RESPONSE_READ_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => start.extend_from_slice(&chunk),
            _ => break,
        }
    }
    start.truncate(RESPONSE_READ_BYTES);
    Ok((status, cut(&String::from_utf8_lossy(&start), RESPONSE_KEPT_CHARS).to_string()))
}

/// A failed request as the attempt log says it (without the URL: the account knows it, and
/// the log lines carry the endpoint id).
fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if is_blocked(e) {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(c) = cause {
            if let Some(b) = c.downcast_ref::<crate::providers::outbound::BlockedAddress>() {
                return format!("refused by the outbound guard: {b}");
            }
            cause = c.source();
        }
        return "refused by the outbound guard".into();
    }
    if e.is_timeout() {
        return format!("no answer within {} ms", timeout.as_millis());
    }
    let mut text = if e.is_connect() { "could not connect".to_string() } else { "request failed".to_string() };
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// `POST /webhook-endpoints/:id/test {type}` (D17.27, D17.41): sends a sample event of `event_type`
/// to the account's endpoint at once (no sequence, not in the feed, not retried, whatever the
/// endpoint's filter) and records the attempt. Another account's endpoint → not found.
pub async fn send_test(
    state: &AppState,
    account_id: &str,
    endpoint_id: &str,
    event_type: EventType,
) -> FlowResult<Attempt> {
    let endpoint = state.store.sending_endpoint(account_id, endpoint_id).await?;
    let event_id = new_id();
    let now = now_ms();
    let body = event_body(event_type.as_str(), now, None, &sample_data(event_type, now).to_string());
    let sent = send(state, &endpoint, &event_id, &body).await;
    state.store.record_webhook_test_attempt(&endpoint, &sent.record(&event_id, now_ms())).await?;
    metrics::webhook_delivery("test");
    Ok(Attempt { event_id, status_code: sent.status_code, duration_ms: sent.duration_ms, error: sent.error })
}

/// A test event's `data`: the object the API returns for the type (D17.26), with values that
/// are plainly not real (zero-padded ids, `test_` references, example.com addresses).
pub fn sample_data(event_type: EventType, now: i64) -> Value {
    const CAMPAIGN: &str = "00000000-0000-7000-8000-000000000001";
    let at = rfc3339(now);
    let ticket = |checked_in: bool| TicketOut {
        id: "00000000-0000-7000-8000-000000000003".into(),
        ticket_code: "TEST-0000-0000".into(),
        status: "valid".into(),
        checked_in,
        checked_in_at: checked_in.then(|| at.clone()),
        checked_in_by: checked_in.then(|| "Test Gate".into()),
        ticket_type: IdName { id: "00000000-0000-7000-8000-000000000002".into(), name: "Test Ticket".into() },
        campaign: IdTitle { id: CAMPAIGN.into(), title: "Test Campaign".into() },
        attendee: Attendee {
            full_name: Some("Test Attendee".into()),
            email: "attendee@example.com".into(),
            answers: Default::default(),
        },
    };
    let payment = |kind: &str, status: &str| {
        let ok = status == "success";
        PaymentOut {
            reference: "test_0000000000000000".into(),
            transaction_type: kind.into(),
            status: status.into(),
            amount: to_ghs(5000),
            fees: to_ghs(if ok { 98 } else { 0 }),
            net: to_ghs(if ok { 4902 } else { 5000 }),
            currency: "GHS".into(),
            provider: Some("provider_a".into()),
            channel: "web".into(),
            email: "buyer@example.com".into(),
            campaign_id: CAMPAIGN.into(),
            ticket_type_id: (kind == "ticket").then(|| "00000000-0000-7000-8000-000000000002".into()),
            quantity: if kind == "donation" { 1 } else { 2 },
            authorization_url: None,
            metadata: serde_json::json!({"test": true}),
            created_at: at.clone(),
            paid_at: ok.then(|| at.clone()),
            expires_at: at.clone(),
            mismatch: false,
            paid_late: false,
            refunded: crate::domain::money::to_ghs(0),
            tickets: if kind == "ticket" && ok { vec![ticket(false)] } else { Vec::new() },
            votes: (kind == "vote").then(|| VotesOut {
                participant_id: "00000000-0000-7000-8000-000000000004".into(),
                count: if ok { 2 } else { 0 },
            }),
            donation: (kind == "donation" && ok)
                .then(|| DonationOut { id: "00000000-0000-7000-8000-000000000005".into() }),
        }
    };
    let withdrawal = |status: &str, reason: Option<&str>| WithdrawalOut {
        id: "00000000-0000-7000-8000-000000000006".into(),
        status: status.into(),
        amount: to_ghs(10_000),
        bank_name: "Test Bank".into(),
        bank_code: "000".into(),
        account_number: "0000000000".into(),
        account_name: "Test Account".into(),
        failure_reason: reason.map(Into::into),
        created_at: at.clone(),
        updated_at: at.clone(),
    };
    let value = match event_type {
        EventType::TicketPurchaseConfirmed => serde_json::to_value(payment("ticket", "success")),
        EventType::VotePaymentSuccess => serde_json::to_value(payment("vote", "success")),
        EventType::DonationPaymentSuccess => serde_json::to_value(payment("donation", "success")),
        EventType::PaymentFailed => serde_json::to_value(payment("ticket", "failed")),
        EventType::PaymentRefunded => serde_json::to_value(payment("ticket", "success")),
        EventType::TicketCheckedIn => serde_json::to_value(ticket(true)),
        EventType::WithdrawalSucceeded => serde_json::to_value(withdrawal("completed", None)),
        EventType::WithdrawalFailed => serde_json::to_value(withdrawal("failed", Some("Declined (test)"))),
        EventType::CampaignStatusUpdated => serde_json::to_value(CampaignOut {
            id: CAMPAIGN.into(),
            title: "Test Campaign".into(),
            slug: "test-campaign".into(),
            description: "A sample campaign for a test event.".into(),
            campaign_type: "ticketing".into(),
            status: "approved".into(),
            start_date: at.clone(),
            end_date: at.clone(),
            vote_price: None,
            verification_required: false,
            metadata: None,
            created_at: at.clone(),
            updated_at: at.clone(),
            refunds: None,
        }),
    };
    value.unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_carries_the_stored_data_byte_for_byte() {
        let data = r#"{"b": 1,  "a":[2.50]}"#;
        let body = event_body("ticket.purchase.confirmed", 1_700_000_000_123, Some(7), data);
        assert_eq!(
            body,
            r#"{"type":"ticket.purchase.confirmed","timestamp":"2023-11-14T22:13:20.123Z","sequence":7,"data":{"b": 1,  "a":[2.50]}}"#
        );
        let test = event_body("payment.failed", 0, None, "{}");
        assert_eq!(test, r#"{"type":"payment.failed","timestamp":"1970-01-01T00:00:00Z","sequence":null,"data":{}}"#);
        assert!(serde_json::from_str::<Value>(&body).is_ok());
    }

    #[test]
    fn answers_decide_delivered_gone_retry_or_failed() {
        assert_eq!(outcome_of(Some(204), 1, 0, 1.0, 0.0), Outcome::Delivered);
        assert_eq!(outcome_of(Some(410), 1, 0, 1.0, 0.0), Outcome::Gone);
        assert_eq!(outcome_of(Some(500), 1, 1_000, 1.0, 0.0), Outcome::Retry { next_at: 6_000 });
        assert_eq!(outcome_of(None, 2, 0, 1.0, 0.0), Outcome::Retry { next_at: 300_000 });
        assert_eq!(outcome_of(Some(301), 7, 0, 0.001, 0.0), Outcome::Retry { next_at: 36_000 });
        assert_eq!(outcome_of(Some(404), 8, 0, 1.0, 0.0), Outcome::Failed);
    }

    #[test]
    fn during_a_rotation_both_signatures_are_sent_new_first() {
        let (new, old) = (crate::domain::webhooks::new_secret(), crate::domain::webhooks::new_secret());
        let one = signature_header(&new, None, "id", 5, "{}").expect("signs");
        let both = signature_header(&new, Some(&old), "id", 5, "{}").expect("signs");
        let old_only = signature(&old, "id", 5, "{}").expect("signs");
        assert_eq!(both, format!("{one} {old_only}"));
        assert!(signature_header("whsec_!!", None, "id", 5, "{}").is_none());
    }

    #[test]
    fn every_type_has_a_sample_object() {
        for name in EventType::NAMES {
            let t = EventType::parse("type", name).expect("a type");
            let data = sample_data(t, 0);
            assert!(data.is_object(), "{name}: {data}");
        }
        let payment = sample_data(EventType::TicketPurchaseConfirmed, 0);
        assert_eq!(payment["status"], "success");
        assert_eq!(payment["tickets"].as_array().map(Vec::len), Some(1));
        assert_eq!(sample_data(EventType::TicketCheckedIn, 0)["checkedIn"], true);
        assert_eq!(sample_data(EventType::WithdrawalFailed, 0)["status"], "failed");
    }
}

//! Prometheus metrics (D16.20): the `metrics` facade, recorded into
//! `metrics-exporter-prometheus`, whose handle renders the text format for `GET /metrics`.
//!
//! The recorder is process-wide (installed once, on first use; tests that start several
//! servers in one process share it). Every label value is a route template or a name from a
//! fixed set, never an id or anything else a client chooses: the API below takes
//! `&'static str` for that reason, so a caller must map what it received to a known name
//! (an unknown provider → `"unknown"`) before recording it.
//!
//! | series | type | labels |
//! |---|---|---|
//! | `tessera_http_requests_total` | counter | `method`, `route` (template, or `unmatched`), `status` |
//! | `tessera_http_request_duration_seconds` | histogram | `method`, `route`, `status` |
//! | `tessera_job_queue_depth` | gauge | `queue` |
//! | `tessera_job_oldest_age_seconds` | gauge | `queue` |
//! | `tessera_webhooks_received_total` | counter | `provider`, `outcome` |
//! | `tessera_notifications_total` | counter | `channel`, `outcome` |
//! | `tessera_webhook_deliveries_total` | counter | `outcome` (`delivered`, `retry`, `failed`, `gone`, `test`): requests to accounts' webhook endpoints (D17.26) |
//! | `tessera_qr_images_rendered_total` | counter | — (QR PNGs drawn for messages, item 5 of issue 22) |
//! | `tessera_redis_round_trips_total` | counter | `script` (`signed`, `admitted`, `refused`, `give_back`): one per request's call (calls that arrive together share a round trip) |
//! | `tessera_redis_round_trip_seconds` | histogram | `script`: from a request's call to its answer (its batch's round trip and the wait for it) |
//! | `tessera_redis_errors_total` | counter | `script` (no answer in time, or an error) |
use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

pub const HTTP_REQUESTS: &str = "tessera_http_requests_total";
pub const HTTP_DURATION: &str = "tessera_http_request_duration_seconds";
pub const JOB_QUEUE_DEPTH: &str = "tessera_job_queue_depth";
pub const JOB_OLDEST_AGE: &str = "tessera_job_oldest_age_seconds";
/// Provider callbacks received (the published name predates the word "callback").
pub const CALLBACKS_RECEIVED: &str = "tessera_webhooks_received_total";
pub const NOTIFICATIONS: &str = "tessera_notifications_total";
pub const WEBHOOK_DELIVERIES: &str = "tessera_webhook_deliveries_total";
pub const QR_IMAGES_RENDERED: &str = "tessera_qr_images_rendered_total";
pub const REDIS_ROUND_TRIPS: &str = "tessera_redis_round_trips_total";
pub const REDIS_DURATION: &str = "tessera_redis_round_trip_seconds";
pub const REDIS_ERRORS: &str = "tessera_redis_errors_total";

/// The route label of a request that matched no route (a 404 of the fallback): raw paths would
/// let any client mint new series.
pub const UNMATCHED: &str = "unmatched";

/// Latency buckets in seconds: 0.5 ms to 10 s.
const LATENCY_BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the process-wide recorder once and returns its handle. `None` if another recorder
/// was installed first (an embedding program's own): then nothing is rendered here.
pub fn install() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full(HTTP_DURATION.to_string()), &LATENCY_BUCKETS)
                .and_then(|b| b.set_buckets_for_metric(Matcher::Full(REDIS_DURATION.to_string()), &LATENCY_BUCKETS))
                .unwrap_or_else(|_| PrometheusBuilder::new());
            match builder.install_recorder() {
                Ok(handle) => {
                    describe();
                    Some(handle)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a metrics recorder is already installed; /metrics will be empty");
                    None
                }
            }
        })
        .as_ref()
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(HTTP_REQUESTS, "HTTP requests answered, by route template and status.");
    describe_histogram!(HTTP_DURATION, Unit::Seconds, "Time from the request head to the response head.");
    describe_gauge!(JOB_QUEUE_DEPTH, "Jobs due or running, per queue.");
    describe_gauge!(JOB_OLDEST_AGE, Unit::Seconds, "Age of the oldest job not yet done, per queue.");
    describe_counter!(CALLBACKS_RECEIVED, "Inbound provider callbacks, by provider and outcome.");
    describe_counter!(NOTIFICATIONS, "Notification delivery attempts, by channel and outcome.");
    describe_counter!(WEBHOOK_DELIVERIES, "Requests to accounts' webhook endpoints, by outcome.");
    describe_counter!(
        REDIS_ROUND_TRIPS,
        "Round trips to Redis (the guards several instances share, D17.1), by script."
    );
    describe_histogram!(REDIS_DURATION, Unit::Seconds, "Time of one Redis round trip, by script.");
    describe_counter!(REDIS_ERRORS, "Redis round trips that failed or timed out, by script.");
    describe_counter!(QR_IMAGES_RENDERED, "QR images drawn for messages (once per notification, not per attempt).");
}

/// The Prometheus text exposition of every series (empty if the recorder is not ours).
pub fn render() -> String {
    match install() {
        Some(h) => {
            // Drains histogram buckets; the exporter leaves it to the caller when it runs no
            // listener of its own.
            h.run_upkeep();
            h.render()
        }
        None => String::new(),
    }
}

/// Folds the histograms' recorded samples into their buckets. The exporter keeps every sample
/// until this runs (rendering `/metrics` also does it), so a server nobody scrapes would grow by
/// each request's samples: the maintenance loop calls it every few seconds.
pub fn upkeep() {
    if let Some(h) = install() {
        h.run_upkeep();
    }
}

/// One answered HTTP request. `route` is the matched route template (`/api/…/{campaignId}`) or
/// [`UNMATCHED`]; the request-id middleware calls this for every request.
pub fn http_request(method: &str, route: &str, status: u16, seconds: f64) {
    let labels = [("method", method_label(method)), ("route", route.to_string()), ("status", status.to_string())];
    metrics::counter!(HTTP_REQUESTS, &labels).increment(1);
    metrics::histogram!(HTTP_DURATION, &labels).record(seconds);
}

/// Methods outside the usual set share one label value, so a client cannot mint series with
/// made-up methods.
fn method_label(m: &str) -> String {
    match m {
        "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS" => m.to_string(),
        _ => "OTHER".to_string(),
    }
}

/// Jobs due or running in `queue` (`"webhooks"`, `"payments"`, `"notifications"`,
/// `"withdrawals"` …), set by the worker each time it looks at its queue.
pub fn job_queue_depth(queue: &'static str, n: u64) {
    metrics::gauge!(JOB_QUEUE_DEPTH, "queue" => queue).set(n as f64);
}

/// Age in seconds of the oldest job of `queue` not yet done (0 when the queue is empty), set
/// with [`job_queue_depth`].
pub fn oldest_job_age(queue: &'static str, seconds: f64) {
    metrics::gauge!(JOB_OLDEST_AGE, "queue" => queue).set(seconds.max(0.0));
}

/// One provider callback received: `provider` is `"provider_a"`, `"provider_b"`, `"provider_c"` or
/// `"unknown"`; `outcome` e.g. `"accepted"`, `"duplicate"`, `"invalid_signature"`,
/// `"rejected"`.
pub fn callback_received(provider: &'static str, outcome: &'static str) {
    metrics::counter!(CALLBACKS_RECEIVED, "provider" => provider, "outcome" => outcome).increment(1);
}

/// One notification attempt: `channel` `"email"` or `"sms"`; `outcome` e.g. `"sent"`,
/// `"retry"`, `"failed"`.
pub fn notification_outcome(channel: &'static str, outcome: &'static str) {
    metrics::counter!(NOTIFICATIONS, "channel" => channel, "outcome" => outcome).increment(1);
}

/// One request to an account's webhook endpoint: `outcome` `"delivered"`, `"retry"`,
/// `"failed"` (retries used up), `"gone"` (a 410 disabled the endpoint) or `"test"`.
pub fn webhook_delivery(outcome: &'static str) {
    metrics::counter!(WEBHOOK_DELIVERIES, "outcome" => outcome).increment(1);
}

/// `n` QR images drawn for a message.
pub fn qr_images_rendered(n: u64) {
    metrics::counter!(QR_IMAGES_RENDERED).increment(n);
}

/// One round trip to Redis of `script` and how long it took.
pub fn redis_round_trip(script: &'static str, seconds: f64) {
    metrics::counter!(REDIS_ROUND_TRIPS, "script" => script).increment(1);
    metrics::histogram!(REDIS_DURATION, "script" => script).record(seconds);
}

/// A round trip to Redis that failed or timed out.
pub fn redis_error(script: &'static str) {
    metrics::counter!(REDIS_ERRORS, "script" => script).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helpers_render_in_the_prometheus_text_format() {
        install();
        job_queue_depth("unit_test_queue", 3);
        oldest_job_age("unit_test_queue", 12.5);
        callback_received("provider_a", "accepted");
        notification_outcome("email", "sent");
        http_request("BREW", "/unit-test/{id}", 200, 0.002);
        let text = render();
        assert!(text.contains("tessera_job_queue_depth{queue=\"unit_test_queue\"} 3"), "{text}");
        assert!(text.contains("tessera_job_oldest_age_seconds{queue=\"unit_test_queue\"} 12.5"), "{text}");
        assert!(text.contains("tessera_webhooks_received_total{provider=\"provider_a\",outcome=\"accepted\"}"));
        assert!(text.contains("tessera_notifications_total{channel=\"email\",outcome=\"sent\"}"));
        assert!(text.contains(
            "tessera_http_request_duration_seconds_bucket{method=\"OTHER\",route=\"/unit-test/{id}\",status=\"200\",le=\"0.0025\"} 1"
        ), "{text}");
    }
}

//! `GET /metrics` (D16.20): the Prometheus text format, request series by route template and
//! status with latency histograms, no id ever a label value; off or on its own address by config.
use serde_json::json;
use tessera_client::Method;

use crate::support::server::{spawn, spawn_with, Backend, TestApp};

on_both!(scraping_metrics_shows_request_series_and_histograms_move_without_ids_as_labels);

async fn scrape(app: &TestApp) -> String {
    let r = app.http.get(app.url("/metrics")).send().await.expect("scrape");
    assert_eq!(r.status(), 200);
    let ct = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "content-type {ct}");
    r.text().await.expect("text")
}

/// The value of the first sample line that starts with `series{` and has every label given.
fn sample(text: &str, series: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{series}{{")))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

async fn scraping_metrics_shows_request_series_and_histograms_move_without_ids_as_labels(b: Backend) {
    let app = spawn(b).await;
    let create = json!({
        "title": "Metrics Night", "description": "A description long enough.", "campaign_type": "ticketing",
        "start_date": "2027-03-01T18:00:00Z", "end_date": "2027-03-02T02:00:00Z",
    });
    let (status, created) = app.signed(Method::POST, "/api/white-label/v1/campaigns", Some(create)).await;
    assert_eq!(status, 201, "{created}");
    let id = created["data"]["id"].as_str().expect("id").to_string();
    let route = r#"route="/api/white-label/v1/campaigns/{campaignId}""#;

    let before = scrape(&app).await;
    let count = |t: &str| sample(t, "tessera_http_request_duration_seconds_count", &[route, r#"status="200""#]);
    let total = |t: &str| sample(t, "tessera_http_requests_total", &[route, r#"method="GET""#, r#"status="200""#]);
    let missing = |t: &str| sample(t, "tessera_http_requests_total", &[route, r#"status="404""#]);
    let unmatched = |t: &str| sample(t, "tessera_http_requests_total", &[r#"route="unmatched""#, r#"status="404""#]);

    for _ in 0..3 {
        let (status, _) = app.signed(Method::GET, &format!("/api/white-label/v1/campaigns/{id}"), None).await;
        assert_eq!(status, 200);
    }
    let ghost = uuid::Uuid::now_v7().to_string();
    let (status, _) = app.signed(Method::GET, &format!("/api/white-label/v1/campaigns/{ghost}"), None).await;
    assert_eq!(status, 404);
    let stray = format!("/no-such-route/{}", uuid::Uuid::now_v7());
    assert_eq!(app.http.get(app.url(&stray)).send().await.expect("send").status(), 404);

    let after = scrape(&app).await;
    assert!(total(&after) >= total(&before) + 3.0, "request counter moved:\n{after}");
    assert!(count(&after) >= count(&before) + 3.0, "histogram count moved:\n{after}");
    assert!(missing(&after) >= missing(&before) + 1.0, "404 of a matched route:\n{after}");
    assert!(unmatched(&after) >= unmatched(&before) + 1.0, "fallback labelled unmatched:\n{after}");
    assert!(
        after.lines().any(|l| l.starts_with("tessera_http_request_duration_seconds_bucket{") && l.contains(route)),
        "histogram buckets per route:\n{after}"
    );
    for never in [id.as_str(), ghost.as_str(), stray.as_str(), app.account.id.as_str(), &app.account.private.key_id] {
        assert!(!after.contains(never), "{never} appears in /metrics:\n{after}");
    }
    // Every label value of the request series is a template, a method, a status or `unmatched`.
    for line in after.lines().filter(|l| l.starts_with("tessera_http_requests_total{")) {
        let route = line.split("route=\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("");
        assert!(route == "unmatched" || route.starts_with('/'), "{line}");
        assert!(route.split('/').all(|seg| seg.len() < 32 || seg.starts_with('{')), "an id as a label: {line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_can_be_turned_off() {
    let app = spawn_with(Backend::Sqlite, |c| c.metrics.enabled = false).await;
    let r = app.http.get(app.url("/metrics")).send().await.expect("send");
    assert_eq!(r.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_can_move_to_their_own_address() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let listen = format!("127.0.0.1:{port}");
    let app = spawn_with(Backend::Sqlite, |c| c.metrics.listen = listen.clone()).await;
    let main = app.http.get(app.url("/metrics")).send().await.expect("send");
    assert_eq!(main.status(), 404, "not on the main listener");
    let mut own = None;
    for _ in 0..50 {
        match app.http.get(format!("http://{listen}/metrics")).send().await {
            Ok(r) => {
                own = Some(r);
                break;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    }
    let own = own.expect("metrics listener answers");
    assert_eq!(own.status(), 200);
    assert!(own.text().await.expect("text").contains("tessera_http_requests_total"));
}

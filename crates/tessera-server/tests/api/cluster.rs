//! Several instances, one truth (issue 23): the guards instances share through Redis (D17.1),
//! what happens when Redis goes away and comes back (D17.2), and the replay epoch (D17.39).
//!
//! Two instances need PostgreSQL and Redis (`TESSERA_TEST_DATABASE_URL`,
//! `TESSERA_TEST_REDIS_URL`); the outage tests run their own `redis-server` on a free port
//! (skipped with a note when it is not installed, outside CI).
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use tessera_client::{Client, Method, RawResponse};
use tessera_server::app::Application;

use crate::support::client::{assert_error, raw};
use crate::support::db::now_ms;
use crate::support::server::{spawn_with, test_redis_url, Backend, TestApp, TestKey};

const CONTEXT: &str = "/api/white-label/v1/context";
const CAMPAIGNS: &str = "/api/white-label/v1/campaigns";

fn nonce() -> String {
    format!("n{:016x}{:08x}", now_ms(), rand_u32())
}

fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(now_ms() as u64);
    h.finish() as u32
}

fn signed_headers(key: &TestKey, method: &Method, path: &str, body: &[u8], ts: i64) -> HeaderMap {
    Client::new("http://unused", &key.key_id, &key.secret)
        .expect("client")
        .signed_headers_at(method, path, body, ts, &nonce())
        .expect("headers")
}

async fn send(base: &str, method: Method, path: &str, headers: HeaderMap, body: Vec<u8>) -> RawResponse {
    let mut headers = headers;
    if !body.is_empty() {
        headers.insert("content-type", "application/json".parse().expect("header"));
    }
    let http = reqwest::Client::new();
    raw(http.request(method, format!("{base}{path}")).headers(headers).body(body).send().await.expect("send")).await
}

/// PostgreSQL and Redis, or `None` (the test is skipped, with a note).
fn pg_and_redis() -> Option<Backend> {
    match (Backend::postgres(), test_redis_url()) {
        (Some(b), Some(_)) => Some(b),
        _ => {
            eprintln!("TESSERA_TEST_DATABASE_URL and TESSERA_TEST_REDIS_URL not both set; two-instance test skipped");
            None
        }
    }
}

/// A second instance on the same database, master key and Redis key space as `app`: what
/// `scripts/cluster.sh` runs, in process. Stops when the sender is dropped.
async fn second_instance(app: &TestApp) -> (String, tokio::sync::oneshot::Sender<()>) {
    let mut config = app.config.clone();
    config.listen = "127.0.0.1:0".parse().expect("addr");
    let other = Application::build(config).await.expect("second instance");
    let url = format!("http://{}", other.local_addr());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(other.run_until_stopped(async move {
        let _ = rx.await;
    }));
    (url, tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_signed_once_and_sent_to_two_instances_is_refused_by_the_second() {
    let Some(b) = pg_and_redis() else { return };
    let a = spawn_with(b, |_| {}).await;
    let key = a.account.private.clone();
    // Signed before the second instance starts: with Redis an instance does not refuse what was
    // signed before its own start (D17.39), so a rolling restart loses nothing.
    let early = signed_headers(&key, &Method::GET, CONTEXT, b"", now_ms());
    let (b_url, _stop) = second_instance(&a).await;
    assert_eq!(send(&b_url, Method::GET, CONTEXT, early, Vec::new()).await.status, 200);

    let h = signed_headers(&key, &Method::GET, CONTEXT, b"", now_ms());
    assert_eq!(send(&a.base_url, Method::GET, CONTEXT, h.clone(), Vec::new()).await.status, 200);
    assert_error(&send(&b_url, Method::GET, CONTEXT, h, Vec::new()).await, 401, "replayed_request");

    // A write: created once by A, refused by B, and there is one campaign.
    let body = serde_json::to_vec(&serde_json::json!({
        "title": "Once", "description": "Sent twice", "campaign_type": "ticketing",
        "start_date": "2027-03-01T18:00:00Z", "end_date": "2027-03-02T02:00:00Z"
    }))
    .expect("json");
    let h = signed_headers(&key, &Method::POST, CAMPAIGNS, &body, now_ms());
    let created = send(&a.base_url, Method::POST, CAMPAIGNS, h.clone(), body.clone()).await;
    assert_eq!(created.status, 201, "{}", created.json());
    assert_error(&send(&b_url, Method::POST, CAMPAIGNS, h, body).await, 401, "replayed_request");
    let list =
        send(&b_url, Method::GET, CAMPAIGNS, signed_headers(&key, &Method::GET, CAMPAIGNS, b"", now_ms()), vec![])
            .await
            .json();
    let names: Vec<_> = list["data"].as_array().expect("list").iter().filter(|c| c["title"] == "Once").collect();
    assert_eq!(names.len(), 1, "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_account_limit_and_failed_signatures_are_counted_across_instances() {
    let Some(b) = pg_and_redis() else { return };
    let a = spawn_with(b, |c| {
        c.security.rate_limit_per_account = 60;
        c.security.rate_limit_per_account_burst = 4;
        c.security.auth_failure_limit = 4;
    })
    .await;
    let (b_url, _stop) = second_instance(&a).await;
    let key = a.account.private.clone();
    let bases = [a.base_url.clone(), b_url.clone()];
    let mut remaining = Vec::new();
    for i in 0..4 {
        let r = send(
            &bases[i % 2],
            Method::GET,
            CONTEXT,
            signed_headers(&key, &Method::GET, CONTEXT, b"", now_ms()),
            vec![],
        )
        .await;
        assert_eq!(r.status, 200, "request {i}");
        remaining.push(r.headers["ratelimit-remaining"].to_str().expect("header").to_string());
    }
    assert_eq!(remaining, ["3", "2", "1", "0"], "one bucket for both instances");
    let refused =
        send(&b_url, Method::GET, CONTEXT, signed_headers(&key, &Method::GET, CONTEXT, b"", now_ms()), vec![]).await;
    assert_error(&refused, 429, "rate_limited");
    assert!(refused.headers.contains_key("retry-after"));

    // Failed signatures of another key: two on each instance block the pair on both.
    let other = a.create_key(&a.account.slug, "private", None, crate::support::server::ALL_PRIVATE_SCOPES, &[]).await;
    let wrong = TestKey { key_id: other.key_id.clone(), secret: format!("{}x", other.secret) };
    for i in 0..4 {
        let r = send(
            &bases[i % 2],
            Method::GET,
            CONTEXT,
            signed_headers(&wrong, &Method::GET, CONTEXT, b"", now_ms()),
            vec![],
        )
        .await;
        assert_error(&r, 401, "invalid_signature");
    }
    for base in &bases {
        let good = signed_headers(&other, &Method::GET, CONTEXT, b"", now_ms());
        assert_error(&send(base, Method::GET, CONTEXT, good, vec![]).await, 429, "rate_limited");
    }
}

/// A `redis-server` of the test's own on a free loopback port, keeping nothing on disk.
struct RedisServer {
    port: u16,
    child: Option<std::process::Child>,
}

impl RedisServer {
    fn installed() -> bool {
        let found = std::process::Command::new("redis-server").arg("--version").output().is_ok();
        if !found {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "redis-server is required in CI");
            eprintln!("redis-server not installed; Redis outage test skipped");
        }
        found
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn start(&mut self) {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls `f` until it holds (or fails the test after `secs`).
async fn eventually<F, Fut>(secs: u64, what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f().await {
        assert!(Instant::now() < deadline, "not within {secs} s: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn signed_status(app: &TestApp) -> RawResponse {
    let key = &app.account.private;
    send(&app.base_url, Method::GET, CONTEXT, signed_headers(key, &Method::GET, CONTEXT, b"", now_ms()), vec![]).await
}

async fn get(app: &TestApp, path: &str) -> RawResponse {
    raw(app.http.get(app.url(path)).send().await.expect("send")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopped_and_started_under_load_fails_signed_requests_closed_and_recovers_without_restart() {
    if !RedisServer::installed() {
        return;
    }
    let mut redis = RedisServer { port: RedisServer::free_port(), child: None };
    redis.start().await;
    let url = redis.url();
    let app = spawn_with(Backend::Sqlite, |c| {
        c.redis.url = url.into();
        // The load below runs flat out; the limits are not what this test is about.
        c.security.rate_limit_per_account = 0;
        c.security.rate_limit_per_ip = 0;
    })
    .await;
    assert_eq!(signed_status(&app).await.status, 200);
    let ready = get(&app, "/readyz").await;
    assert_eq!((ready.status, ready.json()["checks"]["redis"].clone()), (200, "ok".into()));

    // Load throughout: every answer is 200 or 503, never anything else.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (base, key, stop) = (app.base_url.clone(), app.account.private.clone(), stop.clone());
        tokio::spawn(async move {
            let mut seen = std::collections::BTreeMap::<u16, u32>::new();
            // A signature covers the timestamp, method, path and body, not the nonce: two GETs of
            // one path signed in one millisecond are one signature, the second a replay (D2.6).
            // So the load signs each request a millisecond after the one before (as the SDK
            // does) and reads its own path, apart from the probes and the SDK's call below.
            let list = format!("{CAMPAIGNS}?limit=1");
            let mut last = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                last = now_ms().max(last + 1);
                let h = signed_headers(&key, &Method::GET, &list, b"", last);
                *seen.entry(send(&base, Method::GET, &list, h, vec![]).await.status).or_default() += 1;
            }
            seen
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    redis.kill();
    let before_restart = now_ms();
    eventually(5, "signed requests answer 503 replay_store_unavailable", || async {
        let r = signed_status(&app).await;
        r.status == 503
            && r.json()["code"] == "replay_store_unavailable"
            && r.headers.get("retry-after").and_then(|v| v.to_str().ok()) == Some("1")
    })
    .await;
    // Public reads are served, /readyz names redis, /healthz stays 200.
    let public = app.public_get(CAMPAIGNS, &app.account.public, &app.account.domain).await;
    assert_eq!(public.status, 200, "{}", String::from_utf8_lossy(&public.body));
    let ready = get(&app, "/readyz").await;
    assert_eq!(ready.status, 503);
    assert_eq!(ready.json()["checks"]["redis"], "unreachable", "{}", ready.json());
    assert_eq!(get(&app, "/healthz").await.status, 200);
    // A provider callback is still taken in (its own signature check answers, not Redis).
    let hook =
        raw(app.http.post(app.url("/api/white-label/webhooks/provider_b")).body("{}").send().await.expect("send"))
            .await;
    assert_ne!(hook.status, 503);
    assert!(hook.status < 500, "{}", hook.status);

    // The SDK signs again after Retry-After (nothing ran): a call made during the outage
    // succeeds once Redis is back.
    let sdk = {
        let client = app.client();
        tokio::spawn(async move { client.send_raw(Method::GET, CONTEXT, Vec::new(), None).await.expect("send").status })
    };

    // Back, empty: served again without a restart, and the epoch starts anew (D17.39).
    tokio::time::sleep(Duration::from_millis(200)).await;
    redis.start().await;
    eventually(10, "signed requests are served again", || async { signed_status(&app).await.status == 200 }).await;
    assert_eq!(get(&app, "/readyz").await.status, 200);
    assert_eq!(sdk.await.expect("sdk"), 200, "the SDK's call made during the outage");
    let old = signed_headers(&app.account.private, &Method::GET, CONTEXT, b"", before_restart);
    assert_error(&send(&app.base_url, Method::GET, CONTEXT, old, vec![]).await, 401, "stale_timestamp");

    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = load.await.expect("load");
    // 200 and 503, and at most the one request in flight when Redis came back empty refused as
    // signed before the new epoch (401 stale_timestamp, D17.39).
    assert!(seen.keys().all(|s| [200, 401, 503].contains(s)), "only 200, 401 and 503 under the outage: {seen:?}");
    assert!(seen.get(&401).copied().unwrap_or(0) <= 1, "{seen:?}");
    assert!(seen.get(&503).copied().unwrap_or(0) > 0 && seen.get(&200).copied().unwrap_or(0) > 0, "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_whose_redis_is_unreachable_at_start_starts_and_serves_once_it_answers() {
    if !RedisServer::installed() {
        return;
    }
    let mut redis = RedisServer { port: RedisServer::free_port(), child: None };
    let url = redis.url();
    let app = spawn_with(Backend::Sqlite, |c| c.redis.url = url.into()).await;
    assert_eq!(get(&app, "/healthz").await.status, 200);
    assert_error(&signed_status(&app).await, 503, "replay_store_unavailable");
    assert_eq!(get(&app, "/readyz").await.status, 503);
    redis.start().await;
    eventually(10, "signed requests are served", || async { signed_status(&app).await.status == 200 }).await;
    assert_eq!(get(&app, "/readyz").await.status, 200);
}

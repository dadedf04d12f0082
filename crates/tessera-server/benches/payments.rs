//! Payments load harness: callback intake (the durable hand-off) and the end-to-end purchase
//! (initialize → provider confirms → fulfilled), against one running server.
//!
//! ```sh
//! bash scripts/bench-payments.sh   # builds, starts servers with limits off, runs both phases
//! ```
//!
//! Phases (`--phase`):
//! - `intake`: `--connections` tasks each POST signed `charge.success` events to
//!   `/api/white-label/webhooks/provider_a`, every one with its own event id, closed loop, for
//!   `--warmup-secs` (not recorded) then `--duration-secs`. The server should run without
//!   workers (hand-off only): each 200 means the event and its job are committed.
//!   `--webhook-secret` is the platform's provider_a secret.
//! - `e2e`: sets up a running ticketing campaign with the signed key (`--key-id`, `--secret`),
//!   then `--connections` buyers each loop: initialize a Form 1 checkout, settle it at the sandbox
//!   (`--sandbox-url`, which delivers the signed callback), and poll `GET /payments/:reference`
//!   every 5 ms until it is `success` with its ticket. The recorded latency is initialize →
//!   fulfilled; the rate is completed purchases per second.
//!
//! Results are printed as a Markdown table (latencies in milliseconds).
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use hmac::Mac;
use serde_json::{json, Value};
use tessera_client::{Client, Method};

struct Options {
    url: String,
    phase: String,
    key_id: String,
    secret: String,
    webhook_secret: String,
    sandbox_url: String,
    connections: usize,
    duration: Duration,
    warmup: Duration,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        url: "http://127.0.0.1:8080".into(),
        phase: "intake".into(),
        key_id: std::env::var("TESSERA_KEY_ID").unwrap_or_default(),
        secret: std::env::var("TESSERA_KEY_SECRET").unwrap_or_default(),
        webhook_secret: String::new(),
        sandbox_url: "http://127.0.0.1:8090".into(),
        connections: 64,
        duration: Duration::from_secs(10),
        warmup: Duration::from_secs(2),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let known = [
            "--url",
            "--phase",
            "--key-id",
            "--secret",
            "--webhook-secret",
            "--sandbox-url",
            "--connections",
            "--duration-secs",
            "--warmup-secs",
        ];
        if !known.contains(&flag.as_str()) {
            continue; // `--bench` from cargo
        }
        let v = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v:?}: {e}"));
        match flag.as_str() {
            "--url" => o.url = v.trim_end_matches('/').into(),
            "--phase" => o.phase = v,
            "--key-id" => o.key_id = v,
            "--secret" => o.secret = v,
            "--webhook-secret" => o.webhook_secret = v,
            "--sandbox-url" => o.sandbox_url = v.trim_end_matches('/').into(),
            "--connections" => o.connections = n(&v)?.max(1) as usize,
            "--duration-secs" => o.duration = Duration::from_secs(n(&v)?.max(1)),
            _ => o.warmup = Duration::from_secs(n(&v)?),
        }
    }
    Ok(o)
}

/// What one phase's tasks record.
struct Tally {
    ok: AtomicU64,
    failed: AtomicU64,
    hist: std::sync::Mutex<Histogram<u64>>,
    recording: AtomicBool,
    stop: AtomicBool,
}

impl Tally {
    fn new() -> Arc<Tally> {
        Arc::new(Tally {
            ok: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            hist: std::sync::Mutex::new(Histogram::new_with_bounds(1, 120_000_000, 3).expect("histogram")),
            recording: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        })
    }

    fn record(&self, ok: bool, took: Duration) {
        if !self.recording.load(Ordering::Relaxed) {
            return;
        }
        if ok {
            self.ok.fetch_add(1, Ordering::Relaxed);
            let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1);
            if let Ok(mut h) = self.hist.lock() {
                let _ = h.record(us);
            }
        } else {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn sign512(secret: &str, body: &[u8]) -> String {
    let mut m = hmac::Hmac::<sha2::Sha512>::new_from_slice(secret.as_bytes()).expect("hmac key");
    m.update(body);
    hex::encode(m.finalize().into_bytes())
}

async fn intake(o: Arc<Options>, t: Arc<Tally>, counter: Arc<AtomicU64>, http: reqwest::Client) {
    let url = format!("{}/api/white-label/webhooks/provider_a", o.url);
    let run = std::process::id();
    while !t.stop.load(Ordering::Relaxed) {
        let i = counter.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::to_vec(&json!({"event": "charge.success", "data": {"id": format!("{run}-{i}"),
            "reference": format!("tsr_bench_{run}_{i}"), "status": "success", "amount": 100, "currency": "GHS"}}))
        .expect("json");
        let sig = sign512(&o.webhook_secret, &body);
        let started = Instant::now();
        let r = http
            .post(&url)
            .header("x-provider_a-signature", sig)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await;
        let ok = matches!(&r, Ok(r) if r.status().as_u16() == 200);
        t.record(ok, started.elapsed());
    }
}

async fn setup_catalogue(client: &Client) -> Result<(String, String), String> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?.as_secs();
    let (s, c) = call(
        client,
        Method::POST,
        "/api/white-label/v1/campaigns",
        json!({
        "title": format!("Bench Night {now}"), "description": "Load harness campaign, running now.",
        "campaign_type": "ticketing", "status": "approved",
        "start_date": "2026-01-01T00:00:00Z", "end_date": "2036-01-01T00:00:00Z"}),
    )
    .await;
    if s != 201 {
        return Err(format!("campaign: {s} {c}"));
    }
    let campaign = c["data"]["id"].as_str().unwrap_or_default().to_string();
    let (s, t) = call(
        client,
        Method::POST,
        "/api/white-label/v1/ticket-types",
        json!({
        "campaignId": campaign, "name": "Bench", "price": 10, "quantity_available": 1_000_000}),
    )
    .await;
    if s != 201 {
        return Err(format!("ticket type: {s} {t}"));
    }
    Ok((campaign, t["data"]["id"].as_str().unwrap_or_default().to_string()))
}

async fn call(client: &Client, method: Method, path: &str, body: Value) -> (u16, Value) {
    let bytes = if body.is_null() { Vec::new() } else { serde_json::to_vec(&body).unwrap_or_default() };
    match client.send_raw(method, path, bytes, None).await {
        Ok(r) => (r.status, r.json()),
        Err(e) => (0, json!({"error": e.to_string()})),
    }
}

#[allow(clippy::too_many_arguments)]
async fn buyer(
    o: Arc<Options>,
    t: Arc<Tally>,
    client: Client,
    http: reqwest::Client,
    campaign: String,
    ticket: String,
    n: usize,
) {
    let mut i = 0u64;
    while !t.stop.load(Ordering::Relaxed) {
        i += 1;
        let started = Instant::now();
        let ok = async {
            let body = json!({"campaign_id": campaign, "ticket_id": ticket, "email": format!("b{n}-{i}@bench.example"), "quantity": 1});
            let (s, init) = call(&client, Method::POST, "/api/white-label/v1/payments/initialize", body).await;
            let reference = init["data"]["reference"].as_str().filter(|_| s == 200)?.to_string();
            let settle = format!("{}/sandbox/charges/{reference}/succeed", o.sandbox_url);
            http.post(settle).json(&json!({})).send().await.ok().filter(|r| r.status().is_success())?;
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                let (s, p) = call(&client, Method::GET, &format!("/api/white-label/v1/payments/{reference}"), Value::Null).await;
                if s == 200 && p["data"]["status"] == "success" && p["data"]["tickets"].as_array().is_some_and(|a| a.len() == 1) {
                    return Some(());
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            None
        }
        .await
        .is_some();
        t.record(ok, started.elapsed());
    }
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => Arc::new(o),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async move {
        let t = Tally::new();
        let http = reqwest::Client::builder().pool_max_idle_per_host(o.connections).build().expect("http");
        let mut tasks = Vec::new();
        match o.phase.as_str() {
            "intake" => {
                if o.webhook_secret.is_empty() {
                    eprintln!("--webhook-secret is required for the intake phase");
                    return ExitCode::from(2);
                }
                let counter = Arc::new(AtomicU64::new(0));
                for _ in 0..o.connections {
                    tasks.push(tokio::spawn(intake(o.clone(), t.clone(), counter.clone(), http.clone())));
                }
            }
            "e2e" => {
                let client = Client::with_http(http.clone(), &o.url, &o.key_id, &o.secret);
                let (campaign, ticket) = match setup_catalogue(&client).await {
                    Ok(v) => v,
                    Err(e) => {
                        eprintln!("setup failed: {e}");
                        return ExitCode::from(1);
                    }
                };
                for n in 0..o.connections {
                    let c = Client::with_http(http.clone(), &o.url, &o.key_id, &o.secret);
                    tasks.push(tokio::spawn(buyer(
                        o.clone(),
                        t.clone(),
                        c,
                        http.clone(),
                        campaign.clone(),
                        ticket.clone(),
                        n,
                    )));
                }
            }
            other => {
                eprintln!("--phase {other:?}: intake or e2e");
                return ExitCode::from(2);
            }
        }
        tokio::time::sleep(o.warmup).await;
        t.recording.store(true, Ordering::Relaxed);
        let started = Instant::now();
        tokio::time::sleep(o.duration).await;
        t.recording.store(false, Ordering::Relaxed);
        let elapsed = started.elapsed().as_secs_f64();
        t.stop.store(true, Ordering::Relaxed);
        for task in tasks {
            let _ = task.await;
        }
        let ok = t.ok.load(Ordering::Relaxed);
        let failed = t.failed.load(Ordering::Relaxed);
        let h = t.hist.lock().map(|h| h.clone()).expect("histogram");
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        println!("| phase | connections | ok | failed | rate (/s) | p50 ms | p99 ms | max ms |");
        println!("|---|---|---|---|---|---|---|---|");
        println!(
            "| {} | {} | {ok} | {failed} | {:.0} | {:.2} | {:.2} | {:.2} |",
            o.phase,
            o.connections,
            ok as f64 / elapsed,
            ms(0.5),
            ms(0.99),
            h.max() as f64 / 1000.0
        );
        if failed > 0 || ok == 0 {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        }
    })
}

//! Check-in load harness (D7.3): check-ins per second of distinct tickets and their latency,
//! against one running server.
//!
//! ```sh
//! bash scripts/bench-checkin.sh   # builds release, starts a server with limits off, runs this
//! ```
//!
//! With the signed key (`--key-id`, `--secret`; scopes campaigns:write, tickets:read,
//! tickets:write, payments:write) it sets up a running ticketing campaign with a free ticket
//! type and buys `--tickets` tickets through `POST /payments/initialize` (100 per purchase,
//! issued at once), then `--connections` tasks each take the next unused ticket code and send a
//! signed Form 2 `POST /tickets/verify` with `autoVerify: true` (closed loop) until every ticket
//! is checked in. Every answer must be `checked_in`; anything else counts as failed. The rate is
//! check-ins per second over the whole run; latencies are per request (Markdown table, ms).
//!
//! For the starvation benchmark (`scripts/bench-starvation.sh`, item 5 of issue 22):
//! `--seed-only --codes-out FILE` seeds and writes the codes (one a line) without checking in;
//! `--codes FILE` checks in those codes instead of seeding; `--healthz SECS` first sends
//! `GET /healthz` from `--connections` connections for SECS seconds and prints its rate and
//! latency (Markdown table, ms).
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{json, Value};
use tessera_client::{Client, Method};

struct Options {
    url: String,
    key_id: String,
    secret: String,
    connections: usize,
    tickets: usize,
    seed_only: bool,
    codes_out: Option<String>,
    codes: Option<String>,
    healthz_secs: u64,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        url: "http://127.0.0.1:8080".into(),
        key_id: std::env::var("TESSERA_KEY_ID").unwrap_or_default(),
        secret: std::env::var("TESSERA_KEY_SECRET").unwrap_or_default(),
        connections: 64,
        tickets: 20_000,
        seed_only: false,
        codes_out: None,
        codes: None,
        healthz_secs: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--seed-only" {
            o.seed_only = true;
            continue;
        }
        if !["--url", "--key-id", "--secret", "--connections", "--tickets", "--codes-out", "--codes", "--healthz"]
            .contains(&flag.as_str())
        {
            continue; // `--bench` from cargo
        }
        let v = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n = |v: &str| v.parse::<usize>().map_err(|e| format!("{flag} {v:?}: {e}"));
        match flag.as_str() {
            "--url" => o.url = v.trim_end_matches('/').into(),
            "--key-id" => o.key_id = v,
            "--secret" => o.secret = v,
            "--connections" => o.connections = n(&v)?.max(1),
            "--codes-out" => o.codes_out = Some(v),
            "--codes" => o.codes = Some(v),
            "--healthz" => o.healthz_secs = n(&v)? as u64,
            _ => o.tickets = n(&v)?.max(1),
        }
    }
    Ok(o)
}

async fn call(client: &Client, method: Method, path: &str, body: Value) -> (u16, Value) {
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    match client.send_raw(method, path, bytes, None).await {
        Ok(r) => (r.status, r.json()),
        Err(e) => (0, json!({"error": e.to_string()})),
    }
}

/// A running campaign with a free ticket type, and `n` tickets bought in it; their codes.
async fn seed(client: &Client, n: usize) -> Result<Vec<String>, String> {
    let stamp =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?.as_nanos();
    let (s, c) = call(
        client,
        Method::POST,
        "/api/white-label/v1/campaigns",
        json!({"title": format!("Gate Night {stamp}"), "description": "Check-in load harness campaign.",
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
        json!({"campaignId": campaign, "name": "Gate", "price": 0, "quantity_available": 1_000_000, "max_per_person": 100}),
    )
    .await;
    if s != 201 {
        return Err(format!("ticket type: {s} {t}"));
    }
    let ticket = t["data"]["id"].as_str().unwrap_or_default().to_string();
    let mut codes = Vec::with_capacity(n);
    while codes.len() < n {
        let q = (n - codes.len()).min(100);
        let (s, b) = call(
            client,
            Method::POST,
            "/api/white-label/v1/payments/initialize",
            json!({"campaign_id": campaign, "ticket_id": ticket, "email": format!("guest{}@example.com", codes.len()),
                   "quantity": q, "full_name": "Gate Guest"}),
        )
        .await;
        if s != 200 {
            return Err(format!("purchase: {s} {b}"));
        }
        for t in b["data"]["tickets"].as_array().into_iter().flatten() {
            codes.push(t["ticketCode"].as_str().unwrap_or_default().to_string());
        }
    }
    Ok(codes)
}

/// One Markdown table of a run: count, rate and latency (ms) of what `hist` recorded.
fn print_table(what: &str, hist: &Mutex<Histogram<u64>>, connections: usize, failed: u64, elapsed: Duration) {
    let elapsed = elapsed.max(Duration::from_millis(1));
    let h = hist.lock().map(|h| h.clone()).unwrap_or_else(|p| p.into_inner().clone());
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    println!("| {what} | connections | failed | rate (/s) | p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} |",
        h.len(),
        connections,
        failed,
        h.len() as f64 / elapsed.as_secs_f64(),
        ms(0.5),
        ms(0.99),
        h.max() as f64 / 1000.0
    );
}

/// `GET /healthz` from `connections` closed-loop connections for `secs`: rate and latency.
async fn healthz(url: &str, connections: usize, secs: Duration) {
    let http = reqwest::Client::builder().pool_max_idle_per_host(connections).build().unwrap_or_default();
    let hist = Arc::new(Mutex::new(Histogram::<u64>::new_with_bounds(1, 120_000_000, 3).expect("histogram")));
    let failed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (http, hist, failed, url) = (http.clone(), hist.clone(), failed.clone(), format!("{url}/healthz"));
        tasks.push(tokio::spawn(async move {
            while started.elapsed() < secs {
                let t0 = Instant::now();
                let ok = match http.get(&url).send().await {
                    Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                    Err(_) => false,
                };
                if ok {
                    if let Ok(mut h) = hist.lock() {
                        let _ = h.record(u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX).max(1));
                    }
                } else {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    print_table("/healthz", &hist, connections, failed.load(Ordering::Relaxed), started.elapsed());
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread().enable_all().build() else {
        eprintln!("no tokio runtime");
        return ExitCode::from(1);
    };
    rt.block_on(async move {
        let client = match Client::new(&o.url, &o.key_id, &o.secret) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("client: {e}");
                return ExitCode::from(2);
            }
        };
        let seeded = Instant::now();
        let codes = match &o.codes {
            Some(path) => match std::fs::read_to_string(path) {
                Ok(t) => Arc::new(t.lines().filter(|l| !l.is_empty()).map(str::to_string).collect::<Vec<_>>()),
                Err(e) => {
                    eprintln!("{path}: {e}");
                    return ExitCode::from(2);
                }
            },
            None => match seed(&client, o.tickets).await {
                Ok(c) => Arc::new(c),
                Err(e) => {
                    eprintln!("setup failed: {e}");
                    return ExitCode::from(1);
                }
            },
        };
        if o.codes.is_none() {
            eprintln!("seeded {} tickets in {:.1} s", codes.len(), seeded.elapsed().as_secs_f64());
        }
        if let Some(path) = &o.codes_out {
            if let Err(e) = std::fs::write(path, codes.join("\n")) {
                eprintln!("{path}: {e}");
                return ExitCode::from(1);
            }
        }
        if o.seed_only {
            return ExitCode::SUCCESS;
        }
        if o.healthz_secs > 0 {
            healthz(&o.url, o.connections, Duration::from_secs(o.healthz_secs)).await;
        }
        let next = Arc::new(AtomicUsize::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let hist = Arc::new(Mutex::new(Histogram::<u64>::new_with_bounds(1, 120_000_000, 3).expect("histogram")));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..o.connections {
            let (client, codes, next, failed, hist) =
                (client.clone(), codes.clone(), next.clone(), failed.clone(), hist.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(code) = codes.get(i) else { break };
                    let t0 = Instant::now();
                    let (s, b) = call(
                        &client,
                        Method::POST,
                        "/api/white-label/v1/tickets/verify",
                        json!({"ticketCode": code, "autoVerify": true, "checkedInBy": "bench-gate"}),
                    )
                    .await;
                    let took = t0.elapsed();
                    if s == 200 && b["data"]["result"] == "checked_in" {
                        if let Ok(mut h) = hist.lock() {
                            let _ = h.record(u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1));
                        }
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        print_table("check-ins", &hist, o.connections, failed.load(Ordering::Relaxed), started.elapsed());
        if failed.load(Ordering::Relaxed) == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    })
}

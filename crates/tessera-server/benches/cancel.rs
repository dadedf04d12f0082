//! Cancellation benchmark (issue 26 acceptance): a campaign with `--tickets` paid tickets is
//! cancelled with `refund: true`; how long until every refund is filed, every ticket is void,
//! every refund is at the provider and, once the provider pays them all, every refund succeeded.
//!
//! ```sh
//! bash scripts/bench-cancel.sh   # builds, starts the sandbox and a server, runs this, audits
//! ```
//!
//! Steps (each timed; the rates are per second of that step):
//! 1. setup (not the figure): a running ticketing campaign; `--connections` buyers initialize
//!    purchases of `--per-purchase` tickets and settle them at the sandbox (`--sandbox-url`, whose
//!    webhook confirms them) until `--tickets` are sold; waits until every purchase is `success`.
//! 2. `POST /campaigns/:id/cancel {reason, refund: true}`: the answer's latency (202).
//! 3. filed: polls `GET /campaigns/:id` until `refunds.requested` = purchases.
//! 4. void: reads every purchase and counts its void tickets (= `--tickets`).
//! 5. at provider: polls the sandbox until it holds one refund per purchase.
//! 6. refunded: settles every refund at the sandbox (webhooks on) and polls the campaign until
//!    `refunds.succeeded` = purchases.
//!
//! Results are printed as a Markdown table.
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_client::{Client, Method};

struct Options {
    url: String,
    sandbox_url: String,
    key_id: String,
    secret: String,
    tickets: usize,
    per_purchase: usize,
    connections: usize,
    timeout: Duration,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        url: "http://127.0.0.1:8080".into(),
        sandbox_url: "http://127.0.0.1:8090".into(),
        key_id: std::env::var("TESSERA_KEY_ID").unwrap_or_default(),
        secret: std::env::var("TESSERA_KEY_SECRET").unwrap_or_default(),
        tickets: 10_000,
        per_purchase: 10,
        connections: 16,
        timeout: Duration::from_secs(3600),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let known = [
            "--url",
            "--sandbox-url",
            "--key-id",
            "--secret",
            "--tickets",
            "--per-purchase",
            "--connections",
            "--timeout-secs",
        ];
        if !known.contains(&flag.as_str()) {
            continue; // `--bench` from cargo
        }
        let v = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v:?}: {e}"));
        match flag.as_str() {
            "--url" => o.url = v.trim_end_matches('/').into(),
            "--sandbox-url" => o.sandbox_url = v.trim_end_matches('/').into(),
            "--key-id" => o.key_id = v,
            "--secret" => o.secret = v,
            "--tickets" => o.tickets = n(&v)?.max(1) as usize,
            "--per-purchase" => o.per_purchase = n(&v)?.clamp(1, 10) as usize,
            "--connections" => o.connections = n(&v)?.max(1) as usize,
            _ => o.timeout = Duration::from_secs(n(&v)?.max(1)),
        }
    }
    if !o.tickets.is_multiple_of(o.per_purchase) {
        return Err(format!("--tickets {} is not a multiple of --per-purchase {}", o.tickets, o.per_purchase));
    }
    Ok(o)
}

async fn call(client: &Client, method: Method, path: &str, body: Value) -> (u16, Value) {
    let bytes = if body.is_null() { Vec::new() } else { serde_json::to_vec(&body).unwrap_or_default() };
    match client.send_raw(method, path, bytes, None).await {
        Ok(r) => (r.status, r.json()),
        Err(e) => (0, json!({"error": e.to_string()})),
    }
}

async fn setup_catalogue(client: &Client, tickets: usize) -> Result<(String, String), String> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?.as_secs();
    let (s, c) = call(
        client,
        Method::POST,
        "/api/white-label/v1/campaigns",
        json!({"title": format!("Cancelled Night {now}"), "description": "Cancellation benchmark campaign.",
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
        json!({"campaignId": campaign, "name": "Floor", "price": 10, "quantity_available": tickets, "max_per_person": 10}),
    )
    .await;
    if s != 201 {
        return Err(format!("ticket type: {s} {t}"));
    }
    Ok((campaign, t["data"]["id"].as_str().unwrap_or_default().to_string()))
}

/// One buyer: takes purchase numbers until `purchases` are made; each is initialized and paid at
/// the sandbox. Returns the references it made.
async fn buyer(
    o: Arc<Options>,
    client: Client,
    http: reqwest::Client,
    campaign: String,
    ticket: String,
    next: Arc<AtomicUsize>,
    purchases: usize,
) -> Result<Vec<String>, String> {
    let mut made = Vec::new();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= purchases {
            return Ok(made);
        }
        let body = json!({"campaign_id": campaign, "ticket_id": ticket, "email": format!("buyer{i}@bench.example"),
            "quantity": o.per_purchase, "full_name": "Bench Buyer"});
        let (s, init) = call(&client, Method::POST, "/api/white-label/v1/payments/initialize", body).await;
        let reference =
            init["data"]["reference"].as_str().filter(|_| s == 200).ok_or(format!("initialize: {s} {init}"))?;
        let settle = format!("{}/sandbox/charges/{reference}/succeed", o.sandbox_url);
        let r = http.post(settle).json(&json!({})).send().await.map_err(|e| e.to_string())?;
        if !r.status().is_success() {
            return Err(format!("sandbox settle: {}", r.status()));
        }
        made.push(reference.to_string());
    }
}

/// Pages of `GET /payments?campaignId=…&status=success`: their total.
async fn successes(client: &Client, campaign: &str) -> i64 {
    let (_, v) = call(
        client,
        Method::GET,
        &format!("/api/white-label/v1/payments?campaignId={campaign}&status=success&limit=1"),
        Value::Null,
    )
    .await;
    v["pagination"]["total"].as_i64().unwrap_or(-1)
}

async fn refunds_of(client: &Client, campaign: &str) -> Value {
    let (_, v) = call(client, Method::GET, &format!("/api/white-label/v1/campaigns/{campaign}"), Value::Null).await;
    v["data"]["refunds"].clone()
}

async fn sandbox_refunds(http: &reqwest::Client, base: &str) -> Vec<Value> {
    let Ok(r) = http.get(format!("{base}/sandbox/refunds")).send().await else { return Vec::new() };
    let v: Value = r.json().await.unwrap_or(Value::Null);
    v.as_array().cloned().or_else(|| v["data"].as_array().cloned()).unwrap_or_default()
}

/// Polls `probe` every 50 ms until it is true or `timeout` passes: the time it took.
async fn until<F, Fut>(timeout: Duration, mut probe: F) -> Result<Duration, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while started.elapsed() < timeout {
        if probe().await {
            return Ok(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("timed out after {timeout:?}"))
}

async fn run(o: Arc<Options>) -> Result<(), String> {
    let http =
        reqwest::Client::builder().pool_max_idle_per_host(o.connections * 2).build().map_err(|e| e.to_string())?;
    let client = Client::with_http(http.clone(), &o.url, &o.key_id, &o.secret);
    let purchases = o.tickets / o.per_purchase;
    let (campaign, ticket) = setup_catalogue(&client, o.tickets).await?;

    // 1. Setup: every ticket sold and confirmed.
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..o.connections {
        let c = Client::with_http(http.clone(), &o.url, &o.key_id, &o.secret);
        tasks.push(tokio::spawn(buyer(
            o.clone(),
            c,
            http.clone(),
            campaign.clone(),
            ticket.clone(),
            next.clone(),
            purchases,
        )));
    }
    let mut references = Vec::new();
    for t in tasks {
        references.extend(t.await.map_err(|e| e.to_string())??);
    }
    let confirmed = until(o.timeout, || {
        let (client, campaign) = (client.clone(), campaign.clone());
        async move { successes(&client, &campaign).await == purchases as i64 }
    })
    .await?;
    let setup = started.elapsed();
    eprintln!(
        "setup: {purchases} purchases of {} tickets confirmed in {:.1} s (the last {:.1} s waiting for confirmations)",
        o.per_purchase,
        setup.as_secs_f64(),
        confirmed.as_secs_f64()
    );

    // 2. Cancel.
    let started = Instant::now();
    let (s, v) = call(
        &client,
        Method::POST,
        &format!("/api/white-label/v1/campaigns/{campaign}/cancel"),
        json!({"reason": "Benchmark: the venue is flooded", "refund": true}),
    )
    .await;
    let answered = started.elapsed();
    if s != 202 {
        return Err(format!("cancel: {s} {v}"));
    }
    // 3. Every refund filed.
    until(o.timeout, || {
        let (client, campaign) = (client.clone(), campaign.clone());
        async move { refunds_of(&client, &campaign).await["requested"].as_u64() == Some(purchases as u64) }
    })
    .await?;
    let filed = started.elapsed();
    // 4. Every ticket void.
    let mut void = 0usize;
    for chunk in references.chunks(o.connections) {
        let mut reads = tokio::task::JoinSet::new();
        for r in chunk {
            let client = client.clone();
            let path = format!("/api/white-label/v1/payments/{r}");
            reads.spawn(async move { call(&client, Method::GET, &path, Value::Null).await });
        }
        while let Some(read) = reads.join_next().await {
            let (_, p) = read.map_err(|e| e.to_string())?;
            void += p["data"]["tickets"]
                .as_array()
                .map(|ts| ts.iter().filter(|t| t["status"] == "void").count())
                .unwrap_or(0);
        }
    }
    let voided = started.elapsed();
    if void != o.tickets {
        return Err(format!("{void} void tickets of {}", o.tickets));
    }
    // 5. Every refund at the provider.
    until(o.timeout, || {
        let (http, base) = (http.clone(), o.sandbox_url.clone());
        async move { sandbox_refunds(&http, &base).await.len() >= purchases }
    })
    .await?;
    let at_provider = started.elapsed();
    // 6. The provider pays them all; every refund succeeded.
    let ids: Vec<String> = sandbox_refunds(&http, &o.sandbox_url)
        .await
        .iter()
        .filter_map(|r| r["id"].as_str().map(str::to_string))
        .collect();
    let settle_started = Instant::now();
    for chunk in ids.chunks(o.connections) {
        let mut posts = tokio::task::JoinSet::new();
        for id in chunk {
            let http = http.clone();
            let url = format!("{}/sandbox/refunds/{id}/succeed", o.sandbox_url);
            posts.spawn(async move {
                http.post(url).json(&json!({})).send().await.map(|r| r.status().as_u16()).unwrap_or(0)
            });
        }
        while let Some(status) = posts.join_next().await {
            let status = status.map_err(|e| e.to_string())?;
            if status != 200 {
                return Err(format!("sandbox refund succeed answered {status}"));
            }
        }
    }
    until(o.timeout, || {
        let (client, campaign) = (client.clone(), campaign.clone());
        async move { refunds_of(&client, &campaign).await["succeeded"].as_u64() == Some(purchases as u64) }
    })
    .await?;
    let refunded = settle_started.elapsed();

    let rate = |n: usize, d: Duration| n as f64 / d.as_secs_f64().max(1e-9);
    println!("| step | refunds | tickets | time (s) | refunds/s | tickets/s |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| setup: sell and confirm | {purchases} purchases | {} | {:.2} | {:.0} purchases/s | {:.0} |",
        o.tickets,
        setup.as_secs_f64(),
        rate(purchases, setup),
        rate(o.tickets, setup)
    );
    println!("| cancel answered (202) | | | {:.3} | | |", answered.as_secs_f64());
    for (step, d) in [
        ("every refund filed", filed),
        ("every ticket void (read back)", voided),
        ("every refund at the provider", at_provider),
    ] {
        println!(
            "| {step} (from the cancel) | {purchases} | {} | {:.2} | {:.0} | {:.0} |",
            o.tickets,
            d.as_secs_f64(),
            rate(purchases, d),
            rate(o.tickets, d)
        );
    }
    println!(
        "| provider pays, every refund succeeded (from the first settle) | {purchases} | {} | {:.2} | {:.0} | {:.0} |",
        o.tickets,
        refunded.as_secs_f64(),
        rate(purchases, refunded),
        rate(o.tickets, refunded)
    );
    Ok(())
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
    match rt.block_on(run(o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cancel bench failed: {e}");
            ExitCode::from(1)
        }
    }
}

//! Console page benchmark (issue 27, D17.30): how fast the money pages render for an account
//! with many payments, and how large they are.
//!
//! ```sh
//! bash scripts/bench-console.sh   # builds, starts the sandbox and a server, runs this
//! ```
//!
//! With the signed key (`--key-id`, `--secret`; scopes settings:write, campaigns:read,
//! campaigns:write, payments:write) it points the account's mail at the sandbox's SMTP sink
//! (`--smtp-port`), sets a fee (2.5 % + 0.50, so the ledger holds a charge and a fee per
//! payment), creates a running ticketing campaign and has `--connections` buyers make
//! `--payments` one-ticket purchases, each paid at the sandbox (`--sandbox-url`, whose webhook
//! confirms it), until every one is `success`. Then it signs `--owner` (an owner member the
//! script added) in through the pages with the passcode the sink received, and fetches each of
//! `/console`, `/console/payments`, `/console/ledger`, `/console/campaigns` `--requests` times
//! in a row on one connection (the page a person opens, not a load test). Every answer must be
//! 200. Printed as a Markdown table: p50, p99 and max latency (ms) and the page's size in bytes.
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_client::{Client, Method};

struct Options {
    url: String,
    sandbox_url: String,
    smtp_port: u16,
    key_id: String,
    secret: String,
    owner: String,
    payments: usize,
    connections: usize,
    requests: usize,
    timeout: Duration,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        url: "http://127.0.0.1:8080".into(),
        sandbox_url: "http://127.0.0.1:8090".into(),
        smtp_port: 8091,
        key_id: std::env::var("TESSERA_KEY_ID").unwrap_or_default(),
        secret: std::env::var("TESSERA_KEY_SECRET").unwrap_or_default(),
        owner: "owner@bench.example".into(),
        payments: 10_000,
        connections: 16,
        requests: 1_000,
        timeout: Duration::from_secs(3600),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let known = [
            "--url",
            "--sandbox-url",
            "--smtp-port",
            "--key-id",
            "--secret",
            "--owner",
            "--payments",
            "--connections",
            "--requests",
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
            "--smtp-port" => o.smtp_port = n(&v)? as u16,
            "--key-id" => o.key_id = v,
            "--secret" => o.secret = v,
            "--owner" => o.owner = v,
            "--payments" => o.payments = n(&v)?.max(1) as usize,
            "--connections" => o.connections = n(&v)?.max(1) as usize,
            "--requests" => o.requests = n(&v)?.max(1) as usize,
            _ => o.timeout = Duration::from_secs(n(&v)?.max(1)),
        }
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

async fn expect(client: &Client, method: Method, path: &str, body: Value, status: u16) -> Result<Value, String> {
    let (s, v) = call(client, method, path, body).await;
    if s == status {
        Ok(v)
    } else {
        Err(format!("{path}: {s} {v}"))
    }
}

/// Mail to the sandbox's sink, a fee, a running campaign and its ticket type.
async fn setup(o: &Options, client: &Client) -> Result<(String, String), String> {
    let v1 = "/api/white-label/v1";
    let mail = json!({"config": {"email": {"smtpHost": "127.0.0.1", "smtpPort": o.smtp_port,
        "fromAddress": "console@bench.example", "fromName": "Bench"}}});
    expect(client, Method::PATCH, &format!("{v1}/settings/notifications"), mail, 200).await?;
    let fees = json!({"config": {"feePercent": 2.5, "feeFixed": 0.5, "feeBearer": "customer"}});
    expect(client, Method::PATCH, &format!("{v1}/settings/payments"), fees, 200).await?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?.as_secs();
    let c = expect(
        client,
        Method::POST,
        &format!("{v1}/campaigns"),
        json!({"title": format!("Console Night {now}"), "description": "Console benchmark campaign.",
            "campaign_type": "ticketing", "status": "approved",
            "start_date": "2026-01-01T00:00:00Z", "end_date": "2036-01-01T00:00:00Z"}),
        201,
    )
    .await?;
    let campaign = c["data"]["id"].as_str().unwrap_or_default().to_string();
    let t = expect(
        client,
        Method::POST,
        &format!("{v1}/ticket-types"),
        json!({"campaignId": campaign, "name": "Floor", "price": 10, "quantity_available": o.payments, "max_per_person": 10}),
        201,
    )
    .await?;
    Ok((campaign, t["data"]["id"].as_str().unwrap_or_default().to_string()))
}

/// One buyer: takes purchase numbers until `--payments` are made, each initialized and paid at
/// the sandbox.
async fn buyer(
    o: Arc<Options>,
    client: Client,
    http: reqwest::Client,
    campaign: String,
    ticket: String,
    next: Arc<AtomicUsize>,
) -> Result<(), String> {
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= o.payments {
            return Ok(());
        }
        let body = json!({"campaign_id": campaign, "ticket_id": ticket, "email": format!("buyer{i}@bench.example"),
            "quantity": 1, "full_name": "Bench Buyer"});
        let init = expect(&client, Method::POST, "/api/white-label/v1/payments/initialize", body, 200).await?;
        let reference = init["data"]["reference"].as_str().ok_or(format!("initialize: {init}"))?;
        let settle = format!("{}/sandbox/charges/{reference}/succeed", o.sandbox_url);
        let r = http.post(settle).json(&json!({})).send().await.map_err(|e| e.to_string())?;
        if !r.status().is_success() {
            return Err(format!("sandbox settle: {}", r.status()));
        }
    }
}

async fn successes(client: &Client) -> i64 {
    let (_, v) = call(client, Method::GET, "/api/white-label/v1/payments?status=success&limit=1", Value::Null).await;
    v["pagination"]["total"].as_i64().unwrap_or(-1)
}

/// A browser without JavaScript: one connection, cookies by hand.
struct Browser {
    http: reqwest::Client,
    base: String,
    cookies: Vec<(String, String)>,
}

impl Browser {
    fn cookie_header(&self) -> String {
        self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    fn keep(&mut self, headers: &reqwest::header::HeaderMap) {
        for v in headers.get_all("set-cookie") {
            let first = v.to_str().unwrap_or_default().split(';').next().unwrap_or_default();
            if let Some((k, val)) = first.split_once('=') {
                self.cookies.retain(|(name, _)| name != k);
                if !val.is_empty() {
                    self.cookies.push((k.to_string(), val.to_string()));
                }
            }
        }
    }

    async fn get(&mut self, path: &str) -> Result<(u16, String), String> {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        self.keep(r.headers());
        let status = r.status().as_u16();
        Ok((status, r.text().await.map_err(|e| e.to_string())?))
    }

    async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Result<(u16, String), String> {
        let body: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        self.keep(r.headers());
        let status = r.status().as_u16();
        Ok((status, r.text().await.map_err(|e| e.to_string())?))
    }
}

/// The value of the hidden input `name` in the form posting to `action`.
fn hidden(html: &str, action: &str, name: &str) -> String {
    let form = html.split(&format!("action=\"{action}\"")).nth(1).unwrap_or_default();
    let needle = format!("name=\"{name}\" value=\"");
    form.split(&needle).nth(1).and_then(|v| v.split('"').next()).unwrap_or_default().to_string()
}

/// Signs `--owner` in with the passcode the sandbox's sink received.
async fn sign_in(o: &Options, http: &reqwest::Client) -> Result<Browser, String> {
    let mut b = Browser { http: http.clone(), base: o.url.clone(), cookies: Vec::new() };
    let (_, form) = b.get("/console").await?;
    let csrf = hidden(&form, "/console/sign-in", "csrf");
    let (s, asked) = b.post("/console/sign-in", &[("csrf", &csrf), ("email", &o.owner)]).await?;
    if s != 200 {
        return Err(format!("sign-in: {s} {asked}"));
    }
    let started = Instant::now();
    let code = loop {
        let mail: Value = http
            .get(format!("{}/sandbox/mail", o.sandbox_url))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        let list = mail.as_array().cloned().or_else(|| mail["data"].as_array().cloned()).unwrap_or_default();
        let found = list.iter().find(|m| m["to"].as_str().is_some_and(|t| t.contains(&o.owner))).and_then(|m| {
            let first = m["text"].as_str().unwrap_or_default().lines().next().unwrap_or_default().to_string();
            first.rsplit_once(" is ").map(|(_, c)| c.trim_end_matches('.').to_string())
        });
        if let Some(c) = found {
            break c;
        }
        if started.elapsed() > Duration::from_secs(30) {
            let page: String = asked.chars().take(2000).collect();
            return Err(format!("no passcode reached the sandbox's SMTP sink in 30 s (sink: {mail}; page: {page})"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let fields = [
        ("csrf", hidden(&asked, "/console/sign-in/verify", "csrf")),
        ("challenge", hidden(&asked, "/console/sign-in/verify", "challenge")),
        ("email", hidden(&asked, "/console/sign-in/verify", "email")),
        ("passcode", code),
    ];
    let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (s, body) = b.post("/console/sign-in/verify", &pairs).await?;
    if s != 303 {
        return Err(format!("passcode: {s} {body}"));
    }
    Ok(b)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn run(o: Arc<Options>) -> Result<(), String> {
    let http =
        reqwest::Client::builder().pool_max_idle_per_host(o.connections * 2).build().map_err(|e| e.to_string())?;
    let client = Client::with_http(http.clone(), &o.url, &o.key_id, &o.secret);
    let (campaign, ticket) = setup(&o, &client).await?;
    // Signed in first: the purchases' confirmations would queue ahead of the passcode.
    let page_client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(1)
        .build()
        .map_err(|e| e.to_string())?;
    let mut browser = sign_in(&o, &page_client).await?;
    // The purchases' confirmations are not the subject: their mail goes nowhere (refused at
    // once) instead of queueing 10,000 deliveries behind the pages.
    let off = json!({"config": {"email": {"smtpHost": "127.0.0.1", "smtpPort": 1,
        "fromAddress": "console@bench.example", "fromName": "Bench"}}});
    expect(&client, Method::PATCH, "/api/white-label/v1/settings/notifications", off, 200).await?;

    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..o.connections {
        let (o, client, http, next) = (o.clone(), client.clone(), http.clone(), next.clone());
        tasks.push(tokio::spawn(buyer(o, client, http, campaign.clone(), ticket.clone(), next)));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    while successes(&client).await < o.payments as i64 {
        if started.elapsed() > o.timeout {
            return Err(format!("only {} of {} payments succeeded in time", successes(&client).await, o.payments));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The confirmations' mail fails at once (port 1) and waits for its retry: a quiet server.
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!(
        "seeded {} paid payments ({} ledger entries) in {:.1} s\n",
        o.payments,
        o.payments * 2,
        started.elapsed().as_secs_f64()
    );

    println!("| page | requests | p50 ms | p99 ms | max ms | bytes |");
    println!("|---|---:|---:|---:|---:|---:|");
    for path in ["/console", "/console/payments", "/console/ledger", "/console/campaigns"] {
        let mut times = Vec::with_capacity(o.requests);
        let mut size = 0;
        for _ in 0..o.requests {
            let t = Instant::now();
            let (s, body) = browser.get(path).await?;
            times.push(t.elapsed());
            if s != 200 {
                return Err(format!("{path}: {s} {}", body.chars().take(300).collect::<String>()));
            }
            size = body.len();
        }
        times.sort();
        let at = |q: f64| times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1];
        println!(
            "| `{path}` | {} | {:.2} | {:.2} | {:.2} | {size} |",
            o.requests,
            ms(at(0.50)),
            ms(at(0.99)),
            ms(times[times.len() - 1])
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => Arc::new(o),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("console bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

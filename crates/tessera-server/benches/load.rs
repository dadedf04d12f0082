//! Load harness: signed reads and rejected signatures next to `/healthz`, on one running server.
//!
//! ```sh
//! bash scripts/bench.sh          # builds, starts a demo server with limits off, runs this, stops it
//! cargo bench -p tessera-server --bench load -- --url http://127.0.0.1:8080 --key-id wl_prv_… --secret …
//! ```
//!
//! Four phases against the same server, each with `--connections` concurrent tasks that each
//! send one request at a time (closed loop) for `--warmup-secs` (not recorded) and then
//! `--duration-secs` (recorded):
//!
//! 1. `healthz`  — `GET /healthz`, no auth: the baseline (HTTP stack, routing, request-id and
//!    access-log layer).
//! 2. `signed`   — `GET /api/white-label/v1/context?n=<counter>` through `tessera_client`, every
//!    request freshly signed with the current timestamp and a fresh nonce; 200 expected.
//! 3. `rejected` — the same request signed with a wrong secret under the right key id; 401 expected.
//! 4. `list`     — a signed `GET /api/white-label/v1/campaigns?page=1&limit=20` on an account
//!    with at least 25 campaigns (the harness creates them first): a full page from the store.
//!    Each request writes `page` and `limit` with a varying number of leading zeros (`page=001`,
//!    `limit=0020`: the same query to the server) so that signed strings stay unique without an
//!    unknown parameter, which the list refuses.
//!
//! Why `?n=<counter>`: the nonce is not part of the signed string and the server keeps each
//! signature single-use (DECISIONS D2.6), so two requests for the same method, path and body
//! signed in the same millisecond carry the same signature and the second one is refused as
//! `replayed_request`. At thousands of requests per second one key then gets at most one
//! `GET /context` accepted per millisecond. The counter makes every signed string unique; the
//! handler ignores the query. `--fixed-path` sends the bare path to show that limit.
//!
//! `--rounds N` repeats the phases N times in turn and adds the rounds up, so that load from
//! other processes on a shared machine falls on every phase alike; the ratio of each round is
//! printed too. With `--server-pid` the server's CPU time (from `/proc/<pid>/stat`) is reported
//! per request, a figure that depends much less on what else the machine is doing.
//!
//! Latencies go into HDR histograms (microseconds). Results are printed as Markdown tables.
//! Flags: `--url`, `--key-id`, `--secret` (or `TESSERA_KEY_ID`, `TESSERA_KEY_SECRET`),
//! `--connections 64`, `--duration-secs 10`, `--warmup-secs 2`, `--rounds 1`, `--server-pid`,
//! `--fixed-path`, `--phases healthz,signed,rejected,list` (a subset, e.g. to profile one path).
//! Unknown flags (cargo passes `--bench`) are ignored.
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tessera_client::{Client, Method};

const CONTEXT_PATH: &str = "/api/white-label/v1/context";
const CAMPAIGNS_PATH: &str = "/api/white-label/v1/campaigns";
const SIGNED_TARGET: f64 = 0.6;
const REJECTED_TARGET: f64 = 0.8;
const LIST_TARGET: f64 = 0.3;
/// Campaigns the list phase needs on the account (more than one page of 20).
const LIST_CAMPAIGNS: u64 = 25;
/// A phase whose share of expected answers falls below this measured some other path.
const MIN_EXPECTED_SHARE: f64 = 0.5;
/// `/proc/<pid>/stat` counts CPU time in clock ticks; USER_HZ is 100 on Linux.
const TICKS_PER_SEC: f64 = 100.0;

struct Options {
    url: String,
    key_id: String,
    secret: String,
    connections: usize,
    duration: Duration,
    warmup: Duration,
    rounds: usize,
    server_pid: Option<u32>,
    fixed_path: bool,
    phases: Vec<Phase>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        url: "http://127.0.0.1:8080".to_string(),
        key_id: std::env::var("TESSERA_KEY_ID").unwrap_or_default(),
        secret: std::env::var("TESSERA_KEY_SECRET").unwrap_or_default(),
        connections: 64,
        duration: Duration::from_secs(10),
        warmup: Duration::from_secs(2),
        rounds: 1,
        server_pid: None,
        fixed_path: false,
        phases: PHASES.to_vec(),
    };
    let with_value = [
        "--url",
        "--key-id",
        "--secret",
        "--connections",
        "--duration-secs",
        "--warmup-secs",
        "--rounds",
        "--server-pid",
        "--phases",
    ];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--fixed-path" {
            o.fixed_path = true;
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if !with_value.contains(&flag.as_str()) {
            continue; // `--bench` from cargo, and anything else we do not know
        }
        let value = match inline {
            Some(v) => v,
            None => args.next().ok_or_else(|| format!("{flag} needs a value"))?,
        };
        let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v:?}: {e}"));
        match flag.as_str() {
            "--url" => o.url = value.trim_end_matches('/').to_string(),
            "--key-id" => o.key_id = value,
            "--secret" => o.secret = value,
            "--connections" => o.connections = number(&value)?.max(1) as usize,
            "--duration-secs" => o.duration = Duration::from_secs(number(&value)?.max(1)),
            "--warmup-secs" => o.warmup = Duration::from_secs(number(&value)?),
            "--rounds" => o.rounds = number(&value)?.max(1) as usize,
            "--server-pid" => o.server_pid = Some(number(&value)? as u32),
            "--phases" => {
                o.phases = PHASES.into_iter().filter(|p| value.split(',').any(|v| v.trim() == p.short())).collect();
                if o.phases.is_empty() {
                    return Err(format!(
                        "--phases {value:?}: a comma-separated list of healthz, signed, rejected, list"
                    ));
                }
            }
            _ => {}
        }
    }
    if o.key_id.is_empty() || o.secret.is_empty() {
        return Err("a private key is needed: --key-id and --secret (or TESSERA_KEY_ID, TESSERA_KEY_SECRET)".into());
    }
    Ok(o)
}

/// User plus system CPU time of a process (all its threads), in clock ticks.
fn cpu_ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Healthz,
    Signed,
    Rejected,
    List,
}

const PHASES: [Phase; 4] = [Phase::Healthz, Phase::Signed, Phase::Rejected, Phase::List];

impl Phase {
    fn short(self) -> &'static str {
        match self {
            Phase::Healthz => "healthz",
            Phase::Signed => "signed",
            Phase::Rejected => "rejected",
            Phase::List => "list",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Phase::Healthz => "healthz (GET /healthz, no auth)",
            Phase::Signed => "signed (GET /context, valid signature)",
            Phase::Rejected => "rejected (GET /context, bad signature)",
            Phase::List => "list (GET /campaigns?limit=20, signed)",
        }
    }

    fn expected(self) -> u16 {
        match self {
            Phase::Healthz | Phase::Signed | Phase::List => 200,
            Phase::Rejected => 401,
        }
    }
}

/// What the requests go through: one connection pool for every phase.
struct Target {
    http: reqwest::Client,
    healthz_url: String,
    good: Client,
    bad: Client,
    fixed_path: bool,
    counter: AtomicU64,
}

impl Target {
    /// One request; its status (0 when there was no answer) and body, always read in full.
    async fn send(&self, phase: Phase) -> (u16, Vec<u8>) {
        let sdk = match phase {
            Phase::Healthz => {
                let answer = match self.http.get(&self.healthz_url).send().await {
                    Ok(r) => {
                        let status = r.status().as_u16();
                        r.bytes().await.map(|b| (status, b.to_vec()))
                    }
                    Err(e) => Err(e),
                };
                return answer.unwrap_or_else(|e| (0, e.to_string().into_bytes()));
            }
            Phase::Signed | Phase::List => &self.good,
            Phase::Rejected => &self.bad,
        };
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let path = if phase == Phase::List {
            let zeros = |k: u64| "0".repeat(k as usize);
            format!("{CAMPAIGNS_PATH}?page={}1&limit={}20", zeros(n % 32), zeros(n / 32 % 32))
        } else if self.fixed_path {
            CONTEXT_PATH.to_string()
        } else {
            format!("{CONTEXT_PATH}?n={n}")
        };
        // `send_raw` signs each call with the current time and a fresh nonce.
        match sdk.send_raw(Method::GET, &path, Vec::new(), None).await {
            Ok(r) => (r.status, r.body),
            Err(e) => (0, e.to_string().into_bytes()),
        }
    }
}

fn new_histogram() -> Result<Histogram<u64>, String> {
    // 1 µs to 60 s, three significant digits.
    Histogram::new_with_bounds(1, 60_000_000, 3).map_err(|e| e.to_string())
}

/// Everything measured for one phase (one round, or all rounds added up).
struct Measured {
    histogram: Histogram<u64>,
    statuses: BTreeMap<u16, u64>,
    /// One answer body per unexpected status, to say what went wrong.
    samples: BTreeMap<u16, String>,
    secs: f64,
    server_ticks: Option<u64>,
    client_ticks: Option<u64>,
}

impl Measured {
    fn new() -> Result<Self, String> {
        Ok(Measured {
            histogram: new_histogram()?,
            statuses: BTreeMap::new(),
            samples: BTreeMap::new(),
            secs: 0.0,
            server_ticks: Some(0),
            client_ticks: Some(0),
        })
    }

    fn add(&mut self, other: &Measured) -> Result<(), String> {
        self.histogram.add(&other.histogram).map_err(|e| e.to_string())?;
        for (s, n) in &other.statuses {
            *self.statuses.entry(*s).or_insert(0) += n;
        }
        for (s, body) in &other.samples {
            self.samples.entry(*s).or_insert_with(|| body.clone());
        }
        self.secs += other.secs;
        self.server_ticks = self.server_ticks.zip(other.server_ticks).map(|(a, b)| a + b);
        self.client_ticks = self.client_ticks.zip(other.client_ticks).map(|(a, b)| a + b);
        Ok(())
    }

    fn requests(&self) -> u64 {
        self.histogram.len()
    }

    fn rate(&self) -> f64 {
        if self.secs > 0.0 {
            self.requests() as f64 / self.secs
        } else {
            0.0
        }
    }

    fn unexpected(&self, phase: Phase) -> u64 {
        self.statuses.iter().filter(|(s, _)| **s != phase.expected()).map(|(_, n)| n).sum()
    }

    fn expected_share(&self, phase: Phase) -> f64 {
        match self.requests() {
            0 => 0.0,
            n => 1.0 - self.unexpected(phase) as f64 / n as f64,
        }
    }

    fn unexpected_text(&self, phase: Phase) -> String {
        let parts: Vec<String> = self
            .statuses
            .iter()
            .filter(|(s, _)| **s != phase.expected())
            .map(|(s, n)| if *s == 0 { format!("{n}× no answer") } else { format!("{n}× {s}") })
            .collect();
        if parts.is_empty() {
            "0".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// CPU microseconds per request.
    fn cpu_per_request(&self, ticks: Option<u64>) -> String {
        match (ticks, self.requests()) {
            (Some(t), n) if n > 0 => format!("{:.0}", t as f64 / TICKS_PER_SEC * 1e6 / n as f64),
            _ => "-".to_string(),
        }
    }
}

async fn worker(target: Arc<Target>, phase: Phase, warmup_until: Instant, until: Instant) -> Result<Measured, String> {
    let mut m = Measured::new()?;
    while Instant::now() < warmup_until {
        target.send(phase).await;
    }
    while Instant::now() < until {
        let started = Instant::now();
        let (status, body) = target.send(phase).await;
        let micros = started.elapsed().as_micros().clamp(1, 60_000_000) as u64;
        m.histogram.record(micros).map_err(|e| e.to_string())?;
        *m.statuses.entry(status).or_insert(0) += 1;
        if status != phase.expected() && !m.samples.contains_key(&status) {
            m.samples.insert(status, String::from_utf8_lossy(&body).chars().take(300).collect());
        }
    }
    Ok(m)
}

async fn run_phase(target: &Arc<Target>, phase: Phase, round: usize, o: &Options) -> Result<Measured, String> {
    // One request first: a wrong key or a server that is down should say so plainly. Later
    // rounds only count, so that a path that degrades during the run is reported, not hidden.
    let (status, body) = target.send(phase).await;
    if round == 0 && status != phase.expected() {
        return Err(format!(
            "{}: the first request answered {status} (expected {}): {}",
            phase.name(),
            phase.expected(),
            String::from_utf8_lossy(&body)
        ));
    }
    eprintln!(
        "round {}/{}: {} for {}s (+{}s warm-up)…",
        round + 1,
        o.rounds,
        phase.name(),
        o.duration.as_secs(),
        o.warmup.as_secs()
    );
    let server = o.server_pid.map(|p| p.to_string());
    let warmup_until = Instant::now() + o.warmup;
    let until = warmup_until + o.duration;
    let tasks: Vec<_> =
        (0..o.connections).map(|_| tokio::spawn(worker(target.clone(), phase, warmup_until, until))).collect();
    // CPU counters are read when the warm-up ends and when the last task is done.
    tokio::time::sleep_until(warmup_until.into()).await;
    let start_server = server.as_deref().and_then(cpu_ticks);
    let start_client = cpu_ticks("self");
    let joined = futures_util::future::join_all(tasks).await;
    // Every task stops at its first answer after `until`; the last of them ends the phase.
    let secs = warmup_until.elapsed().as_secs_f64();
    let used =
        |start: Option<u64>, pid: Option<&str>| start.zip(pid.and_then(cpu_ticks)).map(|(a, b)| b.saturating_sub(a));
    let mut total = Measured::new()?;
    total.secs = secs;
    total.server_ticks = if server.is_some() { used(start_server, server.as_deref()) } else { None };
    total.client_ticks = used(start_client, Some("self"));
    for task in joined {
        let m = task.map_err(|e| e.to_string())??;
        total.histogram.add(&m.histogram).map_err(|e| e.to_string())?;
        for (s, n) in m.statuses {
            *total.statuses.entry(s).or_insert(0) += n;
        }
        for (s, body) in m.samples {
            total.samples.entry(s).or_insert(body);
        }
    }
    Ok(total)
}

fn ms(micros: u64) -> String {
    format!("{:.2}", micros as f64 / 1000.0)
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

fn print_report(o: &Options, rounds: &[Vec<Measured>], total: &[Measured; 4]) {
    println!();
    println!(
        "{} connections; per phase {} round(s) of {}s after {}s warm-up; {}; against {}",
        o.connections,
        o.rounds,
        o.duration.as_secs(),
        o.warmup.as_secs(),
        if o.fixed_path { "signed path fixed (no ?n=)" } else { "signed path /context?n=<counter>" },
        o.url
    );
    println!();
    println!("| phase | requests | req/s | p50 ms | p99 ms | max ms | server CPU µs/req | load generator CPU µs/req | unexpected statuses |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for (phase, m) in PHASES.iter().zip(total).filter(|(p, _)| o.phases.contains(p)) {
        let h = &m.histogram;
        println!(
            "| {} | {} | {:.0} | {} | {} | {} | {} | {} | {} |",
            phase.name(),
            m.requests(),
            m.rate(),
            ms(h.value_at_quantile(0.50)),
            ms(h.value_at_quantile(0.99)),
            ms(h.max()),
            m.cpu_per_request(m.server_ticks),
            m.cpu_per_request(m.client_ticks),
            m.unexpected_text(*phase)
        );
    }
    if !o.phases.contains(&Phase::Healthz) || o.phases.len() == 1 {
        println!();
        return;
    }
    println!();
    println!("| ratio | measured | per round | target | met |");
    println!("|---|---:|---|---:|---|");
    for (label, i, target) in [
        ("signed / healthz", 1, SIGNED_TARGET),
        ("rejected / healthz", 2, REJECTED_TARGET),
        ("list / healthz", 3, LIST_TARGET),
    ] {
        if !o.phases.contains(&PHASES[i]) {
            continue;
        }
        let r = ratio(total[i].rate(), total[0].rate());
        let per_round: Vec<String> = rounds.iter().map(|m| format!("{:.2}", ratio(m[i].rate(), m[0].rate()))).collect();
        println!(
            "| {label} | {r:.2} | {} | ≥ {target:.1} | {} |",
            per_round.join(", "),
            if r >= target { "yes" } else { "NO" }
        );
    }
    if total[0].server_ticks.is_some() {
        println!();
        println!("Server CPU per request, relative to /healthz (lower is cheaper; the inverse is the rate ratio a");
        println!("CPU-bound server would reach with the load generator on other cores):");
        for (phase, m) in PHASES.iter().zip(total).skip(1).filter(|(p, _)| o.phases.contains(p)) {
            let per = |m: &Measured| m.server_ticks.unwrap_or(0) as f64 / m.requests().max(1) as f64;
            println!("- {}: {:.2}× healthz", phase.name(), ratio(per(m), per(&total[0])));
        }
    }
    println!();
}

/// Creates campaigns until the account has [`LIST_CAMPAIGNS`], so a list page is full.
async fn seed_campaigns(sdk: &Client) -> Result<(), String> {
    let r = sdk.send_raw(Method::GET, &format!("{CAMPAIGNS_PATH}?limit=1"), Vec::new(), None).await;
    let r = r.map_err(|e| e.to_string())?;
    let have = r.json()["pagination"]["total"].as_u64().ok_or_else(|| format!("listing campaigns: {}", r.json()))?;
    for i in have..LIST_CAMPAIGNS {
        let body = serde_json::json!({
            "title": format!("Load harness campaign {i}"),
            "description": "A campaign the load harness lists; created once per data directory.",
            "campaign_type": if i % 2 == 0 { "ticketing" } else { "voting" },
            "vote_price": 1.5,
            "start_date": "2027-03-01T18:00:00Z",
            "end_date": "2027-03-02T02:00:00Z",
            "metadata": {"venue": "Accra International Conference Centre", "seq": i},
        });
        let bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        let r = sdk.send_raw(Method::POST, CAMPAIGNS_PATH, bytes, None).await.map_err(|e| e.to_string())?;
        if r.status != 201 {
            return Err(format!("creating a campaign for the list phase: {} {}", r.status, r.json()));
        }
    }
    Ok(())
}

async fn run(o: Options) -> Result<bool, String> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(o.connections)
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    // The wrong secret differs from the right one in its last character only: same key id,
    // same shape, so only the signature check can refuse it.
    let mut wrong_secret = o.secret.clone();
    let last = wrong_secret.pop().unwrap_or('A');
    wrong_secret.push(if last == 'A' { 'B' } else { 'A' });
    let target = Arc::new(Target {
        healthz_url: format!("{}/healthz", o.url),
        good: Client::with_http(http.clone(), &o.url, &o.key_id, &o.secret),
        bad: Client::with_http(http.clone(), &o.url, &o.key_id, &wrong_secret),
        http,
        fixed_path: o.fixed_path,
        counter: AtomicU64::new(0),
    });
    let mut rounds = Vec::new();
    if o.phases.contains(&Phase::List) {
        seed_campaigns(&target.good).await?;
    }
    let mut total = [Measured::new()?, Measured::new()?, Measured::new()?, Measured::new()?];
    for round in 0..o.rounds {
        let mut this = Vec::new();
        for (i, phase) in PHASES.into_iter().enumerate() {
            if !o.phases.contains(&phase) {
                this.push(Measured::new()?);
                continue;
            }
            let m = run_phase(&target, phase, round, &o).await?;
            total[i].add(&m)?;
            this.push(m);
        }
        rounds.push(this);
    }
    print_report(&o, &rounds, &total);
    let mut meaningful = true;
    for (phase, m) in PHASES.iter().zip(&total) {
        if m.unexpected(*phase) == 0 {
            continue;
        }
        let share = m.expected_share(*phase);
        let level = if share < MIN_EXPECTED_SHARE { "error" } else { "warning" };
        eprintln!(
            "{level}: {}: {:.1}% of answers were {} ({} unexpected: {})",
            phase.name(),
            share * 100.0,
            phase.expected(),
            m.unexpected(*phase),
            m.unexpected_text(*phase)
        );
        for (status, body) in &m.samples {
            eprintln!("  e.g. {status}: {body}");
        }
        if share < MIN_EXPECTED_SHARE {
            eprintln!("  the figures of this phase do not measure the path they are named after");
            meaningful = false;
        }
    }
    Ok(meaningful)
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(options)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(3),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

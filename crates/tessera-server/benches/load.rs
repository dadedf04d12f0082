//! Load harness: signed reads, rejected signatures and list reads next to `/healthz`, on one
//! running server, every phase measured the same way.
//!
//! ```sh
//! bash scripts/bench.sh          # builds, starts a demo server with limits off, runs this, stops it
//! cargo bench -p tessera-server --bench load -- --url http://127.0.0.1:8080 --key-id wl_prv_… --secret …
//! ```
//!
//! Four phases against the same server:
//!
//! 1. `healthz`  — `GET /healthz?n=<counter>` carrying the same four signed headers as the
//!    signed phase (the server ignores them there): the baseline with the same header bytes.
//! 2. `signed`   — `GET /api/white-label/v1/context?n=<counter>`, validly signed; 200 expected.
//! 3. `rejected` — the same request signed with a wrong secret under the right key id; 401.
//! 4. `list`     — a signed `GET /api/white-label/v1/campaigns?page=1&limit=20` on an account
//!    with at least 25 campaigns (the harness creates them first): a full page from the store.
//!    `page` and `limit` carry a varying number of leading zeros (`page=001`, `limit=0020`: the
//!    same query to the server) so that signed strings stay unique without an unknown
//!    parameter, which the list refuses.
//!
//! **Every request is built before the clock starts** (pre-signed bytes, each sent once: the
//! server keeps each signature single-use, D2.6), so the load generator does the same small
//! amount of work per request in every phase: one `write` of ready bytes and one read of the
//! answer over a plain HTTP/1.1 keep-alive connection. No signing, JSON parsing or HTTP client
//! library runs inside the timed window, and the four phases differ only in what the server
//! does. All connections are opened and loaded first; a barrier then releases them together
//! (the pitfall of a wrk script whose threads load their requests one after another and start
//! at once), they send a warm-up share that is not recorded, meet at a second barrier, and the
//! timed part runs until the last connection has sent its share.
//!
//! `--rounds N` repeats the phases in turn (healthz, signed, rejected, list, healthz, …) so
//! that whatever else the machine does falls on every phase alike; each round's ratios are
//! printed and the **median of the rounds** is the figure of record. With `--server-pid` the
//! server's CPU time (from `/proc/<pid>/stat`) is reported per request.
//!
//! Flags: `--url`, `--key-id`, `--secret` (or `TESSERA_KEY_ID`, `TESSERA_KEY_SECRET`),
//! `--connections 64`, `--requests 200000` (timed requests per phase and round),
//! `--list-requests 40000` (the list phase's), `--warmup-share 0.1`, `--rounds 3`,
//! `--client-threads 2`, `--server-pid`, `--phases healthz,signed,rejected,list` (a subset, e.g.
//! to profile one path). Unknown flags (cargo passes `--bench`) are ignored.
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hdrhistogram::Histogram;
use tessera_client::{Client, Method};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

const CONTEXT_PATH: &str = "/api/white-label/v1/context";
const CAMPAIGNS_PATH: &str = "/api/white-label/v1/campaigns";
const SIGNED_TARGET: f64 = 0.8;
/// The signed path's target when its guards are in Redis (`REDIS_URL` set, as `scripts/bench.sh`
/// exports it): one round trip to Redis per request (issue 23).
const SIGNED_REDIS_TARGET: f64 = 0.6;
const REJECTED_TARGET: f64 = 0.9;
const LIST_TARGET: f64 = 0.3;
/// Campaigns the list phase needs on the account (more than one page of 20).
const LIST_CAMPAIGNS: u64 = 25;
/// A phase whose share of expected answers falls below this measured some other path.
const MIN_EXPECTED_SHARE: f64 = 0.5;
/// `/proc/<pid>/stat` counts CPU time in clock ticks; USER_HZ is 100 on Linux.
const TICKS_PER_SEC: f64 = 100.0;
/// List paths vary over 32 × 32 spellings; the timestamp moves on by 1 ms after each cycle.
const LIST_SPELLINGS: u64 = 1024;

struct Options {
    url: String,
    key_id: String,
    secret: String,
    connections: usize,
    requests: u64,
    list_requests: u64,
    warmup_share: f64,
    rounds: usize,
    client_threads: usize,
    server_pid: Option<u32>,
    phases: Vec<Phase>,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        url: "http://127.0.0.1:8080".to_string(),
        key_id: std::env::var("TESSERA_KEY_ID").unwrap_or_default(),
        secret: std::env::var("TESSERA_KEY_SECRET").unwrap_or_default(),
        connections: 64,
        requests: 200_000,
        list_requests: 40_000,
        warmup_share: 0.1,
        rounds: 3,
        client_threads: 2,
        server_pid: None,
        phases: PHASES.to_vec(),
    };
    let with_value = [
        "--url",
        "--key-id",
        "--secret",
        "--connections",
        "--requests",
        "--list-requests",
        "--warmup-share",
        "--rounds",
        "--client-threads",
        "--server-pid",
        "--phases",
    ];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
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
            "--requests" => o.requests = number(&value)?.max(1),
            "--list-requests" => o.list_requests = number(&value)?.max(1),
            "--warmup-share" => {
                o.warmup_share = value.parse::<f64>().map_err(|e| format!("{flag} {value:?}: {e}"))?.clamp(0.0, 1.0)
            }
            "--rounds" => o.rounds = number(&value)?.max(1) as usize,
            "--client-threads" => o.client_threads = number(&value)?.max(1) as usize,
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
    if !o.url.starts_with("http://") {
        return Err(format!("--url {:?}: the harness speaks plain HTTP/1.1 (http://host:port)", o.url));
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

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
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
            Phase::Healthz => "healthz (GET /healthz, same four headers)",
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

/// Builds the request bytes of every phase: pre-signed, each unique.
struct Requests {
    host: String,
    key_id: String,
    secret: Vec<u8>,
    wrong_secret: Vec<u8>,
    /// Makes nonces unique across runs against one server.
    run: String,
    counter: AtomicU64,
}

impl Requests {
    fn new(o: &Options) -> Self {
        // The wrong secret differs from the right one in its last character only: same key id,
        // same shape, so only the signature check can refuse it.
        let mut wrong = o.secret.clone();
        let last = wrong.pop().unwrap_or('A');
        wrong.push(if last == 'A' { 'B' } else { 'A' });
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        Requests {
            host: o.url.trim_start_matches("http://").to_string(),
            key_id: o.key_id.clone(),
            secret: o.secret.clone().into_bytes(),
            wrong_secret: wrong.into_bytes(),
            run: format!("{:x}{:x}", nanos as u64, std::process::id()),
            counter: AtomicU64::new(0),
        }
    }

    /// One request of `phase`, signed now, as the bytes to write.
    fn build(&self, phase: Phase, base_ms: i64) -> Vec<u8> {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let (path, signed_path, ts) = match phase {
            Phase::List => {
                let v = n % LIST_SPELLINGS;
                let zeros = |k: u64| "0".repeat(k as usize);
                let p = format!("{CAMPAIGNS_PATH}?page={}1&limit={}20", zeros(v % 32), zeros(v / 32));
                (p.clone(), p, base_ms + (n / LIST_SPELLINGS) as i64)
            }
            Phase::Healthz => {
                // The header bytes of a signed request, sent to /healthz.
                (format!("/healthz?n={n}"), format!("{CONTEXT_PATH}?n={n}"), base_ms)
            }
            Phase::Signed | Phase::Rejected => {
                let p = format!("{CONTEXT_PATH}?n={n}");
                (p.clone(), p, base_ms)
            }
        };
        let secret = if phase == Phase::Rejected { &self.wrong_secret } else { &self.secret };
        let ts = ts.to_string();
        let signature = tessera_sign::sign(secret, &ts, "GET", &signed_path, b"");
        format!(
            "GET {path} HTTP/1.1\r\nhost: {}\r\n{}: {}\r\n{}: {ts}\r\n{}: {}n{n:012}\r\n{}: {signature}\r\n\r\n",
            self.host,
            tessera_sign::HEADER_KEY_ID,
            self.key_id,
            tessera_sign::HEADER_TIMESTAMP,
            tessera_sign::HEADER_NONCE,
            self.run,
            tessera_sign::HEADER_SIGNATURE,
        )
        .into_bytes()
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis() as i64
}

/// One HTTP/1.1 keep-alive connection that writes ready bytes and reads whole answers.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    async fn open(host: &str) -> Result<Conn, String> {
        let stream = TcpStream::connect(host).await.map_err(|e| format!("connecting to {host}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Conn { stream, buf: Vec::with_capacity(16 * 1024) })
    }

    /// Sends one request and reads its answer: (status, body). The answer must carry a
    /// `content-length` (every Tessera answer does).
    async fn exchange(&mut self, request: &[u8]) -> Result<(u16, &[u8]), String> {
        self.stream.write_all(request).await.map_err(|e| format!("write: {e}"))?;
        self.buf.clear();
        let mut head_end = None;
        loop {
            if self.buf.len() == self.buf.capacity() {
                self.buf.reserve(self.buf.capacity());
            }
            let n = self.stream.read_buf(&mut self.buf).await.map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err("the server closed the connection".into());
            }
            if head_end.is_none() {
                head_end = self.buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
            }
            let Some(end) = head_end else { continue };
            let head = std::str::from_utf8(&self.buf[..end]).map_err(|_| "answer head is not UTF-8".to_string())?;
            let status = head.get(9..12).and_then(|s| s.parse::<u16>().ok()).ok_or("no status line")?;
            let length = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<usize>().ok())?
                })
                .ok_or_else(|| format!("an answer without content-length: {head}"))?;
            if self.buf.len() >= end + length {
                return Ok((status, &self.buf[end..end + length]));
            }
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

/// One connection's part of a phase: warm-up, then the timed requests.
async fn connection(
    mut conn: Conn,
    phase: Phase,
    warmup: Vec<Vec<u8>>,
    timed: Vec<Vec<u8>>,
    gates: Arc<(Barrier, Barrier)>,
) -> Result<Measured, String> {
    let mut m = Measured::new()?;
    gates.0.wait().await;
    for r in &warmup {
        conn.exchange(r).await?;
    }
    gates.1.wait().await;
    for r in &timed {
        let started = Instant::now();
        let (status, body) = match conn.exchange(r).await {
            Ok(answer) => answer,
            Err(e) => return Err(format!("{}: {e}", phase.name())),
        };
        let micros = started.elapsed().as_micros().clamp(1, 60_000_000) as u64;
        m.histogram.record(micros).map_err(|e| e.to_string())?;
        *m.statuses.entry(status).or_insert(0) += 1;
        if status != phase.expected() && !m.samples.contains_key(&status) {
            m.samples.insert(status, String::from_utf8_lossy(body).chars().take(300).collect());
        }
    }
    Ok(m)
}

async fn run_phase(requests: &Requests, phase: Phase, round: usize, o: &Options) -> Result<Measured, String> {
    let total = if phase == Phase::List { o.list_requests } else { o.requests };
    let per_conn = total.div_ceil(o.connections as u64) as usize;
    let warm_per_conn = (per_conn as f64 * o.warmup_share).ceil() as usize;
    // One request first, alone: a wrong key or a server that is down should say so plainly.
    let mut probe = Conn::open(&requests.host).await?;
    let (status, body) = probe.exchange(&requests.build(phase, now_ms())).await?;
    if round == 0 && status != phase.expected() {
        return Err(format!(
            "{}: the first request answered {status} (expected {}): {}",
            phase.name(),
            phase.expected(),
            String::from_utf8_lossy(body)
        ));
    }
    drop(probe);
    eprintln!(
        "round {}/{}: {}: {} requests on {} connections (+{} warm-up each)…",
        round + 1,
        o.rounds,
        phase.name(),
        per_conn * o.connections,
        o.connections,
        warm_per_conn
    );
    // Build every request before any is sent.
    let base_ms = now_ms();
    let gates = Arc::new((Barrier::new(o.connections + 1), Barrier::new(o.connections + 1)));
    let mut tasks = Vec::with_capacity(o.connections);
    for _ in 0..o.connections {
        let warmup: Vec<_> = (0..warm_per_conn).map(|_| requests.build(phase, base_ms)).collect();
        let timed: Vec<_> = (0..per_conn).map(|_| requests.build(phase, base_ms)).collect();
        let conn = Conn::open(&requests.host).await?;
        tasks.push(tokio::spawn(connection(conn, phase, warmup, timed, gates.clone())));
    }
    gates.0.wait().await; // every connection is open and loaded: warm up together
    gates.1.wait().await; // every connection has warmed up: the clock starts
    let started = Instant::now();
    let server = o.server_pid.map(|p| p.to_string());
    let start_server = server.as_deref().and_then(cpu_ticks);
    let start_client = cpu_ticks("self");
    let joined = futures_util::future::join_all(tasks).await;
    let secs = started.elapsed().as_secs_f64();
    let used =
        |start: Option<u64>, pid: Option<&str>| start.zip(pid.and_then(cpu_ticks)).map(|(a, b)| b.saturating_sub(a));
    let mut m = Measured::new()?;
    m.secs = secs;
    m.server_ticks = if server.is_some() { used(start_server, server.as_deref()) } else { None };
    m.client_ticks = used(start_client, Some("self"));
    for task in joined {
        let one = task.map_err(|e| e.to_string())??;
        m.histogram.add(&one.histogram).map_err(|e| e.to_string())?;
        for (s, n) in one.statuses {
            *m.statuses.entry(s).or_insert(0) += n;
        }
        for (s, body) in one.samples {
            m.samples.entry(s).or_insert(body);
        }
    }
    Ok(m)
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn print_report(o: &Options, rounds: &[Vec<Measured>], total: &[Measured; 4]) {
    println!();
    println!(
        "{} connections, {} client thread(s); per phase and round {} timed requests ({} for the list) after a \
         {:.0}% warm-up; {} round(s); against {}",
        o.connections,
        o.client_threads,
        o.requests,
        o.list_requests,
        o.warmup_share * 100.0,
        o.rounds,
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
    println!("| ratio (req/s against /healthz) | median of rounds | per round | all rounds pooled | target | met |");
    println!("|---|---:|---|---:|---:|---|");
    for (label, i, target) in [
        (
            "signed / healthz",
            1,
            if std::env::var_os("REDIS_URL").is_some() { SIGNED_REDIS_TARGET } else { SIGNED_TARGET },
        ),
        ("rejected / healthz", 2, REJECTED_TARGET),
        ("list / healthz", 3, LIST_TARGET),
    ] {
        if !o.phases.contains(&PHASES[i]) {
            continue;
        }
        let per_round: Vec<f64> = rounds.iter().map(|m| ratio(m[i].rate(), m[0].rate())).collect();
        let med = median(per_round.clone());
        let pooled = ratio(total[i].rate(), total[0].rate());
        let shown: Vec<String> = per_round.iter().map(|r| format!("{r:.2}")).collect();
        println!(
            "| {label} | {med:.2} | {} | {pooled:.2} | ≥ {target:.1} | {} |",
            shown.join(", "),
            if med >= target { "yes" } else { "NO" }
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
    if o.phases.contains(&Phase::List) {
        seed_campaigns(&Client::new(&o.url, &o.key_id, &o.secret).map_err(|e| e.to_string())?).await?;
    }
    let requests = Requests::new(&o);
    let mut rounds = Vec::new();
    let mut total = [Measured::new()?, Measured::new()?, Measured::new()?, Measured::new()?];
    for round in 0..o.rounds {
        let mut this = Vec::new();
        for (i, phase) in PHASES.into_iter().enumerate() {
            if !o.phases.contains(&phase) {
                this.push(Measured::new()?);
                continue;
            }
            let m = run_phase(&requests, phase, round, &o).await?;
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
    let runtime =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(options.client_threads).enable_all().build() {
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

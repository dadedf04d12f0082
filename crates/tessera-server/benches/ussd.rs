//! USSD votes under faults (issue 24's acceptance figures): simulated voters dial through the
//! sandbox's gateways and handset into a running server, approve or refuse the mobile-money
//! prompts, and the money is checked end to end.
//!
//! ```sh
//! bash scripts/bench-ussd.sh   # builds, starts the sandbox and a server with limits off, runs this
//! ```
//!
//! Setup, with the signed key (`--key-id`, `--secret`; scopes campaigns:read, campaigns:write,
//! payments:write, settings:write) of the account `--account`: a running voting campaign at
//! GHS 2 a vote with 20 nominees (codes `101`…`120`, some with long names), and the `ussd`
//! settings (enabled, a 24-character callback token, service code `*920*44#`, maxVotes 50, the
//! campaign). Then, for each gateway of `--gateways` (africastalking, hubtel, nalo, arkesel), in
//! turn:
//!
//! 1. `ussd.provider` is the next of `--providers` (so both charge wires are exercised), and the
//!    sandbox's faults drop 10 % of its webhooks and send 10 % twice.
//! 2. `--voters` voters, `--connections` at a time, each with its own number (`233` + `24`, `20`
//!    or `27` + the gateway's digit + six digits, so the three networks) dial `*920*44#` through
//!    `POST <sandbox>/sandbox/ussd/dial` and answer code → count → `1` through
//!    `/sandbox/ussd/sessions/:id/reply`. Every dial and reply is timed (sandbox → Tessera →
//!    sandbox: the "USSD reply") and every screen's length is kept. Faults, fixed per voter by
//!    `--seed`: ~10 % dial straight through (`*920*44*CODE*N#`); ~10 % lose a reply (the voter
//!    abandons the session after one of its requests and dials again: a voter whose lost reply
//!    was the confirmation finds the pending-vote menu and chooses `1`, send again; the others
//!    start over); ~10 % dial again after confirming and choose `1`; ~3 % cancel at confirm; ~3 %
//!    type a wrong code first. While the middle `--slow-percent` of a gateway's voters run, the
//!    sandbox answers every charge call `--slow-charge-ms` late.
//! 3. The handset: once a voter is done, its charge is looked up at the sandbox
//!    (`GET /sandbox/charges?phone=`) and, `--approve-after-ms` (1000) later, approved
//!    (`/succeed`, ~90 %) or refused (`/fail`).
//! 4. Every settled charge is waited for in Tessera (`GET /payments/:reference`, success or
//!    failed; a dropped webhook leaves it to the verify poll), up to `--settle-timeout-secs`.
//!
//! Checks (a violation is printed and the exit status is 1): the votes credited to the nominees
//! (the change in the sum of `votes` of the signed `GET /participants`) equal the votes of the
//! succeeded charges; no number has more charges than it confirmed votes (0 double charges) nor
//! fewer (0 missing); each charge's amount is the total its confirm screen showed; Tessera's status
//! of each settled charge is the one the handset chose; every screen is at most 160 characters;
//! every screen is the one the step expects; the reply p99 is under `--p99-limit-ms` (500).
//! Results are one Markdown table row per gateway (latencies in milliseconds).
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{json, Value};
use tessera_client::{Client, Method};

const GATEWAYS: [&str; 4] = ["africastalking", "hubtel", "nalo", "arkesel"];
const SERVICE_CODE: &str = "*920*44#";
const NOMINEES: usize = 20;
const MAX_VOTES: u64 = 50;
const SCREEN_MAX: usize = 160;

struct Options {
    url: String,
    sandbox_url: String,
    key_id: String,
    secret: String,
    account: String,
    voters: usize,
    connections: usize,
    gateways: Vec<String>,
    providers: Vec<String>,
    seed: u64,
    slow_charge_ms: u64,
    slow_percent: usize,
    settle_timeout: Duration,
    p99_limit_ms: f64,
    approve_after: Duration,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        url: "http://127.0.0.1:8080".into(),
        sandbox_url: "http://127.0.0.1:8090".into(),
        key_id: std::env::var("TESSERA_KEY_ID").unwrap_or_default(),
        secret: std::env::var("TESSERA_KEY_SECRET").unwrap_or_default(),
        account: "bench".into(),
        voters: 1000,
        connections: 32,
        gateways: GATEWAYS.iter().map(|g| g.to_string()).collect(),
        providers: vec!["provider_a".into(), "provider_b".into(), "provider_c".into()],
        seed: 24,
        slow_charge_ms: 300,
        slow_percent: 20,
        settle_timeout: Duration::from_secs(180),
        p99_limit_ms: 500.0,
        approve_after: Duration::from_millis(1000),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let known = [
            "--url",
            "--sandbox-url",
            "--key-id",
            "--secret",
            "--account",
            "--voters",
            "--connections",
            "--gateways",
            "--providers",
            "--seed",
            "--slow-charge-ms",
            "--slow-percent",
            "--settle-timeout-secs",
            "--p99-limit-ms",
            "--approve-after-ms",
        ];
        if !known.contains(&flag.as_str()) {
            continue; // `--bench` from cargo
        }
        let v = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v:?}: {e}"));
        let list = |v: &str| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
        match flag.as_str() {
            "--url" => o.url = v.trim_end_matches('/').into(),
            "--sandbox-url" => o.sandbox_url = v.trim_end_matches('/').into(),
            "--key-id" => o.key_id = v,
            "--secret" => o.secret = v,
            "--account" => o.account = v,
            "--voters" => o.voters = n(&v)?.max(1) as usize,
            "--connections" => o.connections = n(&v)?.max(1) as usize,
            "--gateways" => o.gateways = list(&v),
            "--providers" => o.providers = list(&v),
            "--seed" => o.seed = n(&v)?,
            "--slow-charge-ms" => o.slow_charge_ms = n(&v)?,
            "--slow-percent" => o.slow_percent = n(&v)?.min(100) as usize,
            "--p99-limit-ms" => o.p99_limit_ms = n(&v)? as f64,
            "--approve-after-ms" => o.approve_after = Duration::from_millis(n(&v)?),
            _ => o.settle_timeout = Duration::from_secs(n(&v)?.max(1)),
        }
    }
    if let Some(g) = o.gateways.iter().find(|g| !GATEWAYS.contains(&g.as_str())) {
        return Err(format!("--gateways: {g:?} is not one of {}", GATEWAYS.join(", ")));
    }
    if o.providers.is_empty() {
        return Err("--providers needs at least one provider".into());
    }
    if o.voters > 999_999 {
        return Err("--voters: at most 999999 (six digits of each voter's number)".into());
    }
    Ok(o)
}

/// SplitMix64: the voters' faults come from `--seed` alone, the same on every machine.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, gateway: usize, voter: usize) -> Rng {
        let mut r = Rng(seed ^ ((gateway as u64) << 40) ^ (voter as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next();
        r
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The faults the voters meet, as the second table names them.
const FAULTS: [&str; 6] = [
    "dialled through",
    "wrong code first",
    "lost reply, re-dialled",
    "lost confirmation, sent again",
    "re-dialled after confirming, sent again",
    "cancelled at confirm",
];

/// What one voter does besides voting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    /// The reply of request `n` (0 = the dial) is lost: the voter dials again.
    LostReply(usize),
    /// Dials again after confirming and asks for the prompt again.
    RedialAfterConfirm,
    CancelAtConfirm,
}

/// One voter's plan, fixed by the seed.
#[derive(Clone)]
struct Plan {
    msisdn: String,
    code: String,
    votes: u64,
    dial_through: bool,
    wrong_code_first: bool,
    fault: Fault,
    approve: bool,
}

fn plan(seed: u64, gateway: usize, voter: usize) -> Plan {
    let mut r = Rng::new(seed, gateway, voter);
    let prefix = ["24", "20", "27"][voter % 3];
    let msisdn = format!("233{prefix}{gateway}{voter:06}");
    let code = format!("{}", 101 + r.below(NOMINEES as u64));
    // Mostly a few votes, now and then many.
    let votes = if r.below(10) == 0 { 1 + r.below(MAX_VOTES) } else { 1 + r.below(10) };
    let dial_through = r.below(100) < 10;
    let wrong_code_first = !dial_through && r.below(100) < 3;
    let b = r.below(100);
    // Requests of a session: the dial, then code and count unless dialled through, then 1.
    let requests = if dial_through { 2 } else { 3 + usize::from(wrong_code_first) + 1 };
    let fault = match b {
        0..=9 => Fault::LostReply(r.below(requests as u64) as usize),
        10..=19 => Fault::RedialAfterConfirm,
        20..=22 => Fault::CancelAtConfirm,
        _ => Fault::None,
    };
    let approve = r.below(100) >= 10;
    Plan { msisdn, code, votes, dial_through, wrong_code_first, fault, approve }
}

/// `0241234567` for `233241234567`.
fn local_form(msisdn: &str) -> String {
    format!("0{}", &msisdn[3..])
}

/// The last `GHS x.yy` of a screen, in pesewas.
fn last_ghs(screen: &str) -> Option<i64> {
    let at = screen.rfind("GHS ")?;
    let num: String = screen[at + 4..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let (whole, frac) = num.split_once('.')?;
    Some(whole.parse::<i64>().ok()? * 100 + frac.get(..2)?.parse::<i64>().ok()?)
}

/// What the voters of one gateway record.
struct Tally {
    hist: Mutex<Histogram<u64>>,
    max_screen: AtomicUsize,
    long_screens: Mutex<Vec<String>>,
    errors: Mutex<Vec<String>>,
    /// msisdn → the totals (pesewas) and vote counts of the votes it confirmed.
    confirmed: Mutex<HashMap<String, Vec<(i64, u64)>>>,
    /// reference → (approved, votes, msisdn), as the handset settled it.
    settled: Mutex<HashMap<String, (bool, u64, String)>>,
    /// How many voters met each fault ([`FAULTS`]).
    exercised: [AtomicUsize; 6],
    /// The numbers that asked for the prompt again.
    resent: Mutex<Vec<String>>,
}

impl Tally {
    fn new() -> Arc<Tally> {
        Arc::new(Tally {
            hist: Mutex::new(Histogram::new_with_bounds(1, 600_000_000, 3).expect("histogram")),
            max_screen: AtomicUsize::new(0),
            long_screens: Mutex::new(Vec::new()),
            errors: Mutex::new(Vec::new()),
            confirmed: Mutex::new(HashMap::new()),
            settled: Mutex::new(HashMap::new()),
            exercised: Default::default(),
            resent: Mutex::new(Vec::new()),
        })
    }

    fn count(&self, fault: usize) {
        self.exercised[fault].fetch_add(1, Ordering::Relaxed);
    }

    fn resent(&self, msisdn: &str) {
        if let Ok(mut v) = self.resent.lock() {
            v.push(msisdn.to_string());
        }
    }

    fn error(&self, e: String) {
        if let Ok(mut v) = self.errors.lock() {
            v.push(e);
        }
    }

    fn screen(&self, screen: &str) {
        let n = screen.chars().count();
        self.max_screen.fetch_max(n, Ordering::Relaxed);
        if n > SCREEN_MAX {
            if let Ok(mut v) = self.long_screens.lock() {
                v.push(screen.to_string());
            }
        }
    }
}

/// A screen as the sandbox answered it.
struct Screen {
    id: String,
    text: String,
    ended: bool,
}

/// The handset side of one gateway: dials and replies through the sandbox, timed.
struct Handset {
    http: reqwest::Client,
    sandbox: String,
    gateway: String,
    account: String,
    token: String,
    tally: Arc<Tally>,
}

impl Handset {
    async fn post(&self, path: &str, body: Value) -> Result<Screen, String> {
        let started = Instant::now();
        let r = self.http.post(format!("{}{path}", self.sandbox)).json(&body).send().await;
        let took = started.elapsed();
        let r = r.map_err(|e| format!("{path}: {e}"))?;
        let status = r.status().as_u16();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        if status != 200 {
            return Err(format!("{path} {body}: {status} {v}"));
        }
        if let Ok(mut h) = self.tally.hist.lock() {
            let _ = h.record(u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1));
        }
        let text = v["screen"].as_str().unwrap_or_default().to_string();
        self.tally.screen(&text);
        Ok(Screen { id: v["sessionId"].as_str().unwrap_or_default().to_string(), text, ended: v["ended"] == true })
    }

    async fn dial(&self, msisdn: &str, dial: &str) -> Result<Screen, String> {
        let body = json!({"gateway": self.gateway, "account": self.account, "token": self.token, "msisdn": msisdn,
            "serviceCode": SERVICE_CODE, "dial": dial});
        self.post("/sandbox/ussd/dial", body).await
    }

    async fn reply(&self, session: &str, input: &str) -> Result<Screen, String> {
        self.post(&format!("/sandbox/ussd/sessions/{session}/reply"), json!({"input": input})).await
    }
}

/// The screen must contain `phrase` and end (or not) as said.
fn expect(step: &str, s: &Screen, phrase: &str, ended: bool) -> Result<(), String> {
    if s.text.contains(phrase) && s.ended == ended {
        Ok(())
    } else {
        Err(format!("{step}: expected {phrase:?} (ended {ended}), got {:?} (ended {})", s.text, s.ended))
    }
}

/// What a voter's session came to.
enum Outcome {
    /// Confirmed: the total (pesewas) the confirm screen showed.
    Confirmed(i64),
    Cancelled,
    /// The reply of this request was lost; the total of the confirm screen if it was seen.
    Lost(Option<i64>),
}

/// One session from the dial to its end (or the lost reply).
async fn session(h: &Handset, p: &Plan, lose: Option<usize>) -> Result<Outcome, String> {
    let dial = if p.dial_through { format!("*920*44*{}*{}#", p.code, p.votes) } else { SERVICE_CODE.to_string() };
    let mut n = 0usize;
    let s = h.dial(&p.msisdn, &dial).await?;
    if lose == Some(n) {
        return Ok(Outcome::Lost(None));
    }
    let mut s = if p.dial_through {
        s
    } else {
        expect("dial", &s, "nominee code", false)?;
        let id = s.id.clone();
        if p.wrong_code_first {
            n += 1;
            let w = h.reply(&id, "999").await?;
            if lose == Some(n) {
                return Ok(Outcome::Lost(None));
            }
            expect("wrong code", &w, "Unknown code", false)?;
        }
        n += 1;
        let c = h.reply(&id, &p.code).await?;
        if lose == Some(n) {
            return Ok(Outcome::Lost(None));
        }
        expect("code", &c, "How many votes", false)?;
        if !c.text.contains("GHS 2.00") {
            return Err(format!("count screen without the price GHS 2.00: {:?}", c.text));
        }
        n += 1;
        h.reply(&id, &p.votes.to_string()).await?
    };
    if lose == Some(n) {
        return Ok(Outcome::Lost(None));
    }
    expect("count", &s, "1. Confirm", false)?;
    let total = last_ghs(&s.text).ok_or_else(|| format!("confirm screen without a total: {:?}", s.text))?;
    n += 1;
    let id = s.id.clone();
    if p.fault == Fault::CancelAtConfirm {
        s = h.reply(&id, "2").await?;
        expect("cancel", &s, "Cancelled", true)?;
        return Ok(Outcome::Cancelled);
    }
    s = h.reply(&id, "1").await?;
    if lose == Some(n) {
        return Ok(Outcome::Lost(Some(total)));
    }
    expect("confirm", &s, &local_form(&p.msisdn), true)?;
    if last_ghs(&s.text) != Some(total) && !s.text.contains(&format!("GHS {}.{:02}", total / 100, total % 100)) {
        return Err(format!("confirmed screen without the total {total}: {:?}", s.text));
    }
    Ok(Outcome::Confirmed(total))
}

/// Dials again with a pending vote and asks for the prompt again.
async fn prompt_again(h: &Handset, p: &Plan) -> Result<(), String> {
    let s = h.dial(&p.msisdn, SERVICE_CODE).await?;
    expect("re-dial", &s, "pending vote", false)?;
    let s = h.reply(&s.id, "1").await?;
    expect("send again", &s, "prompt", true)
}

/// One voter: its session(s); returns the total and votes it confirmed, if it did.
async fn voter(h: &Handset, p: &Plan) -> Result<Option<(i64, u64)>, String> {
    if p.dial_through {
        h.tally.count(0);
    }
    if p.wrong_code_first {
        h.tally.count(1);
    }
    let lose = match p.fault {
        Fault::LostReply(n) => Some(n),
        _ => None,
    };
    match session(h, p, lose).await? {
        Outcome::Cancelled => {
            h.tally.count(5);
            Ok(None)
        }
        Outcome::Confirmed(total) => {
            if p.fault == Fault::RedialAfterConfirm {
                // The voter saw no prompt yet and dials again once the charge is made, so "send
                // again" makes a second charge call for the same reference.
                let deadline = Instant::now() + Duration::from_secs(60);
                while charges_of(&h.http, &h.sandbox, &p.msisdn).await?.is_empty() && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                prompt_again(h, p).await?;
                h.tally.count(4);
                h.tally.resent(&p.msisdn);
            }
            Ok(Some((total, p.votes)))
        }
        // The confirmation was sent and its answer lost: the vote stands and is pending.
        Outcome::Lost(Some(total)) => {
            prompt_again(h, p).await?;
            h.tally.count(3);
            h.tally.resent(&p.msisdn);
            Ok(Some((total, p.votes)))
        }
        Outcome::Lost(None) => {
            h.tally.count(2);
            let again = Plan { fault: Fault::None, ..p.clone() };
            match session(h, &again, None).await? {
                Outcome::Confirmed(total) => Ok(Some((total, p.votes))),
                _ => Err("the second session did not confirm".into()),
            }
        }
    }
}

/// The sandbox's charges for a number (matched on its last nine digits: the wire has
/// `0241234567` for Paystack, `+233241234567` for the gateway protocol).
async fn charges_of(http: &reqwest::Client, sandbox: &str, msisdn: &str) -> Result<Vec<Value>, String> {
    let url = format!("{sandbox}/sandbox/charges?phone={}", &msisdn[3..]);
    let r = http.get(&url).send().await.map_err(|e| format!("{url}: {e}"))?;
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    match v.as_array() {
        Some(a) if status == 200 => Ok(a.clone()),
        _ => Err(format!("{url}: {status} {v}")),
    }
}

/// The handset approves (or refuses) the prompt once the worker has made the charge.
async fn approve(http: reqwest::Client, sandbox: String, tally: Arc<Tally>, p: Plan, votes: u64, after: Duration) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut pause = Duration::from_millis(20);
    let reference = loop {
        match charges_of(&http, &sandbox, &p.msisdn).await {
            Ok(list) if !list.is_empty() => {
                break list[list.len() - 1]["reference"].as_str().unwrap_or_default().to_string();
            }
            Ok(_) => {}
            Err(e) => return tally.error(e),
        }
        if Instant::now() > deadline {
            return tally.error(format!("{}: no charge at the sandbox 120 s after confirming", p.msisdn));
        }
        // Backing off: a queue of slow charges must not turn into a flood of look-ups.
        tokio::time::sleep(pause).await;
        pause = (pause * 3 / 2).min(Duration::from_secs(1));
    };
    // A person reads the prompt before answering it.
    tokio::time::sleep(after).await;
    let action = if p.approve { "succeed" } else { "fail" };
    let url = format!("{sandbox}/sandbox/charges/{reference}/{action}");
    match http.post(&url).json(&json!({})).send().await {
        Ok(r) if r.status().is_success() => {
            if let Ok(mut s) = tally.settled.lock() {
                s.insert(reference, (p.approve, votes, p.msisdn.clone()));
            }
        }
        Ok(r) => tally.error(format!("{url}: {}", r.status())),
        Err(e) => tally.error(format!("{url}: {e}")),
    }
}

async fn call(client: &Client, method: Method, path: &str, body: Value) -> (u16, Value) {
    let bytes = if body.is_null() { Vec::new() } else { serde_json::to_vec(&body).unwrap_or_default() };
    match client.send_raw(method, path, bytes, None).await {
        Ok(r) => (r.status, r.json()),
        Err(e) => (0, json!({"error": e.to_string()})),
    }
}

/// Names of every length a ballot has, two past what a screen can show whole.
const NAMES: [&str; NOMINEES] = [
    "Ama Serwaa",
    "Kojo Antwi",
    "Efua Mensah",
    "Kwabena Owusu-Ansah",
    "Adwoa Pokuaa",
    "Yaw Boateng",
    "Akosua Agyapong",
    "Kofi Kinaata",
    "Abena Nyarko",
    "Nana Kwame Asante-Darko Oppong Jnr. of the Great Asante Highlife Band",
    "Esi Amankwah",
    "Kwaku Sarpong",
    "Afia Schwarzenegger Akoto Appiah-Kubi Danquah Mensah Ofori-Atta Boakye",
    "Fiifi Coleman",
    "Maame Dokono",
    "Kweku Flick",
    "Gyakie",
    "Black Sherif",
    "Sista Afia",
    "King Promise",
];

/// The campaign, its nominees and the `ussd` settings; returns (campaign id, callback token).
async fn setup(client: &Client, seed: u64) -> Result<(String, String), String> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?.as_secs();
    let (s, c) = call(
        client,
        Method::POST,
        "/api/white-label/v1/campaigns",
        json!({"title": format!("Ghana Music Awards, Artiste of the Year by phone {now}"),
            "description": "USSD bench campaign, running now.", "campaign_type": "voting", "vote_price": 2,
            "status": "approved", "start_date": "2026-01-01T00:00:00Z", "end_date": "2036-01-01T00:00:00Z"}),
    )
    .await;
    if s != 201 {
        return Err(format!("campaign: {s} {c}"));
    }
    let campaign = c["data"]["id"].as_str().unwrap_or_default().to_string();
    for (i, name) in NAMES.iter().enumerate() {
        let body = json!({"campaignId": campaign, "name": name, "code": format!("{}", 101 + i)});
        let (s, b) = call(client, Method::POST, "/api/white-label/v1/participants", body).await;
        if s != 201 {
            return Err(format!("participant {name}: {s} {b}"));
        }
    }
    let mut r = Rng::new(seed, 99, now as usize);
    let token: String =
        (0..24).map(|_| char::from(b"abcdefghijkmnpqrstuvwxyz23456789"[r.below(32) as usize])).collect();
    let body = json!({"config": {"enabled": true, "callbackToken": token, "serviceCode": SERVICE_CODE,
        "maxVotes": MAX_VOTES, "campaignId": campaign}});
    let (s, b) = call(client, Method::PATCH, "/api/white-label/v1/settings/ussd", body).await;
    if s != 200 {
        return Err(format!("ussd settings: {s} {b}"));
    }
    Ok((campaign, token))
}

/// The sum of the campaign's nominees' votes.
async fn credited(client: &Client, campaign: &str) -> Result<i64, String> {
    let mut sum = 0;
    let mut page = 1;
    loop {
        let path = format!("/api/white-label/v1/participants?campaignId={campaign}&limit=100&page={page}");
        let (s, b) = call(client, Method::GET, &path, Value::Null).await;
        let Some(items) = b["data"].as_array().filter(|_| s == 200) else {
            return Err(format!("participants: {s} {b}"));
        };
        sum += items.iter().map(|p| p["votes"].as_i64().unwrap_or(0)).sum::<i64>();
        if items.len() < 100 {
            return Ok(sum);
        }
        page += 1;
    }
}

async fn faults(http: &reqwest::Client, sandbox: &str, body: Value) -> Result<(), String> {
    let r = http.post(format!("{sandbox}/sandbox/faults")).json(&body).send().await.map_err(|e| e.to_string())?;
    if r.status().is_success() {
        Ok(())
    } else {
        Err(format!("faults {body}: {}", r.status()))
    }
}

/// One gateway's row and its violations.
struct Row {
    gateway: String,
    provider: String,
    voters: usize,
    confirmed: usize,
    charges: usize,
    succeeded: usize,
    credited: i64,
    expected: i64,
    doubles: usize,
    missing: usize,
    prompts: u64,
    max_screen: usize,
    p50: f64,
    p99: f64,
    max: f64,
    requests: u64,
    exercised: Vec<usize>,
    resent: usize,
    second_calls: usize,
    violations: Vec<String>,
}

async fn run_gateway(
    o: &Arc<Options>,
    http: &reqwest::Client,
    client: &Client,
    gi: usize,
    campaign: &str,
    token: &str,
) -> Result<Row, String> {
    let gateway = o.gateways[gi].clone();
    let g = GATEWAYS.iter().position(|x| *x == gateway).unwrap_or(gi);
    let provider = o.providers[gi % o.providers.len()].clone();
    let (s, b) =
        call(client, Method::PATCH, "/api/white-label/v1/settings/ussd", json!({"config": {"provider": provider}}))
            .await;
    if s != 200 {
        return Err(format!("ussd provider {provider}: {s} {b}"));
    }
    faults(http, &o.sandbox_url, json!({"webhookDropPercent": 10, "webhookDuplicatePercent": 10, "chargeDelayMs": 0}))
        .await?;
    let before = credited(client, campaign).await?;
    let tally = Tally::new();
    let handset = Arc::new(Handset {
        http: http.clone(),
        sandbox: o.sandbox_url.clone(),
        gateway: gateway.clone(),
        account: o.account.clone(),
        token: token.to_string(),
        tally: tally.clone(),
    });
    let next = Arc::new(AtomicUsize::new(0));
    let approvals = Arc::new(Mutex::new(Vec::new()));
    // The middle slow_percent of the voters (by start) run with slow charge calls.
    let slow_from = o.voters * (100 - o.slow_percent) / 200;
    let slow_to = slow_from + o.voters * o.slow_percent / 100;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..o.connections.min(o.voters) {
        let (o, h, next, approvals, http) = (o.clone(), handset.clone(), next.clone(), approvals.clone(), http.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= o.voters {
                    return;
                }
                if o.slow_percent > 0 && (i == slow_from || i == slow_to) {
                    let ms = if i == slow_from { o.slow_charge_ms } else { 0 };
                    if let Err(e) = faults(&http, &o.sandbox_url, json!({"chargeDelayMs": ms})).await {
                        h.tally.error(e);
                    }
                }
                let p = plan(o.seed, g, i);
                match voter(&h, &p).await {
                    Ok(Some((total, votes))) => {
                        if let Ok(mut c) = h.tally.confirmed.lock() {
                            c.entry(p.msisdn.clone()).or_default().push((total, votes));
                        }
                        let t = tokio::spawn(approve(
                            http.clone(),
                            o.sandbox_url.clone(),
                            h.tally.clone(),
                            p,
                            votes,
                            o.approve_after,
                        ));
                        if let Ok(mut a) = approvals.lock() {
                            a.push(t);
                        }
                    }
                    Ok(None) => {}
                    Err(e) => h.tally.error(format!("{} voter {i} ({}): {e}", h.gateway, p.msisdn)),
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let dialling = started.elapsed();
    faults(http, &o.sandbox_url, json!({"chargeDelayMs": 0})).await?;
    let pending: Vec<_> = approvals.lock().map(|mut a| std::mem::take(&mut *a)).unwrap_or_default();
    for t in pending {
        let _ = t.await;
    }
    eprintln!(
        "{gateway}: {} voters dialled in {:.1} s, prompts answered after {:.1} s; waiting for Tessera to settle",
        o.voters,
        dialling.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );

    let mut violations = Vec::new();
    // Tessera settles every answered charge (webhook, or the verify poll when it was dropped).
    let settled: HashMap<String, (bool, u64, String)> = tally.settled.lock().map(|s| s.clone()).unwrap_or_default();
    let mut waiting: Vec<&String> = settled.keys().collect();
    let deadline = Instant::now() + o.settle_timeout;
    while !waiting.is_empty() && Instant::now() < deadline {
        let mut still = Vec::new();
        for r in waiting {
            let (s, b) = call(client, Method::GET, &format!("/api/white-label/v1/payments/{r}"), Value::Null).await;
            let want = if settled[r].0 { "success" } else { "failed" };
            let status = b["data"]["status"].as_str().unwrap_or_default();
            if s == 200 && status == want {
                continue;
            }
            if s == 200 && status != "pending" {
                violations.push(format!("{r}: Tessera says {status}, the handset chose {want}"));
                continue;
            }
            still.push(r);
        }
        waiting = still;
        if !waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    if !waiting.is_empty() {
        violations.push(format!(
            "{} charges not settled in Tessera after {} s (e.g. {})",
            waiting.len(),
            o.settle_timeout.as_secs(),
            waiting[0]
        ));
    }
    eprintln!("{gateway}: settled after {:.1} s", started.elapsed().as_secs_f64());

    // Charges at the sandbox, number by number, against the votes each confirmed.
    let confirmed = tally.confirmed.lock().map(|c| c.clone()).unwrap_or_default();
    let (mut charges, mut doubles, mut missing, mut prompts) = (0usize, 0usize, 0usize, 0u64);
    let resent: std::collections::HashSet<String> =
        tally.resent.lock().map(|v| v.iter().cloned().collect()).unwrap_or_default();
    let mut second_calls = 0usize;
    for i in 0..o.voters {
        let p = plan(o.seed, g, i);
        let list = charges_of(http, &o.sandbox_url, &p.msisdn).await?;
        let want = confirmed.get(&p.msisdn).cloned().unwrap_or_default();
        charges += list.len();
        prompts += list.iter().map(|c| c["prompts"].as_u64().unwrap_or(0)).sum::<u64>();
        if resent.contains(&p.msisdn) && list.iter().any(|c| c["prompts"].as_u64().unwrap_or(0) >= 2) {
            second_calls += 1;
        }
        if list.len() > want.len() {
            doubles += list.len() - want.len();
            violations.push(format!("{}: {} charges for {} confirmed vote(s)", p.msisdn, list.len(), want.len()));
        } else if list.len() < want.len() {
            missing += want.len() - list.len();
            violations.push(format!("{}: {} charges for {} confirmed vote(s)", p.msisdn, list.len(), want.len()));
        }
        for c in &list {
            if c["channel"] != "mobile_money" {
                violations.push(format!("{}: a {} charge, not mobile_money", p.msisdn, c["channel"]));
            }
            let amount = c["amount"].as_i64().unwrap_or(-1);
            if !want.iter().any(|(total, _)| *total == amount) {
                violations.push(format!("{}: charged {amount} pesewas, the screens showed {want:?}", p.msisdn));
            }
        }
    }
    let succeeded = settled.values().filter(|(ok, _, _)| *ok).count();
    let expected: i64 = settled.values().filter(|(ok, _, _)| *ok).map(|(_, v, _)| *v as i64).sum();
    let after = credited(client, campaign).await?;
    let credited_votes = after - before;
    if credited_votes != expected {
        violations.push(format!("credited votes {credited_votes} != votes of succeeded charges {expected}"));
    }
    let max_screen = tally.max_screen.load(Ordering::Relaxed);
    if let Ok(long) = tally.long_screens.lock() {
        for s in long.iter().take(5) {
            violations.push(format!("screen of {} characters: {s:?}", s.chars().count()));
        }
        if long.len() > 5 {
            violations.push(format!("… {} screens over {SCREEN_MAX} characters in all", long.len()));
        }
    }
    if let Ok(errors) = tally.errors.lock() {
        for e in errors.iter().take(10) {
            violations.push(e.clone());
        }
        if errors.len() > 10 {
            violations.push(format!("… {} voter errors in all", errors.len()));
        }
    }
    let h = tally.hist.lock().map(|h| h.clone()).map_err(|_| "histogram".to_string())?;
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    Ok(Row {
        gateway,
        provider,
        voters: o.voters,
        confirmed: confirmed.values().map(Vec::len).sum(),
        charges,
        succeeded,
        credited: credited_votes,
        expected,
        doubles,
        missing,
        prompts,
        max_screen,
        p50: ms(0.5),
        p99: ms(0.99),
        max: h.max() as f64 / 1000.0,
        requests: h.len(),
        exercised: tally.exercised.iter().map(|n| n.load(Ordering::Relaxed)).collect(),
        resent: resent.len(),
        second_calls,
        violations,
    })
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
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(o.connections * 2)
            .timeout(Duration::from_secs(30))
            .build()
            .expect("http");
        let client = Client::with_http(http.clone(), &o.url, &o.key_id, &o.secret);
        let (campaign, token) = match setup(&client, o.seed).await {
            Ok(v) => v,
            Err(e) => {
                eprintln!("setup failed: {e}");
                return ExitCode::from(1);
            }
        };
        let mut rows = Vec::new();
        for gi in 0..o.gateways.len() {
            match run_gateway(&o, &http, &client, gi, &campaign, &token).await {
                Ok(row) => rows.push(row),
                Err(e) => {
                    eprintln!("{}: {e}", o.gateways[gi]);
                    return ExitCode::from(1);
                }
            }
        }
        let _ = faults(&http, &o.sandbox_url, json!({"webhookDropPercent": 0, "webhookDuplicatePercent": 0, "chargeDelayMs": 0})).await;
        println!(
            "| gateway | provider | voters | confirmed | charges | succeeded | credited votes | votes of succeeded charges | double charges | missing charges | prompts | max screen | requests | p50 ms | p99 ms | max ms |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        let mut bad = false;
        for r in &rows {
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} |",
                r.gateway,
                r.provider,
                r.voters,
                r.confirmed,
                r.charges,
                r.succeeded,
                r.credited,
                r.expected,
                r.doubles,
                r.missing,
                r.prompts,
                r.max_screen,
                r.requests,
                r.p50,
                r.p99,
                r.max
            );
        }
        println!("\n| gateway | {} | sent again: a second charge call made |", FAULTS.join(" | "));
        println!("|---|{}---|", "---|".repeat(FAULTS.len()));
        for r in &rows {
            let n: Vec<String> = r.exercised.iter().map(usize::to_string).collect();
            println!("| {} | {} | {} of {} |", r.gateway, n.join(" | "), r.second_calls, r.resent);
        }
        for r in &rows {
            if r.p99 >= o.p99_limit_ms {
                eprintln!("{}: USSD reply p99 {:.2} ms is not under {} ms", r.gateway, r.p99, o.p99_limit_ms);
                bad = true;
            }
            for v in &r.violations {
                eprintln!("{}: VIOLATION {v}", r.gateway);
                bad = true;
            }
        }
        if bad {
            ExitCode::from(1)
        } else {
            println!("\nall checks passed: credited votes = votes of succeeded charges, 0 double charges, every screen <= {SCREEN_MAX} characters, USSD reply p99 < {} ms", o.p99_limit_ms);
            ExitCode::SUCCESS
        }
    })
}

//! Crash safety of money (D6.2, D16.8, D16.13): `tessera serve` as a real process, SIGKILLed
//! after a webhook was handed off (stored and answered 200) and before it was reconciled, or
//! after the payout worker's transfer call and before its result was recorded, or after a USSD
//! vote's mobile-money charge call reached the provider and before its answer came back. After a
//! restart the charge is fulfilled exactly once, the withdrawal paid exactly once, the vote charged
//! once and credited once, and the money audit is clean.
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_client::{Client, Method};
use tessera_server::sandbox::{Sandbox, SandboxOptions};

use crate::helpers::Backend;

pub(crate) struct Server {
    pub(crate) dir: std::path::PathBuf,
    pub(crate) db: Option<String>,
    provider_url: String,
}

impl Server {
    pub(crate) fn cmd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
        cmd.arg("--data-dir").arg(&self.dir).env_remove("DATABASE_URL").env_remove("TESSERA_MASTER_KEY");
        if let Some(url) = &self.db {
            cmd.arg("--database-url").arg(url);
        }
        cmd
    }

    pub(crate) fn admin(&self, args: &[&str]) -> Value {
        let out = self.cmd().arg("admin").args(args).arg("--json").output().expect("run tessera");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("json")
    }

    /// `tessera admin ledger check --json` exits 0 and reports ok.
    pub(crate) fn assert_ledger_clean(&self) {
        let audit = self.cmd().args(["admin", "ledger", "check", "--json"]).output().expect("ledger check");
        let report: Value = serde_json::from_slice(&audit.stdout).unwrap_or(Value::Null);
        assert!(audit.status.success(), "{report}");
        assert_eq!(report["ok"], true, "{report}");
    }

    /// Starts `tessera serve` on `addr`, with or without its workers, and waits until it listens.
    pub(crate) fn start(&self, addr: &str, workers: bool) -> Child {
        self.start_with(addr, workers, &[])
    }

    /// `start` with extra environment.
    pub(crate) fn start_with(&self, addr: &str, workers: bool, env: &[(&str, &str)]) -> Child {
        let mut child = self
            .cmd()
            .args(["serve", "--listen", addr])
            .envs(env.iter().copied())
            .env("TESSERA_LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            .env("TESSERA_PROVIDER_A_BASE_URL", &self.provider_url)
            .env("TESSERA_PROVIDER_A_SECRET_KEY", "sk_test_crash")
            .env("TESSERA_RATE_LIMIT_PER_ACCOUNT", "0")
            .env("TESSERA_RATE_LIMIT_PER_IP", "0")
            .env("TESSERA_WORKERS_ENABLED", if workers { "1" } else { "0" })
            .env("TESSERA_WORKER_POLL_MS", "20")
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let line = lines.next().expect("server log line").expect("utf8");
            if line.contains("tessera listening") {
                break;
            }
            assert!(Instant::now() < deadline, "server did not start");
        }
        // Keep reading the log so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        child
    }
}

/// What each SIGKILL test starts from: a server on its own data (and PostgreSQL schema), the
/// sandbox it pays through and that calls it back, and an account with one private key.
pub(crate) struct Rig {
    _dir: tempfile::TempDir,
    pub(crate) sandbox: tessera_server::sandbox::SandboxHandle,
    pub(crate) server: Server,
    /// A config whose claims of a killed worker are redone after 1 s instead of 30.
    fast_lease: String,
    pub(crate) addr: String,
    pub(crate) base: String,
    pub(crate) client: Client,
}

impl Rig {
    pub(crate) async fn start(b: &Backend, slug: &str, name: &str, scopes: &str, capability: Option<&str>) -> Rig {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = match b {
            Backend::Sqlite => None,
            Backend::Postgres(_) => Some(crate::helpers::postgres_schema_url(b).await),
        };
        let sandbox = Sandbox::start(SandboxOptions {
            listen: "127.0.0.1:0".parse().expect("addr"),
            smtp_listen: None,
            notify_url: None,
        })
        .await
        .expect("sandbox");
        let server = Server { dir: dir.path().to_path_buf(), db, provider_url: sandbox.provider_url("provider_a") };
        let fast_lease = dir.path().join("fast-lease.toml");
        std::fs::write(&fast_lease, "[workers]\nlease_seconds = 1\n").expect("config");
        server.admin(&["account", "create", "--slug", slug, "--name", name]);
        let mut args = vec!["key", "create", "--account", slug, "--kind", "private", "--scopes", scopes];
        if let Some(c) = capability {
            args.extend(["--capability", c]);
        }
        let key = server.admin(&args);
        let addr = free_addr();
        let base = format!("http://{addr}");
        sandbox.set_notify_url(base.clone());
        let client = Client::new(&base, key["keyId"].as_str().expect("keyId"), key["secret"].as_str().expect("secret"))
            .expect("client");
        let fast_lease = fast_lease.to_string_lossy().to_string();
        Rig { _dir: dir, sandbox, server, fast_lease, addr, base, client }
    }

    /// The environment of a server whose killed claims come back after 1 s and whose pending
    /// charges are first verified after 50 ms.
    pub(crate) fn fast_claims(&self) -> [(&str, &str); 2] {
        [("TESSERA_CONFIG", self.fast_lease.as_str()), ("TESSERA_PAYMENT_VERIFY_INTERVAL_SECONDS", "0.05")]
    }
}

/// Settles a charge or a transfer as paid at the sandbox's control API (`body`: its options,
/// such as `{"deliver": false}`).
pub(crate) async fn succeed(
    sandbox: &tessera_server::sandbox::SandboxHandle,
    what: &str,
    reference: &str,
    body: Value,
) {
    let r = reqwest::Client::new()
        .post(format!("{}/sandbox/{what}/{reference}/succeed", sandbox.base_url()))
        .json(&body)
        .send()
        .await
        .expect("sandbox");
    assert_eq!(r.status().as_u16(), 200);
}

fn free_addr() -> String {
    let port = TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
    format!("127.0.0.1:{port}")
}

pub(crate) async fn call(client: &Client, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let bytes = body.map(|b| serde_json::to_vec(&b).expect("json")).unwrap_or_default();
    let r = client.send_raw(method, path, bytes, None).await.expect("send");
    (r.status, r.json())
}

/// A running ticketing campaign with a 30 GHS ticket type, and a pending purchase of three
/// seats: returns its reference.
pub(crate) async fn buy_three_seats(client: &Client, title: &str, email: &str) -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = |t: time::OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).expect("rfc3339");
    let (s, c) = call(
        client,
        Method::POST,
        "/api/white-label/v1/campaigns",
        Some(json!({"title": title, "description": "Money must survive a kill -9.", "campaign_type": "ticketing",
            "status": "approved", "start_date": fmt(now - time::Duration::days(1)), "end_date": fmt(now + time::Duration::days(9))})),
    )
    .await;
    assert_eq!(s, 201, "{c}");
    let campaign = c["data"]["id"].as_str().expect("id").to_string();
    let (s, t) = call(
        client,
        Method::POST,
        "/api/white-label/v1/ticket-types",
        Some(json!({"campaignId": campaign, "name": "Floor", "price": 30, "quantity_available": 10})),
    )
    .await;
    assert_eq!(s, 201, "{t}");
    let ticket = t["data"]["id"].as_str().expect("id").to_string();
    let (s, init) = call(
        client,
        Method::POST,
        "/api/white-label/v1/payments/initialize",
        Some(json!({"campaign_id": campaign, "ticket_id": ticket, "email": email, "quantity": 3})),
    )
    .await;
    assert_eq!(s, 200, "{init}");
    init["data"]["reference"].as_str().expect("reference").to_string()
}

async fn a_sigkill_between_hand_off_and_reconciliation_loses_nothing_and_pays_once(b: Backend) {
    let rig =
        Rig::start(&b, "crash", "Crash Test", "campaigns:write,tickets:write,payments:write,withdrawals:write", None)
            .await;
    let Rig { sandbox, server, addr, client, .. } = &rig;

    // First life: no workers, so a stored webhook cannot be reconciled before the kill.
    let mut first = server.start(addr, false);
    let reference = buy_three_seats(client, "Crash Night", "crash@example.com").await;

    // The provider confirms; the webhook is stored and answered 200 (the hand-off) ...
    succeed(sandbox, "charges", &reference, json!({})).await;
    let delivered = sandbox.webhooks();
    assert_eq!(delivered[0]["status"], 200, "the hand-off was acknowledged: {delivered:?}");
    // ... and the server dies before any worker looked at it.
    first.kill().expect("SIGKILL");
    first.wait().expect("reaped");
    let audit = server.cmd().args(["admin", "ledger", "check", "--json"]).output().expect("ledger check");
    assert!(audit.status.success(), "nothing is credited yet, and nothing is wrong");

    // Second life, with workers: the stored event is reconciled and the charge fulfilled once.
    let mut second = server.start(addr, true);
    let deadline = Instant::now() + Duration::from_secs(30);
    let paid = loop {
        let (s, p) = call(client, Method::GET, &format!("/api/white-label/v1/payments/{reference}"), None).await;
        assert_eq!(s, 200, "{p}");
        if p["data"]["status"] == "success" {
            break p["data"].clone();
        }
        assert!(Instant::now() < deadline, "not fulfilled after restart: {p}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(paid["tickets"].as_array().map(Vec::len), Some(3), "{paid}");
    // Let the workers run on a little: nothing more happens.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, again) = call(client, Method::GET, &format!("/api/white-label/v1/payments/{reference}"), None).await;
    assert_eq!(again["data"]["tickets"].as_array().map(Vec::len), Some(3));
    let (_, ledger) = call(client, Method::GET, "/api/white-label/v1/ledger", None).await;
    assert_eq!(ledger["pagination"]["total"], 1, "one charge entry: {ledger}");
    assert_eq!(ledger["data"][0]["amount"], json!(90));
    second.kill().expect("stop");
    second.wait().expect("reaped");
    server.assert_ledger_clean();
}

async fn the_money_audit_fails_on_a_ledger_that_does_not_add_up(b: Backend) {
    let p = crate::payments::spawn_paid(b).await;
    let c = crate::payments::running_campaign(&p, &p.account.private, "ticketing").await;
    let t = crate::payments::ticket_type(&p, &p.account.private, &c, 10.0, 5).await;
    let reference = crate::payments::buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    crate::payments::sandbox_settle(&p, &reference, "succeed", json!({})).await;
    crate::payments::drain(&p).await;
    crate::payments::assert_ledger_clean(&p);
    // A credit written behind the ledger's back: the audit names it and exits 1.
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&p.database_url).await.expect("connect");
    sqlx::query(
        "INSERT INTO ledger_entries (id, account_id, kind, amount, reference, settles_at, created_at) \
         VALUES ('forged', $1, 'charge', 500, 'tsr_forged', 0, 0)",
    )
    .bind(&p.account.id)
    .execute(&mut conn)
    .await
    .expect("forge");
    let out = p.cli(&["admin", "ledger", "check", "--account", &p.account.slug, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["ok"], false);
    let checks: Vec<&str> =
        report["discrepancies"].as_array().expect("list").iter().filter_map(|d| d["check"].as_str()).collect();
    assert!(checks.contains(&"charges_equal_confirmed_amounts"), "{report}");
    assert!(checks.contains(&"no_entry_without_confirmed_charge"), "{report}");
}

async fn a_sigkill_between_the_transfer_call_and_its_result_pays_withdrawals_once(b: Backend) {
    let rig = Rig::start(
        &b,
        "payout",
        "Payout Crash",
        "campaigns:write,tickets:write,payments:write,withdrawals:write",
        Some("withdrawals"),
    )
    .await;
    let env = rig.fast_claims();
    let Rig { sandbox, server, addr, client, .. } = &rig;

    // First life, no workers: money comes in (confirmed through payments/verify) and a
    // withdrawal is created with its hold and payout job.
    let mut first = server.start_with(addr, false, &env);
    let reference = buy_three_seats(client, "Payout Night", "payout@example.com").await;
    succeed(sandbox, "charges", &reference, json!({"deliver": false})).await;
    let (s, paid) =
        call(client, Method::POST, "/api/white-label/v1/payments/verify", Some(json!({"reference": reference}))).await;
    assert_eq!((s, paid["data"]["status"].as_str()), (200, Some("success")), "{paid}");
    let mut h = reqwest::header::HeaderMap::new();
    h.insert("x-idempotency-key", reqwest::header::HeaderValue::from_static("crash-payout-1"));
    let body = json!({"amount": 50, "bank_name": "GCB Bank", "bank_code": "GCB", "account_number": "1234567890",
        "account_name": "Kofi Boateng"});
    let r = client
        .send_raw(Method::POST, "/api/white-label/v1/withdrawals", serde_json::to_vec(&body).expect("json"), Some(h))
        .await
        .expect("send");
    assert_eq!(r.status, 201, "{}", r.json());
    let id = r.json()["data"]["id"].as_str().expect("id").to_string();
    first.kill().expect("SIGKILL");
    first.wait().expect("reaped");

    // Second life, with workers: killed the moment the sandbox holds the transfer, before (or
    // at best just as) the server records what the provider answered.
    let mut second = server.start_with(addr, true, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    while sandbox.transfer(&id).is_none() {
        assert!(Instant::now() < deadline, "the payout worker never created the transfer");
        std::thread::sleep(Duration::from_micros(200));
    }
    second.kill().expect("SIGKILL");
    second.wait().expect("reaped");
    let audit = server.cmd().args(["admin", "ledger", "check", "--json"]).output().expect("ledger check");
    assert!(
        audit.status.success(),
        "held, nothing else, and nothing wrong: {}",
        String::from_utf8_lossy(&audit.stdout)
    );

    // The provider pays it while the server is down (no webhook reaches anyone).
    succeed(sandbox, "transfers", &id, json!({"deliver": false})).await;

    // Third life: the worker adopts the one transfer (never creates another) and follows it to
    // the sandbox's state.
    let mut third = server.start_with(addr, true, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let (s, w) = call(client, Method::GET, &format!("/api/white-label/v1/withdrawals/{id}"), None).await;
        assert_eq!(s, 200, "{w}");
        if w["data"]["status"] == "completed" {
            break w["data"].clone();
        }
        assert!(Instant::now() < deadline, "not completed after restart: {w}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["amount"], json!(50));
    let transfer = sandbox.transfer(&id).expect("the one transfer");
    assert_eq!((transfer["amount"].as_i64(), transfer["status"].as_str()), (Some(5000), Some("success")));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, ledger) = call(client, Method::GET, "/api/white-label/v1/ledger", None).await;
    let mut kinds: Vec<(String, f64)> = ledger["data"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["reference"] == id.as_str())
        .map(|e| (e["kind"].as_str().unwrap_or_default().to_string(), e["amount"].as_f64().unwrap_or_default()))
        .collect();
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        kinds,
        vec![
            ("withdrawal_debit".to_string(), -50.0),
            ("withdrawal_hold".to_string(), -50.0),
            ("withdrawal_release".to_string(), 50.0)
        ],
        "{ledger}"
    );
    let (_, balance) = call(client, Method::GET, "/api/white-label/v1/balance", None).await;
    assert_eq!(balance["data"]["available"], json!(40), "{balance}");
    third.kill().expect("stop");
    third.wait().expect("reaped");
    server.assert_ledger_clean();
}

/// One gateway request in Africa's Talking's wire; the screen with its `CON `/`END `.
async fn at_request(base: &str, text: &str) -> String {
    let form =
        format!("sessionId=crash-1&serviceCode=*920*44%23&phoneNumber=233241234567&networkCode=62001&text={text}");
    let r = reqwest::Client::new()
        .post(format!("{base}/api/white-label/ussd/africastalking/dial?token=crash-ussd-callback-token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("ussd");
    assert_eq!(r.status().as_u16(), 200);
    r.text().await.expect("text")
}

async fn a_sigkill_between_the_mobile_money_charge_call_and_its_result_charges_once(b: Backend) {
    let rig = Rig::start(
        &b,
        "dial",
        "Dial Crash",
        "campaigns:read,campaigns:write,settings:write,payments:write,tickets:read",
        None,
    )
    .await;
    let env = rig.fast_claims();
    let Rig { sandbox, server, addr, base, client, .. } = &rig;

    // First life, no workers: a voting campaign, a nominee, USSD on, and a fan confirms 4 votes.
    let mut first = server.start_with(addr, false, &env);
    let now = time::OffsetDateTime::now_utc();
    let fmt = |t: time::OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).expect("rfc3339");
    let (s, c) = call(
        client,
        Method::POST,
        "/api/white-label/v1/campaigns",
        Some(
            json!({"title": "Crash Awards", "description": "Votes must survive a kill -9.", "campaign_type": "voting",
            "vote_price": 2, "status": "approved", "start_date": fmt(now - time::Duration::days(1)),
            "end_date": fmt(now + time::Duration::days(9))}),
        ),
    )
    .await;
    assert_eq!(s, 201, "{c}");
    let campaign = c["data"]["id"].as_str().expect("id").to_string();
    let (s, p) = call(
        client,
        Method::POST,
        "/api/white-label/v1/participants",
        Some(json!({"campaignId": campaign, "name": "Ama Serwaa", "code": "AMA"})),
    )
    .await;
    assert_eq!(s, 201, "{p}");
    let ussd =
        json!({"config": {"enabled": true, "callbackToken": "crash-ussd-callback-token", "serviceCode": "*920*44#"}});
    let (s, u) = call(client, Method::PATCH, "/api/white-label/v1/settings/ussd", Some(ussd)).await;
    assert_eq!(s, 200, "{u}");
    at_request(base, "").await;
    let end = at_request(base, "AMA*4*1").await;
    assert!(end.starts_with("END Approve GHS 8.00 on 0241234567"), "{end}");
    first.kill().expect("SIGKILL");
    first.wait().expect("reaped");

    // Second life, with workers: the charge call reaches the sandbox, which answers 5 s late;
    // killed while the answer is on its way.
    sandbox.set_faults(tessera_server::sandbox::Faults { charge_delay_ms: 5_000, ..Default::default() });
    let mut second = server.start_with(addr, true, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    let reference = loop {
        if let Some(c) = sandbox.charges_for_phone("0241234567").first() {
            break c["reference"].as_str().expect("reference").to_string();
        }
        assert!(Instant::now() < deadline, "the charge worker never called the provider");
        std::thread::sleep(Duration::from_millis(5));
    };
    second.kill().expect("SIGKILL");
    second.wait().expect("reaped");
    sandbox.set_faults(tessera_server::sandbox::Faults::default());

    // Third life: the claim is redone after its lease; the provider refuses the reference it
    // already has, so the charge stands and no second one is made. The handset approves it.
    let mut third = server.start_with(addr, true, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    while sandbox.charge(&reference).is_some_and(|c| c["prompts"] == 1) {
        assert!(Instant::now() < deadline, "the killed claim was never redone");
        std::thread::sleep(Duration::from_millis(20));
    }
    succeed(sandbox, "charges", &reference, json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (s, pay) = call(client, Method::GET, &format!("/api/white-label/v1/payments/{reference}"), None).await;
        assert_eq!(s, 200, "{pay}");
        if pay["data"]["status"] == "success" {
            break;
        }
        assert!(Instant::now() < deadline, "never credited: {pay}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let charges = sandbox.charges_for_phone("0241234567");
    assert_eq!(charges.len(), 1, "one charge at the provider: {charges:?}");
    assert_eq!(charges[0]["channel"], "mobile_money");
    assert_eq!(charges[0]["amount"], 800);
    let (_, list) =
        call(client, Method::GET, &format!("/api/white-label/v1/participants?campaignId={campaign}"), None).await;
    assert_eq!(list["data"][0]["votes"], 4, "credited once: {list}");
    third.kill().expect("stop");
    third.wait().expect("reaped");
    server.assert_ledger_clean();
}

on_both!(
    a_sigkill_between_the_mobile_money_charge_call_and_its_result_charges_once,
    a_sigkill_between_the_transfer_call_and_its_result_pays_withdrawals_once,
    a_sigkill_between_hand_off_and_reconciliation_loses_nothing_and_pays_once,
    the_money_audit_fails_on_a_ledger_that_does_not_add_up,
);

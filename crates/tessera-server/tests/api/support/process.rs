//! `tessera serve` as a real process on its own data, for the tests that SIGKILL it.
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_client::{Client, Method};
use tessera_server::sandbox::{Sandbox, SandboxOptions};

use super::server::{postgres_schema_url, Backend};

pub struct Server {
    pub dir: std::path::PathBuf,
    pub db: Option<String>,
    provider_url: String,
}

impl Server {
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
        cmd.arg("--data-dir").arg(&self.dir).env_remove("DATABASE_URL").env_remove("TESSERA_MASTER_KEY");
        if let Some(url) = &self.db {
            cmd.arg("--database-url").arg(url);
        }
        cmd
    }

    pub fn admin(&self, args: &[&str]) -> Value {
        let out = self.cmd().arg("admin").args(args).arg("--json").output().expect("run tessera");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("json")
    }

    /// `tessera admin ledger check --json` exits 0 and reports ok.
    pub fn assert_ledger_clean(&self) {
        let audit = self.cmd().args(["admin", "ledger", "check", "--json"]).output().expect("ledger check");
        let report: Value = serde_json::from_slice(&audit.stdout).unwrap_or(Value::Null);
        assert!(audit.status.success(), "{report}");
        assert_eq!(report["ok"], true, "{report}");
    }

    /// Starts `tessera serve` on `addr`, with or without its workers, and waits until it listens.
    pub fn start(&self, addr: &str, workers: bool) -> Child {
        self.start_with(addr, workers, &[])
    }

    /// `start` with extra environment.
    pub fn start_with(&self, addr: &str, workers: bool, env: &[(&str, &str)]) -> Child {
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
pub struct Rig {
    _dir: tempfile::TempDir,
    pub sandbox: tessera_server::sandbox::SandboxHandle,
    pub server: Server,
    /// A config whose claims of a killed worker are redone after 1 s instead of 30.
    fast_lease: String,
    pub addr: String,
    pub base: String,
    pub client: Client,
}

impl Rig {
    pub async fn start(b: &Backend, slug: &str, name: &str, scopes: &str, capability: Option<&str>) -> Rig {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = match b {
            Backend::Sqlite => None,
            Backend::Postgres(_) => Some(postgres_schema_url(b).await),
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
    pub fn fast_claims(&self) -> [(&str, &str); 2] {
        [("TESSERA_CONFIG", self.fast_lease.as_str()), ("TESSERA_PAYMENT_VERIFY_INTERVAL_SECONDS", "0.05")]
    }
}

/// Settles a charge or a transfer as paid at the sandbox's control API (`body`: its options,
/// such as `{"deliver": false}`).
pub async fn succeed(sandbox: &tessera_server::sandbox::SandboxHandle, what: &str, reference: &str, body: Value) {
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

pub async fn call(client: &Client, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let bytes = body.map(|b| serde_json::to_vec(&b).expect("json")).unwrap_or_default();
    let r = client.send_raw(method, path, bytes, None).await.expect("send");
    (r.status, r.json())
}

/// Creates `body` at `path` (201 expected); the new item's id.
pub async fn created_id(client: &Client, path: &str, body: Value) -> String {
    let (s, v) = call(client, Method::POST, path, Some(body)).await;
    assert_eq!(s, 201, "{v}");
    v["data"]["id"].as_str().expect("id").to_string()
}

/// A running ticketing campaign with a 30 GHS ticket type, and a pending purchase of three
/// seats: returns its reference.
pub async fn buy_three_seats(client: &Client, title: &str, email: &str) -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = |t: time::OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).expect("rfc3339");
    let campaign = created_id(
        client,
        "/api/white-label/v1/campaigns",
        json!({"title": title, "description": "Money must survive a kill -9.", "campaign_type": "ticketing",
            "status": "approved", "start_date": fmt(now - time::Duration::days(1)), "end_date": fmt(now + time::Duration::days(9))}),
    )
    .await;
    let ticket = created_id(
        client,
        "/api/white-label/v1/ticket-types",
        json!({"campaignId": campaign, "name": "Floor", "price": 30, "quantity_available": 10}),
    )
    .await;
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

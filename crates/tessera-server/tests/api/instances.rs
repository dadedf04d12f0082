//! Several instances (issue 23): the start guards (D17.3, D17.39), `--no-workers` (D17.4) and
//! live changes across instances (D17.5), through real servers: `tessera serve` processes and
//! in-process instances, on SQLite and PostgreSQL.
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_client::{Client, Method};
use tessera_server::app::Application;
use tessera_server::config::{Config, Overrides, StartRefused};
use tessera_server::store::live::{LiveEvent, LiveKind};

use crate::support::catalogue::{participant, running_campaign};
use crate::support::client::StatusCode;
use crate::support::payments::{sandbox_settle, spawn_paid, start_sandbox, INITIALIZE};
use crate::support::server::{drain, postgres_schema_url, spawn, spawn_second, spawn_with, Backend, TestApp};
use crate::support::tickets::{code_of, issued, VERIFY};

const REDIS: &str = "redis://127.0.0.1:6379";

/// A Redis key prefix of this test's own: the Redis on 127.0.0.1 is shared.
fn redis_prefix() -> String {
    format!("tessera:test-inst-{}-{}:", std::process::id(), tessera_server::domain::new_id())
}

/// Instances of one PostgreSQL schema share their replay store through Redis (D17.3).
fn with_redis(c: &mut Config) {
    c.redis.url = REDIS.to_string().into();
    c.redis.key_prefix = redis_prefix();
}

/// The real binary on `dir` and `db` (PostgreSQL URL, or SQLite in `dir`).
fn tessera(dir: &Path, db: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.arg("--data-dir").arg(dir).env_remove("DATABASE_URL").env_remove("TESSERA_MASTER_KEY").env_remove("REDIS_URL");
    if !db.is_empty() {
        cmd.arg("--database-url").arg(db);
    }
    cmd
}

/// `tessera serve` that must be refused: its exit code and stderr. Fails if it is still
/// running after 30 s (it started beside the other instance).
fn refused_serve(dir: &Path, db: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut child = tessera(dir, db)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("a second `tessera serve` on the same data was not refused");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
}

/// `tessera serve` on `addr`, waiting for its listening line; returns the log lines up to it.
fn serve(dir: &Path, db: &str, addr: &str, args: &[&str], env: &[(&str, &str)]) -> (Child, Vec<String>) {
    let mut child = tessera(dir, db)
        .args(["serve", "--listen", addr])
        .args(args)
        .envs(env.iter().copied())
        .env("TESSERA_LOG_FORMAT", "json")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    loop {
        let line = lines.next().expect("server log line").expect("utf8");
        seen.push(line.clone());
        if line.contains("tessera listening") {
            break;
        }
        assert!(Instant::now() < deadline, "server did not start: {seen:?}");
    }
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, seen)
}

fn free_addr() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    format!("127.0.0.1:{port}")
}

// ---------------------------------------------------------------------------------------------
// The start guards (D17.3, D17.39)

async fn a_second_serve_on_the_same_data_exits_2_and_the_operator_cli_still_runs(b: Backend) {
    let app = spawn(b.clone()).await;
    let (code, stderr) = refused_serve(&app.config.data_dir, &app.config.database_url, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    match b {
        Backend::Sqlite => {
            assert!(stderr.contains(&app.config.data_dir.display().to_string()), "names the data dir: {stderr}");
            // Redis does not make SQLite shareable: still one process per data dir.
            let (code, stderr) = refused_serve(&app.config.data_dir, "", &[("REDIS_URL", REDIS)]);
            assert_eq!(code, Some(2), "{stderr}");
        }
        Backend::Postgres(_) => assert!(stderr.contains("REDIS_URL"), "names REDIS_URL: {stderr}"),
    }
    // The refused process never listened, and the operator CLI needs no guard (D17.3).
    let out = app.cli(&["admin", "account", "list", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (s, _) = app.signed(Method::GET, "/api/white-label/v1/campaigns", None).await;
    assert_eq!(s, 200, "the first instance still serves");
}

async fn a_stopped_server_gives_its_guard_back_to_the_next_one(b: Backend) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = Config::load(&Overrides::default()).expect("config");
    config.data_dir = dir.path().to_path_buf();
    config.listen = "127.0.0.1:0".parse().expect("addr");
    config.master_key = None;
    config.database_url = postgres_schema_url(&b).await;
    let first = Application::build(config.clone()).await.expect("first instance");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(first.run_until_stopped(async move {
        let _ = stopped.await;
    }));
    // In process too: building a second instance on the same data is refused (exit 2's error).
    let refused = Application::build(config.clone()).await.err().expect("a second instance is refused");
    assert!(refused.chain().any(|c| c.is::<StartRefused>()), "{refused:#}");
    stop.send(()).expect("stop");
    running.await.expect("join").expect("served");
    let next = Application::build(config).await.expect("the guard was given back when serving stopped");
    drop(next);
}

// ---------------------------------------------------------------------------------------------
// --no-workers (D17.4)

/// `tessera serve --no-workers` serves the API and its startup log says workers are off; a
/// paid charge's stored callback waits until an instance with workers runs it (on PostgreSQL a
/// second instance beside it, with Redis; on SQLite, one process per data dir, the next one).
async fn no_workers_serves_the_api_and_leaves_the_jobs_to_an_instance_with_workers(b: Backend) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = postgres_schema_url(&b).await;
    let sandbox = start_sandbox().await;
    let admin = |args: &[&str]| -> Value {
        let out = tessera(dir.path(), &db).arg("admin").args(args).arg("--json").output().expect("admin");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("json")
    };
    admin(&["account", "create", "--slug", "inst", "--name", "Instances"]);
    let key = admin(&[
        "key",
        "create",
        "--account",
        "inst",
        "--kind",
        "private",
        "--scopes",
        "campaigns:write,tickets:write,payments:write",
    ]);
    let prefix = redis_prefix();
    let provider = sandbox.provider_url("provider_a");
    let mut env = vec![
        ("TESSERA_PROVIDER_A_BASE_URL", provider.as_str()),
        ("TESSERA_PROVIDER_A_SECRET_KEY", "sk_test_inst"),
        ("TESSERA_RATE_LIMIT_PER_ACCOUNT", "0"),
        ("TESSERA_RATE_LIMIT_PER_IP", "0"),
        ("TESSERA_WORKER_POLL_MS", "20"),
    ];
    if matches!(b, Backend::Postgres(_)) {
        env.extend([("REDIS_URL", REDIS), ("TESSERA_REDIS_KEY_PREFIX", prefix.as_str())]);
    }
    let addr = free_addr();
    let (mut api_only, log) = serve(dir.path(), &db, &addr, &["--no-workers"], &env);
    let ready = log.iter().find(|l| l.contains("instance ready")).expect("an `instance ready` line");
    assert!(ready.contains(r#""workers":"off""#), "{ready}");
    sandbox.set_notify_url(format!("http://{addr}"));
    let client = Client::new(
        &format!("http://{addr}"),
        key["keyId"].as_str().expect("id"),
        key["secret"].as_str().expect("secret"),
    )
    .expect("client");
    let reference = pending_purchase(&client).await;
    let r = reqwest::Client::new()
        .post(format!("{}/sandbox/charges/{reference}/succeed", sandbox.base_url()))
        .json(&json!({}))
        .send()
        .await
        .expect("sandbox");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(sandbox.callbacks()[0]["status"], 200, "the callback was stored: {:?}", sandbox.callbacks());
    // Nothing to poll for when nothing may happen: 50 worker polls' time with the job due.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(status_of(&client, &reference).await["status"], "pending", "no instance ran the job");

    let second_addr = free_addr();
    if matches!(b, Backend::Sqlite) {
        api_only.kill().expect("stop");
        api_only.wait().expect("reaped");
    }
    let (mut workers, log) = serve(dir.path(), &db, &second_addr, &[], &env);
    let ready = log.iter().find(|l| l.contains("instance ready")).expect("an `instance ready` line");
    assert!(ready.contains(r#""workers":"on""#), "{ready}");
    // Read through the API-only instance while it still serves (PostgreSQL), else the new one.
    let reader = match b {
        Backend::Sqlite => Client::new(
            &format!("http://{second_addr}"),
            key["keyId"].as_str().expect("id"),
            key["secret"].as_str().expect("secret"),
        )
        .expect("client"),
        Backend::Postgres(_) => client,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let p = status_of(&reader, &reference).await;
        if p["status"] == "success" {
            assert_eq!(p["tickets"].as_array().map(Vec::len), Some(1), "{p}");
            break;
        }
        assert!(Instant::now() < deadline, "the instance with workers did not run the job: {p}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = api_only.kill();
    let _ = api_only.wait();
    workers.kill().expect("stop");
    workers.wait().expect("reaped");
}

/// A running campaign with a 30 GHS ticket type and a pending purchase of one seat.
async fn pending_purchase(client: &Client) -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = |t: time::OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).expect("rfc3339");
    let send = |path: &'static str, body: Value| async move {
        let r =
            client.send_raw(Method::POST, path, serde_json::to_vec(&body).expect("json"), None).await.expect("send");
        assert!(r.status < 300, "{path}: {}", r.json());
        r.json()["data"].clone()
    };
    let c = send(
        "/api/white-label/v1/campaigns",
        json!({"title": "Two Doors", "description": "Served by several instances.",
        "campaign_type": "ticketing", "status": "approved", "start_date": fmt(now - time::Duration::days(1)),
        "end_date": fmt(now + time::Duration::days(9))}),
    )
    .await;
    let t = send(
        "/api/white-label/v1/ticket-types",
        json!({"campaignId": c["id"], "name": "Floor", "price": 30, "quantity_available": 10}),
    )
    .await;
    let p = send(
        INITIALIZE,
        json!({"campaign_id": c["id"], "ticket_id": t["id"], "email": "two@example.com", "quantity": 1}),
    )
    .await;
    p["reference"].as_str().expect("reference").to_string()
}

async fn status_of(client: &Client, reference: &str) -> Value {
    let r = client
        .send_raw(Method::GET, &format!("/api/white-label/v1/payments/{reference}"), Vec::new(), None)
        .await
        .expect("get");
    assert_eq!(r.status, 200, "{}", r.json());
    r.json()["data"].clone()
}

// ---------------------------------------------------------------------------------------------
// Live changes (D17.5)

/// The next live event within 1 s (D17.32's bound).
async fn next_event(rx: &mut tokio::sync::broadcast::Receiver<LiveEvent>) -> LiveEvent {
    tokio::time::timeout(Duration::from_secs(1), rx.recv()).await.expect("an event within 1 s").expect("event")
}

/// Two instances of one deployment on PostgreSQL (with Redis, D17.3); on SQLite the one.
async fn instance_pair(b: Backend) -> (TestApp, Option<TestApp>) {
    match b {
        Backend::Sqlite => (spawn(b).await, None),
        Backend::Postgres(_) => {
            let a = spawn_with(b, with_redis).await;
            let second = spawn_second(&a).await;
            (a, Some(second))
        }
    }
}

async fn a_check_in_on_one_instance_reaches_every_instances_subscribers_once_per_batch(b: Backend) {
    let (a, second) = instance_pair(b).await;
    let other = second.as_ref().unwrap_or(&a);
    let (campaign, tickets) = issued(&a, &a.account, 2).await;
    let mut rx = other.state.live.subscribe();
    let mut mine = a.state.live.subscribe();
    let r = a
        .signed(
            Method::POST,
            VERIFY,
            Some(json!({"ticketCode": code_of(&tickets[0]), "autoVerify": true, "checkedInBy": "gate-1"})),
        )
        .await;
    assert_eq!(r.1["data"]["result"], "checked_in", "{}", r.1);
    let expected =
        LiveEvent { account_id: a.account.id.clone(), campaign_id: Some(campaign.clone()), kind: LiveKind::Checkin };
    assert_eq!(next_event(&mut rx).await, expected, "the other instance hears of it");
    assert_eq!(next_event(&mut mine).await, expected, "and this one");
    // Checked in again: nothing changed, nothing is published. The next event is the next
    // check-in's, which proves the repeat sent none (events arrive in commit order).
    let again = a
        .signed(
            Method::POST,
            VERIFY,
            Some(json!({"ticketCode": code_of(&tickets[0]), "autoVerify": true, "checkedInBy": "gate-2"})),
        )
        .await;
    assert_eq!(again.1["data"]["result"], "already_checked_in", "{}", again.1);
    let r = other
        .signed(
            Method::POST,
            VERIFY,
            Some(json!({"ticketCode": code_of(&tickets[1]), "autoVerify": true, "checkedInBy": "gate-2"})),
        )
        .await;
    assert_eq!(r.1["data"]["result"], "checked_in", "{}", r.1);
    assert_eq!(next_event(&mut rx).await, expected);
    assert!(rx.try_recv().is_err(), "one event per committed batch");
}

async fn a_rolled_back_change_publishes_nothing_and_other_schemas_are_not_heard(b: Backend) {
    let (a, second) = instance_pair(b.clone()).await;
    let other = second.as_ref().unwrap_or(&a);
    let mut rx = other.state.live.subscribe();
    let event = |campaign: &str| LiveEvent {
        account_id: a.account.id.clone(),
        campaign_id: Some(campaign.to_string()),
        kind: LiveKind::Votes,
    };
    let mut tx = a.state.store.begin().await.expect("begin");
    tx.publish(event("rolled-back")).await.expect("publish");
    tx.rollback().await.expect("rollback");
    let mut tx = a.state.store.begin().await.expect("begin");
    tx.publish(event("dropped")).await.expect("publish");
    drop(tx);
    if matches!(b, Backend::Postgres(_)) {
        // Another deployment (schema) on the same database publishes on the same channel.
        let elsewhere = spawn(b).await;
        let mut tx = elsewhere.state.store.begin().await.expect("begin");
        tx.publish(event("another-schema")).await.expect("publish");
        tx.commit().await.expect("commit");
    }
    let mut tx = a.state.store.begin().await.expect("begin");
    tx.publish(event("committed")).await.expect("publish");
    tx.commit().await.expect("commit");
    // Events arrive in commit order: the first one heard is the committed one.
    assert_eq!(next_event(&mut rx).await, event("committed"));
}

async fn a_fulfilled_vote_payment_publishes_votes(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "voting").await;
    let nominee = participant(&p, &p.account.private, &c).await;
    let init: Value = p
        .api()
        .post(
            INITIALIZE,
            &json!({"transactionType": "vote", "amount": 4, "email": "fan@example.com", "phoneNumber": "0241234567",
                "callbackUrl": format!("https://{}/voted", p.account.domain),
                "metadata": {"campaignId": c, "participantId": nominee}}),
            StatusCode::OK,
        )
        .await;
    let reference = init["data"]["reference"].as_str().expect("reference").to_string();
    let mut rx = p.state.live.subscribe();
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    drain(&p).await;
    let e = next_event(&mut rx).await;
    assert_eq!(e, LiveEvent { account_id: p.account.id.clone(), campaign_id: Some(c), kind: LiveKind::Votes });
}

on_both!(
    a_second_serve_on_the_same_data_exits_2_and_the_operator_cli_still_runs,
    a_stopped_server_gives_its_guard_back_to_the_next_one,
    no_workers_serves_the_api_and_leaves_the_jobs_to_an_instance_with_workers,
    a_check_in_on_one_instance_reaches_every_instances_subscribers_once_per_batch,
    a_rolled_back_change_publishes_nothing_and_other_schemas_are_not_heard,
    a_fulfilled_vote_payment_publishes_votes,
);

// ---------------------------------------------------------------------------------------------
// PostgreSQL only: instances with and without Redis never mix (D17.39)

async fn with_and_without_redis_never_mix(b: Backend) {
    // Shared (with Redis): another with Redis starts, one without is refused.
    let shared = spawn_with(b.clone(), with_redis).await;
    let prefix = redis_prefix();
    let redis_env = [("REDIS_URL", REDIS), ("TESSERA_REDIS_KEY_PREFIX", prefix.as_str())];
    let (code, stderr) = refused_serve(&shared.config.data_dir, &shared.config.database_url, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("REDIS_URL"), "{stderr}");
    let (mut beside, _) = serve(&shared.config.data_dir, &shared.config.database_url, &free_addr(), &[], &redis_env);
    beside.kill().expect("stop");
    beside.wait().expect("reaped");
    // Exclusive (without Redis): one with Redis is refused too, naming REDIS_URL.
    // (Without Redis even when the suite runs with TESSERA_TEST_REDIS_URL.)
    let alone = spawn_with(b, |c| c.redis.url = String::new().into()).await;
    let (code, stderr) = refused_serve(&alone.config.data_dir, &alone.config.database_url, &redis_env);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("without REDIS_URL"), "{stderr}");
}

mod postgres_only {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_and_without_redis_never_mix() {
        match crate::support::server::Backend::postgres() {
            Some(b) => super::with_and_without_redis_never_mix(b).await,
            None => eprintln!("TESSERA_TEST_DATABASE_URL not set; PostgreSQL run skipped"),
        }
    }
}

//! `tessera serve` as a process: SIGTERM lets a request already in flight finish (its body
//! still arriving) and then exits 0.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tessera_client::Method;

use crate::support::server::Backend;

fn tessera(data_dir: &std::path::Path, db: &Option<String>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.arg("--data-dir").arg(data_dir).env_remove("DATABASE_URL").env_remove("TESSERA_MASTER_KEY");
    if let Some(url) = db {
        cmd.arg("--database-url").arg(url);
    }
    cmd
}

fn json_of(cmd: &mut Command) -> Value {
    let out = cmd.output().expect("run tessera");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

async fn sigterm_lets_an_in_flight_request_finish_then_exits_cleanly(b: Backend) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = match &b {
        Backend::Sqlite => None,
        Backend::Postgres(_) => Some(crate::support::server::postgres_schema_url(&b).await),
    };
    json_of(
        tessera(dir.path(), &db)
            .args(["admin", "account", "create", "--slug", "shutdown", "--name", "Shutdown", "--json"]),
    );
    let key = json_of(tessera(dir.path(), &db).args([
        "admin",
        "key",
        "create",
        "--account",
        "shutdown",
        "--kind",
        "private",
        "--scopes",
        "campaigns:write",
        "--json",
    ]));
    let port = TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
    let addr = format!("127.0.0.1:{port}");
    let mut server = tessera(dir.path(), &db)
        .args(["serve", "--listen", &addr])
        .env("RUST_LOG", "info")
        .env("TESSERA_LOG_FORMAT", "json")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !lines.next().expect("server log line").expect("utf8").contains("tessera listening") {
        assert!(Instant::now() < deadline, "server did not start");
    }

    // A signed POST that is in flight when the signal arrives: with `Expect: 100-continue` the
    // server answers `100 Continue` only once it reads the body, which proves the request is
    // being served; the body is sent only after the signal.
    let body = br#"{"title":"Graceful Night","description":"Proves that in-flight requests finish.","campaign_type":"donation","start_date":"2027-01-01T00:00:00Z","end_date":"2027-02-01T00:00:00Z"}"#;
    let path = "/api/white-label/v1/campaigns";
    let client = tessera_client::Client::new(
        &format!("http://{addr}"),
        key["keyId"].as_str().expect("keyId"),
        key["secret"].as_str().expect("secret"),
    )
    .expect("client");
    let headers = client.signed_headers(&Method::POST, path, body).expect("headers");
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: {}\r\nexpect: 100-continue\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in &headers {
        head.push_str(&format!("{}: {}\r\n", k, v.to_str().expect("ascii")));
    }
    head.push_str("\r\n");
    let mut conn = TcpStream::connect(&addr).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
    conn.write_all(head.as_bytes()).expect("head");
    let mut interim = Vec::new();
    let mut byte = [0u8; 1];
    while !interim.ends_with(b"\r\n\r\n") {
        conn.read_exact(&mut byte).expect("interim answer");
        interim.push(byte[0]);
    }
    assert!(interim.starts_with(b"HTTP/1.1 100"), "{}", String::from_utf8_lossy(&interim));

    let killed = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    // Wait until the server has taken the signal: it logs it, then stops accepting.
    let mut seen = Vec::new();
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("server log ended: {seen:?} exit {:?}", server.try_wait()))
            .expect("utf8");
        if line.contains("shutdown signal received") {
            break;
        }
        seen.push(line);
        assert!(Instant::now() < deadline, "server did not log the signal");
    }
    conn.write_all(body).expect("the body, after SIGTERM");
    let mut answer = String::new();
    conn.read_to_string(&mut answer).expect("answer");
    assert!(answer.starts_with("HTTP/1.1 201"), "the in-flight request finished: {answer}");

    let status = server.wait().expect("server exits");
    assert!(status.success(), "clean exit after SIGTERM: {status:?}");
}

on_both!(sigterm_lets_an_in_flight_request_finish_then_exits_cleanly);

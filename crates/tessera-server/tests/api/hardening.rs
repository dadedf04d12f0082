//! What a black-box probe found, each fixed and proved here through the real server: settings
//! secrets at any depth, slow clients and idle connections, and the small protocol edges
//! (a body cut short, a bad path parameter, 414/431 in the envelope, money decimals, invisible
//! titles, repeated query parameters, `sqlite://` URLs).
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::client::{assert_error, detail_fields, raw, StatusCode};
use crate::support::server::{spawn, spawn_with, Backend, TestApp};

const SETTINGS: &str = "/api/white-label/v1/settings";
const CAMPAIGNS: &str = "/api/white-label/v1/campaigns";

on_both!(
    secrets_inside_arrays_are_sealed_at_rest_and_masked_in_every_read_and_the_audit_log,
    a_secret_looking_key_with_a_non_string_value_is_refused_with_400,
    a_secret_of_eight_characters_or_fewer_is_masked_without_any_of_its_characters,
    client_keys_beginning_with_a_dollar_sign_are_refused_with_400,
    a_body_cut_short_by_the_client_is_answered_400_not_413,
    broken_chunked_framing_is_400_in_the_envelope,
    an_invalid_utf8_path_parameter_is_answered_in_the_error_envelope,
    money_with_more_than_two_decimals_is_refused_even_within_a_millionth,
    a_title_made_only_of_zero_width_characters_is_refused,
    a_repeated_query_parameter_is_named_in_the_error,
    an_answered_write_survives_a_kill_9_and_the_server_starts_again,
);

async fn all_text_of(app: &TestApp) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    for path in [format!("{SETTINGS}?categories=webhooks"), "/api/white-label/v1/context".to_string()] {
        let r = app.client().send_raw(Method::GET, &path, Vec::new(), None).await.expect("send");
        assert_eq!(r.status, 200, "{path}: {}", r.json());
        seen.push((path, String::from_utf8_lossy(&r.body).into_owned()));
    }
    let out = app.cli(&["admin", "audit", "list", "--account", &app.account.slug, "--json"]);
    assert!(out.status.success(), "audit list: {}", String::from_utf8_lossy(&out.stderr));
    seen.push(("audit log".into(), String::from_utf8_lossy(&out.stdout).into_owned()));
    let at_rest = serde_json::to_string(&app.store.settings(&app.account.id).await.expect("settings")).expect("json");
    seen.push(("database".into(), at_rest));
    seen
}

async fn secrets_inside_arrays_are_sealed_at_rest_and_masked_in_every_read_and_the_audit_log(b: Backend) {
    let app = spawn(b).await;
    let (signing, api) = ("whsec_live_ARRAY_SECRET_9876", "ak_live_NESTED_KEY_5432");
    let patch = json!({"config": {"endpoints": [
        {"url": "https://hooks.example.com/a", "signingSecret": signing},
        {"url": "https://hooks.example.com/b", "auth": [{"apiKey": api}]},
    ]}});
    let body: Value = app.api().patch(&format!("{SETTINGS}/webhooks"), &patch, StatusCode::OK).await;
    let endpoints = &body["data"]["config"]["endpoints"];
    assert_eq!(endpoints[0]["signingSecret"], "••••9876", "{body}");
    assert_eq!(endpoints[1]["auth"][0]["apiKey"], "••••5432", "{body}");
    assert_eq!(endpoints[0]["url"], "https://hooks.example.com/a");

    // Sending the list back as read (masks included) keeps the secrets and changes the rest.
    let mut back = endpoints.clone();
    back[0]["url"] = json!("https://hooks.example.com/a2");
    let body: Value =
        app.api().patch(&format!("{SETTINGS}/webhooks"), &json!({"config": {"endpoints": back}}), StatusCode::OK).await;
    assert_eq!(body["data"]["config"]["endpoints"][0]["signingSecret"], "••••9876", "{body}");
    assert_eq!(body["data"]["config"]["endpoints"][0]["url"], "https://hooks.example.com/a2");

    let seen = all_text_of(&app).await;
    for (what, text) in &seen {
        for secret in [signing, api] {
            assert!(!text.contains(secret), "{what} shows {secret}: {text}");
        }
    }
    let (_, database) = seen.last().expect("database");
    assert!(database.contains("$sealed"), "sealed at rest: {database}");
    // The stored secret still decrypts to what was sent: sending the mask back did not replace it.
    let stored: Value = app
        .store
        .settings(&app.account.id)
        .await
        .expect("settings")
        .into_iter()
        .find(|(c, _)| c == "webhooks")
        .map(|(_, v)| v)
        .expect("webhooks");
    assert_eq!(stored["endpoints"][0]["signingSecret"]["last4"], "9876", "{stored}");
}

async fn a_secret_looking_key_with_a_non_string_value_is_refused_with_400(b: Backend) {
    let app = spawn(b).await;
    for (config, field) in [
        (json!({"endpoints": [{"signingSecret": 12345678}]}), "config.endpoints[0].signingSecret"),
        (json!({"sms": {"apiKey": {"nested": "x"}}}), "config.sms.apiKey"),
        (json!({"password": ["a", "b"]}), "config.password"),
    ] {
        let r = app
            .client()
            .send_raw(
                Method::PATCH,
                &format!("{SETTINGS}/webhooks"),
                serde_json::to_vec(&json!({ "config": config })).expect("json"),
                None,
            )
            .await
            .expect("send");
        let body = assert_error(&r, 400, "validation_failed");
        assert_eq!(detail_fields(&body), [field], "{body}");
    }
}

async fn a_secret_of_eight_characters_or_fewer_is_masked_without_any_of_its_characters(b: Backend) {
    let app = spawn(b).await;
    let patch = json!({"config": {"sms": {"apiKey": "k8chars!"}, "email": {"password": "ninechars"}}});
    let body: Value = app.api().patch(&format!("{SETTINGS}/notifications"), &patch, StatusCode::OK).await;
    assert_eq!(body["data"]["config"]["sms"]["apiKey"], "••••", "{body}");
    assert_eq!(body["data"]["config"]["email"]["password"], "••••hars", "{body}");
    let (_, read) = app.signed(Method::GET, &format!("{SETTINGS}?categories=notifications"), None).await;
    assert_eq!(read["data"]["notifications"]["sms"]["apiKey"], "••••", "{read}");
}

async fn client_keys_beginning_with_a_dollar_sign_are_refused_with_400(b: Backend) {
    let app = spawn(b).await;
    for (config, field) in [
        (json!({"$sealed": "forged", "last4": "abcd"}), "config.$sealed"),
        (json!({"apiKey": {"$sealed": "forged"}}), "config.apiKey"),
        (json!({"list": [{"$x": 1}]}), "config.list[0].$x"),
    ] {
        let r = app
            .client()
            .send_raw(
                Method::PATCH,
                &format!("{SETTINGS}/branding"),
                serde_json::to_vec(&json!({ "config": config })).expect("json"),
                None,
            )
            .await
            .expect("send");
        let body = assert_error(&r, 400, "validation_failed");
        assert_eq!(detail_fields(&body), [field], "{body}");
    }
}

/// Splits a raw HTTP answer into status, headers (lower-cased names) and body.
fn parse_answer(text: &str) -> (u16, Vec<(String, String)>, String) {
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, body.to_string())
}

fn read_all(s: &mut TcpStream) -> String {
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

async fn a_body_cut_short_by_the_client_is_answered_400_not_413(b: Backend) {
    let app = spawn(b).await;
    let addr = app.base_url.trim_start_matches("http://").to_string();
    let key = app.account.private.clone();
    let text = tokio::task::spawn_blocking(move || {
        let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_millis();
        let mut s = TcpStream::connect(&addr).expect("connect");
        let head = format!(
            "POST {CAMPAIGNS} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\
             x-white-label-key-id: {}\r\nx-white-label-timestamp: {ts}\r\nx-white-label-nonce: cutshort{ts}\r\n\
             x-white-label-signature: {}\r\nConnection: close\r\n\r\n{{\"title\": \"cut",
            key.key_id,
            "0".repeat(64),
        );
        s.write_all(head.as_bytes()).expect("write");
        s.shutdown(std::net::Shutdown::Write).expect("half-close");
        read_all(&mut s)
    })
    .await
    .expect("join");
    let (status, headers, body) = parse_answer(&text);
    assert_eq!(status, 400, "{text}");
    let body: Value = serde_json::from_str(&body).expect("envelope");
    assert_eq!(body["success"], false);
    assert_eq!(body["code"], "malformed_json", "{body}");
    assert!(headers.iter().any(|(k, _)| k == "x-request-id"), "{text}");
}

async fn an_invalid_utf8_path_parameter_is_answered_in_the_error_envelope(b: Backend) {
    let app = spawn(b).await;
    for (method, path) in [(Method::GET, format!("{CAMPAIGNS}/%FF%FE")), (Method::PATCH, format!("{SETTINGS}/%C3%28"))]
    {
        let body = if method == Method::PATCH { b"{\"config\":{}}".to_vec() } else { Vec::new() };
        let r = app.client().send_raw(method, &path, body, None).await.expect("send");
        let ct = r.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
        assert!(ct.starts_with("application/json"), "{path}: content-type {ct}");
        let body = assert_error(&r, 400, "validation_failed");
        assert_eq!(detail_fields(&body), ["path"], "{body}");
    }
}

async fn money_with_more_than_two_decimals_is_refused_even_within_a_millionth(b: Backend) {
    let app = spawn(b).await;
    let body = |price: Value| {
        json!({
            "title": "Decimals", "description": "A description long enough.", "campaign_type": "voting", "vote_price": price,
            "start_date": "2027-03-01T18:00:00Z", "end_date": "2027-03-02T02:00:00Z",
        })
    };
    for price in [json!(1.0000001), json!(12.5000000001), json!(0.001)] {
        let (status, b) = app.signed(Method::POST, CAMPAIGNS, Some(body(price.clone()))).await;
        assert_eq!(status, 400, "{price}: {b}");
        assert_eq!(detail_fields(&b), ["vote_price"], "{b}");
    }
    let b: Value = app.api().post(CAMPAIGNS, &body(json!(1.25)), StatusCode::CREATED).await;
    let id = b["data"]["id"].as_str().expect("id");
    let (_, read) = app.signed(Method::GET, &format!("{CAMPAIGNS}/{id}"), None).await;
    assert_eq!(read["data"]["vote_price"], 1.25, "{read}");
    // Settings money too (payments.feeFixed).
    let b: Value = app
        .api()
        .patch(&format!("{SETTINGS}/payments"), &json!({"config": {"feeFixed": 0.1000001}}), StatusCode::BAD_REQUEST)
        .await;
    assert_eq!(detail_fields(&b), ["config.feeFixed"], "{b}");
}

async fn a_title_made_only_of_zero_width_characters_is_refused(b: Backend) {
    let app = spawn(b).await;
    let body = json!({
        "title": "\u{200B}\u{200C}\u{200D}\u{2060}\u{FEFF}", "description": "A description long enough.", "campaign_type": "ticketing",
        "start_date": "2027-03-01T18:00:00Z", "end_date": "2027-03-02T02:00:00Z",
    });
    let b: Value = app.api().post(CAMPAIGNS, &body, StatusCode::BAD_REQUEST).await;
    assert!(detail_fields(&b).contains(&"title".to_string()), "{b}");
}

async fn a_repeated_query_parameter_is_named_in_the_error(b: Backend) {
    let app = spawn(b).await;
    let b: Value = app.api().get(&format!("{CAMPAIGNS}?limit=5&limit=6"), StatusCode::BAD_REQUEST).await;
    assert_eq!(detail_fields(&b), ["limit"], "{b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_414_and_a_431_carry_the_envelope_and_a_request_id() {
    let app = spawn(Backend::Sqlite).await;
    let long = app.http.get(app.url(&format!("/healthz?q={}", "a".repeat(9000)))).send().await.expect("send");
    assert_error(&raw(long).await, 414, "uri_too_long");
    let mut req = app.http.get(app.url("/api/white-label/v1/campaigns"));
    for i in 0..120 {
        req = req.header(format!("x-filler-{i}"), "v");
    }
    assert_error(&raw(req.send().await.expect("send")).await, 431, "headers_too_large");
    let big = app.http.get(app.url("/healthz")).header("x-big", "b".repeat(40 * 1024)).send().await.expect("send");
    assert_error(&raw(big).await, 431, "headers_too_large");
}

/// Sends `request` bytes on a raw connection (half-closing it) and reads the whole answer.
async fn raw_exchange(app: &TestApp, request: Vec<u8>) -> String {
    let addr = app.base_url.trim_start_matches("http://").to_string();
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(&addr).expect("connect");
        // A refusal may come before every byte is sent: the rest is then refused by a closed
        // socket, which is what is being tested. The answer is read while the request is still
        // being written: a server that closes with request bytes unread resets the connection,
        // and a reset discards whatever the client had not read yet.
        let mut reader = s.try_clone().expect("clone");
        let answer = std::thread::spawn(move || read_all(&mut reader));
        let _ = s.write_all(&request);
        let _ = s.shutdown(std::net::Shutdown::Write);
        answer.join().expect("reader")
    })
    .await
    .expect("join")
}

/// Item 6, D17.44: a refusal of a request hyper cannot read carries the envelope, a requestId and
/// the same `x-request-id`, whatever the excess or the broken framing.
fn assert_raw_refusal(text: &str, status: u16, code: &str) {
    let (got, headers, body) = parse_answer(text);
    assert_eq!(got, status, "{}", &text[..text.len().min(600)]);
    let ct = headers.iter().find(|(k, _)| k == "content-type").map(|(_, v)| v.as_str()).unwrap_or("");
    assert!(ct.starts_with("application/json"), "content-type {ct}: {text}");
    let length = headers.iter().find(|(k, _)| k == "content-length").map(|(_, v)| v.as_str());
    assert_eq!(length, Some(body.len().to_string().as_str()), "{text}");
    assert!(headers.iter().filter(|(k, _)| k == "connection").count() <= 1, "one connection field: {text}");
    let body: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("envelope ({e}): {text}"));
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["code"], code, "{body}");
    let id = headers.iter().find(|(k, _)| k == "x-request-id").map(|(_, v)| v.clone()).expect("x-request-id");
    assert!(id.starts_with("req_"), "{id}");
    assert_eq!(body["requestId"], id.as_str(), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uri_past_hypers_own_limit_is_414_in_the_envelope() {
    let app = spawn(Backend::Sqlite).await;
    for len in [70 * 1024, 300 * 1024] {
        let req = format!("GET /healthz?q={} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(len));
        assert_raw_refusal(&raw_exchange(&app, req.into_bytes()).await, 414, "uri_too_long");
    }
    // Below hyper's limit the request-id layer answers, in the same shape.
    let req = format!("GET /healthz?q={} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "a".repeat(9000));
    assert_raw_refusal(&raw_exchange(&app, req.into_bytes()).await, 414, "uri_too_long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_or_many_headers_past_hypers_own_limits_are_431_in_the_envelope() {
    let app = spawn(Backend::Sqlite).await;
    // One header past hyper's buffer (~400 KiB), and more fields than hyper takes.
    let long = format!("GET /healthz HTTP/1.1\r\nHost: x\r\nx-big: {}\r\n\r\n", "b".repeat(500 * 1024));
    assert_raw_refusal(&raw_exchange(&app, long.into_bytes()).await, 431, "headers_too_large");
    let mut many = String::from("GET /api/white-label/v1/campaigns HTTP/1.1\r\nHost: x\r\n");
    for i in 0..1000 {
        many.push_str(&format!("x-f-{i}: v\r\n"));
    }
    many.push_str("\r\n");
    assert_raw_refusal(&raw_exchange(&app, many.into_bytes()).await, 431, "headers_too_large");
    // Fewer fields, still over the request-id layer's limits.
    let mut some = String::from("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    for i in 0..150 {
        some.push_str(&format!("x-f-{i}: v\r\n"));
    }
    some.push_str("\r\n");
    assert_raw_refusal(&raw_exchange(&app, some.into_bytes()).await, 431, "headers_too_large");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_framing_is_400_in_the_envelope() {
    let app = spawn(Backend::Sqlite).await;
    for head in [
        "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}",
        "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n{}",
        "GET /healthz HTTP/1.1\r\nHost: x\r\nbad header line\r\n\r\n",
        "GET /he alth z HTTP/1.1\r\nHost: x\r\n\r\n",
    ] {
        let text = raw_exchange(&app, head.as_bytes().to_vec()).await;
        assert!(!text.is_empty(), "{head:?}: no answer");
        assert_raw_refusal(&text, 400, "validation_failed");
    }
}

/// Broken chunked framing is read by the route that reads the body: a signed route and a
/// provider callback both answer 400 in the envelope (not 413, not a bare 400).
async fn broken_chunked_framing_is_400_in_the_envelope(b: Backend) {
    let app = spawn(b).await;
    let key = app.account.private.clone();
    let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_millis();
    let signed = format!(
        "POST {CAMPAIGNS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\
         x-white-label-key-id: {}\r\nx-white-label-timestamp: {ts}\r\nx-white-label-nonce: chunked{ts}\r\n\
         x-white-label-signature: {}\r\nConnection: close\r\n\r\n5\r\n{{\"a\":\r\nZZ\r\nbroken\r\n",
        key.key_id,
        "0".repeat(64),
    );
    assert_raw_refusal(&raw_exchange(&app, signed.into_bytes()).await, 400, "malformed_json");
    let callback =
        "POST /api/white-label/webhooks/provider_a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
                   Transfer-Encoding: chunked\r\nx-provider_a-signature: 00\r\nConnection: close\r\n\r\n\
                   3\r\n{}a\r\nnot-hex\r\n";
    assert_raw_refusal(&raw_exchange(&app, callback.as_bytes().to_vec()).await, 400, "malformed_json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_url_without_mode_rwc_creates_its_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("nested").join("own.db");
    let url = format!("sqlite://{}", file.display());
    let app = spawn_with(Backend::Sqlite, |c| c.database_url = url.clone()).await;
    assert!(file.exists(), "{} created", file.display());
    let _: Value = app.api().get(CAMPAIGNS, StatusCode::OK).await;
}

/// Opens `n` connections that each send part of a request head and then nothing.
fn half_open(addr: &str, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: slow\r\nX-Slow: ").expect("write");
            s
        })
        .collect()
}

fn healthz_within(addr: &str, limit: Duration) -> Result<Duration, String> {
    let started = Instant::now();
    let mut s = TcpStream::connect_timeout(&addr.parse().map_err(|e| format!("{e}"))?, limit)
        .map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(limit)).map_err(|e| e.to_string())?;
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: ok\r\nConnection: close\r\n\r\n").map_err(|e| e.to_string())?;
    let mut out = String::new();
    s.read_to_string(&mut out).map_err(|e| format!("read: {e}"))?;
    if out.starts_with("HTTP/1.1 200") {
        Ok(started.elapsed())
    } else {
        Err(out)
    }
}

/// A closed connection reads end-of-file (or a reset) instead of blocking.
fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).expect("timeout");
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_cannot_starve_a_well_behaved_one() {
    // 2 000 half-sent heads against a server with a 500 ms header timeout: /healthz still answers
    // while they are held, and every one of them is closed once the timeout passes.
    let app = spawn_with(Backend::Sqlite, |c| c.http.header_read_timeout_ms = 500).await;
    let addr = app.base_url.trim_start_matches("http://").to_string();
    let result = tokio::task::spawn_blocking(move || {
        let mut slow = half_open(&addr, 2000);
        let during = healthz_within(&addr, Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(1500));
        let closed = slow.iter_mut().map(|s| closed_within(s, Duration::from_millis(20))).filter(|c| *c).count();
        let after = healthz_within(&addr, Duration::from_secs(5));
        (during, closed, after)
    })
    .await
    .expect("join");
    let (during, closed, after) = result;
    assert!(during.is_ok(), "healthz while 2 000 slow clients hold connections: {during:?}");
    assert_eq!(closed, 2000, "every half-sent head is closed after the header timeout");
    assert!(after.is_ok(), "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_connection_cap_a_well_behaved_client_is_served_once_slow_ones_time_out() {
    // 50 slow clients fill a cap of 50; the 51st waits in the accept queue and is served as soon
    // as the header timeout frees a slot, not never.
    let app = spawn_with(Backend::Sqlite, |c| {
        c.http.header_read_timeout_ms = 500;
        c.http.max_connections = 50;
    })
    .await;
    let addr = app.base_url.trim_start_matches("http://").to_string();
    let result = tokio::task::spawn_blocking(move || {
        let _slow = half_open(&addr, 50);
        healthz_within(&addr, Duration::from_secs(5))
    })
    .await
    .expect("join");
    let waited = result.expect("served after the slow clients timed out");
    assert!(waited >= Duration::from_millis(300), "it waited for a slot: {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_stops_sending_its_body_is_closed_after_the_idle_timeout() {
    let app = spawn_with(Backend::Sqlite, |c| c.http.idle_timeout_ms = 400).await;
    let addr = app.base_url.trim_start_matches("http://").to_string();
    let key = app.account.private.clone();
    let (closed, idle_closed) = tokio::task::spawn_blocking(move || {
        let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_millis();
        let mut s = TcpStream::connect(&addr).expect("connect");
        let head = format!(
            "POST {CAMPAIGNS} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nx-white-label-key-id: {}\r\n\
             x-white-label-timestamp: {ts}\r\nx-white-label-nonce: stalled{ts}\r\nx-white-label-signature: {}\r\n\r\n{{",
            key.key_id,
            "0".repeat(64)
        );
        s.write_all(head.as_bytes()).expect("write");
        let closed = closed_within(&mut s, Duration::from_secs(5));
        // A keep-alive connection with nothing to do is closed too.
        let mut idle = TcpStream::connect(&addr).expect("connect");
        idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").expect("write");
        let idle_closed = closed_within(&mut idle, Duration::from_secs(5));
        (closed, idle_closed)
    })
    .await
    .expect("join");
    assert!(closed, "a stalled body upload is closed");
    assert!(idle_closed, "an idle keep-alive connection is closed");
}

fn tessera_bin(data_dir: &std::path::Path, db: &Option<String>) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.arg("--data-dir").arg(data_dir).env_remove("DATABASE_URL").env_remove("TESSERA_MASTER_KEY");
    if let Some(url) = db {
        cmd.arg("--database-url").arg(url);
    }
    cmd
}

fn json_out(cmd: &mut std::process::Command) -> Value {
    let out = cmd.output().expect("run tessera");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// Starts `tessera serve` and waits for its listening line.
fn serve_process(data_dir: &std::path::Path, db: &Option<String>, addr: &str) -> std::process::Child {
    use std::io::BufRead;
    let mut child = tessera_bin(data_dir, db)
        .args(["serve", "--listen", addr])
        .env("RUST_LOG", "info")
        .env("TESSERA_LOG_FORMAT", "json")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !lines.next().expect("server log line").expect("utf8").contains("tessera listening") {
        assert!(Instant::now() < deadline, "server did not start");
    }
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    child
}

async fn an_answered_write_survives_a_kill_9_and_the_server_starts_again(b: Backend) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = match &b {
        Backend::Sqlite => None,
        Backend::Postgres(_) => Some(crate::support::server::postgres_schema_url(&b).await),
    };
    json_out(
        tessera_bin(dir.path(), &db)
            .args(["admin", "account", "create", "--slug", "crash", "--name", "Crash", "--json"]),
    );
    let key = json_out(tessera_bin(dir.path(), &db).args([
        "admin",
        "key",
        "create",
        "--account",
        "crash",
        "--kind",
        "private",
        "--scopes",
        "campaigns:read,campaigns:write",
        "--json",
    ]));
    let (key_id, secret) = (key["keyId"].as_str().expect("keyId"), key["secret"].as_str().expect("secret"));
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let addr = format!("127.0.0.1:{port}");
    let client = tessera_client::Client::new(&format!("http://{addr}"), key_id, secret).expect("client");

    let mut server = serve_process(dir.path(), &db, &addr);
    let body = json!({
        "title": "Survives a crash", "description": "Written, answered 201, then the process is killed.",
        "campaign_type": "donation", "start_date": "2027-01-01T00:00:00Z", "end_date": "2027-02-01T00:00:00Z",
    });
    let created =
        client.send_raw(Method::POST, CAMPAIGNS, serde_json::to_vec(&body).expect("json"), None).await.expect("create");
    assert_eq!(created.status, 201, "{}", created.json());
    let id = created.json()["data"]["id"].as_str().expect("id").to_string();
    server.kill().expect("SIGKILL");
    let _ = server.wait();

    let mut server = serve_process(dir.path(), &db, &addr);
    let read = client.send_raw(Method::GET, &format!("{CAMPAIGNS}/{id}"), Vec::new(), None).await.expect("read");
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(read.status, 200, "{}", read.json());
    assert_eq!(read.json()["data"]["title"], "Survives a crash");
}

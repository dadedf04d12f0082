//! Integration tests: reseller portal sign-in and sessions (D10.1, D15.1, D16.16–17) through the
//! real server, passcodes read from the sandbox's SMTP sink, on SQLite and PostgreSQL. The
//! console routes are in portal_console.rs.
use serde_json::{json, Value};
use tessera_client::portal::PortalClient;
use tessera_client::Method;

use crate::support::client::{detail_fields, raw};
use crate::support::db::now_ms;
use crate::support::mail::{mailed_code, mails_to, spawn_mailing};
use crate::support::payments::PayApp;
use crate::support::portal::{
    call, mint, portal_error, portal_ok, reseller, sign_in, spawn_reseller, start, CONSOLE, LOGOUT, START, VERIFY,
};
use crate::support::server::{drain, Backend};

async fn sql(p: &PayApp, statement: &str, binds: &[&str]) {
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&p.database_url).await.expect("connect");
    let mut q = sqlx::query(statement);
    for b in binds {
        q = q.bind(*b);
    }
    q.execute(&mut conn).await.expect("sql");
}

async fn a_member_signs_in_with_a_mailed_passcode_reads_the_console_and_logs_out(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let challenge = start(&p, &owner.to_uppercase()).await;
    assert!(challenge.starts_with("otp_"));
    drain(&p).await;
    let code = mailed_code(&p, &owner).expect("the passcode went to the lower-cased address");
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let r = call(&p, None, Method::POST, VERIFY, Some(json!({"challengeId": challenge, "code": wrong}))).await;
    let e = portal_error(&r, 400, "validation_failed");
    assert_eq!(detail_fields(&e), vec!["code"]);
    assert!(e["details"][0]["message"].as_str().is_some_and(|m| m.contains("4 tries left")), "{e}");
    let r = call(&p, None, Method::POST, VERIFY, Some(json!({"challengeId": challenge, "code": code}))).await;
    let session = portal_ok(&r, 200);
    let token = session["token"].as_str().expect("token").to_string();
    assert!(session["expiresAt"].is_string());
    // The code is used up.
    let r = call(&p, None, Method::POST, VERIFY, Some(json!({"challengeId": challenge, "code": code}))).await;
    portal_error(&r, 409, "conflict");

    let console = portal_ok(&call(&p, Some(&token), Method::GET, CONSOLE, None).await, 200);
    assert_eq!(console["profile"]["status"], "draft");
    assert_eq!(console["profile"]["riskLevel"], "low");
    let members = console["members"].as_array().expect("members");
    assert_eq!(members.len(), 1, "{console}");
    assert_eq!(members[0]["memberType"], "owner");
    assert_eq!(members[0]["roles"], json!(["admin"]));
    assert_eq!(members[0]["status"], "active");
    assert_eq!(members[0]["email"], owner.as_str());
    assert_eq!(console["invitations"], json!([]));

    // The SDK, built with the token.
    let sdk = PortalClient::new(&p.base_url, &token).expect("client");
    assert_eq!(sdk.reseller().await.expect("sdk console")["profile"]["status"], "draft");

    let r = call(&p, Some(&token), Method::POST, LOGOUT, None).await;
    assert_eq!(portal_ok(&r, 200)["loggedOut"], true);
    portal_error(&call(&p, Some(&token), Method::GET, CONSOLE, None).await, 401, "missing_auth");
    let e = sdk.reseller().await.expect_err("logged out");
    assert_eq!((e.status(), e.code()), (Some(401), Some("missing_auth")));
}

async fn start_answers_alike_for_an_unknown_address_and_sends_nothing(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let stranger = "nobody@elsewhere.example.com";
    let known = call(&p, None, Method::POST, START, Some(json!({"email": owner}))).await;
    let unknown = call(&p, None, Method::POST, START, Some(json!({"email": stranger}))).await;
    let (k, u) = (portal_ok(&known, 200), portal_ok(&unknown, 200));
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
    assert_eq!(keys(&k), keys(&u), "same shape");
    drain(&p).await;
    assert_eq!(mails_to(&p, &owner), 1);
    assert_eq!(mails_to(&p, stranger), 0, "nothing is sent to an address of no reseller");
    // Its challenge opens nothing whatever code is tried.
    let r =
        call(&p, None, Method::POST, VERIFY, Some(json!({"challengeId": u["challengeId"], "code": "123456"}))).await;
    portal_error(&r, 400, "validation_failed");
    // Validation: missing, malformed, unknown fields.
    let r = call(&p, None, Method::POST, START, Some(json!({}))).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["email"]);
    let r = call(&p, None, Method::POST, START, Some(json!({"email": "not-an-address"}))).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["email"]);
    let r = call(&p, None, Method::POST, START, Some(json!({"email": owner, "admin": true}))).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["admin"]);
    let r = call(&p, None, Method::POST, VERIFY, Some(json!({"challengeId": "x", "code": "12ab"}))).await;
    assert_eq!(detail_fields(&portal_error(&r, 400, "validation_failed")), vec!["code"]);
    let r = call(&p, None, Method::POST, VERIFY, Some(json!({"challengeId": "otp_unknown", "code": "123456"}))).await;
    portal_error(&r, 404, "not_found");
    // A resend within 60 s is refused, known address or not.
    for email in [owner.as_str(), stranger] {
        let r = call(&p, None, Method::POST, START, Some(json!({"email": email}))).await;
        portal_error(&r, 429, "rate_limited");
        assert!(r.headers.get("retry-after").is_some());
    }
}

async fn five_wrong_codes_lock_the_challenge_and_an_expired_code_is_refused(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let challenge = start(&p, &owner).await;
    drain(&p).await;
    let code = mailed_code(&p, &owner).expect("code");
    let wrong = if code == "000000" { "111111" } else { "000000" };
    for left in (0..5).rev() {
        let r = call(&p, None, Method::POST, VERIFY, Some(json!({"challengeId": challenge, "code": wrong}))).await;
        if left == 0 {
            portal_error(&r, 409, "conflict");
        } else {
            portal_error(&r, 400, "validation_failed");
        }
    }
    let r = call(&p, None, Method::POST, VERIFY, Some(json!({"challengeId": challenge, "code": code}))).await;
    let e = portal_error(&r, 409, "conflict");
    assert!(e["error"].as_str().is_some_and(|m| m.contains("locked")), "{e}");

    // A second challenge (the cooldown passed) whose ten minutes are over.
    sql(&p, "UPDATE otp_challenges SET created_at = created_at - 120000 WHERE id = $1", &[&challenge]).await;
    let second = start(&p, &owner).await;
    drain(&p).await;
    let code = mailed_code(&p, &owner).expect("code");
    sql(&p, "UPDATE otp_challenges SET expires_at = 1 WHERE id = $1", &[&second]).await;
    let r = call(&p, None, Method::POST, VERIFY, Some(json!({"challengeId": second, "code": code}))).await;
    let e = portal_error(&r, 409, "conflict");
    assert!(e["error"].as_str().is_some_and(|m| m.contains("expired")), "{e}");
}

async fn an_expired_session_is_401_and_a_used_one_slides_12_hours(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    // The operator mints a session with the real CLI.
    let out = p.cli(&["admin", "session", "create", "--email", &owner, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let minted: Value = serde_json::from_slice(&out.stdout).expect("json");
    let token = minted["token"].as_str().expect("token").to_string();
    assert!(minted["expiresAt"].is_string());
    let out = p.cli(&["admin", "session", "create", "--email", "nobody@example.com", "--json"]);
    assert!(!out.status.success(), "no user, no session");

    let hash = p.keyring.hash_secret(&token);
    // An hour left: a use slides it to 12 hours from now.
    let in_an_hour = (now_ms() + 3_600_000).to_string();
    sql(&p, &format!("UPDATE portal_sessions SET expires_at = {in_an_hour} WHERE token_hash = $1"), &[&hash]).await;
    portal_ok(&call(&p, Some(&token), Method::GET, CONSOLE, None).await, 200);
    let s = p.store.portal_session(&hash, now_ms()).await.expect("read").expect("live");
    assert!(s.expires_at > now_ms() + 11 * 3_600_000, "slid to 12 h: {}", s.expires_at);
    // Past its end: 401.
    sql(&p, "UPDATE portal_sessions SET expires_at = 1 WHERE token_hash = $1", &[&hash]).await;
    portal_error(&call(&p, Some(&token), Method::GET, CONSOLE, None).await, 401, "missing_auth");
    // No token, a made-up one, another scheme.
    portal_error(&call(&p, None, Method::GET, CONSOLE, None).await, 401, "missing_auth");
    portal_error(&call(&p, Some("tps_madeup"), Method::GET, CONSOLE, None).await, 401, "missing_auth");
    let r =
        raw(p.http.get(p.url(CONSOLE)).header("authorization", format!("Basic {token}")).send().await.expect("send"))
            .await;
    portal_error(&r, 401, "missing_auth");
}

async fn a_session_is_refused_on_version_1_routes_and_keys_on_portal_routes(b: Backend) {
    let (p, owner) = spawn_reseller(b).await;
    let token = mint(&p, &owner).await;
    let r = raw(p.http.get(p.url("/api/white-label/v1/context")).bearer_auth(&token).send().await.expect("send")).await;
    crate::support::client::assert_error(&r, 401, "missing_auth");
    // A signed request (valid for v1) on a portal route.
    let client = p.client();
    let r = client.send_raw(Method::GET, CONSOLE, Vec::new(), None).await.expect("send");
    portal_error(&r, 401, "missing_auth");
    // A key beside a valid session is refused too.
    let r = raw(p
        .http
        .get(p.url(CONSOLE))
        .bearer_auth(&token)
        .header("x-white-label-key", p.account.public.header())
        .header("x-white-label-domain", &p.account.domain)
        .send()
        .await
        .expect("send"))
    .await;
    portal_error(&r, 401, "missing_auth");
}

/// Passcodes and session tokens never reach the server log or the audit log: `tessera serve`
/// as a process logging at debug, a sign-in by mail, console use and logout.
async fn passcodes_and_session_tokens_never_reach_the_server_log_or_the_audit_log(b: Backend) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::sync::{Arc, Mutex};

    let sandbox = tessera_server::sandbox::Sandbox::start(tessera_server::sandbox::SandboxOptions {
        listen: "127.0.0.1:0".parse().expect("addr"),
        smtp_listen: Some("127.0.0.1:0".parse().expect("addr")),
        notify_url: None,
    })
    .await
    .expect("sandbox");
    let smtp = sandbox.smtp_addr().expect("smtp");
    let dir = tempfile::tempdir().expect("tempdir");
    let db = match &b {
        Backend::Sqlite => None,
        Backend::Postgres(_) => Some(crate::support::server::postgres_schema_url(&b).await),
    };
    let tessera = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
        cmd.arg("--data-dir").arg(dir.path()).env_remove("DATABASE_URL").env_remove("TESSERA_MASTER_KEY");
        if let Some(url) = &db {
            cmd.arg("--database-url").arg(url);
        }
        cmd
    };
    let run = |args: &[&str]| {
        let out = tessera().args(args).output().expect("run");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    run(&["admin", "account", "create", "--slug", "quiet", "--name", "Quiet Resellers", "--json"]);
    let owner = "owner@quiet.example.com";
    run(&["admin", "reseller", "create", "--account", "quiet", "--owner-email", owner, "--json"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = tessera()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("TESSERA_LOG", "debug")
        .env("TESSERA_SMTP_URL", format!("smtp://{smtp}"))
        .env("TESSERA_EXTRA_CA_FILE", sandbox.write_ca_pem(dir.path()).expect("sandbox-ca.pem"))
        .env("TESSERA_ALLOW_PRIVATE_ENDPOINTS", "1")
        .env("TESSERA_WORKER_POLL_MS", "50")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let log = Arc::new(Mutex::new(String::new()));
    for pipe in [
        Box::new(server.stdout.take().expect("out")) as Box<dyn std::io::Read + Send>,
        Box::new(server.stderr.take().expect("err")),
    ] {
        let log = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                log.lock().expect("log").push_str(&(line + "\n"));
            }
        });
    }
    let listening = || log.lock().expect("log").contains("listening");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !listening() {
        assert!(std::time::Instant::now() < deadline, "server did not start");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let challenge = PortalClient::start_sign_in(&base, owner).await.expect("start");
    let mut code = None;
    for _ in 0..200 {
        code = sandbox.mail().iter().find_map(|m| {
            let text = m["text"].as_str()?;
            text.lines().next()?.rsplit_once(" is ").map(|(_, c)| c.trim_end_matches('.').to_string())
        });
        if code.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let code = code.expect("the worker mailed the passcode");
    let session = PortalClient::finish_sign_in(&base, &challenge.challenge_id, &code).await.expect("sign in");
    let portal = PortalClient::new(&base, &session.token).expect("client");
    portal.update_profile(&json!({"status": "enabled"})).await.expect("profile");
    portal.create_member(&json!({"email": "kofi@quiet.example.com", "roles": ["viewer"]})).await.expect("invite");
    portal.logout().await.expect("logout");
    let audit = run(&["admin", "audit", "list", "--account", "quiet", "--json"]);
    let _ = server.kill();
    let _ = server.wait();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let log = log.lock().expect("log").clone();
    assert!(log.contains("portal"), "the log has the portal requests: {log}");
    for action in ["session.created", "reseller.status_changed", "member.invited", "session.revoked"] {
        assert!(audit.contains(action), "{action} audited: {audit}");
    }
    assert!(audit.contains("\"requestId\":\"req_"), "audit entries carry the request id: {audit}");
    for secret in [session.token.as_str(), code.as_str(), &p_hash(&session.token)] {
        assert!(!log.contains(secret), "a secret reached the server log");
        assert!(!audit.contains(secret), "a secret reached the audit log");
    }
}

/// Only the token's tail: the hash is keyed, so the test checks the token itself and its
/// distinctive last 16 characters (a log line that cut it would still show these).
fn p_hash(token: &str) -> String {
    token[token.len() - 16..].to_string()
}

async fn a_member_stored_in_mixed_case_signs_in_in_any_case(b: Backend) {
    // D17.10: a member stored with a mixed-case address signs in with it in any case.
    let p = spawn_mailing(b).await;
    let n = uuid::Uuid::now_v7().simple().to_string();
    let owner = format!("Owner-{n}@Reseller.Example.com");
    reseller(&p, &p.account, &owner).await;
    // Rows written before addresses were lower-cased on the way in keep their case.
    let lower = owner.to_lowercase();
    sql(&p, "UPDATE users SET email = $1 WHERE email = $2", &[&owner, &lower]).await;
    sql(&p, "UPDATE reseller_members SET email = $1 WHERE email = $2", &[&owner, &lower]).await;
    let token = sign_in(&p, &lower).await;
    let console = portal_ok(&call(&p, Some(&token), Method::GET, CONSOLE, None).await, 200);
    assert_eq!(console["members"][0]["memberType"], "owner", "{console}");
}

on_both!(
    a_member_stored_in_mixed_case_signs_in_in_any_case,
    a_member_signs_in_with_a_mailed_passcode_reads_the_console_and_logs_out,
    start_answers_alike_for_an_unknown_address_and_sends_nothing,
    five_wrong_codes_lock_the_challenge_and_an_expired_code_is_refused,
    an_expired_session_is_401_and_a_used_one_slides_12_hours,
    a_session_is_refused_on_version_1_routes_and_keys_on_portal_routes,
    passcodes_and_session_tokens_never_reach_the_server_log_or_the_audit_log,
);

//! The operator CLI and `tessera call`, run as the real binary against the test store.
use std::process::Output;

use serde_json::Value;

use crate::support::server::{spawn, Backend, TestApp};

fn stdout_json(out: &Output) -> Value {
    assert!(out.status.success(), "exit {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object on stdout")
}

/// Asserts a non-zero exit with `{error, code}` as JSON on stderr; returns the code.
fn stderr_error(out: &Output) -> String {
    assert!(!out.status.success(), "expected failure; stdout: {}", String::from_utf8_lossy(&out.stdout));
    let v: Value = serde_json::from_slice(&out.stderr)
        .unwrap_or_else(|e| panic!("stderr is not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert!(v["error"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    v["code"].as_str().expect("code").to_string()
}

/// `tessera call …` with the connection given in the environment, as an integrator runs it.
fn call(app: &TestApp, key_id: &str, secret: &str, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("call")
        .args(args)
        .env("TESSERA_URL", &app.base_url)
        .env("TESSERA_KEY_ID", key_id)
        .env("TESSERA_KEY_SECRET", secret)
        .output()
        .expect("run tessera call")
}

async fn account_create_prints_the_contract_fields(b: Backend) {
    let app = spawn(b).await;
    let out = app.cli(&["admin", "account", "create", "--slug", "cli-acct", "--name", "CLI Events", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["slug"], "cli-acct");
    assert_eq!(v["platformName"], "CLI Events");
    assert_eq!(v["status"], "enabled");
    assert!(v["id"].as_str().is_some());
}

async fn account_create_with_a_taken_slug_fails_with_a_json_error(b: Backend) {
    let app = spawn(b).await;
    let out = app.cli(&["admin", "account", "create", "--slug", &app.account.slug, "--name", "Again", "--json"]);
    assert_eq!(stderr_error(&out), "conflict");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}

async fn account_list_includes_the_account(b: Backend) {
    let app = spawn(b).await;
    let v = stdout_json(&app.cli(&["admin", "account", "list", "--json"]));
    let accounts = v["accounts"].as_array().expect("accounts");
    let mine = accounts.iter().find(|a| a["slug"] == app.account.slug.as_str()).expect("the test account is listed");
    assert_eq!(mine["id"], app.account.id.as_str());
    assert_eq!(mine["status"], "enabled");
}

async fn account_set_status_prints_the_new_status(b: Backend) {
    let app = spawn(b).await;
    let slug = app.account.slug.as_str();
    let v = stdout_json(&app.cli(&[
        "admin",
        "account",
        "set-status",
        "--account",
        slug,
        "--status",
        "suspended",
        "--json",
    ]));
    assert_eq!(v["slug"], slug);
    assert_eq!(v["status"], "suspended");
    let out = app.cli(&["admin", "account", "set-status", "--account", slug, "--status", "paused", "--json"]);
    assert_eq!(stderr_error(&out), "validation_failed");
    let out =
        app.cli(&["admin", "account", "set-status", "--account", "no-such-acct", "--status", "enabled", "--json"]);
    assert_eq!(stderr_error(&out), "not_found");
}

async fn domain_add_prints_the_domain_fields(b: Backend) {
    let app = spawn(b).await;
    let v = stdout_json(&app.cli(&[
        "admin",
        "domain",
        "add",
        "--account",
        &app.account.slug,
        "--hostname",
        "Shop.Example.ORG",
        "--verified",
        "--json",
    ]));
    assert_eq!(v["hostname"], "shop.example.org");
    assert_eq!(v["isPrimary"], false);
    assert!(v["sslStatus"].as_str().is_some(), "{v}");
    assert_eq!(v["verified"], true);
    let out =
        app.cli(&["admin", "domain", "add", "--account", &app.account.slug, "--hostname", "https://x.org", "--json"]);
    assert_eq!(stderr_error(&out), "validation_failed");
}

async fn key_create_prints_the_key_once_with_its_fields(b: Backend) {
    let app = spawn(b).await;
    let v = stdout_json(&app.cli(&[
        "admin",
        "key",
        "create",
        "--account",
        &app.account.slug,
        "--kind",
        "private",
        "--scopes",
        "settings:read,campaigns:write",
        "--json",
    ]));
    let key_id = v["keyId"].as_str().expect("keyId");
    let secret = v["secret"].as_str().expect("secret");
    assert!(key_id.starts_with("wl_prv_"), "{key_id}");
    assert!(secret.len() >= 22, "{secret}");
    assert_eq!(v["key"], format!("{key_id}:{secret}"));
    assert_eq!(v["kind"], "private");
    assert_eq!(v["scopes"], serde_json::json!(["settings:read", "campaigns:write"]));
}

async fn key_list_never_prints_a_secret(b: Backend) {
    let app = spawn(b).await;
    let created = stdout_json(&app.cli(&[
        "admin",
        "key",
        "create",
        "--account",
        &app.account.slug,
        "--kind",
        "public",
        "--scopes",
        "campaigns:read",
        "--json",
    ]));
    let out = app.cli(&["admin", "key", "list", "--account", &app.account.slug, "--json"]);
    let listed = stdout_json(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let keys = listed["keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 3, "{listed}");
    for secret in [created["secret"].as_str().expect("secret"), &app.account.private.secret, &app.account.public.secret]
    {
        assert!(!text.contains(secret), "a secret is in the listing: {text}");
    }
    assert!(keys.iter().any(|k| k["keyId"] == created["keyId"]), "{listed}");
    assert!(keys.iter().all(|k| k.get("secret").is_none() && k.get("key").is_none()), "{listed}");
    // Nor in the human form.
    let human = app.cli(&["admin", "key", "list", "--account", &app.account.slug]);
    assert!(human.status.success());
    assert!(!String::from_utf8_lossy(&human.stdout).contains(&app.account.private.secret));
}

async fn key_revoke_prints_status_revoked(b: Backend) {
    let app = spawn(b).await;
    let v = stdout_json(&app.cli(&["admin", "key", "revoke", "--key-id", &app.account.public.key_id, "--json"]));
    assert_eq!(v["keyId"], app.account.public.key_id.as_str());
    assert_eq!(v["status"], "revoked");
    assert!(v["revokedAt"].as_str().is_some(), "{v}");
    let out = app.cli(&["admin", "key", "revoke", "--key-id", "wl_pub_nosuchkey", "--json"]);
    assert_eq!(stderr_error(&out), "not_found");
}

fn key_create(app: &TestApp, kind: &str, scopes: &str, extra: &[&str]) -> Output {
    let mut args =
        vec!["admin", "key", "create", "--account", &app.account.slug, "--kind", kind, "--scopes", scopes, "--json"];
    args.extend_from_slice(extra);
    app.cli(&args)
}

async fn key_create_refuses_an_unknown_scope(b: Backend) {
    let app = spawn(b).await;
    assert_eq!(stderr_error(&key_create(&app, "private", "settings:read,settings:admin", &[])), "validation_failed");
}

async fn key_create_refuses_a_write_scope_on_a_public_key(b: Backend) {
    let app = spawn(b).await;
    assert_eq!(stderr_error(&key_create(&app, "public", "campaigns:read,campaigns:write", &[])), "validation_failed");
}

async fn the_withdrawals_capability_is_refused_on_a_public_key(b: Backend) {
    let app = spawn(b).await;
    let out = key_create(&app, "public", "campaigns:read", &["--capability", "withdrawals"]);
    assert_eq!(stderr_error(&out), "validation_failed");
}

async fn the_withdrawals_capability_is_granted_on_a_private_key(b: Backend) {
    let app = spawn(b).await;
    let v = stdout_json(&key_create(&app, "private", "withdrawals:write", &["--capability", "withdrawals"]));
    assert_eq!(v["capabilities"], serde_json::json!(["withdrawals"]));
    let out = key_create(&app, "private", "withdrawals:write", &["--capability", "teleport"]);
    assert_eq!(stderr_error(&out), "validation_failed");
}

async fn tessera_call_signs_a_request_from_the_environment(b: Backend) {
    let app = spawn(b).await;
    let key = &app.account.private;
    let out = call(&app, &key.key_id, &key.secret, &["GET", "/api/white-label/v1/context"]);
    let v = stdout_json(&out);
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["data"]["account"]["accountSlug"], app.account.slug.as_str());
}

async fn tessera_call_with_a_bad_secret_exits_non_zero(b: Backend) {
    let app = spawn(b).await;
    let out = call(&app, &app.account.private.key_id, "not-the-secret", &["GET", "/api/white-label/v1/context"]);
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("the error envelope on stdout");
    assert_eq!(v["code"], "invalid_signature", "{v}");
}

on_both!(
    account_create_prints_the_contract_fields,
    account_create_with_a_taken_slug_fails_with_a_json_error,
    account_list_includes_the_account,
    account_set_status_prints_the_new_status,
    domain_add_prints_the_domain_fields,
    key_create_prints_the_key_once_with_its_fields,
    key_list_never_prints_a_secret,
    key_revoke_prints_status_revoked,
    key_create_refuses_an_unknown_scope,
    key_create_refuses_a_write_scope_on_a_public_key,
    the_withdrawals_capability_is_refused_on_a_public_key,
    the_withdrawals_capability_is_granted_on_a_private_key,
    tessera_call_signs_a_request_from_the_environment,
    tessera_call_with_a_bad_secret_exits_non_zero,
);

//! The operator CLI, run as the real binary against the test store.
use serde_json::Value;

use crate::helpers::{spawn, Backend};

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

on_both!(account_create_prints_the_contract_fields);

//! The ledger as the API lists it, and the money audit the operator runs.
use serde_json::Value;

use super::client::StatusCode;
use super::payments::LEDGER;
use super::server::TestApp;

/// The default account's last 100 ledger entries (`GET /ledger?limit=100`).
pub async fn ledger(app: &TestApp) -> Value {
    app.api().get(&format!("{LEDGER}?limit=100"), StatusCode::OK).await
}

/// The (kind, amount) of every entry of `ledger` for `reference`, sorted by kind.
pub fn ledger_kinds(ledger: &Value, reference: &str) -> Vec<(String, f64)> {
    let mut kinds: Vec<(String, f64)> = ledger["data"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["reference"] == reference)
        .map(|e| (e["kind"].as_str().unwrap_or_default().to_string(), e["amount"].as_f64().unwrap_or_default()))
        .collect();
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    kinds
}

/// `list` in the shape `ledger_kinds` returns.
pub fn kinds(list: &[(&str, f64)]) -> Vec<(String, f64)> {
    list.iter().map(|(k, a)| (k.to_string(), *a)).collect()
}

/// `tessera admin ledger check --json` through the real binary: exits 0 and reports ok.
pub fn assert_ledger_clean(app: &TestApp) {
    let out = app.cli(&["admin", "ledger", "check", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(out.status.success(), "ledger check failed: {report} {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(report["ok"], true, "{report}");
}

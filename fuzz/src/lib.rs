//! The checks behind Tessera's fuzz targets (issue 13, part 2), one function per target. Each
//! feeds raw bytes to a parser that meets input from the network and asserts what must hold for
//! every input, beyond "does not panic". The libFuzzer targets in `fuzz_targets/` call these
//! under cargo-fuzz (nightly); the integration suite includes this same file
//! (`tests/api/stress_regressions.rs`) and replays every file of `fuzz/corpus/<target>` through
//! it on the stable toolchain, so the corpus is a regression suite in the normal test run.
use hmac::Mac;
use serde_json::{json, Value};
use tessera_server::domain::{money, settings};
use tessera_server::http::extract::parse_json;
use tessera_server::http::middleware::credentials::valid_nonce;
use tessera_server::http::v1::campaigns::CampaignIn;
use tessera_server::http::v1::withdrawals::WithdrawalIn;
use tessera_server::providers::payments::{adapter, ProviderId};

/// The target names, as directories of `fuzz/corpus/` and binaries of `fuzz_targets/`.
pub const TARGETS: [&str; 5] = ["signed_request", "money", "json_body", "settings_patch", "provider_webhook"];

/// Runs the check of `target` on `data` (the corpus replay's entry point).
pub fn run(target: &str, data: &[u8]) {
    match target {
        "signed_request" => signed_request(data),
        "money" => money_amount(data),
        "json_body" => json_body(data),
        "settings_patch" => settings_patch(data),
        "provider_webhook" => provider_webhook(data),
        other => panic!("no fuzz target {other:?}"),
    }
}

/// Splits `data` at NUL bytes into at most `n` parts (missing ones are empty).
fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    let mut v: Vec<&[u8]> = data.splitn(n, |b| *b == 0).collect();
    v.resize(n, &[]);
    v
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The signed-header scheme (D2): timestamp window, nonce rule, canonical string, signature.
/// Input: `timestamp \0 method \0 path \0 nonce \0 signature \0 body`.
pub fn signed_request(data: &[u8]) {
    let p = parts(data, 6);
    let (ts, method, path, nonce, signature, body) = (text(p[0]), text(p[1]), text(p[2]), text(p[3]), text(p[4]), p[5]);
    let now = 1_800_000_000_000_i64;
    let tolerance = 300_000;
    if let Ok(t) = tessera_sign::check_timestamp(&ts, now, tolerance) {
        assert!((t - now).abs() <= tolerance, "a timestamp outside the window passed: {ts:?}");
    }
    if valid_nonce(&nonce) {
        assert!(
            (8..=128).contains(&nonce.len())
                && nonce.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        );
    }
    // The canonical string is `<ts>.<METHOD>.<path>.<body or {}>` (D2.4), byte for byte; the
    // method is upper-cased in ASCII only (an HTTP method is an ASCII token; the fuzzer's first
    // find was this oracle using Unicode upper case, kept as corpus/signed_request/unicode-method).
    let canonical = tessera_sign::canonical_string(&ts, &method, &path, body);
    let mut want = format!("{ts}.{}.{path}.", method.to_ascii_uppercase()).into_bytes();
    want.extend_from_slice(if body.is_empty() { b"{}" } else { body });
    assert_eq!(canonical, want, "canonical string");
    let secret = b"whsec_fuzz_secret";
    let good = tessera_sign::sign(secret, &ts, &method, &path, body);
    assert!(tessera_sign::verify_signature(secret, &ts, &method, &path, body, &good).is_ok(), "own signature refused");
    // A fuzzed signature passes only if it is the right one (hex, any case).
    if tessera_sign::verify_signature(secret, &ts, &method, &path, body, &signature).is_ok() {
        assert_eq!(signature, good, "a wrong signature passed");
    }
    // Any other body (one more byte) breaks it.
    let mut other = body.to_vec();
    other.push(b'x');
    assert!(tessera_sign::verify_signature(secret, &ts, &method, &path, &other, &good).is_err(), "changed body passed");
}

/// Money (D1.5): whatever JSON comes in, an accepted amount is 0..=MAX pesewas and reads back
/// exactly from its own wire form.
pub fn money_amount(data: &[u8]) {
    let v: Value = match serde_json::from_slice(data) {
        Ok(v) => v,
        Err(_) => match std::str::from_utf8(data).ok().and_then(|s| s.trim().parse::<f64>().ok()) {
            Some(n) => serde_json::Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null),
            None => return,
        },
    };
    if let Ok(p) = money::from_ghs("amount", &v) {
        assert!((0..=money::MAX_PESEWAS).contains(&p), "{v} -> {p}");
        let wire = money::to_ghs(p);
        assert_eq!(money::from_ghs("amount", &wire).ok(), Some(p), "{v} -> {p} -> {wire}");
        let n = v.as_f64().expect("a number was accepted");
        assert!((n * 100.0 - p as f64).abs() < 0.5, "{v} -> {p}");
    }
}

fn keys_within(v: &Value, allowed: &[&str]) -> bool {
    v.as_object().is_some_and(|o| o.keys().all(|k| allowed.contains(&k.as_str())))
}

fn has_nul(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains('\0'),
        Value::Array(a) => a.iter().any(has_nul),
        Value::Object(o) => o.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

/// JSON body decoding (`ApiJson`): any refusal is a 400; an accepted body is a JSON object with
/// only known fields (the unknown-field guard) and no U+0000 anywhere.
pub fn json_body(data: &[u8]) {
    const CAMPAIGN: [&str; 10] = [
        "title",
        "description",
        "campaign_type",
        "status",
        "start_date",
        "end_date",
        "metadata",
        "slug",
        "vote_price",
        "verification_required",
    ];
    const WITHDRAWAL: [&str; 5] = ["amount", "bank_name", "bank_code", "account_number", "account_name"];
    let value: Option<Value> = serde_json::from_slice(data).ok();
    match parse_json::<CampaignIn>(data) {
        Ok(_) => {
            let v = value.as_ref().expect("accepted bodies are JSON");
            assert!(keys_within(v, &CAMPAIGN) && !has_nul(v), "accepted: {v}");
        }
        Err(e) => assert_eq!(e.status.as_u16(), 400, "{e:?}"),
    }
    match parse_json::<WithdrawalIn>(data) {
        Ok(_) => {
            let v = value.as_ref().expect("accepted bodies are JSON");
            assert!(keys_within(v, &WITHDRAWAL) && !has_nul(v), "accepted: {v}");
        }
        Err(e) => assert_eq!(e.status.as_u16(), 400, "{e:?}"),
    }
}

/// Settings (D10): the patch check, each category's rules, the RFC 7396 merge (idempotent: the
/// same patch twice is the patch once; `null` deletes), sealing and masking. Input: a JSON array
/// `[stored, patch]`; the first byte picks the category.
pub fn settings_patch(data: &[u8]) {
    let Some(first) = data.first() else { return };
    let category = settings::CATEGORIES[*first as usize % settings::CATEGORIES.len()];
    let Ok(Value::Array(pair)) = serde_json::from_slice::<Value>(&data[1..]) else { return };
    let (Some(stored), Some(patch)) = (pair.first(), pair.get(1)) else { return };
    let checked = settings::check_patch("config", patch).is_ok();
    let _ = settings::validate(category, patch);
    // What is stored only ever came through the same check (no `$` keys, string secrets).
    let stored = if settings::check_patch("config", stored).is_ok() { stored.clone() } else { json!({}) };
    let mut once = stored;
    settings::merge_patch(&mut once, patch);
    let mut twice = once.clone();
    settings::merge_patch(&mut twice, patch);
    assert_eq!(once, twice, "merge patch is not idempotent for {patch}");
    if let (Some(p), Some(o)) = (patch.as_object(), once.as_object()) {
        for (k, v) in p {
            if v.is_null() {
                assert!(!o.contains_key(k), "null did not delete {k:?}");
            } else if !(settings::is_secret_key(k) && v.as_str().is_some_and(|s| s.starts_with("••••"))) {
                assert!(o.contains_key(k), "patched key {k:?} missing");
            }
        }
    }
    let _ = settings::validate(category, &once);
    let _ = settings::check_outbound_urls(category, &once, false);
    if !checked {
        return;
    }
    let mut sealed = once.clone();
    settings::seal_secrets(
        &mut sealed,
        "",
        &|_, plain| json!({"$sealed": "x", "last4": settings::visible_tail(plain)}),
    );
    settings::mask_sealed(&mut sealed);
    // After masking, no secret-looking key holds a readable string other than a mask.
    fn no_plain_secret(v: &Value, plain_allowed: bool) {
        match v {
            Value::Object(o) => {
                for (k, child) in o {
                    if let Value::String(s) = child {
                        if settings::is_secret_key(k) && !plain_allowed {
                            assert!(s.starts_with("••••"), "secret {k:?} readable after masking: {s:?}");
                        }
                    }
                    no_plain_secret(child, plain_allowed);
                }
            }
            Value::Array(a) => a.iter().for_each(|c| no_plain_secret(c, plain_allowed)),
            _ => {}
        }
    }
    no_plain_secret(&sealed, false);
}

/// Provider webhooks (D6): each adapter's signature check and body reader. Input:
/// `signature \0 body`. A signature made with the secret verifies; the fuzzed one verifies only
/// if it is that one; a parsed event has a non-empty event and reference.
pub fn provider_webhook(data: &[u8]) {
    let p = parts(data, 2);
    let (signature, body) = (text(p[0]), p[1]);
    let secret = b"sk_test_fuzz";
    for id in [ProviderId::A, ProviderId::B, ProviderId::C] {
        let a = adapter(id);
        let good = if id == ProviderId::A {
            let mut m = hmac::Hmac::<sha2::Sha512>::new_from_slice(secret).expect("hmac key");
            m.update(body);
            hex::encode(m.finalize().into_bytes())
        } else {
            let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret).expect("hmac key");
            m.update(body);
            hex::encode(m.finalize().into_bytes())
        };
        assert!(a.verify_signature(secret, body, &good), "{id:?}: own signature refused");
        if a.verify_signature(secret, body, &signature) {
            assert!(signature.trim().eq_ignore_ascii_case(&good), "{id:?}: wrong signature passed: {signature:?}");
        }
        if let Ok(e) = a.parse_callback(body) {
            assert!(!e.event.is_empty() && !e.reference.is_empty(), "{id:?}: {e:?}");
            let key = e.event_key();
            assert!(key.starts_with(&e.event), "{key}");
        }
    }
}

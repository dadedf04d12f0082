//! Regression tests from issue 13's stress work: the fuzz corpus replayed on the stable
//! toolchain, and one test per finding of the schema-driven fuzzing, the fuzz targets and the
//! chaos run (docs/reliability.md, "Proof under stress").

/// The checks of the cargo-fuzz targets, the very file `fuzz/` builds them from.
#[path = "../../../../fuzz/src/lib.rs"]
mod checks;

/// Every file of `fuzz/corpus/<target>` goes through its target's checks (which panic on a
/// violated property), so the corpus the fuzzer grew is a regression suite in the normal run.
#[test]
fn the_fuzz_corpus_replays_through_every_target_without_a_failure() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    for target in checks::TARGETS {
        let dir = root.join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no corpus for {target}");
        for file in files {
            let data = std::fs::read(&file).expect("read corpus file");
            let outcome = std::panic::catch_unwind(|| checks::run(target, &data));
            assert!(outcome.is_ok(), "{target}: {} fails its checks", file.display());
        }
    }
}

// --- findings of the schema-driven fuzzing -----------------------------------------------------

use serde_json::Value;
use tessera_client::Method;

use crate::support::server::{spawn, Backend};

/// Finding (Schemathesis, "schema validation mismatch" on `GET /notifications`): its `status`,
/// `channel`, `page` and `limit` were declared as free strings, so generated values were mostly
/// refused with 400. Every list's pager is now an integer with its bounds and every `status`,
/// `channel` and `type` filter an enum, in the document as served; and the values the document
/// offers are the ones the server accepts.
async fn every_list_filter_is_declared_as_the_server_reads_it(b: Backend) {
    let app = spawn(b).await;
    let doc: Value = app
        .http
        .get(app.url("/api/white-label/v1/openapi.json"))
        .send()
        .await
        .expect("doc")
        .json()
        .await
        .expect("json");
    let mut lists = 0;
    for (path, item) in doc["paths"].as_object().expect("paths") {
        let Some(params) = item["get"]["parameters"].as_array() else { continue };
        for p in params.iter().filter(|p| p["in"] == "query") {
            let name = p["name"].as_str().expect("name");
            let schema = &p["schema"];
            match name {
                "page" | "limit" => {
                    lists += usize::from(name == "page");
                    let max = if name == "page" { 1_000_000 } else { 100 };
                    assert_eq!(schema["type"], "integer", "GET {path} {name}: {schema}");
                    assert_eq!(
                        (schema["minimum"].as_i64(), schema["maximum"].as_i64()),
                        (Some(1), Some(max)),
                        "GET {path} {name}"
                    );
                }
                "status" | "channel" | "type" => {
                    assert!(schema["enum"].as_array().is_some_and(|e| !e.is_empty()), "GET {path} {name}: {schema}");
                }
                _ => {}
            }
        }
    }
    assert!(lists >= 8, "the document's lists: {lists}");
    let notifications = &doc["paths"]["/api/white-label/v1/notifications"]["get"]["parameters"];
    for p in
        notifications.as_array().expect("params").iter().filter(|p| p["name"] == "status" || p["name"] == "channel")
    {
        for value in p["schema"]["enum"].as_array().expect("enum") {
            let q = format!(
                "/api/white-label/v1/notifications?{}={}&page=1&limit=100",
                p["name"].as_str().expect("name"),
                value.as_str().expect("value")
            );
            let (s, body) = app.signed(Method::GET, &q, None).await;
            assert_eq!(s, 200, "{q}: {body}");
        }
    }
    let (s, _) = app.signed(Method::GET, "/api/white-label/v1/notifications?channel=fax", None).await;
    assert_eq!(s, 400);
}

on_both!(every_list_filter_is_declared_as_the_server_reads_it);

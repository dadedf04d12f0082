//! The OpenAPI 3.1 document: served at `/api/white-label/v1/openapi.json`, printed by
//! `tessera openapi`, and in step with the live route table both ways (every route of the spec
//! and the decisions is documented; every documented operation is really served).
use std::collections::BTreeSet;

use serde_json::Value;
use tessera_client::Method;

use crate::support::client::{assert_error, raw};
use crate::support::server::{spawn, Backend, TestApp};

const DOC: &str = "/api/white-label/v1/openapi.json";
const V1: &str = "/api/white-label/v1";

/// Every route the spec ("Endpoints") and the decisions (D3.3, D3.6–D3.8, D4.1) give, by method.
const PORTAL: &str = "/api/white-label/portal/";
const PORTAL_SIGN_IN: &str = "/api/white-label/portal/auth/otp/";

const ROUTES: &[(&str, &str)] = &[
    ("get", "/api/white-label/v1/context"),
    ("get", "/api/white-label/v1/campaigns"),
    ("post", "/api/white-label/v1/campaigns"),
    ("get", "/api/white-label/v1/campaigns/{campaignId}"),
    ("patch", "/api/white-label/v1/campaigns/{campaignId}"),
    ("get", "/api/white-label/v1/ticket-types"),
    ("post", "/api/white-label/v1/ticket-types"),
    ("post", "/api/white-label/v1/ticket-types/bootstrap"),
    ("get", "/api/white-label/v1/participants"),
    ("post", "/api/white-label/v1/participants"),
    ("get", "/api/white-label/v1/campaigns/{campaignId}/leaderboard"),
    ("get", "/api/white-label/v1/campaigns/{campaignId}/leaderboard/stream"),
    ("get", "/api/white-label/v1/settings"),
    ("patch", "/api/white-label/v1/settings/{category}"),
    ("get", "/api/white-label/v1/storefront"),
    ("get", "/api/white-label/v1/config"),
    ("get", "/api/white-label/v1/submissions"),
    ("post", "/api/white-label/v1/submissions"),
    ("post", "/api/white-label/v1/payments/initialize"),
    ("post", "/api/white-label/v1/payments/verify"),
    ("get", "/api/white-label/v1/payments"),
    ("get", "/api/white-label/v1/payments/{reference}"),
    ("post", "/api/white-label/v1/payments/{reference}/refunds"),
    ("get", "/api/white-label/v1/payments/{reference}/refunds"),
    ("get", "/api/white-label/v1/refunds/{id}"),
    ("post", "/api/white-label/v1/campaigns/{campaignId}/cancel"),
    ("get", "/api/white-label/v1/balance"),
    ("get", "/api/white-label/v1/ledger"),
    ("post", "/api/white-label/v1/withdrawals"),
    ("get", "/api/white-label/v1/withdrawals"),
    ("get", "/api/white-label/v1/withdrawals/{id}"),
    ("post", "/api/white-label/v1/tickets/verify"),
    ("post", "/api/white-label/v1/my-tickets/request-otp"),
    ("post", "/api/white-label/v1/my-tickets/verify-otp"),
    ("post", "/api/white-label/v1/my-tickets/list"),
    ("post", "/api/white-label/v1/my-tickets/qr"),
    ("post", "/api/white-label/v1/notifications"),
    ("get", "/api/white-label/v1/notifications"),
    ("get", "/api/white-label/v1/notifications/{id}"),
    ("post", "/api/white-label/v1/webhook-endpoints"),
    ("get", "/api/white-label/v1/webhook-endpoints"),
    ("get", "/api/white-label/v1/webhook-endpoints/{id}"),
    ("patch", "/api/white-label/v1/webhook-endpoints/{id}"),
    ("delete", "/api/white-label/v1/webhook-endpoints/{id}"),
    ("post", "/api/white-label/v1/webhook-endpoints/{id}/rotate-secret"),
    ("post", "/api/white-label/v1/webhook-endpoints/{id}/test"),
    ("post", "/api/white-label/v1/webhook-endpoints/{id}/replay"),
    ("get", "/api/white-label/v1/webhook-endpoints/{id}/attempts"),
    ("get", "/api/white-label/v1/events"),
    ("post", "/api/white-label/webhooks/{provider}"),
    ("post", "/api/white-label/portal/auth/otp/start"),
    ("post", "/api/white-label/portal/auth/otp/verify"),
    ("post", "/api/white-label/portal/auth/logout"),
    ("get", "/api/white-label/portal/reseller"),
    ("patch", "/api/white-label/portal/reseller/profile"),
    ("post", "/api/white-label/portal/reseller/members"),
    ("patch", "/api/white-label/portal/reseller/members/{memberId}"),
    ("post", "/api/white-label/portal/reseller/approval-requests"),
    ("get", "/api/white-label/portal/reseller/approval-requests"),
    ("patch", "/api/white-label/portal/reseller/approval-requests/{id}"),
    ("post", "/api/white-label/portal/reseller/otp/send"),
    ("post", "/api/white-label/portal/reseller/otp/verify"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/pay/done"),
];

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

async fn served_doc(app: &TestApp) -> Value {
    let r = raw(app.http.get(app.url(DOC)).send().await.expect("send")).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let ct = r.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert!(ct.starts_with("application/json"), "content-type: {ct}");
    serde_json::from_slice(&r.body).expect("the document is JSON")
}

/// Every (method, path) operation of a document.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let paths = doc["paths"].as_object().expect("paths object");
    let mut ops = BTreeSet::new();
    for (path, item) in paths {
        for (method, _) in item.as_object().expect("path item object") {
            if METHODS.contains(&method.as_str()) {
                ops.insert((method.clone(), path.clone()));
            }
        }
    }
    ops
}

/// The `{name}` parameters of a templated path.
fn path_params(path: &str) -> Vec<String> {
    path.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}'))).map(str::to_string).collect()
}

/// A concrete request path: `category` becomes `payments`, any other parameter a random UUID.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some("category") => "payments".to_string(),
            Some(_) => uuid::Uuid::new_v4().to_string(),
            None => seg.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every `$ref` string anywhere in `v`.
fn refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(s)) => out.push(s.clone()),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

async fn the_document_is_served_as_openapi_3_1_json(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    let version = doc["openapi"].as_str().expect("openapi version string");
    assert!(version.starts_with("3.1"), "openapi: {version}");
    assert!(doc["info"]["title"].as_str().is_some_and(|t| !t.is_empty()), "{}", doc["info"]);
    assert!(doc["info"]["version"].as_str().is_some_and(|t| !t.is_empty()), "{}", doc["info"]);
    // The document is public: no credentials needed, and no auth error in its place.
    assert!(doc.get("success").is_none(), "not an envelope");
}

async fn the_document_lists_every_route_with_its_method(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    let ops = operations(&doc);
    let missing: Vec<String> = ROUTES
        .iter()
        .filter(|(m, p)| !ops.contains(&(m.to_string(), p.to_string())))
        .map(|(m, p)| format!("{} {p}", m.to_uppercase()))
        .collect();
    assert!(missing.is_empty(), "undocumented routes: {missing:?}; documented: {ops:?}");
}

async fn every_operation_documents_responses_parameters_and_write_bodies(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    for (method, path) in ROUTES {
        let op = &doc["paths"][*path][*method];
        let what = format!("{} {path}", method.to_uppercase());
        let responses = op["responses"].as_object().unwrap_or_else(|| panic!("{what}: responses: {op}"));
        assert!(!responses.is_empty(), "{what}: at least one response");
        assert!(responses.keys().any(|s| s.starts_with('2')), "{what}: a success response: {responses:?}");
        if matches!(*method, "post" | "patch") {
            let schema = &op["requestBody"]["content"]["application/json"]["schema"];
            assert!(
                schema.is_object() && !schema.as_object().is_some_and(|s| s.is_empty()),
                "{what}: requestBody schema: {op}"
            );
        }
        let params: Vec<&Value> = op["parameters"].as_array().map(|a| a.iter().collect()).unwrap_or_default();
        for name in path_params(path) {
            let declared =
                params.iter().any(|p| p["name"] == name.as_str() && p["in"] == "path" && p["required"] == true);
            assert!(declared, "{what}: required path parameter {name}: {op}");
        }
    }
}

async fn the_components_hold_both_security_schemes_and_the_error_envelope(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    let schemes = &doc["components"]["securitySchemes"];
    for name in ["signed", "domainKey"] {
        assert!(schemes[name].is_object(), "securitySchemes.{name}: {schemes}");
        assert_eq!(schemes[name]["in"], "header", "{name}: {}", schemes[name]);
    }
    assert_eq!(schemes["signed"]["name"], "x-white-label-key-id");
    assert_eq!(schemes["domainKey"]["name"], "x-white-label-key");
    let envelope = &doc["components"]["schemas"]["ErrorEnvelope"];
    assert!(envelope.is_object(), "ErrorEnvelope: {}", doc["components"]["schemas"]);
    for field in ["success", "error", "code", "requestId", "details"] {
        assert!(envelope["properties"][field].is_object(), "ErrorEnvelope.{field}: {envelope}");
    }
    let required: BTreeSet<&str> =
        envelope["required"].as_array().expect("required").iter().filter_map(Value::as_str).collect();
    assert_eq!(required, BTreeSet::from(["success", "error", "code", "requestId"]));
}

async fn every_version_1_operation_names_a_declared_security_scheme(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    let declared: BTreeSet<String> =
        doc["components"]["securitySchemes"].as_object().expect("securitySchemes").keys().cloned().collect();
    for (method, path) in operations(&doc) {
        let op = &doc["paths"][path.as_str()][method.as_str()];
        let named: Vec<String> = op["security"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_object).flat_map(|o| o.keys().cloned()).collect())
            .unwrap_or_default();
        if path.starts_with(V1) || (path.starts_with(PORTAL) && !path.starts_with(PORTAL_SIGN_IN)) {
            assert!(!named.is_empty(), "{method} {path} names no security scheme: {op}");
            for n in &named {
                assert!(declared.contains(n), "{method} {path} names undeclared scheme {n}");
            }
        } else {
            assert!(named.is_empty(), "{method} {path} is open: {op}");
        }
    }
    let expect_both = &doc["paths"]["/api/white-label/v1/campaigns"]["get"]["security"];
    let names: BTreeSet<String> = expect_both
        .as_array()
        .expect("security")
        .iter()
        .filter_map(Value::as_object)
        .flat_map(|o| o.keys().cloned())
        .collect();
    assert_eq!(names, BTreeSet::from(["signed".to_string(), "domainKey".to_string()]), "the list has two forms");
}

async fn every_schema_reference_resolves(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(!found.is_empty(), "the document uses component schemas");
    for r in found {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("unexpected $ref {r}"));
        assert!(doc["components"]["schemas"][name].is_object(), "dangling $ref {r}");
    }
}

async fn every_documented_operation_is_served(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    let ops = operations(&doc);
    assert!(ops.len() >= ROUTES.len(), "{ops:?}");
    for (method, path) in ops {
        let target = concrete(&path);
        let m = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
        let mut req = app.http.request(m, app.url(&target));
        if matches!(method.as_str(), "post" | "patch" | "put") {
            req = req.header("content-type", "application/json").body("{}");
        }
        let r = raw(req.send().await.expect("send")).await;
        let what = format!("{} {target} (documented as {path})", method.to_uppercase());
        assert!(r.status != 404 && r.status != 405, "{what}: {} {}", r.status, String::from_utf8_lossy(&r.body));
        if path.starts_with(V1) {
            assert_eq!(r.status, 401, "{what} without credentials: {}", String::from_utf8_lossy(&r.body));
            assert_error(&r, 401, "missing_auth");
        } else if path.starts_with("/api/white-label/webhooks/") || path.starts_with("/api/white-label/ussd/") {
            // Served: the made-up provider or gateway is refused before the body or a signature
            // or token is read.
            assert_error(&r, 400, "validation_failed");
        } else if path.starts_with(PORTAL) {
            // Sign-in answers the empty body with 400; the console wants a session (401). Both in
            // the portal envelope: no requestId (D16.26).
            let expected = if path.starts_with(PORTAL_SIGN_IN) { 400 } else { 401 };
            let body = r.json();
            assert_eq!(r.status, expected, "{what}: {body}");
            assert!(
                body["success"] == false && body["code"].is_string() && body.get("requestId").is_none(),
                "{what}: {body}"
            );
        } else {
            assert_eq!(r.status, 200, "{what}: {}", String::from_utf8_lossy(&r.body));
        }
    }
}

async fn the_cli_prints_the_same_document_as_the_server_serves(b: Backend) {
    let app = spawn(b).await;
    let served = served_doc(&app).await;
    let out = app.cli(&["openapi"]);
    assert!(out.status.success(), "exit {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).expect("tessera openapi prints JSON");
    assert_eq!(operations(&printed), operations(&served), "same operations");
    assert_eq!(printed["paths"], served["paths"], "same paths, operation for operation");
    assert_eq!(printed["openapi"], served["openapi"]);
    assert_eq!(printed["components"], served["components"]);
}

/// Resolves a local `$ref` (or returns the value itself).
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v["$ref"].as_str().and_then(|r| r.strip_prefix("#/")) {
        Some(path) => path.split('/').fold(doc, |at, seg| &at[seg]),
        None => v,
    }
}

/// Every operation object with its method and path.
fn each_operation(doc: &Value) -> Vec<(String, String, &Value)> {
    operations(doc)
        .into_iter()
        .map(|(m, p)| {
            let op = &doc["paths"][p.as_str()][m.as_str()];
            (m, p, op)
        })
        .collect()
}

/// The names of the security schemes an operation accepts.
fn security_names(op: &Value) -> BTreeSet<String> {
    op["security"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_object).flat_map(|o| o.keys().cloned()).collect())
        .unwrap_or_default()
}

async fn operation_ids_are_unique_and_named_resource_underscore_verb(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    let mut seen = BTreeSet::new();
    for (method, path, op) in each_operation(&doc) {
        let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path}: no operationId"));
        let (resource, verb) = id.rsplit_once('_').unwrap_or_else(|| panic!("{id}: not <resource>_<verb>"));
        let snake = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_lowercase() || c == b'_');
        assert!(snake(resource) && snake(verb), "{method} {path}: operationId {id} is not <resource>_<verb>");
        assert!(seen.insert(id.to_string()), "{method} {path}: operationId {id} repeats");
    }
}

async fn every_parameter_is_where_the_server_reads_it(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    for (method, path, op) in each_operation(&doc) {
        let template = path_params(&path);
        let mut declared_path = BTreeSet::new();
        for p in op["parameters"].as_array().into_iter().flatten() {
            let name = p["name"].as_str().expect("parameter name");
            match p["in"].as_str() {
                Some("path") => {
                    assert!(template.iter().any(|t| t == name), "{method} {path}: {name} is no part of the path");
                    assert_eq!(p["required"], true, "{method} {path}: path parameter {name} must be required");
                    declared_path.insert(name.to_string());
                }
                Some("query") => {
                    assert!(!template.iter().any(|t| t == name), "{method} {path}: {name} is a path segment");
                    assert_ne!(p["required"], true, "{method} {path}: query filter {name} is optional");
                }
                // The one request header a route reads itself (D9.1); auth headers belong to the
                // security schemes.
                Some("header") if name == "X-Idempotency-Key" && method == "post" => {}
                other => {
                    panic!("{method} {path}: parameter {name} in {other:?}; headers belong to the security schemes")
                }
            }
        }
        let template: BTreeSet<String> = template.into_iter().collect();
        assert_eq!(declared_path, template, "{method} {path}: every path segment declared once");
    }
}

async fn every_authenticated_operation_documents_its_auth_errors_and_every_4xx_the_envelope(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    for (method, path, op) in each_operation(&doc) {
        let what = format!("{} {path}", method.to_uppercase());
        let responses = op["responses"].as_object().expect("responses");
        if !security_names(op).is_empty() {
            for status in ["401", "403", "429"] {
                assert!(responses.contains_key(status), "{what}: authenticated, but {status} is not documented");
            }
            assert!(
                responses["429"]["headers"]["retry-after"].is_object(),
                "{what}: 429 documents Retry-After: {}",
                responses["429"]
            );
        }
        if op["requestBody"].is_object() {
            for status in ["400", "413"] {
                assert!(responses.contains_key(status), "{what}: takes a body, but {status} is not documented");
            }
            // D17.11: a signed body without `content-type: application/json` is 415.
            if security_names(op).contains("signed") {
                assert!(responses.contains_key("415"), "{what}: takes a signed body, but 415 is not documented");
            }
        }
        if op["parameters"].as_array().is_some_and(|a| a.iter().any(|p| p["in"] == "query")) {
            assert!(responses.contains_key("400"), "{what}: reads a query, but 400 is not documented");
        }
        for (status, response) in responses {
            if !status.starts_with('4') {
                continue;
            }
            let response = resolve(&doc, response);
            let schema = &response["content"]["application/json"]["schema"];
            let name = schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/"));
            assert!(
                name.is_some_and(|n| n.ends_with("ErrorEnvelope") && doc["components"]["schemas"][n].is_object()),
                "{what} {status}: the body must be an error envelope schema: {response}"
            );
            assert!(response["headers"]["x-request-id"].is_object(), "{what} {status}: x-request-id header");
        }
    }
}

async fn every_request_body_has_an_example_and_closed_rules(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    for (method, path, op) in each_operation(&doc) {
        let Some(content) = op["requestBody"]["content"]["application/json"].as_object() else { continue };
        let schema = resolve(&doc, &content["schema"]);
        let what = format!("{} {path}", method.to_uppercase());
        assert!(
            content.contains_key("example") || content.contains_key("examples") || schema["example"].is_object(),
            "{what}: the request body has no example"
        );
        if path.starts_with("/api/white-label/webhooks/") || path.starts_with("/api/white-label/ussd/") {
            continue; // the provider's or the gateway's own wire: its fields are theirs, not ours to close
        }
        // A body of two forms (payments/initialize) is a oneOf of closed objects.
        let forms: Vec<Value> = match schema["oneOf"].as_array() {
            Some(all) => all.iter().map(|f| resolve(&doc, f).clone()).collect(),
            None => vec![schema.clone()],
        };
        for form in forms {
            assert_eq!(form["additionalProperties"], false, "{what}: unknown fields are refused (D1.4): {form}");
        }
    }
}

async fn campaign_create_and_update_have_their_own_schemas_with_the_spec_rules(b: Backend) {
    let app = spawn(b).await;
    let doc = served_doc(&app).await;
    let create = resolve(
        &doc,
        &doc["paths"]["/api/white-label/v1/campaigns"]["post"]["requestBody"]["content"]["application/json"]["schema"],
    );
    let update = resolve(
        &doc,
        &doc["paths"]["/api/white-label/v1/campaigns/{campaignId}"]["patch"]["requestBody"]["content"]
            ["application/json"]["schema"],
    );
    let required: BTreeSet<&str> =
        create["required"].as_array().expect("required").iter().filter_map(Value::as_str).collect();
    assert_eq!(required, BTreeSet::from(["title", "description", "campaign_type", "start_date", "end_date"]));
    assert!(update["required"].as_array().is_none_or(|r| r.is_empty()), "PATCH requires nothing: {update}");
    for schema in [create, update] {
        let p = &schema["properties"];
        assert_eq!((p["title"]["minLength"].as_u64(), p["title"]["maxLength"].as_u64()), (Some(3), Some(255)), "{p}");
        assert_eq!(
            (p["description"]["minLength"].as_u64(), p["description"]["maxLength"].as_u64()),
            (Some(10), Some(5000))
        );
        assert_eq!(p["campaign_type"]["enum"], serde_json::json!(["voting", "donation", "ticketing"]));
        assert_eq!(
            p["status"]["enum"],
            serde_json::json!(["draft", "pending_approval", "approved", "rejected", "archived"])
        );
        assert_eq!(p["start_date"]["format"], "date-time");
        assert_eq!(p["vote_price"]["multipleOf"], 0.01, "money has at most 2 decimals (D1.5)");
        assert!(p["slug"]["pattern"].is_string(), "{p}");
    }
    let tt = &doc["components"]["schemas"]["TicketTypeIn"]["properties"];
    assert_eq!(tt["campaignId"]["format"], "uuid");
    assert_eq!(tt["price"]["multipleOf"], 0.01);
    assert_eq!(doc["components"]["schemas"]["SubmissionIn"]["properties"]["email"]["format"], "email");
    assert_eq!(doc["components"]["schemas"]["ParticipantIn"]["properties"]["imageUrl"]["format"], "uri");
}

on_both!(
    operation_ids_are_unique_and_named_resource_underscore_verb,
    every_parameter_is_where_the_server_reads_it,
    every_authenticated_operation_documents_its_auth_errors_and_every_4xx_the_envelope,
    every_request_body_has_an_example_and_closed_rules,
    campaign_create_and_update_have_their_own_schemas_with_the_spec_rules,
    the_document_is_served_as_openapi_3_1_json,
    the_document_lists_every_route_with_its_method,
    every_operation_documents_responses_parameters_and_write_bodies,
    the_components_hold_both_security_schemes_and_the_error_envelope,
    every_version_1_operation_names_a_declared_security_scheme,
    every_schema_reference_resolves,
    every_documented_operation_is_served,
    the_cli_prints_the_same_document_as_the_server_serves,
);

//! Integration tests: settings (spec "Settings", D4): read by category, merge-patch writes,
//! known-key validation, write-only secrets, the provider summary of `/context` and the modules
//! of `/config`.
use secrecy::ExposeSecret;
use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};

use crate::support::client::{assert_error, assert_invalid, send, send_default};
use crate::support::server::{key_with, spawn, Backend, TestApp};

const SETTINGS: &str = "/api/white-label/v1/settings";
const CONTEXT: &str = "/api/white-label/v1/context";
const CONFIG: &str = "/api/white-label/v1/config";
const ALL: [&str; 9] =
    ["branding", "permissions", "payments", "notifications", "ussd", "webhooks", "analytics", "security", "operations"];

fn category_path(category: &str) -> String {
    format!("{SETTINGS}/{category}")
}

/// PATCHes `config` into `category` (200 asserted) and returns `data.config`.
async fn patch(app: &TestApp, category: &str, config: Value) -> Value {
    let (s, b) = app.signed(Method::PATCH, &category_path(category), Some(json!({ "config": config }))).await;
    assert_eq!(s, 200, "PATCH {category}: {b}");
    assert_eq!(b["data"]["category"], category, "{b}");
    b["data"]["config"].clone()
}

async fn get_settings(app: &TestApp, query: &str) -> Value {
    let (s, b) = app.signed(Method::GET, &format!("{SETTINGS}{query}"), None).await;
    assert_eq!(s, 200, "GET settings{query}: {b}");
    b["data"].clone()
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
    k.sort();
    k
}

fn sorted(v: &[&str]) -> Vec<String> {
    let mut k: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    k.sort();
    k
}

async fn all_nine_categories_are_returned_empty_when_nothing_is_set(b: Backend) {
    let app = spawn(b).await;
    let (s, body) = app.signed(Method::GET, SETTINGS, None).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["success"], true);
    assert!(body["requestId"].is_string());
    let data = &body["data"];
    assert_eq!(keys(data), sorted(&ALL));
    for c in ALL {
        assert_eq!(data[c], json!({}), "{c}");
    }
}

async fn settings_are_read_by_comma_list_or_repeated_categories(b: Backend) {
    let app = spawn(b).await;
    patch(&app, "payments", json!({"useSharedDefaults": true})).await;
    patch(&app, "security", json!({"ipAllowList": ["10.0.0.1"]})).await;
    let two = get_settings(&app, "?categories=payments,branding").await;
    assert_eq!(keys(&two), sorted(&["payments", "branding"]));
    assert_eq!(two["payments"], json!({"useSharedDefaults": true}));
    assert_eq!(two["branding"], json!({}));
    let repeated = get_settings(&app, "?categories=payments&categories=security").await;
    assert_eq!(keys(&repeated), sorted(&["payments", "security"]));
    assert_eq!(repeated["security"], json!({"ipAllowList": ["10.0.0.1"]}));
    let one = get_settings(&app, "?categories=security").await;
    assert_eq!(keys(&one), sorted(&["security"]));

    let r = send_default(&app, Method::GET, &format!("{SETTINGS}?categories=payments,bogus"), None).await;
    assert_invalid(&r, &["categories"]);
    let r = send_default(&app, Method::GET, &format!("{SETTINGS}?categories=bogus"), None).await;
    assert_invalid(&r, &["categories"]);
    let r = send_default(&app, Method::GET, &format!("{SETTINGS}?category=payments"), None).await;
    assert_invalid(&r, &["category"]);
}

async fn a_settings_patch_is_a_json_merge_patch(b: Backend) {
    let app = spawn(b).await;
    assert_eq!(patch(&app, "analytics", json!({"a": 1})).await, json!({"a": 1}));
    assert_eq!(patch(&app, "analytics", json!({"b": "two"})).await, json!({"a": 1, "b": "two"}));
    assert_eq!(patch(&app, "analytics", json!({"a": null})).await, json!({"b": "two"}));
    assert_eq!(
        patch(&app, "analytics", json!({"n": {"x": 1, "y": {"z": true}}})).await["n"],
        json!({"x": 1, "y": {"z": true}})
    );
    assert_eq!(
        patch(&app, "analytics", json!({"n": {"y": {"w": [1, 2]}, "x": null}})).await,
        json!({"b": "two", "n": {"y": {"z": true, "w": [1, 2]}}})
    );
    // Arrays and scalars replace; an object replaces a scalar.
    assert_eq!(patch(&app, "analytics", json!({"b": {"deep": 1}})).await["b"], json!({"deep": 1}));
    // The read agrees with the write, and other categories are untouched.
    let all = get_settings(&app, "").await;
    assert_eq!(all["analytics"], json!({"b": {"deep": 1}, "n": {"y": {"z": true, "w": [1, 2]}}}));
    assert_eq!(all["payments"], json!({}));
    // Unknown keys in categories without known keys, and beside known keys, are stored as given.
    assert_eq!(patch(&app, "webhooks", json!({"foo": 1, "bar": [true]})).await, json!({"foo": 1, "bar": [true]}));
    assert_eq!(
        patch(&app, "payments", json!({"feePercent": 2.5, "customNote": "as given"})).await,
        json!({"feePercent": 2.5, "customNote": "as given"})
    );
}

async fn a_bad_category_or_config_is_a_400(b: Backend) {
    let app = spawn(b).await;
    let r = send_default(&app, Method::PATCH, &category_path("bogus"), Some(json!({"config": {"a": 1}}))).await;
    assert_invalid(&r, &["category"]);
    let r = send_default(&app, Method::PATCH, &category_path("analytics"), Some(json!({}))).await;
    assert_invalid(&r, &["config"]);
    for bad in [json!([1, 2]), json!("x"), json!(3), json!(null)] {
        let r = send_default(&app, Method::PATCH, &category_path("analytics"), Some(json!({ "config": bad }))).await;
        eprintln!("config = {bad}");
        assert_invalid(&r, &["config"]);
    }
    let r =
        send_default(&app, Method::PATCH, &category_path("analytics"), Some(json!({"config": {}, "extra": 1}))).await;
    assert_invalid(&r, &["extra"]);
    assert_eq!(get_settings(&app, "?categories=analytics").await["analytics"], json!({}));
}

async fn known_payment_and_notification_keys_are_validated_by_path(b: Backend) {
    let app = spawn(b).await;
    let cases: Vec<(&str, Value, &str)> = vec![
        ("payments", json!({"defaultProvider": "stripe"}), "config.defaultProvider"),
        (
            "payments",
            json!({"defaultProvider": "provider_a", "fallbackProvider": "provider_a"}),
            "config.fallbackProvider",
        ),
        ("payments", json!({"feePercent": 21}), "config.feePercent"),
        ("payments", json!({"feePercent": -1}), "config.feePercent"),
        ("payments", json!({"feeBearer": "nobody"}), "config.feeBearer"),
        ("payments", json!({"useSharedDefaults": "yes"}), "config.useSharedDefaults"),
        ("payments", json!({"providers": {"provider_z": {"secretKey": "sk_x"}}}), "config.providers.provider_z"),
        (
            "payments",
            json!({"providers": {"provider_a": {"baseUrl": "ftp://x"}}}),
            "config.providers.provider_a.baseUrl",
        ),
        ("payments", json!({"channels": {"web": {"provider": "nope"}}}), "config.channels.web.provider"),
        ("payments", json!({"channels": {"fax": {"provider": "provider_a"}}}), "config.channels.fax"),
        ("notifications", json!({"email": {"smtpPort": 70000}}), "config.email.smtpPort"),
        ("notifications", json!({"email": {"fromAddress": "nope"}}), "config.email.fromAddress"),
        ("notifications", json!({"sms": {"senderId": "TwelveChars!"}}), "config.sms.senderId"),
        ("operations", json!({"modules": {"bogus": true}}), "config.modules.bogus"),
        ("operations", json!({"modules": {"voting": "off"}}), "config.modules.voting"),
    ];
    for (category, config, field) in cases {
        eprintln!("{category}: {config}");
        let r = send_default(&app, Method::PATCH, &category_path(category), Some(json!({ "config": config }))).await;
        assert_invalid(&r, &[field]);
    }
    // The fallback rule also holds against a default stored earlier.
    patch(&app, "payments", json!({"defaultProvider": "provider_b"})).await;
    let r = send_default(
        &app,
        Method::PATCH,
        &category_path("payments"),
        Some(json!({"config": {"fallbackProvider": "provider_b"}})),
    )
    .await;
    assert_invalid(&r, &["config.fallbackProvider"]);
    // Nothing refused was stored.
    let all = get_settings(&app, "").await;
    assert_eq!(all["payments"], json!({"defaultProvider": "provider_b"}));
    assert_eq!(all["notifications"], json!({}));
    assert_eq!(all["operations"], json!({}));
    // Valid values at the bounds are accepted.
    let ok = patch(
        &app,
        "payments",
        json!({"fallbackProvider": "provider_c", "feePercent": 20, "feeBearer": "organizer", "feeFixed": 0.5,
               "channels": {"ussd": {"provider": "provider_a"}}, "providers": {"provider_b": {"baseUrl": "https://b.example.com"}}}),
    )
    .await;
    assert_eq!(ok["feePercent"], 20);
    assert_eq!(ok["channels"]["ussd"]["provider"], "provider_a");
    let ok = patch(
        &app,
        "notifications",
        json!({"email": {"smtpPort": 587, "fromAddress": "events@example.com", "smtpHost": "smtp.example.com"}, "sms": {"senderId": "ElevenChars"}}),
    )
    .await;
    assert_eq!(ok["email"]["smtpPort"], 587);
    assert_eq!(ok["sms"]["senderId"], "ElevenChars");
}

const PROVIDER_SECRET: &str = "sk_live_SECRET123456";
const SMTP_PASSWORD: &str = "hunter2-pass";

fn text(r: &RawResponse) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

async fn secrets_are_write_only_and_only_ever_shown_masked(b: Backend) {
    let app = spawn(b).await;
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut keep = |what: &str, r: &RawResponse| seen.push((what.to_string(), text(r)));

    let r = send_default(
        &app,
        Method::PATCH,
        &category_path("payments"),
        Some(json!({"config": {
            "defaultProvider": "provider_a", "fallbackProvider": "provider_b",
            "providers": {"provider_a": {"secretKey": PROVIDER_SECRET, "publicKey": "pk_live_1"}},
        }})),
    )
    .await;
    keep("PATCH payments", &r);
    assert_eq!(r.status, 200, "{}", text(&r));
    let config = &r.json()["data"]["config"];
    assert_eq!(config["providers"]["provider_a"]["secretKey"], "••••3456");
    assert_eq!(config["providers"]["provider_a"]["publicKey"], "pk_live_1");

    let r = send_default(
        &app,
        Method::PATCH,
        &category_path("notifications"),
        Some(json!({"config": {"email": {"smtpHost": "smtp.example.com", "username": "events", "password": SMTP_PASSWORD}}})),
    )
    .await;
    keep("PATCH notifications", &r);
    assert_eq!(r.status, 200, "{}", text(&r));
    assert_eq!(r.json()["data"]["config"]["email"]["password"], "••••pass");
    assert_eq!(r.json()["data"]["config"]["email"]["username"], "events");

    // A refused patch carrying a new secret does not echo it either.
    let r = send_default(
        &app,
        Method::PATCH,
        &category_path("payments"),
        Some(json!({"config": {"feePercent": 99, "providers": {"provider_a": {"secretKey": "sk_live_REFUSED7777"}}}})),
    )
    .await;
    keep("refused PATCH", &r);
    assert_invalid(&r, &["config.feePercent"]);
    assert!(!text(&r).contains("sk_live_REFUSED7777"), "{}", text(&r));

    let r = send_default(&app, Method::GET, SETTINGS, None).await;
    keep("GET settings", &r);
    let all = r.json();
    assert_eq!(all["data"]["payments"]["providers"]["provider_a"]["secretKey"], "••••3456", "{all}");
    assert_eq!(all["data"]["notifications"]["email"]["password"], "••••pass", "{all}");
    let r = send_default(&app, Method::GET, &format!("{SETTINGS}?categories=payments"), None).await;
    keep("GET settings?categories", &r);
    assert_eq!(r.json()["data"]["payments"]["providers"]["provider_a"]["secretKey"], "••••3456");

    let r = send_default(&app, Method::GET, CONTEXT, None).await;
    keep("GET context", &r);
    assert_eq!(r.status, 200, "{}", text(&r));
    let ctx = r.json();
    assert_eq!(ctx["data"]["settings"]["payments"]["providers"]["provider_a"]["secretKey"], "••••3456");
    assert_eq!(ctx["data"]["settings"]["notifications"]["email"]["password"], "••••pass");
    // Items name a provider and where its credentials come from, never a secret (D17.13).
    for item in ctx["data"]["providerSummary"].as_array().expect("providerSummary") {
        assert_eq!(keys(item), ["isDefault", "isFallback", "provider", "source"], "{ctx}");
    }

    // Sending the mask back keeps the secret while other keys change.
    let sealed_before = stored_payments(&app).await["providers"]["provider_a"]["secretKey"].clone();
    let r = send_default(
        &app,
        Method::PATCH,
        &category_path("payments"),
        Some(json!({"config": {"providers": {"provider_a": {"secretKey": "••••3456", "publicKey": "pk_live_2"}}}})),
    )
    .await;
    keep("PATCH with mask", &r);
    assert_eq!(r.status, 200, "{}", text(&r));
    let config = &r.json()["data"]["config"];
    assert_eq!(config["providers"]["provider_a"]["secretKey"], "••••3456");
    assert_eq!(config["providers"]["provider_a"]["publicKey"], "pk_live_2");
    let sealed_after = stored_payments(&app).await["providers"]["provider_a"]["secretKey"].clone();
    assert_eq!(sealed_before, sealed_after, "the stored secret was not rewritten");
    let ciphertext = sealed_after["$sealed"].as_str().expect("sealed at rest");
    let aad = format!("settings:{}:payments.config.providers.provider_a.secretKey", app.account.id);
    let plain = app.keyring.decrypt(&aad, ciphertext).expect("decrypts");
    assert_eq!(plain.expose_secret().as_slice(), PROVIDER_SECRET.as_bytes());

    let r = app.public_get(CONFIG, &app.account.public, &app.account.domain).await;
    keep("GET config", &r);
    assert_eq!(r.status, 200, "{}", text(&r));

    for (what, body) in &seen {
        for secret in [PROVIDER_SECRET, SMTP_PASSWORD] {
            assert!(!body.contains(secret), "{what} shows {secret}: {body}");
        }
    }
    // Nor at rest in plaintext, nor in the audit log.
    let at_rest = serde_json::to_string(&app.store.settings(&app.account.id).await.expect("settings")).expect("json");
    for secret in [PROVIDER_SECRET, SMTP_PASSWORD] {
        assert!(!at_rest.contains(secret), "stored in plaintext: {at_rest}");
    }
    let out = app.cli(&["admin", "audit", "list", "--account", &app.account.slug, "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "audit list: {stdout} {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("settings.updated"), "{stdout}");
    // The entry of the last payments PATCH shows the changed keys before and after, masked.
    let audit: Value = serde_json::from_str(&stdout).expect("audit json");
    let last = audit["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["action"] == "settings.updated" && e["entityId"] == "payments")
        .expect("a payments entry");
    let (before, after) = (&last["summary"]["before"]["providers"], &last["summary"]["after"]["providers"]);
    assert_eq!(after["provider_a"]["publicKey"], "pk_live_2", "{last}");
    assert_eq!(after["provider_a"]["secretKey"], "••••3456", "{last}");
    assert_eq!(before["provider_a"]["secretKey"], "••••3456", "{last}");
    assert_ne!(before["provider_a"]["publicKey"], "pk_live_2", "{last}");
    for secret in [PROVIDER_SECRET, SMTP_PASSWORD, "sk_live_REFUSED7777"] {
        assert!(!stdout.contains(secret), "audit shows {secret}: {stdout}");
    }
}

async fn stored_payments(app: &TestApp) -> Value {
    app.store
        .settings(&app.account.id)
        .await
        .expect("settings")
        .into_iter()
        .find(|(c, _)| c == "payments")
        .map(|(_, v)| v)
        .expect("payments stored")
}

async fn settings_routes_need_their_scopes(b: Backend) {
    let app = spawn(b).await;
    let reader = key_with(&app, "private", None, "settings:read").await;
    let r = send(&app, &reader, Method::PATCH, &category_path("analytics"), Some(json!({"config": {"a": 1}}))).await;
    assert_error(&r, 403, "insufficient_scope");
    let writer = key_with(&app, "private", None, "settings:write").await;
    for path in [SETTINGS, CONTEXT] {
        let r = send(&app, &writer, Method::GET, path, None).await;
        assert_error(&r, 403, "insufficient_scope");
    }
    // The refused write stored nothing; the writer may write.
    let r = send(&app, &reader, Method::GET, &format!("{SETTINGS}?categories=analytics"), None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["data"]["analytics"], json!({}));
    let r = send(&app, &writer, Method::PATCH, &category_path("analytics"), Some(json!({"config": {"a": 1}}))).await;
    assert_eq!(r.status, 200, "{}", text(&r));
}

async fn concurrent_patches_of_one_category_lose_no_update(b: Backend) {
    let app = spawn(b).await;
    let path = category_path("analytics");
    let calls = (0..10).map(|i| app.signed(Method::PATCH, &path, Some(json!({"config": { format!("key{i}"): i }}))));
    let results = futures_util::future::join_all(calls).await;
    for (s, body) in &results {
        assert_eq!(*s, 200, "{body}");
    }
    let analytics = get_settings(&app, "?categories=analytics").await["analytics"].clone();
    let expected: serde_json::Map<String, Value> = (0..10).map(|i| (format!("key{i}"), json!(i))).collect();
    assert_eq!(analytics, Value::Object(expected));
}

async fn config(app: &TestApp) -> Value {
    let r = app.public_get(CONFIG, &app.account.public, &app.account.domain).await;
    assert_eq!(r.status, 200, "{}", text(&r));
    r.json()["data"].clone()
}

async fn the_public_config_reflects_the_operations_modules(b: Backend) {
    let app = spawn(b).await;
    let before = config(&app).await;
    assert_eq!(before["domain"], app.account.domain.as_str());
    assert_eq!(before["accountSlug"], app.account.slug.as_str());
    assert_eq!(before["scope"], "account");
    assert_eq!(
        before["modules"],
        json!({"voting": true, "donations": true, "ticketing": true, "submissions": true, "myTickets": true})
    );
    patch(&app, "operations", json!({"modules": {"voting": false}})).await;
    let after = config(&app).await;
    assert_eq!(after["modules"]["voting"], false);
    assert_eq!(after["modules"]["ticketing"], true);
    assert_eq!(after["modules"]["donations"], true);
    let r = send_default(
        &app,
        Method::PATCH,
        &category_path("operations"),
        Some(json!({"config": {"modules": {"bogus": false}}})),
    )
    .await;
    assert_invalid(&r, &["config.modules.bogus"]);
    patch(&app, "operations", json!({"modules": {"voting": null, "myTickets": false}})).await;
    let last = config(&app).await;
    assert_eq!(last["modules"]["voting"], true);
    assert_eq!(last["modules"]["myTickets"], false);
    // settings:read is what the route needs.
    let no_settings = key_with(&app, "public", None, "campaigns:read,tickets:read").await;
    let r = app.public_get(CONFIG, &no_settings, &app.account.domain).await;
    assert_error(&r, 403, "insufficient_scope");
}

async fn context(app: &TestApp) -> Value {
    let (s, b) = app.signed(Method::GET, CONTEXT, None).await;
    assert_eq!(s, 200, "{b}");
    b["data"]["providerSummary"].clone()
}

async fn the_provider_summary_follows_the_routing_rule(b: Backend) {
    let p = crate::support::payments::spawn_paid(b).await;
    let item = |provider: &str, source: &str, default: bool, fallback: bool| json!({"provider": provider, "source": source, "isDefault": default, "isFallback": fallback});
    // Nothing set: the platform's shared providers, the first configured one the default.
    let shared = [item("provider_a", "platform", true, false), item("provider_b", "platform", false, false)];
    let third = item("provider_c", "platform", false, false);
    assert_eq!(context(&p).await, json!([shared[0], shared[1], third]));
    patch(&p, "payments", json!({"defaultProvider": "provider_b", "fallbackProvider": "provider_c"})).await;
    assert_eq!(
        context(&p).await,
        json!([
            item("provider_a", "platform", false, false),
            item("provider_b", "platform", true, false),
            item("provider_c", "platform", false, true)
        ])
    );
    // Its own credentials only: the providers it holds a secret for.
    let own = json!({"useSharedDefaults": false, "defaultProvider": null, "fallbackProvider": null,
        "providers": {"provider_c": {"secretKey": "sk_test_own_c_123456", "apiId": "own-api-id",
            "posSalesId": "2020001", "prepaidDepositId": "2020002", "callbackToken": "own-token-123456"}}});
    patch(&p, "payments", own).await;
    assert_eq!(context(&p).await, json!([item("provider_c", "account", true, false)]));
}

async fn a_module_turned_off_closes_its_routes_with_403_module_disabled(b: Backend) {
    use crate::support::catalogue::{participant, running_campaign, ticket_type};
    use crate::support::payments::{checkout_body, initialize, spawn_paid, INITIALIZE};
    let p = spawn_paid(b).await;
    let key = &p.account.private;
    let tc = running_campaign(&p, key, "ticketing").await;
    let t = ticket_type(&p, key, &tc, 10.0, 50).await;
    let vc = running_campaign(&p, key, "voting").await;
    let nominee = participant(&p, key, &vc).await;
    let dc = running_campaign(&p, key, "donation").await;
    let url = format!("https://{}/done", p.account.domain);
    let vote = json!({"transactionType": "vote", "amount": 2, "email": "fan@example.com", "phoneNumber": "0241234567",
        "callbackUrl": url, "metadata": {"campaignId": vc, "participantId": nominee}});
    let donation = json!({"transactionType": "donation", "amount": 5, "email": "fan@example.com", "phoneNumber": "0241234567",
        "callbackUrl": url, "metadata": {"campaignId": dc}});
    let tt = format!("/api/white-label/v1/ticket-types/{t}");
    let routes: Vec<(&str, Method, String, Value)> = vec![
        ("ticketing", Method::POST, INITIALIZE.to_string(), checkout_body(&p, &tc, &t, 1)),
        (
            "ticketing",
            Method::POST,
            "/api/white-label/v1/ticket-types".into(),
            json!({"campaignId": tc, "name": "B", "price": 1, "quantity_available": 1}),
        ),
        ("ticketing", Method::PATCH, tt.clone(), json!({"name": "Renamed"})),
        (
            "ticketing",
            Method::POST,
            "/api/white-label/v1/ticket-types/bootstrap".into(),
            json!({"campaignId": tc, "ticketTypes": []}),
        ),
        ("voting", Method::POST, INITIALIZE.to_string(), vote.clone()),
        ("voting", Method::POST, "/api/white-label/v1/participants".into(), json!({"campaignId": vc, "name": "Kofi"})),
        ("donations", Method::POST, INITIALIZE.to_string(), donation.clone()),
        ("submissions", Method::POST, "/api/white-label/v1/submissions".into(), json!({})),
        ("submissions", Method::GET, "/api/white-label/v1/submissions".into(), Value::Null),
        (
            "myTickets",
            Method::POST,
            "/api/white-label/v1/my-tickets/request-otp".into(),
            json!({"campaignId": tc, "email": "a@b.co"}),
        ),
        ("myTickets", Method::POST, "/api/white-label/v1/my-tickets/list".into(), json!({"sessionToken": "tms_x"})),
    ];
    for module in ["ticketing", "voting", "donations", "submissions", "myTickets"] {
        patch(&p, "operations", json!({"modules": {module: false}})).await;
        for (owner, method, path, body) in &routes {
            let body = (!body.is_null()).then(|| body.clone());
            let r = send(&p, key, method.clone(), path, body).await;
            if *owner == module {
                eprintln!("{module}: {path}");
                assert_error(&r, 403, "module_disabled");
            } else {
                assert_ne!(r.json()["code"], "module_disabled", "{module} off closed {path}: {}", r.json());
            }
        }
        if module == "ticketing" {
            let r = p.public_get("/api/white-label/v1/ticket-types", &p.account.public, &p.account.domain).await;
            assert_error(&r, 403, "module_disabled");
        }
        patch(&p, "operations", json!({"modules": {module: null}})).await;
    }
    // Back on: the routes answer again.
    let r = initialize(&p, checkout_body(&p, &tc, &t, 1)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let r = send(&p, key, Method::PATCH, &tt, Some(json!({"name": "Back"}))).await;
    assert_eq!(r.status, 200, "{}", r.json());
}

on_both!(
    all_nine_categories_are_returned_empty_when_nothing_is_set,
    settings_are_read_by_comma_list_or_repeated_categories,
    a_settings_patch_is_a_json_merge_patch,
    a_bad_category_or_config_is_a_400,
    known_payment_and_notification_keys_are_validated_by_path,
    secrets_are_write_only_and_only_ever_shown_masked,
    settings_routes_need_their_scopes,
    concurrent_patches_of_one_category_lose_no_update,
    the_public_config_reflects_the_operations_modules,
    the_provider_summary_follows_the_routing_rule,
    a_module_turned_off_closes_its_routes_with_403_module_disabled,
);

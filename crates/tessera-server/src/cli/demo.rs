//! `tessera serve --demo`: a demo account with domain `localhost` and a public and a private
//! key, created once. Their secrets are kept in `<data-dir>/demo-keys.json` (mode 0600) so that
//! later starts can print them again; nothing else ever stores a secret in the clear.
//!
//! With the sandbox (D11.3) the demo account's payments and notifications settings point at it
//! (its own provider credentials, its SMS gateway and SMTP sink), so a purchase works end to end
//! with no other process and no internet; a webhook endpoint of the account points at the
//! sandbox's inbox, so the purchase's `ticket.purchase.confirmed` shows there, verified (D17.26).
use std::path::Path;

use anyhow::Context as _;
use serde_json::{json, Value};

use super::admin;
use crate::auth::crypto::{write_private_file, Keyring};
use crate::domain::settings::{merge_patch, seal_secrets, validate, SEALED};
use crate::domain::time::now_ms;
use crate::domain::webhooks::new_secret;
use crate::store::audit::Audit;
use crate::store::Store;

pub const SLUG: &str = "demo";
const PRIVATE_SCOPES: &str = "settings:read,settings:write,campaigns:read,campaigns:write,tickets:read,tickets:write,payments:write,withdrawals:write,my-tickets:read,submissions:write,notifications:write";
const PUBLIC_SCOPES: &str = "settings:read,campaigns:read,tickets:read";

/// Returns `{"public": {...}, "private": {...}}` as created by `admin key create`.
pub async fn ensure(store: &Store, keyring: &Keyring, data_dir: &Path) -> anyhow::Result<Value> {
    let file = data_dir.join("demo-keys.json");
    if let Ok(text) = std::fs::read_to_string(&file) {
        return serde_json::from_str(&text).context("demo-keys.json");
    }
    if store.account_by_slug(SLUG).await.is_err() {
        admin::account_create(store, SLUG, "Tessera Demo", "enabled").await?;
        admin::domain_add(store, SLUG, "localhost", true, true).await?;
    }
    let public = admin::key_create(store, keyring, SLUG, "public", None, PUBLIC_SCOPES, &[]).await?;
    // The demo's secret key may withdraw (D2.1: the withdrawals capability).
    let private =
        admin::key_create(store, keyring, SLUG, "private", None, PRIVATE_SCOPES, &["withdrawals".to_string()]).await?;
    let keys = serde_json::json!({ "public": public, "private": private });
    write_private_file(&file, &serde_json::to_string_pretty(&keys)?)?;
    Ok(keys)
}

/// What `serve --demo` prints.
pub fn banner(keys: &Value, base_url: &str, exe: &str) -> String {
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    let (public, private) = (&keys["public"], &keys["private"]);
    format!(
        "\nDemo account \"{SLUG}\" (domain localhost)\n  public key : {pk}\n  private key: {prv}\n\n\
         Try it (in another terminal):\n  TESSERA_URL={base_url} TESSERA_KEY_ID={kid} TESSERA_KEY_SECRET={sec} {exe} call GET /api/white-label/v1/context\n\n\
         Or set these once for the README tour:\n  export TESSERA_URL={base_url} TESSERA_KEY_ID={kid} TESSERA_KEY_SECRET={sec} TESSERA_PUBLIC_KEY={pk}\n\n\
         Public read from a browser-side client:\n  curl -s {base_url}/api/white-label/v1/config -H 'x-white-label-domain: localhost' -H 'x-white-label-key: {pk}'\n",
        pk = s(public, "key"),
        prv = s(private, "key"),
        kid = s(private, "keyId"),
        sec = s(private, "secret"),
    )
}

/// The demo account's settings that point at a sandbox serving at `sandbox_base`
/// (`http://127.0.0.1:8090`) with its SMTP sink on `smtp` (host, port).
pub fn sandbox_settings(sandbox_base: &str, smtp: (&str, u16)) -> [(&'static str, Value); 2] {
    let mut providers = serde_json::Map::new();
    for p in crate::providers::payments::ProviderId::ALL {
        let mut own = json!({"baseUrl": format!("{sandbox_base}/{}", p.as_str())});
        if let (Some(o), Value::Object(wire)) = (own.as_object_mut(), sandbox_credentials(p.as_str())) {
            for (k, v) in wire {
                o.insert(k, v);
            }
        }
        providers.insert(p.as_str().to_string(), own);
    }
    [
        (
            "payments",
            json!({
                "useSharedDefaults": false,
                "defaultProvider": "provider_a",
                "fallbackProvider": "provider_b",
                "providers": providers,
            }),
        ),
        (
            "notifications",
            json!({
                "email": {"smtpHost": smtp.0, "smtpPort": smtp.1, "fromAddress": "tickets@demo.localhost", "fromName": "Tessera Demo"},
                // SMS through Africa's Talking's wire (D18.4), served by the sandbox under /sms.
                "sms": {"provider": "africastalking", "username": "sandbox", "baseUrl": format!("{sandbox_base}/sms"),
                    "apiKey": "at_demo_key", "senderId": "Tessera"},
            }),
        ),
    ]
}

/// What each provider's wire needs beyond a base URL, with the sandbox's demo values (D18.2–3,
/// D18.45): Paystack a secret key; Flutterwave its secret key and webhook hash; Hubtel its API
/// id and key, POS sales and prepaid deposit accounts and the callback token of its tokened
/// callback path. The sandbox takes any of them (it signs its callbacks with the secret key).
pub fn sandbox_credentials(provider: &str) -> Value {
    match provider {
        "provider_b" => json!({"secretKey": "FLWSECK_TEST-sandboxdemo-X", "webhookHash": "demo-flutterwave-hash"}),
        "provider_c" => json!({
            "secretKey": "sk_demo_provider_c",
            "apiId": "demo-api-id",
            "posSalesId": "2017001",
            "prepaidDepositId": "2017002",
            "callbackToken": "demo-hubtel-callback-token",
        }),
        other => json!({"secretKey": format!("sk_demo_{other}")}),
    }
}

/// Points the demo account at the sandbox: merges [`sandbox_settings`] into its settings,
/// validated and with secrets sealed exactly as `PATCH /settings/:category` does.
pub async fn point_at_sandbox(
    store: &Store,
    keyring: &Keyring,
    sandbox_base: &str,
    smtp: (&str, u16),
) -> anyhow::Result<()> {
    let account = store.account_by_slug(SLUG).await.context("the demo account")?;
    let id = account.id.as_str();
    for (category, patch) in sandbox_settings(sandbox_base, smtp) {
        let audit = Audit {
            key_id: None,
            request_id: None,
            action: "settings.updated",
            entity_type: "settings",
            entity_id: "",
            summary: json!({"by": "serve --demo", "category": category}),
        };
        store
            .update_setting(
                id,
                category,
                |mut current| {
                    merge_patch(&mut current, &patch);
                    validate(category, &current)?;
                    seal_secrets(&mut current, &format!("{category}.config"), &|path, plain| {
                        let tail: String = plain.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
                        json!({ SEALED: keyring.encrypt(&format!("settings:{id}:{path}"), plain), "last4": tail })
                    });
                    Ok(current)
                },
                audit,
            )
            .await
            .with_context(|| format!("demo {category} settings"))?;
    }
    Ok(())
}

/// How the demo's webhook endpoint is described: later starts find it by it.
pub const INBOX_ENDPOINT: &str = "serve --demo: the sandbox's webhook inbox";

/// Points a webhook endpoint of the demo account (every event type) at the sandbox's inbox:
/// made on the first start, its URL set again on later ones (the sandbox may listen elsewhere).
/// Returns its secret, which the inbox must be given to verify deliveries (it keeps nothing
/// across starts).
pub async fn point_webhooks_at_inbox(store: &Store, keyring: &Keyring, inbox_url: &str) -> anyhow::Result<String> {
    use secrecy::ExposeSecret as _;
    let account = store.account_by_slug(SLUG).await.context("the demo account")?;
    let fresh = new_secret();
    let seal = |id: &str| keyring.encrypt(&format!("webhook:{id}"), &fresh);
    let endpoint = store
        .ensure_demo_webhook_endpoint(&account.id, inbox_url, INBOX_ENDPOINT, seal, now_ms())
        .await
        .context("the demo's webhook endpoint")?;
    let plain = keyring
        .decrypt(&format!("webhook:{}", endpoint.id), &endpoint.secret_sealed)
        .context("the demo webhook endpoint's secret does not open with this master key")?;
    String::from_utf8(plain.expose_secret().clone()).context("the demo webhook endpoint's secret")
}

/// The banner's sandbox lines.
pub fn sandbox_banner(sandbox_base: &str, smtp: &str) -> String {
    format!(
        "\nSandbox (providers, checkout, SMS, SMTP sink; in memory, for demos and tests):\n  {sandbox_base}\n  \
         provider_a (default) {sandbox_base}/provider_a, provider_b (fallback) {sandbox_base}/provider_b, provider_c {sandbox_base}/provider_c\n  \
         SMTP sink {smtp}; received mail: curl -s {sandbox_base}/sandbox/mail ; SMS: curl -s {sandbox_base}/sandbox/sms\n  \
         Settle a charge without the checkout page: curl -s -X POST {sandbox_base}/sandbox/charges/<reference>/succeed\n  \
         The demo account's webhooks (verified): curl -s {sandbox_base}/sandbox/webhooks/inbox\n"
    )
}

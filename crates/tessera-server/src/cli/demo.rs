//! `tessera serve --demo`: a demo account with domain `localhost` and a public and a private
//! key, created once. Their secrets are kept in `<data-dir>/demo-keys.json` (mode 0600) so that
//! later starts can print them again; nothing else ever stores a secret in the clear.
use std::path::Path;

use anyhow::Context as _;
use serde_json::Value;

use super::admin;
use crate::auth::crypto::{write_private_file, Keyring};
use crate::store::Store;

pub const SLUG: &str = "demo";
const PRIVATE_SCOPES: &str = "settings:read,settings:write,campaigns:read,campaigns:write,tickets:read,tickets:write,payments:write,my-tickets:read,submissions:write,notifications:write";
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
    let private = admin::key_create(store, keyring, SLUG, "private", None, PRIVATE_SCOPES, &[]).await?;
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

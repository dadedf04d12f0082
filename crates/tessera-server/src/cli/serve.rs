//! `tessera serve` (with `--demo`: a demo account pointed at the sandbox) and `tessera sandbox`.
use std::net::SocketAddr;
use std::path::PathBuf;

use secrecy::{ExposeSecret, SecretString};

use super::{demo, println};
use crate::app::{shutdown_signal, Application};
use crate::config::Config;
use crate::sandbox::{Sandbox, SandboxOptions};

/// The demo's SMTP sink.
const DEMO_SMTP: &str = "127.0.0.1:2525";

/// Runs the HTTP service until a shutdown signal; with `demo_sandbox`, also the sandbox on that
/// address and a demo account whose providers, SMS and SMTP are the sandbox's.
pub async fn serve(mut cfg: Config, demo_sandbox: Option<SocketAddr>) -> anyhow::Result<()> {
    crate::telemetry::init(cfg.log_format, &cfg.log_filter);
    let stop = shutdown_signal()?;
    let sandbox = match demo_sandbox {
        Some(listen) => {
            // The demo account's provider and SMS URLs are the sandbox's, on loopback (D16.25).
            cfg.security.allow_private_endpoints = true;
            let smtp: SocketAddr = DEMO_SMTP.parse()?;
            let sandbox = Sandbox::start(SandboxOptions { listen, smtp_listen: Some(smtp), notify_url: None }).await?;
            demo_platform(&mut cfg, sandbox.base_url());
            // Its mail goes over STARTTLS to the sink, whose CA the demo trusts (D17.7, D17.44).
            let ca = sandbox.write_ca_pem(cfg.data_dir())?;
            if cfg.security.extra_ca_file.is_empty() {
                cfg.security.extra_ca_file = ca.display().to_string();
            } else {
                tracing::warn!(
                    ca = %ca.display(),
                    "security.extra_ca_file is set, so the sandbox's CA is not trusted: add it to that bundle for the demo's mail"
                );
            }
            Some(sandbox)
        }
        None => None,
    };
    let app = Application::build(cfg.clone()).await?;
    let addr = app.local_addr();
    tracing::info!(%addr, database = if cfg.database_url.is_empty() { "sqlite" } else { "postgres" }, "tessera listening");
    if let Some(sandbox) = &sandbox {
        let state = app.state();
        let keys = demo::ensure(&state.store, state.directory.keyring(), cfg.data_dir()).await?;
        let host = if addr.ip().is_unspecified() { "127.0.0.1".to_string() } else { addr.ip().to_string() };
        let base_url = format!("http://{host}:{}", addr.port());
        sandbox.set_notify_url(base_url.clone());
        let smtp = sandbox.smtp_addr().map(|a| a.to_string()).unwrap_or_else(|| DEMO_SMTP.to_string());
        let smtp_port = sandbox.smtp_addr().map(|a| a.port()).unwrap_or(2525);
        demo::point_at_sandbox(&state.store, state.directory.keyring(), sandbox.base_url(), ("127.0.0.1", smtp_port))
            .await?;
        let secret =
            demo::point_webhooks_at_inbox(&state.store, state.directory.keyring(), &sandbox.inbox_url()).await?;
        sandbox.add_inbox_secret(&secret)?;
        println!("{}", demo::banner(&keys, &base_url, &exe_for_display()));
        println!("{}", demo::sandbox_banner(sandbox.base_url(), &smtp));
        state.directory.refresh().await?;
    }
    let served = app.run_until_stopped(stop).await;
    drop(sandbox);
    served
}

/// The demo's platform settings (D18.45): Hubtel calls back to the server's own address
/// (`http.public_url`, unless set), and the platform's shared Flutterwave and Hubtel credentials
/// are the sandbox's (as the demo account's own are), so a callback authenticates either way.
fn demo_platform(cfg: &mut Config, sandbox: &str) {
    if cfg.http.public_url.trim().is_empty() {
        let host = if cfg.listen.ip().is_unspecified() { "127.0.0.1".to_string() } else { cfg.listen.ip().to_string() };
        if cfg.listen.port() == 0 {
            tracing::warn!(
                "the demo listens on port 0: set http.public_url (TESSERA_PUBLIC_URL) for provider_c's callbacks"
            );
        } else {
            cfg.http.public_url = format!("http://{host}:{}", cfg.listen.port());
        }
    }
    for name in ["provider_b", "provider_c"] {
        let wire = demo::sandbox_credentials(name);
        let text = |k: &str| wire[k].as_str().unwrap_or_default().to_string();
        if let Some(p) = cfg.providers.get_mut(name) {
            if !p.secret_key.expose_secret().is_empty() {
                continue;
            }
            p.base_url = format!("{sandbox}/{name}");
            p.secret_key = SecretString::from(text("secretKey"));
            p.webhook_hash = SecretString::from(text("webhookHash"));
            p.api_id = text("apiId");
            p.pos_sales_id = text("posSalesId");
            p.prepaid_deposit_id = text("prepaidDepositId");
            p.callback_token = SecretString::from(text("callbackToken"));
        }
    }
}

/// Runs the sandbox alone until a shutdown signal; its SMTP sink's CA goes to
/// `<data_dir>/sandbox-ca.pem`.
pub async fn sandbox(opts: SandboxOptions, data_dir: &std::path::Path) -> anyhow::Result<()> {
    let stop = shutdown_signal()?;
    let sandbox = Sandbox::start(opts).await?;
    let ca = sandbox.write_ca_pem(data_dir)?;
    println!(
        "Tessera sandbox on {base} (in memory; for demos and tests, it moves no money)\n  \
         provider APIs: {base}/provider_a (Paystack's API), {base}/provider_b (Flutterwave v3), {base}/provider_c (Hubtel)\n  \
         SMS gateway: {base}/sms/messages   SMTP sink: {smtp} (STARTTLS; trust {ca} with TESSERA_EXTRA_CA_FILE)\n  \
         webhook inbox (Standard Webhooks, verifying): {base}/sandbox/webhooks/inbox (secrets: POST {base}/sandbox/webhooks/inbox/secrets)\n  \
         control API: {base}/sandbox/…  (docs/providers.md)",
        base = sandbox.base_url(),
        smtp = sandbox.smtp_addr().map(|a| a.to_string()).unwrap_or_else(|| "off".into()),
        ca = ca.display(),
    );
    stop.await;
    sandbox.stop();
    Ok(())
}

/// This executable as the demo banner shows it: relative to the working directory when inside it.
fn exe_for_display() -> String {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("tessera"));
    match std::env::current_dir().ok().and_then(|cwd| exe.strip_prefix(&cwd).ok().map(|p| p.to_path_buf())) {
        Some(rel) => format!("./{}", rel.display()),
        None => exe.display().to_string(),
    }
}

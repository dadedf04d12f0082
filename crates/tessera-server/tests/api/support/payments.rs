//! A server whose providers are the sandbox: checkouts, settlements and the money routes.
use std::ops::Deref;

use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};
use tessera_server::sandbox::{Sandbox, SandboxHandle, SandboxOptions};

use super::client::{send, StatusCode};
use super::server::{spawn_with, Backend, TestApp};

pub const INITIALIZE: &str = "/api/white-label/v1/payments/initialize";
pub const VERIFY: &str = "/api/white-label/v1/payments/verify";
pub const PAYMENTS: &str = "/api/white-label/v1/payments";
pub const BALANCE: &str = "/api/white-label/v1/balance";
pub const LEDGER: &str = "/api/white-label/v1/ledger";
pub const WITHDRAWALS: &str = "/api/white-label/v1/withdrawals";

/// The platform's shared test secrets (config `[providers.*] secret_key`).
pub fn platform_secret(provider: &str) -> String {
    format!("sk_test_platform_{provider}")
}

/// A server whose providers are the sandbox, and the sandbox, sending its callbacks to the server.
pub struct PayApp {
    pub app: TestApp,
    pub sandbox: SandboxHandle,
}

impl Deref for PayApp {
    type Target = TestApp;
    fn deref(&self) -> &TestApp {
        &self.app
    }
}

pub async fn spawn_paid(b: Backend) -> PayApp {
    spawn_paid_with(b, |_| {}).await
}

/// The platform's Flutterwave webhook hash in [`spawn_paid_with`].
pub const PLATFORM_WEBHOOK_HASH: &str = "platform-flutterwave-hash";
/// The platform's Hubtel callback token in [`spawn_paid_with`].
pub const PLATFORM_CALLBACK_TOKEN: &str = "platform-hubtel-token";

/// A sandbox on free loopback ports, its SMTP sink included.
pub async fn start_sandbox() -> SandboxHandle {
    Sandbox::start(SandboxOptions {
        listen: "127.0.0.1:0".parse().expect("addr"),
        smtp_listen: Some("127.0.0.1:0".parse().expect("addr")),
        notify_url: None,
    })
    .await
    .expect("sandbox")
}

pub async fn spawn_paid_with(b: Backend, tweak: impl FnOnce(&mut tessera_server::config::Config)) -> PayApp {
    let sandbox = start_sandbox().await;
    let urls: Vec<String> =
        ["provider_a", "provider_b", "provider_c"].iter().map(|p| sandbox.provider_url(p)).collect();
    let app = spawn_with(b, |c| {
        // Mail goes to the sandbox's sink over STARTTLS, its CA trusted as an operator would (D17.7).
        let ca = sandbox.write_ca_pem(&c.data_dir).expect("sandbox-ca.pem");
        c.security.extra_ca_file = ca.display().to_string();
        for (name, url) in ["provider_a", "provider_b", "provider_c"].into_iter().zip(&urls) {
            let shared = c.providers.get_mut(name).expect("every provider has a [providers.*] entry");
            shared.base_url = url.clone();
            shared.secret_key = platform_secret(name).into();
        }
        // Flutterwave's webhook hash; Hubtel's ids and callback token, and the server's own
        // address it calls back to (D18.45): a port picked now, the server listens on it.
        if let Some(b) = c.providers.get_mut("provider_b") {
            b.webhook_hash = PLATFORM_WEBHOOK_HASH.to_string().into();
        }
        if let Some(h) = c.providers.get_mut("provider_c") {
            h.api_id = "platform-api-id".into();
            h.pos_sales_id = "2017001".into();
            h.prepaid_deposit_id = "2017002".into();
            h.callback_token = PLATFORM_CALLBACK_TOKEN.to_string().into();
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        c.listen = format!("127.0.0.1:{port}").parse().expect("addr");
        c.http.public_url = format!("http://127.0.0.1:{port}");
        c.security.rate_limit_per_account = 0;
        c.security.rate_limit_per_ip = 0;
        c.workers.enabled = false;
        c.payments.verify_interval_seconds = 0.001;
        tweak(c);
    })
    .await;
    sandbox.set_notify_url(app.base_url.clone());
    PayApp { app, sandbox }
}

/// A Form 1 body.
pub fn checkout_body(app: &TestApp, campaign: &str, ticket: &str, quantity: i64) -> Value {
    json!({
        "campaign_id": campaign, "ticket_id": ticket, "email": "buyer@example.com", "quantity": quantity,
        "full_name": "Ama Mensah", "callbackUrl": format!("https://{}/thanks", app.account.domain),
    })
}

pub async fn initialize(app: &TestApp, body: Value) -> RawResponse {
    send(app, &app.account.private, Method::POST, INITIALIZE, Some(body)).await
}

/// Initializes a Form 1 purchase and returns its data.
pub async fn buy(app: &TestApp, campaign: &str, ticket: &str, quantity: i64) -> Value {
    let r = initialize(app, checkout_body(app, campaign, ticket, quantity)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    r.json()["data"].clone()
}

/// Settles a sandbox charge through the control API, as an integrator's script would.
pub async fn sandbox_settle(p: &PayApp, reference: &str, outcome: &str, body: Value) -> Value {
    let url = format!("{}/sandbox/charges/{reference}/{outcome}", p.sandbox.base_url());
    let r = p.http.post(url).json(&body).send().await.expect("sandbox");
    assert_eq!(r.status().as_u16(), 200, "sandbox {outcome}");
    r.json().await.expect("json")
}

/// The payment of `reference` as `GET /payments/:reference` shows it.
pub async fn payment(app: &TestApp, reference: &str) -> Value {
    let b: Value = app.api().get(&format!("{PAYMENTS}/{reference}"), StatusCode::OK).await;
    b["data"].clone()
}

/// The account's payment settings: a fee of 2.5 % plus 0.5 GHS that the customer bears.
pub async fn customer_pays_fees(app: &TestApp) {
    let fees = json!({"config": {"feePercent": 2.5, "feeFixed": 0.5, "feeBearer": "customer"}});
    let _: Value = app.api().patch("/api/white-label/v1/settings/payments", &fees, StatusCode::OK).await;
}

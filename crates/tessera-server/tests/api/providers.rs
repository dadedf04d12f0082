//! Provider adapters against the real sandbox on loopback (D11, D18.2–3, D18.6), the sandbox's
//! own product surface (checkout, control API, callbacks, SMS, SMTP), and the outbound guard at
//! save time (D16.25). No fakes: every call crosses HTTP or SMTP, through Paystack's wire
//! (provider_a), Flutterwave's (provider_b) and Hubtel's (provider_c).
use std::sync::{Arc, Mutex};
use std::time::Duration;

use secrecy::SecretString;
use serde_json::{json, Value};
use tessera_client::Method;
use tessera_server::providers::outbound::Outbound;
use tessera_server::providers::payments::{
    adapter, ChargeFacts, ChargeRequest, Credentials, Extra, ProviderError, ProviderId, RefundRequest, RefundState,
    RemoteStatus, TransferRequest,
};
use tessera_server::sandbox::SandboxHandle;

use crate::support::client::{assert_error, detail_fields, StatusCode};
use crate::support::payments::start_sandbox;
use crate::support::server::{spawn_with, Backend};

fn outbound() -> Outbound {
    Outbound::new(Duration::from_secs(5), false).expect("outbound")
}

/// Hubtel's callback token in these tests: its callbacks come to
/// `<public_url>/api/white-label/webhooks/provider_c/<token>`.
const TOKEN: &str = "tok_hubtel_test";

/// Platform credentials (operator-configured, so the loopback sandbox is allowed), with what
/// each wire needs: Hubtel's ids, token and the public address it calls back to.
fn creds(sb: &SandboxHandle, p: ProviderId, secret: &str) -> Credentials {
    creds_back_to(sb, p, secret, "http://127.0.0.1:9")
}

fn creds_back_to(sb: &SandboxHandle, p: ProviderId, secret: &str, public_url: &str) -> Credentials {
    let extra = match p {
        ProviderId::C => Extra {
            api_id: Some("api_test".into()),
            pos_sales_id: Some("2017001".into()),
            prepaid_deposit_id: Some("2017002".into()),
            callback_token: Some(SecretString::from(TOKEN)),
            public_url: Some(public_url.into()),
            ..Extra::default()
        },
        _ => Extra { public_url: Some(public_url.into()), ..Extra::default() },
    };
    Credentials {
        base_url: sb.provider_url(p.as_str()),
        secret_key: SecretString::from(secret),
        account_supplied: false,
        extra,
    }
}

/// A payment reference as Tessera makes them (`tsr_` + 26; Hubtel's `tsr…` without the `_`).
fn reference(_tag: &str) -> String {
    tessera_server::domain::payments::new_reference()
}

/// A withdrawal or refund id (a UUID; Hubtel's without dashes).
fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

fn charge<'a>(reference: &'a str, metadata: &'a Value, callback: Option<&'a str>) -> ChargeRequest<'a> {
    ChargeRequest {
        reference,
        amount: 1250,
        currency: "GHS",
        email: "ama@example.com",
        name: None,
        phone: None,
        description: None,
        callback_url: callback,
        method: None,
        network: None,
        metadata,
    }
}

fn transfer(reference: &str) -> TransferRequest<'_> {
    TransferRequest {
        reference,
        amount: 5000,
        currency: "GHS",
        account_name: "Ama Mensah",
        account_number: "0241234567",
        bank_code: "MTN",
        bank_name: "MTN Mobile Money",
        reason: "Withdrawal",
    }
}

async fn control(sb: &SandboxHandle, path: &str, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new().post(format!("{}{path}", sb.base_url())).json(&body).send().await.expect("control");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Deliveries of one reference, oldest first.
fn deliveries(sb: &SandboxHandle, reference: &str) -> Vec<Value> {
    let mut v: Vec<Value> = sb.callbacks().into_iter().filter(|d| d["reference"] == reference).collect();
    v.reverse();
    v
}

/// Where a provider's callbacks arrive at Tessera: Hubtel's on its tokened path.
fn callback_path(p: ProviderId) -> String {
    match p {
        ProviderId::C => format!("/api/white-label/webhooks/provider_c/{TOKEN}"),
        _ => format!("/api/white-label/webhooks/{}", p.as_str()),
    }
}

/// One received callback: path, headers, raw body.
type Received = (String, axum::http::HeaderMap, Vec<u8>);

/// A loopback callback receiver standing in for Tessera: records (path, signature headers, body).
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Received>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn receiver() -> Receiver {
    let got: Arc<Mutex<Vec<Received>>> = Arc::default();
    let sink = got.clone();
    let app = axum::Router::new().fallback(
        move |uri: axum::http::Uri, headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let sink = sink.clone();
            async move {
                sink.lock().expect("lock").push((uri.path().to_string(), headers, body.to_vec()));
                "ok"
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = rx.await;
            })
            .await;
    });
    Receiver { url, got, _stop: tx }
}

#[tokio::test]
async fn provider_a_initializes_and_verifies_a_charge_like_paystack() {
    let sb = start_sandbox().await;
    let (http, c, a) = (outbound(), creds(&sb, ProviderId::A, "sk_test_a"), adapter(ProviderId::A));
    let r = reference("a");
    let meta = json!({"campaignId": "c1"});
    let init = a.initialize(&http, &c, &charge(&r, &meta, None)).await.expect("initialize");
    assert_eq!(init.authorization_url, format!("{}/checkout/{r}", sb.base_url()));
    assert!(!init.access_code.is_empty());

    // A fresh unpaid Paystack charge reports `abandoned`: pending to Tessera.
    let state = a.verify_charge(&http, &c, &r).await.expect("verify");
    assert_eq!((state.status, state.amount, state.currency.as_str()), (RemoteStatus::Pending, 1250, "GHS"));
    assert_eq!(state.reference, r);

    let raw = reqwest::Client::new()
        .get(format!("{}/transaction/verify/{r}", c.base_url))
        .bearer_auth("sk_test_a")
        .send()
        .await
        .expect("raw verify");
    let body: Value = raw.json().await.expect("json");
    assert_eq!((body["status"].as_bool(), body["data"]["status"].as_str()), (Some(true), Some("abandoned")));
    assert_eq!(body["data"]["customer"]["email"], "ama@example.com");

    let (status, record) = control(&sb, &format!("/sandbox/charges/{r}/succeed"), json!({"deliver": false})).await;
    assert_eq!((status, record["status"].as_str()), (200, Some("success")), "{record}");
    let state = a.verify_charge(&http, &c, &r).await.expect("verify");
    assert_eq!(state.status, RemoteStatus::Success);
}

#[tokio::test]
async fn flutterwave_and_hubtel_initialize_verify_and_report_failure() {
    let sb = start_sandbox().await;
    let http = outbound();
    for p in [ProviderId::B, ProviderId::C] {
        let (c, a) = (creds(&sb, p, "sk_gw"), adapter(p));
        let r = reference(p.as_str());
        let meta = json!({});
        let init =
            a.initialize(&http, &c, &charge(&r, &meta, Some("https://shop.example.com/done"))).await.expect("init");
        // Hubtel's clientReference is the reference's letters and digits (D18.45).
        let wire = if p == ProviderId::C { r.replace('_', "") } else { r.clone() };
        assert_eq!(init.authorization_url, format!("{}/checkout/{wire}", sb.base_url()), "{}", p.as_str());
        assert_eq!(a.verify_charge(&http, &c, &r).await.expect("verify").status, RemoteStatus::Pending);
        // The control API finds it by Tessera's reference.
        let (status, record) = control(&sb, &format!("/sandbox/charges/{r}/fail"), json!({"deliver": false})).await;
        assert_eq!((status, record["reference"].as_str()), (200, Some(r.as_str())), "{record}");
        assert_eq!(record["wireReference"], wire);
        let state = a.verify_charge(&http, &c, &r).await.expect("verify");
        assert_eq!((state.status, state.amount), (RemoteStatus::Failed, 1250), "{}", p.as_str());
    }
    // A paid Flutterwave charge: decimals, its id kept for refunds, the method.
    let (c, a) = (creds(&sb, ProviderId::B, "sk_gw"), adapter(ProviderId::B));
    let r = reference("b");
    a.initialize(&http, &c, &charge(&r, &Value::Null, None)).await.expect("init");
    control(&sb, &format!("/sandbox/charges/{r}/succeed"), json!({"deliver": false})).await;
    let raw: Value = reqwest::Client::new()
        .get(format!("{}/v3/transactions/verify_by_reference?tx_ref={r}", c.base_url))
        .bearer_auth("sk_gw")
        .send()
        .await
        .expect("raw")
        .json()
        .await
        .expect("json");
    assert_eq!((raw["status"].as_str(), raw["data"]["status"].as_str()), (Some("success"), Some("successful")));
    assert_eq!(
        (raw["data"]["amount"].to_string(), raw["data"]["payment_type"].as_str()),
        ("12.5".into(), Some("card"))
    );
    let state = a.verify_charge(&http, &c, &r).await.expect("verify");
    assert_eq!((state.status, state.amount, state.method.as_deref()), (RemoteStatus::Success, 1250, Some("card")));
    assert_eq!(state.provider_id, raw["data"]["id"].as_u64().map(|n| n.to_string()));
    // Hubtel's status check: Paid, by mobile money unless the control API says card.
    let (c, a) = (creds(&sb, ProviderId::C, "sk_gw"), adapter(ProviderId::C));
    for (method, expect) in [(None, "mobile_money"), (Some("card"), "card")] {
        let r = reference("c");
        a.initialize(&http, &c, &charge(&r, &Value::Null, None)).await.expect("init");
        control(&sb, &format!("/sandbox/charges/{r}/succeed"), json!({"deliver": false, "method": method})).await;
        let state = a.verify_charge(&http, &c, &r).await.expect("verify");
        assert_eq!(
            (state.status, state.method.as_deref(), state.reference.as_str()),
            (RemoteStatus::Success, Some(expect), r.as_str())
        );
    }
}

#[tokio::test]
async fn a_charge_settled_with_another_amount_or_currency_verifies_as_settled() {
    let sb = start_sandbox().await;
    let http = outbound();
    for p in ProviderId::ALL {
        let (c, a) = (creds(&sb, p, "sk_mismatch"), adapter(p));
        let r = reference("mismatch");
        a.initialize(&http, &c, &charge(&r, &Value::Null, None)).await.expect("init");
        let (status, record) = control(
            &sb,
            &format!("/sandbox/charges/{r}/succeed"),
            json!({"amount": 999, "currency": "USD", "deliver": false}),
        )
        .await;
        assert_eq!((status, record["amount"].as_i64()), (200, Some(999)));
        let state = a.verify_charge(&http, &c, &r).await.expect("verify");
        assert_eq!((state.status, state.amount, state.currency.as_str()), (RemoteStatus::Success, 999, "USD"));
    }
}

#[tokio::test]
async fn unknown_references_and_charges_of_another_secret_are_not_found() {
    let sb = start_sandbox().await;
    let http = outbound();
    for p in ProviderId::ALL {
        let a = adapter(p);
        let mine = creds(&sb, p, "sk_mine");
        let theirs = creds(&sb, p, "sk_theirs");
        let r = reference("scoped");
        a.initialize(&http, &mine, &charge(&r, &Value::Null, None)).await.expect("init");
        assert_eq!(a.verify_charge(&http, &theirs, &r).await, Err(ProviderError::NotFound), "{}", p.as_str());
        assert_eq!(a.verify_charge(&http, &mine, &reference("nobody")).await, Err(ProviderError::NotFound));
        assert_eq!(a.verify_transfer(&http, &mine, &new_id()).await, Err(ProviderError::NotFound), "{}", p.as_str());
    }
    // A charge is visible only at the provider that made it.
    let r = reference("cross");
    adapter(ProviderId::B)
        .initialize(&http, &creds(&sb, ProviderId::B, "sk"), &charge(&r, &Value::Null, None))
        .await
        .expect("init");
    let other = adapter(ProviderId::C).verify_charge(&http, &creds(&sb, ProviderId::C, "sk"), &r).await;
    assert_eq!(other, Err(ProviderError::NotFound));
}

#[tokio::test]
async fn transfers_are_created_verified_settled_and_a_reused_reference_is_not_sent_twice() {
    let sb = start_sandbox().await;
    let http = outbound();
    for p in ProviderId::ALL {
        let (c, a) = (creds(&sb, p, "sk_payout"), adapter(p));
        let r = new_id();
        let created = a.create_transfer(&http, &c, &transfer(&r)).await.expect("transfer");
        assert_eq!(
            (created.status, created.amount, created.reference.as_str()),
            (RemoteStatus::Pending, 5000, r.as_str())
        );
        // Paystack and Flutterwave refuse the reference as a duplicate; Hubtel's adapter asks
        // the send's status first and adopts it.
        let again = a.create_transfer(&http, &c, &transfer(&r)).await;
        match p {
            ProviderId::C => assert_eq!(again, Ok(created.clone())),
            _ => assert_eq!(again, Err(ProviderError::Duplicate), "{}", p.as_str()),
        }
        assert_eq!(sb.transfers_of(p.as_str()).len(), 1, "one transfer at {}", p.as_str());
        assert_eq!(a.verify_transfer(&http, &c, &r).await.expect("verify").status, RemoteStatus::Pending);
        let (status, record) = control(
            &sb,
            &format!("/sandbox/transfers/{r}/fail"),
            json!({"reason": "Account closed", "deliver": false}),
        )
        .await;
        assert_eq!(
            (status, record["status"].as_str(), record["reference"].as_str()),
            (200, Some("failed"), Some(r.as_str())),
            "{record}"
        );
        let state = a.verify_transfer(&http, &c, &r).await.expect("verify");
        assert_eq!(state.status, RemoteStatus::Failed);
        if p != ProviderId::C {
            assert_eq!(state.reason.as_deref(), Some("Account closed"), "{}", p.as_str());
        }
        let (status, _) = control(&sb, &format!("/sandbox/transfers/{r}/succeed"), json!({})).await;
        assert_eq!(status, 409, "a settled transfer stays settled");
        assert_eq!(a.verify_transfer(&http, &creds(&sb, p, "sk_other"), &r).await, Err(ProviderError::NotFound));
    }
    for p in ProviderId::ALL {
        let r = new_id();
        let c = creds(&sb, p, "sk_payout");
        adapter(p).create_transfer(&http, &c, &transfer(&r)).await.expect("transfer");
        control(&sb, &format!("/sandbox/transfers/{r}/succeed"), json!({"deliver": false})).await;
        assert_eq!(adapter(p).verify_transfer(&http, &c, &r).await.expect("verify").status, RemoteStatus::Success);
    }
}

/// What a test knows of a paid charge: its reference and the facts its refund needs.
struct Paid {
    reference: String,
    provider_id: Option<String>,
    method: Option<String>,
    payer: Option<String>,
}

impl Paid {
    fn facts(&self) -> ChargeFacts<'_> {
        ChargeFacts {
            provider_charge_id: self.provider_id.as_deref(),
            method: self.method.as_deref(),
            payer: self.payer.as_deref(),
            network: None,
        }
    }
}

fn refund<'a>(
    refund_id: &'a str,
    paid: &'a Paid,
    amount: i64,
    provider_refund_id: Option<&'a str>,
) -> RefundRequest<'a> {
    RefundRequest {
        refund_id,
        transaction_reference: &paid.reference,
        amount,
        currency: "GHS",
        reason: Some("Event cancelled"),
        charge: paid.facts(),
        filed_at: 0,
        provider_refund_id,
        taken: &[],
    }
}

/// A paid 12.50 charge at `p` with `secret` (settled without its callback), as Tessera knows it
/// after the verify (and, for Hubtel, the payer its checkout callback named).
async fn paid_charge(sb: &SandboxHandle, p: ProviderId, secret: &str) -> Paid {
    let r = reference("paid");
    let (c, a) = (creds(sb, p, secret), adapter(p));
    a.initialize(&outbound(), &c, &charge(&r, &Value::Null, None)).await.expect("init");
    let (status, record) = control(sb, &format!("/sandbox/charges/{r}/succeed"), json!({"deliver": false})).await;
    assert_eq!(status, 200);
    let state = a.verify_charge(&outbound(), &c, &r).await.expect("verify");
    Paid {
        reference: r,
        provider_id: state.provider_id,
        method: state.method,
        payer: state.payer.or(record["payer"].as_str().map(str::to_string)),
    }
}

/// The sandbox's refunds of one charge.
fn refunds_of(sb: &SandboxHandle, charge: &str) -> Vec<Value> {
    sb.refunds().into_iter().filter(|r| r["transaction"] == charge).collect()
}

/// The control API's name of a refund: its provider id (Flutterwave's wire carries no id of
/// Tessera's; the others' ids are Tessera's, or Hubtel's form of it).
fn control_id(state: &RefundState) -> String {
    state.provider_id.clone().expect("a provider id")
}

#[tokio::test]
async fn refunds_are_created_once_verified_and_settled_at_every_provider() {
    let sb = start_sandbox().await;
    let http = outbound();
    for p in ProviderId::ALL {
        let (c, a) = (creds(&sb, p, "sk_refund"), adapter(p));
        let ch = paid_charge(&sb, p, "sk_refund").await;
        let id = new_id();
        let created = a.create_refund(&http, &c, &refund(&id, &ch, 500, None)).await.expect("create");
        assert_eq!(
            (created.refund_id.as_str(), created.status, created.amount, created.reason.as_deref()),
            (id.as_str(), RemoteStatus::Pending, 500, Some("Event cancelled")),
            "{}",
            p.as_str()
        );
        let pid = control_id(&created);
        // A retried call (a timeout, a crash before the answer was saved) finds the same refund.
        let again = a.create_refund(&http, &c, &refund(&id, &ch, 500, None)).await.expect("create again");
        assert_eq!(again, created, "{}", p.as_str());
        assert_eq!(refunds_of(&sb, &ch.reference).len(), 1, "never two at {}", p.as_str());
        assert_eq!(a.verify_refund(&http, &c, &refund(&id, &ch, 500, Some(&pid))).await.expect("verify"), created);
        assert_eq!(sb.refund(&pid).expect("by provider id")["transaction"], ch.reference.as_str());
        if p != ProviderId::B {
            assert_eq!(sb.refund(&id).expect("by Tessera's id")["id"], id.as_str());
        }

        let (status, record) =
            control(&sb, &format!("/sandbox/refunds/{pid}/fail"), json!({"reason": "Card expired", "deliver": false}))
                .await;
        assert_eq!((status, record["status"].as_str()), (200, Some("failed")), "{record}");
        let state = a.verify_refund(&http, &c, &refund(&id, &ch, 500, Some(&pid))).await.expect("verify");
        assert_eq!(state.status, RemoteStatus::Failed, "{}", p.as_str());
        if p == ProviderId::A {
            assert_eq!(state.reason.as_deref(), Some("Card expired"));
        }
        assert_eq!(control(&sb, &format!("/sandbox/refunds/{pid}/succeed"), json!({})).await.0, 409);

        // A failed refund gives its amount back to the charge: the whole 12.50 can still go.
        let whole = new_id();
        let state = a.create_refund(&http, &c, &refund(&whole, &ch, 1250, None)).await.expect("whole");
        assert_eq!((state.status, state.amount), (RemoteStatus::Pending, 1250));
        let wid = control_id(&state);
        let (status, record) =
            control(&sb, &format!("/sandbox/refunds/{wid}/succeed"), json!({"deliver": false})).await;
        assert_eq!((status, record["status"].as_str()), (200, Some("success")), "{record}");
        assert_eq!(
            a.verify_refund(&http, &c, &refund(&whole, &ch, 1250, Some(&wid))).await.expect("verify").status,
            RemoteStatus::Success
        );
        // Nothing is left: one pesewa more is refused where the wire refunds a charge (Hubtel
        // only sends money; Tessera's own ceiling holds there).
        if p != ProviderId::C {
            let err = a.create_refund(&http, &c, &refund(&new_id(), &ch, 1, None)).await.expect_err("exceeds");
            assert!(matches!(err, ProviderError::Rejected(ref m) if m.contains("400")), "{}: {err:?}", p.as_str());
        }

        // Unknown refunds and another secret's refunds are not found.
        let unknown = new_id();
        let none = if p == ProviderId::B { None } else { Some(unknown.as_str()) };
        assert_eq!(a.verify_refund(&http, &c, &refund(&unknown, &ch, 1, none)).await, Err(ProviderError::NotFound));
        let theirs = creds(&sb, p, "sk_theirs");
        assert_eq!(
            a.verify_refund(&http, &theirs, &refund(&whole, &ch, 1250, Some(&wid))).await,
            Err(ProviderError::NotFound),
            "{}",
            p.as_str()
        );
        // An unpaid charge is not refundable.
        let unpaid = Paid { reference: reference("unpaid"), ..ch };
        a.initialize(&http, &c, &charge(&unpaid.reference, &Value::Null, None)).await.expect("init");
        if p == ProviderId::A {
            let err = a.create_refund(&http, &c, &refund(&new_id(), &unpaid, 100, None)).await.expect_err("unpaid");
            assert!(matches!(err, ProviderError::Rejected(_)), "{err:?}");
        }
        // An outage makes refunds unreachable, as it does everything else.
        control(&sb, &format!("/sandbox/providers/{}/outage", p.as_str()), json!({"down": true})).await;
        let err = a.create_refund(&http, &c, &refund(&new_id(), &unpaid, 1, None)).await.expect_err("down");
        assert!(err.is_transient(), "{}: {err:?}", p.as_str());
        control(&sb, &format!("/sandbox/providers/{}/outage", p.as_str()), json!({"down": false})).await;
    }
}

#[tokio::test]
async fn a_flutterwave_refund_of_an_unpaid_charge_is_refused_and_a_card_paid_hubtel_one_is_not_sent() {
    let sb = start_sandbox().await;
    let http = outbound();
    let (c, a) = (creds(&sb, ProviderId::B, "sk_fw"), adapter(ProviderId::B));
    let r = reference("unpaid");
    a.initialize(&http, &c, &charge(&r, &Value::Null, None)).await.expect("init");
    let id = sb.charge(&r).expect("record")["id"].as_u64().expect("a Flutterwave id").to_string();
    let unpaid = Paid { reference: r, provider_id: Some(id), method: None, payer: None };
    let err = a.create_refund(&http, &c, &refund(&new_id(), &unpaid, 100, None)).await.expect_err("unpaid");
    assert!(matches!(err, ProviderError::Rejected(ref m) if m.contains("400")), "{err:?}");
    assert!(sb.refunds().is_empty());

    let (c, a) = (creds(&sb, ProviderId::C, "sk_hub"), adapter(ProviderId::C));
    let r = reference("card");
    a.initialize(&http, &c, &charge(&r, &Value::Null, None)).await.expect("init");
    control(&sb, &format!("/sandbox/charges/{r}/succeed"), json!({"deliver": false, "method": "card"})).await;
    let state = a.verify_charge(&http, &c, &r).await.expect("verify");
    let card = Paid { reference: r, provider_id: state.provider_id, method: state.method, payer: None };
    assert!(a.refund_refusal(&card.facts()).is_some());
    let err = a.create_refund(&http, &c, &refund(&new_id(), &card, 100, None)).await.expect_err("card");
    assert!(matches!(err, ProviderError::Rejected(_)), "{err:?}");
    assert!(sb.refunds().is_empty() && sb.transfers_of("provider_c").is_empty(), "nothing was sent");
}

#[tokio::test]
async fn two_racing_creates_of_one_refund_make_one_refund() {
    let sb = start_sandbox().await;
    let http = outbound();
    // Flutterwave's refund call carries no id of Tessera's: only its refund worker, which never
    // races itself, keeps it to one there.
    for p in [ProviderId::A, ProviderId::C] {
        let (c, a) = (creds(&sb, p, "sk_race"), adapter(p));
        let ch = paid_charge(&sb, p, "sk_race").await;
        let id = new_id();
        let req = refund(&id, &ch, 700, None);
        let (one, two) = tokio::join!(a.create_refund(&http, &c, &req), a.create_refund(&http, &c, &req));
        let (one, two) = (one.expect("one"), two.expect("two"));
        assert_eq!(one, two, "{}", p.as_str());
        assert_eq!(refunds_of(&sb, &ch.reference).len(), 1, "{}", p.as_str());
    }
}

#[tokio::test]
async fn the_sandbox_reads_refunds_on_each_wire() {
    let sb = start_sandbox().await;
    let http = reqwest::Client::new();
    // Flutterwave's wire: by the transaction's id, decimal amounts, listed by date.
    let ch = paid_charge(&sb, ProviderId::B, "sk_fw").await;
    let tx = ch.provider_id.clone().expect("id");
    let url = format!("{}/v3/transactions/{tx}/refund", sb.provider_url("provider_b"));
    let first: Value = http
        .post(&url)
        .bearer_auth("sk_fw")
        .json(&json!({"amount": 3, "comments": "Duplicate"}))
        .send()
        .await
        .expect("post")
        .json()
        .await
        .expect("json");
    assert_eq!(
        (first["status"].as_str(), first["data"]["status"].as_str()),
        (Some("success"), Some("pending")),
        "{first}"
    );
    assert_eq!((first["data"]["amount_refunded"].as_i64(), first["data"]["tx_id"].to_string()), (Some(3), tx.clone()));
    let other = http.post(&url).bearer_auth("sk_other").json(&json!({"amount": 1})).send().await.expect("post");
    assert_eq!(other.status(), 404);
    let too_much = http.post(&url).bearer_auth("sk_fw").json(&json!({"amount": 9.51})).send().await.expect("post");
    assert_eq!(too_much.status(), 400);
    let today = &first["data"]["created_at"].as_str().expect("created_at")[..10];
    let listed: Value = http
        .get(format!("{}/v3/refunds?from={today}&to={today}", sb.provider_url("provider_b")))
        .bearer_auth("sk_fw")
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed["meta"]["page_info"]["total_pages"], 1);
    let bad = http
        .get(format!("{}/v3/refunds?from=yesterday", sb.provider_url("provider_b")))
        .bearer_auth("sk_fw")
        .send()
        .await
        .expect("list");
    assert_eq!(bad.status(), 400);
    let fw_id = first["data"]["id"].to_string();
    assert_eq!(sb.refund(&fw_id).expect("record")["reason"], "Duplicate");

    // Paystack's wire: Tessera's id is the merchant_note; a second one with it is refused.
    let pch = paid_charge(&sb, ProviderId::A, "sk_ps").await.reference;
    let url = format!("{}/refund", sb.provider_url("provider_a"));
    let body = json!({"transaction": pch, "amount": 250, "merchant_note": "R-ps-1"});
    let r: Value =
        http.post(&url).bearer_auth("sk_ps").json(&body).send().await.expect("post").json().await.expect("json");
    assert_eq!((r["status"].as_bool(), r["data"]["status"].as_str()), (Some(true), Some("pending")), "{r}");
    assert!(r["data"]["id"].is_u64());
    let again = http.post(&url).bearer_auth("sk_ps").json(&body).send().await.expect("post");
    assert_eq!(again.status(), 400);
    let listed: Value = http
        .get(format!("{url}?transaction={pch}"))
        .bearer_auth("sk_ps")
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(listed["data"][0]["merchant_note"], "R-ps-1");

    // The control API's view, by Tessera's refund id.
    let got: Value = reqwest::get(format!("{}/sandbox/refunds/R-ps-1", sb.base_url()))
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    for (k, v) in [
        ("id", json!("R-ps-1")),
        ("provider", json!("provider_a")),
        ("transaction", json!(pch)),
        ("amount", json!(250)),
        ("status", json!("pending")),
        ("reason", Value::Null),
    ] {
        assert_eq!(got[k], v, "{k} in {got}");
    }
    assert!(got["createdAt"].is_string());
    let all: Vec<Value> =
        reqwest::get(format!("{}/sandbox/refunds", sb.base_url())).await.expect("get").json().await.expect("json");
    let providers: Vec<&str> = all.iter().filter_map(|r| r["provider"].as_str()).collect();
    assert_eq!(providers, ["provider_a", "provider_b"], "newest first");
    assert_eq!(reqwest::get(format!("{}/sandbox/refunds/nope", sb.base_url())).await.expect("get").status(), 404);
    assert_eq!(control(&sb, "/sandbox/refunds/nope/succeed", json!({})).await.0, 404);
    assert_eq!(control(&sb, "/sandbox/refunds/R-ps-1/refund", json!({})).await.0, 404);

    // Hubtel's wire: money sent back to the payer of a paid charge is that charge's refund.
    let hch = paid_charge(&sb, ProviderId::C, "sk_hub").await;
    let id = new_id();
    let send = json!({"RecipientName": "Ama", "RecipientMsisdn": hch.payer, "Channel": "vodafone-gh", "Amount": 2.5,
                      "PrimaryCallbackURL": "http://127.0.0.1:9/cb", "Description": "Refund",
                      "ClientReference": id.replace('-', "")});
    let url = format!("{}/api/merchants/2017002/send/mobilemoney", sb.provider_url("provider_c"));
    let sent: Value = http
        .post(&url)
        .basic_auth("api", Some("sk_hub"))
        .json(&send)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(
        (sent["ResponseCode"].as_str(), sent["Data"]["Amount"].to_string()),
        (Some("0001"), "2.5".into()),
        "{sent}"
    );
    let record = sb.refund(&id).expect("a refund");
    assert_eq!((record["transaction"].as_str(), record["amount"].as_i64()), (Some(hch.reference.as_str()), Some(250)));
    let denied = http.post(&url).basic_auth("api", None::<&str>).json(&send).send().await.expect("send");
    assert_eq!(denied.status(), 401);
}

#[tokio::test]
async fn refund_callbacks_are_signed_and_name_what_they_are_about() {
    let sb = start_sandbox().await;
    let rx = receiver().await;
    sb.set_notify_url(rx.url.clone());
    let http = outbound();
    for p in ProviderId::ALL {
        let secret = format!("sk_rhook_{}", p.as_str());
        let (c, a) = (creds_back_to(&sb, p, &secret, &rx.url), adapter(p));
        let ch = paid_charge(&sb, p, &secret).await;
        // Two amounts: Flutterwave's listing adopts a lost refund by its charge and amount.
        for (action, success, amount) in [("succeed", true, 400), ("fail", false, 300)] {
            let id = new_id();
            let state = a.create_refund(&http, &c, &refund(&id, &ch, amount, None)).await.expect("create");
            let pid = control_id(&state);
            let (status, rec) = control(&sb, &format!("/sandbox/refunds/{pid}/{action}"), json!({})).await;
            assert_eq!(status, 200, "{}: {pid} {rec}", p.as_str());
            let (path, headers, body) = rx.got.lock().expect("lock").last().cloned().expect("a callback arrived");
            assert_eq!(path, callback_path(p));
            let sig = headers.get(p.signature_header()).and_then(|v| v.to_str().ok()).expect("signature").to_string();
            assert!(a.verify_signature(secret.as_bytes(), &body, &sig), "{}", p.as_str());
            assert!(!a.verify_signature(b"sk_someone_else", &body, &sig));
            let e = a.parse_callback(&body).expect("event");
            let v: Value = serde_json::from_slice(&body).expect("json");
            match p {
                ProviderId::A => {
                    let event = if success { "refund.processed" } else { "refund.failed" };
                    assert_eq!((e.event.as_str(), e.reference.as_str()), (event, ch.reference.as_str()));
                }
                ProviderId::B => {
                    assert_eq!((e.event.as_str(), e.reference.as_str()), ("refund.completed", ch.reference.as_str()));
                    assert_eq!(v["data"]["status"], if success { "completed" } else { "failed" });
                }
                ProviderId::C => {
                    assert_eq!((e.event.as_str(), e.reference.as_str()), ("hubtel.send", id.as_str()));
                    assert_eq!(v["ResponseCode"], if success { "0000" } else { "2001" });
                }
            }
            // The sandbox logs the delivery under the refund's id in its record.
            let logged = sb.refund(&pid).expect("record")["id"].as_str().expect("id").to_string();
            assert_eq!(deliveries(&sb, &logged)[0]["status"], 200);
        }
    }
    // `{"deliver": false}` settles without a callback.
    let ch = paid_charge(&sb, ProviderId::A, "sk_quiet").await;
    let id = new_id();
    adapter(ProviderId::A)
        .create_refund(&http, &creds(&sb, ProviderId::A, "sk_quiet"), &refund(&id, &ch, 100, None))
        .await
        .expect("create");
    control(&sb, &format!("/sandbox/refunds/{id}/succeed"), json!({"deliver": false})).await;
    assert!(deliveries(&sb, &id).is_empty());
}

#[tokio::test]
async fn an_outage_makes_a_provider_unreachable_until_it_ends() {
    let sb = start_sandbox().await;
    let http = outbound();
    for p in ProviderId::ALL {
        let (c, a) = (creds(&sb, p, "sk_outage"), adapter(p));
        let (status, _) =
            control(&sb, &format!("/sandbox/providers/{}/outage", p.as_str()), json!({"down": true})).await;
        assert_eq!(status, 200);
        let r = reference("down");
        let err = a.initialize(&http, &c, &charge(&r, &Value::Null, None)).await.expect_err("down");
        assert!(matches!(err, ProviderError::Unreachable(_)) && err.is_transient(), "{err:?}");
        control(&sb, &format!("/sandbox/providers/{}/outage", p.as_str()), json!({"down": false})).await;
        a.initialize(&http, &c, &charge(&r, &Value::Null, None)).await.expect("back up");
    }
    // A closed port is unreachable too.
    let dead = Credentials {
        base_url: "http://127.0.0.1:9".into(),
        secret_key: SecretString::from("sk"),
        account_supplied: false,
        extra: Default::default(),
    };
    let err = adapter(ProviderId::B).verify_charge(&http, &dead, "x").await.expect_err("dead");
    assert!(matches!(err, ProviderError::Unreachable(_)), "{err:?}");
}

#[tokio::test]
async fn a_missing_secret_is_rejected_and_a_guarded_private_url_is_blocked() {
    let sb = start_sandbox().await;
    let http = outbound();
    for p in ProviderId::ALL {
        let err = adapter(p).verify_charge(&http, &creds(&sb, p, ""), "x").await.expect_err("401");
        assert!(matches!(err, ProviderError::Rejected(ref m) if m.contains("401")), "{}: {err:?}", p.as_str());
        // An account-supplied loopback URL never leaves Tessera unless private endpoints are allowed.
        let mut c = creds(&sb, p, "sk");
        c.account_supplied = true;
        let err = adapter(p).verify_charge(&http, &c, "x").await.expect_err("blocked");
        assert!(matches!(err, ProviderError::Blocked(_)), "{err:?}");
        let lenient = Outbound::new(Duration::from_secs(5), true).expect("outbound");
        assert_eq!(adapter(p).verify_charge(&lenient, &c, "x").await, Err(ProviderError::NotFound));
    }
}

#[tokio::test]
async fn sandbox_callbacks_are_signed_with_the_charge_secret_and_verify_with_the_adapter() {
    let sb = start_sandbox().await;
    let rx = receiver().await;
    sb.set_notify_url(rx.url.clone());
    let http = outbound();
    for p in ProviderId::ALL {
        let secret = format!("sk_hook_{}", p.as_str());
        let (c, a) = (creds_back_to(&sb, p, &secret, &rx.url), adapter(p));
        let r = reference("hook");
        a.initialize(&http, &c, &charge(&r, &Value::Null, None)).await.expect("init");
        let (status, _) = control(&sb, &format!("/sandbox/charges/{r}/succeed"), json!({})).await;
        assert_eq!(status, 200);
        // The first attempt is made before the control call answers.
        let (path, headers, body) = rx.got.lock().expect("lock").last().cloned().expect("a callback arrived");
        assert_eq!(path, callback_path(p));
        let sig =
            headers.get(p.signature_header()).and_then(|v| v.to_str().ok()).expect("signature header").to_string();
        assert!(a.verify_signature(secret.as_bytes(), &body, &sig), "{}", p.as_str());
        assert!(!a.verify_signature(b"sk_someone_else", &body, &sig));
        let v: Value = serde_json::from_slice(&body).expect("json");
        let event = a.parse_callback(&body).expect("event");
        assert_eq!(event.reference, r, "{}", p.as_str());
        assert!(event.id.is_some());
        match p {
            ProviderId::A => {
                assert_eq!(v["event"], "charge.success");
                for k in ["id", "reference", "status", "amount", "currency", "fees", "customer", "paid_at"] {
                    assert!(v["data"].get(k).is_some(), "data.{k} in {v}");
                }
            }
            ProviderId::B => {
                assert_eq!(
                    (v["event"].as_str(), v["data"]["status"].as_str()),
                    (Some("charge.completed"), Some("successful"))
                );
                assert_eq!(
                    (v["data"]["tx_ref"].as_str(), v["data"]["amount"].to_string()),
                    (Some(r.as_str()), "12.5".into())
                );
                assert_eq!(v["data"]["customer"]["email"], "ama@example.com");
            }
            ProviderId::C => {
                assert_eq!((v["ResponseCode"].as_str(), v["Data"]["Status"].as_str()), (Some("0000"), Some("Success")));
                assert_eq!(v["Data"]["ClientReference"], r.replace('_', ""));
                assert_eq!(event.payer.as_deref(), sb.charge(&r).expect("record")["payer"].as_str());
            }
        }
        assert_eq!(deliveries(&sb, &r)[0]["status"], 200);
    }
    // Transfers carry their failure reason.
    let r = new_id();
    let c = creds(&sb, ProviderId::B, "sk_t");
    adapter(ProviderId::B).create_transfer(&http, &c, &transfer(&r)).await.expect("transfer");
    control(&sb, &format!("/sandbox/transfers/{r}/fail"), json!({"reason": "Invalid account"})).await;
    let (_, headers, body) = rx.got.lock().expect("lock").last().cloned().expect("callback");
    let v: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!((v["event"].as_str(), v["data"]["status"].as_str()), (Some("transfer.completed"), Some("FAILED")));
    assert_eq!(
        (v["data"]["reference"].as_str(), v["data"]["complete_message"].as_str()),
        (Some(r.as_str()), Some("Invalid account"))
    );
    let sig = headers.get("x-provider_b-signature").and_then(|v| v.to_str().ok()).expect("sig");
    assert!(adapter(ProviderId::B).verify_signature(b"sk_t", &body, sig));
}

#[tokio::test]
async fn the_checkout_page_pays_or_declines_and_redirects_to_the_callback() {
    let sb = start_sandbox().await;
    let http = outbound();
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    for p in ProviderId::ALL {
        let (c, a) = (creds(&sb, p, "sk_checkout"), adapter(p));
        for (action, status) in [("pay", "success"), ("decline", "failed")] {
            let r = reference(action);
            let init = a
                .initialize(&http, &c, &charge(&r, &Value::Null, Some("https://shop.example.com/done?x=1")))
                .await
                .expect("init");
            let page = browser.get(&init.authorization_url).send().await.expect("page");
            assert_eq!(page.status(), 200);
            let html = page.text().await.expect("html");
            for needle in ["GHS 12.50", p.as_str(), "/pay\"", "/decline\""] {
                assert!(html.contains(needle), "{needle} on the page");
            }
            let done = browser.post(format!("{}/{action}", init.authorization_url)).send().await.expect("submit");
            assert_eq!(done.status(), 303);
            let location = done.headers().get("location").and_then(|v| v.to_str().ok()).expect("location");
            let id = sb.charge(&r).expect("record")["id"].to_string();
            let wire = r.replace('_', "");
            let expected = match (p, status) {
                (ProviderId::A, _) => format!("https://shop.example.com/done?x=1&reference={r}&status={status}"),
                (ProviderId::B, "success") => {
                    format!("https://shop.example.com/done?x=1&status=successful&tx_ref={r}&transaction_id={id}")
                }
                (ProviderId::B, _) => {
                    format!("https://shop.example.com/done?x=1&status=cancelled&tx_ref={r}&transaction_id={id}")
                }
                (ProviderId::C, "success") => {
                    format!("https://shop.example.com/done?x=1&reference={wire}&status=success")
                }
                // Hubtel sends a declined checkout to its cancellationUrl.
                (ProviderId::C, _) => "https://shop.example.com/done?x=1&cancelled=1".to_string(),
            };
            assert_eq!(location, expected, "{}", p.as_str());
            let remote = if status == "success" { RemoteStatus::Success } else { RemoteStatus::Failed };
            assert_eq!(a.verify_charge(&http, &c, &r).await.expect("verify").status, remote);
            let again = browser.post(format!("{}/pay", init.authorization_url)).send().await.expect("again");
            assert_eq!(again.status(), 409);
        }
    }
    // Without a callback the page shows the result.
    let (c, a) = (creds(&sb, ProviderId::A, "sk_checkout"), adapter(ProviderId::A));
    let r = reference("nocb");
    let init = a.initialize(&http, &c, &charge(&r, &Value::Null, None)).await.expect("init");
    let done = browser.post(format!("{}/pay", init.authorization_url)).send().await.expect("submit");
    assert_eq!(done.status(), 200);
    assert!(done.text().await.expect("html").contains("paid"));
}

#[tokio::test]
async fn settling_twice_is_409_with_the_record_and_unknown_references_are_404() {
    let sb = start_sandbox().await;
    let r = reference("twice");
    adapter(ProviderId::C)
        .initialize(&outbound(), &creds(&sb, ProviderId::C, "sk"), &charge(&r, &Value::Null, None))
        .await
        .expect("init");
    assert_eq!(control(&sb, &format!("/sandbox/charges/{r}/succeed"), json!({"deliver": false})).await.0, 200);
    let (status, record) = control(&sb, &format!("/sandbox/charges/{r}/fail"), json!({})).await;
    assert_eq!(
        (status, record["status"].as_str(), record["reference"].as_str()),
        (409, Some("success"), Some(r.as_str()))
    );
    assert_eq!(control(&sb, "/sandbox/charges/T-nobody/succeed", json!({})).await.0, 404);
    assert_eq!(control(&sb, "/sandbox/transfers/W-nobody/fail", json!({})).await.0, 404);
    assert_eq!(control(&sb, &format!("/sandbox/charges/{r}/succeed"), json!({"method": "cash"})).await.0, 400);
    // By Tessera's reference and by Hubtel's.
    for name in [r.clone(), r.replace('_', "")] {
        let got = reqwest::get(format!("{}/sandbox/charges/{name}", sb.base_url())).await.expect("get");
        assert_eq!(got.status(), 200);
        assert_eq!(got.json::<Value>().await.expect("json")["provider"], "provider_c");
    }
    assert_eq!(reqwest::get(format!("{}/sandbox/transfers/nope", sb.base_url())).await.expect("get").status(), 404);
}

#[tokio::test]
async fn a_callback_to_a_dead_notify_url_is_retried_three_more_times_and_recorded() {
    let sb = start_sandbox().await;
    sb.set_notify_url("http://127.0.0.1:9");
    let r = reference("dead");
    adapter(ProviderId::B)
        .initialize(&outbound(), &creds(&sb, ProviderId::B, "sk"), &charge(&r, &Value::Null, None))
        .await
        .expect("init");
    assert_eq!(control(&sb, &format!("/sandbox/charges/{r}/fail"), json!({})).await.0, 200);
    assert_eq!(deliveries(&sb, &r).len(), 1, "the first attempt is made before the answer");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while deliveries(&sb, &r).len() < 4 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let d = deliveries(&sb, &r);
    assert_eq!(d.len(), 4, "{d:?}");
    for (i, item) in d.iter().enumerate() {
        assert_eq!(item["attempt"], i as u64 + 1);
        assert_eq!(item["event"], "charge.completed");
        assert_eq!(item["url"], "http://127.0.0.1:9/api/white-label/webhooks/provider_b");
        assert!(item["status"].is_null() && item["error"].is_string(), "{item}");
    }
    let listed: Vec<Value> =
        reqwest::get(format!("{}/sandbox/webhooks", sb.base_url())).await.expect("get").json().await.expect("json");
    assert_eq!(listed[0]["attempt"], 4, "newest first");
}

#[tokio::test]
async fn mobile_money_on_the_real_wires_flutterwave_by_page_and_hubtel_by_prompt() {
    let sb = start_sandbox().await;
    let http = outbound();
    // Flutterwave's Ghana mobile money needs a page (D18.2): the redirect is the checkout page.
    let (c, a) = (creds(&sb, ProviderId::B, "sk_fw"), adapter(ProviderId::B));
    let r = reference("fwmomo");
    let req =
        ChargeRequest { method: Some("mobile_money"), phone: Some("0241234567"), ..charge(&r, &Value::Null, None) };
    let init = a.initialize(&http, &c, &req).await.expect("initialize");
    assert_eq!(init.authorization_url, format!("{}/checkout/{r}", sb.base_url()));
    let rec = sb.charge(&r).expect("record");
    assert_eq!(
        (rec["channel"].as_str(), rec["network"].as_str(), rec["phone"].as_str()),
        (Some("mobile_money"), Some("mtn"), Some("233241234567"))
    );
    control(&sb, &format!("/sandbox/charges/{r}/succeed"), json!({"deliver": false})).await;
    let state = a.verify_charge(&http, &c, &r).await.expect("verify");
    assert_eq!((state.status, state.method.as_deref()), (RemoteStatus::Success, Some("mobile_money")));
    assert!(!a.can_push(), "USSD votes never route to Flutterwave (D18.5)");

    // Hubtel's receive money: the prompt waits on the handset; a repeat is counted, not refused.
    let (c, a) = (creds(&sb, ProviderId::C, "sk_hub"), adapter(ProviderId::C));
    let r = reference("hubmomo");
    let meta = json!({"channel": "ussd"});
    let req = tessera_server::providers::payments::MobileMoneyCharge {
        reference: &r,
        amount: 875,
        currency: "GHS",
        email: "233241234567@ussd.invalid",
        msisdn: "233241234567",
        network: "vod",
        name: Some("Ama"),
        description: Some("4 votes"),
        metadata: &meta,
    };
    assert_eq!(a.charge_mobile_money(&http, &c, &req).await, Ok(()));
    assert_eq!(a.charge_mobile_money(&http, &c, &req).await, Ok(()));
    let rec = sb.charge(&r).expect("record");
    assert_eq!(
        (rec["prompts"].as_i64(), rec["network"].as_str(), rec["status"].as_str()),
        (Some(2), Some("vod"), Some("pending"))
    );
    assert_eq!(sb.charges_for_phone("241234567").len(), 2);
    assert_eq!(a.verify_charge(&http, &c, &r).await.expect("verify").status, RemoteStatus::Pending);
    control(&sb, &format!("/sandbox/charges/{r}/succeed"), json!({"deliver": false})).await;
    let state = a.verify_charge(&http, &c, &r).await.expect("verify");
    assert_eq!(
        (state.status, state.amount, state.method.as_deref()),
        (RemoteStatus::Success, 875, Some("mobile_money"))
    );

    // A bank payout at Hubtel is a send to the bank code, a transfer at the sandbox.
    let w = new_id();
    let bank = TransferRequest { bank_code: "300315", account_number: "1441000999", bank_name: "GCB", ..transfer(&w) };
    let state = a.create_transfer(&http, &c, &bank).await.expect("transfer");
    assert_eq!((state.status, state.amount), (RemoteStatus::Pending, 5000));
    let rec = sb.transfer(&w).expect("record");
    assert_eq!((rec["recipient"]["BankCode"].as_str(), rec["reference"].as_str()), (Some("300315"), Some(w.as_str())));
}

#[tokio::test]
async fn sms_and_smtp_messages_sent_to_the_sandbox_are_listed() {
    use lettre::message::MultiPart;
    use lettre::transport::smtp::authentication::Credentials as SmtpCredentials;
    use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

    let sb = start_sandbox().await;
    let http = reqwest::Client::new();
    let sms = format!("{}/messages", sb.sms_url());
    let denied = http
        .post(&sms)
        .json(&json!({"to": "+233241234567", "from": "Tessera", "text": "hi"}))
        .send()
        .await
        .expect("send");
    assert_eq!(denied.status(), 401);
    let sent = http
        .post(&sms)
        .bearer_auth("sms_key")
        .json(&json!({"to": "+233241234567", "from": "Tessera", "text": "Your code is 123456"}))
        .send()
        .await
        .expect("send");
    assert!(sent.status().is_success());
    let id = sent.json::<Value>().await.expect("json")["id"].as_str().expect("id").to_string();
    let listed: Vec<Value> =
        http.get(format!("{}/sandbox/sms", sb.base_url())).send().await.expect("get").json().await.expect("json");
    assert_eq!(
        (listed[0]["id"].as_str(), listed[0]["text"].as_str()),
        (Some(id.as_str()), Some("Your code is 123456"))
    );
    control(&sb, "/sandbox/providers/sms/outage", json!({"down": true})).await;
    let down = http
        .post(&sms)
        .bearer_auth("k")
        .json(&json!({"to": "+233", "from": "T", "text": "x"}))
        .send()
        .await
        .expect("send");
    assert_eq!(down.status(), 503);

    let smtp = sb.smtp_addr().expect("smtp");
    let email = Message::builder()
        .from("Tessera Demo <tickets@demo.localhost>".parse().expect("from"))
        .to("Ama <ama@example.com>".parse().expect("to"))
        .subject("Your tickets")
        .multipart(MultiPart::alternative_plain_html(
            "Hello Ama\n.a line that starts with a dot".to_string(),
            "<p>Hello Ama</p>".to_string(),
        ))
        .expect("message");
    let mailer = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(smtp.ip().to_string())
        .port(smtp.port())
        .credentials(SmtpCredentials::new("user".into(), "pass".into()))
        .build();
    mailer.send(email).await.expect("lettre sends to the sink");
    let mail: Vec<Value> =
        http.get(format!("{}/sandbox/mail", sb.base_url())).send().await.expect("get").json().await.expect("json");
    assert_eq!(mail.len(), 1);
    assert_eq!(
        (mail[0]["from"].as_str(), mail[0]["to"].as_str()),
        (Some("tickets@demo.localhost"), Some("ama@example.com"))
    );
    assert_eq!(mail[0]["subject"], "Your tickets");
    let text = mail[0]["text"].as_str().expect("text");
    assert!(text.contains("Hello Ama") && text.contains("\n.a line that starts with a dot"), "{text:?}");
    assert!(mail[0]["html"].as_str().is_some_and(|h| h.contains("<p>Hello Ama</p>")));
    assert_eq!(sb.mail().len(), 1);
}

async fn settings_refuse_provider_and_sms_urls_into_private_networks(b: Backend) {
    let app = spawn_with(b, |_| {}).await;
    for (url, field) in [
        ("https://127.0.0.1/provider_a", "config.providers.provider_a.baseUrl"),
        ("http://example.com", "config.providers.provider_a.baseUrl"),
        ("https://localhost:8090/provider_a", "config.providers.provider_a.baseUrl"),
        ("https://[::ffff:10.0.0.1]/x", "config.providers.provider_a.baseUrl"),
    ] {
        let body = json!({"config": {"providers": {"provider_a": {"baseUrl": url, "secretKey": "sk_live_1"}}}});
        let r = app
            .client()
            .send_raw(
                Method::PATCH,
                "/api/white-label/v1/settings/payments",
                serde_json::to_vec(&body).expect("json"),
                None,
            )
            .await
            .expect("send");
        let err = assert_error(&r, 400, "validation_failed");
        assert_eq!(detail_fields(&err), [field], "{url}: {err}");
    }
    let body = json!({"config": {"sms": {"baseUrl": "https://192.168.1.10/sms", "apiKey": "k"}}});
    let r = app
        .client()
        .send_raw(
            Method::PATCH,
            "/api/white-label/v1/settings/notifications",
            serde_json::to_vec(&body).expect("json"),
            None,
        )
        .await
        .expect("send");
    let err = assert_error(&r, 400, "validation_failed");
    assert_eq!(detail_fields(&err), ["config.sms.baseUrl"]);
    let _: Value = app
        .api()
        .patch(
            "/api/white-label/v1/settings/payments",
            &json!({"config": {"providers": {"provider_b": {"baseUrl": "https://api.gateway.example.com"}}}}),
            StatusCode::OK,
        )
        .await;

    // A platform that allows private endpoints (the demo) accepts the sandbox on loopback.
    let lenient = spawn_with(Backend::Sqlite, |c| c.security.allow_private_endpoints = true).await;
    let _: Value = lenient
        .api()
        .patch(
            "/api/white-label/v1/settings/payments",
            &json!({"config": {"providers": {"provider_a": {"baseUrl": "http://127.0.0.1:8090/provider_a"}}}}),
            StatusCode::OK,
        )
        .await;
}

on_both!(settings_refuse_provider_and_sms_urls_into_private_networks);

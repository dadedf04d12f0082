//! Integration tests: outbound webhooks (issue 25; D17.24–27, D17.41) through the real server,
//! the real sandbox and a receiver on loopback that checks every delivery with the
//! `standardwebhooks` crate (the Standard Webhooks reference implementation), as an
//! integrator's would. Background workers are off; the tests drain the queues themselves and,
//! where retries wait (the schedule × `webhooks.retry_scale` = 1e-6, so milliseconds), drain
//! again after a short pause until what they wait for has arrived.
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use serde_json::{json, Value};
use standardwebhooks::Webhook;
use tessera_client::Method;

use crate::support::catalogue::{participant, running_campaign, ticket_type};
use crate::support::client::{assert_error, detail_fields};
use crate::support::payments::{buy, initialize, payment, sandbox_settle, spawn_paid_with, PayApp};
use crate::support::server::{drain, Backend, TestApp, TestKey, ALL_PRIVATE_SCOPES};

const ENDPOINTS: &str = "/api/white-label/v1/webhook-endpoints";
const EVENTS: &str = "/api/white-label/v1/events";
const WITHDRAWALS: &str = "/api/white-label/v1/withdrawals";
const CAMPAIGNS: &str = "/api/white-label/v1/campaigns";

// ---------------------------------------------------------------------------------------------
// The receiver
// ---------------------------------------------------------------------------------------------

/// One request the receiver got.
#[derive(Clone, Debug)]
pub(crate) struct Delivery {
    /// The path it was posted to, without the leading `/` (one path per endpoint).
    pub path: String,
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub content_type: String,
    pub user_agent: String,
    pub headers: HeaderMap,
    /// The body exactly as sent.
    pub body: String,
    pub json: Value,
    /// Whether `standardwebhooks` verified it with one of the path's secrets.
    pub verified: bool,
    /// Which request for this id on this path it was (1 for the first).
    pub nth: usize,
    /// The status the receiver answered.
    pub answered: u16,
}

impl Delivery {
    fn event_type(&self) -> &str {
        self.json["type"].as_str().unwrap_or_default()
    }
}

/// What a path answers each request with (200 without one).
type Plan = Box<dyn Fn(&Delivery) -> u16 + Send + Sync>;

#[derive(Default)]
struct Inbox {
    secrets: HashMap<String, Vec<String>>,
    plans: HashMap<String, Plan>,
    seen: Vec<Delivery>,
}

/// A webhook consumer on loopback: each path is one endpoint's URL, with its secrets (every
/// delivery is verified with them) and a plan for what to answer.
pub(crate) struct Receiver {
    base: String,
    inbox: Arc<Mutex<Inbox>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn receive(State(inbox): State<Arc<Mutex<Inbox>>>, uri: Uri, headers: HeaderMap, body: Bytes) -> StatusCode {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let path = uri.path().trim_start_matches('/').to_string();
    let text = String::from_utf8_lossy(&body).into_owned();
    let Ok(mut inbox) = inbox.lock() else { return StatusCode::INTERNAL_SERVER_ERROR };
    let verified = inbox.secrets.get(&path).is_some_and(|secrets| {
        secrets.iter().any(|s| Webhook::new(s).is_ok_and(|w| w.verify(text.as_bytes(), &headers).is_ok()))
    });
    let id = header("webhook-id");
    let nth = inbox.seen.iter().filter(|d| d.path == path && d.id == id).count() + 1;
    let mut d = Delivery {
        path: path.clone(),
        id,
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        content_type: header("content-type"),
        user_agent: header("user-agent"),
        headers: headers.clone(),
        json: serde_json::from_str(&text).unwrap_or(Value::Null),
        body: text,
        verified,
        nth,
        answered: 200,
    };
    d.answered = inbox.plans.get(&path).map(|plan| plan(&d)).unwrap_or(200);
    let status = StatusCode::from_u16(d.answered).unwrap_or(StatusCode::OK);
    inbox.seen.push(d);
    status
}

impl Receiver {
    pub(crate) async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the receiver");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let inbox = Arc::new(Mutex::new(Inbox::default()));
        let app = axum::Router::new().fallback(receive).with_state(inbox.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        Receiver { base, inbox, _stop: tx }
    }

    fn inbox(&self) -> std::sync::MutexGuard<'_, Inbox> {
        self.inbox.lock().expect("inbox")
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }

    /// The secrets `path`'s deliveries are verified with (any one of them must verify).
    pub(crate) fn secrets(&self, path: &str, secrets: &[&str]) {
        self.inbox().secrets.insert(path.to_string(), secrets.iter().map(|s| s.to_string()).collect());
    }

    pub(crate) fn plan(&self, path: &str, plan: impl Fn(&Delivery) -> u16 + Send + Sync + 'static) {
        self.inbox().plans.insert(path.to_string(), Box::new(plan));
    }

    /// Every request to `path`, in arrival order.
    pub(crate) fn all(&self, path: &str) -> Vec<Delivery> {
        self.inbox().seen.iter().filter(|d| d.path == path).cloned().collect()
    }

    /// The requests to `path` that were answered 2xx, in arrival order.
    pub(crate) fn delivered(&self, path: &str) -> Vec<Delivery> {
        self.all(path).into_iter().filter(|d| (200..300).contains(&d.answered)).collect()
    }

    /// The 2xx-answered requests to `path` of event type `t`.
    fn of_type(&self, path: &str, t: &str) -> Vec<Delivery> {
        self.delivered(path).into_iter().filter(|d| d.event_type() == t).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A paid server (sandbox providers) that may deliver to loopback, retrying within milliseconds.
async fn spawn_hooks(b: Backend) -> (PayApp, Receiver) {
    let p = spawn_paid_with(b, |c| {
        c.security.allow_private_endpoints = true;
        c.webhooks.retry_scale = 0.000_001;
        c.webhooks.timeout_ms = 5_000;
    })
    .await;
    (p, Receiver::start().await)
}

/// Creates an endpoint of the default account for the receiver's `path`, registers its secret
/// with the receiver and returns the endpoint's id.
async fn endpoint(app: &TestApp, rx: &Receiver, path: &str, event_types: Option<Value>) -> String {
    let mut body = json!({"url": rx.url(path), "description": format!("receiver {path}")});
    if let Some(t) = event_types {
        body["eventTypes"] = t;
    }
    let v: Value = app.api().post(ENDPOINTS, &body, StatusCode::CREATED).await;
    let secret = v["data"]["secret"].as_str().expect("secret");
    assert!(secret.starts_with("whsec_"), "{v}");
    rx.secrets(path, &[secret]);
    v["data"]["id"].as_str().expect("id").to_string()
}

async fn show_endpoint(app: &TestApp, id: &str) -> Value {
    let v: Value = app.api().get(&format!("{ENDPOINTS}/{id}"), StatusCode::OK).await;
    v["data"].clone()
}

/// Drains the queues until `done` holds (retries wait a few milliseconds between drains).
async fn until(app: &TestApp, what: &str, done: impl Fn() -> bool) {
    for _ in 0..1_000 {
        drain(app).await;
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Drains a few times with pauses: for asserting that nothing more is sent.
async fn settle(app: &TestApp) {
    for _ in 0..10 {
        drain(app).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The account's whole feed, in sequence order.
async fn feed_of(app: &TestApp, key: &TestKey) -> Vec<Value> {
    let mut items = Vec::new();
    let mut after = 0;
    loop {
        let v: Value = app.api_as(key).get(&format!("{EVENTS}?after={after}&limit=100"), StatusCode::OK).await;
        let page = v["data"].as_array().expect("feed items").clone();
        let Some(last) = page.last() else { return items };
        after = last["sequence"].as_i64().expect("sequence");
        items.extend(page);
    }
}

async fn feed(app: &TestApp) -> Vec<Value> {
    feed_of(app, &app.account.private).await
}

/// A paid ticket purchase, initialized and settled at the sandbox (not yet fulfilled).
async fn paid_purchase(p: &PayApp, outcome: &str) -> String {
    let c = running_campaign(p, &p.account.private, "ticketing").await;
    let t = ticket_type(p, &p.account.private, &c, 12.0, 10).await;
    let reference = buy(p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, outcome, json!({})).await;
    reference
}

/// The body the contract fixes: `{"type","timestamp","sequence","data"}` with `data` as stored.
fn expected_body(item: &Value) -> String {
    format!(
        r#"{{"type":{},"timestamp":{},"sequence":{},"data":{}}}"#,
        item["type"], item["timestamp"], item["sequence"], item["data"]
    )
}

/// Every delivery of `path` was verified, carries the Standard Webhooks headers and a body of
/// the fixed shape.
fn assert_well_formed(rx: &Receiver, path: &str) {
    for d in rx.all(path) {
        assert!(d.verified, "delivery {} to {path} did not verify: {}", d.id, d.signature);
        assert!(d.signature.starts_with("v1,"), "{}", d.signature);
        assert_eq!(d.content_type, "application/json");
        assert_eq!(d.user_agent, "Tessera-Webhooks/1");
        assert!(d.timestamp.parse::<i64>().is_ok(), "webhook-timestamp in seconds: {}", d.timestamp);
        let keys: Vec<&str> = d.json.as_object().expect("an object").keys().map(String::as_str).collect();
        let mut want = vec!["data", "sequence", "timestamp", "type"];
        want.sort_unstable();
        let mut got = keys.clone();
        got.sort_unstable();
        assert_eq!(got, want, "{}", d.body);
    }
}

fn now_rfc3339(offset: time::Duration) -> String {
    (time::OffsetDateTime::now_utc() + offset).format(&time::format_description::well_known::Rfc3339).expect("rfc3339")
}

// ---------------------------------------------------------------------------------------------
// What is delivered
// ---------------------------------------------------------------------------------------------

async fn a_paid_ticket_purchase_delivers_the_payment_signed_with_the_feeds_id_and_sequence(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    endpoint(&p, &rx, "all", None).await;
    let reference = paid_purchase(&p, "succeed").await;
    until(&p, "the purchase event", || !rx.of_type("all", "ticket.purchase.confirmed").is_empty()).await;
    let d = rx.of_type("all", "ticket.purchase.confirmed").remove(0);
    let paid = payment(&p, &reference).await;
    assert_eq!(paid["status"], "success");
    assert_eq!(d.json["data"], paid, "data is the payment as GET /payments/:reference shows it");
    let item = feed(&p).await.into_iter().find(|e| e["id"] == d.id.as_str()).expect("the event is in the feed");
    assert_eq!(item["type"], "ticket.purchase.confirmed");
    assert_eq!(d.json["sequence"], item["sequence"]);
    assert_eq!(d.body, expected_body(&item), "the body is the feed item's, byte for byte");
    // The timestamp header is the attempt's time, in seconds.
    let sent: i64 = d.timestamp.parse().expect("seconds");
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    assert!((now - sent).abs() < 60, "{sent} vs {now}");
    assert_well_formed(&rx, "all");
}

async fn vote_and_donation_payments_are_delivered(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    endpoint(&p, &rx, "all", None).await;
    let c = running_campaign(&p, &p.account.private, "voting").await;
    let nominee = participant(&p, &p.account.private, &c).await;
    let r = initialize(
        &p,
        json!({"transactionType": "vote", "amount": 10, "email": "fan@example.com", "phoneNumber": "0241234567",
               "callbackUrl": format!("https://{}/voted", p.account.domain),
               "metadata": {"campaignId": c, "participantId": nominee}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let vote = r.json()["data"]["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &vote, "succeed", json!({})).await;
    let d = running_campaign(&p, &p.account.private, "donation").await;
    let r = initialize(
        &p,
        json!({"transactionType": "donation", "amount": 20, "email": "giver@example.com", "phoneNumber": "0241234567",
               "callbackUrl": format!("https://{}/thanks", p.account.domain), "metadata": {"campaignId": d}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let gift = r.json()["data"]["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &gift, "succeed", json!({})).await;
    until(&p, "the vote and donation events", || {
        !rx.of_type("all", "vote.payment.success").is_empty()
            && !rx.of_type("all", "donation.payment.success").is_empty()
    })
    .await;
    let v = rx.of_type("all", "vote.payment.success").remove(0);
    assert_eq!(v.json["data"], payment(&p, &vote).await);
    assert_eq!(v.json["data"]["votes"]["count"], 5);
    let g = rx.of_type("all", "donation.payment.success").remove(0);
    assert_eq!(g.json["data"], payment(&p, &gift).await);
    assert!(rx.of_type("all", "ticket.purchase.confirmed").is_empty());
    assert_well_formed(&rx, "all");
}

async fn a_failed_payment_is_delivered(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    endpoint(&p, &rx, "all", None).await;
    let reference = paid_purchase(&p, "fail").await;
    until(&p, "payment.failed", || !rx.of_type("all", "payment.failed").is_empty()).await;
    let d = rx.of_type("all", "payment.failed").remove(0);
    let failed = payment(&p, &reference).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(d.json["data"], failed);
    assert!(rx.of_type("all", "ticket.purchase.confirmed").is_empty());
    assert_well_formed(&rx, "all");
}

async fn a_check_in_is_delivered_with_the_ticket(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    endpoint(&p, &rx, "all", None).await;
    let reference = paid_purchase(&p, "succeed").await;
    drain(&p).await;
    let code = payment(&p, &reference).await["tickets"][0]["ticketCode"].as_str().expect("code").to_string();
    let v: Value = p
        .api()
        .post(
            "/api/white-label/v1/tickets/verify",
            &json!({"ticketCode": code, "autoVerify": true, "checkedInBy": "gate-1"}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(v["data"]["result"], "checked_in");
    until(&p, "ticket.checked_in", || !rx.of_type("all", "ticket.checked_in").is_empty()).await;
    let d = rx.of_type("all", "ticket.checked_in").remove(0);
    let ticket = payment(&p, &reference).await["tickets"][0].clone();
    assert_eq!(d.json["data"], ticket, "data is the ticket (D16.9)");
    assert_eq!(d.json["data"]["checkedIn"], true);
    assert_eq!(d.json["data"]["checkedInBy"], "gate-1");
    // A second scan checks nothing in: no second event.
    let (s, _) = p
        .signed(
            Method::POST,
            "/api/white-label/v1/tickets/verify",
            Some(json!({"ticketCode": code, "autoVerify": true})),
        )
        .await;
    assert_eq!(s, 200);
    settle(&p).await;
    assert_eq!(rx.of_type("all", "ticket.checked_in").len(), 1);
    assert_well_formed(&rx, "all");
}

async fn withdrawals_deliver_succeeded_and_failed(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    endpoint(&p, &rx, "all", None).await;
    paid_purchase(&p, "succeed").await;
    drain(&p).await;
    let key = p.create_key(&p.account.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    let mut ids = Vec::new();
    for amount in [3.0, 4.0] {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("x-idempotency-key", uuid::Uuid::now_v7().to_string().parse().expect("header"));
        let body = json!({"amount": amount, "bank_name": "MTN Mobile Money", "bank_code": "MTN",
                          "account_number": "0241234567", "account_name": "Ama Mensah"});
        let r = p
            .client_for(&key)
            .send_raw(Method::POST, WITHDRAWALS, serde_json::to_vec(&body).expect("json"), Some(h))
            .await
            .expect("send");
        assert_eq!(r.status, 201, "{}", r.json());
        ids.push(r.json()["data"]["id"].as_str().expect("id").to_string());
    }
    drain(&p).await;
    for (id, outcome) in ids.iter().zip(["succeed", "fail"]) {
        let url = format!("{}/sandbox/transfers/{id}/{outcome}", p.sandbox.base_url());
        let r = p.http.post(url).json(&json!({})).send().await.expect("sandbox");
        assert_eq!(r.status().as_u16(), 200, "sandbox transfer {outcome}");
    }
    until(&p, "the withdrawal events", || {
        !rx.of_type("all", "withdrawal.succeeded").is_empty() && !rx.of_type("all", "withdrawal.failed").is_empty()
    })
    .await;
    for (id, t, status) in [(&ids[0], "withdrawal.succeeded", "completed"), (&ids[1], "withdrawal.failed", "failed")] {
        let d = rx.of_type("all", t).remove(0);
        let w: Value = p.api_as(&key).get(&format!("{WITHDRAWALS}/{id}"), StatusCode::OK).await;
        assert_eq!(w["data"]["status"], status);
        assert_eq!(d.json["data"], w["data"], "{t}: data is the withdrawal");
    }
    assert_well_formed(&rx, "all");
}

async fn a_campaign_status_change_is_delivered_with_the_campaign(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    endpoint(&p, &rx, "all", None).await;
    let now = time::OffsetDateTime::now_utc();
    let fmt = |t: time::OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).expect("rfc3339");
    let body = json!({"title": "Status Watch Night", "description": "A campaign whose status moves.",
        "campaign_type": "ticketing", "start_date": fmt(now + time::Duration::days(1)),
        "end_date": fmt(now + time::Duration::days(30)), "status": "draft"});
    let v: Value = p.api().post(CAMPAIGNS, &body, StatusCode::CREATED).await;
    let id = v["data"]["id"].as_str().expect("id").to_string();
    let _: Value =
        p.api().patch(&format!("{CAMPAIGNS}/{id}"), &json!({"status": "pending_approval"}), StatusCode::OK).await;
    until(&p, "campaign.status.updated", || {
        rx.of_type("all", "campaign.status.updated").iter().any(|d| d.json["data"]["status"] == "pending_approval")
    })
    .await;
    let d = rx
        .of_type("all", "campaign.status.updated")
        .into_iter()
        .find(|d| d.json["data"]["status"] == "pending_approval")
        .expect("the event");
    let (s, shown) = p.signed(Method::GET, &format!("{CAMPAIGNS}/{id}"), None).await;
    assert_eq!(s, 200);
    assert_eq!(d.json["data"], shown["data"], "data is the campaign as GET /campaigns/:id shows it (D17.41)");
    // A change that keeps the status is no status event.
    let before = rx.of_type("all", "campaign.status.updated").len();
    let (s, _) =
        p.signed(Method::PATCH, &format!("{CAMPAIGNS}/{id}"), Some(json!({"title": "Status Watch Evening"}))).await;
    assert_eq!(s, 200);
    settle(&p).await;
    assert_eq!(rx.of_type("all", "campaign.status.updated").len(), before);
    assert_well_formed(&rx, "all");
}

// ---------------------------------------------------------------------------------------------
// Sequence and order
// ---------------------------------------------------------------------------------------------

async fn sequences_are_gap_free_from_one_and_each_endpoint_gets_them_in_order(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    endpoint(&p, &rx, "a", None).await;
    endpoint(&p, &rx, "b", None).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 5.0, 50).await;
    for i in 0..6 {
        let reference = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
        sandbox_settle(&p, &reference, if i == 2 { "fail" } else { "succeed" }, json!({})).await;
    }
    drain(&p).await;
    let events = feed(&p).await;
    assert!(events.len() >= 6, "{events:?}");
    let sequences: Vec<i64> = events.iter().map(|e| e["sequence"].as_i64().expect("sequence")).collect();
    assert_eq!(sequences, (1..=events.len() as i64).collect::<Vec<_>>(), "gap-free from 1");
    let ids: BTreeSet<&str> = events.iter().map(|e| e["id"].as_str().expect("id")).collect();
    assert_eq!(ids.len(), events.len(), "one id per event");
    until(&p, "every event at both endpoints", || {
        rx.delivered("a").len() >= events.len() && rx.delivered("b").len() >= events.len()
    })
    .await;
    for path in ["a", "b"] {
        let got: Vec<i64> = rx.delivered(path).iter().map(|d| d.json["sequence"].as_i64().expect("seq")).collect();
        assert_eq!(got, sequences, "{path} gets each event once, in sequence order");
        for (d, e) in rx.delivered(path).iter().zip(&events) {
            assert_eq!(d.id, e["id"].as_str().expect("id"));
            assert_eq!(d.body, expected_body(e));
        }
        assert_well_formed(&rx, path);
    }
    // Each account has its own sequence, from 1; the feed shows only the account's own events.
    let other = p.new_account("other").await;
    let v: Value = p
        .api_as(&other.private)
        .post(
            CAMPAIGNS,
            &json!({"title": "Other Account Night", "description": "Another account's campaign.",
                "campaign_type": "ticketing", "start_date": now_rfc3339(time::Duration::days(1)),
                "end_date": now_rfc3339(time::Duration::days(9)), "status": "draft"}),
            StatusCode::CREATED,
        )
        .await;
    let cid = v["data"]["id"].as_str().expect("id").to_string();
    let (s, v) = p
        .signed_as(
            &other.private,
            Method::PATCH,
            &format!("{CAMPAIGNS}/{cid}"),
            Some(json!({"status": "pending_approval"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let theirs = feed_of(&p, &other.private).await;
    assert!(!theirs.is_empty(), "the status change is an event of the other account");
    let seqs: Vec<i64> = theirs.iter().map(|e| e["sequence"].as_i64().expect("sequence")).collect();
    assert_eq!(seqs, (1..=theirs.len() as i64).collect::<Vec<_>>());
    assert!(theirs.iter().all(|e| !ids.contains(e["id"].as_str().unwrap_or_default())));
    settle(&p).await;
    assert_eq!(rx.delivered("a").len(), events.len(), "another account's events are not ours");
}

// ---------------------------------------------------------------------------------------------
// Retries, 410, giving up
// ---------------------------------------------------------------------------------------------

async fn a_500_is_retried_with_the_same_webhook_id_and_logged_as_attempts(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    let ep = endpoint(&p, &rx, "r", Some(json!(["ticket.purchase.confirmed"]))).await;
    rx.plan("r", |d| if d.nth <= 2 { 500 } else { 200 });
    paid_purchase(&p, "succeed").await;
    until(&p, "a delivery after two 500s", || !rx.delivered("r").is_empty()).await;
    let all = rx.all("r");
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all.iter().map(|d| d.answered).collect::<Vec<_>>(), vec![500, 500, 200]);
    assert!(all.iter().all(|d| d.id == all[0].id), "the same webhook-id on every retry");
    assert!(all.iter().all(|d| d.body == all[0].body), "the same body on every retry");
    assert_well_formed(&rx, "r");
    // The attempts, newest first.
    let v: Value = p.api().get(&format!("{ENDPOINTS}/{ep}/attempts"), StatusCode::OK).await;
    let items = v["data"].as_array().expect("attempts");
    assert_eq!(items.len(), 3, "{v}");
    let mut codes: Vec<i64> = items.iter().map(|a| a["statusCode"].as_i64().unwrap_or_default()).collect();
    codes.sort_unstable();
    assert_eq!(codes, vec![200, 500, 500], "{v}");
    for a in items {
        assert_eq!(a["eventId"], all[0].id.as_str());
        assert!(a["durationMs"].as_i64().is_some_and(|ms| ms >= 0), "{a}");
        assert!(a["at"].as_str().is_some(), "{a}");
        assert!(a.get("error").is_some(), "{a}");
    }
    // Newest first (retries here come within the same millisecond at times: ties in any order).
    let rfc = &time::format_description::well_known::Rfc3339;
    let ats: Vec<time::OffsetDateTime> = items
        .iter()
        .map(|a| time::OffsetDateTime::parse(a["at"].as_str().unwrap_or_default(), rfc).expect("at is RFC 3339"))
        .collect();
    assert!(ats.windows(2).all(|w| w[0] >= w[1]), "newest first: {v}");
    if ats[0] > ats[1] {
        assert_eq!(items[0]["statusCode"], 200, "{v}");
        assert_eq!(items[0]["error"], Value::Null, "{v}");
    }
    // Paginated like other lists.
    let v: Value = p.api().get(&format!("{ENDPOINTS}/{ep}/attempts?page=2&limit=2"), StatusCode::OK).await;
    assert_eq!(v["data"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["data"][0]["statusCode"], 500);
    settle(&p).await;
    assert_eq!(rx.all("r").len(), 3, "nothing after the 2xx");
}

async fn a_410_disables_the_endpoint_at_once_and_re_enabling_sends_the_event(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    let ep = endpoint(&p, &rx, "g", Some(json!(["ticket.purchase.confirmed", "payment.failed"]))).await;
    rx.plan("g", |_| 410);
    paid_purchase(&p, "succeed").await;
    until(&p, "the 410", || !rx.all("g").is_empty()).await;
    settle(&p).await;
    assert_eq!(rx.all("g").len(), 1, "a 410 is not retried");
    let shown = show_endpoint(&p, &ep).await;
    assert_eq!(shown["status"], "disabled", "{shown}");
    assert_eq!(shown["disabledReason"], "gone", "{shown}");
    // A disabled endpoint gets nothing.
    paid_purchase(&p, "fail").await;
    settle(&p).await;
    assert_eq!(rx.all("g").len(), 1);
    // Enabled again: the event the 410 answered is still pending and goes first.
    rx.plan("g", |_| 200);
    let v: Value = p.api().patch(&format!("{ENDPOINTS}/{ep}"), &json!({"status": "enabled"}), StatusCode::OK).await;
    assert_eq!(v["data"]["disabledReason"], Value::Null, "{v}");
    until(&p, "the pending event after re-enabling", || !rx.delivered("g").is_empty()).await;
    let first = rx.all("g")[0].clone();
    assert_eq!(rx.delivered("g")[0].id, first.id, "the event the 410 answered goes first");
    assert_well_formed(&rx, "g");
}

async fn an_event_whose_retries_are_used_up_fails_and_the_next_one_goes(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    let ep = endpoint(&p, &rx, "u", Some(json!(["ticket.purchase.confirmed", "payment.failed"]))).await;
    // The first event (payment.failed) is refused every time; every other one is taken.
    rx.plan("u", |d| if d.event_type() == "payment.failed" { 500 } else { 200 });
    paid_purchase(&p, "fail").await;
    paid_purchase(&p, "succeed").await;
    until(&p, "the second event", || !rx.of_type("u", "ticket.purchase.confirmed").is_empty()).await;
    let all = rx.all("u");
    let failed: Vec<&Delivery> = all.iter().filter(|d| d.event_type() == "payment.failed").collect();
    assert_eq!(failed.len(), 8, "the first attempt and the seven retries (D17.26)");
    assert!(failed.iter().all(|d| d.id == failed[0].id));
    let last_failed = all.iter().rposition(|d| d.event_type() == "payment.failed").expect("failed");
    let next = all.iter().position(|d| d.event_type() == "ticket.purchase.confirmed").expect("next");
    assert!(last_failed < next, "order holds while the first is being delivered; it goes once that one failed");
    let shown = show_endpoint(&p, &ep).await;
    assert_eq!(shown["status"], "enabled", "{shown}");
    // A replay sends it again, with its own id.
    let failed_id = failed[0].id.clone();
    rx.plan("u", |_| 200);
    let v: Value =
        p.api().post(&format!("{ENDPOINTS}/{ep}/replay"), &json!({"eventId": failed_id}), StatusCode::ACCEPTED).await;
    assert_eq!(v["data"]["queued"], 1);
    until(&p, "the replayed event", || rx.delivered("u").iter().any(|d| d.id == failed_id)).await;
    assert_well_formed(&rx, "u");
}

async fn five_days_of_failures_disable_the_endpoint(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    let ep = endpoint(&p, &rx, "f", Some(json!(["ticket.purchase.confirmed"]))).await;
    rx.plan("f", |_| 503);
    // The endpoint's run of failures began six days ago (as if it had failed since): the next
    // failure disables it.
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&p.database_url).await.expect("connect");
    let six_days_ago = time::OffsetDateTime::now_utc().unix_timestamp() * 1000 - 6 * 24 * 3_600_000;
    sqlx::query("UPDATE webhook_endpoints SET failing_since = $1 WHERE id = $2")
        .bind(six_days_ago)
        .bind(&ep)
        .execute(&mut conn)
        .await
        .expect("age the failures");
    paid_purchase(&p, "succeed").await;
    until(&p, "a failure", || !rx.all("f").is_empty()).await;
    settle(&p).await;
    let shown = show_endpoint(&p, &ep).await;
    assert_eq!(shown["status"], "disabled", "{shown}");
    assert_eq!(shown["disabledReason"], "failing", "{shown}");
    assert_eq!(rx.all("f").len(), 1, "a disabled endpoint is not called again");
}

// ---------------------------------------------------------------------------------------------
// Filters, rotation, test events, replay, the feed
// ---------------------------------------------------------------------------------------------

async fn an_endpoint_gets_only_the_types_it_takes(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    let only = endpoint(&p, &rx, "only", Some(json!(["payment.failed"]))).await;
    endpoint(&p, &rx, "every", None).await;
    assert_eq!(show_endpoint(&p, &only).await["eventTypes"], json!(["payment.failed"]));
    paid_purchase(&p, "succeed").await;
    paid_purchase(&p, "fail").await;
    until(&p, "both events at the unfiltered endpoint", || {
        !rx.of_type("every", "payment.failed").is_empty()
            && !rx.of_type("every", "ticket.purchase.confirmed").is_empty()
    })
    .await;
    settle(&p).await;
    let types: Vec<String> = rx.all("only").iter().map(|d| d.event_type().to_string()).collect();
    assert_eq!(types, vec!["payment.failed".to_string()]);
    assert_eq!(rx.all("only")[0].id, rx.of_type("every", "payment.failed")[0].id, "one event, one id everywhere");
    // Null takes every type again.
    let v: Value = p.api().patch(&format!("{ENDPOINTS}/{only}"), &json!({"eventTypes": null}), StatusCode::OK).await;
    assert_eq!(v["data"]["eventTypes"], Value::Null);
    paid_purchase(&p, "succeed").await;
    until(&p, "a purchase at the widened endpoint", || !rx.of_type("only", "ticket.purchase.confirmed").is_empty())
        .await;
    assert_well_formed(&rx, "only");
    assert_well_formed(&rx, "every");
}

async fn after_a_rotation_both_signatures_are_sent_and_each_verifies(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    let v: Value = p.api().post(ENDPOINTS, &json!({"url": rx.url("rot")}), StatusCode::CREATED).await;
    let ep = v["data"]["id"].as_str().expect("id").to_string();
    let old = v["data"]["secret"].as_str().expect("secret").to_string();
    let (s, v) = p.signed(Method::POST, &format!("{ENDPOINTS}/{ep}/rotate-secret"), Some(json!({}))).await;
    assert_eq!(s, 200, "{v}");
    let new = v["data"]["secret"].as_str().expect("secret").to_string();
    assert!(new.starts_with("whsec_") && new != old, "{v}");
    let shown = show_endpoint(&p, &ep).await;
    assert!(shown.get("secret").is_none(), "a read never shows the secret: {shown}");
    rx.secrets("rot", &[&new]);
    paid_purchase(&p, "succeed").await;
    until(&p, "a delivery after the rotation", || !rx.delivered("rot").is_empty()).await;
    let d = rx.delivered("rot").remove(0);
    let parts: Vec<&str> = d.signature.split(' ').collect();
    assert_eq!(parts.len(), 2, "two signatures during the grace: {}", d.signature);
    let ts: i64 = d.timestamp.parse().expect("seconds");
    let sign = |secret: &str| Webhook::new(secret).expect("secret").sign(&d.id, ts, d.body.as_bytes()).expect("sign");
    assert_eq!(parts[0], sign(&new), "the new secret's first");
    assert_eq!(parts[1], sign(&old), "then the previous one's");
    for secret in [&new, &old] {
        Webhook::new(secret)
            .expect("secret")
            .verify(d.body.as_bytes(), &d.headers)
            .expect("each secret verifies alone");
    }
    assert!(Webhook::new(&crate_secret()).expect("secret").verify(d.body.as_bytes(), &d.headers).is_err());
}

/// A secret no endpoint has.
fn crate_secret() -> String {
    use base64::Engine as _;
    format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode([7u8; 32]))
}

async fn a_test_event_is_sent_at_once_without_sequence_whatever_the_filter(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    let ep = endpoint(&p, &rx, "t", Some(json!(["payment.failed"]))).await;
    let v: Value = p
        .api()
        .post(&format!("{ENDPOINTS}/{ep}/test"), &json!({"type": "vote.payment.success"}), StatusCode::ACCEPTED)
        .await;
    let answer = v["data"].clone();
    assert_eq!(answer["statusCode"], 200, "{answer}");
    assert_eq!(answer["error"], Value::Null);
    assert!(answer["durationMs"].as_i64().is_some(), "{answer}");
    let event_id = answer["eventId"].as_str().expect("eventId").to_string();
    let got = rx.all("t");
    assert_eq!(got.len(), 1, "sent at once, before any worker runs");
    let d = &got[0];
    assert_eq!(d.id, event_id);
    assert_eq!(d.json["type"], "vote.payment.success");
    assert_eq!(d.json["sequence"], Value::Null);
    assert!(d.json["data"].is_object(), "a sample object: {}", d.body);
    assert!(d.json["timestamp"].as_str().is_some());
    assert_well_formed(&rx, "t");
    // A refused test event is reported, logged and not retried.
    rx.plan("t", |_| 500);
    let v: Value =
        p.api().post(&format!("{ENDPOINTS}/{ep}/test"), &json!({"type": "payment.failed"}), StatusCode::ACCEPTED).await;
    assert_eq!(v["data"]["statusCode"], 500);
    settle(&p).await;
    assert_eq!(rx.all("t").len(), 2, "a test event is not retried");
    assert!(feed(&p).await.iter().all(|e| e["id"] != event_id.as_str()), "not in the feed");
    let v: Value = p.api().get(&format!("{ENDPOINTS}/{ep}/attempts"), StatusCode::OK).await;
    let attempts = v["data"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{v}");
    assert_eq!(attempts[0]["statusCode"], 500);
    assert_eq!(attempts[1]["eventId"], event_id.as_str());
    // An unknown type names the field.
    let r = p
        .client()
        .send_raw(
            Method::POST,
            &format!("{ENDPOINTS}/{ep}/test"),
            serde_json::to_vec(&json!({"type": "payment.exploded"})).expect("json"),
            None,
        )
        .await
        .expect("send");
    let e = assert_error(&r, 400, "validation_failed");
    assert_eq!(detail_fields(&e), vec!["type"]);
}

async fn replay_by_id_and_by_range_resends_with_the_events_own_ids(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    let since = now_rfc3339(time::Duration::seconds(-5));
    let ep = endpoint(&p, &rx, "rp", Some(json!(["ticket.purchase.confirmed"]))).await;
    paid_purchase(&p, "succeed").await;
    paid_purchase(&p, "fail").await;
    paid_purchase(&p, "succeed").await;
    until(&p, "two purchases", || rx.delivered("rp").len() >= 2).await;
    settle(&p).await;
    let first = rx.delivered("rp");
    assert_eq!(first.len(), 2, "the filter keeps payment.failed out");
    // By id, whatever the filter.
    let events = feed(&p).await;
    let failed = events.iter().find(|e| e["type"] == "payment.failed").expect("payment.failed in the feed");
    let (s, v) =
        p.signed(Method::POST, &format!("{ENDPOINTS}/{ep}/replay"), Some(json!({"eventId": failed["id"]}))).await;
    assert_eq!(s, 202, "{v}");
    assert_eq!(v["data"]["queued"], 1);
    until(&p, "the replayed payment.failed", || !rx.of_type("rp", "payment.failed").is_empty()).await;
    let d = rx.of_type("rp", "payment.failed").remove(0);
    assert_eq!(d.id, failed["id"].as_str().expect("id"), "webhook-id is the event's id");
    assert_eq!(d.body, expected_body(failed));
    // By range: every event of the range the filter takes, delivered or not, in sequence order.
    let until_now = now_rfc3339(time::Duration::seconds(5));
    let (s, v) = p
        .signed(Method::POST, &format!("{ENDPOINTS}/{ep}/replay"), Some(json!({"since": since, "until": until_now})))
        .await;
    assert_eq!(s, 202, "{v}");
    assert_eq!(v["data"]["queued"], 2, "{v}");
    until(&p, "the range replay", || rx.delivered("rp").len() >= 5).await;
    settle(&p).await;
    let all = rx.delivered("rp");
    assert_eq!(all.len(), 5);
    let replayed: Vec<&str> = all[3..].iter().map(|d| d.id.as_str()).collect();
    let originals: Vec<&str> = first.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(replayed, originals, "the same ids, in sequence order");
    assert_well_formed(&rx, "rp");
    // Neither form, both forms, a backwards or too-long range, another account's event.
    let replay = |body: Value| {
        let p = &p;
        let ep = &ep;
        async move {
            p.client()
                .send_raw(
                    Method::POST,
                    &format!("{ENDPOINTS}/{ep}/replay"),
                    serde_json::to_vec(&body).expect("json"),
                    None,
                )
                .await
                .expect("send")
        }
    };
    for bad in [
        json!({}),
        json!({"eventId": failed["id"], "since": since, "until": until_now}),
        json!({"since": until_now, "until": since}),
        json!({"since": now_rfc3339(time::Duration::days(-40)), "until": until_now}),
        json!({"since": "yesterday", "until": until_now}),
    ] {
        let r = replay(bad.clone()).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.json());
    }
    let other = p.new_account("other").await;
    let v: Value = p
        .api_as(&other.private)
        .post(
            CAMPAIGNS,
            &json!({"title": "Other Replay Night", "description": "Another account's campaign.",
                "campaign_type": "ticketing", "start_date": now_rfc3339(time::Duration::days(1)),
                "end_date": now_rfc3339(time::Duration::days(9)), "status": "draft"}),
            StatusCode::CREATED,
        )
        .await;
    let cid = v["data"]["id"].as_str().expect("id").to_string();
    p.signed_as(
        &other.private,
        Method::PATCH,
        &format!("{CAMPAIGNS}/{cid}"),
        Some(json!({"status": "pending_approval"})),
    )
    .await;
    if let Some(theirs) = feed_of(&p, &other.private).await.first() {
        let r = replay(json!({"eventId": theirs["id"]})).await;
        assert_error(&r, 404, "not_found");
    }
    let r = replay(json!({"eventId": uuid::Uuid::now_v7().to_string()})).await;
    assert_eq!(r.status, 404, "{}", r.json());
}

async fn the_feed_equals_what_was_delivered_and_pages_by_sequence(b: Backend) {
    let (p, rx) = spawn_hooks(b).await;
    // Events are recorded whether or not there is an endpoint (D17.41).
    paid_purchase(&p, "succeed").await;
    drain(&p).await;
    let before = feed(&p).await;
    assert!(!before.is_empty(), "recorded without an endpoint");
    assert_eq!(before[0]["sequence"], 1);
    endpoint(&p, &rx, "feed", None).await;
    paid_purchase(&p, "succeed").await;
    paid_purchase(&p, "fail").await;
    drain(&p).await;
    let events = feed(&p).await;
    let new: Vec<&Value> = events.iter().skip(before.len()).collect();
    assert!(new.len() >= 2);
    until(&p, "the new events", || rx.delivered("feed").len() >= new.len()).await;
    let delivered = rx.delivered("feed");
    assert_eq!(delivered.len(), new.len(), "only the events after the endpoint was made");
    for (d, e) in delivered.iter().zip(&new) {
        let keys: BTreeSet<&str> = e.as_object().expect("item").keys().map(String::as_str).collect();
        assert_eq!(keys, BTreeSet::from(["id", "type", "sequence", "timestamp", "data"]), "{e}");
        assert_eq!(d.id, e["id"].as_str().expect("id"));
        assert_eq!(d.body, expected_body(e), "the feed's item is what was sent");
    }
    // after and limit.
    let v: Value = p.api().get(&format!("{EVENTS}?after=1&limit=1"), StatusCode::OK).await;
    assert_eq!(v["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["data"][0]["sequence"], 2);
    let v: Value = p.api().get(EVENTS, StatusCode::OK).await;
    assert_eq!(v["data"].as_array().map(Vec::len), Some(events.len()), "after 0, limit 50 by default");
    let (s, v) = p.signed(Method::GET, &format!("{EVENTS}?after={}", events.len()), None).await;
    assert_eq!(s, 200);
    assert_eq!(v["data"], json!([]));
    for (query, field) in [("limit=0", "limit"), ("limit=101", "limit"), ("after=-1", "after"), ("after=x", "after")] {
        let (s, v) = p.signed(Method::GET, &format!("{EVENTS}?{query}"), None).await;
        assert_eq!(s, 400, "{query}: {v}");
        assert_eq!(detail_fields(&v), vec![field.to_string()], "{query}: {v}");
    }
    // settings:read reads the feed; without it, no.
    let reader = p.create_key(&p.account.slug, "private", None, "settings:read", &[]).await;
    let (s, _) = p.signed_as(&reader, Method::GET, EVENTS, None).await;
    assert_eq!(s, 200);
    let none = p.create_key(&p.account.slug, "private", None, "campaigns:read", &[]).await;
    let (s, v) = p.signed_as(&none, Method::GET, EVENTS, None).await;
    assert_eq!(s, 403, "{v}");
}

on_both!(
    a_paid_ticket_purchase_delivers_the_payment_signed_with_the_feeds_id_and_sequence,
    vote_and_donation_payments_are_delivered,
    a_failed_payment_is_delivered,
    a_check_in_is_delivered_with_the_ticket,
    withdrawals_deliver_succeeded_and_failed,
    a_campaign_status_change_is_delivered_with_the_campaign,
    sequences_are_gap_free_from_one_and_each_endpoint_gets_them_in_order,
    a_500_is_retried_with_the_same_webhook_id_and_logged_as_attempts,
    a_410_disables_the_endpoint_at_once_and_re_enabling_sends_the_event,
    an_event_whose_retries_are_used_up_fails_and_the_next_one_goes,
    five_days_of_failures_disable_the_endpoint,
    an_endpoint_gets_only_the_types_it_takes,
    after_a_rotation_both_signatures_are_sent_and_each_verifies,
    a_test_event_is_sent_at_once_without_sequence_whatever_the_filter,
    replay_by_id_and_by_range_resends_with_the_events_own_ids,
    the_feed_equals_what_was_delivered_and_pages_by_sequence,
);

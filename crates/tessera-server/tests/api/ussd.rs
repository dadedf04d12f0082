//! Integration tests: votes by dial (D17.19–23, D17.40). Tessera's route
//! `POST /api/white-label/ussd/:gateway/:account?token=…` is called as each gateway calls it
//! (Africa's Talking's form, Hubtel's, Nalo's and Arkesel's JSON, their own field names), and
//! through the sandbox's handset simulator (`/sandbox/ussd/dial`, `/reply`). A confirmed vote is
//! a pending vote transaction (channel `ussd`) whose mobile-money charge the worker makes after
//! the session ended; the sandbox holds it until `/succeed` or `/fail`, and only the verified
//! callback credits the votes, once. Screens are matched by the contract's key phrases only, and
//! every screen seen is at most 160 characters.
use std::ops::Deref;
use std::time::Duration;

use serde_json::{json, Value};
use tessera_client::{Client, Method, RawResponse};
use tessera_server::app::Application;
use tessera_server::config::{Config, StartRefused};
use tessera_server::state::AppState;

use crate::support::callbacks::{post_callback, signed_event};
use crate::support::catalogue::running_campaign;
use crate::support::client::{assert_error, detail_fields, raw, StatusCode};
use crate::support::ledger::assert_ledger_clean;
use crate::support::payments::{payment, platform_secret, sandbox_settle, spawn_paid_with, PayApp, PAYMENTS};
use crate::support::server::{drain, Backend, TestApp};

const TOKEN: &str = "ussd-callback-7Qm2xZ9p";
const SERVICE: &str = "*920*44#";
const MAX: i64 = 50;
const SCREEN_MAX: usize = 160;
const USSD_SETTINGS: &str = "/api/white-label/v1/settings/ussd";

// ---------------------------------------------------------------------------------------------
// The gateways' wires

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gw {
    AfricasTalking,
    Hubtel,
    Nalo,
    Arkesel,
}

impl Gw {
    const ALL: [Gw; 4] = [Gw::AfricasTalking, Gw::Hubtel, Gw::Nalo, Gw::Arkesel];

    fn name(self) -> &'static str {
        match self {
            Gw::AfricasTalking => "africastalking",
            Gw::Hubtel => "hubtel",
            Gw::Nalo => "nalo",
            Gw::Arkesel => "arkesel",
        }
    }

    /// A network (`mtn`, `vod`, `atl`) in the gateway's own vocabulary.
    fn network(self, net: &str) -> &'static str {
        match (self, net) {
            (Gw::AfricasTalking, "mtn") => "62001",
            (Gw::AfricasTalking, "vod") => "62002",
            (Gw::AfricasTalking, _) => "62003",
            (Gw::Hubtel, "mtn") => "mtn",
            (Gw::Hubtel, "vod") => "vodafone",
            (Gw::Hubtel, _) => "airteltigo",
            (_, "mtn") => "MTN",
            (_, "vod") => "VODAFONE",
            _ => "AIRTELTIGO",
        }
    }

    /// A number of each gateway's own, so that sessions and pending votes of one never meet
    /// another's: `(msisdn, network)`.
    fn phone(self) -> (&'static str, &'static str) {
        match self {
            Gw::AfricasTalking => ("233241234567", "mtn"),
            Gw::Hubtel => ("233201234567", "vod"),
            Gw::Nalo => ("233271234567", "atl"),
            Gw::Arkesel => ("233551234567", "mtn"),
        }
    }

    /// A second number per gateway (same network as [`Gw::phone`]).
    fn other_phone(self) -> (&'static str, &'static str) {
        match self {
            Gw::AfricasTalking => ("233249876543", "mtn"),
            Gw::Hubtel => ("233209876543", "vod"),
            Gw::Nalo => ("233279876543", "atl"),
            Gw::Arkesel => ("233559876543", "mtn"),
        }
    }
}

/// `233241234567` → `0241234567`, as screens and Paystack show it.
fn local(msisdn: &str) -> String {
    format!("0{}", &msisdn[3..])
}

/// The inputs after the service code in a whole dial string: `*920*44*AMA*5#` → `[AMA, 5]`.
fn dial_through(dial: &str) -> Vec<String> {
    let code = SERVICE.trim_end_matches('#');
    let rest = dial.trim_end_matches('#').strip_prefix(code).unwrap_or("");
    rest.split('*').filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn new_session_id(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::now_v7().simple())
}

/// A request body as a gateway sends it.
#[derive(Clone)]
enum Wire {
    Form(Vec<(&'static str, String)>),
    Json(Value),
    Raw(&'static str, Vec<u8>),
}

/// Posts `wire` to Tessera's USSD route of `gateway` for account `slug`, with `token` or none.
async fn post_ussd(
    http: &reqwest::Client,
    base: &str,
    gateway: &str,
    slug: &str,
    token: Option<&str>,
    wire: Wire,
) -> RawResponse {
    let mut url = format!("{base}/api/white-label/ussd/{gateway}/{slug}");
    if let Some(t) = token {
        url.push_str(&format!("?token={t}"));
    }
    let (content_type, body) = match wire {
        Wire::Form(pairs) => {
            ("application/x-www-form-urlencoded", serde_urlencoded::to_string(&pairs).expect("form").into_bytes())
        }
        Wire::Json(v) => ("application/json", serde_json::to_vec(&v).expect("json")),
        Wire::Raw(ct, bytes) => (ct, bytes),
    };
    let r = http.post(url).header("content-type", content_type).body(body).send().await.expect("send");
    raw(r).await
}

/// What the caller read: the screen (without `CON `/`END `) and whether the session ended.
#[derive(Debug, Clone)]
struct Screen {
    text: String,
    ended: bool,
}

impl Screen {
    /// Every screen anyone sees goes through here: at most 160 characters, never empty.
    fn seen(text: &str, ended: bool, via: &str) -> Screen {
        let text = text.strip_prefix("CON ").or_else(|| text.strip_prefix("END ")).unwrap_or(text).to_string();
        let n = text.chars().count();
        assert!(n <= SCREEN_MAX, "{via}: a screen of {n} characters (at most {SCREEN_MAX}): {text:?}");
        assert!(!text.trim().is_empty(), "{via}: an empty screen");
        Screen { text, ended }
    }

    /// The session goes on and the screen shows every phrase.
    #[track_caller]
    fn asks(&self, phrases: &[&str]) -> &Screen {
        assert!(!self.ended, "the session ended, expected it to go on: {:?}", self.text);
        self.shows(phrases)
    }

    /// The session ended and its last screen shows every phrase.
    #[track_caller]
    fn ends(&self, phrases: &[&str]) -> &Screen {
        assert!(self.ended, "the session goes on, expected it to end: {:?}", self.text);
        self.shows(phrases)
    }

    #[track_caller]
    fn shows(&self, phrases: &[&str]) -> &Screen {
        for p in phrases {
            assert!(self.text.contains(p), "{p:?} not on the screen {:?}", self.text);
        }
        self
    }
}

/// A handset behind a gateway, calling Tessera's route directly as the gateway would.
struct Handset {
    http: reqwest::Client,
    base: String,
    slug: String,
    token: String,
    gw: Gw,
    msisdn: String,
    network: String,
    user: String,
    session: String,
    sequence: u32,
    inputs: Vec<String>,
}

impl Handset {
    fn new(app: &TestApp, gw: Gw, (msisdn, net): (&str, &str)) -> Handset {
        Handset {
            http: app.http.clone(),
            base: app.base_url.clone(),
            slug: app.account.slug.clone(),
            token: TOKEN.to_string(),
            gw,
            msisdn: msisdn.to_string(),
            network: gw.network(net).to_string(),
            user: "tessera-tests".to_string(),
            session: String::new(),
            sequence: 0,
            inputs: Vec::new(),
        }
    }

    /// The phone number as this gateway writes it (Africa's Talking with `+`).
    fn wire_msisdn(&self) -> String {
        match self.gw {
            Gw::AfricasTalking => format!("+{}", self.msisdn),
            _ => self.msisdn.clone(),
        }
    }

    /// The first request of a new session for the whole dial string `dial`.
    fn first(&mut self, dial: &str) -> Wire {
        self.session = new_session_id("s");
        self.sequence = 1;
        self.inputs = dial_through(dial);
        self.wire(true, dial)
    }

    /// The next request of the session, carrying `input`.
    fn next(&mut self, input: &str) -> Wire {
        self.sequence += 1;
        self.inputs.push(input.to_string());
        self.wire(false, input)
    }

    /// A request of the session in this gateway's wire: the first (`data` is the whole dial
    /// string) or a later one (`data` is the input).
    fn wire(&self, first: bool, data: &str) -> Wire {
        match self.gw {
            Gw::AfricasTalking => Wire::Form(vec![
                ("sessionId", self.session.clone()),
                ("serviceCode", SERVICE.to_string()),
                ("phoneNumber", self.wire_msisdn()),
                ("networkCode", self.network.clone()),
                // Every input so far, joined by `*` (the first: the dial-through inputs, or empty).
                ("text", self.inputs.join("*")),
            ]),
            Gw::Hubtel => Wire::Json(json!({
                "Type": if first { "Initiation" } else { "Response" }, "Message": data, "SessionId": self.session,
                "Mobile": self.wire_msisdn(), "Operator": self.network, "Sequence": self.sequence,
            })),
            Gw::Nalo => Wire::Json(json!({
                "USERID": self.user, "MSISDN": self.wire_msisdn(), "USERDATA": data, "MSGTYPE": first,
                "NETWORK": self.network,
            })),
            Gw::Arkesel => Wire::Json(json!({
                "sessionID": self.session, "userID": self.user, "newSession": first, "msisdn": self.wire_msisdn(),
                "userData": data, "network": self.network,
            })),
        }
    }

    /// Dials `dial` (the whole string the handset dialled) as a new session.
    async fn dial(&mut self, dial: &str) -> Screen {
        let wire = self.first(dial);
        self.exchange(wire).await
    }

    /// Types `input` on the open session.
    async fn send(&mut self, input: &str) -> Screen {
        let wire = self.next(input);
        self.exchange(wire).await
    }

    async fn exchange(&self, wire: Wire) -> Screen {
        let r = post_ussd(&self.http, &self.base, self.gw.name(), &self.slug, Some(&self.token), wire).await;
        self.read(&r)
    }

    /// Reads the gateway's reply wire.
    fn read(&self, r: &RawResponse) -> Screen {
        let via = self.gw.name();
        let text = String::from_utf8_lossy(&r.body).to_string();
        assert_eq!(r.status, 200, "{via}: {text}");
        let content_type = r.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
        match self.gw {
            Gw::AfricasTalking => {
                assert!(content_type.starts_with("text/plain"), "{via}: content-type {content_type}");
                let ended = if text.starts_with("CON ") {
                    false
                } else if text.starts_with("END ") {
                    true
                } else {
                    panic!("{via}: neither CON nor END: {text:?}")
                };
                Screen::seen(&text, ended, via)
            }
            Gw::Hubtel => {
                let v = r.json();
                let ended = match v["Type"].as_str() {
                    Some("Response") => false,
                    Some("Release") => true,
                    _ => panic!("{via}: Type is Response or Release: {v}"),
                };
                Screen::seen(v["Message"].as_str().expect("Message"), ended, via)
            }
            Gw::Nalo => {
                let v = r.json();
                assert_eq!(v["USERID"], self.user.as_str(), "{via}: USERID echoed: {v}");
                assert_eq!(v["MSISDN"], self.wire_msisdn().as_str(), "{via}: MSISDN echoed: {v}");
                let goes_on = v["MSGTYPE"].as_bool().unwrap_or_else(|| panic!("{via}: MSGTYPE is a bool: {v}"));
                Screen::seen(v["MSG"].as_str().expect("MSG"), !goes_on, via)
            }
            Gw::Arkesel => {
                let v = r.json();
                assert_eq!(v["sessionID"], self.session.as_str(), "{via}: sessionID echoed: {v}");
                assert_eq!(v["userID"], self.user.as_str(), "{via}: userID echoed: {v}");
                assert_eq!(v["msisdn"], self.wire_msisdn().as_str(), "{via}: msisdn echoed: {v}");
                let goes_on =
                    v["continueSession"].as_bool().unwrap_or_else(|| panic!("{via}: continueSession is a bool: {v}"));
                Screen::seen(v["message"].as_str().expect("message"), !goes_on, via)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The sandbox: the handset simulator and its charges

/// The sandbox's control API, as a script would call it.
struct Sim {
    http: reqwest::Client,
    base: String,
    slug: String,
}

impl Sim {
    fn of(p: &PayApp) -> Sim {
        Sim { http: p.http.clone(), base: p.sandbox.base_url().to_string(), slug: p.account.slug.clone() }
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self.http.post(format!("{}{path}", self.base)).json(&body).send().await.expect("sandbox");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.http.get(format!("{}{path}", self.base)).send().await.expect("sandbox");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    fn screen(v: &Value, via: &str) -> Screen {
        let ended = v["ended"].as_bool().unwrap_or_else(|| panic!("{via}: ended is a bool: {v}"));
        Screen::seen(v["screen"].as_str().unwrap_or_else(|| panic!("{via}: screen: {v}")), ended, via)
    }

    fn session_id(v: &Value) -> String {
        match &v["sessionId"] {
            Value::String(s) => s.clone(),
            Value::Null => panic!("no sessionId: {v}"),
            other => other.to_string(),
        }
    }

    async fn dial_raw(&self, gw: Gw, msisdn: &str, dial: &str, network: Option<&str>, token: &str) -> (u16, Value) {
        let mut body = json!({"gateway": gw.name(), "account": self.slug, "token": token, "msisdn": msisdn,
            "serviceCode": SERVICE, "dial": dial});
        if let Some(n) = network {
            body["network"] = json!(n);
        }
        self.post("/sandbox/ussd/dial", body).await
    }

    /// Dials through the simulator; returns the session id and the first screen.
    async fn dial(&self, gw: Gw, msisdn: &str, dial: &str, network: Option<&str>) -> (String, Screen) {
        let (s, v) = self.dial_raw(gw, msisdn, dial, network, TOKEN).await;
        assert_eq!(s, 200, "sandbox dial via {}: {v}", gw.name());
        (Self::session_id(&v), Self::screen(&v, &format!("sandbox {}", gw.name())))
    }

    async fn reply_raw(&self, session: &str, input: &str) -> (u16, Value) {
        self.post(&format!("/sandbox/ussd/sessions/{session}/reply"), json!({"input": input})).await
    }

    async fn reply(&self, session: &str, input: &str) -> Screen {
        let (s, v) = self.reply_raw(session, input).await;
        assert_eq!(s, 200, "sandbox reply {input:?}: {v}");
        assert_eq!(Self::session_id(&v), session, "{v}");
        Self::screen(&v, "sandbox reply")
    }

    /// `GET /sandbox/charges/:reference`, or `None` when the sandbox has no such charge.
    async fn charge(&self, reference: &str) -> Option<Value> {
        let (s, v) = self.get(&format!("/sandbox/charges/{reference}")).await;
        match s {
            200 => Some(v),
            404 => None,
            other => panic!("GET /sandbox/charges/{reference}: {other} {v}"),
        }
    }

    /// The charges whose phone ends with the number's local digits, newest first.
    async fn charges_of(&self, msisdn: &str) -> Vec<Value> {
        let (s, v) = self.get(&format!("/sandbox/charges?phone={}", &msisdn[3..])).await;
        assert_eq!(s, 200, "{v}");
        v.as_array().unwrap_or_else(|| panic!("an array: {v}")).clone()
    }

    async fn faults(&self, body: Value) {
        let (s, v) = self.post("/sandbox/faults", body).await;
        assert_eq!(s, 200, "{v}");
    }
}

// ---------------------------------------------------------------------------------------------
// The account: USSD settings, a running voting campaign and its nominees

fn ussd_on() -> Value {
    json!({"enabled": true, "callbackToken": TOKEN, "serviceCode": SERVICE, "maxVotes": MAX})
}

/// `PATCH /settings/ussd {config}` (signed settings:write); returns the category as answered.
async fn set_ussd(app: &TestApp, config: Value) -> Value {
    let b: Value = app.api().patch(USSD_SETTINGS, &json!({"config": config}), StatusCode::OK).await;
    b["data"]["config"].clone()
}

async fn voting_module(app: &TestApp, on: Value) {
    let body = json!({"config": {"modules": {"voting": on}}});
    let _: Value = app.api().patch("/api/white-label/v1/settings/operations", &body, StatusCode::OK).await;
}

async fn nominee(app: &TestApp, campaign: &str, name: &str, code: &str, status: &str) -> String {
    let body = json!({"campaignId": campaign, "name": name, "code": code, "status": status});
    let b: Value = app.api().post("/api/white-label/v1/participants", &body, StatusCode::CREATED).await;
    assert_eq!(b["data"]["code"], code, "{b}");
    b["data"]["id"].as_str().expect("id").to_string()
}

/// A server and sandbox whose account takes USSD votes: a running voting campaign (2 GHS a vote)
/// with `AMA` (Ama Mensah, active) and `ESI` (Esi Owusu, eliminated).
struct Rig {
    p: PayApp,
    campaign: String,
    ama: String,
}

impl Deref for Rig {
    type Target = PayApp;
    fn deref(&self) -> &PayApp {
        &self.p
    }
}

async fn rig(b: Backend) -> Rig {
    rig_with(b, |_| {}).await
}

async fn rig_with(b: Backend, tweak: impl FnOnce(&mut Config)) -> Rig {
    let p = spawn_paid_with(b, tweak).await;
    let config = set_ussd(&p, ussd_on()).await;
    assert_eq!(config["enabled"], true, "{config}");
    let campaign = running_campaign(&p, &p.account.private, "voting").await;
    let ama = nominee(&p, &campaign, "Ama Mensah", "AMA", "active").await;
    nominee(&p, &campaign, "Esi Owusu", "ESI", "eliminated").await;
    Rig { p, campaign, ama }
}

// ---------------------------------------------------------------------------------------------
// Reading money back

/// The account's vote payments of `msisdn` (by its `<msisdn>@ussd.invalid` e-mail), newest first.
async fn ussd_votes_with(client: &Client, msisdn: &str) -> Vec<Value> {
    let r = client.send_raw(Method::GET, &format!("{PAYMENTS}?type=vote"), Vec::new(), None).await.expect("send");
    let body = r.json();
    assert_eq!(r.status, 200, "{body}");
    let email = format!("{msisdn}@ussd.invalid");
    body["data"].as_array().expect("data").iter().filter(|t| t["email"] == email.as_str()).cloned().collect()
}

async fn ussd_votes(app: &TestApp, msisdn: &str) -> Vec<Value> {
    ussd_votes_with(&app.client(), msisdn).await
}

/// The one USSD vote of `msisdn`: pending, channel `ussd`, `votes` × 2 GHS for Ama.
async fn pending_vote_with(client: &Client, rig_campaign: &str, ama: &str, msisdn: &str, votes: i64) -> String {
    let txs = ussd_votes_with(client, msisdn).await;
    assert_eq!(txs.len(), 1, "one vote transaction for {msisdn}: {txs:?}");
    let t = &txs[0];
    assert_eq!(t["status"], "pending", "{t}");
    assert_eq!(t["transactionType"], "vote", "{t}");
    assert_eq!(t["channel"], "ussd", "{t}");
    assert_eq!(t["campaignId"], rig_campaign, "{t}");
    assert_eq!(t["amount"], json!(2 * votes), "{t}");
    assert_eq!(t["quantity"], votes, "{t}");
    assert_eq!(t["votes"]["participantId"], ama, "{t}");
    assert_eq!(t["votes"]["count"], 0, "nothing is credited before the payment: {t}");
    t["reference"].as_str().expect("reference").to_string()
}

async fn pending_vote(r: &Rig, msisdn: &str, votes: i64) -> String {
    pending_vote_with(&r.client(), &r.campaign, &r.ama, msisdn, votes).await
}

/// The nominee's votes on the signed leaderboard.
async fn board_votes_with(client: &Client, campaign: &str, participant: &str) -> i64 {
    let path = format!("/api/white-label/v1/campaigns/{campaign}/leaderboard");
    let r = client.send_raw(Method::GET, &path, Vec::new(), None).await.expect("send");
    let body = r.json();
    assert_eq!(r.status, 200, "{body}");
    let line = body["data"]["participants"]
        .as_array()
        .expect("participants")
        .iter()
        .find(|l| l["id"] == participant)
        .unwrap_or_else(|| panic!("{participant} on the leaderboard: {body}"))
        .clone();
    line["votes"].as_i64().expect("votes")
}

async fn board_votes(r: &Rig) -> i64 {
    board_votes_with(&r.client(), &r.campaign, &r.ama).await
}

/// The phone as each provider's wire carries it: Paystack's local form, the gateway's `+233…`.
fn wire_phone(provider: &str, msisdn: &str) -> String {
    match provider {
        "provider_a" => local(msisdn),
        // Hubtel's CustomerMsisdn is 233… (D18.3).
        "provider_c" => msisdn.to_string(),
        _ => format!("+{msisdn}"),
    }
}

/// The sandbox's one mobile-money charge of `reference`: its wire, amount and prompt count.
#[track_caller]
fn assert_momo_charge(charge: &Value, provider: &str, msisdn: &str, network: &str, pesewas: i64, prompts: i64) {
    assert_eq!(charge["channel"], "mobile_money", "{charge}");
    assert_eq!(charge["provider"], provider, "{charge}");
    assert_eq!(charge["phone"], wire_phone(provider, msisdn).as_str(), "{charge}");
    assert_eq!(charge["network"], network, "{charge}");
    assert_eq!(charge["amount"], pesewas, "{charge}");
    assert_eq!(charge["currency"], "GHS", "{charge}");
    // Hubtel's receive-money call carries no e-mail.
    let email = if provider == "provider_c" { String::new() } else { format!("{msisdn}@ussd.invalid") };
    assert_eq!(charge["email"], email.as_str(), "{charge}");
    assert_eq!(charge["status"], "pending", "{charge}");
    assert_eq!(charge["prompts"], prompts, "{charge}");
}

/// Posts again the signed `charge.success` the sandbox sent for `charge` (its record, settled):
/// the same fields, so the same bytes.
async fn repost_success(app: &TestApp, provider: &str, charge: &Value) -> RawResponse {
    let event = match provider {
        // Hubtel's receive-money callback, as the sandbox sent it (the same event key).
        "provider_c" => json!({"ResponseCode": "0000", "Message": "success", "Data": {
            "ClientReference": charge["wireReference"], "TransactionId": charge["id"],
            "Amount": charge["amount"].as_i64().map(|p| p as f64 / 100.0),
        }}),
        _ => json!({"event": "charge.success", "data": {
            "id": charge["id"], "reference": charge["reference"], "status": "success", "amount": charge["amount"],
            "currency": charge["currency"], "fees": charge["fees"], "paid_at": charge["paidAt"],
            "channel": charge["channel"], "customer": {"email": charge["email"]},
        }}),
    };
    let (body, sig) = signed_event(provider, &platform_secret(provider), event);
    post_callback(app, provider, body, Some(&sig)).await
}

// ---------------------------------------------------------------------------------------------
// 1. The whole flow on each gateway

/// Where [`whole_flow`]'s provider is named.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Named {
    /// The ussd settings name it.
    Ussd,
    /// None there: the payments defaultProvider.
    Default,
    /// Neither: the routing for channel ussd (provider_a in these tests).
    Routing,
}

/// How the duplicate callback of [`whole_flow`] arrives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Duplicate {
    /// The test posts the signed body again after the first was reconciled.
    Reposted,
    /// The sandbox's fault sends the same signed body twice.
    Fault,
}

/// code → count → confirm → END; one pending vote transaction (channel ussd) and no charge until
/// the worker runs; then ONE mobile-money charge through `provider`; paid: the nominee has the
/// votes, once, however often the callback comes.
async fn whole_flow(b: Backend, gw: Gw, provider: &str, named: Named, duplicate: Duplicate) {
    let r = rig(b).await;
    match named {
        Named::Ussd => {
            set_ussd(&r, json!({"provider": provider})).await;
        }
        Named::Default => {
            let body = json!({"config": {"defaultProvider": provider}});
            let _: Value = r.api().patch("/api/white-label/v1/settings/payments", &body, StatusCode::OK).await;
        }
        Named::Routing => {}
    }
    let sim = Sim::of(&r);
    let (msisdn, net) = gw.phone();
    let mut h = Handset::new(&r, gw, (msisdn, net));
    h.dial(SERVICE).await.asks(&["nominee code"]);
    h.send("AMA").await.asks(&["Ama Mensah", "GHS 2.00", "How many votes"]);
    h.send("4").await.asks(&["GHS 8.00", "1. Confirm", "2. Cancel"]);
    h.send("1").await.ends(&["GHS 8.00", &local(msisdn)]);

    let reference = pending_vote(&r, msisdn, 4).await;
    assert!(sim.charge(&reference).await.is_none(), "no charge is made while the session is open");
    drain(&r).await;
    let charge = sim.charge(&reference).await.expect("the worker made the mobile-money charge");
    assert_momo_charge(&charge, provider, msisdn, net, 800, 1);
    let listed = sim.charges_of(msisdn).await;
    assert_eq!(listed.len(), 1, "ONE charge for the phone: {listed:?}");
    assert_eq!(listed[0]["reference"], reference.as_str());
    assert_eq!(payment(&r, &reference).await["status"], "pending", "the charge alone credits nothing");
    assert_eq!(board_votes(&r).await, 0);

    if duplicate == Duplicate::Fault {
        sim.faults(json!({"webhookDuplicatePercent": 100})).await;
    }
    sandbox_settle(&r, &reference, "succeed", json!({})).await;
    drain(&r).await;
    let paid = payment(&r, &reference).await;
    assert_eq!(paid["status"], "success", "{paid}");
    assert_eq!(paid["channel"], "ussd", "{paid}");
    assert_eq!(paid["votes"], json!({"participantId": r.ama, "count": 4}), "{paid}");
    assert_eq!(board_votes(&r).await, 4);

    match duplicate {
        Duplicate::Reposted => {
            let settled = sim.charge(&reference).await.expect("charge");
            let again = repost_success(&r, provider, &settled).await;
            assert!((200..300).contains(&again.status), "the same callback again: {}", again.json());
        }
        Duplicate::Fault => {
            let (_, hooks) = sim.get("/sandbox/webhooks").await;
            let sent =
                hooks.as_array().map_or(0, |h| h.iter().filter(|w| w["reference"] == reference.as_str()).count());
            assert!(sent >= 2, "the sandbox sent the callback twice: {hooks}");
        }
    }
    drain(&r).await;
    assert_eq!(payment(&r, &reference).await["votes"]["count"], 4);
    assert_eq!(board_votes(&r).await, 4, "credited once");
    assert_eq!(sim.charges_of(msisdn).await.len(), 1, "still one charge");
    assert_ledger_clean(&r);
}

async fn a_vote_through_africastalking_is_charged_by_mobile_money_and_credited_once(b: Backend) {
    whole_flow(b, Gw::AfricasTalking, "provider_a", Named::Routing, Duplicate::Reposted).await;
}

async fn a_vote_through_hubtel_is_charged_through_the_ussd_provider_and_credited_once(b: Backend) {
    // provider_b (Flutterwave) cannot push a prompt (D18.5): the ussd provider is Hubtel's.
    whole_flow(b, Gw::Hubtel, "provider_c", Named::Ussd, Duplicate::Reposted).await;
}

async fn a_vote_through_nalo_is_credited_once_when_the_callback_comes_twice(b: Backend) {
    whole_flow(b, Gw::Nalo, "provider_a", Named::Routing, Duplicate::Fault).await;
}

async fn a_vote_through_arkesel_is_charged_through_the_default_provider_and_credited_once(b: Backend) {
    whole_flow(b, Gw::Arkesel, "provider_c", Named::Default, Duplicate::Reposted).await;
}

// ---------------------------------------------------------------------------------------------
// 2. Dial-through and the sandbox's handset

async fn inputs_given_with_the_dial_jump_to_the_confirm_screen_on_every_gateway(b: Backend) {
    let r = rig(b).await;
    for gw in Gw::ALL {
        let (msisdn, net) = gw.phone();
        let mut h = Handset::new(&r, gw, (msisdn, net));
        // Africa's Talking's first text is `AMA*5`; the others carry the whole dial string.
        h.dial("*920*44*AMA*5#").await.asks(&["GHS 10.00", "1. Confirm", "2. Cancel"]);
        h.send("2").await.ends(&["Cancelled"]);
        assert!(ussd_votes(&r, msisdn).await.is_empty(), "{}: cancelled, nothing recorded", gw.name());
    }
    // A network code the gateway map does not know: the number's prefix (020: Vodafone) decides.
    let msisdn = "233201112233";
    let mut h = Handset::new(&r, Gw::AfricasTalking, (msisdn, "mtn"));
    h.network = "99999".to_string();
    h.dial("*920*44*AMA*5#").await.asks(&["GHS 10.00"]);
    h.send("1").await.ends(&["GHS 10.00", &local(msisdn)]);
    let reference = pending_vote(&r, msisdn, 5).await;
    drain(&r).await;
    let charge = Sim::of(&r).charge(&reference).await.expect("charge");
    assert_momo_charge(&charge, "provider_a", msisdn, "vod", 1000, 1);
}

/// A number ported away from the network its prefix says (024 is MTN's): each gateway's own
/// network field decides, read case-insensitively, and the charge goes to that network.
async fn the_gateways_network_field_decides_over_the_numbers_prefix(b: Backend) {
    let r = rig(b).await;
    let sim = Sim::of(&r);
    let cases = [
        (Gw::AfricasTalking, "233245550001", "62002".to_string(), "vod"),
        (Gw::AfricasTalking, "233245550002", "62006".to_string(), "atl"),
        (Gw::Hubtel, "233245550003", "vodafone".to_string(), "vod"),
        (Gw::Hubtel, "233245550004", "AirtelTigo".to_string(), "atl"),
        (Gw::Nalo, "233245550005", "VODAFONE".to_string(), "vod"),
        (Gw::Nalo, "233245550006", "AIRTELTIGO".to_string(), "atl"),
        (Gw::Arkesel, "233245550007", "Vodafone".to_string(), "vod"),
        (Gw::Arkesel, "233245550008", "AIRTELTIGO".to_string(), "atl"),
    ];
    let mut references = Vec::new();
    for (gw, msisdn, field, _) in &cases {
        let mut h = Handset::new(&r, *gw, (msisdn, "mtn"));
        h.network = field.clone();
        h.dial("*920*44*AMA*1#").await.asks(&["GHS 2.00", "1. Confirm"]);
        h.send("1").await.ends(&["GHS 2.00", &local(msisdn)]);
        references.push(pending_vote(&r, msisdn, 1).await);
    }
    drain(&r).await;
    for ((gw, msisdn, field, net), reference) in cases.iter().zip(&references) {
        let charge = sim.charge(reference).await.expect("charge");
        assert_eq!(charge["network"], *net, "{} sent {field} for {msisdn}: {charge}", gw.name());
        assert_momo_charge(&charge, "provider_a", msisdn, net, 200, 1);
    }
}

async fn the_sandbox_handset_votes_through_every_gateway(b: Backend) {
    let r = rig(b).await;
    let sim = Sim::of(&r);
    let mut references = Vec::new();
    for gw in Gw::ALL {
        let via = gw.name();
        let (msisdn, net) = gw.phone();
        // Step by step; the sandbox picks the network by the number's prefix.
        let (id, first) = sim.dial(gw, msisdn, SERVICE, None).await;
        first.asks(&["nominee code"]);
        sim.reply(&id, "AMA").await.asks(&["Ama Mensah", "GHS 2.00", "How many votes"]);
        sim.reply(&id, "3").await.asks(&["GHS 6.00", "1. Confirm", "2. Cancel"]);
        sim.reply(&id, "1").await.ends(&["GHS 6.00", &local(msisdn)]);
        let (s, v) = sim.reply_raw(&id, "1").await;
        assert_eq!(s, 409, "{via}: an ended session takes no reply: {v}");
        references.push((pending_vote(&r, msisdn, 3).await, msisdn, net));

        // Dial-through, with the network given.
        let (other, other_net) = gw.other_phone();
        let (id, first) = sim.dial(gw, other, "*920*44*AMA*2#", Some(other_net)).await;
        first.asks(&["GHS 4.00", "1. Confirm", "2. Cancel"]);
        sim.reply(&id, "2").await.ends(&["Cancelled"]);
        assert!(ussd_votes(&r, other).await.is_empty(), "{via}: cancelled");
    }
    let (s, v) = sim.reply_raw("no-such-session", "1").await;
    assert_eq!(s, 404, "{v}");
    // Tessera refusing the gateway (a wrong token, 401) is a 502 naming Tessera's status.
    let (s, v) = sim.dial_raw(Gw::Hubtel, "233241110000", SERVICE, None, "wrong-token-123456").await;
    assert_eq!(s, 502, "{v}");
    assert_eq!(v["status"], 401, "{v}");

    drain(&r).await;
    for (reference, msisdn, net) in &references {
        let charge = sim.charge(reference).await.expect("charge");
        assert_momo_charge(&charge, "provider_a", msisdn, net, 600, 1);
        sandbox_settle(&r, reference, "succeed", json!({})).await;
    }
    drain(&r).await;
    assert_eq!(board_votes(&r).await, 12, "3 votes through each of the 4 gateways");
}

// ---------------------------------------------------------------------------------------------
// 3. Wrong codes, bad counts, cancel

async fn unknown_and_unvotable_codes_are_asked_again_and_the_third_ends_the_session(b: Backend) {
    let r = rig(b).await;
    for gw in Gw::ALL {
        let mut h = Handset::new(&r, gw, gw.phone());
        h.dial(SERVICE).await.asks(&["nominee code"]);
        h.send("ZZZ").await.asks(&["Unknown code"]);
        h.send("999").await.asks(&["Unknown code"]);
        h.send("QQQ").await.ends(&["Unknown code"]);

        // An eliminated nominee counts as a try.
        h.dial(SERVICE).await.asks(&["nominee code"]);
        h.send("ESI").await.asks(&["cannot receive votes"]);
        h.send("ZZZ").await.asks(&["Unknown code"]);
        h.send("ESI").await.ends(&[]);
        assert!(ussd_votes(&r, gw.phone().0).await.is_empty(), "{}", gw.name());
    }
}

async fn bad_vote_counts_are_asked_again_and_the_third_ends_the_session(b: Backend) {
    let r = rig(b).await;
    let again = format!("Enter a number from 1 to {MAX}");
    for gw in Gw::ALL {
        let mut h = Handset::new(&r, gw, gw.phone());
        h.dial(SERVICE).await.asks(&["nominee code"]);
        h.send("AMA").await.asks(&["How many votes"]);
        h.send("0").await.asks(&[&again]);
        h.send(&(MAX + 1).to_string()).await.asks(&[&again]);
        h.send("abc").await.ends(&[]);

        // maxVotes itself is a count.
        h.dial(SERVICE).await.asks(&["nominee code"]);
        h.send("AMA").await.asks(&["How many votes"]);
        h.send(&MAX.to_string()).await.asks(&["GHS 100.00", "1. Confirm", "2. Cancel"]);
        h.send("2").await.ends(&["Cancelled"]);
        assert!(ussd_votes(&r, gw.phone().0).await.is_empty(), "{}", gw.name());
    }
}

async fn cancelling_at_the_confirm_screen_records_and_charges_nothing(b: Backend) {
    let r = rig(b).await;
    for gw in Gw::ALL {
        let mut h = Handset::new(&r, gw, gw.phone());
        h.dial(SERVICE).await.asks(&["nominee code"]);
        h.send("AMA").await.asks(&["How many votes"]);
        h.send("7").await.asks(&["GHS 14.00", "1. Confirm", "2. Cancel"]);
        h.send("2").await.ends(&["Cancelled"]);
    }
    drain(&r).await;
    let list: Value = r.api().get(PAYMENTS, StatusCode::OK).await;
    assert_eq!(list["pagination"]["total"], 0, "no transaction: {list}");
    let sim = Sim::of(&r);
    for gw in Gw::ALL {
        assert!(sim.charges_of(gw.phone().0).await.is_empty(), "{}: no charge", gw.name());
        // Nothing is pending: the next dial starts afresh.
        Handset::new(&r, gw, gw.phone()).dial(SERVICE).await.asks(&["nominee code"]);
    }
}

/// Gateways retry: the confirming request sent twice at once, and once more after, opens ONE
/// vote and ONE charge; every copy reads the same END.
async fn a_gateway_repeating_the_confirming_request_opens_one_vote(b: Backend) {
    let r = rig(b).await;
    let sim = Sim::of(&r);
    for gw in Gw::ALL {
        let via = gw.name();
        let (msisdn, net) = gw.phone();
        let mut h = Handset::new(&r, gw, (msisdn, net));
        h.dial(SERVICE).await.asks(&["nominee code"]);
        h.send("AMA").await.asks(&["How many votes"]);
        h.send("2").await.asks(&["GHS 4.00", "1. Confirm"]);
        let confirm = h.next("1");
        let (a, b) = tokio::join!(h.exchange(confirm.clone()), h.exchange(confirm.clone()));
        let again = h.exchange(confirm).await;
        for s in [&a, &b, &again] {
            s.ends(&["GHS 4.00", &local(msisdn)]);
        }
        assert_eq!(a.text, b.text, "{via}");
        assert_eq!(a.text, again.text, "{via}");
        let reference = pending_vote(&r, msisdn, 2).await;
        drain(&r).await;
        assert_momo_charge(&sim.charge(&reference).await.expect("charge"), "provider_a", msisdn, net, 400, 1);
        assert_eq!(sim.charges_of(msisdn).await.len(), 1, "{via}: one charge");
    }
}

/// Screens stay within 160 characters whatever the names (255-character nominee and campaign
/// names, letters beyond ASCII counted as characters).
async fn long_names_still_fit_every_screen(b: Backend) {
    let r = rig(b).await;
    let long = |what: &str| {
        let mut s = format!("{what} Ɛkuaba Nyamekye Ɔbaapa ");
        while s.chars().count() < 255 {
            s.push('Ɛ');
        }
        s.chars().take(255).collect::<String>()
    };
    let title = long("Campaign");
    let _: Value = r
        .api()
        .patch(&format!("/api/white-label/v1/campaigns/{}", r.campaign), &json!({"title": title}), StatusCode::OK)
        .await;
    // The first screen names the campaign the code serves.
    set_ussd(&r, json!({"campaignId": r.campaign})).await;
    nominee(&r, &r.campaign, &long("Nominee"), "LONG", "active").await;
    nominee(&r, &r.campaign, &long("Gone"), "GONE", "eliminated").await;
    for gw in Gw::ALL {
        let (msisdn, _) = gw.phone();
        let mut h = Handset::new(&r, gw, gw.phone());
        h.dial(SERVICE).await.asks(&[]);
        h.send("GONE").await.asks(&[]);
        h.send(&"Z".repeat(32)).await.asks(&["Unknown code"]);
        h.send("LONG").await.asks(&["GHS 2.00"]);
        h.send(&"9".repeat(40)).await.asks(&["Enter a number from 1 to 50"]);
        h.send("50").await.asks(&["GHS 100.00", "1. Confirm", "2. Cancel"]);
        h.send("1").await.ends(&["GHS 100.00", &local(msisdn)]);
        // The pending menu names the nominee too.
        h.dial(SERVICE).await.asks(&["pending vote"]);
    }
}

/// Hubtel ends sessions itself (`Release` when the caller hangs up, `Timeout`): the session is
/// over, and a later input on it confirms nothing.
async fn a_hubtel_release_or_timeout_ends_the_session_and_confirms_nothing(b: Backend) {
    let r = rig(b).await;
    let (msisdn, net) = Gw::Hubtel.phone();
    for ending in ["Release", "Timeout"] {
        let mut h = Handset::new(&r, Gw::Hubtel, (msisdn, net));
        h.dial("*920*44*AMA*3#").await.asks(&["GHS 6.00", "1. Confirm"]);
        h.sequence += 1;
        let end = Wire::Json(json!({
            "Type": ending, "Message": "", "SessionId": h.session, "Mobile": msisdn, "Operator": "vodafone",
            "Sequence": h.sequence,
        }));
        let res = post_ussd(&r.http, &r.base_url, "hubtel", &r.account.slug, Some(TOKEN), end).await;
        assert_eq!(res.status, 200, "{ending}: {}", String::from_utf8_lossy(&res.body));
        assert_eq!(res.json()["Type"], "Release", "{ending}: {}", res.json());
        let late = h.next("1");
        let res = post_ussd(&r.http, &r.base_url, "hubtel", &r.account.slug, Some(TOKEN), late).await;
        assert_eq!(res.status, 200, "{ending}: {}", String::from_utf8_lossy(&res.body));
        assert_eq!(res.json()["Type"], "Release", "{ending}: the session stays over: {}", res.json());
    }
    drain(&r).await;
    assert!(ussd_votes(&r, msisdn).await.is_empty(), "nothing confirmed");
    assert!(Sim::of(&r).charges_of(msisdn).await.is_empty(), "nothing charged");
}

/// The callback of a paid mobile-money charge is lost: the verify poll credits the vote, once.
async fn a_lost_callback_is_made_up_by_the_verify_poll(b: Backend) {
    let r = rig(b).await;
    let sim = Sim::of(&r);
    let (msisdn, net) = Gw::Arkesel.phone();
    let mut h = Handset::new(&r, Gw::Arkesel, (msisdn, net));
    h.dial("*920*44*AMA*5#").await.asks(&["GHS 10.00"]);
    h.send("1").await.ends(&["GHS 10.00", &local(msisdn)]);
    let reference = pending_vote(&r, msisdn, 5).await;
    drain(&r).await;
    assert_momo_charge(&sim.charge(&reference).await.expect("charge"), "provider_a", msisdn, net, 1000, 1);
    sim.faults(json!({"webhookDropPercent": 100})).await;
    sandbox_settle(&r, &reference, "succeed", json!({})).await;
    assert_eq!(r.store.callback_count(&reference).await.expect("count"), 0, "the callback was dropped");
    // The verify interval is 1 ms in these tests: the next poll is due at once.
    std::thread::sleep(Duration::from_millis(5));
    drain(&r).await;
    let paid = payment(&r, &reference).await;
    assert_eq!(paid["status"], "success", "{paid}");
    assert_eq!(paid["votes"]["count"], 5, "{paid}");
    std::thread::sleep(Duration::from_millis(5));
    drain(&r).await;
    assert_eq!(board_votes(&r).await, 5, "credited once");
    assert_ledger_clean(&r);
}

// ---------------------------------------------------------------------------------------------
// 4. Re-dial with a pending vote; a restart mid-session

async fn a_redial_with_a_pending_vote_offers_to_prompt_again_cancel_or_vote_anew(b: Backend) {
    let r = rig(b).await;
    let sim = Sim::of(&r);
    let (msisdn, net) = Gw::AfricasTalking.phone();
    let mut h = Handset::new(&r, Gw::AfricasTalking, (msisdn, net));
    h.dial("*920*44*AMA*3#").await.asks(&["GHS 6.00"]);
    h.send("1").await.ends(&["GHS 6.00", &local(msisdn)]);
    let reference = pending_vote(&r, msisdn, 3).await;
    drain(&r).await;
    assert_momo_charge(&sim.charge(&reference).await.expect("charge"), "provider_a", msisdn, net, 600, 1);

    // 1: the approval prompt again: a second charge call for the same reference, still one charge.
    let menu = h.dial(SERVICE).await;
    menu.asks(&["pending vote", "1.", "2.", "3."]);
    h.send("1").await.ends(&["prompt"]);
    drain(&r).await;
    let charge = sim.charge(&reference).await.expect("charge");
    assert_momo_charge(&charge, "provider_a", msisdn, net, 600, 2);
    assert_eq!(sim.charges_of(msisdn).await.len(), 1, "still ONE charge");
    assert_eq!(ussd_votes(&r, msisdn).await.len(), 1, "still one transaction");

    // The same menu through another gateway's wire: the pending vote is the phone's.
    let mut other = Handset::new(&r, Gw::Arkesel, (msisdn, net));
    other.dial(SERVICE).await.asks(&["pending vote", "1.", "2.", "3."]);

    // 3: a new vote starts at the code screen.
    h.dial(SERVICE).await.asks(&["pending vote"]);
    h.send("3").await.asks(&["nominee code"]);
    h.send("AMA").await.asks(&["Ama Mensah", "How many votes"]);

    // 2: cancel: the pending vote is abandoned, no votes.
    h.dial(SERVICE).await.asks(&["pending vote"]);
    h.send("2").await.ends(&["cancelled"]);
    assert_eq!(payment(&r, &reference).await["status"], "abandoned");
    drain(&r).await;
    assert_eq!(payment(&r, &reference).await["status"], "abandoned");
    assert_eq!(board_votes(&r).await, 0);
    // Nothing pending now.
    h.dial(SERVICE).await.asks(&["nominee code"]);

    // The customer approves the prompt after all: a late payment still credits (D16.4).
    sandbox_settle(&r, &reference, "succeed", json!({})).await;
    drain(&r).await;
    let late = payment(&r, &reference).await;
    assert_eq!(late["status"], "success", "{late}");
    assert_eq!(late["paidLate"], true, "{late}");
    assert_eq!(late["votes"]["count"], 3, "{late}");
    assert_eq!(board_votes(&r).await, 3);
    assert_ledger_clean(&r);
}

/// A server started in process on `config` once the previous one gave its data back.
struct Restarted {
    base_url: String,
    state: AppState,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Restarted {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

async fn start_again(config: Config) -> Restarted {
    let mut tries = 0;
    let app = loop {
        match Application::build(config.clone()).await {
            Ok(app) => break app,
            // The stopped server gives its instance guard back as its last act.
            Err(e) if e.chain().any(|c| c.is::<StartRefused>()) && tries < 200 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("restart: {e:#}"),
        }
    };
    let base_url = format!("http://{}", app.local_addr());
    let state = app.state();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.run_until_stopped(async move {
        let _ = rx.await;
    }));
    Restarted { base_url, state, stop: Some(tx) }
}

async fn a_session_resumes_after_a_server_restart(b: Backend) {
    // The data dir outlives the first server (the harness's own goes with it).
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().to_path_buf();
    let r = rig_with(b, move |c| c.data_dir = data_dir).await;
    let sim = Sim::of(&r);
    let (msisdn, net) = Gw::Hubtel.phone();
    let (id, first) = sim.dial(Gw::Hubtel, msisdn, SERVICE, Some(net)).await;
    first.asks(&["nominee code"]);
    sim.reply(&id, "AMA").await.asks(&["How many votes"]);

    let Rig { p, campaign, ama } = r;
    let mut config = p.config.clone();
    let account = p.account.clone();
    let PayApp { app, sandbox } = p;
    drop(app);
    config.security.extra_ca_file = sandbox.write_ca_pem(&config.data_dir).expect("ca").display().to_string();
    let next = start_again(config).await;
    sandbox.set_notify_url(next.base_url.clone());

    // The same gateway session goes on where the caller was.
    sim.reply(&id, "2").await.asks(&["GHS 4.00", "1. Confirm", "2. Cancel"]);
    sim.reply(&id, "1").await.ends(&["GHS 4.00", &local(msisdn)]);
    let client = Client::new(&next.base_url, &account.private.key_id, &account.private.secret).expect("client");
    let reference = pending_vote_with(&client, &campaign, &ama, msisdn, 2).await;
    workers_drain(&next.state).await;
    let charge = sim.charge(&reference).await.expect("the restarted server's worker charged");
    assert_momo_charge(&charge, "provider_a", msisdn, net, 400, 1);
    let url = format!("{}/sandbox/charges/{reference}/succeed", sandbox.base_url());
    let settled = reqwest::Client::new().post(url).json(&json!({})).send().await.expect("sandbox");
    assert_eq!(settled.status().as_u16(), 200);
    workers_drain(&next.state).await;
    assert_eq!(board_votes_with(&client, &campaign, &ama).await, 2);
    drop(next);
    drop(sandbox);
    drop(dir);
}

async fn workers_drain(state: &AppState) {
    tessera_server::workers::drain(state).await.expect("drain");
}

// ---------------------------------------------------------------------------------------------
// 5. Refusals: auth, wire, settings

/// The route's 401 envelope (with its requestId). The contract calls it `unauthorized`; the
/// house's own 401 codes (`missing_auth` without a token, `invalid_key` for a token that opens
/// nothing) say the same, so any of the three is taken here. Returns the code.
#[track_caller]
fn assert_unauthorized(r: &RawResponse) -> String {
    let body = r.json();
    assert_eq!(r.status, 401, "{body}");
    let code = body["code"].as_str().unwrap_or_default().to_string();
    assert!(["unauthorized", "invalid_key", "missing_auth"].contains(&code.as_str()), "a 401 code: {body}");
    assert_error(r, 401, &code);
    code
}

/// A 400 envelope whose details or message name `field`.
#[track_caller]
fn assert_names(r: &RawResponse, field: &str) {
    let body = r.json();
    assert_eq!(r.status, 400, "{field}: {body}");
    assert_eq!(body["success"], false, "{body}");
    let named = detail_fields(&body).iter().any(|f| f == field || f.ends_with(&format!(".{field}")))
        || body["message"].as_str().is_some_and(|m| m.contains(field));
    assert!(named, "the 400 names {field:?}: {body}");
}

async fn wrong_or_missing_tokens_are_401_and_unknown_gateways_400(b: Backend) {
    let r = rig(b).await;
    let slug = r.account.slug.clone();
    let other = r.new_account("other").await;
    for gw in Gw::ALL {
        let via = gw.name();
        let mut h = Handset::new(&r, gw, gw.phone());
        let wire = || {
            let mut h = Handset::new(&r, gw, gw.phone());
            h.first(SERVICE)
        };
        let res = post_ussd(&r.http, &r.base_url, via, &slug, Some("wrong-token-123456"), wire()).await;
        let wrong = assert_unauthorized(&res);
        let res = post_ussd(&r.http, &r.base_url, via, &slug, None, wire()).await;
        assert_unauthorized(&res);
        let res = post_ussd(&r.http, &r.base_url, via, &slug, Some(""), wire()).await;
        assert_unauthorized(&res);
        // An unknown account answers as a wrong token does: the route tells no slug apart.
        let res = post_ussd(&r.http, &r.base_url, via, "no-such-account", Some(TOKEN), wire()).await;
        assert_eq!(assert_unauthorized(&res), wrong);
        // The token of one account opens no other (this one has no ussd settings).
        let res = post_ussd(&r.http, &r.base_url, via, &other.slug, Some(TOKEN), wire()).await;
        assert_eq!(assert_unauthorized(&res), wrong);
        // The right token works.
        h.dial(SERVICE).await.asks(&["nominee code"]);
    }
    let wire = Handset::new(&r, Gw::Hubtel, Gw::Hubtel.phone()).first(SERVICE);
    let res = post_ussd(&r.http, &r.base_url, "mpesa", &slug, Some(TOKEN), wire).await;
    assert_names(&res, "gateway");
    assert!(ussd_votes(&r, Gw::Hubtel.phone().0).await.is_empty());
}

async fn malformed_gateway_requests_are_400s_naming_the_field(b: Backend) {
    let r = rig(b).await;
    let slug = r.account.slug.clone();
    let post = |gateway: &'static str, wire: Wire| post_ussd(&r.http, &r.base_url, gateway, &slug, Some(TOKEN), wire);
    let at = |skip: &str| {
        let mut pairs = vec![
            ("sessionId", "ATUid_1".to_string()),
            ("serviceCode", SERVICE.to_string()),
            ("phoneNumber", "+233241234567".to_string()),
            ("networkCode", "62001".to_string()),
            ("text", String::new()),
        ];
        pairs.retain(|(k, _)| *k != skip);
        Wire::Form(pairs)
    };
    for field in ["sessionId", "phoneNumber"] {
        assert_names(&post("africastalking", at(field)).await, field);
    }
    let mut not_a_phone = at("");
    if let Wire::Form(pairs) = &mut not_a_phone {
        pairs.iter_mut().filter(|(k, _)| *k == "phoneNumber").for_each(|(_, v)| *v = "not-a-phone".into());
    }
    assert_names(&post("africastalking", not_a_phone).await, "phoneNumber");
    let without = |v: Value, field: &str| {
        let mut v = v;
        v.as_object_mut().expect("object").remove(field);
        Wire::Json(v)
    };
    let hubtel = json!({"Type": "Initiation", "Message": SERVICE, "SessionId": "h1", "Mobile": "233201234567",
        "Operator": "vodafone", "Sequence": 1});
    for field in ["Type", "SessionId", "Mobile"] {
        assert_names(&post("hubtel", without(hubtel.clone(), field)).await, field);
    }
    let mut bad_type = hubtel.clone();
    bad_type["Type"] = json!("Bogus");
    assert_names(&post("hubtel", Wire::Json(bad_type)).await, "Type");
    let nalo = json!({"USERID": "u1", "MSISDN": "233271234567", "USERDATA": SERVICE, "MSGTYPE": true,
        "NETWORK": "AIRTELTIGO"});
    for field in ["MSISDN", "MSGTYPE"] {
        assert_names(&post("nalo", without(nalo.clone(), field)).await, field);
    }
    let mut not_bool = nalo.clone();
    not_bool["MSGTYPE"] = json!("yes");
    assert_names(&post("nalo", Wire::Json(not_bool)).await, "MSGTYPE");
    let arkesel = json!({"sessionID": "a1", "userID": "u1", "newSession": true, "msisdn": "233551234567",
        "userData": SERVICE, "network": "MTN"});
    for field in ["sessionID", "msisdn", "newSession"] {
        assert_names(&post("arkesel", without(arkesel.clone(), field)).await, field);
    }
    // Not JSON at all, or not an object: 400, never 500.
    for gateway in ["hubtel", "nalo", "arkesel"] {
        for bytes in [b"{not json".to_vec(), b"[1,2]".to_vec(), Vec::new()] {
            let res = post(gateway, Wire::Raw("application/json", bytes)).await;
            let body = res.json();
            assert_eq!(res.status, 400, "{gateway}: {body}");
            assert_eq!(body["success"], false, "{body}");
        }
    }
    drain(&r).await;
    let (_, list) = r.signed(Method::GET, PAYMENTS, None).await;
    assert_eq!(list["pagination"]["total"], 0, "{list}");
}

/// Every gateway's dial, plain or with inputs, ENDs at once with `not available`.
async fn assert_not_available(app: &TestApp) {
    for gw in Gw::ALL {
        let mut h = Handset::new(app, gw, gw.phone());
        h.dial(SERVICE).await.ends(&["not available"]);
        h.dial("*920*44*AMA*5#").await.ends(&["not available"]);
    }
}

async fn disabled_ussd_or_voting_module_ends_at_once_with_not_available(b: Backend) {
    let r = rig(b).await;
    set_ussd(&r, json!({"enabled": false})).await;
    assert_not_available(&r).await;
    set_ussd(&r, json!({"enabled": true})).await;
    voting_module(&r, json!(false)).await;
    assert_not_available(&r).await;
    drain(&r).await;
    let (_, list) = r.signed(Method::GET, PAYMENTS, None).await;
    assert_eq!(list["pagination"]["total"], 0, "nothing recorded: {list}");
    let sim = Sim::of(&r);
    for gw in Gw::ALL {
        assert!(sim.charges_of(gw.phone().0).await.is_empty(), "{}: nothing charged", gw.name());
    }
    // Back on, the same call is served.
    voting_module(&r, Value::Null).await;
    for gw in Gw::ALL {
        Handset::new(&r, gw, gw.phone()).dial(SERVICE).await.asks(&["nominee code"]);
    }
}

// ---------------------------------------------------------------------------------------------
// 6. A failed charge; 7. the token read back

async fn a_failed_mobile_money_charge_fails_the_vote_and_credits_nothing(b: Backend) {
    let r = rig(b).await;
    let (msisdn, net) = Gw::Arkesel.phone();
    let mut h = Handset::new(&r, Gw::Arkesel, (msisdn, net));
    h.dial(SERVICE).await.asks(&["nominee code"]);
    h.send("AMA").await.asks(&["How many votes"]);
    h.send("6").await.asks(&["GHS 12.00"]);
    h.send("1").await.ends(&["GHS 12.00", &local(msisdn)]);
    let reference = pending_vote(&r, msisdn, 6).await;
    drain(&r).await;
    let sim = Sim::of(&r);
    assert_momo_charge(&sim.charge(&reference).await.expect("charge"), "provider_a", msisdn, net, 1200, 1);
    sandbox_settle(&r, &reference, "fail", json!({})).await;
    drain(&r).await;
    let failed = payment(&r, &reference).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["votes"]["count"], 0, "{failed}");
    assert_eq!(board_votes(&r).await, 0);
    // No pending vote is left: the next dial starts afresh.
    h.dial(SERVICE).await.asks(&["nominee code"]);
    let (_, bal) = r.signed(Method::GET, "/api/white-label/v1/balance", None).await;
    assert_eq!(bal["data"]["available"], json!(0), "{bal}");
    assert_ledger_clean(&r);
}

async fn the_callback_token_is_write_only_and_reads_back_masked(b: Backend) {
    let r = rig(b).await;
    let masked = format!("••••{}", &TOKEN[TOKEN.len() - 4..]);
    let answered = set_ussd(&r, json!({"maxVotes": 20})).await;
    assert_eq!(answered["callbackToken"], masked.as_str(), "{answered}");
    assert_eq!(answered["maxVotes"], 20, "{answered}");
    let all: Value = r.api().get("/api/white-label/v1/settings?categories=ussd", StatusCode::OK).await;
    let ussd = &all["data"]["ussd"];
    assert_eq!(ussd["callbackToken"], masked.as_str(), "{all}");
    assert_eq!(ussd["enabled"], true);
    assert_eq!(ussd["serviceCode"], SERVICE);
    assert!(!all.to_string().contains(TOKEN), "the token never reads back: {all}");
    // The mask sent back keeps the token; the token still opens the route.
    set_ussd(&r, json!({"callbackToken": masked})).await;
    let mut h = Handset::new(&r, Gw::Nalo, Gw::Nalo.phone());
    h.dial(SERVICE).await.asks(&["nominee code"]);
    h.send("AMA").await.asks(&["How many votes"]);
    h.send("21").await.asks(&["Enter a number from 1 to 20"]);
    // A new token replaces it: the old one is refused.
    set_ussd(&r, json!({"callbackToken": "ussd-callback-NEW-0002"})).await;
    let wire = Handset::new(&r, Gw::Nalo, Gw::Nalo.phone()).first(SERVICE);
    let res = post_ussd(&r.http, &r.base_url, "nalo", &r.account.slug, Some(TOKEN), wire).await;
    assert_unauthorized(&res);
}

on_both!(
    a_vote_through_africastalking_is_charged_by_mobile_money_and_credited_once,
    a_vote_through_hubtel_is_charged_through_the_ussd_provider_and_credited_once,
    a_vote_through_nalo_is_credited_once_when_the_callback_comes_twice,
    a_vote_through_arkesel_is_charged_through_the_default_provider_and_credited_once,
    inputs_given_with_the_dial_jump_to_the_confirm_screen_on_every_gateway,
    the_gateways_network_field_decides_over_the_numbers_prefix,
    the_sandbox_handset_votes_through_every_gateway,
    unknown_and_unvotable_codes_are_asked_again_and_the_third_ends_the_session,
    bad_vote_counts_are_asked_again_and_the_third_ends_the_session,
    cancelling_at_the_confirm_screen_records_and_charges_nothing,
    a_gateway_repeating_the_confirming_request_opens_one_vote,
    long_names_still_fit_every_screen,
    a_hubtel_release_or_timeout_ends_the_session_and_confirms_nothing,
    a_lost_callback_is_made_up_by_the_verify_poll,
    a_redial_with_a_pending_vote_offers_to_prompt_again_cancel_or_vote_anew,
    a_session_resumes_after_a_server_restart,
    wrong_or_missing_tokens_are_401_and_unknown_gateways_400,
    malformed_gateway_requests_are_400s_naming_the_field,
    disabled_ussd_or_voting_module_ends_at_once_with_not_available,
    a_failed_mobile_money_charge_fails_the_vote_and_credits_nothing,
    the_callback_token_is_write_only_and_reads_back_masked,
);

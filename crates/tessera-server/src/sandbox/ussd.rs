//! The sandbox's USSD gateways and handset (D17.23, D17.40): `POST /sandbox/ussd/dial` and
//! `POST /sandbox/ussd/sessions/:id/reply` play a handset dialling through one of the four
//! gateways Tessera speaks (D17.19). Each step sends that gateway's request wire to
//! `<notify_url>/api/white-label/ussd/<gateway>/<account>?token=<token>`, reads its reply wire
//! and answers `{sessionId, screen, ended}` (the screen without `CON `/`END `).
//!
//! - Africa's Talking: form `sessionId, serviceCode, phoneNumber (+233…), networkCode, text`,
//!   `text` every input so far joined by `*` (first: the dial-through inputs or ""); reply
//!   `CON …` / `END …` in text.
//! - Hubtel: JSON `{Type: Initiation, Message: <the whole dial>, SessionId, Mobile, Operator,
//!   Sequence: 1}`, then `Type: Response` with the one input and Sequence 2, 3…; reply
//!   `{Type: Response|Release, Message}`.
//! - Nalo: JSON `{USERID, MSISDN, USERDATA: <the whole dial>, MSGTYPE: true, NETWORK}`, then
//!   `MSGTYPE: false` with the input; reply `{USERID, MSISDN, MSG, MSGTYPE}` (true: continues).
//! - Arkesel: JSON `{sessionID, userID, newSession: true, msisdn, userData: <the whole dial>,
//!   network}`, then `newSession: false` with the input; reply `{sessionID, userID, msisdn,
//!   message, continueSession}`.
//!
//! Sessions are in memory, the last 1000 kept. Calls go through the sandbox's loopback-only
//! client, as its callbacks do.
use std::collections::HashMap;
use std::sync::Arc;

use crate::domain::ussd::{normalize_msisdn, Gateway, Network};
use crate::providers::payments::wire::seg;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{gateway_error, loopback_url, now_rfc3339, random_token, Shared, KEEP};

pub(super) fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/sandbox/ussd/dial", post(dial))
        .route("/sandbox/ussd/sessions/{id}", get(show))
        .route("/sandbox/ussd/sessions/{id}/reply", post(reply))
        .with_state(shared)
}

/// A gateway's own name for a network (`mtn`, `vod`, `atl`).
fn wire_network(gateway: Gateway, network: &str) -> &'static str {
    match (gateway, network) {
        (Gateway::AfricasTalking, "vod") => "62002",
        (Gateway::AfricasTalking, "atl") => "62003",
        (Gateway::AfricasTalking, _) => "62001",
        (Gateway::Hubtel, "vod") => "vodafone",
        (Gateway::Hubtel, "atl") => "airteltigo",
        (Gateway::Hubtel, _) => "mtn",
        (_, "vod") => "VODAFONE",
        (_, "atl") => "AIRTELTIGO",
        _ => "MTN",
    }
}

/// One handset's session with one gateway.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    seq: u64,
    gateway: Gateway,
    account: String,
    token: Option<String>,
    /// `233241234567`.
    msisdn: String,
    service_code: String,
    /// `mtn`, `vod` or `atl`.
    network: String,
    /// The gateway's own session id (Africa's Talking, Hubtel, Arkesel; Nalo has none).
    wire_id: String,
    /// Every input so far, dial-through inputs first (Africa's Talking's cumulative `text`).
    inputs: Vec<String>,
    /// Requests sent so far (Hubtel's `Sequence` of the last one).
    sent: u32,
    ended: bool,
    created_at: String,
}

impl Session {
    /// `GET /sandbox/ussd/sessions/:id` (never the token).
    fn record(&self, id: &str) -> Value {
        json!({
            "sessionId": id,
            "gateway": self.gateway.as_str(),
            "account": self.account,
            "msisdn": self.msisdn,
            "network": self.network,
            "serviceCode": self.service_code,
            "inputs": self.inputs,
            "requests": self.sent,
            "ended": self.ended,
            "createdAt": self.created_at,
        })
    }
}

/// A session's record, as `GET /sandbox/ussd/sessions/:id` shows it.
pub(super) fn session_record(shared: &Shared, id: &str) -> Option<Value> {
    shared.db().ussd.by_id.get(id).map(|s| s.record(id))
}

/// The sessions, by the sandbox's session id.
#[derive(Default)]
pub(crate) struct Sessions {
    by_id: HashMap<String, Session>,
    seq: u64,
}

impl Sessions {
    fn insert(&mut self, id: String, mut s: Session) {
        self.seq += 1;
        s.seq = self.seq;
        if self.by_id.len() >= KEEP {
            let oldest = self.by_id.iter().min_by_key(|(_, s)| s.seq).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.by_id.remove(&k);
            }
        }
        self.by_id.insert(id, s);
    }
}

/// The inputs dialled after the service code: `*920*44#` and `*920*44*ABC*5#` → `[]`, `[ABC, 5]`;
/// `None` when the dial is not that code.
fn dial_through(service_code: &str, dial: &str) -> Option<Vec<String>> {
    let code = service_code.trim().trim_end_matches('#');
    let rest = dial.trim().strip_suffix('#')?.strip_prefix(code)?;
    if rest.is_empty() {
        return Some(Vec::new());
    }
    let rest = rest.strip_prefix('*')?;
    Some(rest.split('*').map(str::to_string).collect())
}

/// One request of the gateway's wire.
enum WireBody {
    Form(String),
    Json(Value),
}

/// The request for the session's next step: the first (`input` None, the whole dial) or a reply.
fn request(s: &Session, dial: Option<&str>, input: Option<&str>) -> WireBody {
    let first = dial.is_some();
    let data = dial.or(input).unwrap_or_default();
    match s.gateway {
        Gateway::AfricasTalking => WireBody::Form(
            form_urlencoded::Serializer::new(String::new())
                .append_pair("sessionId", &s.wire_id)
                .append_pair("serviceCode", &s.service_code)
                .append_pair("phoneNumber", &format!("+{}", s.msisdn))
                .append_pair("networkCode", wire_network(s.gateway, &s.network))
                .append_pair("text", &s.inputs.join("*"))
                .finish(),
        ),
        Gateway::Hubtel => WireBody::Json(json!({
            "Type": if first { "Initiation" } else { "Response" },
            "Message": data,
            "SessionId": s.wire_id,
            "Mobile": s.msisdn,
            "Operator": wire_network(s.gateway, &s.network),
            "Sequence": s.sent,
        })),
        Gateway::Nalo => WireBody::Json(json!({
            "USERID": NALO_USERID,
            "MSISDN": s.msisdn,
            "USERDATA": data,
            "MSGTYPE": first,
            "NETWORK": wire_network(s.gateway, &s.network),
        })),
        Gateway::Arkesel => WireBody::Json(json!({
            "sessionID": s.wire_id,
            "userID": ARKESEL_USERID,
            "newSession": first,
            "msisdn": s.msisdn,
            "userData": data,
            "network": wire_network(s.gateway, &s.network),
        })),
    }
}

const NALO_USERID: &str = "sandbox_nalo";
const ARKESEL_USERID: &str = "sandbox_arkesel";

/// Reads the gateway's reply wire: (screen, ended).
fn read_reply(gateway: Gateway, body: &[u8]) -> Result<(String, bool), String> {
    if gateway == Gateway::AfricasTalking {
        let text = std::str::from_utf8(body).map_err(|_| "the reply is not UTF-8 text".to_string())?;
        return if let Some(screen) = text.strip_prefix("CON ") {
            Ok((screen.to_string(), false))
        } else if let Some(screen) = text.strip_prefix("END ") {
            Ok((screen.to_string(), true))
        } else {
            Err("the reply starts with neither `CON ` nor `END `".into())
        };
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("the reply is not JSON: {e}"))?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string).ok_or(format!("the reply has no {k}"));
    let flag = |k: &str| v.get(k).and_then(Value::as_bool).ok_or(format!("the reply has no boolean {k}"));
    match gateway {
        Gateway::Hubtel => {
            let ended = match v.get("Type").and_then(Value::as_str) {
                Some("Response") => false,
                Some("Release") => true,
                _ => return Err("the reply's Type is neither Response nor Release".into()),
            };
            Ok((text("Message")?, ended))
        }
        Gateway::Nalo => Ok((text("MSG")?, !flag("MSGTYPE")?)),
        Gateway::Arkesel => Ok((text("message")?, !flag("continueSession")?)),
        Gateway::AfricasTalking => Err("unreachable".into()),
    }
}

fn bad(message: impl Into<String>) -> Response {
    gateway_error(StatusCode::BAD_REQUEST, "validation_failed", message)
}

fn upstream(error: impl Into<String>, status: Option<u16>, body: Value) -> Response {
    (StatusCode::BAD_GATEWAY, Json(json!({"error": error.into(), "status": status, "body": body}))).into_response()
}

/// Lenient about extra fields, as a handset script may carry its own notes.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DialIn {
    gateway: String,
    account: String,
    token: Option<String>,
    msisdn: String,
    service_code: Option<String>,
    dial: String,
    network: Option<String>,
}

/// `POST /sandbox/ussd/dial {gateway, account, token, msisdn, serviceCode, dial, network?}` →
/// `{sessionId, screen, ended}` (D17.40). Without `serviceCode` the whole dial is the code.
async fn dial(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let input: DialIn = match serde_json::from_slice(&body) {
        Ok(i) => i,
        Err(e) => return gateway_error(StatusCode::BAD_REQUEST, "malformed_json", format!("body: {e}")),
    };
    let Ok(gateway) = Gateway::parse("gateway", &input.gateway) else {
        return bad("gateway must be one of africastalking, hubtel, nalo, arkesel");
    };
    if input.account.trim().is_empty() {
        return bad("account is required");
    }
    let Some(msisdn) = normalize_msisdn(&input.msisdn) else {
        return bad("msisdn must be a phone number, e.g. 233241234567");
    };
    let dial = input.dial.trim().to_string();
    if !dial.starts_with('*') || !dial.ends_with('#') {
        return bad("dial must be a USSD string such as *920*44# or *920*44*ABC*5#");
    }
    let service_code = input.service_code.map(|c| c.trim().to_string()).unwrap_or_else(|| dial.clone());
    let Some(inputs) = dial_through(&service_code, &dial) else {
        return bad("dial must start with serviceCode");
    };
    let network = match input.network.as_deref() {
        None => Network::from_msisdn(&msisdn).unwrap_or(Network::Mtn),
        Some(n) => match Network::parse("network", n) {
            Ok(n) => n,
            Err(_) => return bad("network must be one of mtn, vod, atl"),
        },
    };
    let wire_id = match gateway {
        Gateway::AfricasTalking => format!("ATUid_{}", random_token(24)),
        Gateway::Nalo => String::new(),
        _ => random_token(32),
    };
    let session = Session {
        seq: 0,
        gateway,
        account: input.account.trim().to_string(),
        token: input.token,
        msisdn,
        service_code,
        network: network.as_str().to_string(),
        wire_id,
        inputs,
        sent: 1,
        ended: false,
        created_at: now_rfc3339(),
    };
    let id = format!("ussd_{}", random_token(20));
    let req = request(&session, Some(&dial), None);
    shared.db().ussd.insert(id.clone(), session.clone());
    exchange(&shared, &id, &session, req).await
}

/// `GET /sandbox/ussd/sessions/:id`: the session's gateway, handset, inputs so far and state.
async fn show(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    match session_record(&shared, &id) {
        Some(r) => Json(r).into_response(),
        None => gateway_error(StatusCode::NOT_FOUND, "not_found", "no USSD session with this id"),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyIn {
    input: String,
}

/// `POST /sandbox/ussd/sessions/:id/reply {input}` → the next request of the gateway's wire →
/// `{sessionId, screen, ended}`; unknown session 404, ended 409.
async fn reply(State(shared): State<Arc<Shared>>, Path(id): Path<String>, body: Bytes) -> Response {
    let input: ReplyIn = match serde_json::from_slice(&body) {
        Ok(i) => i,
        Err(e) => return gateway_error(StatusCode::BAD_REQUEST, "malformed_json", format!("body {{\"input\"}}: {e}")),
    };
    let (session, req) = {
        let mut db = shared.db();
        let Some(s) = db.ussd.by_id.get_mut(&id) else {
            return gateway_error(StatusCode::NOT_FOUND, "not_found", "no USSD session with this id");
        };
        if s.ended {
            return gateway_error(StatusCode::CONFLICT, "session_ended", "this USSD session has ended");
        }
        s.inputs.push(input.input.clone());
        s.sent += 1;
        let req = request(s, None, Some(&input.input));
        (s.clone(), req)
    };
    exchange(&shared, &id, &session, req).await
}

/// Sends one request to Tessera and answers with its screen; a session whose request failed or
/// whose screen ENDs is over.
async fn exchange(shared: &Arc<Shared>, id: &str, s: &Session, req: WireBody) -> Response {
    let outcome = send(shared, s, req).await;
    let ended = !matches!(outcome, Ok((_, false)));
    if ended {
        if let Some(live) = shared.db().ussd.by_id.get_mut(id) {
            live.ended = true;
        }
    }
    match outcome {
        Ok((screen, ended)) => Json(json!({"sessionId": id, "screen": screen, "ended": ended})).into_response(),
        Err(r) => *r,
    }
}

async fn send(shared: &Arc<Shared>, s: &Session, req: WireBody) -> Result<(String, bool), Box<Response>> {
    let Some(base) = shared.notify_url() else {
        return Err(Box::new(upstream(
            "no notify URL set: the sandbox does not know where Tessera is",
            None,
            Value::Null,
        )));
    };
    let mut url =
        format!("{}/api/white-label/ussd/{}/{}", base.trim_end_matches('/'), s.gateway.as_str(), seg(&s.account));
    if let Some(t) = &s.token {
        url.push('?');
        url.push_str(&form_urlencoded::Serializer::new(String::new()).append_pair("token", t).finish());
    }
    if !loopback_url(&url) {
        return Err(Box::new(upstream("the sandbox calls loopback addresses only", None, Value::Null)));
    }
    let builder = shared.http.post(&url);
    let builder = match req {
        WireBody::Form(f) => builder.header("content-type", "application/x-www-form-urlencoded").body(f),
        WireBody::Json(v) => builder.header("content-type", "application/json").body(v.to_string()),
    };
    let resp = builder.send().await.map_err(|e| Box::new(upstream(e.to_string(), None, Value::Null)))?;
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.map_err(|e| Box::new(upstream(e.to_string(), Some(status), Value::Null)))?;
    let body_value = || {
        serde_json::from_slice::<Value>(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
    };
    if status != 200 {
        return Err(Box::new(upstream(format!("Tessera answered {status}"), Some(status), body_value())));
    }
    read_reply(s.gateway, &bytes).map_err(|e| Box::new(upstream(e, Some(status), body_value())))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use axum::extract::RawQuery;
    use axum::http::HeaderMap;

    use super::*;
    use crate::sandbox::{Sandbox, SandboxHandle, SandboxOptions};

    #[test]
    fn dial_through_inputs_follow_the_service_code() {
        assert_eq!(dial_through("*920*44#", "*920*44#"), Some(vec![]));
        assert_eq!(dial_through("*920*44#", "*920*44*ABC*5#"), Some(vec!["ABC".to_string(), "5".to_string()]));
        assert_eq!(dial_through("*920*44#", "*920*45#"), None);
        assert_eq!(dial_through("*920*44#", "*920*441#"), None);
    }

    /// What the fake Tessera received: (gateway, account, query, content-type, body).
    type Seen = Arc<Mutex<Vec<(String, String, String, String, String)>>>;

    /// Screens of the fake Tessera, by the number of requests of the session so far.
    fn screen(n: usize) -> (&'static str, bool) {
        match n {
            1 => ("Enter the nominee code", false),
            2 => ("Ama: GHS 2.00 a vote. How many votes?", false),
            _ => ("Approve GHS 10.00 on 0241234567", true),
        }
    }

    /// A fake Tessera on loopback answering each gateway's reply wire; it counts requests per
    /// session key (Nalo's is the MSISDN).
    async fn fake_tessera(seen: Seen) -> (String, tokio::task::JoinHandle<()>) {
        async fn handle(
            State(seen): State<Seen>,
            Path((gateway, account)): Path<(String, String)>,
            RawQuery(query): RawQuery,
            headers: HeaderMap,
            body: Bytes,
        ) -> Response {
            let ct = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
            let text = String::from_utf8_lossy(&body).to_string();
            if query.as_deref() != Some("token=tok%2Fen") {
                return (StatusCode::UNAUTHORIZED, Json(json!({"error": {"code": "unauthorized"}}))).into_response();
            }
            let n = {
                let mut s = seen.lock().unwrap_or_else(|p| p.into_inner());
                s.push((gateway.clone(), account, query.unwrap_or_default(), ct, text.clone()));
                s.iter().filter(|e| e.0 == gateway).count()
            };
            let (screen, end) = screen(n);
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            match gateway.as_str() {
                "africastalking" => format!("{} {screen}", if end { "END" } else { "CON" }).into_response(),
                "hubtel" => {
                    Json(json!({"Type": if end { "Release" } else { "Response" }, "Message": screen})).into_response()
                }
                "nalo" => Json(json!({"USERID": v["USERID"], "MSISDN": v["MSISDN"], "MSG": screen, "MSGTYPE": !end}))
                    .into_response(),
                _ => Json(json!({
                    "sessionID": v["sessionID"], "userID": v["userID"], "msisdn": v["msisdn"],
                    "message": screen, "continueSession": !end,
                }))
                .into_response(),
            }
        }
        let app = Router::new().route("/api/white-label/ussd/{gateway}/{account}", post(handle)).with_state(seen);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (format!("http://{addr}"), task)
    }

    async fn sandbox(notify: &str) -> SandboxHandle {
        let sb = Sandbox::start(SandboxOptions {
            listen: "127.0.0.1:0".parse().expect("addr"),
            smtp_listen: None,
            notify_url: Some(notify.to_string()),
        })
        .await
        .expect("sandbox");
        sb
    }

    async fn post_json(url: &str, body: Value) -> (u16, Value) {
        let r = reqwest::Client::new().post(url).json(&body).send().await.expect("send");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Dials, replies `ABC` then `5`, and returns the three answers and what Tessera received.
    async fn play(gateway: &str, dial: &str) -> (Vec<Value>, Vec<(String, String, String, String, String)>) {
        let seen: Seen = Arc::default();
        let (tessera, _task) = fake_tessera(seen.clone()).await;
        let sb = sandbox(&tessera).await;
        let base = sb.base_url().to_string();
        let (st, first) = post_json(
            &format!("{base}/sandbox/ussd/dial"),
            json!({"gateway": gateway, "account": "demo", "token": "tok/en", "msisdn": "233241234567",
                   "serviceCode": "*920*44#", "dial": dial}),
        )
        .await;
        assert_eq!(st, 200, "{first}");
        let id = first["sessionId"].as_str().expect("sessionId").to_string();
        let mut answers = vec![first];
        for input in ["ABC", "5"] {
            let (st, a) = post_json(&format!("{base}/sandbox/ussd/sessions/{id}/reply"), json!({"input": input})).await;
            assert_eq!(st, 200, "{a}");
            answers.push(a);
        }
        // The last screen ENDed: the session is over.
        let (st, _) = post_json(&format!("{base}/sandbox/ussd/sessions/{id}/reply"), json!({"input": "1"})).await;
        assert_eq!(st, 409);
        let rec = sb.ussd_session(&id).expect("session");
        assert_eq!(
            (rec["ended"].as_bool(), rec["requests"].as_u64(), &rec["gateway"]),
            (Some(true), Some(3), &json!(gateway))
        );
        assert!(rec.get("token").is_none());
        let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
        (answers, seen)
    }

    fn screens(answers: &[Value]) -> Vec<(String, bool)> {
        answers
            .iter()
            .map(|a| (a["screen"].as_str().unwrap_or_default().to_string(), a["ended"].as_bool().unwrap_or_default()))
            .collect()
    }

    fn expected_screens() -> Vec<(String, bool)> {
        (1..=3).map(|n| (screen(n).0.to_string(), screen(n).1)).collect()
    }

    #[tokio::test]
    async fn africas_talking_sends_forms_with_the_cumulative_text() {
        let (answers, seen) = play("africastalking", "*920*44#").await;
        assert_eq!(screens(&answers), expected_screens());
        assert_eq!(seen.len(), 3);
        let forms: Vec<HashMap<String, String>> =
            seen.iter().map(|e| form_urlencoded::parse(e.4.as_bytes()).into_owned().collect()).collect();
        for (e, f) in seen.iter().zip(&forms) {
            assert_eq!((e.1.as_str(), e.2.as_str()), ("demo", "token=tok%2Fen"));
            assert_eq!(e.3, "application/x-www-form-urlencoded");
            assert_eq!(f["serviceCode"], "*920*44#");
            assert_eq!(f["phoneNumber"], "+233241234567");
            assert_eq!(f["networkCode"], "62001");
            assert_eq!(f["sessionId"], forms[0]["sessionId"]);
        }
        let texts: Vec<&str> = forms.iter().map(|f| f["text"].as_str()).collect();
        assert_eq!(texts, ["", "ABC", "ABC*5"]);

        let (_, seen) = play("africastalking", "*920*44*XYZ*2#").await;
        let texts: Vec<String> = seen
            .iter()
            .map(|e| form_urlencoded::parse(e.4.as_bytes()).find(|(k, _)| k == "text").map(|(_, v)| v.into_owned()))
            .map(Option::unwrap_or_default)
            .collect();
        assert_eq!(texts, ["XYZ*2", "XYZ*2*ABC", "XYZ*2*ABC*5"]);
    }

    fn bodies(seen: &[(String, String, String, String, String)]) -> Vec<Value> {
        seen.iter()
            .map(|e| {
                assert_eq!(e.3, "application/json");
                serde_json::from_str(&e.4).unwrap_or(Value::Null)
            })
            .collect()
    }

    #[tokio::test]
    async fn hubtel_initiates_with_the_whole_dial_then_counts_its_sequence() {
        let (answers, seen) = play("hubtel", "*920*44*XYZ#").await;
        assert_eq!(screens(&answers), expected_screens());
        let b = bodies(&seen);
        let got: Vec<(&str, &str, i64)> = b
            .iter()
            .map(|v| {
                (
                    v["Type"].as_str().unwrap_or_default(),
                    v["Message"].as_str().unwrap_or_default(),
                    v["Sequence"].as_i64().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(got, [("Initiation", "*920*44*XYZ#", 1), ("Response", "ABC", 2), ("Response", "5", 3)]);
        for v in &b {
            assert_eq!((v["Mobile"].as_str(), v["Operator"].as_str()), (Some("233241234567"), Some("mtn")));
            assert_eq!(v["SessionId"], b[0]["SessionId"]);
            assert!(v["SessionId"].as_str().is_some_and(|s| !s.is_empty()));
        }
    }

    #[tokio::test]
    async fn nalo_starts_with_msgtype_true_and_the_whole_dial() {
        let (answers, seen) = play("nalo", "*920*44#").await;
        assert_eq!(screens(&answers), expected_screens());
        let b = bodies(&seen);
        let got: Vec<(&str, bool)> = b
            .iter()
            .map(|v| (v["USERDATA"].as_str().unwrap_or_default(), v["MSGTYPE"].as_bool().unwrap_or_default()))
            .collect();
        assert_eq!(got, [("*920*44#", true), ("ABC", false), ("5", false)]);
        for v in &b {
            assert_eq!((v["MSISDN"].as_str(), v["NETWORK"].as_str()), (Some("233241234567"), Some("MTN")));
            assert_eq!(v["USERID"], NALO_USERID);
        }
    }

    #[tokio::test]
    async fn arkesel_starts_with_new_session_true_and_the_whole_dial() {
        let (answers, seen) = play("arkesel", "*920*44#").await;
        assert_eq!(screens(&answers), expected_screens());
        let b = bodies(&seen);
        let got: Vec<(&str, bool)> = b
            .iter()
            .map(|v| (v["userData"].as_str().unwrap_or_default(), v["newSession"].as_bool().unwrap_or_default()))
            .collect();
        assert_eq!(got, [("*920*44#", true), ("ABC", false), ("5", false)]);
        for v in &b {
            assert_eq!((v["msisdn"].as_str(), v["network"].as_str()), (Some("233241234567"), Some("MTN")));
            assert_eq!((&v["sessionID"], &v["userID"]), (&b[0]["sessionID"], &json!(ARKESEL_USERID)));
        }
    }

    #[tokio::test]
    async fn unknown_sessions_are_404_and_tessera_errors_are_502() {
        let seen: Seen = Arc::default();
        let (tessera, _task) = fake_tessera(seen.clone()).await;
        let sb = sandbox(&tessera).await;
        let base = sb.base_url().to_string();
        let (st, _) = post_json(&format!("{base}/sandbox/ussd/sessions/nope/reply"), json!({"input": "1"})).await;
        assert_eq!(st, 404);
        // A wrong token: the fake answers 401, the sandbox 502 with what it got.
        let (st, a) = post_json(
            &format!("{base}/sandbox/ussd/dial"),
            json!({"gateway": "hubtel", "account": "demo", "token": "wrong", "msisdn": "0201234567",
                   "serviceCode": "*920*44#", "dial": "*920*44#", "network": "vod"}),
        )
        .await;
        assert_eq!(st, 502, "{a}");
        assert_eq!(a["status"], 401);
        assert_eq!(a["body"]["error"]["code"], "unauthorized");
        let (st, _) = post_json(
            &format!("{base}/sandbox/ussd/dial"),
            json!({"gateway": "telegraph", "account": "demo", "msisdn": "233241234567", "dial": "*920*44#"}),
        )
        .await;
        assert_eq!(st, 400);
        let (st, _) = post_json(
            &format!("{base}/sandbox/ussd/dial"),
            json!({"gateway": "nalo", "account": "demo", "msisdn": "233241234567", "serviceCode": "*920*44#",
                   "dial": "*111#"}),
        )
        .await;
        assert_eq!(st, 400);
    }
}

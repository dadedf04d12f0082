//! Integration tests: the console's gate page and live counters (D17.30, D17.32, D17.43)
//! through the real server, as a browser without JavaScript uses them, on SQLite and
//! PostgreSQL. The check-in is the API's (`POST /tickets/verify` with autoVerify): once per
//! ticket whatever number of gates post it, visible through the API, counted live.
use std::time::Duration;

use futures_util::future::join_all;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::catalogue::{running_campaign, ticket_type};
use crate::support::client::{send, StatusCode};
use crate::support::console::{member, sign_in, signed_in, Browser, Page};
use crate::support::mail::spawn_mailing;
use crate::support::payments::{buy, payment, sandbox_settle, PayApp};
use crate::support::server::{drain, Backend};
use crate::support::tickets::{code_of, issued, VERIFY};

const GATE: &str = "/console/gate";

/// Posts `code` through the gate form of a freshly loaded gate page.
async fn at_gate(browser: &Browser, code: &str) -> Page {
    let page = browser.get(GATE).await;
    assert_eq!(page.status, 200, "{}", page.body);
    browser.submit(&page, GATE, &[("code", code)]).await
}

/// The verdict's word and class of a gate answer (200 asserted).
fn verdict(page: &Page) -> (String, String) {
    assert_eq!(page.status, 200, "{}", page.body);
    let class = page.attrs("#verdict", "class").into_iter().next().unwrap_or_default();
    (page.text("#verdict"), class)
}

/// The ticket as the API reads it (signed, no autoVerify: nothing changes).
async fn api_ticket(p: &PayApp, code: &str) -> Value {
    let r = send(p, &p.account.private, Method::POST, VERIFY, Some(json!({"ticketCode": code}))).await;
    assert_eq!(r.status, 200, "{}", r.json());
    r.json()["data"].clone()
}

/// A paid ticket (10 GHS) voided by a refund of its code: its code.
async fn refunded_ticket(p: &PayApp) -> String {
    let key = &p.account.private;
    let c = running_campaign(p, key, "ticketing").await;
    let t = ticket_type(p, key, &c, 10.0, 10).await;
    let reference = buy(p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
    let paid = payment(p, &reference).await;
    assert_eq!(paid["status"], "success", "{paid}");
    let code = code_of(&paid["tickets"][0]);
    let mut h = HeaderMap::new();
    h.insert("x-idempotency-key", HeaderValue::from_str(&uuid::Uuid::now_v7().to_string()).expect("header"));
    let body = serde_json::to_vec(&json!({"ticketCodes": [code]})).expect("json");
    let path = format!("/api/white-label/v1/payments/{reference}/refunds");
    let r = p.client_for(key).send_raw(Method::POST, &path, body, Some(h)).await.expect("send");
    assert_eq!(r.status, 201, "{}", r.json());
    assert_eq!(api_ticket(p, &code).await["status"], "void");
    code
}

on_both!(
    console_gate_checks_a_typed_code_in_once_and_answers_in_words,
    console_gate_unknown_void_and_other_accounts_codes_are_invalid,
    console_gate_twenty_concurrent_posts_from_two_gates_check_in_once,
    console_gate_live_stream_counts_an_api_check_in_within_a_second,
    console_gate_live_stream_ends_when_its_member_is_removed,
    console_gate_roles_empty_code_and_csrf,
);

async fn console_gate_checks_a_typed_code_in_once_and_answers_in_words(b: Backend) {
    let (p, browser, email) = signed_in(b, "gate").await;
    let (_, tickets) = issued(&p, &p.account, 2).await;
    let code = code_of(&tickets[0]);

    let page = browser.get(GATE).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.text("label[for=f-code]"), "Ticket code");
    assert_eq!(page.attrs("form#gate-form", "method"), vec!["post".to_string()]);
    assert!(page.form_fields(GATE).contains_key("csrf"), "the CSRF token is a hidden input");
    assert!(page.has("button#scan[hidden]") && page.has("video#scan-video[hidden]"), "the camera controls");
    assert_eq!(page.text("#checkins"), "0");
    assert_eq!(page.attrs("#checkins", "data-live"), vec!["checkIns".to_string()]);
    assert!(!page.has("#verdict"), "no answer before a code is posted");

    // Typed sloppily (lower case, no dashes), as the API reads it.
    let typed = code.replace('-', "").to_lowercase();
    let first = browser.submit(&page, GATE, &[("code", &typed)]).await;
    assert_eq!(verdict(&first), ("Checked in".to_string(), "verdict ok".to_string()));
    assert_eq!(first.attrs("#verdict", "role"), vec!["status".to_string()]);
    assert_eq!(first.text("#ticket-type"), "General");
    assert_eq!(first.text("#ticket-holder"), "Ama Mensah");
    assert_eq!(first.text("#ticket-code"), code);
    assert_eq!(first.text("#checkins"), "1");
    assert!(first.body.len() < 100_000);

    let again = at_gate(&browser, &code).await;
    assert_eq!(verdict(&again), ("Already checked in".to_string(), "verdict again".to_string()));
    assert!(again.text("#ticket-checked-in").contains(&email), "{}", again.body);
    assert_eq!(again.text("#checkins"), "1");

    // The check-in is the API's: the ticket reads checked in, by the member.
    let t = api_ticket(&p, &code).await;
    assert_eq!(t["checkedIn"], true, "{t}");
    assert_eq!(t["checkedInBy"], email.as_str());

    // The QR token checks in too (the camera reads it).
    let qr = p.store.gate_ticket(&p.account.id, None, &code_of(&tickets[1])).await.expect("ticket").ticket.qr_token;
    let by_qr = at_gate(&browser, &qr).await;
    assert_eq!(verdict(&by_qr).0, "Checked in");
    assert!(!by_qr.body.contains(&qr), "the QR token is never shown");
    assert_eq!(by_qr.text("#checkins"), "2");

    // One audit entry per check-in, and a `ticket.checked_in` event each.
    let audit = p.store.audit_entries(&p.account.id, 100).await.expect("audit");
    assert_eq!(audit.iter().filter(|e| e.action == "ticket.checked_in").count(), 2);
    let events: Value = p.api().get("/api/white-label/v1/events?limit=100", StatusCode::OK).await;
    let checked =
        events["data"].as_array().expect("events").iter().filter(|e| e["type"] == "ticket.checked_in").count();
    assert_eq!(checked, 2, "{events}");
}

async fn console_gate_unknown_void_and_other_accounts_codes_are_invalid(b: Backend) {
    let (p, browser, _) = signed_in(b, "gate").await;
    let other = p.new_account("other").await;
    let (_, theirs) = issued(&p, &other, 1).await;
    let void = refunded_ticket(&p).await;

    let unknown = at_gate(&browser, "ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ").await;
    assert_eq!(verdict(&unknown), ("Invalid".to_string(), "verdict bad".to_string()));
    assert!(!unknown.has("#ticket-type"));

    let foreign = at_gate(&browser, &code_of(&theirs[0])).await;
    assert_eq!(verdict(&foreign), ("Invalid".to_string(), "verdict bad".to_string()));
    assert!(!foreign.has("#ticket-type"), "nothing about another account's ticket");
    let (s, theirs_now) =
        p.signed_as(&other.private, Method::POST, VERIFY, Some(json!({"ticketCode": code_of(&theirs[0])}))).await;
    assert_eq!(s, 200);
    assert_eq!(theirs_now["data"]["checkedIn"], false, "their ticket was not touched");

    let refused = at_gate(&browser, &void).await;
    assert_eq!(verdict(&refused), ("Invalid".to_string(), "verdict bad".to_string()));
    assert!(refused.text(".reason").contains("void"), "{}", refused.body);
    assert_eq!(api_ticket(&p, &void).await["checkedIn"], false);

    // A valid ticket of an archived campaign never checks in.
    let (c, tickets) = issued(&p, &p.account, 1).await;
    let path = format!("/api/white-label/v1/campaigns/{c}");
    let _: Value = p.api().patch(&path, &json!({"status": "archived"}), StatusCode::OK).await;
    let archived = at_gate(&browser, &code_of(&tickets[0])).await;
    assert_eq!(verdict(&archived), ("Invalid".to_string(), "verdict bad".to_string()));
    assert!(archived.text(".reason").contains("archived"), "{}", archived.body);
    assert_eq!(api_ticket(&p, &code_of(&tickets[0])).await["checkedIn"], false);
    assert_eq!(archived.text("#checkins"), "0");
}

async fn console_gate_twenty_concurrent_posts_from_two_gates_check_in_once(b: Backend) {
    let (p, first, _) = signed_in(b, "gate").await;
    let (second, _) = sign_in(&p, &member(&p, "gate").await).await;
    let (_, tickets) = issued(&p, &p.account, 1).await;
    let code = code_of(&tickets[0]);
    let pages = [first.get(GATE).await, second.get(GATE).await];
    let browsers = [&first, &second];
    let fields = [("code", code.as_str())];
    let posts = (0..20).map(|i| browsers[i % 2].submit(&pages[i % 2], GATE, &fields));
    let answers = join_all(posts).await;
    let words: Vec<String> = answers.iter().map(|a| verdict(a).0).collect();
    assert_eq!(words.iter().filter(|w| *w == "Checked in").count(), 1, "{words:?}");
    assert_eq!(words.iter().filter(|w| *w == "Already checked in").count(), 19, "{words:?}");
    assert_eq!(api_ticket(&p, &code).await["checkedIn"], true);
    let audit = p.store.audit_entries(&p.account.id, 100).await.expect("audit");
    assert_eq!(audit.iter().filter(|e| e.action == "ticket.checked_in").count(), 1);
}

/// An open `/console/live` stream, read chunk by chunk.
struct Live {
    response: reqwest::Response,
    buffer: String,
}

impl Live {
    async fn open(p: &PayApp, browser: &Browser) -> Live {
        let session = browser.session_cookie().expect("signed in");
        let response = reqwest::Client::new()
            .get(p.url("/console/live"))
            .header("cookie", format!("tessera_console={session}"))
            .send()
            .await
            .expect("open the stream");
        assert_eq!(response.status().as_u16(), 200);
        let ct = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert!(ct.starts_with("text/event-stream"), "{ct}");
        Live { response, buffer: String::new() }
    }

    /// The next `counters` event's data within `wait` (comments skipped).
    async fn next(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut event, mut data) = (None, String::new());
                for line in block.lines() {
                    if let Some(e) = line.strip_prefix("event:") {
                        event = Some(e.trim().to_string());
                    } else if let Some(d) = line.strip_prefix("data:") {
                        data.push_str(d.trim_start());
                    }
                }
                if event.as_deref() == Some("counters") {
                    return Some(serde_json::from_str(&data).expect("event data is JSON"));
                }
            }
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Ok(Ok(Some(bytes))) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                _ => return None,
            }
        }
    }
}

async fn console_gate_live_stream_counts_an_api_check_in_within_a_second(b: Backend) {
    let (p, browser, _) = signed_in(b, "gate").await;
    let (_, tickets) = issued(&p, &p.account, 3).await;
    at_gate(&browser, &code_of(&tickets[0])).await;
    let mut live = Live::open(&p, &browser).await;
    assert_eq!(live.next(Duration::from_secs(5)).await, Some(json!({"checkIns": 1})), "the count at once");

    // Another account's check-in is not this account's news.
    let other = p.new_account("other").await;
    let (_, theirs) = issued(&p, &other, 1).await;
    let body = json!({"ticketCode": code_of(&theirs[0]), "autoVerify": true});
    assert_eq!(send(&p, &other.private, Method::POST, VERIFY, Some(body)).await.status, 200);
    assert_eq!(live.next(Duration::from_millis(400)).await, None, "nothing for another account");

    // A check-in through the API (signed, autoVerify) reaches the stream within a second.
    let body = json!({"ticketCode": code_of(&tickets[1]), "autoVerify": true, "checkedInBy": "gate-7"});
    let r = send(&p, &p.account.private, Method::POST, VERIFY, Some(body)).await;
    assert_eq!(r.json()["data"]["result"], "checked_in", "{}", r.json());
    assert_eq!(live.next(Duration::from_secs(1)).await, Some(json!({"checkIns": 2})));

    // An owner's dashboard may listen too; a signed-out browser may not.
    let (owner, _) = sign_in(&p, &member(&p, "owner").await).await;
    let mut owners = Live::open(&p, &owner).await;
    assert_eq!(owners.next(Duration::from_secs(5)).await, Some(json!({"checkIns": 2})));
    let anon = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let r = anon.get(p.url("/console/live")).send().await.expect("send");
    assert_eq!(r.status().as_u16(), 303);
}

/// A removed member's open stream ends at the next change instead of counting on (the session
/// is checked before every re-read), and the browser's reconnect is refused.
async fn console_gate_live_stream_ends_when_its_member_is_removed(b: Backend) {
    let (p, browser, email) = signed_in(b, "gate").await;
    let (_, tickets) = issued(&p, &p.account, 2).await;
    let mut live = Live::open(&p, &browser).await;
    assert_eq!(live.next(Duration::from_secs(5)).await, Some(json!({"checkIns": 0})));
    let verify = |code: String| json!({"ticketCode": code, "autoVerify": true});
    let r = send(&p, &p.account.private, Method::POST, VERIFY, Some(verify(code_of(&tickets[0])))).await;
    assert_eq!(r.json()["data"]["result"], "checked_in", "{}", r.json());
    assert_eq!(live.next(Duration::from_secs(1)).await, Some(json!({"checkIns": 1})), "counts while a member");

    let (owner, _) = sign_in(&p, &member(&p, "owner").await).await;
    let gate_id = p.store.org_member_by_email(&p.account.id, &email).await.expect("member").id;
    let team = owner.get("/console/team").await;
    let r = owner.submit(&team, &format!("/console/team/{gate_id}/remove"), &[]).await;
    assert_eq!(r.status, 303, "{}", r.body);
    let r = send(&p, &p.account.private, Method::POST, VERIFY, Some(verify(code_of(&tickets[1])))).await;
    assert_eq!(r.json()["data"]["result"], "checked_in", "{}", r.json());
    assert_eq!(live.next(Duration::from_secs(2)).await, None, "the removed member's stream sends nothing more");
    assert!(matches!(live.response.chunk().await, Ok(None) | Err(_)), "and it has ended");
    let session = browser.session_cookie().expect("the old cookie");
    let again = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let r = again
        .get(p.url("/console/live"))
        .header("cookie", format!("tessera_console={session}"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 303, "a reconnect without a session goes to the sign-in");
}

async fn console_gate_roles_empty_code_and_csrf(b: Backend) {
    let p = spawn_mailing(b).await;
    for role in ["finance", "manager"] {
        let (browser, _) = sign_in(&p, &member(&p, role).await).await;
        let r = browser.get(GATE).await;
        assert_eq!(r.status, 403, "{role}: {}", r.body);
        let home = browser.get("/console").await;
        let csrf = home.form_fields("/console/sign-out")["csrf"].clone();
        let r = browser.post(GATE, &[("csrf", &csrf), ("code", "ABCD")]).await;
        assert_eq!(r.status, 403, "{role} may not post to the gate");
    }
    let (owner, _) = sign_in(&p, &member(&p, "owner").await).await;
    let page = owner.get(GATE).await;
    assert_eq!(page.status, 200, "an owner opens the gate");
    let empty = owner.submit(&page, GATE, &[("code", "  ")]).await;
    assert_eq!(empty.status, 400, "{}", empty.body);
    assert!(empty.field_error("code").is_some(), "{}", empty.body);
    assert!(!empty.has("#verdict"));
    let long = "A".repeat(200);
    let too_long = owner.submit(&page, GATE, &[("code", &long)]).await;
    assert_eq!(too_long.status, 400);
    assert!(too_long.field_error("code").is_some());
    // Without the CSRF token (or with a wrong one): 403, nothing checked in.
    let (_, tickets) = issued(&p, &p.account, 1).await;
    let code = code_of(&tickets[0]);
    assert_eq!(owner.post(GATE, &[("code", &code)]).await.status, 403);
    assert_eq!(owner.post(GATE, &[("code", &code), ("csrf", "0000")]).await.status, 403);
    assert_eq!(api_ticket(&p, &code).await["checkedIn"], false);
}

//! Integration tests: the console's tenant isolation matrix (D17.28–31). Two accounts, A and B,
//! each with an owner member and a reseller owner (B also a finance and a gate member). A holds
//! data: a paid ticket purchase (one ticket checked in), a withdrawal awaiting approval (and
//! Tessera's approval request for it), a reseller approval request, a second member, a
//! campaign. Then, for EVERY console route (`http::console::ROUTES`, itself checked against the
//! router's source), B's signed-in browser acts on A's ids and data: ids answer 404, lists,
//! figures and searches hold none of A's data, and after every case A's state, read through the
//! API as A and through A's console pages, is what it was. On SQLite and PostgreSQL.
use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};
use tessera_client::Method;
use tessera_server::cli::admin;
use tessera_server::http::console::ROUTES;

use crate::support::catalogue::{running_campaign, ticket_type};
use crate::support::client::send;
use crate::support::console::{sign_in, Browser, Page};
use crate::support::mail::{point_mail_at_sandbox, spawn_mailing};
use crate::support::payments::{sandbox_settle, PayApp, BALANCE, INITIALIZE, PAYMENTS};
use crate::support::portal::{call, mint, portal_ok, reseller};
use crate::support::server::{drain, Backend, TestAccount, TestKey, ALL_PRIVATE_SCOPES};

const WITHDRAWALS: &str = "/api/white-label/v1/withdrawals";
const TICKETS_VERIFY: &str = "/api/white-label/v1/tickets/verify";
const PORTAL_APPROVALS: &str = "/api/white-label/portal/reseller/approval-requests";

/// The (method, path) of every `.route(...)` call in the console router's source.
fn routes_in_source() -> BTreeSet<(String, String)> {
    let sources = [include_str!("../../src/http/console/mod.rs"), include_str!("../../src/http/console/reseller.rs")];
    let mut out = BTreeSet::new();
    for src in sources {
        for (_, rest) in src.match_indices(".route(\"").map(|(i, _)| src.split_at(i + ".route(\"".len())) {
            let Some((path, tail)) = rest.split_once('"') else { continue };
            let call = tail.split("\n").next().unwrap_or_default();
            for method in ["get", "post", "put", "patch", "delete"] {
                let hit = call
                    .match_indices(&format!("{method}("))
                    .any(|(i, _)| i == 0 || !call[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_'));
                if hit {
                    out.insert((method.to_uppercase(), path.to_string()));
                }
            }
        }
    }
    out
}

#[test]
fn console_isolation_routes_list_every_route_of_the_router() {
    let listed: BTreeSet<(String, String)> = ROUTES.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    assert_eq!(listed.len(), ROUTES.len(), "no route listed twice");
    assert_eq!(listed, routes_in_source(), "http::console::ROUTES and the router's .route(...) calls differ");
}

/// A's data, as B must never see it.
struct Seeded {
    campaign: String,
    campaign_title: String,
    reference: String,
    buyer: String,
    codes: Vec<String>,
    withdrawal: String,
    withdrawal_name: String,
    /// A's org member (besides the owner): e-mail and id.
    member_email: String,
    member_id: String,
    owner_email: String,
    reseller_owner: String,
    reseller_token: String,
    /// Approval requests: the reseller's own, then Tessera's for the withdrawal.
    approvals: Vec<String>,
    approval_reason: String,
    key: TestKey,
}

impl Seeded {
    /// Strings that name A's data.
    fn markers(&self) -> Vec<&str> {
        let mut m = vec![
            self.campaign.as_str(),
            self.campaign_title.as_str(),
            self.reference.as_str(),
            self.buyer.as_str(),
            self.withdrawal.as_str(),
            self.withdrawal_name.as_str(),
            self.member_email.as_str(),
            self.member_id.as_str(),
            self.owner_email.as_str(),
            self.reseller_owner.as_str(),
            self.approval_reason.as_str(),
        ];
        m.extend(self.codes.iter().map(String::as_str));
        m.extend(self.approvals.iter().map(String::as_str));
        m
    }
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::now_v7().simple())
}

async fn seed(p: &PayApp, a: &TestAccount) -> Seeded {
    let key = a.private.clone();
    // A paid purchase of two tickets by a buyer of A's own, one ticket checked in.
    let campaign = running_campaign(p, &key, "ticketing").await;
    let (_, c) = p.signed_as(&key, Method::GET, &format!("/api/white-label/v1/campaigns/{campaign}"), None).await;
    let campaign_title = c["data"]["title"].as_str().expect("title").to_string();
    let ticket = ticket_type(p, &key, &campaign, 100.0, 10).await;
    let buyer = format!("{}@buyers.example.com", unique("ama"));
    let body = json!({"campaign_id": campaign, "ticket_id": ticket, "email": buyer, "quantity": 2,
        "full_name": "Ama Mensah", "callbackUrl": format!("https://{}/thanks", a.domain)});
    let r = send(p, &key, Method::POST, INITIALIZE, Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let reference = r.json()["data"]["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
    let (s, pay) = p.signed_as(&key, Method::GET, &format!("{PAYMENTS}/{reference}"), None).await;
    assert_eq!(s, 200, "{pay}");
    let codes: Vec<String> = pay["data"]["tickets"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["ticketCode"].as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    assert_eq!(codes.len(), 2, "{pay}");
    let r =
        send(p, &key, Method::POST, TICKETS_VERIFY, Some(json!({"ticketCode": codes[0], "autoVerify": true}))).await;
    assert_eq!(r.json()["data"]["result"], "checked_in", "{}", r.json());
    // A withdrawal above the threshold: awaiting approval, with Tessera's approval request.
    let wkey = p.create_key(&a.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    let ops = json!({"config": {"withdrawalApprovalAbove": 50}});
    let (s, b) = p.signed_as(&key, Method::PATCH, "/api/white-label/v1/settings/operations", Some(ops)).await;
    assert_eq!(s, 200, "{b}");
    let withdrawal_name = unique("Akua Addo");
    let body = json!({"amount": 60, "bank_name": "MTN Mobile Money", "bank_code": "MTN",
        "account_number": "0241234567", "account_name": withdrawal_name});
    let mut h = reqwest::header::HeaderMap::new();
    h.insert("x-idempotency-key", uuid::Uuid::now_v7().to_string().parse().expect("header"));
    let bytes = serde_json::to_vec(&body).expect("json");
    let r = p.client_for(&wkey).send_raw(Method::POST, WITHDRAWALS, bytes, Some(h)).await.expect("send");
    assert_eq!(r.status, 201, "{}", r.json());
    assert_eq!(r.json()["data"]["status"], "awaiting_approval");
    let withdrawal = r.json()["data"]["id"].as_str().expect("id").to_string();
    // Members: the owner, a finance member; a reseller with its owner and a request.
    let owner_email = format!("{}@a.example.com", unique("owner"));
    admin::member_add(&p.store, &a.slug, &owner_email, "owner").await.expect("owner");
    let member_email = format!("{}@a.example.com", unique("finance"));
    let m = admin::member_add(&p.store, &a.slug, &member_email, "finance").await.expect("member");
    let member_id = m["id"].as_str().expect("id").to_string();
    let reseller_owner = format!("{}@a-reseller.example.com", unique("owner"));
    reseller(p, a, &reseller_owner).await;
    let reseller_token = mint(p, &reseller_owner).await;
    let approval_reason = unique("A's own request");
    let body = json!({"entityType": "setting", "reason": approval_reason});
    let filed = portal_ok(&call(p, Some(&reseller_token), Method::POST, PORTAL_APPROVALS, Some(body)).await, 201);
    let all = portal_ok(&call(p, Some(&reseller_token), Method::GET, PORTAL_APPROVALS, None).await, 200);
    let tessera = all
        .as_array()
        .expect("list")
        .iter()
        .find(|r| r["entityType"] == "withdrawal")
        .and_then(|r| r["id"].as_str())
        .expect("Tessera's withdrawal request")
        .to_string();
    let approvals = vec![filed["id"].as_str().expect("id").to_string(), tessera];
    Seeded {
        campaign,
        campaign_title,
        reference,
        buyer,
        codes,
        withdrawal,
        withdrawal_name,
        member_email,
        member_id,
        owner_email,
        reseller_owner,
        reseller_token,
        approvals,
        approval_reason,
        key: wkey,
    }
}

/// A's state through the API as A (and the operator's member list) and through A's console
/// pages as A's owner and A's reseller owner.
async fn a_state(p: &PayApp, a: &TestAccount, s: &Seeded, owner: &Browser, reseller_user: &Browser) -> Value {
    let mut api = serde_json::Map::new();
    for path in [
        BALANCE.to_string(),
        format!("{PAYMENTS}/{}", s.reference),
        format!("{WITHDRAWALS}/{}", s.withdrawal),
        format!("/api/white-label/v1/campaigns/{}", s.campaign),
    ] {
        let (st, mut b) = p.signed_as(&s.key, Method::GET, &path, None).await;
        if let Some(o) = b.as_object_mut() {
            o.remove("requestId");
        }
        api.insert(path, json!([st, b]));
    }
    for code in &s.codes {
        let r = send(p, &s.key, Method::POST, TICKETS_VERIFY, Some(json!({"ticketCode": code}))).await;
        let d = &r.json()["data"];
        api.insert(code.clone(), json!([r.status, d["result"], d["checkedIn"], d["checkedInAt"]]));
    }
    let portal = call(p, Some(&s.reseller_token), Method::GET, PORTAL_APPROVALS, None).await;
    api.insert("approvals".into(), portal.json()["data"].clone());
    let portal = call(p, Some(&s.reseller_token), Method::GET, crate::support::portal::CONSOLE, None).await;
    api.insert("reseller".into(), portal.json()["data"].clone());
    let members = admin::member_list(&p.store, &a.slug).await.expect("members");
    api.insert("members".into(), members);
    let mut pages = serde_json::Map::new();
    let paths = [
        "/console".to_string(),
        "/console/campaigns".to_string(),
        format!("/console/campaigns/{}", s.campaign),
        "/console/payments".to_string(),
        format!("/console/payments?q={}", s.reference),
        "/console/ledger".to_string(),
        "/console/withdrawals".to_string(),
        "/console/team".to_string(),
        "/console/gate".to_string(),
    ];
    for path in paths {
        let page = owner.get(&path).await;
        pages.insert(path, json!([page.status, page.texts("main")]));
    }
    let page = reseller_user.get("/console/reseller").await;
    pages.insert("/console/reseller".into(), json!([page.status, page.texts("main")]));
    json!({"api": api, "pages": pages})
}

/// B's browsers.
struct B {
    owner: Browser,
    owner_email: String,
    finance: Browser,
    gate: Browser,
    reseller_user: Browser,
    /// A second owner, signed out by the sign-out case.
    leaving: Browser,
}

/// The CSRF token of a signed-in page (every page's sign-out form carries it).
async fn csrf(b: &Browser, path: &str) -> String {
    let page = b.get(path).await;
    assert_eq!(page.status, 200, "{path}: {}", page.body);
    page.form_fields("/console/sign-out")["csrf"].clone()
}

async fn post(b: &Browser, home: &str, path: &str, fields: &[(&str, &str)]) -> Page {
    let token = csrf(b, home).await;
    let mut all = vec![("csrf", token.as_str())];
    all.extend_from_slice(fields);
    b.post(path, &all).await
}

/// The figures of a dashboard, all zero (B has no money or tickets).
fn assert_zero_figures(page: &Page) {
    let values = page.texts("ul.figures .value");
    assert!(page.has("#fig-gross") && !values.is_empty(), "B's dashboard shows its figures: {}", page.body);
    for v in values {
        assert!(v.chars().filter(char::is_ascii_digit).all(|c| c == '0'), "B's figure {v:?} is not B's (zero)");
    }
}

/// The first `counters` event of B's live stream: B's check-ins (0), not A's (1).
async fn first_live_counters(p: &PayApp, b: &Browser) -> Value {
    let cookie = format!("tessera_console={}", b.session_cookie().expect("session"));
    let mut r = p.http.get(p.url("/console/live")).header("cookie", cookie).send().await.expect("live");
    assert_eq!(r.status().as_u16(), 200, "GET /console/live");
    let mut text = String::new();
    let read = async {
        while let Ok(Some(chunk)) = r.chunk().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(data) = text.split("event: counters").nth(1).and_then(|t| t.split("data:").nth(1)) {
                if let Some(line) = data.lines().next().filter(|_| data.contains('\n')) {
                    return serde_json::from_str::<Value>(line.trim()).ok();
                }
            }
        }
        None
    };
    tokio::time::timeout(Duration::from_secs(5), read).await.ok().flatten().expect("a counters event within 5 s")
}

/// One case: B acting on A for `method path`; the page B got (None when the case checks its
/// own answer). Panics for a route without a case.
async fn case(p: &PayApp, s: &Seeded, b: &B, method: &str, path: &str) -> Vec<(Page, Vec<String>)> {
    let none: Vec<String> = Vec::new();
    match (method, path) {
        ("GET", "/console") => {
            let page = b.owner.get("/console").await;
            assert_eq!(page.status, 200);
            assert_zero_figures(&page);
            vec![(page, none)]
        }
        ("POST", "/console/sign-in") => {
            // B's browser asks a passcode for A's owner: refused (not the sign-in form's
            // token) or answered as any address is; B stays B.
            let r = post(&b.owner, "/console/team", path, &[("email", &s.owner_email)]).await;
            assert!(matches!(r.status, 200 | 400 | 403), "{}: {}", r.status, r.body);
            vec![(r, vec![s.owner_email.clone()])]
        }
        ("POST", "/console/sign-in/verify") => {
            let r = post(&b.owner, "/console/team", path, &[("passcode", "000000"), ("challenge_id", "x")]).await;
            assert!(matches!(r.status, 400 | 403), "{}: {}", r.status, r.body);
            vec![(r, none)]
        }
        ("POST", "/console/sign-out") => {
            let r = post(&b.leaving, "/console", path, &[]).await;
            assert_eq!((r.status, r.location().as_deref()), (303, Some("/console")));
            vec![(r, none)]
        }
        ("POST", "/console/switch") => {
            // A's member id from B's session: 404, and B stays B (checked after every case).
            let r = post(&b.owner, "/console", path, &[("member", &s.member_id)]).await;
            assert_eq!(r.status, 404, "switching into A's member as B: {}", r.body);
            vec![(r, vec![s.member_id.clone()])]
        }
        ("GET", "/console/assets/{file}") => {
            let r = b.owner.get("/console/assets/console.css").await;
            assert_eq!(r.status, 200);
            vec![(r, none)]
        }
        ("GET", "/console/live") => {
            let counters = first_live_counters(p, &b.owner).await;
            assert_eq!(counters, json!({"checkIns": 0}), "B's live counter is B's");
            vec![]
        }
        ("GET", "/console/campaigns") => {
            let page = b.owner.get(path).await;
            assert_eq!(page.status, 200);
            vec![(page, none)]
        }
        ("GET", "/console/campaigns/{campaign_id}") => {
            let page = b.owner.get(&format!("/console/campaigns/{}", s.campaign)).await;
            assert_eq!(page.status, 404, "A's campaign as B: {}", page.body);
            vec![(page, vec![s.campaign.clone()])]
        }
        ("GET", "/console/payments") => {
            let mut out = vec![(b.owner.get(path).await, none.clone())];
            for q in [&s.reference, &s.buyer] {
                let page = b.owner.get(&format!("/console/payments?q={}", urlencode(q))).await;
                assert_eq!(page.status, 200, "{}", page.body);
                assert!(page.texts("tbody tr td").iter().all(|t| !t.contains(q.as_str())), "A's row found as B");
                // The search box may echo what B typed; nothing else of A's shows.
                out.push((page, vec![q.clone()]));
            }
            out
        }
        ("GET", "/console/ledger") => {
            let mut out = Vec::new();
            for q in ["", "?type=charge", "?type=fee", "?page=2"] {
                let page = b.owner.get(&format!("{path}{q}")).await;
                assert_eq!(page.status, 200, "{q}: {}", page.body);
                out.push((page, none.clone()));
            }
            out
        }
        ("GET", "/console/withdrawals") => {
            let page = b.finance.get(path).await;
            assert_eq!(page.status, 200);
            vec![(page, none)]
        }
        ("POST", "/console/withdrawals") => {
            // B has no balance: refused, and nothing of A's moves.
            let fields = [
                ("amount", "60"),
                ("bank_name", "MTN Mobile Money"),
                ("bank_code", "MTN"),
                ("account_number", "0241234567"),
                ("account_name", "Kofi B"),
            ];
            let r = post(&b.finance, "/console/withdrawals", path, &fields).await;
            assert!(matches!(r.status, 400 | 409), "{}: {}", r.status, r.body);
            vec![(r, none)]
        }
        ("POST", "/console/withdrawals/{withdrawal_id}/decide") => {
            let mut out = Vec::new();
            for decision in ["approved", "rejected"] {
                let to = format!("/console/withdrawals/{}/decide", s.withdrawal);
                let r = post(&b.finance, "/console/withdrawals", &to, &[("decision", decision)]).await;
                assert_eq!(r.status, 404, "{decision} A's withdrawal as B: {}", r.body);
                out.push((r, vec![s.withdrawal.clone()]));
            }
            out
        }
        ("GET", "/console/team") => {
            let page = b.owner.get(path).await;
            assert_eq!(page.status, 200);
            assert!(page.text("main").contains(&b.owner_email), "B's team lists B's owner");
            vec![(page, none)]
        }
        ("POST", "/console/team") => {
            let email = format!("{}@b.example.com", unique("gate"));
            let r = post(&b.owner, "/console/team", path, &[("email", &email), ("role", "gate")]).await;
            assert_eq!(r.status, 303, "{}", r.body);
            vec![(r, none)]
        }
        ("POST", "/console/team/{member_id}/remove") => {
            let to = format!("/console/team/{}/remove", s.member_id);
            let r = post(&b.owner, "/console/team", &to, &[]).await;
            assert_eq!(r.status, 404, "removing A's member as B: {}", r.body);
            vec![(r, vec![s.member_id.clone()])]
        }
        ("GET", "/console/gate") => {
            let page = b.gate.get(path).await;
            assert_eq!(page.status, 200);
            assert_eq!(page.text("[data-live=checkIns]"), "0", "B's gate counter is B's: {}", page.body);
            vec![(page, none)]
        }
        ("POST", "/console/gate") => {
            // A's unchecked ticket at B's gate: Invalid, and it stays unchecked.
            let r = post(&b.gate, "/console/gate", path, &[("code", &s.codes[1])]).await;
            assert_eq!(r.status, 200, "{}", r.body);
            assert_eq!(r.text("#verdict"), "Invalid", "{}", r.body);
            let r2 = post(&b.gate, "/console/gate", path, &[("code", &s.codes[0])]).await;
            assert_eq!(r2.text("#verdict"), "Invalid", "A's checked-in ticket is not B's: {}", r2.body);
            vec![(r, vec![s.codes[1].clone()]), (r2, vec![s.codes[0].clone()])]
        }
        ("GET", "/console/reseller") => {
            let page = b.reseller_user.get(path).await;
            assert_eq!(page.status, 200);
            let owner = b.owner.get(path).await;
            assert_eq!(owner.status, 403, "org members do not open the reseller page");
            vec![(page, none)]
        }
        ("POST", "/console/reseller/members") => {
            let email = format!("{}@b-reseller.example.com", unique("viewer"));
            let r = post(&b.reseller_user, "/console/reseller", path, &[("email", &email), ("role", "viewer")]).await;
            assert_eq!(r.status, 303, "{}", r.body);
            vec![(r, none)]
        }
        ("POST", "/console/reseller/approval-requests") => {
            // Naming A's withdrawal as the subject changes nothing of A's.
            let fields = [("entity_type", "withdrawal"), ("reason", "B's"), ("subject", s.withdrawal.as_str())];
            let r = post(&b.reseller_user, "/console/reseller", path, &fields).await;
            assert_eq!(r.status, 303, "{}", r.body);
            vec![(r, none)]
        }
        ("POST", "/console/reseller/approval-requests/{approval_id}/decide") => {
            let mut out = Vec::new();
            for id in &s.approvals {
                for decision in ["approved", "rejected", "cancelled"] {
                    let to = format!("/console/reseller/approval-requests/{id}/decide");
                    let r = post(&b.reseller_user, "/console/reseller", &to, &[("decision", decision)]).await;
                    assert_eq!(r.status, 404, "{decision} A's request as B: {}", r.body);
                    out.push((r, vec![id.clone()]));
                }
            }
            out
        }
        (m, p) => panic!("no isolation case for {m} {p}: add one to console_isolation.rs"),
    }
}

fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

on_both!(console_isolation_b_on_a_ids_is_404_and_sees_none_of_a_and_a_is_unchanged);

async fn console_isolation_b_on_a_ids_is_404_and_sees_none_of_a_and_a_is_unchanged(backend: Backend) {
    let p = spawn_mailing(backend).await;
    let a = &p.account;
    let b_account = p.new_account("b").await;
    point_mail_at_sandbox(&p, &b_account.private).await;
    let s = seed(&p, a).await;
    let (a_owner, _) = sign_in(&p, &s.owner_email).await;
    let (a_reseller, _) = sign_in(&p, &s.reseller_owner).await;
    // B: owner (twice), finance, gate, and a reseller owner.
    let b_owner_email = format!("{}@b.example.com", unique("owner"));
    admin::member_add(&p.store, &b_account.slug, &b_owner_email, "owner").await.expect("b owner");
    let mut b_browsers = Vec::new();
    for role in ["owner", "finance", "gate"] {
        let email = format!("{}@b.example.com", unique(role));
        admin::member_add(&p.store, &b_account.slug, &email, role).await.expect("b member");
        b_browsers.push(sign_in(&p, &email).await.0);
    }
    let b_reseller = format!("{}@b-reseller.example.com", unique("owner"));
    reseller(&p, &b_account, &b_reseller).await;
    let (gate, finance) = (b_browsers.pop().expect("gate"), b_browsers.pop().expect("finance"));
    let leaving = b_browsers.pop().expect("second owner");
    let b = B {
        owner: sign_in(&p, &b_owner_email).await.0,
        owner_email: b_owner_email.clone(),
        finance,
        gate,
        reseller_user: sign_in(&p, &b_reseller).await.0,
        leaving,
    };
    // A sees its own data (the pages are not empty of it), so "unchanged" means something.
    let before = a_state(&p, a, &s, &a_owner, &a_reseller).await;
    let shown = before.to_string();
    assert!(shown.contains(&s.reference) && shown.contains(&s.approval_reason), "A's state holds A's data");
    let markers = s.markers();
    let mut covered = Vec::new();
    for &(method, path) in ROUTES {
        let answers = case(&p, &s, &b, method, path).await;
        for (page, sent) in &answers {
            assert!(page.status < 500, "{method} {path}: {}", page.status);
            // Nothing of A's in B's answer, text or markup, except what B itself sent (which
            // only an echoing input may hold).
            let text = page.texts("body").join(" ");
            for m in markers.iter().filter(|m| !sent.iter().any(|s| s == *m)) {
                assert!(!page.body.contains(m), "{method} {path}: B's answer holds A's {m:?}");
            }
            for m in sent.iter().filter(|_| !["/console/payments", "/console/gate"].contains(&path)) {
                assert!(!text.contains(m.as_str()), "{method} {path}: B's answer shows A's {m:?}");
            }
        }
        // B is still B.
        let team = b.owner.get("/console/team").await;
        assert_eq!(team.status, 200, "{method} {path}: B's owner is still signed in");
        assert!(team.text(".who").contains(&b_owner_email), "{method} {path}: B's session is B's");
        // A is as it was, through the API and A's pages.
        let after = a_state(&p, a, &s, &a_owner, &a_reseller).await;
        assert_eq!(after, before, "{method} {path}: A's state changed");
        covered.push(format!("{method} {path}"));
    }
    assert_eq!(covered.len(), ROUTES.len());
}

//! Integration test: the console in a real browser (D17.29, D17.32, D17.43). Headless Chromium
//! at a phone's size (360×640), driven over W3C WebDriver by a chromedriver this test starts on
//! a free port and stops when it ends. The browser signs in with the mailed passcode, checks a
//! ticket in at the gate page, watches the dashboard's Check-ins figure follow a check-in made
//! through the API (live, within a second), and two finance members request and approve a
//! payout above the account's approval threshold.
//!
//! Without chromedriver on the PATH (or `TESSERA_CHROMEDRIVER`) the test says so and passes,
//! unless `TESSERA_BROWSER_TESTS=1` (CI sets it), where a missing browser is a failure.
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::catalogue::{running_campaign, ticket_type};
use crate::support::client::{send, StatusCode};
use crate::support::console::member;
use crate::support::mail::{mailed_code, spawn_mailing};
use crate::support::payments::{buy, payment, sandbox_settle, PayApp};
use crate::support::server::{drain, Backend, ALL_PRIVATE_SCOPES};
use crate::support::tickets::{code_of, VERIFY};

/// The key W3C WebDriver names an element reference by.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver of this test's own, in its own process group; dropping it ends the group
/// (chromedriver and the browsers it started), by its id.
pub(crate) struct Driver {
    child: Child,
    base: String,
    http: reqwest::Client,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let pgid = self.child.id();
        let _ = Command::new("kill").args(["-TERM", "--", &format!("-{pgid}")]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the browser test must run (CI) rather than be skipped when no browser is present.
fn required() -> bool {
    std::env::var("TESSERA_BROWSER_TESTS").is_ok_and(|v| v == "1")
}

fn chromedriver_path() -> Option<String> {
    let path = std::env::var("TESSERA_CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".to_string());
    let found = Command::new(&path).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    found.is_ok_and(|s| s.success()).then_some(path)
}

impl Driver {
    /// Starts chromedriver on a free loopback port and waits until it is ready. `None` (with
    /// a message) when chromedriver is absent and the test is not required.
    pub(crate) async fn start() -> Option<Driver> {
        let Some(path) = chromedriver_path() else {
            assert!(
                !required(),
                "TESSERA_BROWSER_TESTS=1 but chromedriver is not installed (apt-get install chromium chromium-driver)"
            );
            eprintln!("chromedriver not found: browser test skipped (set TESSERA_BROWSER_TESTS=1 to require it)");
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
        let child = {
            use std::os::unix::process::CommandExt;
            Command::new(path)
                .arg(format!("--port={port}"))
                .arg("--allowed-ips=127.0.0.1")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .expect("start chromedriver")
        };
        let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("client");
        let driver = Driver { child, base: format!("http://127.0.0.1:{port}"), http };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = match driver.http.get(format!("{}/status", driver.base)).send().await {
                Ok(r) => r.json::<Value>().await.ok().is_some_and(|v| v["value"]["ready"] == true),
                Err(_) => false,
            };
            if ready {
                return Some(driver);
            }
            assert!(Instant::now() < deadline, "chromedriver did not become ready on port {port}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A new headless browser at 360×640.
    pub(crate) async fn session(&self) -> Session {
        let mut options = json!({"args": ["--headless=new", "--no-sandbox", "--window-size=360,640", "--disable-gpu",
            "--disable-dev-shm-usage", "--no-first-run"]});
        if let Ok(binary) = std::env::var("TESSERA_CHROMIUM") {
            options["binary"] = json!(binary);
        }
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}});
        let r = self.http.post(format!("{}/session", self.base)).json(&caps).send().await.expect("new session");
        let body: Value = r.json().await.expect("json");
        let id = body["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {body}")).to_string();
        Session { http: self.http.clone(), url: format!("{}/session/{id}", self.base) }
    }
}

/// One browser (a WebDriver session).
pub(crate) struct Session {
    http: reqwest::Client,
    url: String,
}

impl Session {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method.clone(), format!("{}{path}", self.url));
        if let Some(b) = body {
            req = req.json(&b);
        } else if method == reqwest::Method::POST {
            req = req.json(&json!({}));
        }
        let r = req.send().await.unwrap_or_else(|e| panic!("webdriver {path}: {e}"));
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "webdriver {method} {path}: {status} {v}");
        v["value"].clone()
    }

    pub(crate) async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url}))).await;
    }

    pub(crate) async fn current_url(&self) -> String {
        self.call(reqwest::Method::GET, "/url", None).await.as_str().unwrap_or_default().to_string()
    }

    pub(crate) async fn source(&self) -> String {
        self.call(reqwest::Method::GET, "/source", None).await.as_str().unwrap_or_default().to_string()
    }

    /// The elements matching `css` (their WebDriver ids).
    pub(crate) async fn find_all(&self, css: &str) -> Vec<String> {
        let v =
            self.call(reqwest::Method::POST, "/elements", Some(json!({"using": "css selector", "value": css}))).await;
        v.as_array()
            .map(|a| a.iter().filter_map(|e| e[ELEMENT].as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    }

    /// The first element matching `css`, waiting up to 10 s for it to appear.
    pub(crate) async fn find(&self, css: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(id) = self.find_all(css).await.into_iter().next() {
                return id;
            }
            if Instant::now() > deadline {
                panic!("no element {css} at {}:\n{}", self.current_url().await, self.source().await);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Clears the field `css` and types `text` into it.
    pub(crate) async fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.call(reqwest::Method::POST, &format!("/element/{id}/clear"), None).await;
        self.call(reqwest::Method::POST, &format!("/element/{id}/value"), Some(json!({"text": text}))).await;
    }

    pub(crate) async fn click_element(&self, id: &str) {
        self.call(reqwest::Method::POST, &format!("/element/{id}/click"), None).await;
    }

    pub(crate) async fn click(&self, css: &str) {
        let id = self.find(css).await;
        self.click_element(&id).await;
    }

    pub(crate) async fn element_text(&self, id: &str) -> String {
        self.call(reqwest::Method::GET, &format!("/element/{id}/text"), None)
            .await
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    pub(crate) async fn attribute(&self, id: &str, name: &str) -> Option<String> {
        self.call(reqwest::Method::GET, &format!("/element/{id}/attribute/{name}"), None)
            .await
            .as_str()
            .map(str::to_string)
    }

    /// The visible text of the first element matching `css`.
    pub(crate) async fn text(&self, css: &str) -> String {
        let id = self.find(css).await;
        self.element_text(&id).await
    }

    /// Clicks `css` (a form's submit button) and waits up to 10 s for the next document.
    pub(crate) async fn submit(&self, css: &str) {
        let id = self.find(css).await;
        self.submit_element(&id).await;
    }

    pub(crate) async fn submit_element(&self, id: &str) {
        let old = self.find("html").await;
        self.click_element(id).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.find_all("html").await.first() == Some(&old) {
            assert!(Instant::now() < deadline, "the form did not post:\n{}", self.source().await);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits up to 10 s for the page's URL to end with `suffix` (after a form post's redirect).
    pub(crate) async fn wait_for_path(&self, suffix: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let url = self.current_url().await;
            if url.split('?').next().is_some_and(|u| u.ends_with(suffix)) {
                return;
            }
            assert!(Instant::now() < deadline, "still at {url}, expected …{suffix}:\n{}", self.source().await);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Ends the browser.
    pub(crate) async fn quit(self) {
        let _ = self.http.delete(&self.url).send().await;
    }
}

/// The whole number an element shows ("1,204" → 1204).
fn number(text: &str) -> i64 {
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("not a number: {text:?}"))
}

/// Signs `email` in through the sign-in pages in `browser`: types the e-mail, submits, reads
/// the passcode from the sandbox's mail, types it, submits; lands on `landing`.
pub(crate) async fn browser_sign_in(p: &PayApp, browser: &Session, email: &str, landing: &str) {
    browser.goto(&p.url("/console")).await;
    browser.type_into("#f-email", email).await;
    browser.click("form[action=\"/console/sign-in\"] button[type=submit]").await;
    browser.find("#f-passcode").await;
    drain(p).await;
    let code = mailed_code(p, email).expect("a passcode was mailed");
    browser.type_into("#f-passcode", &code).await;
    browser.submit("form[action=\"/console/sign-in/verify\"] button[type=submit]").await;
    browser.wait_for_path(landing).await;
    let out = browser.text("form[action=\"/console/sign-out\"] button").await;
    assert_eq!(out, "Sign out");
}

/// A paid purchase of `n` tickets of 50 GHS through the sandbox; the ticket codes.
async fn sold(p: &PayApp, n: i64) -> Vec<String> {
    let key = &p.account.private;
    let c = running_campaign(p, key, "ticketing").await;
    let t = ticket_type(p, key, &c, 50.0, 10).await;
    let reference = buy(p, &c, &t, n).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
    let paid = payment(p, &reference).await;
    assert_eq!(paid["status"], "success", "{paid}");
    paid["tickets"].as_array().expect("tickets").iter().map(code_of).collect()
}

on_both!(a_phone_sized_browser_signs_in_checks_in_sees_live_counts_and_two_members_approve_a_payout);

async fn a_phone_sized_browser_signs_in_checks_in_sees_live_counts_and_two_members_approve_a_payout(b: Backend) {
    let Some(driver) = Driver::start().await else { return };
    let p = spawn_mailing(b).await;
    let codes = sold(&p, 2).await;

    // The owner signs in with the mailed passcode and checks the first ticket in at the gate.
    let owner = member(&p, "owner").await;
    let browser = driver.session().await;
    browser_sign_in(&p, &browser, &owner, "/console").await;
    browser.goto(&p.url("/console/gate")).await;
    let before = number(&browser.text("#checkins").await);
    browser.type_into("#f-code", &codes[0]).await;
    browser.click("#gate-form button[type=submit]").await;
    let verdict = browser.find("#verdict").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while browser.element_text(&verdict).await != "Checked in" {
        assert!(Instant::now() < deadline, "gate verdict:\n{}", browser.source().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = number(&browser.text("#checkins").await);
    assert_eq!(after, before + 1, "the gate's counter counts the check-in");

    // The dashboard, scripts on: a check-in made through the API shows within a second.
    browser.goto(&p.url("/console")).await;
    let figure = browser.find("#fig-check-ins").await;
    assert_eq!(browser.attribute(&figure, "data-live").await.as_deref(), Some("checkIns"));
    assert_eq!(number(&browser.element_text(&figure).await), after);
    let r =
        send(&p, &p.account.private, Method::POST, VERIFY, Some(json!({"ticketCode": codes[1], "autoVerify": true})))
            .await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["data"]["result"], "checked_in");
    let called = Instant::now();
    let mut shown = number(&browser.element_text(&figure).await);
    while shown != after + 1 && called.elapsed() < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        shown = number(&browser.element_text(&figure).await);
    }
    assert_eq!(shown, after + 1, "Check-ins updated live within 1 s (waited {:?})", called.elapsed());
    eprintln!("the dashboard showed the API's check-in after {:?}", called.elapsed());
    browser.quit().await;

    // Payouts above 10 GHS need a second finance member's approval (D17.30).
    let _: Value = p
        .api()
        .patch(
            "/api/white-label/v1/settings/operations",
            &json!({"config": {"withdrawalApprovalAbove": 10}}),
            StatusCode::OK,
        )
        .await;
    let first = member(&p, "finance").await;
    let asker = driver.session().await;
    browser_sign_in(&p, &asker, &first, "/console").await;
    asker.goto(&p.url("/console/withdrawals")).await;
    for (field, value) in [
        ("amount", "25"),
        ("bank_name", "MTN Mobile Money"),
        ("bank_code", "MTN"),
        ("account_number", "0241234567"),
        ("account_name", "Ama Mensah"),
    ] {
        asker.type_into(&format!("#f-{field}"), value).await;
    }
    asker.submit("form[action=\"/console/withdrawals\"] button[type=submit]").await;
    asker.wait_for_path("/console/withdrawals").await;
    assert!(asker.find_all(".error").await.is_empty(), "refused:\n{}", asker.source().await);
    asker.quit().await;
    let key = p.create_key(&p.account.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    let listed: Value =
        p.api_as(&key).get("/api/white-label/v1/withdrawals?status=awaiting_approval", StatusCode::OK).await;
    let waiting = listed["data"].as_array().expect("withdrawals");
    assert_eq!(waiting.len(), 1, "the request waits for approval: {listed}");
    assert_eq!(waiting[0]["amount"], json!(25));
    let id = waiting[0]["id"].as_str().expect("id").to_string();

    let second = member(&p, "finance").await;
    let approver = driver.session().await;
    browser_sign_in(&p, &approver, &second, "/console").await;
    approver.goto(&p.url("/console/withdrawals")).await;
    let form = format!("form[action=\"/console/withdrawals/{id}/decide\"]");
    approver.find(&form).await;
    let mut approve = None;
    for button in approver.find_all(&format!("{form} button")).await {
        let value = approver.attribute(&button, "value").await.unwrap_or_default();
        let text = approver.element_text(&button).await;
        if value == "approved" || text.starts_with("Approve") {
            approve = Some(button);
        }
    }
    let approve = approve.unwrap_or_else(|| panic!("no Approve button in {form}"));
    approver.submit_element(&approve).await;
    approver.wait_for_path("/console/withdrawals").await;
    assert!(approver.find_all(".error").await.is_empty(), "refused:\n{}", approver.source().await);
    approver.quit().await;
    let shown: Value = p.api_as(&key).get(&format!("/api/white-label/v1/withdrawals/{id}"), StatusCode::OK).await;
    // Approved: no longer awaiting approval, on its way to the payout (not cancelled).
    let status = shown["data"]["status"].as_str().unwrap_or_default();
    assert!(matches!(status, "pending" | "processing" | "completed"), "approved: {shown}");
    drop(driver);
}

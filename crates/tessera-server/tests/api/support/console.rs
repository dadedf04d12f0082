//! The console as a browser without JavaScript uses it: pages fetched and parsed, forms posted
//! with the hidden inputs the page carried (the CSRF token among them), cookies kept.
use std::collections::BTreeMap;
use std::sync::Mutex;

use scraper::{Html, Selector};
use tessera_server::cli::admin;

use super::mail::{mailed_code, spawn_mailing};
use super::payments::PayApp;
use super::server::{drain, Backend};

/// One fetched page: status, headers, body and its parsed document.
pub struct Page {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Page {
    pub fn doc(&self) -> Html {
        Html::parse_document(&self.body)
    }

    /// The texts of every element matching `css`, whitespace collapsed.
    pub fn texts(&self, css: &str) -> Vec<String> {
        let sel = Selector::parse(css).unwrap_or_else(|e| panic!("selector {css}: {e:?}"));
        self.doc()
            .select(&sel)
            .map(|e| e.text().collect::<Vec<_>>().join(" ").split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    }

    /// The text of the first element matching `css` ("" when none).
    pub fn text(&self, css: &str) -> String {
        self.texts(css).into_iter().next().unwrap_or_default()
    }

    /// An attribute of every element matching `css`.
    pub fn attrs(&self, css: &str, attr: &str) -> Vec<String> {
        let sel = Selector::parse(css).unwrap_or_else(|e| panic!("selector {css}: {e:?}"));
        self.doc().select(&sel).filter_map(|e| e.value().attr(attr).map(str::to_string)).collect()
    }

    pub fn has(&self, css: &str) -> bool {
        !self.attrs(css, "").is_empty() || {
            let sel = Selector::parse(css).unwrap_or_else(|e| panic!("selector {css}: {e:?}"));
            self.doc().select(&sel).next().is_some()
        }
    }

    /// Where a 303 points.
    pub fn location(&self) -> Option<String> {
        self.headers.get("location").and_then(|v| v.to_str().ok()).map(str::to_string)
    }

    /// The hidden inputs (and preset values) of the form whose `action` is `action`.
    pub fn form_fields(&self, action: &str) -> BTreeMap<String, String> {
        let doc = self.doc();
        let form_sel = Selector::parse(&format!("form[action=\"{action}\"]")).expect("form selector");
        let input_sel = Selector::parse("input[name]").expect("input selector");
        let form =
            doc.select(&form_sel).next().unwrap_or_else(|| panic!("no form posting to {action} in:\n{}", self.body));
        form.select(&input_sel)
            .filter(|i| i.value().attr("type") == Some("hidden"))
            .map(|i| {
                (
                    i.value().attr("name").unwrap_or_default().to_string(),
                    i.value().attr("value").unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    /// The error shown beside field `name` (`#e-<name>`), if any.
    pub fn field_error(&self, name: &str) -> Option<String> {
        let t = self.text(&format!("#e-{name}"));
        (!t.is_empty()).then_some(t)
    }
}

/// A browser without JavaScript: keeps cookies, follows nothing by itself.
pub struct Browser {
    pub http: reqwest::Client,
    pub base: String,
    cookies: Mutex<BTreeMap<String, String>>,
}

impl Browser {
    pub fn new(p: &PayApp) -> Browser {
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        Browser { http, base: p.url(""), cookies: Mutex::new(BTreeMap::new()) }
    }

    fn cookie_header(&self) -> String {
        let jar = self.cookies.lock().expect("jar");
        jar.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    fn keep_cookies(&self, headers: &reqwest::header::HeaderMap) {
        let mut jar = self.cookies.lock().expect("jar");
        for v in headers.get_all("set-cookie") {
            let v = v.to_str().unwrap_or_default();
            let first = v.split(';').next().unwrap_or_default();
            if let Some((k, val)) = first.split_once('=') {
                if val.is_empty() || v.contains("Max-Age=0") {
                    jar.remove(k);
                } else {
                    jar.insert(k.to_string(), val.to_string());
                }
            }
        }
    }

    /// The session cookie's value, if any.
    pub fn session_cookie(&self) -> Option<String> {
        self.cookies.lock().expect("jar").get("tessera_console").cloned()
    }

    pub fn set_cookie(&self, name: &str, value: &str) {
        self.cookies.lock().expect("jar").insert(name.to_string(), value.to_string());
    }

    /// Sends `req` with the browser's cookies and keeps the ones it sets.
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Page {
        let r = req.header("cookie", self.cookie_header()).send().await.expect("send");
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        self.keep_cookies(&headers);
        let body = r.text().await.expect("body");
        Page { status, headers, body }
    }

    pub async fn get(&self, path: &str) -> Page {
        self.send(self.http.get(format!("{}{path}", self.base))).await
    }

    /// Posts exactly `fields` to `path`.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
        let req = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        self.send(req).await
    }

    /// Submits the form of `page` posting to `action`: its hidden inputs plus `fields`.
    pub async fn submit(&self, page: &Page, action: &str, fields: &[(&str, &str)]) -> Page {
        let mut all = page.form_fields(action);
        for (k, v) in fields {
            all.insert(k.to_string(), v.to_string());
        }
        let pairs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        self.post(action, &pairs).await
    }
}

/// Adds a member of the test account with `role`; its e-mail.
pub async fn member(p: &PayApp, role: &str) -> String {
    let email = format!("{role}-{}@org.example.com", uuid::Uuid::now_v7().simple());
    admin::member_add(&p.store, &p.account.slug, &email, role).await.expect("member add");
    email
}

/// Signs `email` in through the pages: e-mail form, mailed passcode, passcode form. Returns
/// the browser (its session cookie set) and where the sign-in sent it.
pub async fn sign_in(p: &PayApp, email: &str) -> (Browser, String) {
    let b = Browser::new(p);
    let form = b.get("/console").await;
    assert_eq!(form.status, 200, "{}", form.body);
    let asked = b.submit(&form, "/console/sign-in", &[("email", email)]).await;
    assert_eq!(asked.status, 200, "{}", asked.body);
    drain(p).await;
    let code = mailed_code(p, email).expect("a passcode was mailed");
    let done = b.submit(&asked, "/console/sign-in/verify", &[("passcode", &code)]).await;
    assert_eq!(done.status, 303, "{}", done.body);
    let to = done.location().expect("location");
    assert!(b.session_cookie().is_some(), "a session cookie");
    (b, to)
}

/// A mailing server (sandbox SMTP) and a member of its account with `role`, signed in.
pub async fn signed_in(b: Backend, role: &str) -> (PayApp, Browser, String) {
    let p = spawn_mailing(b).await;
    let email = member(&p, role).await;
    let (browser, _) = sign_in(&p, &email).await;
    (p, browser, email)
}

//! Integration tests: every console page a role may open, checked as a whole document (D17.29,
//! D17.43) with no browser: status 200, under 100 KB with a realistic seed of payments, one
//! `h1` and unique ids, every visible input and select labelled by `<label for>`, every post
//! form carrying its CSRF token, a "Sign out" control, nothing fetched or linked from another
//! origin, and every navigation link answering 200 for its role. Also the default theme's
//! colours: the text, link, button and error colours the stylesheet's header comment names
//! (and every other colour rule) meet WCAG AA contrast (4.5:1).
use std::collections::{BTreeMap, BTreeSet};

use scraper::{Html, Selector};
use serde_json::json;

use crate::support::catalogue::{running_campaign, ticket_type};
use crate::support::console::{member, sign_in, Browser, Page};
use crate::support::mail::spawn_mailing;
use crate::support::payments::{buy, sandbox_settle, PayApp};
use crate::support::server::{drain, spawn, Backend};

/// Pages stay small even on a busy account (common rules: under 100 KB).
const MAX_PAGE_BYTES: usize = 100 * 1024;

fn sel(css: &str) -> Selector {
    Selector::parse(css).unwrap_or_else(|e| panic!("selector {css}: {e:?}"))
}

/// A realistic small account: a ticketing campaign with two ticket types, 24 purchases of
/// which 20 are paid and 4 still pending, and a voting campaign. The ticketing campaign's id.
async fn seeded(p: &PayApp) -> String {
    let key = &p.account.private;
    let c = running_campaign(p, key, "ticketing").await;
    let general = ticket_type(p, key, &c, 25.5, 200).await;
    let vip = ticket_type(p, key, &c, 120.0, 50).await;
    for i in 0..24 {
        let t = if i % 3 == 0 { &vip } else { &general };
        let reference = buy(p, &c, t, 1 + i % 2).await["reference"].as_str().expect("reference").to_string();
        if i % 6 != 5 {
            sandbox_settle(p, &reference, "succeed", json!({})).await;
        }
    }
    drain(p).await;
    running_campaign(p, key, "voting").await;
    c
}

/// Every check a page must pass; `path` names it in the failures.
fn check_page(p: &PayApp, path: &str, page: &Page) {
    assert_eq!(page.status, 200, "{path}: {}", page.body);
    assert!(page.body.len() < MAX_PAGE_BYTES, "{path} is {} bytes", page.body.len());
    let ctype = page.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(ctype.starts_with("text/html"), "{path}: content-type {ctype}");
    assert!(page.body.trim_start().to_lowercase().starts_with("<!doctype html>"), "{path}: a doctype");
    let doc = Html::parse_document(&page.body);
    assert!(doc.select(&sel("html[lang]")).next().is_some(), "{path}: <html lang>");
    assert!(!page.text("title").is_empty(), "{path}: a title");
    assert_eq!(doc.select(&sel("h1")).count(), 1, "{path}: one h1");
    let mut ids = BTreeSet::new();
    for e in doc.select(&sel("[id]")) {
        let id = e.value().attr("id").unwrap_or_default();
        assert!(ids.insert(id.to_string()), "{path}: id {id:?} twice");
    }
    assert!(page.texts("button").iter().any(|t| t == "Sign out"), "{path}: a Sign out control");
    check_labels(path, &doc);
    check_forms(path, &doc);
    check_origins(p, path, &doc);
}

/// Every input a person fills (not hidden, not a button) and every select and textarea has an
/// id named by a `<label for>` with words in it.
fn check_labels(path: &str, doc: &Html) {
    let labels: BTreeMap<String, String> = doc
        .select(&sel("label[for]"))
        .map(|l| {
            (l.value().attr("for").unwrap_or_default().to_string(), l.text().collect::<String>().trim().to_string())
        })
        .collect();
    for e in doc.select(&sel("input, select, textarea")) {
        let kind = e.value().attr("type").unwrap_or("text").to_ascii_lowercase();
        if e.value().name() == "input" && matches!(kind.as_str(), "hidden" | "submit" | "button" | "reset" | "image") {
            continue;
        }
        let name = e.value().attr("name").unwrap_or_default();
        let id =
            e.value().attr("id").unwrap_or_else(|| panic!("{path}: <{} name={name:?}> has no id", e.value().name()));
        let label = labels.get(id).unwrap_or_else(|| panic!("{path}: no <label for={id:?}>"));
        assert!(!label.is_empty(), "{path}: the label for {id} is empty");
    }
}

/// Every post form carries a non-empty hidden `csrf` input (D17.28).
fn check_forms(path: &str, doc: &Html) {
    let token = sel("input[type=hidden][name=csrf]");
    for form in doc.select(&sel("form")) {
        let method = form.value().attr("method").unwrap_or("get").to_ascii_lowercase();
        let action = form.value().attr("action").unwrap_or_default();
        if method != "post" {
            continue;
        }
        assert!(action.starts_with("/console"), "{path}: a form posts to {action:?}");
        let value = form.select(&token).next().and_then(|i| i.value().attr("value")).unwrap_or_default();
        assert!(!value.is_empty(), "{path}: the form posting to {action} has no CSRF token");
    }
}

/// No attribute fetches or links anything from another origin (assets are embedded, D17.29).
fn check_origins(p: &PayApp, path: &str, doc: &Html) {
    let own = p.url("");
    for e in doc.select(&sel("*")) {
        for (name, value) in e.value().attrs() {
            if !matches!(name, "src" | "href" | "action" | "srcset" | "poster" | "data" | "formaction" | "manifest") {
                continue;
            }
            let v = value.trim().to_ascii_lowercase();
            let absolute = v.starts_with("http:") || v.starts_with("https:") || v.starts_with("//");
            assert!(
                !absolute || v.starts_with(&own),
                "{path}: <{} {name}={value:?}> points to another origin",
                e.value().name()
            );
        }
    }
}

/// At most this many pages are followed per role (the seed is small; the bound keeps a page
/// full of links from making the test slow).
const MAX_PAGES_PER_ROLE: usize = 80;

/// Signs `email` (a member, or a reseller portal user) in and checks the pages `extra` plus every page its navigation links,
/// then every page those link to in turn (figures, rows, pagers): each answers 200 and passes
/// [`check_page`], so the console is usable by plain links without scripts. The navigation's
/// paths.
async fn every_page_of(p: &PayApp, email: &str, extra: &[String]) -> BTreeSet<String> {
    let role = email.split('-').next().unwrap_or_default();
    let (browser, landing): (Browser, String) = sign_in(p, email).await;
    let first = browser.get(&landing).await;
    check_page(p, &landing, &first);
    let nav: BTreeSet<String> = first.attrs("nav a", "href").into_iter().collect();
    assert!(!nav.is_empty(), "{role}: a navigation");
    let mut seen: BTreeSet<String> = BTreeSet::from([landing.clone()]);
    let mut queue: Vec<String> = nav.iter().chain(extra).cloned().collect();
    while let Some(path) = queue.pop() {
        if !seen.insert(path.clone()) || seen.len() > MAX_PAGES_PER_ROLE {
            continue;
        }
        let page = browser.get(&path).await;
        assert_eq!(page.status, 200, "{role} follows a link to {path}: {}", page.body);
        check_page(p, &path, &page);
        let here: BTreeSet<String> = page.attrs("nav a", "href").into_iter().collect();
        assert_eq!(here, nav, "{role} at {path}: the same navigation");
        for href in page.attrs("a[href]", "href") {
            let href = href.split('#').next().unwrap_or_default().to_string();
            if href.starts_with("/console") && !href.starts_with("/console/assets") && !seen.contains(&href) {
                queue.push(href);
            }
        }
    }
    eprintln!("{role}: {} pages checked", seen.len());
    nav
}

on_both!(
    every_page_each_role_opens_is_labelled_protected_small_and_self_contained,
    the_default_theme_meets_wcag_aa_contrast,
    an_unknown_console_path_is_an_html_404_page,
);

async fn every_page_each_role_opens_is_labelled_protected_small_and_self_contained(b: Backend) {
    let p = spawn_mailing(b).await;
    let campaign = seeded(&p).await;
    let detail = [format!("/console/campaigns/{campaign}")];
    let owner = every_page_of(&p, &member(&p, "owner").await, &detail).await;
    for path in [
        "/console",
        "/console/campaigns",
        "/console/payments",
        "/console/ledger",
        "/console/withdrawals",
        "/console/team",
        "/console/gate",
    ] {
        assert!(owner.contains(path), "the owner opens {path}: {owner:?}");
    }
    let manager = every_page_of(&p, &member(&p, "manager").await, &detail).await;
    assert!(manager.contains("/console/campaigns"), "{manager:?}");
    let finance = every_page_of(&p, &member(&p, "finance").await, &[]).await;
    assert!(finance.contains("/console/withdrawals"), "{finance:?}");
    let gate = every_page_of(&p, &member(&p, "gate").await, &[]).await;
    assert_eq!(gate, BTreeSet::from(["/console/gate".to_string()]));
    // A reseller portal user's console (D17.30).
    let reseller_owner = format!("reseller-{}@reseller.example.com", uuid::Uuid::now_v7().simple());
    crate::support::portal::reseller(&p, &p.account, &reseller_owner).await;
    let reseller = every_page_of(&p, &reseller_owner, &["/console/reseller".to_string()]).await;
    assert!(reseller.contains("/console/reseller"), "{reseller:?}");
    // The sign-in page, before any session: labelled, its form protected, self-contained.
    let anon = Browser::new(&p);
    let form = anon.get("/console").await;
    assert_eq!(form.status, 200);
    let doc = Html::parse_document(&form.body);
    check_labels("sign-in", &doc);
    check_forms("sign-in", &doc);
    check_origins(&p, "sign-in", &doc);
    // The embedded assets load nothing from elsewhere either.
    for asset in ["console.css", "console.js"] {
        let r = anon.get(&format!("/console/assets/{asset}")).await;
        assert_eq!(r.status, 200, "{asset}");
        assert!(!r.body.contains("://") && !r.body.contains("@import"), "{asset} reaches another origin");
    }
}

// ---------------------------------------------------------------------------------------------
// Contrast (WCAG 2.x relative luminance).

type Rgb = (u8, u8, u8);

fn colour(v: &str) -> Option<Rgb> {
    let v = v.trim().trim_end_matches("!important").trim().to_ascii_lowercase();
    match v.as_str() {
        "white" => return Some((255, 255, 255)),
        "black" => return Some((0, 0, 0)),
        _ => {}
    }
    let hex = v.strip_prefix('#')?;
    let hex: String = match hex.len() {
        3 => hex.chars().flat_map(|c| [c, c]).collect(),
        6 => hex.to_string(),
        _ => return None,
    };
    let n = u32::from_str_radix(&hex, 16).ok()?;
    Some(((n >> 16) as u8, (n >> 8) as u8, n as u8))
}

fn luminance((r, g, b): Rgb) -> f64 {
    let lin = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.03928 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
}

fn contrast(a: Rgb, b: Rgb) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// The stylesheet's rules, flattened (the rules inside `@media` blocks included): selector and
/// declarations (property → value).
fn rules(css: &str) -> Vec<(String, BTreeMap<String, String>)> {
    let mut out = Vec::new();
    let mut rest = css;
    while let Some(open) = rest.find('{') {
        let selector = rest[..open].trim().to_string();
        let mut depth = 0;
        let mut close = open;
        for (i, ch) in rest[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let body = &rest[open + 1..close];
        if selector.starts_with('@') {
            out.extend(rules(body));
        } else {
            let decls = body
                .split(';')
                .filter_map(|d| d.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            out.push((selector, decls));
        }
        rest = &rest[close + 1..];
    }
    out
}

/// The colour a rule paints its background with, if it names a plain one.
fn background(decls: &BTreeMap<String, String>) -> Option<Rgb> {
    decls
        .get("background-color")
        .and_then(|v| colour(v))
        .or_else(|| decls.get("background").and_then(|v| v.split_whitespace().find_map(colour)))
}

async fn the_default_theme_meets_wcag_aa_contrast(b: Backend) {
    let app = spawn(b).await;
    let r = app.http.get(app.url("/console/assets/console.css")).send().await.expect("css");
    assert_eq!(r.status().as_u16(), 200);
    let css = r.text().await.expect("css");
    // The header comment names the theme: "Text #1a1a1a on #ffffff (contrast 17.4:1), links and
    // buttons #0b4f8a on white (8.4:1), errors #a4161a (7.8:1)".
    let header = css.split("*/").next().and_then(|c| c.split("/*").nth(1)).expect("a header comment");
    let uncommented: String = {
        let mut s = String::new();
        let mut rest = css.as_str();
        while let Some(start) = rest.find("/*") {
            s.push_str(&rest[..start]);
            rest = rest[start..].split_once("*/").map(|(_, r)| r).unwrap_or("");
        }
        s.push_str(rest);
        s
    };
    let rules = rules(&uncommented);
    let rule = |selector: &str| -> &BTreeMap<String, String> {
        &rules
            .iter()
            .find(|(s, _)| s.split(',').any(|x| x.trim() == selector))
            .unwrap_or_else(|| panic!("no rule {selector}"))
            .1
    };
    let page_bg = background(rule("html")).unwrap_or((255, 255, 255));
    let text = colour(&rule("html")["color"]).expect("the text colour");
    let mut named = 0;
    for clause in header.split(',') {
        let words: Vec<&str> = clause.split(|c: char| c.is_whitespace() || c == '(' || c == ')').collect();
        let colours: Vec<Rgb> = words.iter().filter_map(|w| colour(w.trim_end_matches('.'))).collect();
        let Some(&fg) = colours.first() else { continue };
        let bg = colours.get(1).copied().unwrap_or(page_bg);
        let ratio = contrast(fg, bg);
        assert!(ratio >= 4.5, "{clause:?}: {ratio:.2}:1");
        if let Some(claimed) = words.iter().find_map(|w| w.strip_suffix(":1").and_then(|n| n.parse::<f64>().ok())) {
            assert!((ratio - claimed).abs() < 0.15, "{clause:?} claims {claimed}:1, computes {ratio:.2}:1");
        }
        // The colour the comment names is the one the stylesheet uses.
        assert!(
            rules.iter().any(|(_, d)| d.values().any(|v| v.split_whitespace().any(|w| colour(w) == Some(fg)))),
            "{clause:?}: the stylesheet does not use it"
        );
        named += 1;
    }
    assert!(named >= 3, "the header comment names the text, link/button and error colours: {header}");
    assert_eq!(contrast(text, page_bg), contrast(colour("#1a1a1a").expect("hex"), (255, 255, 255)));
    let link = colour(&rule("a")["color"]).expect("link colour");
    assert!(contrast(link, page_bg) >= 4.5, "links");
    let button = rule("button");
    let (bfg, bbg) = (colour(&button["color"]).expect("button text"), background(button).expect("button background"));
    assert!(contrast(bfg, bbg) >= 4.5, "buttons: {:.2}:1", contrast(bfg, bbg));
    // Every rule that sets a text colour or a background keeps its text readable; the header
    // bar's children sit on the header's background.
    let header_bg = background(rule(".top")).unwrap_or(page_bg);
    for (selector, decls) in &rules {
        if selector.contains("video") || selector.contains("img") {
            continue;
        }
        let fg = decls.get("color").and_then(|v| colour(v));
        let bg = background(decls);
        if fg.is_none() && bg.is_none() {
            continue;
        }
        let within_header =
            selector.starts_with(".top") || selector.starts_with(".who") || selector.starts_with(".sign-out");
        let (fg, bg) = (fg.unwrap_or(text), bg.unwrap_or(if within_header { header_bg } else { page_bg }));
        let ratio = contrast(fg, bg);
        assert!(ratio >= 4.5, "{selector}: {ratio:.2}:1");
    }
}

#[test]
fn contrast_matches_the_wcag_examples() {
    assert!((contrast((0, 0, 0), (255, 255, 255)) - 21.0).abs() < 0.01);
    assert!((contrast((255, 255, 255), (255, 255, 255)) - 1.0).abs() < 1e-9);
    assert!((contrast(colour("#767676").expect("hex"), (255, 255, 255)) - 4.54).abs() < 0.01);
    assert_eq!(colour("#fff"), Some((255, 255, 255)));
    let parsed = rules("a { color: #0b4f8a; } @media (max-width: 1px) { main { padding: 8px; } }");
    assert_eq!(parsed.len(), 2);
    assert_eq!(parsed[1].0, "main");
}

/// A path under /console that is no page answers a page too: 404 in HTML, signed in or not, for
/// any method (the API's JSON 404 is for the API's paths).
async fn an_unknown_console_path_is_an_html_404_page(b: Backend) {
    let p = spawn_mailing(b).await;
    let (owner, _) = sign_in(&p, &member(&p, "owner").await).await;
    let anon = Browser::new(&p);
    for browser in [&owner, &anon] {
        for path in ["/console/nope", "/console/campaigns/a/b", "/console/assets/x/y.css"] {
            let page = browser.get(path).await;
            assert_eq!(page.status, 404, "{path}: {}", page.body);
            let ct = page.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
            assert!(ct.starts_with("text/html"), "{path}: {ct}");
            assert!(page.text("main").contains("No such page."), "{path}: {}", page.body);
        }
        let posted = browser.post("/console/nope", &[("csrf", "x")]).await;
        assert_eq!(posted.status, 404, "{}", posted.body);
    }
    // The API's unknown paths keep the JSON envelope.
    let r = p.http.get(p.url("/api/white-label/v1/nope")).send().await.expect("send");
    assert_eq!(r.status().as_u16(), 404);
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(body["success"], false, "{body}");
}

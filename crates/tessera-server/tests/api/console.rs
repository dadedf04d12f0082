//! Integration tests: the console (D17.28–32, D17.43) through the real server, as a browser
//! without JavaScript uses it: pages fetched, their HTML parsed, forms posted with the hidden
//! inputs the page carried (the CSRF token among them), cookies kept. Passcodes come from the
//! sandbox's SMTP sink. Also the harness (`Browser`, `sign_in`) the other console test files
//! use.

use tessera_server::cli::admin;

use crate::support::console::{member, sign_in, signed_in, Browser};
use crate::support::mail::{mailed_code, spawn_mailing};
use crate::support::server::{drain, Backend};

on_both!(
    a_member_signs_in_with_a_mailed_passcode_lands_by_role_and_signs_out,
    sign_in_forms_send_bad_input_back_with_the_error_beside_the_field,
    forms_without_the_csrf_token_or_from_another_site_are_refused,
    a_gate_member_sees_only_the_gate_page_and_gets_403_elsewhere,
    removing_a_member_ends_their_sessions,
    a_member_of_two_accounts_switches_between_them_from_the_header,
    console_form_posts_count_against_the_per_ip_limit_and_are_refused_as_a_page,
);

async fn a_member_signs_in_with_a_mailed_passcode_lands_by_role_and_signs_out(b: Backend) {
    let p = spawn_mailing(b).await;
    // Without a session, /console is the sign-in form: an e-mail field, then a passcode field.
    let anon = Browser::new(&p);
    let form = anon.get("/console").await;
    assert_eq!(form.status, 200);
    assert_eq!(form.text("label[for=f-email]"), "E-mail");
    assert!(form.form_fields("/console/sign-in").contains_key("csrf"), "CSRF token is a hidden input");
    let cookie = form
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");
    // Other pages send an anonymous browser to the sign-in form.
    let ledger = anon.get("/console/ledger").await;
    assert_eq!((ledger.status, ledger.location().as_deref()), (303, Some("/console")));

    for (role, landing) in
        [("owner", "/console"), ("finance", "/console"), ("manager", "/console"), ("gate", "/console/gate")]
    {
        let email = member(&p, role).await;
        // The e-mail is matched case-insensitively (D17.10).
        let (browser, to) = sign_in(&p, &email.to_uppercase()).await;
        assert_eq!(to, landing, "{role} lands on {landing}");
        let page = browser.get(landing).await;
        assert_eq!(page.status, 200, "{role}: {}", page.body);
        assert!(page.texts("button").iter().any(|t| t == "Sign out"), "{role}: a Sign out control");
        let links = page.attrs("nav a", "href");
        let expected: &[&str] = match role {
            "owner" => &[
                "/console",
                "/console/campaigns",
                "/console/payments",
                "/console/ledger",
                "/console/withdrawals",
                "/console/team",
                "/console/gate",
            ],
            "manager" => &["/console", "/console/campaigns", "/console/payments"],
            "finance" => &["/console", "/console/payments", "/console/ledger", "/console/withdrawals"],
            _ => &["/console/gate"],
        };
        assert_eq!(links, expected, "{role}'s navigation");
        let session = browser.session_cookie().expect("session");
        let out = browser.submit(&page, "/console/sign-out", &[]).await;
        assert_eq!((out.status, out.location().as_deref()), (303, Some("/console")));
        // The ended session's cookie no longer opens anything.
        let stale = Browser::new(&p);
        stale.set_cookie("tessera_console", &session);
        let again = stale.get(landing).await;
        assert!(again.status == 303 || again.has("#f-email"), "{role}: signed out: {}", again.body);
    }
}

async fn sign_in_forms_send_bad_input_back_with_the_error_beside_the_field(b: Backend) {
    let p = spawn_mailing(b).await;
    let email = member(&p, "owner").await;
    let browser = Browser::new(&p);
    let form = browser.get("/console").await;
    let bad = browser.submit(&form, "/console/sign-in", &[("email", "not-an-email")]).await;
    assert_eq!(bad.status, 400);
    assert!(bad.field_error("email").is_some(), "{}", bad.body);
    assert_eq!(bad.attrs("#f-email", "value"), vec!["not-an-email".to_string()], "the value comes back");
    // An unknown address gets the same answer as a member's, and no mail.
    let unknown = browser.submit(&bad, "/console/sign-in", &[("email", "nobody@nowhere.example.com")]).await;
    assert_eq!(unknown.status, 200);
    assert_eq!(unknown.text("label[for=f-passcode]"), "Passcode");
    let asked = browser.submit(&bad, "/console/sign-in", &[("email", &email)]).await;
    drain(&p).await;
    let code = mailed_code(&p, &email).expect("mailed");
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let refused = browser.submit(&asked, "/console/sign-in/verify", &[("passcode", wrong)]).await;
    assert_eq!(refused.status, 400);
    assert!(refused.field_error("passcode").is_some_and(|e| e.contains("4 tries left")), "{}", refused.body);
    let short = browser.submit(&asked, "/console/sign-in/verify", &[("passcode", "12")]).await;
    assert_eq!(short.status, 400);
    assert!(short.field_error("passcode").is_some());
    let ok = browser.submit(&asked, "/console/sign-in/verify", &[("passcode", &code)]).await;
    assert_eq!(ok.status, 303, "{}", ok.body);
    // A used passcode does not open a second session.
    let reused = Browser::new(&p);
    let f = reused.get("/console").await;
    let mut fields = asked.form_fields("/console/sign-in/verify");
    fields.insert("csrf".into(), f.form_fields("/console/sign-in")["csrf"].clone());
    fields.insert("passcode".into(), code.clone());
    let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let again = reused.post("/console/sign-in/verify", &pairs).await;
    assert_eq!(again.status, 400, "{}", again.body);
    assert!(reused.session_cookie().is_none());
}

async fn forms_without_the_csrf_token_or_from_another_site_are_refused(b: Backend) {
    let (p, browser, _) = signed_in(b, "owner").await;
    let page = browser.get("/console").await;
    // Sign-out without the token, with a wrong one, or posted from another origin: 403, and
    // the session stays.
    assert_eq!(browser.post("/console/sign-out", &[]).await.status, 403);
    assert_eq!(browser.post("/console/sign-out", &[("csrf", "0000")]).await.status, 403);
    let csrf = page.form_fields("/console/sign-out")["csrf"].clone();
    let cross = browser
        .send(
            browser
                .http
                .post(format!("{}/console/sign-out", browser.base))
                .header("origin", "https://evil.example.com")
                .header("content-type", "application/x-www-form-urlencoded")
                .body(format!("csrf={csrf}")),
        )
        .await;
    assert_eq!(cross.status, 403);
    assert_eq!(browser.get("/console").await.status, 200, "still signed in");
    // The sign-in form's token is bound to its pre-session cookie.
    let other = Browser::new(&p);
    let r = other.post("/console/sign-in", &[("email", "a@b.example.com"), ("csrf", &csrf)]).await;
    assert_eq!(r.status, 403);
}

async fn a_gate_member_sees_only_the_gate_page_and_gets_403_elsewhere(b: Backend) {
    let (p, browser, _) = signed_in(b, "gate").await;
    assert_eq!(browser.get("/console/gate").await.status, 200);
    for path in [
        "/console/campaigns",
        "/console/payments",
        "/console/ledger",
        "/console/withdrawals",
        "/console/team",
        "/console/reseller",
    ] {
        let r = browser.get(path).await;
        assert_eq!(r.status, 403, "{path}: {}", r.body);
    }
    let home = browser.get("/console").await;
    assert_eq!((home.status, home.location().as_deref()), (303, Some("/console/gate")));
    drop(p);
}

/// A person who is a member of two accounts signs in to the older membership and switches to
/// the other from the header's account list: a new session in that account with that role, the
/// old one ended. Another person's member id is 404; the form needs its CSRF token; a member of
/// one account sees no list.
async fn a_member_of_two_accounts_switches_between_them_from_the_header(b: Backend) {
    let p = spawn_mailing(b).await;
    let email = member(&p, "owner").await;
    let other = p.new_account("second").await;
    admin::member_add(&p.store, &other.slug, &email.to_uppercase(), "gate").await.expect("member add");
    let first = p.store.org_member_by_email(&p.account.id, &email).await.expect("member").id;
    let second = p.store.org_member_by_email(&other.id, &email).await.expect("member").id;
    let (browser, landed) = sign_in(&p, &email).await;
    assert_eq!(landed, "/console", "the older membership (an owner) first");
    let home = browser.get("/console").await;
    assert_eq!(home.status, 200, "{}", home.body);
    assert_eq!(home.text("label[for=f-account]"), "Account");
    let options = home.attrs("#f-account option", "value");
    assert_eq!(options, vec![first.clone(), second.clone()], "{}", home.body);
    assert_eq!(home.attrs("#f-account option[selected]", "value"), vec![first.clone()]);
    let old = browser.session_cookie().expect("session");

    let r = browser.submit(&home, "/console/switch", &[("member", &second)]).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/gate")), "{}", r.body);
    let gate = browser.get("/console/gate").await;
    assert_eq!(gate.status, 200, "{}", gate.body);
    assert!(gate.text(".who").contains("(gate)"), "{}", gate.text(".who"));
    assert_eq!(gate.attrs("#f-account option[selected]", "value"), vec![second.clone()]);
    assert_eq!(browser.get("/console/ledger").await.status, 403, "a gate member now");
    let stale = Browser::new(&p);
    stale.set_cookie("tessera_console", &old);
    let r = stale.get("/console/ledger").await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console")), "the old session ended");

    // The account already open changes nothing; another person's member id is 404; no CSRF, 403.
    let r = browser.submit(&gate, "/console/switch", &[("member", &second)]).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console/gate")));
    let stranger = member(&p, "finance").await;
    let stranger_id = p.store.org_member_by_email(&p.account.id, &stranger).await.expect("member").id;
    let r = browser.submit(&gate, "/console/switch", &[("member", &stranger_id)]).await;
    assert_eq!(r.status, 404, "{}", r.body);
    let r = browser.post("/console/switch", &[("member", &first)]).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(browser.get("/console/gate").await.text(".who").contains("(gate)"), "still the gate session");
    // And back.
    let r = browser.submit(&gate, "/console/switch", &[("member", &first)]).await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console")));
    assert_eq!(browser.get("/console/ledger").await.status, 200, "the owner again");

    let (single, _) = sign_in(&p, &member(&p, "owner").await).await;
    assert!(!single.get("/console").await.has("#f-account"), "one account: no switch");
}

async fn removing_a_member_ends_their_sessions(b: Backend) {
    let (p, browser, email) = signed_in(b, "finance").await;
    assert_eq!(browser.get("/console/ledger").await.status, 200);
    let out = p.cli(&["admin", "member", "remove", "--account", &p.account.slug, "--email", &email, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = browser.get("/console/ledger").await;
    assert_eq!((r.status, r.location().as_deref()), (303, Some("/console")));
    // The CLI lists who is left and refuses to remove the last owner.
    let owner = member(&p, "owner").await;
    let out = p.cli(&["admin", "member", "list", "--account", &p.account.slug, "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let emails: Vec<&str> =
        listed["members"].as_array().expect("members").iter().filter_map(|m| m["email"].as_str()).collect();
    assert_eq!(emails, vec![owner.as_str()]);
    let out = p.cli(&["admin", "member", "remove", "--account", &p.account.slug, "--email", &owner, "--json"]);
    assert!(!out.status.success(), "the last owner stays");
}

async fn console_form_posts_count_against_the_per_ip_limit_and_are_refused_as_a_page(b: Backend) {
    let p = crate::support::payments::spawn_paid_with(b, |c| {
        c.security.rate_limit_per_ip = 60;
        c.security.rate_limit_per_ip_burst = 3;
    })
    .await;
    let browser = Browser::new(&p);
    let form = browser.get("/console").await;
    let mut refused = None;
    for i in 0..6 {
        let email = format!("visitor-{i}@nowhere.example.com");
        let r = browser.submit(&form, "/console/sign-in", &[("email", &email)]).await;
        if r.status == 429 {
            refused = Some(r);
            break;
        }
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let refused = refused.expect("the fourth post in a burst of three is refused");
    assert!(refused.headers.contains_key("retry-after"));
    assert!(refused.body.starts_with("<!doctype html>"), "an HTML page: {}", refused.body);
    // Reading pages is not counted.
    assert_eq!(browser.get("/console").await.status, 200);
}

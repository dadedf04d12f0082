//! Integration tests: the console's money pages (D17.30, D17.43) — the dashboard's nine figures
//! against the API's own figures, who sees which, the ledger page and its filter, the payments
//! search and its pages, the role gate, and another account's data never shown.
use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::catalogue::{participant, running_campaign, ticket_type};
use crate::support::client::send;
use crate::support::console::{member, sign_in, signed_in, Browser, Page};
use crate::support::ledger::assert_ledger_clean;
use crate::support::mail::spawn_mailing;
use crate::support::payments::{
    buy, customer_pays_fees, initialize, payment, sandbox_settle, PayApp, BALANCE, INITIALIZE, LEDGER,
};
use crate::support::server::{drain, Backend, TestAccount, TestApp};
use crate::support::tickets::{code_of, VERIFY};

const V1: &str = "/api/white-label/v1";

on_both!(
    console_money_dashboard_figures_equal_the_apis,
    console_money_dashboard_shows_each_role_its_figures,
    console_money_ledger_lists_filters_and_refuses_an_unknown_type,
    console_money_payments_search_by_reference_and_email_and_pages,
    console_money_pages_are_gated_by_role,
    console_money_another_accounts_payments_are_never_shown,
);

/// GHS as the API answers it (a JSON number) in pesewas.
fn api_pesewas(v: &Value) -> i64 {
    (v.as_f64().unwrap_or_else(|| panic!("a number: {v}")) * 100.0).round() as i64
}

/// GHS as a page shows it ("1,234.50") in pesewas.
fn shown_pesewas(s: &str) -> i64 {
    let n: f64 = s.replace(',', "").parse().unwrap_or_else(|_| panic!("GHS: {s:?}"));
    (n * 100.0).round() as i64
}

fn shown_count(page: &Page, id: &str) -> i64 {
    let t = page.text(&format!("#{id}"));
    t.parse().unwrap_or_else(|_| panic!("#{id}: {t:?}"))
}

/// Initializes a paid purchase, settles it in the sandbox and drains; its reference.
async fn paid(p: &PayApp, body: Value) -> String {
    let r = initialize(p, body).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let reference = r.json()["data"]["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
    assert_eq!(payment(p, &reference).await["status"], "success");
    reference
}

async fn paid_tickets(p: &PayApp, campaign: &str, ticket: &str, quantity: i64) -> String {
    let data = buy(p, campaign, ticket, quantity).await;
    let reference = data["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
    assert_eq!(payment(p, &reference).await["status"], "success");
    reference
}

/// A free ticket bought by `email` from `account`; its payment reference.
async fn free_ticket(app: &TestApp, account: &TestAccount, campaign: &str, ticket: &str, email: &str) -> String {
    let body = json!({
        "campaign_id": campaign, "ticket_id": ticket, "email": email, "quantity": 1,
        "full_name": "Ama Mensah", "callbackUrl": format!("https://{}/thanks", account.domain),
    });
    let r = send(app, &account.private, Method::POST, INITIALIZE, Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    r.json()["data"]["reference"].as_str().expect("reference").to_string()
}

async fn get_ok(p: &TestApp, path: &str) -> Value {
    let (s, b) = p.signed(Method::GET, path, None).await;
    assert_eq!(s, 200, "{path}: {b}");
    b
}

/// A mix: paid tickets with fees, votes, a donation, a check-in and a refund.
struct Mix {
    ticketing: String,
    voting: String,
    references: Vec<String>,
}

async fn mix(p: &PayApp) -> Mix {
    customer_pays_fees(p).await;
    let key = &p.account.private;
    let ticketing = running_campaign(p, key, "ticketing").await;
    let t = ticket_type(p, key, &ticketing, 25.5, 20).await;
    let two = paid_tickets(p, &ticketing, &t, 2).await;
    let refunded = paid_tickets(p, &ticketing, &t, 1).await;
    let voting = running_campaign(p, key, "voting").await;
    let nominee = participant(p, key, &voting).await;
    let vote = paid(
        p,
        json!({"transactionType": "vote", "amount": 10, "email": "fan@example.com", "phoneNumber": "0241234567",
               "callbackUrl": format!("https://{}/voted", p.account.domain),
               "metadata": {"campaignId": voting, "participantId": nominee}}),
    )
    .await;
    let giving = running_campaign(p, key, "donation").await;
    let gift = paid(
        p,
        json!({"transactionType": "donation", "amount": 75.25, "email": "giver@example.com",
               "phoneNumber": "+233201234567", "callbackUrl": format!("https://{}/thanks", p.account.domain),
               "metadata": {"campaignId": giving}}),
    )
    .await;
    // One ticket checked in at the gate.
    let code = code_of(&payment(p, &two).await["tickets"][0]);
    let r = send(p, key, Method::POST, VERIFY, Some(json!({"ticketCode": code, "autoVerify": true}))).await;
    assert_eq!(r.status, 200, "{}", r.json());
    // The one-ticket purchase refunded in full.
    let mut h = reqwest::header::HeaderMap::new();
    h.insert("x-idempotency-key", uuid::Uuid::now_v7().to_string().parse().expect("header"));
    let body = serde_json::to_vec(&json!({"reason": "Buyer asked"})).expect("json");
    let path = format!("{V1}/payments/{refunded}/refunds");
    let r = p.client().send_raw(Method::POST, &path, body, Some(h)).await.expect("refund");
    assert_eq!(r.status, 201, "{}", r.json());
    drain(p).await;
    Mix { ticketing, voting, references: vec![two, refunded, vote, gift] }
}

async fn console_money_dashboard_figures_equal_the_apis(b: Backend) {
    let p = spawn_mailing(b).await;
    let m = mix(&p).await;
    let email = member(&p, "owner").await;
    let (owner, _) = sign_in(&p, &email).await;
    let page = owner.get("/console").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let money = |id: &str| shown_pesewas(&page.text(&format!("#{id}")));

    // Gross and Fees: the sums of the API's ledger entries of kind charge and fee.
    let ledger = get_ok(&p, &format!("{LEDGER}?limit=100")).await;
    let entries = ledger["data"].as_array().expect("entries");
    let of = |k: &str| entries.iter().filter(|e| e["kind"] == k).map(|e| api_pesewas(&e["amount"])).sum::<i64>();
    let (gross, fees) = (of("charge"), -of("fee"));
    assert!(gross > 0 && fees > 0, "{ledger}");
    assert_eq!(money("fig-gross"), gross);
    assert_eq!(money("fig-fees"), fees);
    assert_eq!(money("fig-net"), gross - fees);
    // Available, Pending, Held: GET /balance.
    let bal = get_ok(&p, BALANCE).await;
    assert_eq!(money("fig-available"), api_pesewas(&bal["data"]["available"]), "{bal}");
    assert_eq!(money("fig-pending"), api_pesewas(&bal["data"]["pending"]), "{bal}");
    assert_eq!(money("fig-held"), api_pesewas(&bal["data"]["held"]), "{bal}");
    // Tickets sold: what the ticket types no longer offer (nothing is held now).
    let r = p
        .public_get(&format!("{V1}/ticket-types?campaignId={}", m.ticketing), &p.account.public, &p.account.domain)
        .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let types = r.json();
    let sold: i64 = types["data"]
        .as_array()
        .expect("types")
        .iter()
        .map(|t| t["quantity_available"].as_i64().unwrap_or(0) - t["remaining"].as_i64().unwrap_or(0))
        .sum();
    assert_eq!(sold, 3, "{types}");
    assert_eq!(shown_count(&page, "fig-tickets-sold"), sold);
    // Check-ins: the tickets the API shows checked in.
    let mut checked = 0;
    for r in &m.references {
        let shown = payment(&p, r).await;
        checked += shown["tickets"].as_array().map_or(0, |k| k.iter().filter(|t| t["checkedIn"] == true).count());
    }
    assert_eq!(checked, 1);
    assert_eq!(shown_count(&page, "fig-check-ins"), 1);
    assert_eq!(page.attrs("#fig-check-ins", "data-live"), vec!["checkIns"]);
    // Votes: the nominees' votes.
    let nominees = get_ok(&p, &format!("{V1}/participants?campaignId={}", m.voting)).await;
    let votes: i64 =
        nominees["data"].as_array().expect("nominees").iter().map(|n| n["votes"].as_i64().unwrap_or(0)).sum();
    assert_eq!(votes, 5, "{nominees}");
    assert_eq!(shown_count(&page, "fig-votes"), votes);
    // Each figure links to the rows behind it.
    for (id, href) in [
        ("fig-gross", "/console/ledger?type=charge"),
        ("fig-fees", "/console/ledger?type=fee"),
        ("fig-net", "/console/ledger"),
        ("fig-available", "/console/ledger"),
        ("fig-pending", "/console/ledger"),
        ("fig-held", "/console/ledger"),
        ("fig-tickets-sold", "/console/campaigns"),
        ("fig-check-ins", "/console/campaigns"),
        ("fig-votes", "/console/campaigns"),
    ] {
        assert_eq!(page.attrs(&format!("#{id}"), "href"), vec![href.to_string()], "{id}");
    }
    let labels = page.texts(".figures .label");
    assert_eq!(
        labels,
        ["Gross", "Fees", "Net", "Available", "Pending", "Held", "Tickets sold", "Check-ins", "Votes"]
            .map(String::from)
    );
    assert!(page.body.len() < 100_000);
    assert_ledger_clean(&p);
}

async fn console_money_dashboard_shows_each_role_its_figures(b: Backend) {
    let (p, finance, _) = signed_in(b, "finance").await;
    let page = finance.get("/console").await;
    assert_eq!(page.status, 200, "{}", page.body);
    for id in ["fig-gross", "fig-fees", "fig-net", "fig-available", "fig-pending", "fig-held"] {
        assert_eq!(page.text(&format!("#{id}")), "0.00", "{id}");
    }
    for id in ["fig-tickets-sold", "fig-check-ins", "fig-votes"] {
        assert!(!page.has(&format!("#{id}")), "finance does not see {id}");
    }
    let email = member(&p, "manager").await;
    let (manager, _) = sign_in(&p, &email).await;
    let page = manager.get("/console").await;
    assert_eq!(page.status, 200, "{}", page.body);
    for id in ["fig-tickets-sold", "fig-check-ins", "fig-votes"] {
        assert_eq!(page.text(&format!("#{id}")), "0", "{id}");
    }
    assert_eq!(page.attrs("#fig-check-ins", "data-live"), vec!["checkIns"]);
    for id in ["fig-gross", "fig-fees", "fig-net", "fig-available", "fig-pending", "fig-held"] {
        assert!(!page.has(&format!("#{id}")), "a manager does not see {id}");
    }
}

async fn console_money_ledger_lists_filters_and_refuses_an_unknown_type(b: Backend) {
    let p = spawn_mailing(b).await;
    let m = mix(&p).await;
    let email = member(&p, "finance").await;
    let (finance, _) = sign_in(&p, &email).await;
    let all = finance.get("/console/ledger").await;
    assert_eq!(all.status, 200, "{}", all.body);
    let api = get_ok(&p, &format!("{LEDGER}?limit=100")).await;
    let entries = api["data"].as_array().expect("entries");
    // Newest first, as the API lists them: the same references, kinds and amounts.
    assert_eq!(
        all.texts("#ledger tbody td.ref"),
        entries.iter().map(|e| e["reference"].as_str().unwrap_or_default().to_string()).collect::<Vec<_>>()
    );
    assert_eq!(
        all.texts("#ledger tbody td.type"),
        entries.iter().map(|e| e["kind"].as_str().unwrap_or_default().to_string()).collect::<Vec<_>>()
    );
    let amounts: Vec<i64> = all.texts("#ledger tbody td.num").iter().map(|t| shown_pesewas(t)).collect();
    assert_eq!(amounts, entries.iter().map(|e| api_pesewas(&e["amount"])).collect::<Vec<_>>());
    assert!(all.texts("#ledger tbody td").iter().any(|t| t == "Processing fee"));
    // ?type=fee: only the fee entries, one per paid purchase.
    let fees = finance.get("/console/ledger?type=fee").await;
    assert_eq!(fees.status, 200);
    let kinds = fees.texts("#ledger tbody td.type");
    assert_eq!(kinds.len(), m.references.len(), "{}", fees.body);
    assert!(kinds.iter().all(|k| k == "fee"), "{kinds:?}");
    assert_eq!(fees.attrs("#f-type option[selected]", "value"), vec!["fee"]);
    // The refund's hold.
    let holds = finance.get("/console/ledger?type=refund_hold").await;
    assert_eq!(holds.texts("#ledger tbody td.type"), vec!["refund_hold"]);
    // An unknown type: the page again with 400 and the error beside the filter.
    let bad = finance.get("/console/ledger?type=bogus").await;
    assert_eq!(bad.status, 400);
    assert!(bad.field_error("type").is_some_and(|e| e.contains("charge")), "{}", bad.body);
    assert_eq!(bad.text("label[for=f-type]"), "Type");
    // A page that is not a number.
    let bad = finance.get("/console/ledger?page=zero").await;
    assert_eq!(bad.status, 400);
    assert!(bad.has(".form-error"), "{}", bad.body);
    // Past the end: no rows, a link back.
    let past = finance.get("/console/ledger?type=fee&page=2").await;
    assert_eq!(past.status, 200);
    assert!(past.texts("#ledger tbody td.type").is_empty());
    assert_eq!(past.attrs("a[rel=prev]", "href"), vec!["/console/ledger?type=fee&page=1"]);
}

async fn console_money_payments_search_by_reference_and_email_and_pages(b: Backend) {
    let (p, owner, _) = signed_in(b, "owner").await;
    let key = &p.account.private;
    let c = running_campaign(&p, key, "ticketing").await;
    let t = ticket_type(&p, key, &c, 0.0, 500).await;
    let mut refs = Vec::new();
    for i in 0..52 {
        refs.push(free_ticket(&p, &p.account, &c, &t, &format!("Buyer{}@Example.com", i % 3)).await);
    }
    let paid_t = ticket_type(&p, key, &c, 12.0, 10).await;
    let one = paid_tickets(&p, &c, &paid_t, 1).await;
    refs.push(one.clone());
    // Empty q: the newest 50, newest first, with a link to the next page.
    let first = owner.get("/console/payments").await;
    assert_eq!(first.status, 200, "{}", first.body);
    let shown = first.texts("#payments tbody td.ref");
    assert_eq!(shown.len(), 50);
    let newest: Vec<String> = refs.iter().rev().take(50).cloned().collect();
    assert_eq!(shown, newest);
    assert_eq!(first.text("#payments tbody tr td.status"), "success");
    assert_eq!(first.attrs("a[rel=next]", "href"), vec!["/console/payments?page=2"]);
    assert!(first.text("#count").starts_with("53 payments"), "{}", first.text("#count"));
    let second = owner.get("/console/payments?page=2").await;
    assert_eq!(second.texts("#payments tbody td.ref"), vec![refs[2].clone(), refs[1].clone(), refs[0].clone()]);
    assert!(second.attrs("a[rel=next]", "href").is_empty());
    // By reference (exact): that one, its amount in GHS.
    let found = owner.get(&format!("/console/payments?q={one}")).await;
    assert_eq!(found.texts("#payments tbody td.ref"), vec![one.clone()]);
    assert!(found.texts("#payments tbody td.num").contains(&"12.00".to_string()), "{}", found.body);
    assert_eq!(found.attrs("#f-q", "value"), vec![one.clone()]);
    let partial = owner.get(&format!("/console/payments?q={}", &one[..one.len() - 2])).await;
    assert!(partial.texts("#payments tbody td.ref").is_empty(), "a reference matches exactly");
    // By e-mail, in another case: buyer1's 17 payments.
    let by_email = owner.get("/console/payments?q=BUYER1%40EXAMPLE.COM").await;
    assert_eq!(by_email.status, 200);
    let mine: Vec<String> =
        refs.iter().enumerate().filter(|(i, _)| i % 3 == 1 && *i < 52).map(|(_, r)| r.clone()).rev().collect();
    assert_eq!(by_email.texts("#payments tbody td.ref"), mine);
    assert!(by_email.texts("#payments tbody td.email").iter().all(|e| e.eq_ignore_ascii_case("buyer1@example.com")));
    // A page that is not a number, and a search too long: 400 with the error shown.
    let bad = owner.get("/console/payments?page=-1").await;
    assert_eq!(bad.status, 400);
    let long = "a".repeat(400);
    let bad = owner.get(&format!("/console/payments?q={long}")).await;
    assert_eq!(bad.status, 400);
    assert!(bad.field_error("q").is_some(), "{}", bad.body);
    assert_eq!(bad.text("label[for=f-q]"), "Reference or e-mail");
}

async fn console_money_pages_are_gated_by_role(b: Backend) {
    let p = spawn_mailing(b).await;
    let browsers: Vec<(&str, Browser)> = {
        let mut v = Vec::new();
        for role in ["owner", "manager", "finance", "gate"] {
            let email = member(&p, role).await;
            v.push((role, sign_in(&p, &email).await.0));
        }
        v
    };
    for (role, browser) in &browsers {
        for (path, allowed) in [
            ("/console/payments", ["owner", "manager", "finance"].contains(role)),
            ("/console/ledger", ["owner", "finance"].contains(role)),
        ] {
            let page = browser.get(path).await;
            assert_eq!(page.status, if allowed { 200 } else { 403 }, "{role} {path}");
        }
        let dash = browser.get("/console").await;
        if *role == "gate" {
            assert_eq!((dash.status, dash.location().as_deref()), (303, Some("/console/gate")));
        } else {
            assert_eq!(dash.status, 200, "{role}");
        }
    }
}

async fn console_money_another_accounts_payments_are_never_shown(b: Backend) {
    let (p, owner, _) = signed_in(b, "owner").await;
    let key = &p.account.private;
    let c = running_campaign(&p, key, "ticketing").await;
    let t = ticket_type(&p, key, &c, 0.0, 10).await;
    let mine = free_ticket(&p, &p.account, &c, &t, "shared@example.com").await;
    let other = p.new_account("other").await;
    let oc = running_campaign(&p, &other.private, "ticketing").await;
    let ot = ticket_type(&p, &other.private, &oc, 0.0, 10).await;
    let theirs = free_ticket(&p, &other, &oc, &ot, "shared@example.com").await;
    let all = owner.get("/console/payments").await;
    assert_eq!(all.texts("#payments tbody td.ref"), vec![mine.clone()]);
    let searched = owner.get(&format!("/console/payments?q={theirs}")).await;
    assert_eq!(searched.status, 200);
    assert!(searched.texts("#payments tbody td.ref").is_empty(), "{}", searched.body);
    assert!(!searched.body.contains(&format!("<code>{theirs}")));
    let by_email = owner.get("/console/payments?q=shared@example.com").await;
    assert_eq!(by_email.texts("#payments tbody td.ref"), vec![mine]);
    // The other account's check-in does not count here either.
    let dash = owner.get("/console").await;
    assert_eq!(dash.text("#fig-tickets-sold"), "1");
    assert_eq!(dash.text("#fig-gross"), "0.00");
}

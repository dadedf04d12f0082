//! Integration tests: the console's campaign pages (D17.30, D17.43) through the real server,
//! parsed as HTML, on SQLite and PostgreSQL: the list (50 a page) and each campaign's ticket
//! types (remaining = quantity − sold), sales per day (equal to the API's payment amounts) and
//! votes; another account's campaign is 404; only owner and manager may open them.
use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::catalogue::{participant, running_campaign, ticket_type};
use crate::support::console::{member, sign_in, signed_in, Page};
use crate::support::mail::spawn_mailing;
use crate::support::payments::{buy, initialize, payment, sandbox_settle, PayApp};
use crate::support::server::{drain, Backend};

/// A settled purchase of `quantity` tickets; its reference.
async fn paid(p: &PayApp, campaign: &str, ticket: &str, quantity: i64) -> String {
    let reference = buy(p, campaign, ticket, quantity).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(p).await;
    assert_eq!(payment(p, &reference).await["status"], "success");
    reference
}

/// GHS as the API shows it → pesewas.
fn pesewas(v: &Value) -> i64 {
    (v.as_f64().unwrap_or_else(|| v.as_str().and_then(|s| s.parse().ok()).expect("amount")) * 100.0).round() as i64
}

/// "1,234.50" → pesewas.
fn cell_pesewas(s: &str) -> i64 {
    let (whole, cents) = s.replace(',', "").split_once('.').map(|(a, b)| (a.to_string(), b.to_string())).expect("GHS");
    whole.parse::<i64>().expect("whole") * 100 + cents.parse::<i64>().expect("cents")
}

/// The cells of each body row of table `id`.
fn rows(page: &Page, id: &str) -> Vec<Vec<String>> {
    let doc = page.doc();
    let tr = scraper::Selector::parse(&format!("table#{id} tbody tr")).expect("selector");
    let td = scraper::Selector::parse("td").expect("selector");
    doc.select(&tr)
        .map(|r| {
            r.select(&td)
                .map(|c| c.text().collect::<Vec<_>>().join(" ").split_whitespace().collect::<Vec<_>>().join(" "))
                .collect()
        })
        .collect()
}

on_both!(
    console_campaigns_list_and_detail_show_types_what_remains_sales_and_votes,
    console_campaigns_list_pages_by_fifty,
    console_campaigns_other_accounts_and_malformed_ids_are_404_and_roles_are_gated,
);

async fn console_campaigns_list_and_detail_show_types_what_remains_sales_and_votes(b: Backend) {
    let (p, browser, _) = signed_in(b, "manager").await;
    let key = &p.account.private;
    let c = running_campaign(&p, key, "ticketing").await;
    let general = ticket_type(&p, key, &c, 10.0, 5).await;
    let free = ticket_type(&p, key, &c, 0.0, 3).await;
    let references = [paid(&p, &c, &general, 1).await, paid(&p, &c, &general, 2).await];
    // A purchase not yet paid holds its seat and is not a sale.
    buy(&p, &c, &general, 1).await;

    let list = browser.get("/console/campaigns").await;
    assert_eq!(list.status, 200, "{}", list.body);
    let (s, api) = p.signed(Method::GET, &format!("/api/white-label/v1/campaigns/{c}"), None).await;
    assert_eq!(s, 200, "{api}");
    let title = api["data"]["title"].as_str().expect("title").to_string();
    let row = rows(&list, "campaigns").into_iter().find(|r| r[0] == title).expect("the campaign is listed");
    assert_eq!(&row[1..3], &["ticketing".to_string(), "approved".to_string()]);
    assert!(row[3].ends_with("UTC") && row[4].ends_with("UTC"), "{row:?}");
    let href = format!("/console/campaigns/{c}");
    assert!(list.attrs("table#campaigns a", "href").contains(&href));

    let page = browser.get(&href).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.text("h1"), title);
    assert_eq!(page.text("#campaign-type"), "ticketing");
    let types = rows(&page, "ticket-types");
    assert_eq!(types.len(), 2, "{types:?}");
    for (id, r) in [(&general, &types[0]), (&free, &types[1])] {
        let tt = p.store.ticket_type(&p.account.id, id).await.expect("ticket type");
        assert_eq!(r[0], tt.name);
        let shown: Vec<i64> = r[3..7].iter().map(|v| v.parse().expect("number")).collect();
        assert_eq!(
            shown,
            vec![tt.quantity_available, tt.quantity_sold, tt.quantity_held, tt.quantity_available - tt.quantity_sold]
        );
    }
    assert_eq!(&types[0][2..7], &["10.00", "5", "3", "1", "2"].map(String::from));
    assert_eq!(&types[1][2..7], &["0.00", "3", "0", "0", "3"].map(String::from));

    // Sales per day: the successful payments, summing to what the API says they were.
    let sales = rows(&page, "sales");
    assert_eq!(sales.len(), 1, "one day of sales: {sales:?}");
    let today = time::OffsetDateTime::now_utc().date().to_string();
    assert_eq!(sales[0][0], today);
    assert_eq!(sales[0][1], "2");
    let mut api_sum = 0;
    for r in &references {
        api_sum += pesewas(&payment(&p, r).await["amount"]);
    }
    assert_eq!(cell_pesewas(&sales[0][2]), api_sum);
    assert!(page.body.len() < 100_000);

    // A voting campaign shows each nominee's votes.
    let v = running_campaign(&p, key, "voting").await;
    let nominee = participant(&p, key, &v).await;
    let r = initialize(
        &p,
        json!({"transactionType": "vote", "amount": 6, "email": "fan@example.com", "phoneNumber": "0241234567",
            "callbackUrl": format!("https://{}/voted", p.account.domain),
            "metadata": {"campaignId": v, "participantId": nominee}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let reference = r.json()["data"]["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    drain(&p).await;
    let voting = browser.get(&format!("/console/campaigns/{v}")).await;
    assert_eq!(voting.status, 200, "{}", voting.body);
    let votes = rows(&voting, "votes");
    assert_eq!(votes.len(), 1, "{votes:?}");
    assert_eq!((votes[0][0].as_str(), votes[0][3].as_str()), ("Nominee One", "3"));
    assert!(!voting.has("table#ticket-types"));
    let sales = rows(&voting, "sales");
    assert_eq!(cell_pesewas(&sales[0][2]), pesewas(&payment(&p, &reference).await["amount"]));
}

async fn console_campaigns_list_pages_by_fifty(b: Backend) {
    let (p, browser, _) = signed_in(b, "owner").await;
    for _ in 0..51 {
        running_campaign(&p, &p.account.private, "donation").await;
    }
    let first = browser.get("/console/campaigns").await;
    assert_eq!(first.status, 200);
    assert_eq!(rows(&first, "campaigns").len(), 50);
    assert_eq!(first.attrs("a[rel=next]", "href"), vec!["/console/campaigns?page=2".to_string()]);
    let second = browser.get("/console/campaigns?page=2").await;
    assert_eq!(rows(&second, "campaigns").len(), 1);
    assert!(second.has("a[rel=prev]") && !second.has("a[rel=next]"));
    // A page that is not a number is the first.
    assert_eq!(rows(&browser.get("/console/campaigns?page=x").await, "campaigns").len(), 50);
}

async fn console_campaigns_other_accounts_and_malformed_ids_are_404_and_roles_are_gated(b: Backend) {
    let p = spawn_mailing(b).await;
    let other = p.new_account("other").await;
    let theirs = running_campaign(&p, &other.private, "ticketing").await;
    let mine = running_campaign(&p, &p.account.private, "ticketing").await;
    let (owner, _) = sign_in(&p, &member(&p, "owner").await).await;
    assert_eq!(owner.get(&format!("/console/campaigns/{mine}")).await.status, 200);
    for id in [theirs.as_str(), "not-a-uuid", "0190f1d2-8c4b-7cc3-9a41-2f4b8e6d5a10"] {
        let r = owner.get(&format!("/console/campaigns/{id}")).await;
        assert_eq!(r.status, 404, "{id}: {}", r.body);
    }
    let list = owner.get("/console/campaigns").await;
    assert!(!list.body.contains(&theirs), "another account's campaign is not listed");
    for role in ["finance", "gate"] {
        let (browser, _) = sign_in(&p, &member(&p, role).await).await;
        assert_eq!(browser.get("/console/campaigns").await.status, 403, "{role}");
        assert_eq!(browser.get(&format!("/console/campaigns/{mine}")).await.status, 403, "{role}");
    }
}

//! Issued tickets: free purchases whose tickets a test checks in, and their codes.
use serde_json::{json, Value};
use tessera_client::Method;

use super::catalogue::{answered_ticket_type, running_campaign, ticket_type, two_attendees};
use super::client::send;
use super::payments::{checkout_body, INITIALIZE};
use super::server::{TestAccount, TestApp};

pub const VERIFY: &str = "/api/white-label/v1/tickets/verify";

/// A running ticketing campaign of `account` with free tickets, and `n` of them bought by
/// buyer@example.com.
pub async fn issued(app: &TestApp, account: &TestAccount, n: i64) -> (String, Vec<Value>) {
    let key = &account.private;
    let c = running_campaign(app, key, "ticketing").await;
    let t = ticket_type(app, key, &c, 0.0, 100).await;
    let body = json!({
        "campaign_id": c, "ticket_id": t, "email": "buyer@example.com", "quantity": n,
        "full_name": "Ama Mensah", "callbackUrl": format!("https://{}/thanks", account.domain),
    });
    let r = send(app, key, Method::POST, INITIALIZE, Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let data = r.json()["data"].clone();
    assert_eq!(data["status"], "success", "{data}");
    (c, data["tickets"].as_array().expect("tickets").clone())
}

/// Two free tickets of a type asking attendee fields, bought by buyer@example.com with
/// `two_attendees` (the second is kofi@example.com's) (D17.12).
pub async fn issued_with_answers(app: &TestApp) -> (String, Vec<Value>) {
    let key = &app.account.private;
    let c = running_campaign(app, key, "ticketing").await;
    let t = answered_ticket_type(app, key, &c, 0.0).await;
    let mut body = checkout_body(app, &c, &t, 2);
    body["attendees"] = two_attendees();
    let r = send(app, key, Method::POST, INITIALIZE, Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let data = r.json()["data"].clone();
    assert_eq!(data["status"], "success", "{data}");
    (c, data["tickets"].as_array().expect("tickets").clone())
}

pub fn code_of(t: &Value) -> String {
    t["ticketCode"].as_str().expect("ticketCode").to_string()
}

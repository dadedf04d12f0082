//! The catalogue a test sells from: campaigns, ticket types and participants.
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Value};

use super::client::StatusCode;
use super::server::{TestApp, TestKey};

pub const CAMPAIGNS: &str = "/api/white-label/v1/campaigns";
pub const TICKET_TYPES: &str = "/api/white-label/v1/ticket-types";
pub const BOOTSTRAP: &str = "/api/white-label/v1/ticket-types/bootstrap";
pub const PARTICIPANTS: &str = "/api/white-label/v1/participants";

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Creates `body` at `path` with `key` (201 expected); the new item's `data`.
pub async fn created(app: &TestApp, key: &TestKey, path: &str, body: &Value) -> Value {
    let b: Value = app.api_as(key).post(path, body, StatusCode::CREATED).await;
    b["data"].clone()
}

/// Creates `body` at `path` with `key` (201 expected); the new item's id.
pub async fn created_id(app: &TestApp, key: &TestKey, path: &str, body: &Value) -> String {
    created(app, key, path, body).await["id"].as_str().expect("id").to_string()
}

/// An approved campaign of `kind` running now (voting: vote price 2 GHS).
pub async fn running_campaign(app: &TestApp, key: &TestKey, kind: &str) -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = |t: time::OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).expect("rfc3339");
    let mut body = json!({
        "title": format!("Live {kind} {}", uuid_like()),
        "description": "A campaign that is running now.",
        "campaign_type": kind,
        "start_date": fmt(now - time::Duration::days(1)),
        "end_date": fmt(now + time::Duration::days(30)),
        "status": "approved",
    });
    if kind == "voting" {
        body["vote_price"] = json!(2);
    }
    created_id(app, key, CAMPAIGNS, &body).await
}

fn uuid_like() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// A ticket type of `campaign` at `price` GHS with `quantity` seats.
pub async fn ticket_type(app: &TestApp, key: &TestKey, campaign: &str, price: f64, quantity: i64) -> String {
    let body = json!({"campaignId": campaign, "name": "General", "price": price, "quantity_available": quantity, "max_per_person": 10});
    created_id(app, key, TICKET_TYPES, &body).await
}

/// A ticket type of `campaign` at `price` GHS (10 seats) asking each attendee's company
/// (required), work e-mail (required, an address) and diet (optional) (D17.12).
pub async fn answered_ticket_type(app: &TestApp, key: &TestKey, campaign: &str, price: f64) -> String {
    let body = json!({"campaignId": campaign, "name": "Conference", "price": price, "quantity_available": 10,
    "max_per_person": 10, "required_attendee_fields": [
        {"key": "company", "label": "Company", "type": "text", "required": true},
        {"key": "work_email", "label": "Work e-mail", "type": "email", "required": true},
        {"key": "diet", "label": "Diet", "type": "text", "required": false},
    ]});
    created_id(app, key, TICKET_TYPES, &body).await
}

/// Two attendees for an [`answered_ticket_type`]: the first is the buyer, the second has their
/// own name and e-mail.
pub fn two_attendees() -> Value {
    json!([
        {"answers": {"company": "Acme", "work_email": "ama@ACME.example", "diet": "vegan"}},
        {"full_name": "Kofi Boateng", "email": "kofi@example.com",
         "answers": {"company": "Beta Ltd", "work_email": "kofi@beta.example"}},
    ])
}

/// The tickets of a purchase with [`two_attendees`] show each attendee and their answers.
pub fn assert_two_attendees(tickets: &Value) {
    let tickets = tickets.as_array().expect("tickets");
    assert_eq!(tickets.len(), 2, "{tickets:?}");
    assert_eq!(
        tickets[0]["attendee"],
        json!({"full_name": "Ama Mensah", "email": "buyer@example.com",
               "answers": {"company": "Acme", "work_email": "ama@acme.example", "diet": "vegan"}})
    );
    assert_eq!(
        tickets[1]["attendee"],
        json!({"full_name": "Kofi Boateng", "email": "kofi@example.com",
               "answers": {"company": "Beta Ltd", "work_email": "kofi@beta.example"}})
    );
}

/// A participant ("Nominee One") of `campaign`; its id.
pub async fn participant(app: &TestApp, key: &TestKey, campaign: &str) -> String {
    created_id(app, key, PARTICIPANTS, &json!({"campaignId": campaign, "name": "Nominee One"})).await
}

/// A valid campaign body of `kind` (voting gets a vote price) with the given status.
pub fn campaign_body(kind: &str, status: &str) -> Value {
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let mut b = json!({
        "title": format!("Test {kind} campaign {n}"),
        "description": "A campaign the integration tests create.",
        "campaign_type": kind,
        "start_date": "2030-01-01T10:00:00Z",
        "end_date": "2030-02-01T10:00:00+00:00",
        "status": status,
    });
    if kind == "voting" {
        b["vote_price"] = json!(1.5);
    }
    b
}

/// Creates a campaign in the default account and returns its id.
pub async fn create_campaign(app: &TestApp, kind: &str, status: &str) -> String {
    create_campaign_as(app, &app.account.private, kind, status).await
}

/// Creates a campaign with `key` (so in that key's account) and returns its id.
pub async fn create_campaign_as(app: &TestApp, key: &TestKey, kind: &str, status: &str) -> String {
    let data = created(app, key, CAMPAIGNS, &campaign_body(kind, status)).await;
    assert_eq!(data["status"], status, "{data}");
    data["id"].as_str().expect("campaign id").to_string()
}

/// A valid ticket type body for `campaign`.
pub fn ticket_type_body(campaign: &str, name: &str) -> Value {
    json!({"campaignId": campaign, "name": name, "price": 450.5, "quantity_available": 200})
}

/// Creates a ticket type (201 asserted) and returns its `data`.
pub async fn create_ticket_type(app: &TestApp, body: Value) -> Value {
    created(app, &app.account.private, TICKET_TYPES, &body).await
}

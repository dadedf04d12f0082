//! Integration tests: payments end to end (spec "POST payments/initialize", payments/verify;
//! D5, D6, D11, D12, D16.1–8) through the real server and the real sandbox on loopback.
//! Background workers are off here; each test drains the queues itself (no sleeps).

use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::callbacks::{post_callback, signed_event};
use crate::support::catalogue::{
    answered_ticket_type, assert_two_attendees, participant, running_campaign, ticket_type, two_attendees,
};
use crate::support::client::{assert_error, detail_fields, send, StatusCode};
use crate::support::ledger::assert_ledger_clean;
use crate::support::payments::{
    buy, checkout_body, customer_pays_fees, initialize, payment, platform_secret, sandbox_settle, spawn_paid,
    spawn_paid_with, BALANCE, INITIALIZE, LEDGER, PAYMENTS, VERIFY,
};
use crate::support::server::{drain, Backend, TestApp};

/// A Form 2 ticket body for `quantity` tickets at 10 GHS with `metadata.attendees`.
fn routed_ticket_body(app: &TestApp, campaign: &str, ticket: &str, quantity: i64, attendees: Value) -> Value {
    json!({"transactionType": "ticket", "amount": 10 * quantity, "email": "buyer@example.com",
           "phoneNumber": "0241234567", "callbackUrl": format!("https://{}/thanks", app.account.domain),
           "metadata": {"campaignId": campaign, "ticketTypeId": ticket, "quantity": quantity,
                        "full_name": "Ama Mensah", "attendees": attendees}})
}

async fn remaining(app: &TestApp, ticket: &str) -> i64 {
    let tt = app.store.ticket_type(&app.account.id, ticket).await.expect("ticket type");
    tt.quantity_available - tt.quantity_sold - tt.quantity_held
}

// ---------------------------------------------------------------------------------------------

async fn a_checkout_reserves_seats_and_returns_the_providers_checkout(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 50.0, 10).await;
    let data = buy(&p, &c, &t, 3).await;
    let reference = data["reference"].as_str().expect("reference");
    assert!(reference.starts_with("tsr_"), "{data}");
    assert_eq!(data["status"], "pending");
    assert_eq!(data["provider"], "provider_a");
    assert_eq!(data["amount"], json!(150));
    assert_eq!(data["fees"], json!(0));
    assert_eq!(data["currency"], "GHS");
    assert_eq!(data["gatewayMeta"]["payment_provider"], "provider_a");
    assert!(data["expiresAt"].as_str().is_some(), "{data}");
    assert!(data["accessCode"].as_str().is_some_and(|s| !s.is_empty()), "{data}");
    let url = data["authorizationUrl"].as_str().expect("authorizationUrl");
    assert_eq!(url, format!("{}/checkout/{reference}", p.sandbox.base_url()));
    // The provider holds the same charge, in pesewas, under Tessera's reference.
    let charge = p.sandbox.charge(reference).expect("sandbox charge");
    assert_eq!(charge["amount"], 15_000);
    assert_eq!(charge["status"], "pending");
    assert_eq!(remaining(&p, &t).await, 7, "three seats are held");
    let shown = payment(&p, reference).await;
    assert_eq!(shown["status"], "pending");
    assert_eq!(shown["quantity"], 3);
    assert_eq!(shown["tickets"], json!([]));
    assert_ledger_clean(&p);
}

async fn a_paid_charge_is_confirmed_credited_and_fulfilled_once(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 25.5, 10).await;
    let data = buy(&p, &c, &t, 2).await;
    let reference = data["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    // The callback reached the server and was stored; nothing is fulfilled before the worker runs.
    assert_eq!(p.store.callback_count(&reference).await.expect("count"), 1);
    assert_eq!(payment(&p, &reference).await["status"], "pending");
    drain(&p).await;
    let paid = payment(&p, &reference).await;
    assert_eq!(paid["status"], "success", "{paid}");
    assert!(paid["paidAt"].as_str().is_some());
    assert_eq!(paid["amount"], json!(51));
    assert_eq!(paid["net"], json!(51));
    let tickets = paid["tickets"].as_array().expect("tickets");
    assert_eq!(tickets.len(), 2);
    for k in tickets {
        assert_eq!(k["status"], "valid");
        assert_eq!(k["checkedIn"], false);
        assert_eq!(k["attendee"]["email"], "buyer@example.com");
        assert_eq!(k["attendee"]["full_name"], "Ama Mensah");
        assert_eq!(k["ticketType"]["id"], t.as_str());
        assert_eq!(k["campaign"]["id"], c.as_str());
        assert!(k.get("qrToken").is_none(), "the QR token is for the holder only");
        let code = k["ticketCode"].as_str().expect("code");
        assert_eq!(code.len(), 24, "{code}");
    }
    assert_ne!(tickets[0]["ticketCode"], tickets[1]["ticketCode"]);
    assert_eq!(remaining(&p, &t).await, 8);
    // Ledger and balance: a charge entry of 51 GHS, available at once (no settlement delay).
    let bal: Value = p.api().get(BALANCE, StatusCode::OK).await;
    assert_eq!(bal["data"], json!({"available": 51, "pending": 0, "held": 0, "currency": "GHS"}));
    let (s, ledger) = p.signed(Method::GET, LEDGER, None).await;
    assert_eq!(s, 200);
    let entries = ledger["data"].as_array().expect("entries");
    assert_eq!(entries.len(), 1, "{ledger}");
    assert_eq!(entries[0]["kind"], "charge");
    assert_eq!(entries[0]["amount"], json!(51));
    assert_eq!(entries[0]["reference"], reference.as_str());
    assert_eq!(ledger["pagination"]["total"], 1);
    // Asking again changes nothing.
    let r = send(&p, &p.account.private, Method::POST, VERIFY, Some(json!({"reference": reference}))).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["data"]["tickets"].as_array().map(Vec::len), Some(2));
    drain(&p).await;
    assert_eq!(p.store.tickets_of(&reference).await.expect("tickets").len(), 2);
    // The buyer's confirmation is queued as a notification row.
    assert_ledger_clean(&p);
}

async fn fees_follow_the_accounts_rule_and_its_bearer(b: Backend) {
    let p = spawn_paid(b).await;
    customer_pays_fees(&p).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 100.0, 10).await;
    let data = buy(&p, &c, &t, 1).await;
    // fee = round_half_even(100 × 2.5 %) + 0.50 = 3.00; the customer pays 103.
    assert_eq!(data["fees"], json!(3));
    assert_eq!(data["amount"], json!(103));
    let reference = data["reference"].as_str().expect("reference");
    sandbox_settle(&p, reference, "succeed", json!({})).await;
    drain(&p).await;
    let paid = payment(&p, reference).await;
    assert_eq!(paid["status"], "success");
    assert_eq!(paid["net"], json!(100));
    let (_, bal) = p.signed(Method::GET, BALANCE, None).await;
    assert_eq!(bal["data"]["available"], json!(100));
    // The organizer bears it: the customer pays the price, the credit is net of the fee.
    p.signed(
        Method::PATCH,
        "/api/white-label/v1/settings/payments",
        Some(json!({"config": {"feeBearer": "organizer"}})),
    )
    .await;
    let data = buy(&p, &c, &t, 1).await;
    assert_eq!(data["amount"], json!(100));
    assert_eq!(data["fees"], json!(3));
    assert_ledger_clean(&p);
}

async fn votes_are_counted_once_from_the_amount_paid(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "voting").await;
    let nominee = participant(&p, &p.account.private, &c).await;
    let body = |amount: Value| {
        json!({
            "transactionType": "vote", "amount": amount, "email": "fan@example.com", "phoneNumber": "0241234567",
            "callbackUrl": format!("https://{}/voted", p.account.domain),
            "metadata": {"campaignId": c, "participantId": nominee},
        })
    };
    // 5 GHS is not a whole number of 2 GHS votes.
    let r = initialize(&p, body(json!(5))).await;
    assert_error(&r, 400, "validation_failed");
    assert_eq!(detail_fields(&r.json()), vec!["amount"]);
    let r = initialize(&p, body(json!(10))).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let data = r.json()["data"].clone();
    assert_eq!(data["transactionType"], "vote");
    assert!(data["authorizationUrl"].as_str().is_some());
    let reference = data["reference"].as_str().expect("reference");
    sandbox_settle(&p, reference, "succeed", json!({})).await;
    drain(&p).await;
    let paid = payment(&p, reference).await;
    assert_eq!(paid["status"], "success");
    assert_eq!(paid["votes"], json!({"participantId": nominee, "count": 5}));
    let (_, list) = p.signed(Method::GET, &format!("/api/white-label/v1/participants?campaignId={c}"), None).await;
    assert_eq!(list["data"][0]["votes"], 5, "{list}");
    assert_ledger_clean(&p);
}

async fn a_donation_is_recorded_with_its_amount(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "donation").await;
    let r = initialize(
        &p,
        json!({
            "transactionType": "donation", "amount": 75.25, "email": "giver@example.com", "phoneNumber": "+233201234567",
            "callbackUrl": format!("https://{}/thanks", p.account.domain), "channel": "web",
            "metadata": {"campaignId": c, "note": "for the cause"}, "description": "Gift",
        }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.json());
    let reference = r.json()["data"]["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    drain(&p).await;
    let paid = payment(&p, &reference).await;
    assert_eq!(paid["status"], "success");
    assert!(paid["donation"]["id"].as_str().is_some(), "{paid}");
    assert_eq!(paid["amount"], json!(75.25));
    assert_eq!(paid["metadata"]["note"], "for the cause");
    assert_ledger_clean(&p);
}

async fn a_form_2_ticket_must_pay_exactly_quantity_times_price(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 20.0, 10).await;
    let body = |amount: f64| {
        json!({
            "transactionType": "ticket", "amount": amount, "email": "buyer@example.com", "phoneNumber": "0241234567",
            "callbackUrl": format!("https://{}/thanks", p.account.domain),
            "metadata": {"campaignId": c, "ticketTypeId": t, "quantity": 2, "full_name": "Kofi"},
        })
    };
    let r = initialize(&p, body(30.0)).await;
    assert_error(&r, 400, "validation_failed");
    assert_eq!(detail_fields(&r.json()), vec!["amount"]);
    let r = initialize(&p, body(40.0)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["data"]["amount"], json!(40));
    assert_eq!(remaining(&p, &t).await, 8);
}

async fn free_tickets_are_issued_at_once_without_a_provider(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 0.0, 5).await;
    let data = buy(&p, &c, &t, 2).await;
    assert_eq!(data["status"], "success");
    assert_eq!(data["provider"], Value::Null);
    assert_eq!(data["authorizationUrl"], Value::Null);
    assert_eq!(data["amount"], json!(0));
    assert_eq!(data["tickets"].as_array().map(Vec::len), Some(2), "{data}");
    assert_eq!(remaining(&p, &t).await, 3);
    let shown = payment(&p, data["reference"].as_str().expect("reference")).await;
    assert_eq!(shown["status"], "success");
    assert!(p.sandbox.callbacks().is_empty());
    assert_ledger_clean(&p);
}

async fn each_initialization_rule_is_a_400_naming_its_field(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 10).await;
    let domain = p.account.domain.clone();
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({}), vec!["transactionType"]),
        (json!({"campaign_id": c}), vec!["ticket_id", "email", "quantity"]),
        (json!({"campaign_id": "x", "ticket_id": t, "email": "a@b.co", "quantity": 1}), vec!["campaign_id"]),
        (json!({"campaign_id": c, "ticket_id": t, "email": "nope", "quantity": 1}), vec!["email"]),
        (json!({"campaign_id": c, "ticket_id": t, "email": "a@b.co", "quantity": 0}), vec!["quantity"]),
        (json!({"campaign_id": c, "ticket_id": t, "email": "a@b.co", "quantity": 1.5}), vec!["quantity"]),
        (json!({"campaign_id": c, "ticket_id": t, "email": "a@b.co", "quantity": 11}), vec!["quantity"]),
        (json!({"campaign_id": c, "ticket_id": t, "email": "a@b.co", "quantity": 1, "extra": 1}), vec!["extra"]),
        (
            json!({"campaign_id": c, "ticket_id": t, "email": "a@b.co", "quantity": 1, "callbackUrl": "https://evil.example.net/x"}),
            vec!["callbackUrl"],
        ),
        (
            json!({"campaign_id": c, "ticket_id": t, "email": "a@b.co", "quantity": 1, "callbackUrl": format!("http://{domain}/x")}),
            vec!["callbackUrl"],
        ),
        (
            json!({"transactionType": "gift"}),
            vec!["transactionType", "amount", "email", "phoneNumber", "callbackUrl", "metadata.campaignId"],
        ),
        (
            json!({"transactionType": "donation", "amount": 0, "email": "a@b.co", "phoneNumber": "0241234567",
                   "callbackUrl": format!("https://{domain}/x"), "metadata": {"campaignId": c}}),
            vec!["amount"],
        ),
        (
            json!({"transactionType": "donation", "amount": 1.234, "email": "a@b.co", "phoneNumber": "0241234567",
                   "callbackUrl": format!("https://{domain}/x"), "metadata": {"campaignId": c}}),
            vec!["amount"],
        ),
        (
            json!({"transactionType": "donation", "amount": 1, "email": "a@b.co", "phoneNumber": "12",
                   "callbackUrl": format!("https://{domain}/x"), "metadata": {"campaignId": c}, "channel": "fax"}),
            vec!["phoneNumber", "channel"],
        ),
        (
            json!({"transactionType": "vote", "amount": 2, "email": "a@b.co", "phoneNumber": "0241234567",
                   "callbackUrl": format!("https://{domain}/x"), "metadata": {"campaignId": c}}),
            vec!["metadata.participantId"],
        ),
        (
            json!({"transactionType": "ticket", "amount": 10, "email": "a@b.co", "phoneNumber": "0241234567",
                   "callbackUrl": format!("https://{domain}/x"), "metadata": {"campaignId": c, "quantity": 0}}),
            vec!["metadata.ticketTypeId", "metadata.quantity"],
        ),
    ];
    for (body, fields) in cases {
        let r = initialize(&p, body.clone()).await;
        assert_error(&r, 400, "validation_failed");
        let mut got = detail_fields(&r.json());
        got.sort();
        let mut want: Vec<String> = fields.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(got, want, "body {body}: {}", r.json());
    }
    // A donation into a ticketing campaign names the campaign field.
    let r = initialize(
        &p,
        json!({"transactionType": "donation", "amount": 1, "email": "a@b.co", "phoneNumber": "0241234567",
               "callbackUrl": format!("https://{domain}/x"), "metadata": {"campaignId": c}}),
    )
    .await;
    assert_error(&r, 400, "validation_failed");
    assert_eq!(detail_fields(&r.json()), vec!["metadata.campaignId"]);
    // A body that is not JSON, or not an object.
    let r = send(&p, &p.account.private, Method::POST, INITIALIZE, Some(json!([1]))).await;
    assert_error(&r, 400, "malformed_json");
    assert_eq!(remaining(&p, &t).await, 10, "nothing was reserved by a refused request");
}

async fn attendee_answers_are_kept_per_ticket_in_both_forms(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    // Form 1, free: issued at once with each attendee's answers.
    let free = answered_ticket_type(&p, &p.account.private, &c, 0.0).await;
    let mut body = checkout_body(&p, &c, &free, 2);
    body["attendees"] = two_attendees();
    let r = initialize(&p, body).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let data = r.json()["data"].clone();
    assert_eq!(data["status"], "success", "{data}");
    assert_two_attendees(&data["tickets"]);
    assert_two_attendees(&payment(&p, data["reference"].as_str().expect("reference")).await["tickets"]);
    // Form 2, paid: the pending transaction carries the attendees until settlement.
    let paid = answered_ticket_type(&p, &p.account.private, &c, 10.0).await;
    let r = initialize(&p, routed_ticket_body(&p, &c, &paid, 2, two_attendees())).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let reference = r.json()["data"]["reference"].as_str().expect("reference").to_string();
    assert_eq!(payment(&p, &reference).await["tickets"], json!([]));
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    drain(&p).await;
    let shown = payment(&p, &reference).await;
    assert_eq!(shown["status"], "success", "{shown}");
    assert_two_attendees(&shown["tickets"]);
    // Optional answers may be left out; a type that asks nothing shows empty answers.
    let mut body = checkout_body(&p, &c, &free, 1);
    body["attendees"] = json!([{"answers": {"company": "Acme", "work_email": "a@acme.example"}}]);
    let r = initialize(&p, body).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(
        r.json()["data"]["tickets"][0]["attendee"]["answers"],
        json!({"company": "Acme", "work_email": "a@acme.example"})
    );
    let plain = ticket_type(&p, &p.account.private, &c, 0.0, 5).await;
    let data = buy(&p, &c, &plain, 1).await;
    assert_eq!(data["tickets"][0]["attendee"]["answers"], json!({}), "{data}");
    assert_ledger_clean(&p);
}

async fn each_bad_attendee_input_is_a_400_naming_its_field_and_writes_nothing(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = answered_ticket_type(&p, &p.account.private, &c, 10.0).await;
    let free = answered_ticket_type(&p, &p.account.private, &c, 0.0).await;
    let ok = |company: &str| json!({"answers": {"company": company, "work_email": "a@b.example"}});
    let form1 = |ticket: &str, attendees: Value| {
        let mut body = checkout_body(&p, &c, ticket, 2);
        if !attendees.is_null() {
            body["attendees"] = attendees;
        }
        body
    };
    let a0 = "attendees[0].answers";
    let cases: Vec<(Value, Vec<String>)> = vec![
        // No attendees, yet the type requires answers: every ticket's required field is named.
        (
            form1(&t, Value::Null),
            vec![
                format!("{a0}.company"),
                format!("{a0}.work_email"),
                "attendees[1].answers.company".into(),
                "attendees[1].answers.work_email".into(),
            ],
        ),
        (
            form1(&free, json!([ok("A"), {"answers": {"work_email": "k@b.example"}}])),
            vec!["attendees[1].answers.company".into()],
        ),
        (form1(&t, json!([ok("  "), ok("B")])), vec![format!("{a0}.company")]),
        (
            form1(&t, json!([{"answers": {"company": "A", "work_email": "nope"}}, ok("B")])),
            vec![format!("{a0}.work_email")],
        ),
        (
            form1(&t, json!([{"answers": {"company": "A", "work_email": "a@b.example", "shoe_size": "42"}}, ok("B")])),
            vec![format!("{a0}.shoe_size")],
        ),
        (
            form1(&t, json!([{"answers": {"company": 5, "work_email": "a@b.example"}}, ok("B")])),
            vec![format!("{a0}.company")],
        ),
        (form1(&t, json!([{"answers": "Acme"}, ok("B")])), vec![a0.to_string()]),
        (form1(&t, json!([{"full_name": "No Answers"}, ok("B")])), vec![a0.to_string()]),
        (form1(&t, json!([1, ok("B")])), vec!["attendees[0]".into()]),
        (
            form1(&t, json!([{"answers": {"company": "A", "work_email": "a@b.example"}, "phone": "1"}, ok("B")])),
            vec!["attendees[0].phone".into()],
        ),
        (
            form1(&t, json!([{"answers": {"company": "A", "work_email": "a@b.example"}, "email": "nope"}, ok("B")])),
            vec!["attendees[0].email".into()],
        ),
        (
            form1(&t, json!([{"answers": {"company": "A", "work_email": "a@b.example"}, "full_name": 7}, ok("B")])),
            vec!["attendees[0].full_name".into()],
        ),
        (form1(&t, json!({"0": ok("A")})), vec!["attendees".into()]),
        (form1(&t, json!([ok("A")])), vec!["attendees".into()]),
        (form1(&t, json!([ok("A"), ok("B"), ok("C")])), vec!["attendees".into()]),
        // Form 2 names the fields as its body does.
        (
            routed_ticket_body(&p, &c, &t, 2, json!([ok("A"), {"answers": {"work_email": "k@b.example"}}])),
            vec!["metadata.attendees[1].answers.company".into()],
        ),
        (
            routed_ticket_body(&p, &c, &t, 2, json!([{"answers": {"company": "A", "work_email": "x"}}, ok("B")])),
            vec!["metadata.attendees[0].answers.work_email".into()],
        ),
        (
            routed_ticket_body(
                &p,
                &c,
                &t,
                2,
                json!([{"answers": {"company": "A", "work_email": "a@b.example", "x": "1"}}, ok("B")]),
            ),
            vec!["metadata.attendees[0].answers.x".into()],
        ),
        (routed_ticket_body(&p, &c, &t, 2, json!([ok("A")])), vec!["metadata.attendees".into()]),
        (routed_ticket_body(&p, &c, &t, 2, json!("A")), vec!["metadata.attendees".into()]),
    ];
    for (body, mut want) in cases {
        let r = initialize(&p, body.clone()).await;
        assert_error(&r, 400, "validation_failed");
        let mut got = detail_fields(&r.json());
        got.sort();
        want.sort();
        assert_eq!(got, want, "body {body}: {}", r.json());
    }
    // Nothing was written: no transaction, no hold, no ticket.
    assert_eq!(remaining(&p, &t).await, 10);
    assert_eq!(remaining(&p, &free).await, 10);
    let list: Value = p.api().get(PAYMENTS, StatusCode::OK).await;
    assert_eq!(list["pagination"]["total"], 0, "{list}");
    assert!(p.sandbox.callbacks().is_empty());
}

async fn campaigns_that_are_not_open_refuse_payments(b: Backend) {
    let p = spawn_paid(b).await;
    let draft = crate::support::catalogue::create_campaign(&p, "ticketing", "draft").await;
    let t = ticket_type(&p, &p.account.private, &draft, 10.0, 10).await;
    assert_error(&initialize(&p, checkout_body(&p, &draft, &t, 1)).await, 409, "conflict");
    // Approved but in the future (2030).
    let later = crate::support::catalogue::create_campaign(&p, "ticketing", "approved").await;
    let t2 = ticket_type(&p, &p.account.private, &later, 10.0, 10).await;
    assert_error(&initialize(&p, checkout_body(&p, &later, &t2, 1)).await, 409, "conflict");
    // A ticket type of another campaign, and unknown ids: 404.
    let live = running_campaign(&p, &p.account.private, "ticketing").await;
    assert_error(&initialize(&p, checkout_body(&p, &live, &t, 1)).await, 404, "not_found");
    let nobody = uuid::Uuid::now_v7().to_string();
    assert_error(&initialize(&p, checkout_body(&p, &nobody, &t, 1)).await, 404, "not_found");
}

async fn payments_need_the_payments_scope_and_stay_in_their_account(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 10).await;
    let data = buy(&p, &c, &t, 1).await;
    let reference = data["reference"].as_str().expect("reference");
    let reader = p.create_key(&p.account.slug, "private", None, "campaigns:read,tickets:read", &[]).await;
    for (method, path, body) in [
        (Method::POST, INITIALIZE.to_string(), Some(checkout_body(&p, &c, &t, 1))),
        (Method::POST, VERIFY.to_string(), Some(json!({"reference": reference}))),
        (Method::GET, format!("{PAYMENTS}/{reference}"), None),
        (Method::GET, PAYMENTS.to_string(), None),
        (Method::GET, BALANCE.to_string(), None),
        (Method::GET, LEDGER.to_string(), None),
    ] {
        let r = send(&p, &reader, method, &path, body).await;
        assert_error(&r, 403, "insufficient_scope");
    }
    // Another account sees none of it.
    let other = p.new_account("other").await;
    let r = send(&p, &other.private, Method::GET, &format!("{PAYMENTS}/{reference}"), None).await;
    assert_error(&r, 404, "not_found");
    let r = send(&p, &other.private, Method::POST, VERIFY, Some(json!({"reference": reference}))).await;
    assert_error(&r, 404, "not_found");
    let mut theirs = checkout_body(&p, &c, &t, 1);
    theirs["callbackUrl"] = json!(format!("https://{}/thanks", other.domain));
    let r = send(&p, &other.private, Method::POST, INITIALIZE, Some(theirs)).await;
    assert_error(&r, 404, "not_found");
    let (s, list) = p.signed_as(&other.private, Method::GET, PAYMENTS, None).await;
    assert_eq!(s, 200);
    assert_eq!(list["data"], json!([]));
    let r = send(&p, &other.private, Method::GET, &format!("{PAYMENTS}?campaignId={c}"), None).await;
    assert_error(&r, 404, "not_found");
    // A domain key cannot initialize.
    let r = p
        .http
        .post(p.url(INITIALIZE))
        .header("x-white-label-domain", &p.account.domain)
        .header("x-white-label-key", p.account.public.header())
        .json(&checkout_body(&p, &c, &t, 1))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 401);
}

async fn the_payment_list_filters_and_pages(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 50).await;
    let free = ticket_type(&p, &p.account.private, &c, 0.0, 50).await;
    for _ in 0..3 {
        buy(&p, &c, &t, 1).await;
    }
    buy(&p, &c, &free, 1).await;
    let all: Value = p.api().get(&format!("{PAYMENTS}?limit=2"), StatusCode::OK).await;
    assert_eq!(all["pagination"], json!({"page": 1, "limit": 2, "total": 4, "hasMore": true}));
    let (_, ok) = p.signed(Method::GET, &format!("{PAYMENTS}?status=success&type=ticket&campaignId={c}"), None).await;
    assert_eq!(ok["pagination"]["total"], 1, "{ok}");
    assert_eq!(ok["data"][0]["tickets"].as_array().map(Vec::len), Some(1));
    let (_, pending) = p.signed(Method::GET, &format!("{PAYMENTS}?status=pending"), None).await;
    assert_eq!(pending["pagination"]["total"], 3);
    for q in ["status=paid", "type=gift", "page=0", "limit=101", "color=red"] {
        let r = send(&p, &p.account.private, Method::GET, &format!("{PAYMENTS}?{q}"), None).await;
        assert_error(&r, 400, "validation_failed");
    }
    let r = send(&p, &p.account.private, Method::GET, &format!("{PAYMENTS}/tsr_unknown"), None).await;
    assert_error(&r, 404, "not_found");
}

async fn a_provider_outage_falls_back_and_none_reachable_reserves_nothing(b: Backend) {
    let p = spawn_paid(b).await;
    p.signed(
        Method::PATCH,
        "/api/white-label/v1/settings/payments",
        Some(json!({"config": {"defaultProvider": "provider_a", "fallbackProvider": "provider_b"}})),
    )
    .await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 10).await;
    p.sandbox.set_outage("provider_a", true);
    let data = buy(&p, &c, &t, 1).await;
    assert_eq!(data["provider"], "provider_b", "{data}");
    let reference = data["reference"].as_str().expect("reference").to_string();
    assert!(p.sandbox.charge(&reference).is_some());
    // provider_b's callback (HMAC-SHA256) confirms it.
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    drain(&p).await;
    assert_eq!(payment(&p, &reference).await["status"], "success");
    // Both down: 502 and nothing reserved.
    p.sandbox.set_outage("provider_b", true);
    let before = remaining(&p, &t).await;
    let r = initialize(&p, checkout_body(&p, &c, &t, 2)).await;
    assert_error(&r, 502, "provider_unavailable");
    assert_eq!(remaining(&p, &t).await, before);
    let (_, list) = p.signed(Method::GET, &format!("{PAYMENTS}?status=pending"), None).await;
    assert_eq!(list["pagination"]["total"], 0, "no transaction is left behind: {list}");
    assert_ledger_clean(&p);
}

async fn an_account_without_a_configured_provider_gets_502(b: Backend) {
    let p = spawn_paid(b).await;
    p.signed(
        Method::PATCH,
        "/api/white-label/v1/settings/payments",
        Some(json!({"config": {"useSharedDefaults": false}})),
    )
    .await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 10).await;
    let r = initialize(&p, checkout_body(&p, &c, &t, 1)).await;
    assert_error(&r, 502, "provider_unavailable");
    assert_eq!(remaining(&p, &t).await, 10);
}

async fn an_accounts_own_provider_credentials_are_used_and_sign_its_callbacks(b: Backend) {
    let p = spawn_paid_with(b, |c| c.security.allow_private_endpoints = true).await;
    let own = p.sandbox.provider_url("provider_c");
    let (s, body) = p
        .signed(
            Method::PATCH,
            "/api/white-label/v1/settings/payments",
            Some(json!({"config": {"useSharedDefaults": false, "defaultProvider": "provider_c",
                "providers": {"provider_c": {"baseUrl": own, "secretKey": "sk_live_account_own_c",
                    "apiId": "account-api-id", "posSalesId": "2020001", "prepaidDepositId": "2020002",
                    "callbackToken": "account-own-token"}}}})),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 12.0, 10).await;
    let data = buy(&p, &c, &t, 1).await;
    assert_eq!(data["provider"], "provider_c");
    let reference = data["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    let delivered = p.sandbox.callbacks();
    assert_eq!(delivered[0]["status"], 200, "to the account's own token, signed with its secret: {delivered:?}");
    assert!(delivered[0]["url"].as_str().is_some_and(|u| u.ends_with("/webhooks/provider_c/account-own-token")));
    drain(&p).await;
    assert_eq!(payment(&p, &reference).await["status"], "success");
    // The platform's secret for provider_c does not sign this account's events... but is still
    // accepted as the platform's shared secret (D6.1); another secret is not.
    let (body, sig) = signed_event(
        "provider_c",
        "sk_wrong",
        json!({"ResponseCode": "0000", "Data": {"TransactionId": "x", "ClientReference": reference.replace('_', "")}}),
    );
    assert_error(&post_callback(&p, "provider_c", body, Some(&sig)).await, 401, "invalid_signature");
}

async fn a_failed_charge_releases_its_seats(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 5).await;
    let data = buy(&p, &c, &t, 2).await;
    let reference = data["reference"].as_str().expect("reference").to_string();
    assert_eq!(remaining(&p, &t).await, 3);
    sandbox_settle(&p, &reference, "fail", json!({})).await;
    drain(&p).await;
    assert_eq!(payment(&p, &reference).await["status"], "failed");
    assert_eq!(remaining(&p, &t).await, 5);
    // A charge.success arriving after is verified with the provider, which says failed: final.
    let (body, sig) = signed_event(
        "provider_a",
        &platform_secret("provider_a"),
        json!({"event": "charge.success", "data": {"id": 999_999, "reference": reference, "status": "success", "amount": 2000}}),
    );
    assert_eq!(post_callback(&p, "provider_a", body, Some(&sig)).await.status, 200);
    drain(&p).await;
    assert_eq!(payment(&p, &reference).await["status"], "failed");
    assert_ledger_clean(&p);
}

async fn out_of_order_events_never_undo_a_success(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 5).await;
    let reference = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    drain(&p).await;
    let (body, sig) = signed_event(
        "provider_a",
        &platform_secret("provider_a"),
        json!({"event": "charge.failed", "data": {"id": 1, "reference": reference, "status": "failed"}}),
    );
    let r = post_callback(&p, "provider_a", body, Some(&sig)).await;
    assert_eq!(r.status, 200, "a charge.failed after a charge.success is a new event, stored");
    drain(&p).await;
    let paid = payment(&p, &reference).await;
    assert_eq!(paid["status"], "success");
    assert_eq!(paid["tickets"].as_array().map(Vec::len), Some(1));
    assert_ledger_clean(&p);
}

async fn a_mismatched_amount_is_flagged_and_never_credited(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 5).await;
    let reference = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &reference, "succeed", json!({"amount": 100})).await;
    drain(&p).await;
    let shown = payment(&p, &reference).await;
    assert_eq!(shown["status"], "pending", "{shown}");
    assert_eq!(shown["mismatch"], true);
    assert_eq!(shown["tickets"], json!([]));
    let (_, bal) = p.signed(Method::GET, BALANCE, None).await;
    assert_eq!(bal["data"]["available"], json!(0));
    // Another currency is a mismatch too.
    let r2 = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &r2, "succeed", json!({"currency": "NGN"})).await;
    drain(&p).await;
    assert_eq!(payment(&p, &r2).await["mismatch"], true);
    assert_ledger_clean(&p);
}

async fn the_polling_path_confirms_a_charge_whose_callback_never_comes(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 5).await;
    let reference = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &reference, "succeed", json!({"deliver": false})).await;
    assert!(p.sandbox.callbacks().is_empty(), "no callback was sent");
    assert_eq!(p.store.callback_count(&reference).await.expect("count"), 0);
    // The verify interval is 1 ms in these tests: the poll is due at once.
    tokio::task::yield_now().await;
    std::thread::sleep(std::time::Duration::from_millis(5));
    drain(&p).await;
    assert_eq!(payment(&p, &reference).await["status"], "success");
    assert_ledger_clean(&p);
}

async fn an_expired_hold_is_abandoned_and_released_and_a_late_payment_is_still_credited(b: Backend) {
    let p = spawn_paid_with(b, |c| c.payments.hold_seconds = 0).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 2).await;
    let first = buy(&p, &c, &t, 2).await["reference"].as_str().expect("reference").to_string();
    assert_eq!(remaining(&p, &t).await, 0);
    std::thread::sleep(std::time::Duration::from_millis(5));
    drain(&p).await;
    assert_eq!(payment(&p, &first).await["status"], "abandoned");
    assert_eq!(remaining(&p, &t).await, 2, "the hold is released");
    // Someone else buys both seats; then the first buyer's payment arrives late.
    let second = buy(&p, &c, &t, 2).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &second, "succeed", json!({})).await;
    drain(&p).await;
    assert_eq!(payment(&p, &second).await["status"], "success");
    sandbox_settle(&p, &first, "succeed", json!({})).await;
    drain(&p).await;
    let late = payment(&p, &first).await;
    assert_eq!(late["status"], "abandoned", "no seats left: credited, not fulfilled: {late}");
    assert_eq!(late["paidLate"], true);
    assert_eq!(late["tickets"], json!([]));
    let (_, bal) = p.signed(Method::GET, BALANCE, None).await;
    assert_eq!(bal["data"]["available"], json!(40), "both payments are real money");
    assert_ledger_clean(&p);
}

async fn a_late_payment_with_seats_left_is_fulfilled(b: Backend) {
    let p = spawn_paid_with(b, |c| c.payments.hold_seconds = 0).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 5).await;
    let reference = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    std::thread::sleep(std::time::Duration::from_millis(5));
    drain(&p).await;
    assert_eq!(payment(&p, &reference).await["status"], "abandoned");
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    drain(&p).await;
    let late = payment(&p, &reference).await;
    assert_eq!(late["status"], "success");
    assert_eq!(late["paidLate"], true);
    assert_eq!(late["tickets"].as_array().map(Vec::len), Some(1));
    assert_ledger_clean(&p);
}

async fn settlement_delay_keeps_new_money_pending(b: Backend) {
    let p = spawn_paid_with(b, |c| c.payments.settlement_delay_seconds = 3600).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 10.0, 5).await;
    let reference = buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &reference, "succeed", json!({})).await;
    drain(&p).await;
    let (_, bal) = p.signed(Method::GET, BALANCE, None).await;
    assert_eq!(bal["data"], json!({"available": 0, "pending": 10, "held": 0, "currency": "GHS"}));
}

async fn one_thousand_concurrent_checkouts_for_one_hundred_seats_sell_exactly_one_hundred(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 5.0, 100).await;
    let body = checkout_body(&p, &c, &t, 1);
    let client = p.client();
    let mut tasks = Vec::new();
    for i in 0..1000 {
        // Each buyer its own e-mail, so no two requests are the same bytes in the same millisecond
        // (those would share one single-use signature, D2.6).
        let mut mine = body.clone();
        mine["email"] = json!(format!("buyer{i}@example.com"));
        let (client, bytes) = (client.clone(), serde_json::to_vec(&mine).expect("json"));
        tasks.push(tokio::spawn(async move { client.send_raw(Method::POST, INITIALIZE, bytes, None).await }));
    }
    let mut references = Vec::new();
    let mut sold_out = 0;
    for task in tasks {
        let r = task.await.expect("join").expect("send");
        match r.status {
            200 => references.push(r.json()["data"]["reference"].as_str().expect("reference").to_string()),
            409 => {
                assert_eq!(r.json()["code"], "sold_out");
                sold_out += 1;
            }
            other => panic!("unexpected {other}: {}", r.json()),
        }
    }
    assert_eq!(references.len(), 100, "exactly the seats there are");
    assert_eq!(sold_out, 900);
    // Half pay, half fail: every reservation ends fulfilled or released.
    for (i, reference) in references.iter().enumerate() {
        let outcome = if i % 2 == 0 { "succeed" } else { "fail" };
        sandbox_settle(&p, reference, outcome, json!({})).await;
    }
    drain(&p).await;
    let tt = p.store.ticket_type(&p.account.id, &t).await.expect("type");
    assert_eq!(tt.quantity_sold, 50);
    assert_eq!(tt.quantity_held, 0);
    assert_ledger_clean(&p);
}

async fn the_sdk_initializes_verifies_and_reads_money(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "ticketing").await;
    let t = ticket_type(&p, &p.account.private, &c, 12.5, 5).await;
    let sdk = p.client();
    let init = sdk.initialize_payment(&checkout_body(&p, &c, &t, 2)).await.expect("initialize");
    assert_eq!((init.status.as_str(), init.amount, init.provider.as_deref()), ("pending", 25.0, Some("provider_a")));
    sandbox_settle(&p, &init.reference, "succeed", json!({"deliver": false})).await;
    // verify asks the provider and fulfils, without any worker.
    let paid = sdk.verify_payment(&init.reference).await.expect("verify");
    assert_eq!(paid.status, "success");
    assert_eq!(paid.tickets.len(), 2);
    assert_eq!(sdk.payment(&init.reference).await.expect("payment").tickets.len(), 2);
    let listed = sdk.payments("status=success").await.expect("list");
    assert_eq!(listed.pagination.as_ref().map(|p| p.total), Some(1));
    let balance = sdk.balance().await.expect("balance");
    assert_eq!((balance.available, balance.pending, balance.held), (25.0, 0.0, 0.0));
    let ledger = sdk.ledger("limit=5").await.expect("ledger");
    assert_eq!(ledger.data.len(), 1);
    assert_eq!(ledger.data[0].kind, "charge");
    let err = sdk.payment("tsr_nope").await.expect_err("unknown");
    assert_eq!((err.status(), err.code()), (Some(404), Some("not_found")));
    assert_ledger_clean(&p);
}

on_both!(
    the_sdk_initializes_verifies_and_reads_money,
    a_checkout_reserves_seats_and_returns_the_providers_checkout,
    a_paid_charge_is_confirmed_credited_and_fulfilled_once,
    fees_follow_the_accounts_rule_and_its_bearer,
    votes_are_counted_once_from_the_amount_paid,
    a_donation_is_recorded_with_its_amount,
    a_form_2_ticket_must_pay_exactly_quantity_times_price,
    free_tickets_are_issued_at_once_without_a_provider,
    each_initialization_rule_is_a_400_naming_its_field,
    attendee_answers_are_kept_per_ticket_in_both_forms,
    each_bad_attendee_input_is_a_400_naming_its_field_and_writes_nothing,
    campaigns_that_are_not_open_refuse_payments,
    payments_need_the_payments_scope_and_stay_in_their_account,
    the_payment_list_filters_and_pages,
    a_provider_outage_falls_back_and_none_reachable_reserves_nothing,
    an_account_without_a_configured_provider_gets_502,
    an_accounts_own_provider_credentials_are_used_and_sign_its_callbacks,
    a_failed_charge_releases_its_seats,
    out_of_order_events_never_undo_a_success,
    a_mismatched_amount_is_flagged_and_never_credited,
    the_polling_path_confirms_a_charge_whose_callback_never_comes,
    an_expired_hold_is_abandoned_and_released_and_a_late_payment_is_still_credited,
    a_late_payment_with_seats_left_is_fulfilled,
    settlement_delay_keeps_new_money_pending,
    one_thousand_concurrent_checkouts_for_one_hundred_seats_sell_exactly_one_hundred,
);

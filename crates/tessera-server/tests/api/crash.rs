//! Crash safety of money (D6.2, D16.8, D16.13): `tessera serve` as a real process, SIGKILLed
//! after a callback was handed off (stored and answered 200) and before it was reconciled, or
//! after the payout worker's transfer call and before its result was recorded, or after a USSD
//! vote's mobile-money charge call reached the provider and before its answer came back. After a
//! restart the charge is fulfilled exactly once, the withdrawal paid exactly once, the vote charged
//! once and credited once, and the money audit is clean.
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_client::Method;

use crate::support::process::{buy_three_seats, call, created_id, succeed, Rig};
use crate::support::server::Backend;

async fn a_sigkill_between_hand_off_and_reconciliation_loses_nothing_and_pays_once(b: Backend) {
    let rig =
        Rig::start(&b, "crash", "Crash Test", "campaigns:write,tickets:write,payments:write,withdrawals:write", None)
            .await;
    let Rig { sandbox, server, addr, client, .. } = &rig;

    // First life: no workers, so a stored callback cannot be reconciled before the kill.
    let mut first = server.start(addr, false);
    let reference = buy_three_seats(client, "Crash Night", "crash@example.com").await;

    // The provider confirms; the callback is stored and answered 200 (the hand-off) ...
    succeed(sandbox, "charges", &reference, json!({})).await;
    let delivered = sandbox.callbacks();
    assert_eq!(delivered[0]["status"], 200, "the hand-off was acknowledged: {delivered:?}");
    // ... and the server dies before any worker looked at it.
    first.kill().expect("SIGKILL");
    first.wait().expect("reaped");
    let audit = server.cmd().args(["admin", "ledger", "check", "--json"]).output().expect("ledger check");
    assert!(audit.status.success(), "nothing is credited yet, and nothing is wrong");

    // Second life, with workers: the stored event is reconciled and the charge fulfilled once.
    let mut second = server.start(addr, true);
    let deadline = Instant::now() + Duration::from_secs(30);
    let paid = loop {
        let (s, p) = call(client, Method::GET, &format!("/api/white-label/v1/payments/{reference}"), None).await;
        assert_eq!(s, 200, "{p}");
        if p["data"]["status"] == "success" {
            break p["data"].clone();
        }
        assert!(Instant::now() < deadline, "not fulfilled after restart: {p}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(paid["tickets"].as_array().map(Vec::len), Some(3), "{paid}");
    // Let the workers run on a little: nothing more happens.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, again) = call(client, Method::GET, &format!("/api/white-label/v1/payments/{reference}"), None).await;
    assert_eq!(again["data"]["tickets"].as_array().map(Vec::len), Some(3));
    let (_, ledger) = call(client, Method::GET, "/api/white-label/v1/ledger", None).await;
    assert_eq!(ledger["pagination"]["total"], 1, "one charge entry: {ledger}");
    assert_eq!(ledger["data"][0]["amount"], json!(90));
    second.kill().expect("stop");
    second.wait().expect("reaped");
    server.assert_ledger_clean();
}

async fn the_money_audit_fails_on_a_ledger_that_does_not_add_up(b: Backend) {
    let p = crate::support::payments::spawn_paid(b).await;
    let c = crate::support::catalogue::running_campaign(&p, &p.account.private, "ticketing").await;
    let t = crate::support::catalogue::ticket_type(&p, &p.account.private, &c, 10.0, 5).await;
    let reference =
        crate::support::payments::buy(&p, &c, &t, 1).await["reference"].as_str().expect("reference").to_string();
    crate::support::payments::sandbox_settle(&p, &reference, "succeed", json!({})).await;
    crate::support::server::drain(&p).await;
    crate::support::ledger::assert_ledger_clean(&p);
    // A credit written behind the ledger's back: the audit names it and exits 1.
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&p.database_url).await.expect("connect");
    sqlx::query(
        "INSERT INTO ledger_entries (id, account_id, kind, amount, reference, settles_at, created_at) \
         VALUES ('forged', $1, 'charge', 500, 'tsr_forged', 0, 0)",
    )
    .bind(&p.account.id)
    .execute(&mut conn)
    .await
    .expect("forge");
    let out = p.cli(&["admin", "ledger", "check", "--account", &p.account.slug, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["ok"], false);
    let checks: Vec<&str> =
        report["discrepancies"].as_array().expect("list").iter().filter_map(|d| d["check"].as_str()).collect();
    assert!(checks.contains(&"charges_equal_confirmed_amounts"), "{report}");
    assert!(checks.contains(&"no_entry_without_confirmed_charge"), "{report}");
}

async fn a_sigkill_between_the_transfer_call_and_its_result_pays_withdrawals_once(b: Backend) {
    let rig = Rig::start(
        &b,
        "payout",
        "Payout Crash",
        "campaigns:write,tickets:write,payments:write,withdrawals:write",
        Some("withdrawals"),
    )
    .await;
    let env = rig.fast_claims();
    let Rig { sandbox, server, addr, client, .. } = &rig;

    // First life, no workers: money comes in (confirmed through payments/verify) and a
    // withdrawal is created with its hold and payout job.
    let mut first = server.start_with(addr, false, &env);
    let reference = buy_three_seats(client, "Payout Night", "payout@example.com").await;
    succeed(sandbox, "charges", &reference, json!({"deliver": false})).await;
    let (s, paid) =
        call(client, Method::POST, "/api/white-label/v1/payments/verify", Some(json!({"reference": reference}))).await;
    assert_eq!((s, paid["data"]["status"].as_str()), (200, Some("success")), "{paid}");
    let mut h = reqwest::header::HeaderMap::new();
    h.insert("x-idempotency-key", reqwest::header::HeaderValue::from_static("crash-payout-1"));
    let body = json!({"amount": 50, "bank_name": "GCB Bank", "bank_code": "GCB", "account_number": "1234567890",
        "account_name": "Kofi Boateng"});
    let r = client
        .send_raw(Method::POST, "/api/white-label/v1/withdrawals", serde_json::to_vec(&body).expect("json"), Some(h))
        .await
        .expect("send");
    assert_eq!(r.status, 201, "{}", r.json());
    let id = r.json()["data"]["id"].as_str().expect("id").to_string();
    first.kill().expect("SIGKILL");
    first.wait().expect("reaped");

    // Second life, with workers: killed the moment the sandbox holds the transfer, before (or
    // at best just as) the server records what the provider answered.
    let mut second = server.start_with(addr, true, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    while sandbox.transfer(&id).is_none() {
        assert!(Instant::now() < deadline, "the payout worker never created the transfer");
        std::thread::sleep(Duration::from_micros(200));
    }
    second.kill().expect("SIGKILL");
    second.wait().expect("reaped");
    let audit = server.cmd().args(["admin", "ledger", "check", "--json"]).output().expect("ledger check");
    assert!(
        audit.status.success(),
        "held, nothing else, and nothing wrong: {}",
        String::from_utf8_lossy(&audit.stdout)
    );

    // The provider pays it while the server is down (no callback reaches anyone).
    succeed(sandbox, "transfers", &id, json!({"deliver": false})).await;

    // Third life: the worker adopts the one transfer (never creates another) and follows it to
    // the sandbox's state.
    let mut third = server.start_with(addr, true, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let (s, w) = call(client, Method::GET, &format!("/api/white-label/v1/withdrawals/{id}"), None).await;
        assert_eq!(s, 200, "{w}");
        if w["data"]["status"] == "completed" {
            break w["data"].clone();
        }
        assert!(Instant::now() < deadline, "not completed after restart: {w}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["amount"], json!(50));
    let transfer = sandbox.transfer(&id).expect("the one transfer");
    assert_eq!((transfer["amount"].as_i64(), transfer["status"].as_str()), (Some(5000), Some("success")));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, ledger) = call(client, Method::GET, "/api/white-label/v1/ledger", None).await;
    let mut kinds: Vec<(String, f64)> = ledger["data"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["reference"] == id.as_str())
        .map(|e| (e["kind"].as_str().unwrap_or_default().to_string(), e["amount"].as_f64().unwrap_or_default()))
        .collect();
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        kinds,
        vec![
            ("withdrawal_debit".to_string(), -50.0),
            ("withdrawal_hold".to_string(), -50.0),
            ("withdrawal_release".to_string(), 50.0)
        ],
        "{ledger}"
    );
    let (_, balance) = call(client, Method::GET, "/api/white-label/v1/balance", None).await;
    assert_eq!(balance["data"]["available"], json!(40), "{balance}");
    third.kill().expect("stop");
    third.wait().expect("reaped");
    server.assert_ledger_clean();
}

/// One gateway request in Africa's Talking's wire; the screen with its `CON `/`END `.
async fn at_request(base: &str, text: &str) -> String {
    let form =
        format!("sessionId=crash-1&serviceCode=*920*44%23&phoneNumber=233241234567&networkCode=62001&text={text}");
    let r = reqwest::Client::new()
        .post(format!("{base}/api/white-label/ussd/africastalking/dial?token=crash-ussd-callback-token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("ussd");
    assert_eq!(r.status().as_u16(), 200);
    r.text().await.expect("text")
}

async fn a_sigkill_between_the_mobile_money_charge_call_and_its_result_charges_once(b: Backend) {
    let rig = Rig::start(
        &b,
        "dial",
        "Dial Crash",
        "campaigns:read,campaigns:write,settings:write,payments:write,tickets:read",
        None,
    )
    .await;
    let env = rig.fast_claims();
    let Rig { sandbox, server, addr, base, client, .. } = &rig;

    // First life, no workers: a voting campaign, a nominee, USSD on, and a fan confirms 4 votes.
    let mut first = server.start_with(addr, false, &env);
    let now = time::OffsetDateTime::now_utc();
    let fmt = |t: time::OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).expect("rfc3339");
    let campaign = created_id(
        client,
        "/api/white-label/v1/campaigns",
        json!({"title": "Crash Awards", "description": "Votes must survive a kill -9.", "campaign_type": "voting",
            "vote_price": 2, "status": "approved", "start_date": fmt(now - time::Duration::days(1)),
            "end_date": fmt(now + time::Duration::days(9))}),
    )
    .await;
    let (s, p) = call(
        client,
        Method::POST,
        "/api/white-label/v1/participants",
        Some(json!({"campaignId": campaign, "name": "Ama Serwaa", "code": "AMA"})),
    )
    .await;
    assert_eq!(s, 201, "{p}");
    let ussd =
        json!({"config": {"enabled": true, "callbackToken": "crash-ussd-callback-token", "serviceCode": "*920*44#"}});
    let (s, u) = call(client, Method::PATCH, "/api/white-label/v1/settings/ussd", Some(ussd)).await;
    assert_eq!(s, 200, "{u}");
    at_request(base, "").await;
    let end = at_request(base, "AMA*4*1").await;
    assert!(end.starts_with("END Approve GHS 8.00 on 0241234567"), "{end}");
    first.kill().expect("SIGKILL");
    first.wait().expect("reaped");

    // Second life, with workers: the charge call reaches the sandbox, which answers 5 s late;
    // killed while the answer is on its way.
    sandbox.set_faults(tessera_server::sandbox::Faults { charge_delay_ms: 5_000, ..Default::default() });
    let mut second = server.start_with(addr, true, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    let reference = loop {
        if let Some(c) = sandbox.charges_for_phone("0241234567").first() {
            break c["reference"].as_str().expect("reference").to_string();
        }
        assert!(Instant::now() < deadline, "the charge worker never called the provider");
        std::thread::sleep(Duration::from_millis(5));
    };
    second.kill().expect("SIGKILL");
    second.wait().expect("reaped");
    sandbox.set_faults(tessera_server::sandbox::Faults::default());

    // Third life: the claim is redone after its lease; the provider refuses the reference it
    // already has, so the charge stands and no second one is made. The handset approves it.
    let mut third = server.start_with(addr, true, &env);
    let deadline = Instant::now() + Duration::from_secs(30);
    while sandbox.charge(&reference).is_some_and(|c| c["prompts"] == 1) {
        assert!(Instant::now() < deadline, "the killed claim was never redone");
        std::thread::sleep(Duration::from_millis(20));
    }
    succeed(sandbox, "charges", &reference, json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (s, pay) = call(client, Method::GET, &format!("/api/white-label/v1/payments/{reference}"), None).await;
        assert_eq!(s, 200, "{pay}");
        if pay["data"]["status"] == "success" {
            break;
        }
        assert!(Instant::now() < deadline, "never credited: {pay}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let charges = sandbox.charges_for_phone("0241234567");
    assert_eq!(charges.len(), 1, "one charge at the provider: {charges:?}");
    assert_eq!(charges[0]["channel"], "mobile_money");
    assert_eq!(charges[0]["amount"], 800);
    let (_, list) =
        call(client, Method::GET, &format!("/api/white-label/v1/participants?campaignId={campaign}"), None).await;
    assert_eq!(list["data"][0]["votes"], 4, "credited once: {list}");
    third.kill().expect("stop");
    third.wait().expect("reaped");
    server.assert_ledger_clean();
}

on_both!(
    a_sigkill_between_the_mobile_money_charge_call_and_its_result_charges_once,
    a_sigkill_between_the_transfer_call_and_its_result_pays_withdrawals_once,
    a_sigkill_between_hand_off_and_reconciliation_loses_nothing_and_pays_once,
    the_money_audit_fails_on_a_ledger_that_does_not_add_up,
);

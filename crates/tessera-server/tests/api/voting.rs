//! Integration tests: voting in public (D17.17, D17.18, D17.40): the public nominees list, the
//! storefront's voting items, the leaderboard and its server-sent-event stream fed by live
//! changes (D17.5), on both databases; on PostgreSQL a vote paid through a second instance
//! reaches a stream on the first.
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};

use crate::support::catalogue::{campaign_body, create_campaign, create_campaign_as, running_campaign};
use crate::support::client::{assert_error, send, StatusCode};
use crate::support::payments::{initialize, sandbox_settle, spawn_paid, spawn_paid_with, PayApp};
use crate::support::server::{drain, key_with, spawn, spawn_second, Backend, TestApp, TestKey};

const PARTICIPANTS: &str = "/api/white-label/v1/participants";

fn board_path(campaign: &str) -> String {
    format!("/api/white-label/v1/campaigns/{campaign}/leaderboard")
}

/// An approved voting campaign (not running: the public lists do not need it) whose metadata
/// says `showVoteCounts: shown`, or says nothing.
async fn voting_campaign(app: &TestApp, shown: Option<bool>) -> String {
    let mut body = campaign_body("voting", "approved");
    if let Some(shown) = shown {
        body["metadata"] = json!({"showVoteCounts": shown});
    }
    let b: Value = app.api().post("/api/white-label/v1/campaigns", &body, StatusCode::CREATED).await;
    b["data"]["id"].as_str().expect("id").to_string()
}

async fn nominee(app: &TestApp, campaign: &str, name: &str, status: &str) -> String {
    let body = json!({"campaignId": campaign, "name": name, "status": status, "description": format!("About {name}"),
        "imageUrl": "https://cdn.example.com/n.png"});
    let b: Value = app.api().post(PARTICIPANTS, &body, StatusCode::CREATED).await;
    b["data"]["id"].as_str().expect("id").to_string()
}

async fn set_status(app: &TestApp, id: &str, status: &str) {
    let _: Value = app.api().patch(&format!("{PARTICIPANTS}/{id}"), &json!({"status": status}), StatusCode::OK).await;
}

async fn show_counts(app: &TestApp, campaign: &str, shown: bool) {
    let body = json!({"metadata": {"showVoteCounts": shown}});
    let _: Value = app.api().patch(&format!("/api/white-label/v1/campaigns/{campaign}"), &body, StatusCode::OK).await;
}

async fn modules(app: &TestApp, voting: Value) {
    let body = json!({"config": {"modules": {"voting": voting}}});
    let _: Value = app.api().patch("/api/white-label/v1/settings/operations", &body, StatusCode::OK).await;
}

async fn public(app: &TestApp, key: &TestKey, path: &str) -> RawResponse {
    app.public_get(path, key, &app.account.domain).await
}

fn names_in_order(items: &Value) -> Vec<String> {
    items.as_array().expect("array").iter().map(|i| i["name"].as_str().expect("name").to_string()).collect()
}

/// Buys `count` votes (2 GHS each on a running campaign) through `via` and settles them there;
/// returns when the customer "paid" (the sandbox's succeed call).
async fn vote(p: &PayApp, via: &TestApp, campaign: &str, participant: &str, count: i64) -> Instant {
    let body = json!({
        "transactionType": "vote", "amount": 2 * count, "email": "fan@example.com", "phoneNumber": "0241234567",
        "callbackUrl": format!("https://{}/voted", p.account.domain),
        "metadata": {"campaignId": campaign, "participantId": participant},
    });
    let r = initialize(via, body).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let reference = r.json()["data"]["reference"].as_str().expect("reference").to_string();
    let paid = Instant::now();
    sandbox_settle(p, &reference, "succeed", json!({})).await;
    drain(via).await;
    paid
}

async fn the_public_nominee_list_shows_active_nominees_of_approved_voting_campaigns(b: Backend) {
    let app = spawn(b).await;
    let shown = voting_campaign(&app, Some(true)).await;
    let quiet = voting_campaign(&app, None).await;
    let draft = create_campaign(&app, "voting", "draft").await;
    let ticketing = create_campaign(&app, "ticketing", "approved").await;
    nominee(&app, &shown, "Ama", "active").await;
    nominee(&app, &shown, "Hidden One", "hidden").await;
    nominee(&app, &shown, "Out One", "eliminated").await;
    let kofi = nominee(&app, &quiet, "Kofi", "active").await;
    nominee(&app, &draft, "Draft One", "active").await;
    // Hidden after creation leaves the public list too (D17.15).
    let later = nominee(&app, &quiet, "Later Hidden", "active").await;
    set_status(&app, &later, "hidden").await;

    let r = public(&app, &app.account.public, PARTICIPANTS).await;
    assert_eq!(r.status, 200, "{}", r.json());
    let body = r.json();
    assert_eq!(names_in_order(&body["data"]), vec!["Kofi", "Ama"], "newest first: {body}");
    assert_eq!(body["pagination"]["total"], 2);
    let ama = &body["data"][1];
    let mut keys: Vec<&str> = ama.as_object().expect("object").keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, vec!["campaignId", "code", "description", "id", "imageUrl", "name", "votes"], "{ama}");
    assert_eq!(ama["votes"], 0);
    assert_eq!(ama["campaignId"], shown.as_str());
    assert_eq!(ama["description"], "About Ama");
    // No vote counts unless the campaign shows them.
    assert_eq!(body["data"][0]["id"], kofi.as_str());
    assert!(body["data"][0].get("votes").is_none(), "{body}");
    assert!(body["data"][0].get("status").is_none(), "{body}");

    // A campaign filter the key may not see is 404: a draft, a ticketing campaign.
    for c in [&draft, &ticketing] {
        let r = public(&app, &app.account.public, &format!("{PARTICIPANTS}?campaignId={c}")).await;
        assert_error(&r, 404, "not_found");
    }
    let r = public(&app, &app.account.public, &format!("{PARTICIPANTS}?campaignId={shown}")).await;
    assert_eq!(names_in_order(&r.json()["data"]), vec!["Ama"]);
    // Asking for hidden ones finds none.
    let r = public(&app, &app.account.public, &format!("{PARTICIPANTS}?status=hidden")).await;
    assert_eq!(r.json()["data"], json!([]), "{}", r.json());

    // A campaign key sees its campaign only.
    let ck = key_with(&app, "campaign", Some(&quiet), "campaigns:read,tickets:read").await;
    let r = public(&app, &ck, PARTICIPANTS).await;
    assert_eq!(names_in_order(&r.json()["data"]), vec!["Kofi"], "{}", r.json());
    let r = public(&app, &ck, &format!("{PARTICIPANTS}?campaignId={shown}")).await;
    assert_error(&r, 404, "not_found");

    // The signed list still shows every nominee, with status and votes.
    let (s, signed) = app.signed(Method::GET, PARTICIPANTS, None).await;
    assert_eq!(s, 200);
    assert_eq!(signed["pagination"]["total"], 6, "{signed}");
    assert!(signed["data"][0]["status"].is_string());

    // The storefront's voting items carry the same array; other items carry none.
    let r = public(&app, &app.account.public, "/api/white-label/v1/storefront").await;
    assert_eq!(r.status, 200, "{}", r.json());
    let campaigns = r.json()["data"]["campaigns"].as_array().expect("campaigns").clone();
    let item = |id: &str| campaigns.iter().find(|c| c["id"] == id).cloned().expect("item");
    assert_eq!(item(&shown)["participants"], json!([ama]));
    assert_eq!(names_in_order(&item(&quiet)["participants"]), vec!["Kofi"]);
    assert!(item(&quiet)["participants"][0].get("votes").is_none());
    assert!(item(&ticketing).get("participants").is_none(), "{}", item(&ticketing));
    assert!(campaigns.iter().all(|c| c["id"] != draft.as_str()));
}

async fn the_leaderboard_ranks_ties_together_and_hides_hidden_nominees(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "voting").await;
    let ama = nominee(&p, &c, "Ama", "active").await;
    let kofi = nominee(&p, &c, "Kofi", "active").await;
    let yaw = nominee(&p, &c, "Yaw", "active").await;
    let esi = nominee(&p, &c, "Esi", "active").await;
    let eli = nominee(&p, &c, "Eli", "active").await;
    let hid = nominee(&p, &c, "Hid", "active").await;
    vote(&p, &p, &c, &kofi, 2).await;
    vote(&p, &p, &c, &ama, 2).await;
    vote(&p, &p, &c, &yaw, 1).await;
    vote(&p, &p, &c, &hid, 3).await;
    set_status(&p, &hid, "hidden").await;
    set_status(&p, &eli, "eliminated").await;

    let body: Value = p.api().get(&board_path(&c), StatusCode::OK).await;
    let board = &body["data"];
    assert_eq!(board["campaignId"], c.as_str());
    assert_eq!(board["totalVotes"], 5, "hidden votes are not counted: {board}");
    assert!(board["updatedAt"].as_str().is_some_and(|t| t.ends_with('Z')), "{board}");
    let lines: Vec<(String, i64, i64)> = board["participants"]
        .as_array()
        .expect("participants")
        .iter()
        .map(|l| {
            (
                l["name"].as_str().expect("name").to_string(),
                l["votes"].as_i64().expect("votes"),
                l["rank"].as_i64().expect("rank"),
            )
        })
        .collect();
    let want = [("Ama", 2, 1), ("Kofi", 2, 1), ("Yaw", 1, 3), ("Eli", 0, 4), ("Esi", 0, 4)];
    assert_eq!(lines, want.map(|(n, v, r)| (n.to_string(), v, r)).to_vec(), "{board}");
    assert_eq!(board["participants"][0], json!({"id": ama, "name": "Ama", "code": "001", "votes": 2, "rank": 1}));
    assert_eq!(board["participants"][4]["id"], esi.as_str());

    // The public reads it only when the campaign shows its counts.
    let r = public(&p, &p.account.public, &board_path(&c)).await;
    assert_error(&r, 403, "vote_counts_hidden");
    show_counts(&p, &c, true).await;
    let r = public(&p, &p.account.public, &board_path(&c)).await;
    assert_eq!(r.status, 200, "{}", r.json());
    assert_eq!(r.json()["data"]["participants"], board["participants"]);
    // …and the public list then shows votes, without the hidden one.
    let r = public(&p, &p.account.public, &format!("{PARTICIPANTS}?campaignId={c}")).await;
    let listed = r.json()["data"].clone();
    assert_eq!(listed.as_array().map(Vec::len), Some(4), "{listed}");
    assert!(listed
        .as_array()
        .expect("list")
        .iter()
        .all(|n| n["votes"].is_i64() && n["name"] != "Hid" && n["name"] != "Eli"));
}

async fn the_leaderboard_is_refused_where_it_does_not_exist_or_may_not_be_read(b: Backend) {
    let app = spawn(b).await;
    let shown = voting_campaign(&app, Some(true)).await;
    let draft = create_campaign(&app, "voting", "draft").await;
    let ticketing = create_campaign(&app, "ticketing", "approved").await;
    let other = app.new_account("other").await;
    let theirs = create_campaign_as(&app, &other.private, "voting", "approved").await;
    // Signed: another account's campaign, a non-voting one, a non-id: 404.
    for c in [theirs.as_str(), ticketing.as_str(), "not-a-uuid"] {
        let r = send(&app, &app.account.private, Method::GET, &board_path(c), None).await;
        assert_error(&r, 404, "not_found");
        let r = send(&app, &app.account.private, Method::GET, &format!("{}/stream", board_path(c)), None).await;
        assert_error(&r, 404, "not_found");
    }
    // An empty campaign's board lists nobody.
    let b: Value = app.api().get(&board_path(&draft), StatusCode::OK).await;
    assert_eq!(b["data"]["participants"], json!([]));
    assert_eq!(b["data"]["totalVotes"], 0);
    // Domain key: a draft is not public (404), a campaign key sees its campaign only.
    let r = public(&app, &app.account.public, &board_path(&draft)).await;
    assert_error(&r, 404, "not_found");
    let ck = key_with(&app, "campaign", Some(&draft), "campaigns:read").await;
    let r = public(&app, &ck, &board_path(&shown)).await;
    assert_error(&r, 404, "not_found");
    // Missing scope: 403 in both forms.
    let no_read = key_with(&app, "public", None, "tickets:read").await;
    let r = public(&app, &no_read, &board_path(&shown)).await;
    assert_error(&r, 403, "insufficient_scope");
    let r = public(&app, &no_read, PARTICIPANTS).await;
    assert_error(&r, 403, "insufficient_scope");
    let signed_no_read = key_with(&app, "private", None, "campaigns:write").await;
    let r = send(&app, &signed_no_read, Method::GET, &board_path(&shown), None).await;
    assert_error(&r, 403, "insufficient_scope");
    // The voting module off closes the public views and the leaderboard (D17.14).
    modules(&app, json!(false)).await;
    for path in [board_path(&shown), format!("{}/stream", board_path(&shown)), PARTICIPANTS.to_string()] {
        let r = public(&app, &app.account.public, &path).await;
        assert_error(&r, 403, "module_disabled");
    }
    let r = send(&app, &app.account.private, Method::GET, &board_path(&shown), None).await;
    assert_error(&r, 403, "module_disabled");
    // The storefront leaves out what the closed routes would serve: no nominees.
    let r = public(&app, &app.account.public, "/api/white-label/v1/storefront").await;
    assert_eq!(r.status, 200, "{}", r.json());
    let items = r.json()["data"]["campaigns"].as_array().expect("campaigns").clone();
    assert!(items.iter().any(|c| c["id"] == shown.as_str()), "the campaign is still listed: {items:?}");
    assert!(items.iter().all(|c| c.get("participants").is_none()), "no nominees with voting off: {items:?}");
    modules(&app, Value::Null).await;
    let r = public(&app, &app.account.public, "/api/white-label/v1/storefront").await;
    let items = r.json()["data"]["campaigns"].as_array().expect("campaigns").clone();
    assert!(items.iter().any(|c| c["id"] == shown.as_str() && c["participants"].is_array()), "{items:?}");
    let r = public(&app, &app.account.public, &board_path(&shown)).await;
    assert_eq!(r.status, 200, "{}", r.json());
}

/// An open `text/event-stream`, read chunk by chunk.
struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

impl EventStream {
    async fn open(app: &TestApp, campaign: &str) -> EventStream {
        let response = app
            .http
            .get(app.url(&format!("{}/stream", board_path(campaign))))
            .header("x-white-label-domain", &app.account.domain)
            .header("x-white-label-key", app.account.public.header())
            .send()
            .await
            .expect("open the stream");
        assert_eq!(response.status().as_u16(), 200);
        let ct = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert!(ct.starts_with("text/event-stream"), "{ct}");
        EventStream { response, buffer: String::new() }
    }

    /// The next `leaderboard` event's data within `wait`, or `None` (comments are skipped).
    async fn next(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = None;
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(e) = line.strip_prefix("event:") {
                        event = Some(e.trim().to_string());
                    } else if let Some(d) = line.strip_prefix("data:") {
                        data.push_str(d.trim_start());
                    }
                }
                if event.as_deref() == Some("leaderboard") {
                    return Some(serde_json::from_str(&data).expect("event data is JSON"));
                }
            }
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Ok(Ok(Some(bytes))) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                _ => return None,
            }
        }
    }

    /// Whether the server ended the stream within `wait`.
    async fn ended(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Ok(Ok(Some(_))) => continue,
                Ok(Ok(None)) | Ok(Err(_)) => return true,
                Err(_) => return false,
            }
        }
    }
}

fn votes_of(board: &Value, id: &str) -> i64 {
    board["participants"].as_array().expect("participants").iter().find(|l| l["id"] == id).expect("listed")["votes"]
        .as_i64()
        .expect("votes")
}

async fn a_paid_vote_shows_on_an_open_stream_within_a_second(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "voting").await;
    show_counts(&p, &c, true).await;
    let ama = nominee(&p, &c, "Ama", "active").await;
    let kofi = nominee(&p, &c, "Kofi", "active").await;
    let mut stream = EventStream::open(&p, &c).await;
    let first = stream.next(Duration::from_secs(2)).await.expect("the leaderboard at once");
    assert_eq!(first["totalVotes"], 0);
    assert_eq!(first["participants"].as_array().map(Vec::len), Some(2));
    // Past the once-a-second gap, so what is measured is the way from the commit to the client.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let paid = vote(&p, &p, &c, &ama, 3).await;
    let settled = Instant::now();
    let board = stream.next(Duration::from_secs(1)).await.expect("the new totals within 1 s");
    eprintln!(
        "stream latency: {:?} after the settle committed, {:?} after the payment (callback, reconcile, settle)",
        settled.elapsed(),
        paid.elapsed()
    );
    assert!(paid.elapsed() < Duration::from_secs(1), "{:?}", paid.elapsed());
    assert_eq!(votes_of(&board, &ama), 3, "{board}");
    assert_eq!(board["totalVotes"], 3);
    assert_eq!(board["participants"][0]["id"], ama.as_str());

    // Two changes within a second: at most one event a second, and the last shows both.
    let t0 = Instant::now();
    vote(&p, &p, &c, &kofi, 1).await;
    vote(&p, &p, &c, &kofi, 4).await;
    let mut times = Vec::new();
    let mut last = board;
    while let Some(next) = stream.next(Duration::from_millis(2500)).await {
        times.push(t0.elapsed());
        last = next;
        if votes_of(&last, &kofi) == 5 {
            break;
        }
    }
    assert_eq!(votes_of(&last, &kofi), 5, "{last}");
    assert!(times.len() <= 2, "{times:?}");
    for w in times.windows(2) {
        assert!(w[1] - w[0] >= Duration::from_millis(900), "at most one a second: {times:?}");
    }
    // A change of another campaign sends nothing.
    let other = running_campaign(&p, &p.account.private, "voting").await;
    let o = nominee(&p, &other, "Other", "active").await;
    vote(&p, &p, &other, &o, 1).await;
    assert!(stream.next(Duration::from_millis(1500)).await.is_none(), "no event for another campaign");
}

async fn an_open_stream_ends_when_the_server_stops(b: Backend) {
    let p = spawn_paid(b).await;
    let c = running_campaign(&p, &p.account.private, "voting").await;
    show_counts(&p, &c, true).await;
    let mut stream = EventStream::open(&p, &c).await;
    assert!(stream.next(Duration::from_secs(2)).await.is_some());
    let PayApp { app, sandbox } = p;
    drop(app);
    assert!(stream.ended(Duration::from_secs(5)).await, "the stream ends when the server stops");
    drop(sandbox);
}

/// PostgreSQL: a vote paid and settled through a second instance reaches the stream open on
/// the first (LISTEN/NOTIFY, D17.5).
async fn a_vote_paid_on_another_instance_reaches_the_stream(b: Backend) {
    if matches!(b, Backend::Sqlite) {
        return; // one instance per SQLite data dir (D17.3)
    }
    let p = spawn_paid_with(b, |c| {
        if crate::support::server::test_redis_url().is_none() {
            c.redis.url = "redis://127.0.0.1:6379".to_string().into();
            c.redis.key_prefix = format!("tessera:test-voting-{}:", tessera_server::domain::new_id());
        }
    })
    .await;
    let second = spawn_second(&p.app).await;
    p.sandbox.set_notify_url(second.base_url.clone());
    let c = running_campaign(&p, &p.account.private, "voting").await;
    show_counts(&p, &c, true).await;
    let ama = nominee(&p, &c, "Ama", "active").await;
    let mut stream = EventStream::open(&p, &c).await;
    assert!(stream.next(Duration::from_secs(2)).await.is_some());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let paid = vote(&p, &second, &c, &ama, 2).await;
    let settled = Instant::now();
    let board = stream.next(Duration::from_secs(1)).await.expect("the other instance's vote within 1 s");
    eprintln!(
        "cross-instance stream latency: {:?} after the settle committed, {:?} after the payment",
        settled.elapsed(),
        paid.elapsed()
    );
    assert!(paid.elapsed() < Duration::from_secs(1), "{:?}", paid.elapsed());
    assert_eq!(votes_of(&board, &ama), 2, "{board}");
}

on_both!(
    the_public_nominee_list_shows_active_nominees_of_approved_voting_campaigns,
    the_leaderboard_ranks_ties_together_and_hides_hidden_nominees,
    the_leaderboard_is_refused_where_it_does_not_exist_or_may_not_be_read,
    a_paid_vote_shows_on_an_open_stream_within_a_second,
    an_open_stream_ends_when_the_server_stops,
    a_vote_paid_on_another_instance_reaches_the_stream,
);

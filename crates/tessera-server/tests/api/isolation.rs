//! Tenant isolation matrix (issue 13, part 4): for every operation of the served OpenAPI
//! document, account B's credentials on account A's real ids. Each case expects 404 (or, for
//! lists and for routes without ids, an answer that holds none of A's data), and after every case
//! a full read of A's state as A (`a_view`) must be exactly what it was before the case.
//!
//! The table `CASES` is keyed by "METHOD path" exactly as the document spells the operation; the
//! test fails when the document has an operation without a case (and when a case names an
//! operation the document no longer has), so a new route cannot skip the matrix.
//!
//! The reseller portal (`/api/white-label/portal/...`) is in the matrix the same way: account A
//! and account B are each a reseller with its owner's session (`Who::PortalSession` is reseller
//! B's `Authorization: Bearer` token), reseller A's member, invitation, approval request and
//! passcode challenges are seeded, and `a_view` also reads A's console and approval requests.
//! The sign-in routes take no session: their cases show that B's challenges, codes and logout
//! neither open nor end anything of A's.
use std::collections::BTreeSet;

use futures_util::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use tessera_client::{Method, RawResponse};

use crate::support::callbacks::{post_callback, signed_event};
use crate::support::catalogue::{participant, running_campaign, ticket_type};
use crate::support::client::{assert_error, raw, StatusCode};
use crate::support::mail::point_mail_at_sandbox;
use crate::support::payments::{buy, sandbox_settle, spawn_paid_with, PayApp};
use crate::support::portal::{self, portal_error, portal_ok, CONSOLE};
use crate::support::server::{drain, Backend, TestAccount, TestKey, ALL_PRIVATE_SCOPES};
use crate::support::tickets::{code_of, issued};

const V1: &str = "/api/white-label/v1";

/// A's ids, made through the API as A.
struct Seed {
    ticketing: String,
    ticket_type: String,
    voting: String,
    participant: String,
    /// A confirmed, credited payment.
    paid: String,
    /// A payment still waiting for its provider.
    pending: String,
    /// A free campaign with one issued ticket (not checked in).
    free_campaign: String,
    ticket_code: String,
    withdrawal: String,
    withdrawal_idempotency_key: String,
    notification: String,
    submission: String,
    /// A my-tickets session of A's ticket holder.
    session: String,
    /// A my-tickets challenge of A's holder with its passcode, not yet used.
    challenge: String,
    challenge_code: String,
    /// Reseller A: its owner's portal session, owner member, an invitation, an approval request,
    /// an `otp/send` challenge with its code and an unused sign-in challenge.
    a_portal: String,
    a_owner: String,
    a_owner_member: String,
    a_invitation: String,
    a_request: String,
    a_otp: String,
    a_otp_code: String,
    a_sign_in: String,
    /// Reseller B: its owner's e-mail and session.
    b_owner: String,
    b_portal: String,
    /// A's webhook endpoint and one of A's events (D17.24, D17.27).
    webhook_endpoint: String,
    event: String,
}

struct Ctx {
    p: PayApp,
    a: TestAccount,
    b: TestAccount,
    a_money_key: TestKey,
    b_money_key: TestKey,
    seed: Seed,
    /// Strings that only A's data holds: none may appear in an answer to B (unless B sent it).
    markers: Vec<String>,
}

/// Which of B's credentials a probe uses.
#[derive(Clone, Copy, Debug)]
enum Who {
    /// B's private key (every scope), signed (D2).
    Signed,
    /// B's private key with the withdrawals capability, signed.
    SignedMoney,
    /// B's public key from B's own domain.
    DomainKey,
    /// B's public key presented from A's domain.
    DomainKeyOnADomain,
    /// Reseller B's portal session (`Authorization: Bearer`).
    PortalSession,
}

async fn b_send(
    c: &Ctx,
    who: Who,
    method: Method,
    path: &str,
    body: Option<Value>,
    headers: Option<HeaderMap>,
) -> RawResponse {
    let bytes = body.map(|b| serde_json::to_vec(&b).expect("json")).unwrap_or_default();
    let (key, domain) = match who {
        Who::Signed => return c.p.client_for(&c.b.private).send_raw(method, path, bytes, headers).await.expect("send"),
        Who::SignedMoney => {
            return c.p.client_for(&c.b_money_key).send_raw(method, path, bytes, headers).await.expect("send")
        }
        Who::DomainKey => (&c.b.public, &c.b.domain),
        Who::DomainKeyOnADomain => (&c.b.public, &c.a.domain),
        Who::PortalSession => {
            let mut req = c.p.http.request(method, c.p.url(path)).bearer_auth(&c.seed.b_portal);
            if !bytes.is_empty() {
                req = req.header("content-type", "application/json").body(bytes);
            }
            return raw(req.send().await.expect("send")).await;
        }
    };
    let mut req =
        c.p.http
            .request(method, c.p.url(path))
            .header("x-white-label-domain", domain.as_str())
            .header("x-white-label-key", key.header());
    if !bytes.is_empty() {
        req = req.header("content-type", "application/json").body(bytes);
    }
    raw(req.send().await.expect("send")).await
}

/// No marker of A's data in B's answer, except what B itself sent.
fn no_a_data(c: &Ctx, r: &RawResponse, sent: &str) {
    let body = String::from_utf8_lossy(&r.body);
    for m in c.markers.iter().filter(|m| !sent.contains(m.as_str())) {
        assert!(!body.contains(m.as_str()), "B's answer holds A's data {m:?}: {} {body}", r.status);
    }
}

/// B on one of A's ids: 404 `not_found` and nothing of A.
async fn foreign(c: &Ctx, who: Who, method: Method, path: &str, body: Option<Value>) {
    let sent = format!("{path} {}", body.as_ref().map(Value::to_string).unwrap_or_default());
    let r = b_send(c, who, method, path, body, None).await;
    assert_error(&r, 404, "not_found");
    no_a_data(c, &r, &sent);
}

/// B's own view through a route without ids: answered 2xx, and none of A's rows in it.
async fn own_view(c: &Ctx, who: Who, method: Method, path: &str, body: Option<Value>) -> Value {
    let sent = format!("{path} {}", body.as_ref().map(Value::to_string).unwrap_or_default());
    let r = b_send(c, who, method, path, body, None).await;
    assert!((200..300).contains(&r.status), "{path}: {} {}", r.status, r.json());
    no_a_data(c, &r, &sent);
    r.json()
}

/// A list must be there and empty for B (B has no rows of its own of this kind).
async fn empty_list(c: &Ctx, who: Who, path: &str) {
    let v = own_view(c, who, Method::GET, path, None).await;
    assert_eq!(v["data"].as_array().map(Vec::len), Some(0), "{path}: {v}");
}

/// Everything A can read about itself, as A. Compared before and after each case.
async fn a_view(c: &Ctx) -> Vec<(String, Value)> {
    let s = &c.seed;
    let mut reads: Vec<(Method, String, Option<Value>)> = [
        "/balance".to_string(),
        "/ledger?limit=100".to_string(),
        "/campaigns?limit=100".to_string(),
        format!("/campaigns/{}", s.ticketing),
        format!("/campaigns/{}", s.voting),
        format!("/campaigns/{}", s.free_campaign),
        format!("/participants?campaignId={}", s.voting),
        "/payments?limit=100".to_string(),
        format!("/payments/{}", s.paid),
        format!("/payments/{}", s.pending),
        "/withdrawals".to_string(),
        format!("/withdrawals/{}", s.withdrawal),
        "/notifications".to_string(),
        format!("/notifications/{}", s.notification),
        "/submissions".to_string(),
        "/settings".to_string(),
        "/context".to_string(),
        "/webhook-endpoints".to_string(),
        format!("/webhook-endpoints/{}", s.webhook_endpoint),
        format!("/webhook-endpoints/{}/attempts", s.webhook_endpoint),
        "/events".to_string(),
    ]
    .into_iter()
    .map(|p| (Method::GET, format!("{V1}{p}"), None))
    .collect();
    reads.push((Method::POST, format!("{V1}/tickets/verify"), Some(json!({"ticketCode": s.ticket_code}))));
    reads.push((
        Method::POST,
        format!("{V1}/my-tickets/list"),
        Some(json!({"sessionToken": s.session, "campaignId": s.free_campaign})),
    ));
    let mut out = Vec::new();
    for (method, path, body) in reads {
        let bytes = body.map(|b| serde_json::to_vec(&b).expect("json")).unwrap_or_default();
        let r = c.p.client_for(&c.a_money_key).send_raw(method, &path, bytes, None).await.expect("send");
        assert_eq!(r.status, 200, "A reads {path}: {}", r.json());
        out.push((path, strip(r.json())));
    }
    for path in
        [format!("{V1}/ticket-types?campaignId={}", s.ticketing), format!("{V1}/storefront"), format!("{V1}/config")]
    {
        let r = c.p.public_get(&path, &c.a.public, &c.a.domain).await;
        assert_eq!(r.status, 200, "A reads {path}: {}", r.json());
        out.push((path, strip(r.json())));
    }
    for path in [CONSOLE.to_string(), format!("{CONSOLE}/approval-requests")] {
        let r = portal::call(&c.p, Some(&c.seed.a_portal), Method::GET, &path, None).await;
        out.push((path, portal_ok(&r, 200)));
    }
    out
}

/// The envelope's requestId differs on every answer.
fn strip(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("requestId");
    }
    v
}

// --- the cases ---------------------------------------------------------------------------------

type Case = fn(&Ctx) -> BoxFuture<'_, ()>;

macro_rules! case {
    ($key:expr, $f:ident) => {
        ($key, {
            fn run(c: &Ctx) -> BoxFuture<'_, ()> {
                Box::pin($f(c))
            }
            run as Case
        })
    };
}

/// Every operation of the served document, keyed "METHOD path".
fn cases() -> Vec<(&'static str, Case)> {
    vec![
        case!("GET /api/white-label/v1/balance", balance),
        case!("GET /api/white-label/v1/campaigns", campaigns_list),
        case!("POST /api/white-label/v1/campaigns", campaigns_create),
        case!("GET /api/white-label/v1/campaigns/{campaignId}", campaigns_show),
        case!("PATCH /api/white-label/v1/campaigns/{campaignId}", campaigns_update),
        case!("GET /api/white-label/v1/campaigns/{campaignId}/leaderboard", leaderboard_show),
        case!("GET /api/white-label/v1/campaigns/{campaignId}/leaderboard/stream", leaderboard_stream),
        case!("GET /api/white-label/v1/config", config),
        case!("GET /api/white-label/v1/context", context),
        case!("GET /api/white-label/v1/ledger", ledger),
        case!("POST /api/white-label/v1/my-tickets/list", my_tickets_list),
        case!("POST /api/white-label/v1/my-tickets/qr", my_tickets_qr),
        case!("POST /api/white-label/v1/my-tickets/request-otp", my_tickets_request_otp),
        case!("POST /api/white-label/v1/my-tickets/verify-otp", my_tickets_verify_otp),
        case!("GET /api/white-label/v1/notifications", notifications_list),
        case!("POST /api/white-label/v1/notifications", notifications_create),
        case!("GET /api/white-label/v1/notifications/{id}", notifications_show),
        case!("GET /api/white-label/v1/participants", participants_list),
        case!("POST /api/white-label/v1/participants", participants_create),
        case!("PATCH /api/white-label/v1/participants/{id}", participants_update),
        case!("GET /api/white-label/v1/payments", payments_list),
        case!("POST /api/white-label/v1/payments/initialize", payments_initialize),
        case!("POST /api/white-label/v1/payments/verify", payments_verify),
        case!("GET /api/white-label/v1/payments/{reference}", payments_show),
        case!("POST /api/white-label/v1/payments/{reference}/refunds", refunds_create),
        case!("GET /api/white-label/v1/payments/{reference}/refunds", refunds_list),
        case!("GET /api/white-label/v1/refunds/{id}", refunds_show),
        case!("POST /api/white-label/v1/campaigns/{campaignId}/cancel", campaigns_cancel),
        case!("GET /api/white-label/v1/settings", settings_show),
        case!("PATCH /api/white-label/v1/settings/{category}", settings_update),
        case!("GET /api/white-label/v1/storefront", storefront),
        case!("GET /api/white-label/v1/submissions", submissions_list),
        case!("POST /api/white-label/v1/submissions", submissions_create),
        case!("GET /api/white-label/v1/ticket-types", ticket_types_list),
        case!("POST /api/white-label/v1/ticket-types", ticket_types_create),
        case!("POST /api/white-label/v1/ticket-types/bootstrap", ticket_types_bootstrap),
        case!("PATCH /api/white-label/v1/ticket-types/{id}", ticket_types_update),
        case!("POST /api/white-label/v1/tickets/verify", tickets_verify),
        case!("GET /api/white-label/v1/withdrawals", withdrawals_list),
        case!("POST /api/white-label/v1/withdrawals", withdrawals_create),
        case!("GET /api/white-label/v1/withdrawals/{id}", withdrawals_show),
        case!("GET /api/white-label/v1/webhook-endpoints", webhook_endpoints_list),
        case!("POST /api/white-label/v1/webhook-endpoints", webhook_endpoints_create),
        case!("GET /api/white-label/v1/webhook-endpoints/{id}", webhook_endpoints_show),
        case!("PATCH /api/white-label/v1/webhook-endpoints/{id}", webhook_endpoints_update),
        case!("DELETE /api/white-label/v1/webhook-endpoints/{id}", webhook_endpoints_delete),
        case!("POST /api/white-label/v1/webhook-endpoints/{id}/rotate-secret", webhook_endpoints_rotate_secret),
        case!("POST /api/white-label/v1/webhook-endpoints/{id}/test", webhook_endpoints_test),
        case!("POST /api/white-label/v1/webhook-endpoints/{id}/replay", webhook_endpoints_replay),
        case!("GET /api/white-label/v1/webhook-endpoints/{id}/attempts", webhook_endpoints_attempts),
        case!("GET /api/white-label/v1/events", events_list),
        case!("POST /api/white-label/webhooks/{provider}", provider_callback),
        case!("POST /api/white-label/webhooks/{provider}/{callbackToken}", provider_callback_tokened),
        case!("GET /pay/done", pay_done),
        case!("POST /api/white-label/ussd/{gateway}/{account}", ussd_receive),
        case!("GET /healthz", health),
        case!("GET /readyz", health),
        case!("GET /api/white-label/portal/reseller", portal_console),
        case!("PATCH /api/white-label/portal/reseller/profile", portal_profile),
        case!("POST /api/white-label/portal/reseller/members", portal_members_create),
        case!("PATCH /api/white-label/portal/reseller/members/{memberId}", portal_members_update),
        case!("GET /api/white-label/portal/reseller/approval-requests", portal_approvals_list),
        case!("POST /api/white-label/portal/reseller/approval-requests", portal_approvals_create),
        case!("PATCH /api/white-label/portal/reseller/approval-requests/{id}", portal_approvals_decide),
        case!("POST /api/white-label/portal/reseller/otp/send", portal_otp_send),
        case!("POST /api/white-label/portal/reseller/otp/verify", portal_otp_verify),
        case!("POST /api/white-label/portal/auth/otp/start", portal_sign_in_start),
        case!("POST /api/white-label/portal/auth/otp/verify", portal_sign_in_verify),
        case!("POST /api/white-label/portal/auth/logout", portal_logout),
    ]
}

fn v1(p: &str) -> String {
    format!("{V1}{p}")
}

// --- the reseller portal: reseller B's session on reseller A ----------------------------------

/// B's session on one of A's ids: 404 in the portal envelope, and nothing of A.
async fn portal_foreign(c: &Ctx, method: Method, path: &str, body: Option<Value>) {
    let sent = format!("{path} {}", body.as_ref().map(Value::to_string).unwrap_or_default());
    let r = b_send(c, Who::PortalSession, method, path, body, None).await;
    portal_error(&r, 404, "not_found");
    no_a_data(c, &r, &sent);
}

/// B's session on a route without ids: answered 2xx with B's own data only.
async fn portal_own(c: &Ctx, method: Method, path: &str, body: Option<Value>) -> Value {
    let sent = format!("{path} {}", body.as_ref().map(Value::to_string).unwrap_or_default());
    let r = b_send(c, Who::PortalSession, method, path, body, None).await;
    assert!((200..300).contains(&r.status), "{path}: {} {}", r.status, r.json());
    no_a_data(c, &r, &sent);
    r.json()["data"].clone()
}

async fn portal_console(c: &Ctx) {
    let v = portal_own(c, Method::GET, CONSOLE, None).await;
    assert!(v.to_string().contains(&c.seed.b_owner), "B's own console: {v}");
}

async fn portal_profile(c: &Ctx) {
    // B's admin changes B's profile only (a_view: A's profile as it was).
    let v = portal_own(c, Method::PATCH, &format!("{CONSOLE}/profile"), Some(json!({"riskLevel": "high"}))).await;
    assert_eq!(v["riskLevel"], "high", "{v}");
}

async fn portal_members_create(c: &Ctx) {
    // A's people cannot be pulled into B: a user belongs to one reseller (409), and the answer
    // says nothing of A beyond the address B sent.
    for mail in [&c.seed.a_owner, &format!("a-invitee@{}", "team.example.com")] {
        let body = json!({"email": mail, "roles": ["viewer"]});
        let sent = body.to_string();
        let r = b_send(c, Who::PortalSession, Method::POST, &format!("{CONSOLE}/members"), Some(body), None).await;
        portal_error(&r, 409, "conflict");
        no_a_data(c, &r, &sent);
    }
}

async fn portal_members_update(c: &Ctx) {
    for id in [&c.seed.a_invitation, &c.seed.a_owner_member] {
        for body in [json!({"status": "revoked"}), json!({"displayName": "Taken over by B"})] {
            portal_foreign(c, Method::PATCH, &format!("{CONSOLE}/members/{id}"), Some(body)).await;
        }
    }
}

async fn portal_approvals_list(c: &Ctx) {
    for query in ["", "?status=pending"] {
        let v = portal_own(c, Method::GET, &format!("{CONSOLE}/approval-requests{query}"), None).await;
        assert!(v.is_array(), "{v}");
    }
}

async fn portal_approvals_create(c: &Ctx) {
    // Filing a request that names A's member is B's own request; approving it could never
    // reach A's member (the effect looks only at B's members).
    let body = json!({"entityType": "member", "reason": "B's", "requestPayload": {"memberId": c.seed.a_invitation}});
    let sent = body.to_string();
    let r =
        b_send(c, Who::PortalSession, Method::POST, &format!("{CONSOLE}/approval-requests"), Some(body), None).await;
    assert!(matches!(r.status, 201 | 400 | 404 | 409), "{} {}", r.status, r.json());
    no_a_data(c, &r, &sent);
}

async fn portal_approvals_decide(c: &Ctx) {
    for body in
        [json!({"status": "approved", "note": "B"}), json!({"status": "rejected"}), json!({"status": "cancelled"})]
    {
        portal_foreign(c, Method::PATCH, &format!("{CONSOLE}/approval-requests/{}", c.seed.a_request), Some(body))
            .await;
    }
}

async fn portal_otp_send(c: &Ctx) {
    let body = json!({"channel": "email", "recipient": "b-only@example.com", "purpose": "withdrawal_approval"});
    let v = portal_own(c, Method::POST, &format!("{CONSOLE}/otp/send"), Some(body)).await;
    assert!(v["challengeId"].is_string(), "{v}");
}

async fn portal_otp_verify(c: &Ctx) {
    // A's challenge with its right code: 404 for B, and not used up (A then checks it once).
    let body = json!({"challengeId": c.seed.a_otp, "code": c.seed.a_otp_code});
    portal_foreign(c, Method::POST, &format!("{CONSOLE}/otp/verify"), Some(body.clone())).await;
    let r =
        portal::call(&c.p, Some(&c.seed.a_portal), Method::POST, &format!("{CONSOLE}/otp/verify"), Some(body)).await;
    assert_eq!(portal_ok(&r, 200)["verified"], true);
}

async fn portal_sign_in_start(c: &Ctx) {
    // No session here: B's start is B's own challenge, and the answer holds nothing of A.
    let mail = c.seed.b_owner.clone();
    let r = b_send(c, Who::PortalSession, Method::POST, portal::START, Some(json!({"email": mail})), None).await;
    assert!(matches!(r.status, 200 | 429), "{} {}", r.status, r.json());
    no_a_data(c, &r, &mail);
}

async fn portal_sign_in_verify(c: &Ctx) {
    // A's sign-in challenge with a code that is not A's opens nothing; A's otp/send challenge
    // is not a sign-in challenge (404). Neither answer is a session.
    let r = b_send(
        c,
        Who::PortalSession,
        Method::POST,
        portal::VERIFY,
        Some(json!({"challengeId": c.seed.a_sign_in, "code": "000000"})),
        None,
    )
    .await;
    assert!(matches!(r.status, 400 | 409), "{} {}", r.status, r.json());
    assert!(r.json()["data"]["token"].is_null(), "{}", r.json());
    let sent = c.seed.a_sign_in.clone();
    no_a_data(c, &r, &sent);
    let r = b_send(
        c,
        Who::PortalSession,
        Method::POST,
        portal::VERIFY,
        Some(json!({"challengeId": c.seed.a_otp, "code": "000000"})),
        None,
    )
    .await;
    portal_error(&r, 404, "not_found");
}

async fn portal_logout(c: &Ctx) {
    // B logging out (with a second session of B's) ends that session only: A's session (read by
    // a_view after this case) and B's first session still work.
    let extra = portal::mint(&c.p, &c.seed.b_owner).await;
    let r = portal::call(&c.p, Some(&extra), Method::POST, portal::LOGOUT, None).await;
    portal_ok(&r, 200);
    portal_error(&portal::call(&c.p, Some(&extra), Method::GET, CONSOLE, None).await, 401, "missing_auth");
    portal_own(c, Method::GET, CONSOLE, None).await;
}

async fn balance(c: &Ctx) {
    let v = own_view(c, Who::Signed, Method::GET, &v1("/balance"), None).await;
    // A has money; B has none.
    for field in ["available", "pending", "held"] {
        if let Some(n) = v["data"][field].as_f64() {
            assert_eq!(n, 0.0, "B's {field}: {v}");
        }
    }
    assert!(v["data"]["available"].is_number(), "{v}");
}

async fn campaigns_list(c: &Ctx) {
    empty_list(c, Who::Signed, &v1("/campaigns?limit=100")).await;
    empty_list(c, Who::DomainKey, &v1("/campaigns?limit=100")).await;
    let word = c.markers[0].rsplit(' ').next().unwrap_or_default().to_string();
    empty_list(c, Who::Signed, &v1(&format!("/campaigns?search={word}"))).await;
    // B's key does not open A's domain.
    let r = b_send(c, Who::DomainKeyOnADomain, Method::GET, &v1("/campaigns"), None, None).await;
    assert!(matches!(r.status, 401 | 403 | 404), "{} {}", r.status, r.json());
    no_a_data(c, &r, "");
}

async fn campaigns_create(c: &Ctx) {
    // Naming A's campaign in a create is not a way to write to it: an unknown field, 400.
    let body = json!({"id": c.seed.ticketing, "title": "B's event", "description": "B's own event.",
        "campaign_type": "ticketing", "start_date": "2030-03-06T18:00:00Z", "end_date": "2030-03-07T01:00:00Z"});
    let sent = body.to_string();
    let r = b_send(c, Who::Signed, Method::POST, &v1("/campaigns"), Some(body), None).await;
    assert_error(&r, 400, "validation_failed");
    no_a_data(c, &r, &sent);
    // Nor a slug A already uses: B's create is B's own, whatever it names.
    let slug = c.p.signed_as(&c.a.private, Method::GET, &v1(&format!("/campaigns/{}", c.seed.ticketing)), None).await.1
        ["data"]["slug"]
        .as_str()
        .map(str::to_string);
    if let Some(slug) = slug {
        let body = json!({"slug": slug, "title": "B's event", "description": "B's own event.",
            "campaign_type": "ticketing", "start_date": "2030-03-06T18:00:00Z", "end_date": "2030-03-07T01:00:00Z"});
        let sent = body.to_string();
        let r = b_send(c, Who::Signed, Method::POST, &v1("/campaigns"), Some(body), None).await;
        assert!(matches!(r.status, 201 | 409), "{} {}", r.status, r.json());
        no_a_data(c, &r, &sent);
    }
}

async fn campaigns_show(c: &Ctx) {
    for id in [&c.seed.ticketing, &c.seed.voting, &c.seed.free_campaign] {
        foreign(c, Who::Signed, Method::GET, &v1(&format!("/campaigns/{id}")), None).await;
    }
}

async fn campaigns_update(c: &Ctx) {
    for body in [json!({"title": "Taken over by B"}), json!({"status": "archived"})] {
        foreign(c, Who::Signed, Method::PATCH, &v1(&format!("/campaigns/{}", c.seed.ticketing)), Some(body)).await;
    }
}

async fn config(c: &Ctx) {
    own_view(c, Who::DomainKey, Method::GET, &v1("/config"), None).await;
    let r = b_send(c, Who::DomainKeyOnADomain, Method::GET, &v1("/config"), None, None).await;
    assert!(matches!(r.status, 401 | 403 | 404), "{} {}", r.status, r.json());
    no_a_data(c, &r, "");
}

async fn context(c: &Ctx) {
    let v = own_view(c, Who::Signed, Method::GET, &v1("/context"), None).await;
    assert!(v.to_string().contains(&c.b.slug) || v.to_string().contains(&c.b.id), "B's own context: {v}");
}

async fn ledger(c: &Ctx) {
    empty_list(c, Who::Signed, &v1("/ledger?limit=100")).await;
}

async fn my_tickets_list(c: &Ctx) {
    let s = &c.seed;
    let body = json!({"sessionToken": s.session, "campaignId": s.free_campaign});
    let r = b_send(c, Who::Signed, Method::POST, &v1("/my-tickets/list"), Some(body.clone()), None).await;
    assert!(matches!(r.status, 401 | 404), "{} {}", r.status, r.json());
    no_a_data(c, &r, &body.to_string());
}

async fn my_tickets_qr(c: &Ctx) {
    let s = &c.seed;
    let body = json!({"sessionToken": s.session, "ticketCode": s.ticket_code, "campaignId": s.free_campaign});
    let r = b_send(c, Who::Signed, Method::POST, &v1("/my-tickets/qr"), Some(body.clone()), None).await;
    assert!(matches!(r.status, 401 | 404), "{} {}", r.status, r.json());
    no_a_data(c, &r, &body.to_string());
}

async fn my_tickets_request_otp(c: &Ctx) {
    let mails = c.p.sandbox.mail().len();
    let body = json!({"campaignId": c.seed.free_campaign, "email": "buyer@example.com"});
    foreign(c, Who::Signed, Method::POST, &v1("/my-tickets/request-otp"), Some(body)).await;
    drain(&c.p).await;
    assert_eq!(c.p.sandbox.mail().len(), mails, "no passcode mailed to A's holder on B's request");
}

async fn my_tickets_verify_otp(c: &Ctx) {
    // A's unused challenge with its right passcode: B cannot turn it into a session.
    let body = json!({"challengeId": c.seed.challenge, "code": c.seed.challenge_code});
    let r = b_send(c, Who::Signed, Method::POST, &v1("/my-tickets/verify-otp"), Some(body.clone()), None).await;
    assert!(matches!(r.status, 400 | 401 | 404), "{} {}", r.status, r.json());
    assert!(r.json()["data"]["sessionToken"].is_null(), "{}", r.json());
    no_a_data(c, &r, &body.to_string());
}

async fn notifications_list(c: &Ctx) {
    empty_list(c, Who::Signed, &v1("/notifications")).await;
}

async fn notifications_create(c: &Ctx) {
    // No id in this body: B's notification is B's, and A's list is unchanged (a_view).
    let body =
        json!({"channel": "email", "eventType": "isolation", "recipient": "b@example.com", "payload": {"text": "t"}});
    let sent = body.to_string();
    let r = b_send(c, Who::Signed, Method::POST, &v1("/notifications"), Some(body), None).await;
    assert!(matches!(r.status, 202 | 400), "{} {}", r.status, r.json());
    no_a_data(c, &r, &sent);
}

async fn notifications_show(c: &Ctx) {
    foreign(c, Who::Signed, Method::GET, &v1(&format!("/notifications/{}", c.seed.notification)), None).await;
}

async fn participants_list(c: &Ctx) {
    let path = v1(&format!("/participants?campaignId={}", c.seed.voting));
    let r = b_send(c, Who::Signed, Method::GET, &path, None, None).await;
    if r.status == 200 {
        assert_eq!(r.json()["data"].as_array().map(Vec::len), Some(0), "{}", r.json());
    } else {
        assert_error(&r, 404, "not_found");
    }
    no_a_data(c, &r, &path);
    // The domain-key form (D17.17): A's campaign is not B's, from B's domain or A's.
    for who in [Who::DomainKey, Who::DomainKeyOnADomain] {
        let r = b_send(c, who, Method::GET, &path, None, None).await;
        assert!(matches!(r.status, 401 | 403 | 404), "{who:?}: {} {}", r.status, r.json());
        no_a_data(c, &r, &path);
    }
    empty_list(c, Who::DomainKey, &v1("/participants")).await;
}

/// A's voting campaign's leaderboard (D17.18): 404 to B's signed key, refused to B's browser key.
async fn leaderboard_show(c: &Ctx) {
    let path = v1(&format!("/campaigns/{}/leaderboard", c.seed.voting));
    foreign(c, Who::Signed, Method::GET, &path, None).await;
    for who in [Who::DomainKey, Who::DomainKeyOnADomain] {
        let r = b_send(c, who, Method::GET, &path, None, None).await;
        assert!(matches!(r.status, 401 | 403 | 404), "{who:?}: {} {}", r.status, r.json());
        no_a_data(c, &r, &path);
    }
}

/// The stream is refused before it starts, in the envelope.
async fn leaderboard_stream(c: &Ctx) {
    let path = v1(&format!("/campaigns/{}/leaderboard/stream", c.seed.voting));
    foreign(c, Who::Signed, Method::GET, &path, None).await;
    for who in [Who::DomainKey, Who::DomainKeyOnADomain] {
        let r = b_send(c, who, Method::GET, &path, None, None).await;
        assert!(matches!(r.status, 401 | 403 | 404), "{who:?}: {} {}", r.status, r.json());
        no_a_data(c, &r, &path);
    }
}

async fn participants_create(c: &Ctx) {
    let body = json!({"campaignId": c.seed.voting, "name": "Planted by B"});
    foreign(c, Who::Signed, Method::POST, &v1("/participants"), Some(body)).await;
}

async fn participants_update(c: &Ctx) {
    let path = v1(&format!("/participants/{}", c.seed.participant));
    foreign(c, Who::Signed, Method::PATCH, &path, Some(json!({"status": "eliminated"}))).await;
}

async fn payments_list(c: &Ctx) {
    empty_list(c, Who::Signed, &v1("/payments?limit=100")).await;
    let path = v1(&format!("/payments?campaignId={}", c.seed.ticketing));
    let r = b_send(c, Who::Signed, Method::GET, &path, None, None).await;
    if r.status == 200 {
        assert_eq!(r.json()["data"].as_array().map(Vec::len), Some(0), "{}", r.json());
    } else {
        assert!(matches!(r.status, 400 | 404), "{} {}", r.status, r.json());
    }
    no_a_data(c, &r, &path);
}

async fn payments_initialize(c: &Ctx) {
    let s = &c.seed;
    let body = json!({"campaign_id": s.ticketing, "ticket_id": s.ticket_type, "email": "b@example.com", "quantity": 1,
        "full_name": "B Buyer", "callbackUrl": format!("https://{}/thanks", c.b.domain)});
    foreign(c, Who::Signed, Method::POST, &v1("/payments/initialize"), Some(body)).await;
}

async fn payments_verify(c: &Ctx) {
    for reference in [&c.seed.paid, &c.seed.pending] {
        foreign(c, Who::Signed, Method::POST, &v1("/payments/verify"), Some(json!({"reference": reference}))).await;
    }
}

async fn payments_show(c: &Ctx) {
    for reference in [&c.seed.paid, &c.seed.pending] {
        foreign(c, Who::Signed, Method::GET, &v1(&format!("/payments/{reference}")), None).await;
    }
}

async fn refunds_create(c: &Ctx) {
    // B refunding A's payment: 404, nothing refunded, nothing of A in the answer.
    let mut h = HeaderMap::new();
    h.insert("x-idempotency-key", HeaderValue::from_static("b-refund-1"));
    let path = v1(&format!("/payments/{}/refunds", c.seed.paid));
    let r = b_send(c, Who::Signed, Method::POST, &path, Some(json!({"reason": "B"})), Some(h)).await;
    assert_error(&r, 404, "not_found");
    no_a_data(c, &r, &path);
}

async fn refunds_list(c: &Ctx) {
    for reference in [&c.seed.paid, &c.seed.pending] {
        foreign(c, Who::Signed, Method::GET, &v1(&format!("/payments/{reference}/refunds")), None).await;
    }
}

async fn refunds_show(c: &Ctx) {
    // The seed files no refund (its tickets stay valid for the gate cases): an id B does not own.
    foreign(c, Who::Signed, Method::GET, &v1(&format!("/refunds/{}", uuid::Uuid::now_v7())), None).await;
}

async fn campaigns_cancel(c: &Ctx) {
    let body = json!({"reason": "Taken over by B", "refund": true});
    foreign(c, Who::Signed, Method::POST, &v1(&format!("/campaigns/{}/cancel", c.seed.ticketing)), Some(body)).await;
}

async fn settings_show(c: &Ctx) {
    own_view(c, Who::Signed, Method::GET, &v1("/settings"), None).await;
}

async fn settings_update(c: &Ctx) {
    let body = json!({"config": {"primaryColor": "#000000"}});
    let sent = body.to_string();
    let r = b_send(c, Who::Signed, Method::PATCH, &v1("/settings/branding"), Some(body), None).await;
    assert_eq!(r.status, 200, "{}", r.json());
    no_a_data(c, &r, &sent);
}

async fn storefront(c: &Ctx) {
    own_view(c, Who::DomainKey, Method::GET, &v1("/storefront"), None).await;
    let r = b_send(c, Who::DomainKeyOnADomain, Method::GET, &v1("/storefront"), None, None).await;
    assert!(matches!(r.status, 401 | 403 | 404), "{} {}", r.status, r.json());
    no_a_data(c, &r, "");
}

async fn submissions_list(c: &Ctx) {
    empty_list(c, Who::Signed, &v1("/submissions")).await;
}

async fn submissions_create(c: &Ctx) {
    let body = json!({"type": "vendor", "name": "B Vendor", "email": "b@example.com", "campaignId": c.seed.ticketing});
    foreign(c, Who::Signed, Method::POST, &v1("/submissions"), Some(body)).await;
}

async fn ticket_types_list(c: &Ctx) {
    for who in [Who::DomainKey, Who::DomainKeyOnADomain] {
        let path = v1(&format!("/ticket-types?campaignId={}", c.seed.ticketing));
        let r = b_send(c, who, Method::GET, &path, None, None).await;
        assert!(matches!(r.status, 401 | 403 | 404), "{who:?}: {} {}", r.status, r.json());
        no_a_data(c, &r, &path);
    }
}

async fn ticket_types_create(c: &Ctx) {
    let body = json!({"campaignId": c.seed.ticketing, "name": "B's seat", "price": 1, "quantity_available": 1000});
    foreign(c, Who::Signed, Method::POST, &v1("/ticket-types"), Some(body)).await;
}

async fn ticket_types_bootstrap(c: &Ctx) {
    let body = json!({"campaignId": c.seed.free_campaign, "ticketTypes": [{"name": "B's seat", "price": 1, "quantity_available": 5}]});
    foreign(c, Who::Signed, Method::POST, &v1("/ticket-types/bootstrap"), Some(body)).await;
}

async fn ticket_types_update(c: &Ctx) {
    let path = v1(&format!("/ticket-types/{}", c.seed.ticket_type));
    foreign(c, Who::Signed, Method::PATCH, &path, Some(json!({"quantity_available": 0, "status": "archived"}))).await;
}

async fn tickets_verify(c: &Ctx) {
    let body = json!({"ticketCode": c.seed.ticket_code, "autoVerify": true, "checkedInBy": "B"});
    foreign(c, Who::Signed, Method::POST, &v1("/tickets/verify"), Some(body.clone())).await;
    foreign(c, Who::DomainKey, Method::POST, &v1("/tickets/verify"), Some(json!({"ticketCode": c.seed.ticket_code})))
        .await;
}

async fn withdrawals_list(c: &Ctx) {
    empty_list(c, Who::SignedMoney, &v1("/withdrawals")).await;
}

async fn withdrawals_create(c: &Ctx) {
    // A's idempotency key does not replay A's answer to B (nor does B's request touch A's).
    let mut h = HeaderMap::new();
    h.insert("x-idempotency-key", HeaderValue::from_str(&c.seed.withdrawal_idempotency_key).expect("header"));
    let body = json!({"amount": 1, "bank_name": "MTN Mobile Money", "bank_code": "MTN", "account_number": "0241234567",
        "account_name": "B Owner"});
    let sent = format!("{body} {}", c.seed.withdrawal_idempotency_key);
    let r = b_send(c, Who::SignedMoney, Method::POST, &v1("/withdrawals"), Some(body), Some(h)).await;
    // B has no money: refused, and not A's withdrawal replayed.
    assert_error(&r, 409, "insufficient_balance");
    no_a_data(c, &r, &sent);
}

async fn withdrawals_show(c: &Ctx) {
    foreign(c, Who::SignedMoney, Method::GET, &v1(&format!("/withdrawals/{}", c.seed.withdrawal)), None).await;
}

fn a_endpoint(c: &Ctx, rest: &str) -> String {
    v1(&format!("/webhook-endpoints/{}{rest}", c.seed.webhook_endpoint))
}

/// B makes an endpoint of its own (removed again by the caller, so B's list stays empty).
async fn b_endpoint(c: &Ctx) -> String {
    let body = json!({"url": "https://b-hooks.tessera.invalid/in"});
    let v = own_view(c, Who::Signed, Method::POST, &v1("/webhook-endpoints"), Some(body)).await;
    v["data"]["id"].as_str().expect("id").to_string()
}

async fn b_endpoint_gone(c: &Ctx, id: &str) {
    let r = b_send(c, Who::Signed, Method::DELETE, &v1(&format!("/webhook-endpoints/{id}")), None, None).await;
    assert_eq!(r.status, 204, "{}", r.json());
}

async fn webhook_endpoints_list(c: &Ctx) {
    empty_list(c, Who::Signed, &v1("/webhook-endpoints")).await;
}

async fn webhook_endpoints_create(c: &Ctx) {
    let id = b_endpoint(c).await;
    b_endpoint_gone(c, &id).await;
}

async fn webhook_endpoints_show(c: &Ctx) {
    foreign(c, Who::Signed, Method::GET, &a_endpoint(c, ""), None).await;
}

async fn webhook_endpoints_update(c: &Ctx) {
    let body = json!({"status": "disabled", "url": "https://b-hooks.tessera.invalid/taken"});
    foreign(c, Who::Signed, Method::PATCH, &a_endpoint(c, ""), Some(body)).await;
}

async fn webhook_endpoints_delete(c: &Ctx) {
    foreign(c, Who::Signed, Method::DELETE, &a_endpoint(c, ""), None).await;
}

async fn webhook_endpoints_rotate_secret(c: &Ctx) {
    foreign(c, Who::Signed, Method::POST, &a_endpoint(c, "/rotate-secret"), None).await;
}

async fn webhook_endpoints_test(c: &Ctx) {
    foreign(c, Who::Signed, Method::POST, &a_endpoint(c, "/test"), Some(json!({"type": "payment.failed"}))).await;
}

async fn webhook_endpoints_replay(c: &Ctx) {
    let range = json!({"since": "2020-01-01T00:00:00Z", "until": "2020-01-31T00:00:00Z"});
    foreign(c, Who::Signed, Method::POST, &a_endpoint(c, "/replay"), Some(range)).await;
    // A's event on B's own endpoint: no such event for B.
    let id = b_endpoint(c).await;
    let path = v1(&format!("/webhook-endpoints/{id}/replay"));
    foreign(c, Who::Signed, Method::POST, &path, Some(json!({"eventId": c.seed.event}))).await;
    b_endpoint_gone(c, &id).await;
}

async fn webhook_endpoints_attempts(c: &Ctx) {
    foreign(c, Who::Signed, Method::GET, &a_endpoint(c, "/attempts"), None).await;
}

async fn events_list(c: &Ctx) {
    own_view(c, Who::Signed, Method::GET, &v1("/events"), None).await;
}

async fn provider_callback(c: &Ctx) {
    // B's own provider secret signing a success for A's pending payment: refused, nothing applied
    // (a_view shows A's payment still pending).
    let event =
        json!({"event": "charge.success", "data": {"id": "ch_b", "reference": c.seed.pending, "status": "success"}});
    let (body, sig) = signed_event("provider_c", "sk_live_b_own_c", event);
    let r = post_callback(&c.p, "provider_c", body, Some(&sig)).await;
    assert_error(&r, 401, "invalid_signature");
    drain(&c.p).await;
}

async fn provider_callback_tokened(c: &Ctx) {
    // Hubtel's checkout callback for A's pending payment at B's own token (not A's, not the
    // platform's): refused before anything is stored, and A's payment is not asked about.
    let wire_reference = c.seed.pending.replace('_', "");
    let body = serde_json::to_vec(&json!({
        "ResponseCode": "0000", "Status": "Success",
        "Data": {"ClientReference": wire_reference, "Status": "Success", "Amount": 1, "CustomerPhoneNumber": "233241234567"},
    }))
    .expect("json");
    let url = c.p.url("/api/white-label/webhooks/provider_c/bravo-hubtel-callback-token-01");
    let req = c.p.http.post(url).header("content-type", "application/json").body(body);
    let r = raw(req.send().await.expect("send")).await;
    assert_error(&r, 401, "invalid_signature");
    no_a_data(c, &r, &c.seed.pending);
    drain(&c.p).await;
}

async fn pay_done(c: &Ctx) {
    // The return page shows only the reference it was given: nothing of A's payment behind it.
    let url = c.p.url(&format!("/pay/done?reference={}", c.seed.pending));
    let r = raw(c.p.http.get(url).send().await.expect("send")).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    no_a_data(c, &r, &c.seed.pending);
}

const A_USSD_TOKEN: &str = "alpha-ussd-callback-token-01";
const B_USSD_TOKEN: &str = "bravo-ussd-callback-token-01";

/// A gateway's request in Africa's Talking's wire to `slug`'s USSD route with `token`.
async fn ussd_dial(c: &Ctx, slug: &str, token: &str, session: &str, text: &str) -> RawResponse {
    let url = c.p.url(&format!("/api/white-label/ussd/africastalking/{slug}?token={token}"));
    let form =
        format!("sessionId={session}&serviceCode=*920*44%23&phoneNumber=233241234567&networkCode=62001&text={text}");
    let req = c.p.http.post(url).header("content-type", "application/x-www-form-urlencoded").body(form);
    raw(req.send().await.expect("send")).await
}

async fn ussd_receive(c: &Ctx) {
    // B's own USSD code does not know A's nominees, and B's token does not open A's route.
    let config = json!({"config": {"enabled": true, "callbackToken": B_USSD_TOKEN, "serviceCode": "*920*44#"}});
    let _: Value = c.p.api_as(&c.b.private).patch(&v1("/settings/ussd"), &config, StatusCode::OK).await;
    let (s, list) =
        c.p.signed_as(&c.a.private, Method::GET, &v1(&format!("/participants?campaignId={}", c.seed.voting)), None)
            .await;
    assert_eq!(s, 200, "{list}");
    let code = list["data"][0]["code"].as_str().expect("A's nominee code").to_string();
    let r = ussd_dial(c, &c.b.slug, B_USSD_TOKEN, "iso-b-1", &code).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let screen = String::from_utf8_lossy(&r.body).to_string();
    assert!(screen.starts_with("CON Unknown code"), "B's code answers A's nominee code as unknown: {screen}");
    no_a_data(c, &r, &code);
    for token in [B_USSD_TOKEN, ""] {
        let r = ussd_dial(c, &c.a.slug, token, "iso-b-2", "").await;
        assert_eq!(r.status, 401, "B at A's route: {}", String::from_utf8_lossy(&r.body));
        no_a_data(c, &r, "");
    }
}

async fn health(c: &Ctx) {
    for path in ["/healthz", "/readyz"] {
        let r = raw(c.p.http.get(c.p.url(path)).send().await.expect("send")).await;
        assert_eq!(r.status, 200);
        no_a_data(c, &r, "");
    }
}

// --- seed and the test -------------------------------------------------------------------------

/// The newest passcode mailed to `to`.
fn passcode(p: &PayApp, to: &str) -> String {
    let mail = p.sandbox.mail().into_iter().find(|m| m["to"].as_str().is_some_and(|t| t.contains(to))).expect("mail");
    let text = mail["text"].as_str().unwrap_or_default().to_string();
    let first = text.lines().next().unwrap_or_default().to_string();
    first.rsplit_once(" is ").map(|(_, code)| code.trim_end_matches('.').to_string()).expect("passcode")
}

async fn seed(backend: Backend) -> Ctx {
    let p = spawn_paid_with(backend, |c| c.security.allow_private_endpoints = true).await;
    let a = p.account.clone();
    let b = p.new_account("bravo").await;
    let a_money_key = p.create_key(&a.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    let b_money_key = p.create_key(&b.slug, "private", None, ALL_PRIVATE_SCOPES, &["withdrawals"]).await;
    point_mail_at_sandbox(&p, &a.private).await;
    point_mail_at_sandbox(&p, &b.private).await;
    // A takes votes by dial (the USSD case probes A's route with B's token).
    let config = json!({"config": {"enabled": true, "callbackToken": A_USSD_TOKEN, "serviceCode": "*920*44#"}});
    let _: Value = p.api_as(&a.private).patch("/api/white-label/v1/settings/ussd", &config, StatusCode::OK).await;
    // B has its own provider credentials (used by the callback cases): Hubtel's, whole.
    let own = p.sandbox.provider_url("provider_c");
    let _: Value = p
        .api_as(&b.private)
        .patch(
            &v1("/settings/payments"),
            &json!({"config": {"useSharedDefaults": false, "defaultProvider": "provider_c",
                "providers": {"provider_c": {"baseUrl": own, "secretKey": "sk_live_b_own_c", "apiId": "bravo-api-id",
                    "posSalesId": "2019001", "prepaidDepositId": "2019002",
                    "callbackToken": "bravo-hubtel-callback-token-01"}}}}),
            StatusCode::OK,
        )
        .await;

    let key = &a.private;
    let ticketing = running_campaign(&p, key, "ticketing").await;
    let ticket_type_id = ticket_type(&p, key, &ticketing, 100.0, 50).await;
    let paid = buy(&p, &ticketing, &ticket_type_id, 1).await["reference"].as_str().expect("reference").to_string();
    sandbox_settle(&p, &paid, "succeed", json!({})).await;
    drain(&p).await;
    let pending = buy(&p, &ticketing, &ticket_type_id, 2).await["reference"].as_str().expect("reference").to_string();
    let voting = running_campaign(&p, key, "voting").await;
    let participant_id = participant(&p, key, &voting).await;
    let (free_campaign, tickets) = issued(&p, &a, 1).await;
    let ticket_code = code_of(&tickets[0]);

    let withdrawal_idempotency_key = uuid::Uuid::now_v7().to_string();
    let mut h = HeaderMap::new();
    h.insert("x-idempotency-key", HeaderValue::from_str(&withdrawal_idempotency_key).expect("header"));
    let wbody = json!({"amount": 10.5, "bank_name": "MTN Mobile Money", "bank_code": "MTN",
        "account_number": "0241234567", "account_name": "Ama Mensah"});
    let r = p
        .client_for(&a_money_key)
        .send_raw(Method::POST, &v1("/withdrawals"), serde_json::to_vec(&wbody).expect("json"), Some(h))
        .await
        .expect("send");
    assert_eq!(r.status, 201, "{}", r.json());
    let withdrawal = r.json()["data"]["id"].as_str().expect("id").to_string();

    let v: Value = p
        .api_as(key)
        .post(
            &v1("/notifications"),
            &json!({"channel": "email", "eventType": "isolation", "recipient": "a-only@example.com",
                "payload": {"text": "for A"}}),
            StatusCode::ACCEPTED,
        )
        .await;
    let notification = v["data"]["id"].as_str().expect("id").to_string();
    let (s, v) = p
        .signed_as(
            key,
            Method::POST,
            &v1("/submissions"),
            Some(
                json!({"type": "vendor", "name": "Kofi Foods", "email": "kofi-a@example.com", "campaignId": ticketing}),
            ),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let submission = v["data"]["id"].as_str().expect("id").to_string();

    // A holder's session, then one more challenge left unused.
    let otp = |campaign: String| {
        let p = &p;
        let key = key.clone();
        async move {
            let v: Value = p
                .api_as(&key)
                .post(
                    &v1("/my-tickets/request-otp"),
                    &json!({"campaignId": campaign, "email": "buyer@example.com"}),
                    StatusCode::OK,
                )
                .await;
            drain(p).await;
            (v["data"]["challengeId"].as_str().expect("challengeId").to_string(), passcode(p, "buyer@example.com"))
        }
    };
    let (challenge, code) = otp(free_campaign.clone()).await;
    let (s, v) = p
        .signed_as(
            key,
            Method::POST,
            &v1("/my-tickets/verify-otp"),
            Some(json!({"challengeId": challenge, "code": code})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let session = v["data"]["sessionToken"].as_str().expect("sessionToken").to_string();
    // (On the paid campaign: one passcode per campaign and address a minute.)
    let (challenge, challenge_code) = otp(ticketing.clone()).await;

    // Reseller A on account A, reseller B on account B, each with its owner's session.
    let a_owner = format!("owner-a-{}@reseller.example.com", uuid::Uuid::now_v7().simple());
    let b_owner = format!("owner-b-{}@reseller.example.com", uuid::Uuid::now_v7().simple());
    let made = portal::reseller(&p, &a, &a_owner).await;
    let a_owner_member = made["owner"]["memberId"].as_str().expect("owner memberId").to_string();
    portal::reseller(&p, &b, &b_owner).await;
    let a_portal = portal::mint(&p, &a_owner).await;
    let b_portal = portal::mint(&p, &b_owner).await;
    let r = portal::call(
        &p,
        Some(&a_portal),
        Method::POST,
        &format!("{CONSOLE}/members"),
        Some(json!({"email": "a-invitee@team.example.com", "roles": ["viewer"], "displayName": "A's invitee"})),
    )
    .await;
    let a_invitation = portal_ok(&r, 201)["id"].as_str().expect("id").to_string();
    let r = portal::call(
        &p,
        Some(&a_portal),
        Method::POST,
        &format!("{CONSOLE}/approval-requests"),
        Some(json!({"entityType": "setting", "reason": "A's own request", "requestPayload": {"note": "A"}})),
    )
    .await;
    let a_request = portal_ok(&r, 201)["id"].as_str().expect("id").to_string();
    let r = portal::call(
        &p,
        Some(&a_portal),
        Method::POST,
        &format!("{CONSOLE}/otp/send"),
        Some(json!({"channel": "email", "recipient": "a-otp@example.com", "purpose": "withdrawal_approval"})),
    )
    .await;
    let a_otp = portal_ok(&r, 201)["challengeId"].as_str().expect("challengeId").to_string();
    drain(&p).await;
    let a_otp_code = passcode(&p, "a-otp@example.com");
    let a_sign_in = portal::start(&p, &a_owner).await;
    drain(&p).await;
    // Made last, so no event of the seed is queued for it (nothing for a worker to send).
    let body = json!({"url": "https://a-hooks.tessera.invalid/in", "eventTypes": ["payment.failed"]});
    let (s, v) = p.signed_as(&a.private, Method::POST, &v1("/webhook-endpoints"), Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let webhook_endpoint = v["data"]["id"].as_str().expect("id").to_string();
    let data = r#"{"marker":"a-event-data"}"#;
    let (event, _) =
        crate::support::db::record_event(&p, &a.id, "payment.failed", data, tessera_server::domain::time::now_ms())
            .await;

    let seed = Seed {
        webhook_endpoint,
        event,
        a_portal,
        a_owner,
        a_owner_member,
        a_invitation,
        a_request,
        a_otp,
        a_otp_code,
        a_sign_in,
        b_owner,
        b_portal,
        ticketing,
        ticket_type: ticket_type_id,
        voting,
        participant: participant_id,
        paid,
        pending,
        free_campaign,
        ticket_code,
        withdrawal,
        withdrawal_idempotency_key,
        notification,
        submission,
        session,
        challenge,
        challenge_code,
    };
    let (_, campaign) = p.signed_as(key, Method::GET, &v1(&format!("/campaigns/{}", seed.ticketing)), None).await;
    let title = campaign["data"]["title"].as_str().expect("title").to_string();
    let markers = vec![
        title,
        a.id.clone(),
        a.slug.clone(),
        seed.ticketing.clone(),
        seed.ticket_type.clone(),
        seed.voting.clone(),
        seed.participant.clone(),
        seed.paid.clone(),
        seed.pending.clone(),
        seed.free_campaign.clone(),
        seed.ticket_code.clone(),
        seed.withdrawal.clone(),
        seed.notification.clone(),
        seed.submission.clone(),
        seed.session.clone(),
        "a-only@example.com".to_string(),
        "kofi-a@example.com".to_string(),
        "Nominee One".to_string(),
        seed.a_owner.clone(),
        seed.a_owner_member.clone(),
        seed.a_invitation.clone(),
        seed.a_request.clone(),
        seed.a_otp.clone(),
        seed.a_portal.clone(),
        "a-invitee@team.example.com".to_string(),
        "A's own request".to_string(),
        seed.webhook_endpoint.clone(),
        seed.event.clone(),
        "a-hooks.tessera.invalid".to_string(),
        "a-event-data".to_string(),
    ];
    Ctx { p, a, b, a_money_key, b_money_key, seed, markers }
}

/// Every "METHOD path" of the served document.
async fn served_operations(c: &Ctx) -> BTreeSet<String> {
    let doc: Value =
        c.p.http
            .get(c.p.url("/api/white-label/v1/openapi.json"))
            .send()
            .await
            .expect("doc")
            .json()
            .await
            .expect("json");
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            if ["get", "put", "post", "delete", "patch", "head", "options", "trace"].contains(&method.as_str()) {
                ops.insert(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    ops
}

async fn every_operation_keeps_account_b_out_of_account_a(b: Backend) {
    let c = seed(b).await;
    let ops = served_operations(&c).await;
    let table = cases();
    let keys: BTreeSet<String> = table.iter().map(|(k, _)| k.to_string()).collect();
    let uncovered: Vec<&String> = ops.difference(&keys).collect();
    assert!(uncovered.is_empty(), "operations of the document without an isolation case: {uncovered:?}");
    let stale: Vec<&String> = keys.difference(&ops).collect();
    assert!(stale.is_empty(), "isolation cases for operations the document does not have: {stale:?}");
    let before = a_view(&c).await;
    assert!(before.iter().any(|(_, v)| v.to_string().contains(&c.seed.ticket_code)), "A's view holds A's data");
    for (key, run) in table {
        run(&c).await;
        let after = a_view(&c).await;
        for ((path, was), (_, now)) in before.iter().zip(after.iter()) {
            assert_eq!(was, now, "case {key:?} changed what A reads at {path}");
        }
    }
}

on_both!(every_operation_keeps_account_b_out_of_account_a);

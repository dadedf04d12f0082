//! Refunds in the sandbox (D17.36, D17.38, issue 26), on both wires and in the control API:
//!
//! - Paystack (`/provider_a`): `POST /refund {transaction, amount?, currency?, merchant_note?,
//!   customer_note?}`, `GET /refund?transaction=<charge reference>` (newest first) and
//!   `GET /refund/:id` (Paystack's numeric id). Tessera's refund id travels as `merchant_note`;
//!   a second refund with the same note is refused as a duplicate (Paystack itself would make a
//!   second one: the adapter looks before it creates, so it never asks twice).
//! - The gateway (`/provider_b`, `/provider_c`): `POST /refunds {reference, transaction, amount?,
//!   currency?, reason?}` → 201 `{id, reference, transaction, amount, currency, status, reason,
//!   failureReason, createdAt, completedAt}` with `id` = `reference` = the refund id; the same
//!   reference again → 200 and the refund it already has. `GET /refunds/:id`.
//! - Control: `POST /sandbox/refunds/:id/succeed` or `/fail` (`:id` = Tessera's refund id; body
//!   `{"deliver": false}` settles without the callback, `/fail` takes `{reason?}`),
//!   `GET /sandbox/refunds/:id` and `GET /sandbox/refunds` (newest first).
//!
//! Only a successful charge made with the same provider and secret can be refunded, by at most
//! what is left of it: its amount less its refunds that have not failed (400 beyond). A refund
//! waits pending until the control API settles it, which sends its signed callback
//! (`refund.processed` / `refund.failed` on Paystack's wire, `refund.success` / `refund.failed`
//! on the gateway's), naming the refunded charge; the faults' callback drops and duplicates apply.
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::api::{gw_guard, object, pesewas, ps_error, ps_guard, ps_ok, text, Gw};
use super::{gateway_error, now_rfc3339, Db, Outcome, Shared};
use crate::providers::payments::ProviderId;

#[derive(Debug, Clone)]
pub(crate) struct Refund {
    /// The sandbox's sequence number: Paystack's numeric refund id.
    pub seq: u64,
    pub provider: ProviderId,
    pub secret: String,
    /// Tessera's refund id: the gateway's `reference`, Paystack's `merchant_note` (`RF_<seq>`
    /// for a Paystack refund asked without one).
    pub id: String,
    /// The refunded charge's reference.
    pub transaction: String,
    /// The refunded charge's id on the wire.
    pub charge_id: Value,
    pub amount: i64,
    pub currency: String,
    /// The reason it was asked with.
    pub note: Option<String>,
    pub status: Outcome,
    pub failure_reason: Option<String>,
    pub created_at: String,
    pub completed_at: Option<String>,
}

impl Refund {
    /// The provider's id of the refund: a number for Paystack, the refund id on the gateway.
    pub fn wire_id(&self) -> Value {
        match self.provider {
            ProviderId::A => json!(self.seq),
            _ => json!(self.id),
        }
    }

    /// The control API's view (never the secret). `reason` is why it failed, once it did, else
    /// the reason it was asked with.
    pub fn record(&self) -> Value {
        json!({
            "id": self.id,
            "provider": self.provider.as_str(),
            "providerId": self.wire_id(),
            "transaction": self.transaction,
            "amount": self.amount,
            "currency": self.currency,
            "status": self.status.as_str(),
            "reason": self.failure_reason.as_ref().or(self.note.as_ref()),
            "note": self.note,
            "failureReason": self.failure_reason,
            "createdAt": self.created_at,
            "completedAt": self.completed_at,
        })
    }

    /// Paystack's refund statuses: `pending`, `processed`, `failed`.
    fn ps_status(&self) -> &'static str {
        match self.status {
            Outcome::Pending => "pending",
            Outcome::Success => "processed",
            Outcome::Failed => "failed",
        }
    }

    fn paystack(&self) -> Value {
        json!({
            "id": self.seq,
            "domain": "test",
            "transaction": self.charge_id,
            "transaction_reference": self.transaction,
            "amount": self.amount,
            "deducted_amount": self.amount,
            "currency": self.currency,
            "merchant_note": self.id,
            "customer_note": self.note,
            "status": self.ps_status(),
            "failure_reason": self.failure_reason,
            "refunded_at": self.completed_at,
            "createdAt": self.created_at,
        })
    }

    fn gateway(&self) -> Value {
        json!({
            "id": self.id,
            "reference": self.id,
            "transaction": self.transaction,
            "amount": self.amount,
            "currency": self.currency,
            "status": self.status.as_str(),
            "reason": self.note,
            "failureReason": self.failure_reason,
            "createdAt": self.created_at,
            "completedAt": self.completed_at,
        })
    }

    /// The callback of a settled refund, naming the refunded charge as each wire does.
    pub fn callback(&self) -> Value {
        let failed = self.status == Outcome::Failed;
        match self.provider {
            ProviderId::A => {
                let event = if failed { "refund.failed" } else { "refund.processed" };
                json!({"event": event, "data": self.paystack()})
            }
            _ => {
                let event = if failed { "refund.failed" } else { "refund.success" };
                json!({"event": event, "data": self.gateway()})
            }
        }
    }
}

/// What a refund-creating call asks for.
struct Ask<'a> {
    provider: ProviderId,
    secret: String,
    id: Option<&'a str>,
    transaction: &'a str,
    amount: Option<i64>,
    currency: Option<&'a str>,
    note: Option<&'a str>,
}

/// Why a refund was not made.
enum Refused {
    /// The refund id is taken: by this account (carries its refund) or by another.
    Exists(Option<Box<Refund>>),
    /// No charge with that reference for this provider and secret.
    NoCharge,
    /// The charge is not paid.
    NotPaid,
    /// More than what is left (carries what is left).
    Exceeds(i64),
}

/// Makes the refund under the ceiling, in one lock so that two racing calls never exceed it.
fn open_refund(db: &mut Db, ask: Ask<'_>) -> Result<Refund, Refused> {
    if let Some(existing) = ask.id.and_then(|id| db.refunds.get(id)) {
        let mine = existing.provider == ask.provider && existing.secret == ask.secret;
        return Err(Refused::Exists(mine.then(|| Box::new(existing.clone()))));
    }
    let charge = db
        .charges
        .get(ask.transaction)
        .filter(|c| c.provider == ask.provider && c.secret == ask.secret)
        .ok_or(Refused::NoCharge)?;
    if charge.status != Outcome::Success {
        return Err(Refused::NotPaid);
    }
    let taken: i64 = db
        .refunds
        .values()
        .filter(|r| r.provider == ask.provider && r.transaction == ask.transaction && r.status != Outcome::Failed)
        .map(|r| r.amount)
        .sum();
    let left = charge.amount - taken;
    let amount = ask.amount.unwrap_or(left);
    if amount <= 0 || amount > left {
        return Err(Refused::Exceeds(left.max(0)));
    }
    let (charge_id, charge_currency) = (charge.wire_id(), charge.currency.clone());
    let seq = db.next_id();
    let refund = Refund {
        seq,
        provider: ask.provider,
        secret: ask.secret,
        id: ask.id.map(str::to_string).unwrap_or_else(|| format!("RF_{seq}")),
        transaction: ask.transaction.to_string(),
        charge_id,
        amount,
        currency: ask.currency.map(str::to_string).unwrap_or(charge_currency),
        note: ask.note.map(str::to_string),
        status: Outcome::Pending,
        failure_reason: None,
        created_at: now_rfc3339(),
        completed_at: None,
    };
    db.refunds.insert(refund.id.clone(), refund.clone());
    Ok(refund)
}

/// Refunds of `provider` and `secret` that `keep` selects, newest first.
fn refunds_of(db: &Db, provider: ProviderId, secret: &str, keep: impl Fn(&Refund) -> bool) -> Vec<Refund> {
    let mut found: Vec<Refund> =
        db.refunds.values().filter(|r| r.provider == provider && r.secret == secret && keep(r)).cloned().collect();
    found.sort_by_key(|r| std::cmp::Reverse(r.seq));
    found
}

pub(super) fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/sandbox/refunds", get(list))
        .route("/sandbox/refunds/{id}", get(show))
        .route("/sandbox/refunds/{id}/{action}", post(settle))
        .route("/provider_a/refund", get(ps_list).post(ps_create))
        .route("/provider_a/refund/{id}", get(ps_show))
        .with_state(shared.clone())
        .merge(gateway_routes(shared.clone(), ProviderId::B))
        .merge(gateway_routes(shared, ProviderId::C))
}

/// Full paths rather than a second `nest` under the provider's prefix, which the charge routes
/// already nest at.
fn gateway_routes(shared: Arc<Shared>, provider: ProviderId) -> Router {
    let base = format!("/{}", provider.as_str());
    Router::new()
        .route(&format!("{base}/refunds"), post(gw_create))
        .route(&format!("{base}/refunds/{{id}}"), get(gw_show))
        .with_state(Gw { shared, provider })
}

// ---------------------------------------------------------------- Paystack (provider_a)

async fn ps_create(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return ps_error(StatusCode::BAD_REQUEST, "Invalid JSON body") };
    let Some(transaction) = text(&o, "transaction") else {
        return ps_error(StatusCode::BAD_REQUEST, "Transaction reference or id is required");
    };
    if o.get("amount").is_some() && pesewas(&o, "amount").is_none() {
        return ps_error(StatusCode::BAD_REQUEST, "Invalid amount: a positive whole number of pesewas is required");
    }
    let ask = Ask {
        provider: ProviderId::A,
        secret,
        id: text(&o, "merchant_note"),
        transaction,
        amount: pesewas(&o, "amount"),
        currency: text(&o, "currency"),
        note: text(&o, "customer_note"),
    };
    let opened = open_refund(&mut shared.db(), ask);
    match opened {
        Ok(r) => ps_ok("Refund has been queued for processing", r.paystack()),
        Err(Refused::Exists(_)) => {
            ps_error(StatusCode::BAD_REQUEST, "Duplicate refund: a refund with this merchant_note exists")
        }
        Err(Refused::NoCharge) => ps_error(StatusCode::BAD_REQUEST, "Transaction not found"),
        Err(Refused::NotPaid) => {
            ps_error(StatusCode::BAD_REQUEST, "Cannot refund a transaction that was not successful")
        }
        Err(Refused::Exceeds(left)) => ps_error(
            StatusCode::BAD_REQUEST,
            &format!("Refund amount cannot be more than the unrefunded balance of the transaction ({left})"),
        ),
    }
}

#[derive(Deserialize)]
struct PsListQuery {
    transaction: Option<String>,
}

/// `GET /refund?transaction=`: the charge named by its reference or its numeric id.
async fn ps_list(State(shared): State<Arc<Shared>>, headers: HeaderMap, Query(q): Query<PsListQuery>) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = shared.db();
    let found = refunds_of(&db, ProviderId::A, &secret, |r| match &q.transaction {
        Some(t) => r.transaction == *t || r.charge_id.as_u64().is_some_and(|n| t.parse::<u64>() == Ok(n)),
        None => true,
    });
    let data: Vec<Value> = found.iter().map(Refund::paystack).collect();
    let total = data.len();
    Json(json!({"status": true, "message": "Refunds retrieved", "data": data, "meta": {"total": total}}))
        .into_response()
}

async fn ps_show(State(shared): State<Arc<Shared>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let secret = match ps_guard(&shared, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = shared.db();
    match refunds_of(&db, ProviderId::A, &secret, |r| id.parse::<u64>() == Ok(r.seq)).first() {
        Some(r) => ps_ok("Refund retrieved", r.paystack()),
        None => ps_error(StatusCode::NOT_FOUND, "Refund not found"),
    }
}

// ---------------------------------------------------------------- gateway (provider_b, provider_c)

fn invalid(code: &str, message: impl Into<String>) -> Response {
    gateway_error(StatusCode::BAD_REQUEST, code, message)
}

async fn gw_create(State(gw): State<Gw>, headers: HeaderMap, body: Bytes) -> Response {
    let secret = match gw_guard(&gw, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let Some(o) = object(&body) else { return invalid("validation_failed", "the body must be a JSON object") };
    let Some(reference) = text(&o, "reference") else { return invalid("validation_failed", "reference is required") };
    let Some(transaction) = text(&o, "transaction") else {
        return invalid("validation_failed", "transaction is required");
    };
    if o.get("amount").is_some() && pesewas(&o, "amount").is_none() {
        return invalid("validation_failed", "amount must be a positive whole number of pesewas");
    }
    let ask = Ask {
        provider: gw.provider,
        secret,
        id: Some(reference),
        transaction,
        amount: pesewas(&o, "amount"),
        currency: text(&o, "currency"),
        note: text(&o, "reason"),
    };
    let opened = open_refund(&mut gw.shared.db(), ask);
    match opened {
        Ok(r) => (StatusCode::CREATED, Json(r.gateway())).into_response(),
        Err(Refused::Exists(Some(r))) => Json(r.gateway()).into_response(),
        Err(Refused::Exists(None)) => {
            gateway_error(StatusCode::CONFLICT, "duplicate_reference", "a refund with this reference exists")
        }
        Err(Refused::NoCharge) => gateway_error(StatusCode::NOT_FOUND, "not_found", "no charge with this transaction"),
        Err(Refused::NotPaid) => invalid("not_refundable", "only a successful charge can be refunded"),
        Err(Refused::Exceeds(left)) => {
            invalid("refund_exceeds_payment", format!("at most {left} pesewas of this charge are left to refund"))
        }
    }
}

async fn gw_show(State(gw): State<Gw>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let secret = match gw_guard(&gw, &headers) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let db = gw.shared.db();
    match db.refunds.get(&id).filter(|r| r.provider == gw.provider && r.secret == secret) {
        Some(r) => Json(r.gateway()).into_response(),
        None => gateway_error(StatusCode::NOT_FOUND, "not_found", "no refund with this id"),
    }
}

// ---------------------------------------------------------------- control

async fn list(State(shared): State<Arc<Shared>>) -> Json<Vec<Value>> {
    let db = shared.db();
    let mut all: Vec<&Refund> = db.refunds.values().collect();
    all.sort_by_key(|r| std::cmp::Reverse(r.seq));
    Json(all.into_iter().map(Refund::record).collect())
}

async fn show(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    match shared.db().refunds.get(&id) {
        Some(r) => Json(r.record()).into_response(),
        None => gateway_error(StatusCode::NOT_FOUND, "not_found", "no refund with this id"),
    }
}

/// Optional body of the settle routes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettleIn {
    /// `false`: settle without sending the callback (the provider's API still tells).
    deliver: Option<bool>,
    /// Why a failed refund failed.
    reason: Option<String>,
}

/// `POST /sandbox/refunds/:id/succeed|fail` → the refund's record; 404 unknown, 409 (with the
/// record) when settled already. The callback's first attempt is made before the answer.
async fn settle(
    State(shared): State<Arc<Shared>>,
    Path((id, action)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let outcome = match action.as_str() {
        "succeed" => Outcome::Success,
        "fail" => Outcome::Failed,
        _ => return gateway_error(StatusCode::NOT_FOUND, "not_found", "use /succeed or /fail"),
    };
    let input: SettleIn = if body.iter().all(u8::is_ascii_whitespace) {
        SettleIn::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(i) => i,
            Err(e) => return gateway_error(StatusCode::BAD_REQUEST, "malformed_json", format!("body: {e}")),
        }
    };
    let refund = {
        let mut db = shared.db();
        let Some(r) = db.refunds.get_mut(&id) else {
            return gateway_error(StatusCode::NOT_FOUND, "not_found", "no refund with this id");
        };
        if r.status != Outcome::Pending {
            return (StatusCode::CONFLICT, Json(r.record())).into_response();
        }
        r.status = outcome;
        if outcome == Outcome::Failed {
            r.failure_reason = Some(input.reason.unwrap_or_else(|| "Declined by the sandbox".into()));
        }
        r.completed_at = Some(now_rfc3339());
        r.clone()
    };
    if input.deliver.unwrap_or(true) {
        shared.deliver(refund.provider, &refund.secret, refund.callback()).await;
    }
    Json(refund.record()).into_response()
}

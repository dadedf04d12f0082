//! Refunds in the sandbox (D17.36, D17.38, issue 26, D18.2–3), on every wire and in the
//! control API:
//!
//! - Paystack (`/provider_a`): `POST /refund {transaction, amount?, currency?, merchant_note?,
//!   customer_note?}`, `GET /refund?transaction=<charge reference>` (newest first) and
//!   `GET /refund/:id` (Paystack's numeric id). Tessera's refund id travels as `merchant_note`;
//!   a second refund with the same note is refused as a duplicate (Paystack itself would make a
//!   second one: the adapter looks before it creates, so it never asks twice).
//! - Flutterwave (`/provider_b`, [`super::flutterwave`]): `POST /v3/transactions/:id/refund`,
//!   `GET /v3/refunds`, `GET /v3/refunds/:id`. Its wire carries no id of Tessera's: the refund
//!   is known by Flutterwave's number (or by a UUID its `comments` carry).
//! - Hubtel (`/provider_c`, [`super::hubtel`]): money sent back to the payer's number is a
//!   refund of the paid charge it fits (see there).
//! - Control: `POST /sandbox/refunds/:id/succeed` or `/fail` (`:id` = Tessera's refund id, or
//!   the provider's id of the refund; body `{"deliver": false}` settles without the callback,
//!   `/fail` takes `{reason?}`), `GET /sandbox/refunds/:id` and `GET /sandbox/refunds` (newest
//!   first).
//!
//! Only a successful charge made with the same provider and secret can be refunded, by at most
//! what is left of it: its amount less its refunds that have not failed. A refund waits pending
//! until the control API settles it, which sends its signed callback in its wire
//! (`refund.processed` / `refund.failed` on Paystack's, `refund.completed` on Flutterwave's,
//! Hubtel's send-money callback), naming the refunded charge; the faults' callback drops and
//! duplicates apply.
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::api::{object, pesewas, ps_error, ps_guard, ps_ok, text};
use super::{gateway_error, now_rfc3339, tessera_form, Db, Outcome, Shared};
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
    /// Where its callback goes when the wire names the URL (Hubtel's `PrimaryCallbackURL`).
    pub notify_url: Option<String>,
    /// Hubtel: the number the money goes back to, its channel, and Hubtel's `TransactionId`.
    pub recipient: Option<String>,
    pub channel: Option<String>,
    pub code: String,
}

impl Refund {
    /// The provider's id of the refund: a number for Paystack and Flutterwave, Hubtel's
    /// `TransactionId`.
    pub fn wire_id(&self) -> Value {
        match self.provider {
            ProviderId::C => json!(self.code),
            _ => json!(self.seq),
        }
    }

    /// The control API's view (never the secret). `reason` is why it failed, once it did, else
    /// the reason it was asked with.
    pub fn record(&self) -> Value {
        json!({
            "id": tessera_form(&self.id),
            "provider": self.provider.as_str(),
            "providerId": self.wire_id(),
            "transaction": tessera_form(&self.transaction),
            "amount": self.amount,
            "currency": self.currency,
            "status": self.status.as_str(),
            "reason": self.failure_reason.as_ref().or(self.note.as_ref()),
            "note": self.note,
            "failureReason": self.failure_reason,
            "createdAt": self.created_at,
            "completedAt": self.completed_at,
            "recipient": self.recipient,
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

    pub(super) fn paystack(&self) -> Value {
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
}

/// What a refund-creating call asks for.
pub(super) struct Ask<'a> {
    pub provider: ProviderId,
    pub secret: String,
    pub id: Option<&'a str>,
    /// The refunded charge's reference.
    pub transaction: &'a str,
    pub amount: Option<i64>,
    pub currency: Option<&'a str>,
    pub note: Option<&'a str>,
    pub notify_url: Option<String>,
    pub recipient: Option<String>,
    pub channel: Option<String>,
}

impl<'a> Ask<'a> {
    pub fn new(provider: ProviderId, secret: String, transaction: &'a str) -> Ask<'a> {
        Ask {
            provider,
            secret,
            id: None,
            transaction,
            amount: None,
            currency: None,
            note: None,
            notify_url: None,
            recipient: None,
            channel: None,
        }
    }
}

/// Why a refund was not made.
pub(super) enum Refused {
    /// The refund id is taken.
    Exists,
    /// No charge with that reference for this provider and secret.
    NoCharge,
    /// The charge is not paid.
    NotPaid,
    /// More than what is left (carries what is left).
    Exceeds(i64),
}

/// What is left to refund of a charge (`key` its stored reference): its amount less its
/// refunds that have not failed.
pub(super) fn left_of(db: &Db, provider: ProviderId, key: &str, amount: i64) -> i64 {
    let taken: i64 = db
        .refunds
        .values()
        .filter(|r| r.provider == provider && r.transaction == key && r.status != Outcome::Failed)
        .map(|r| r.amount)
        .sum();
    amount - taken
}

/// Makes the refund under the ceiling, in one lock so that two racing calls never exceed it.
pub(super) fn open_refund(db: &mut Db, ask: Ask<'_>) -> Result<Refund, Refused> {
    if ask.id.is_some_and(|id| db.refunds.contains_key(id)) {
        return Err(Refused::Exists);
    }
    let charge = db
        .charge(ask.transaction)
        .filter(|c| c.provider == ask.provider && c.secret == ask.secret)
        .ok_or(Refused::NoCharge)?;
    if charge.status != Outcome::Success {
        return Err(Refused::NotPaid);
    }
    let key = charge.reference.clone();
    let left = left_of(db, ask.provider, &key, charge.amount);
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
        transaction: key,
        charge_id,
        amount,
        currency: ask.currency.map(str::to_string).unwrap_or(charge_currency),
        note: ask.note.map(str::to_string),
        status: Outcome::Pending,
        failure_reason: None,
        created_at: now_rfc3339(),
        completed_at: None,
        notify_url: ask.notify_url,
        recipient: ask.recipient,
        channel: ask.channel,
        code: super::random_hex(32),
    };
    db.refunds.insert(refund.id.clone(), refund.clone());
    Ok(refund)
}

/// Refunds of `provider` and `secret` that `keep` selects, newest first.
pub(super) fn refunds_of(db: &Db, provider: ProviderId, secret: &str, keep: impl Fn(&Refund) -> bool) -> Vec<Refund> {
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
        .with_state(shared)
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
        id: text(&o, "merchant_note"),
        amount: pesewas(&o, "amount"),
        currency: text(&o, "currency"),
        note: text(&o, "customer_note"),
        ..Ask::new(ProviderId::A, secret, transaction)
    };
    let opened = open_refund(&mut shared.db(), ask);
    match opened {
        Ok(r) => ps_ok("Refund has been queued for processing", r.paystack()),
        Err(Refused::Exists) => {
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

// ---------------------------------------------------------------- control

async fn list(State(shared): State<Arc<Shared>>) -> Json<Vec<Value>> {
    let db = shared.db();
    let mut all: Vec<&Refund> = db.refunds.values().collect();
    all.sort_by_key(|r| std::cmp::Reverse(r.seq));
    Json(all.into_iter().map(Refund::record).collect())
}

async fn show(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let db = shared.db();
    match db.refund_key(&id).and_then(|k| db.refunds.get(&k)) {
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
        let key = db.refund_key(&id).unwrap_or_default();
        let Some(r) = db.refunds.get_mut(&key) else {
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
        shared.deliver(refund.callback()).await;
    }
    Json(refund.record()).into_response()
}

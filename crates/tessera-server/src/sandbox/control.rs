//! The sandbox's control API (D11.3), for tests, scripts and demos: settle charges and
//! transfers (which sends their signed callbacks), cause provider outages and faults, and read
//! what the sandbox holds and received. Lists are newest first.
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{gateway_error, newest_first, now_rfc3339, Channel, Charge, Faults, Outcome, Shared, Transfer};

pub(super) fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/sandbox/charges", get(charge_list))
        .route("/sandbox/charges/{reference}", get(charge_show))
        .route("/sandbox/faults", get(faults_show).post(faults_set))
        .route("/sandbox/charges/{reference}/{action}", post(charge_settle))
        .route("/sandbox/transfers/{reference}", get(transfer_show))
        .route("/sandbox/transfers/{reference}/{action}", post(transfer_settle))
        .route("/sandbox/providers/{provider}/outage", post(outage))
        .route(
            "/sandbox/webhooks",
            get(|State(s): State<Arc<Shared>>| async move { Json(newest_first(&s.db().callbacks)) }),
        )
        .route("/sandbox/sms", get(|State(s): State<Arc<Shared>>| async move { Json(newest_first(&s.db().sms)) }))
        .route("/sandbox/mail", get(|State(s): State<Arc<Shared>>| async move { Json(newest_first(&s.db().mail)) }))
        .with_state(shared)
}

/// Optional body of the settle routes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettleIn {
    /// Settle with another amount (pesewas), for mismatch tests.
    amount: Option<i64>,
    /// Settle in another currency, for mismatch tests.
    currency: Option<String>,
    /// `false`: settle without sending the callback (the verify API still tells).
    deliver: Option<bool>,
    /// Failure reason of a failed transfer.
    reason: Option<String>,
    /// How a charge was paid: `card` or `mobile_money` (e.g. a Hubtel card payment, which
    /// Tessera cannot refund, D18.3).
    method: Option<String>,
    /// The paying number (`233…`) of a paid charge.
    payer: Option<String>,
}

fn parse_body(body: &Bytes) -> Result<SettleIn, Box<Response>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(SettleIn::default());
    }
    serde_json::from_slice(body)
        .map_err(|e| Box::new(gateway_error(StatusCode::BAD_REQUEST, "malformed_json", format!("body: {e}"))))
}

fn outcome_of(action: &str) -> Option<Outcome> {
    match action {
        "succeed" => Some(Outcome::Success),
        "fail" => Some(Outcome::Failed),
        _ => None,
    }
}

/// Why settling did not happen.
pub(super) enum SettleError {
    NotFound,
    /// Settled already; carries its record.
    Settled(Value),
}

/// Settles a pending charge (optionally with another amount or currency) and, when `deliver`,
/// sends its callback: the first attempt before returning, retries in the background.
pub(super) async fn settle_charge(
    shared: &Arc<Shared>,
    reference: &str,
    outcome: Outcome,
    how: Settle,
) -> Result<Charge, SettleError> {
    let charge = {
        let mut db = shared.db();
        let c = db.charge_mut(reference).ok_or(SettleError::NotFound)?;
        if c.status != Outcome::Pending {
            return Err(SettleError::Settled(c.record(&shared.base_url)));
        }
        c.status = outcome;
        if let Some(a) = how.amount {
            c.amount = a;
        }
        if let Some(cur) = how.currency {
            c.currency = cur;
        }
        if let Some(m) = how.channel {
            c.channel = m;
        }
        if outcome == Outcome::Success {
            c.paid_at = Some(now_rfc3339());
            // Who paid: the number asked, the handset's, or (a checkout without one) a number of
            // the sandbox's own, one per charge.
            let own = format!("23320{:07}", c.id % 10_000_000);
            c.payer = how.payer.or_else(|| c.phone.as_deref().map(msisdn)).or(Some(own));
        }
        c.clone()
    };
    if how.deliver {
        shared.deliver(charge.callback()).await;
    }
    Ok(charge)
}

/// How a charge is settled beyond its outcome.
pub(super) struct Settle {
    pub amount: Option<i64>,
    pub currency: Option<String>,
    pub channel: Option<Channel>,
    pub payer: Option<String>,
    pub deliver: bool,
}

impl Settle {
    /// As the checkout page settles: as asked, with its callback.
    pub fn plain() -> Settle {
        Settle { amount: None, currency: None, channel: None, payer: None, deliver: true }
    }
}

/// A phone as `233…` (Ghana's local `0…` and `+233…` too).
pub(super) fn msisdn(phone: &str) -> String {
    let digits: String = phone.chars().filter(char::is_ascii_digit).collect();
    match digits.strip_prefix('0') {
        Some(local) if digits.len() == 10 => format!("233{local}"),
        _ => digits,
    }
}

async fn charge_settle(
    State(shared): State<Arc<Shared>>,
    Path((reference, action)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let Some(outcome) = outcome_of(&action) else {
        return gateway_error(StatusCode::NOT_FOUND, "not_found", "use /succeed or /fail");
    };
    let input = match parse_body(&body) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    if input.amount.is_some_and(|a| a <= 0) {
        return gateway_error(
            StatusCode::BAD_REQUEST,
            "validation_failed",
            "amount must be a positive number of pesewas",
        );
    }
    let channel = match input.method.as_deref() {
        None => None,
        Some("card") => Some(Channel::Card),
        Some("mobile_money") => Some(Channel::MobileMoney),
        Some(_) => {
            return gateway_error(StatusCode::BAD_REQUEST, "validation_failed", "method is card or mobile_money")
        }
    };
    let how = Settle {
        amount: input.amount,
        currency: input.currency,
        channel,
        payer: input.payer.as_deref().map(msisdn),
        deliver: input.deliver.unwrap_or(true),
    };
    match settle_charge(&shared, &reference, outcome, how).await {
        Ok(c) => Json(c.record(&shared.base_url)).into_response(),
        Err(SettleError::NotFound) => {
            gateway_error(StatusCode::NOT_FOUND, "not_found", "no charge with this reference")
        }
        Err(SettleError::Settled(record)) => (StatusCode::CONFLICT, Json(record)).into_response(),
    }
}

async fn transfer_settle(
    State(shared): State<Arc<Shared>>,
    Path((reference, action)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let Some(outcome) = outcome_of(&action) else {
        return gateway_error(StatusCode::NOT_FOUND, "not_found", "use /succeed or /fail");
    };
    let input = match parse_body(&body) {
        Ok(i) => i,
        Err(r) => return *r,
    };
    let transfer: Transfer = {
        let mut db = shared.db();
        let key = db.transfer_key(&reference).unwrap_or_default();
        let Some(t) = db.transfers.get_mut(&key) else {
            return gateway_error(StatusCode::NOT_FOUND, "not_found", "no transfer with this reference");
        };
        if t.status != Outcome::Pending {
            return (StatusCode::CONFLICT, Json(t.record())).into_response();
        }
        t.status = outcome;
        if let Some(a) = input.amount.filter(|a| *a > 0) {
            t.amount = a;
        }
        if let Some(c) = input.currency {
            t.currency = c;
        }
        if outcome == Outcome::Failed {
            t.failure_reason = Some(input.reason.unwrap_or_else(|| "Declined by the sandbox".into()));
        }
        t.completed_at = Some(now_rfc3339());
        t.clone()
    };
    if input.deliver.unwrap_or(true) {
        shared.deliver(transfer.callback()).await;
    }
    Json(transfer.record()).into_response()
}

async fn charge_show(State(shared): State<Arc<Shared>>, Path(reference): Path<String>) -> Response {
    match shared.db().charge(&reference) {
        Some(c) => Json(c.record(&shared.base_url)).into_response(),
        None => gateway_error(StatusCode::NOT_FOUND, "not_found", "no charge with this reference"),
    }
}

#[derive(Deserialize)]
struct ChargeListQuery {
    phone: Option<String>,
}

/// `GET /sandbox/charges?phone=<digits>`: the charges whose phone ends with those digits (a
/// leading `+` is ignored), newest first; without `phone`, every charge with a phone.
async fn charge_list(State(shared): State<Arc<Shared>>, Query(q): Query<ChargeListQuery>) -> Response {
    let digits = q.phone.unwrap_or_default();
    let digits = digits.trim().trim_start_matches('+');
    if !digits.chars().all(|c| c.is_ascii_digit()) {
        return gateway_error(StatusCode::BAD_REQUEST, "validation_failed", "phone must be digits");
    }
    Json(shared.charges_for_phone(digits)).into_response()
}

async fn faults_show(State(shared): State<Arc<Shared>>) -> Json<Faults> {
    Json(shared.db().faults)
}

/// Body of `POST /sandbox/faults`: the fields given replace those in force.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FaultsIn {
    #[serde(rename = "webhookDropPercent")]
    callback_drop_percent: Option<u8>,
    #[serde(rename = "webhookDuplicatePercent")]
    callback_duplicate_percent: Option<u8>,
    charge_delay_ms: Option<u64>,
}

/// `POST /sandbox/faults {webhookDropPercent?, webhookDuplicatePercent?, chargeDelayMs?}` → the
/// faults in force.
async fn faults_set(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let input: FaultsIn = if body.iter().all(u8::is_ascii_whitespace) {
        FaultsIn { callback_drop_percent: None, callback_duplicate_percent: None, charge_delay_ms: None }
    } else {
        match serde_json::from_slice(&body) {
            Ok(i) => i,
            Err(e) => return gateway_error(StatusCode::BAD_REQUEST, "malformed_json", format!("body: {e}")),
        }
    };
    for (name, p) in [
        ("webhookDropPercent", input.callback_drop_percent),
        ("webhookDuplicatePercent", input.callback_duplicate_percent),
    ] {
        if p.is_some_and(|p| p > 100) {
            return gateway_error(StatusCode::BAD_REQUEST, "validation_failed", format!("{name} must be 0 to 100"));
        }
    }
    if input.charge_delay_ms.is_some_and(|ms| ms > Faults::MAX_DELAY_MS) {
        return gateway_error(
            StatusCode::BAD_REQUEST,
            "validation_failed",
            format!("chargeDelayMs must be at most {}", Faults::MAX_DELAY_MS),
        );
    }
    let mut db = shared.db();
    let f = &mut db.faults;
    if let Some(p) = input.callback_drop_percent {
        f.callback_drop_percent = p;
    }
    if let Some(p) = input.callback_duplicate_percent {
        f.callback_duplicate_percent = p;
    }
    if let Some(ms) = input.charge_delay_ms {
        f.charge_delay_ms = ms;
    }
    Json(*f).into_response()
}

async fn transfer_show(State(shared): State<Arc<Shared>>, Path(reference): Path<String>) -> Response {
    let db = shared.db();
    match db.transfer_key(&reference).and_then(|k| db.transfers.get(&k)) {
        Some(t) => Json(t.record()).into_response(),
        None => gateway_error(StatusCode::NOT_FOUND, "not_found", "no transfer with this reference"),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutageIn {
    down: bool,
}

/// `POST /sandbox/providers/:provider/outage {"down": bool}`: the provider's API (or the SMS
/// gateway, `sms`) answers 503 while down.
async fn outage(State(shared): State<Arc<Shared>>, Path(provider): Path<String>, body: Bytes) -> Response {
    if !matches!(provider.as_str(), "provider_a" | "provider_b" | "provider_c" | "sms") {
        return gateway_error(StatusCode::NOT_FOUND, "not_found", "one of provider_a, provider_b, provider_c, sms");
    }
    let input: OutageIn = match serde_json::from_slice(&body) {
        Ok(i) => i,
        Err(e) => {
            return gateway_error(StatusCode::BAD_REQUEST, "malformed_json", format!("body {{\"down\": bool}}: {e}"))
        }
    };
    shared.set_down(&provider, input.down);
    Json(json!({"provider": provider, "down": input.down})).into_response()
}

//! Provider callbacks (D6, D16.7): the intake behind `POST /api/white-label/webhooks/:provider`
//! and the reconciliation the callbacks worker runs for each stored callback.
//!
//! Intake ([`accept`]): the signature over the raw body bytes is checked before anything is
//! stored, with the platform's shared secret or with the secret of the account that owns the
//! callback's reference (a charge's or a withdrawal's); the verified callback is stored with its
//! reconciliation job before the provider is answered (durable hand-off); a second delivery of
//! the same callback stores nothing.
//!
//! Reconciliation ([`reconcile`]): a callback is only a trigger. A charge callback asks the
//! provider's verify API through [`fulfilment::confirm`]; a transfer callback through
//! [`payouts::reconcile`]; a refund callback (it names the charge) through [`refunds::reconcile`].
//! A callback naming a reference of another provider changes nothing. (`event` below is the
//! provider's own field, `charge.success` and the like, not one of Tessera's outbound events.)
use secrecy::ExposeSecret;
use serde_json::Value;

use crate::domain::payments::retry_delay_ms;
use crate::domain::time::now_ms;
use crate::providers::payments::{adapter, CallbackAuth, CallbackKind, Credentials, ProviderId};
use crate::state::AppState;
use crate::store::callbacks::{NewCallback, StoredCallback};
use crate::store::StoreError;

use super::fulfilment::{self, ConfirmError};
use super::payouts::{self, PayoutError};
use super::refunds::{self, RefundError};
use super::routing::{credentials, payments_settings, platform_credentials};
use super::Next;

/// Why a callback was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("the signature does not match")]
    Signature,
    #[error("{0}")]
    Malformed(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How a callback arrived: its headers and raw body, and the path token of Hubtel's tokened
/// route when the URL had one.
pub struct Arrival<'a> {
    pub headers: &'a reqwest::header::HeaderMap,
    pub body: &'a [u8],
    pub token: Option<&'a str>,
}

impl Arrival<'_> {
    fn auth(&self) -> CallbackAuth<'_> {
        CallbackAuth { headers: self.headers, body: self.body, token: self.token }
    }

    /// The first D6.1 signature header present (provider_a also takes Paystack's own, D17.9).
    fn signature(&self, id: ProviderId) -> Option<&str> {
        id.signature_headers().iter().find_map(|h| self.headers.get(*h)).and_then(|v| v.to_str().ok())
    }
}

/// Whether these credentials authenticate the callback: D6.1's HMAC with the secret key, or
/// the wire's own check (Flutterwave's hash, Hubtel's path token; D18.2–3, D18.45).
fn authenticates(id: ProviderId, creds: &Credentials, arrival: &Arrival<'_>) -> bool {
    let provider = adapter(id);
    let secret = creds.secret_key.expose_secret();
    let signed = arrival
        .signature(id)
        .is_some_and(|sig| !secret.is_empty() && provider.verify_signature(secret.as_bytes(), arrival.body, sig));
    signed || provider.authenticate(creds, &arrival.auth())
}

/// The account that owns the reference the (not yet trusted) callback names: a charge's or a
/// transfer's (the withdrawal id, D14.1) `reference`; a refund names its refund id there on the
/// gateway's wire, and its charge in `transaction` (the gateway) or `transaction_reference`
/// (Paystack) (D17.36); other wires' references as their adapter reads them.
async fn owner(state: &AppState, body: &[u8], parsed: Option<&str>) -> Option<String> {
    let data = serde_json::from_slice::<Value>(body).ok().and_then(|v| v.get("data").cloned());
    let mut named: Vec<String> = data
        .map(|data| {
            ["reference", "transaction_reference", "transaction"]
                .into_iter()
                .filter_map(|k| data.get(k).and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    named.extend(parsed.map(str::to_string));
    for reference in &named {
        let found = match state.store.transaction_by_reference(reference).await {
            Ok(Some(t)) => Some(t.account_id),
            Ok(None) => match state.store.withdrawal_by_id(reference).await {
                Ok(Some(w)) => Some(w.account_id),
                _ => match state.store.refund_by_id(reference).await {
                    Ok(Some(r)) => Some(r.account_id),
                    _ => None,
                },
            },
            Err(_) => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Whether the callback is authenticated by the platform's shared credentials or by those of
/// the account that owns the callback's reference (D6.1, D18.2–3); `parsed` is the reference
/// the adapter read in the body, when it could.
async fn authenticated(state: &AppState, id: ProviderId, arrival: &Arrival<'_>, parsed: Option<&str>) -> bool {
    if platform_credentials(state, id).is_some_and(|c| authenticates(id, &c, arrival)) {
        return true;
    }
    let Some(account_id) = owner(state, arrival.body, parsed).await else { return false };
    let Ok(settings) = payments_settings(state, &account_id).await else { return false };
    // An account on the shared defaults signs with the platform's credentials, already tried.
    if settings.use_shared_defaults {
        return false;
    }
    credentials(state, &account_id, &settings, id).is_some_and(|c| authenticates(id, &c, arrival))
}

/// Whether the callback carries any authentication this provider's wire knows (else the route
/// answers 401 "missing").
pub fn carries_authentication(id: ProviderId, arrival: &Arrival<'_>) -> bool {
    arrival.signature(id).is_some() || adapter(id).carries_authentication(&arrival.auth())
}

/// Verifies and stores one callback (see the module docs). Returns whether it was new (false for
/// a second delivery of a stored callback).
pub async fn accept(state: &AppState, id: ProviderId, arrival: &Arrival<'_>) -> Result<bool, Refused> {
    let body = arrival.body;
    // Read once: its reference finds the owner's credentials; it is stored once authenticated.
    let parsed = adapter(id).parse_callback(body);
    if !authenticated(state, id, arrival, parsed.as_ref().ok().map(|c| c.reference.as_str())).await {
        tracing::warn!(provider = id.as_str(), "callback with a wrong signature refused");
        return Err(Refused::Signature);
    }
    let callback = parsed.map_err(|e| Refused::Malformed(format!("not a {} event: {e}", id.as_str())))?;
    let payload = std::str::from_utf8(body).map_err(|_| Refused::Malformed("the body is not UTF-8".into()))?;
    let new = NewCallback {
        provider: id.as_str(),
        event_key: callback.event_key(),
        event: callback.event,
        reference: callback.reference,
        payload: payload.to_string(),
    };
    let stored = state.callbacks.write(new).await?;
    tracing::debug!(provider = id.as_str(), duplicate = !stored, "callback stored");
    Ok(stored)
}

/// Reconciles one stored callback (see the module docs) and records its outcome; `step_ms` is its
/// job's last delay. A provider that could not be reached asks the worker to come back.
pub async fn reconcile(state: &AppState, callback: &StoredCallback, step_ms: i64) -> Result<Next, StoreError> {
    let retry = |e: &dyn std::fmt::Display| {
        tracing::warn!(callback = %callback.id, error = %e, "provider unreachable; the callback is retried");
        Ok(Next::Later { delay_ms: retry_delay_ms(step_ms), not_after: None, error: Some(e.to_string()) })
    };
    // What it is about, as the provider's adapter reads the stored body (the stored `event` is
    // the wire's own name: `charge.success`, `charge.completed`, Hubtel's none).
    let parsed =
        ProviderId::parse(&callback.provider).and_then(|p| adapter(p).parse_callback(callback.payload.as_bytes()).ok());
    let (kind, payer) = match &parsed {
        Some(p) => (p.kind, p.payer.as_deref()),
        None => (CallbackKind::Other, None),
    };
    let outcome = match kind {
        CallbackKind::Charge => match state.store.transaction_by_reference(&callback.reference).await? {
            None => "unknown_reference".to_string(),
            Some(t) if t.provider.as_deref() != Some(callback.provider.as_str()) => "provider_mismatch".to_string(),
            Some(t) => match fulfilment::confirm_paid_by(state, &t, payer).await {
                Ok(c) => c.as_str().to_string(),
                Err(ConfirmError::Provider(e)) if e.is_transient() => return retry(&e),
                Err(e) => format!("error: {e}"),
            },
        },
        CallbackKind::Transfer => match state.store.withdrawal_by_id(&callback.reference).await? {
            None => "unknown_reference".to_string(),
            Some(w) if w.provider != callback.provider => "provider_mismatch".to_string(),
            Some(w) => match payouts::reconcile(state, &w).await {
                Ok(o) => o.as_str().to_string(),
                Err(PayoutError::Provider(e)) if e.is_transient() => return retry(&e),
                Err(e) => format!("error: {e}"),
            },
        },
        // Refund callbacks name the charge (D17.36): every pending refund of it is asked about.
        CallbackKind::Refund => match refunds::reconcile(state, &callback.provider, &callback.reference).await {
            Ok(o) => o,
            Err(RefundError::Provider(e)) if e.is_transient() => return retry(&e),
            Err(e) => format!("error: {e}"),
        },
        // Money sent by reference (Hubtel's send money): a withdrawal's, else a refund's.
        CallbackKind::Send => match state.store.withdrawal_by_id(&callback.reference).await? {
            Some(w) if w.provider != callback.provider => "provider_mismatch".to_string(),
            Some(w) => match payouts::reconcile(state, &w).await {
                Ok(o) => o.as_str().to_string(),
                Err(PayoutError::Provider(e)) if e.is_transient() => return retry(&e),
                Err(e) => format!("error: {e}"),
            },
            None => match state.store.refund_by_id(&callback.reference).await? {
                None => "unknown_reference".to_string(),
                Some(r) if r.provider != callback.provider => "provider_mismatch".to_string(),
                Some(r) => match refunds::reconcile(state, &callback.provider, &r.transaction_reference).await {
                    Ok(o) => o,
                    Err(RefundError::Provider(e)) if e.is_transient() => return retry(&e),
                    Err(e) => format!("error: {e}"),
                },
            },
        },
        CallbackKind::Other => "ignored".to_string(),
    };
    tracing::info!(provider = %callback.provider, event = %callback.event, outcome = %outcome, "callback reconciled");
    state.store.finish_callback(&callback.id, &outcome, now_ms()).await?;
    Ok(Next::Done)
}

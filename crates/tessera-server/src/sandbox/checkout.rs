//! The sandbox's checkout page (D11.3): what a charge's `authorization_url` / `checkoutUrl`
//! opens. Pay and Decline settle the charge, send its signed callback, and send the customer back
//! to the charge's callback URL with `reference` and `status` appended, as a hosted payment page
//! does.
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;

use super::control::{settle_charge, Settle, SettleError};
use super::{Charge, Outcome, Shared};
use crate::providers::payments::ProviderId;

pub(super) fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/checkout/{reference}", get(page))
        .route("/checkout/{reference}/pay", post(pay))
        .route("/checkout/{reference}/decline", post(decline))
        .with_state(shared)
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn major(pesewas: i64) -> String {
    let sign = if pesewas < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", pesewas.abs() / 100, pesewas.abs() % 100)
}

fn shell(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{title}</title>\
         <style>body{{font-family:system-ui,sans-serif;background:#f4f5f7;margin:0}}\
         main{{max-width:420px;margin:48px auto;background:#fff;border-radius:12px;padding:28px;box-shadow:0 2px 12px #0002}}\
         h1{{font-size:1.2rem;margin:0 0 4px}}.amount{{font-size:2rem;font-weight:700;margin:16px 0}}\
         dl{{display:grid;grid-template-columns:auto 1fr;gap:6px 12px;color:#333}}dt{{color:#777}}\
         form{{display:inline}}button{{font-size:1rem;padding:10px 22px;border-radius:8px;border:0;cursor:pointer;margin:16px 8px 0 0}}\
         .pay{{background:#0a7d32;color:#fff}}.decline{{background:#e5e7eb}}.note{{color:#777;font-size:.85rem;margin-top:20px}}</style>\
         </head><body><main>{body}</main></body></html>"
    )
}

fn checkout_html(c: &Charge) -> String {
    let r = esc(&c.reference);
    let state = match c.status {
        Outcome::Pending => format!(
            "<form method=\"post\" action=\"/checkout/{r}/pay\"><button class=\"pay\" type=\"submit\">Pay</button></form>\
             <form method=\"post\" action=\"/checkout/{r}/decline\"><button class=\"decline\" type=\"submit\">Decline</button></form>"
        ),
        Outcome::Success => "<p><strong>This charge is paid.</strong></p>".to_string(),
        Outcome::Failed => "<p><strong>This charge was declined.</strong></p>".to_string(),
    };
    shell(
        "Tessera sandbox checkout",
        &format!(
            "<h1>Tessera sandbox checkout</h1><div class=\"amount\">{cur} {amt}</div>\
             <dl><dt>E-mail</dt><dd>{email}</dd><dt>Reference</dt><dd><code>{r}</code></dd><dt>Provider</dt><dd>{prov}</dd></dl>\
             {state}<p class=\"note\">Sandbox: no money moves. Paying or declining sends the provider's signed callback.</p>",
            cur = esc(&c.currency),
            amt = major(c.amount),
            email = esc(&c.email),
            prov = c.provider.as_str(),
        ),
    )
}

async fn page(State(shared): State<Arc<Shared>>, Path(reference): Path<String>) -> Response {
    match shared.db().charge(&reference) {
        Some(c) => Html(checkout_html(c)).into_response(),
        None => (StatusCode::NOT_FOUND, Html(shell("Not found", "<h1>No such charge</h1>"))).into_response(),
    }
}

async fn pay(State(shared): State<Arc<Shared>>, Path(reference): Path<String>) -> Response {
    finish(&shared, &reference, Outcome::Success).await
}

async fn decline(State(shared): State<Arc<Shared>>, Path(reference): Path<String>) -> Response {
    finish(&shared, &reference, Outcome::Failed).await
}

/// `callback?reference=…&status=…` (after any query the callback already has).
fn callback_target(callback: &str, reference: &str, status: &str) -> String {
    let sep = if callback.contains('?') { '&' } else { '?' };
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("reference", reference)
        .append_pair("status", status)
        .finish();
    match callback.split_once('#') {
        Some((base, frag)) => format!("{base}{sep}{query}#{frag}"),
        None => format!("{callback}{sep}{query}"),
    }
}

/// Where a settled charge's customer goes, as each hosted page sends them: Paystack's and
/// Hubtel's return URL with `reference` and `status`; Flutterwave's `redirect_url` with
/// `status` (`successful` | `cancelled`), `tx_ref` and `transaction_id`; a declined Hubtel
/// checkout to its `cancellationUrl`.
fn return_target(c: &Charge) -> Option<String> {
    let paid = c.status == Outcome::Success;
    match c.provider {
        ProviderId::B => {
            let status = if paid { "successful" } else { "cancelled" };
            let url = c.callback_url.as_deref()?;
            let sep = if url.contains('?') { '&' } else { '?' };
            let query: String = form_urlencoded::Serializer::new(String::new())
                .append_pair("status", status)
                .append_pair("tx_ref", &c.reference)
                .append_pair("transaction_id", &c.id.to_string())
                .finish();
            Some(format!("{url}{sep}{query}"))
        }
        ProviderId::C if !paid && c.cancel_url.is_some() => c.cancel_url.clone(),
        _ => Some(callback_target(c.callback_url.as_deref()?, &c.reference, c.status.as_str())),
    }
}

async fn finish(shared: &Arc<Shared>, reference: &str, outcome: Outcome) -> Response {
    match settle_charge(shared, reference, outcome, Settle::plain()).await {
        Ok(c) => match return_target(&c) {
            Some(target) => Redirect::to(&target).into_response(),
            None => Html(checkout_html(&c)).into_response(),
        },
        Err(SettleError::NotFound) => {
            (StatusCode::NOT_FOUND, Html(shell("Not found", "<h1>No such charge</h1>"))).into_response()
        }
        Err(SettleError::Settled(_)) => match shared.db().charge(reference) {
            Some(c) => (StatusCode::CONFLICT, Html(checkout_html(c))).into_response(),
            None => StatusCode::CONFLICT.into_response(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callback_gets_reference_and_status_appended() {
        assert_eq!(
            callback_target("https://a.test/done", "R1", "success"),
            "https://a.test/done?reference=R1&status=success"
        );
        assert_eq!(
            callback_target("https://a.test/d?x=1#top", "R 2", "failed"),
            "https://a.test/d?x=1&reference=R+2&status=failed#top"
        );
        assert_eq!(major(12345), "123.45");
        assert_eq!(esc("<a href='x'>"), "&lt;a href=&#39;x&#39;&gt;");
    }
}

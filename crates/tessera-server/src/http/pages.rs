//! Public pages outside the API envelope: `/pay/done`, where a customer lands back from a
//! provider's checkout page when the payment named no return address (D18.45).
use axum::http::header;
use axum::response::IntoResponse;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::extract::ApiQuery;
use crate::http::openapi::QueryErrors;

/// The query of `/pay/done`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PayDone {
    /// The payment's reference (`tsr_…`).
    pub reference: Option<String>,
    /// `1` when the customer cancelled at the provider's page.
    pub cancelled: Option<String>,
}

/// GET /pay/done — a small page saying the payment is being confirmed (or was cancelled). No
/// key: it shows nothing but the reference it was given; the payment's state is the provider's
/// callback's and status check's business (D18.1).
#[utoipa::path(get, path = "/pay/done", operation_id = "pay_done", tag = "pages", params(PayDone),
    responses((status = 200, description = "an HTML page: the payment is being confirmed, or was cancelled (`cancelled=1`); \
        other parameters a provider appends are ignored", content_type = "text/html"), QueryErrors))]
pub async fn pay_done(ApiQuery(q): ApiQuery<PayDone>) -> impl IntoResponse {
    let reference: String = q
        .reference
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .take(64)
        .collect();
    let cancelled = q.cancelled.as_deref().is_some_and(|c| matches!(c, "1" | "true"));
    let (title, text) = if cancelled {
        ("Payment cancelled", "The payment was cancelled. Nothing was charged; you may close this page.")
    } else {
        (
            "Payment received",
            "Your payment is being confirmed. You will receive a confirmation once it is; you may close this page.",
        )
    };
    let reference_line =
        if reference.is_empty() { String::new() } else { format!("<p>Reference: <code>{reference}</code></p>") };
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width, initial-scale=1\"><title>{title}</title></head><body \
         style=\"font-family: sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem\">\
         <h1>{title}</h1><p>{text}</p>{reference_line}</body></html>"
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], page)
}

//! Rendering: the templates compiled into the binary (minijinja, HTML auto-escaped), the layout
//! every signed-in page shares, and the filters pages use (`ghs`, `when`).
use std::collections::BTreeMap;
use std::sync::OnceLock;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use minijinja::{context, Environment, Value};
use serde::Serialize;

use super::Caller;
use crate::domain::console::Page;

/// Every template, by name (`templates/<name>`).
const TEMPLATES: &[(&str, &str)] = &[
    ("layout.html", include_str!("templates/layout.html")),
    ("macros.html", include_str!("templates/macros.html")),
    ("error.html", include_str!("templates/error.html")),
    ("sign_in.html", include_str!("templates/sign_in.html")),
    ("dashboard.html", include_str!("templates/dashboard.html")),
    ("campaigns.html", include_str!("templates/campaigns.html")),
    ("campaign.html", include_str!("templates/campaign.html")),
    ("payments.html", include_str!("templates/payments.html")),
    ("ledger.html", include_str!("templates/ledger.html")),
    ("withdrawals.html", include_str!("templates/withdrawals.html")),
    ("team.html", include_str!("templates/team.html")),
    ("gate.html", include_str!("templates/gate.html")),
    ("reseller.html", include_str!("templates/reseller.html")),
];

/// Pesewas as GHS with two decimals and thousands separators (`12345` → `123.45`).
pub fn ghs(pesewas: i64) -> String {
    let sign = if pesewas < 0 { "-" } else { "" };
    let abs = pesewas.unsigned_abs();
    let whole = (abs / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{sign}{grouped}.{:02}", abs % 100)
}

/// Unix ms as `2026-11-27 11:00 UTC`.
pub fn when(ms: i64) -> String {
    let s = crate::domain::time::rfc3339(ms);
    match (s.get(..10), s.get(11..16)) {
        (Some(d), Some(t)) => format!("{d} {t} UTC"),
        _ => s,
    }
}

fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Chainable);
        for (name, source) in TEMPLATES {
            if let Err(e) = env.add_template(name, source) {
                // A broken template is a build error in practice: the suite renders every page.
                tracing::error!(template = name, error = %e, "console template does not compile");
            }
        }
        env.add_filter("ghs", ghs);
        env.add_filter("when", when);
        env
    })
}

/// One navigation link.
#[derive(Serialize)]
struct NavLink {
    path: &'static str,
    title: &'static str,
    current: bool,
}

/// The layout's values for a signed-in page: who, the navigation of the pages the caller may
/// open (D17.43: by their names), the CSRF token.
fn layout(caller: &Caller, current: Page) -> Value {
    let nav: Vec<NavLink> = Page::ALL
        .into_iter()
        .filter(|p| caller.may_open(*p))
        .map(|p| NavLink { path: p.path(), title: p.title(), current: p == current })
        .collect();
    // The account switch, for a person with more than one membership.
    let me = caller.member().map(|m| m.id.as_str());
    let listed = if caller.accounts.len() > 1 { caller.accounts.as_slice() } else { &[] };
    let accounts: Vec<Value> = listed
        .iter()
        .map(|a| {
            let (member, role) = (&a.member.id, a.member.role.as_str());
            context! { member, name => a.account_name, role, current => Some(member.as_str()) == me }
        })
        .collect();
    context! {
        nav => nav,
        accounts => accounts,
        csrf => caller.csrf,
        who => caller.email(),
        role => caller.role().map(|r| r.as_str()).unwrap_or("reseller"),
        page_title => current.title(),
    }
}

fn html(status: StatusCode, body: String) -> Response {
    let mut r = (status, Html(body)).into_response();
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; style-src 'self'; \
             script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
    );
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    r
}

/// Renders `template` for a signed-in page with `ctx` (merged over the layout's values).
pub fn render(caller: &Caller, current: Page, template: &str, ctx: Value) -> Response {
    render_status(StatusCode::OK, caller, current, template, ctx)
}

/// As [`render`], with a status (400 for a form sent back with its errors, D17.43).
pub fn render_status(status: StatusCode, caller: &Caller, current: Page, template: &str, ctx: Value) -> Response {
    let ctx = context! { ..ctx, ..layout(caller, current) };
    render_raw(status, template, ctx)
}

/// Renders a template with exactly `ctx` (pages without a session: sign-in, errors).
pub fn render_raw(status: StatusCode, template: &str, ctx: Value) -> Response {
    let env = environment();
    match env.get_template(template).and_then(|t| t.render(ctx)) {
        Ok(body) => html(status, body),
        Err(e) => {
            tracing::error!(template, error = %e, "console template failed to render");
            html(
                StatusCode::INTERNAL_SERVER_ERROR,
                "<!doctype html><title>Error</title><p>Something went wrong.</p>".into(),
            )
        }
    }
}

/// An error page (no session needed).
pub fn error_page(status: StatusCode, message: &str) -> Response {
    render_raw(status, "error.html", context! { status => status.as_u16(), message => message })
}

/// The errors of a form sent back: field name → message, shown beside the field.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FieldErrors(pub BTreeMap<String, String>);

impl FieldErrors {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn add(&mut self, field: &str, message: impl Into<String>) {
        self.0.entry(field.to_string()).or_insert_with(|| message.into());
    }

    /// The validation errors of a domain refusal, by field (other refusals under `form`).
    pub fn from_domain(e: &crate::domain::DomainError) -> FieldErrors {
        let mut errors = FieldErrors::default();
        match e {
            crate::domain::DomainError::Validation(fields) => {
                for f in fields {
                    errors.add(&f.field, f.message.clone());
                }
            }
            other => errors.add("form", other.to_string()),
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_reads_as_ghs_with_separators() {
        assert_eq!(ghs(0), "0.00");
        assert_eq!(ghs(5), "0.05");
        assert_eq!(ghs(123_456_789), "1,234,567.89");
        assert_eq!(ghs(-150), "-1.50");
    }

    #[test]
    fn every_template_compiles() {
        let env = environment();
        for (name, _) in TEMPLATES {
            env.get_template(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}

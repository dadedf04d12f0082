//! `/console/ledger` (D17.30): the account's ledger entries (`Store::ledger_entries`, with a
//! filter by entry kind), newest first, 50 a page. An unknown `?type=` is sent back (400) with
//! the error beside the filter. Also the query-string and paging helpers the payments page
//! shares.
use std::collections::BTreeMap;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use minijinja::context;
use serde::Serialize;

use super::view::{render_status, FieldErrors};
use super::{Caller, PageResult};
use crate::domain::console::Page;
use crate::state::AppState;
use crate::store::ledger::kind;

/// Rows a page shows.
pub const PER_PAGE: u32 = 50;

/// The query string's fields (a field sent twice keeps its first value), trimmed.
pub fn query_of(raw: Option<&str>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for (k, v) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        map.entry(k.into_owned()).or_insert_with(|| v.trim().to_string());
    }
    map
}

/// `?page=` (1 when absent); a non-number or 0 is an error under `form`.
pub fn page_number(q: &BTreeMap<String, String>, errors: &mut FieldErrors) -> u32 {
    match q.get("page").map(String::as_str).unwrap_or("") {
        "" => 1,
        p => match p.parse::<u32>() {
            Ok(n) if (1..=1_000_000).contains(&n) => n,
            _ => {
                errors.add("form", "the page must be a whole number from 1");
                1
            }
        },
    }
}

/// Newer/older links: the page's path with `keep` (name, value) and the page number.
#[derive(Serialize, Default)]
pub struct Pager {
    pub page: u32,
    pub pages: u64,
    pub total: u64,
    pub newer: Option<String>,
    pub older: Option<String>,
}

pub fn pager(path: &str, keep: &[(&str, &str)], page: u32, total: u64) -> Pager {
    let pages = total.div_ceil(u64::from(PER_PAGE)).max(1);
    let href = |n: u32| {
        let mut s = form_urlencoded::Serializer::new(String::new());
        for (k, v) in keep.iter().filter(|(_, v)| !v.is_empty()) {
            s.append_pair(k, v);
        }
        s.append_pair("page", &n.to_string());
        format!("{path}?{}", s.finish())
    };
    Pager {
        page,
        pages,
        total,
        newer: (page > 1).then(|| href(page - 1)),
        older: (u64::from(page) < pages).then(|| href(page + 1)),
    }
}

/// A ledger row as shown.
#[derive(Serialize)]
struct Row {
    created_at: i64,
    kind: String,
    reference: String,
    amount: i64,
    description: &'static str,
}

/// What each entry kind means, in words.
fn describe(k: &str) -> &'static str {
    match k {
        kind::CHARGE => "Payment received",
        kind::FEE => "Processing fee",
        kind::WITHDRAWAL_HOLD => "Withdrawal requested: amount held",
        kind::WITHDRAWAL_RELEASE => "Withdrawal ended: hold released",
        kind::WITHDRAWAL_DEBIT => "Withdrawal paid out",
        kind::REFUND_HOLD => "Refund requested: amount held",
        kind::REFUND_RELEASE => "Refund ended: hold released",
        kind::REFUND_DEBIT => "Refund paid back",
        _ => "",
    }
}

/// GET /console/ledger (?type=, ?page=)
pub async fn list(State(state): State<AppState>, caller: Caller, RawQuery(raw): RawQuery) -> PageResult {
    caller.open(Page::Ledger)?;
    let q = query_of(raw.as_deref());
    let mut errors = FieldErrors::default();
    let page = page_number(&q, &mut errors);
    let ty = q.get("type").map(String::as_str).unwrap_or("");
    if !ty.is_empty() && !kind::ALL.contains(&ty) {
        errors.add("type", format!("must be one of {}", kind::ALL.join(", ")));
    }
    let (rows, total) = if errors.is_empty() {
        let kind = (!ty.is_empty()).then_some(ty);
        state.store.ledger_entries(caller.account_id(), kind, (page, PER_PAGE)).await?
    } else {
        (Vec::new(), 0)
    };
    let rows: Vec<Row> = rows
        .into_iter()
        .map(|e| Row {
            description: describe(&e.kind),
            created_at: e.created_at,
            kind: e.kind,
            reference: e.reference,
            amount: e.amount,
        })
        .collect();
    let status = if errors.is_empty() { StatusCode::OK } else { StatusCode::BAD_REQUEST };
    let ctx = context! {
        rows => rows, kinds => kind::ALL, ty => ty, errors => errors,
        pager => pager(Page::Ledger.path(), &[("type", ty)], page, total),
    };
    Ok(render_status(status, &caller, Page::Ledger, "ledger.html", ctx))
}

//! The console (D17.28–32, D17.43): server-rendered pages under `/console` for organization
//! members and reseller portal users, served by the same binary. Every page and form works
//! without JavaScript; `assets/console.js` only enhances (live counters, the camera).
//!
//! The pieces every page shares live here:
//! - [`Caller`]: the signed-in person, found from the `tessera_console` cookie (an HttpOnly,
//!   SameSite=Lax cookie holding the session token; `Secure` when the request came over https).
//!   A page names the [`Page`] it is and [`Caller::open`] answers 403 to a role that may not
//!   open it.
//! - [`Posted`]: a form post of a signed-in person: the CSRF token (hidden input `csrf`) must
//!   match the session's, and a cross-site `Origin` is refused.
//! - [`render`]: templates compiled into the binary (minijinja), one layout with the
//!   navigation of the pages the role may open and the "Sign out" control.
//! - [`ConsoleError`]: answers as HTML pages, never the API's JSON envelope.
pub mod assets;
pub mod campaigns;
pub mod dashboard;
pub mod gate;
pub mod ledger;
pub mod live;
pub mod payments;
pub mod reseller;
pub mod sign_in;
pub mod team;
pub mod view;
pub mod withdrawals;

use std::collections::BTreeMap;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{any, get, post};
use axum::Router;

use crate::domain::console::{Page, Role};
use crate::domain::time::now_ms;
use crate::flows::console::{self as flow, Signed};
use crate::flows::customer_access::AccessError;
use crate::state::AppState;
use crate::store::console::{Membership, OrgMember};
use crate::store::portal::PortalSession;
use crate::store::StoreError;

pub use view::render;

/// The session cookie.
pub const COOKIE: &str = "tessera_console";
/// The pre-session cookie that binds the sign-in forms' CSRF token.
pub const PRE_COOKIE: &str = "tessera_console_pre";

/// Every console route as (method, path), the reseller page's own included: the isolation
/// tests (tests/api/console_isolation.rs) hold one case per entry and check this list against
/// the `.route(...)` calls of this file and reseller.rs.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/console"),
    ("POST", "/console/sign-in"),
    ("POST", "/console/sign-in/verify"),
    ("POST", "/console/sign-out"),
    ("POST", "/console/switch"),
    ("GET", "/console/assets/{file}"),
    ("GET", "/console/live"),
    ("GET", "/console/campaigns"),
    ("GET", "/console/campaigns/{campaign_id}"),
    ("GET", "/console/payments"),
    ("GET", "/console/ledger"),
    ("GET", "/console/withdrawals"),
    ("POST", "/console/withdrawals"),
    ("POST", "/console/withdrawals/{withdrawal_id}/decide"),
    ("GET", "/console/team"),
    ("POST", "/console/team"),
    ("POST", "/console/team/{member_id}/remove"),
    ("GET", "/console/gate"),
    ("POST", "/console/gate"),
    ("GET", "/console/reseller"),
    ("POST", "/console/reseller/members"),
    ("POST", "/console/reseller/approval-requests"),
    ("POST", "/console/reseller/approval-requests/{approval_id}/decide"),
];

/// Every console route.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/console", get(dashboard::show))
        .route("/console/sign-in", post(sign_in::start))
        .route("/console/sign-in/verify", post(sign_in::verify))
        .route("/console/sign-out", post(sign_in::sign_out))
        .route("/console/switch", post(sign_in::switch))
        .route("/console/assets/{file}", get(assets::serve))
        .route("/console/live", get(live::stream))
        .route("/console/campaigns", get(campaigns::list))
        .route("/console/campaigns/{campaign_id}", get(campaigns::show))
        .route("/console/payments", get(payments::list))
        .route("/console/ledger", get(ledger::list))
        .route("/console/withdrawals", get(withdrawals::list).post(withdrawals::create))
        .route("/console/withdrawals/{withdrawal_id}/decide", post(withdrawals::decide))
        .route("/console/team", get(team::list).post(team::add))
        .route("/console/team/{member_id}/remove", post(team::remove))
        .route("/console/gate", get(gate::show).post(gate::check))
        .route("/console/reseller", get(reseller::show))
        .merge(reseller::routes())
        // Any other path under /console is a page that does not exist: an HTML 404, as a
        // browser expects (the API's JSON 404 is for the API's paths).
        .route("/console/{*rest}", any(unknown_page))
}

async fn unknown_page() -> Response {
    view::error_page(StatusCode::NOT_FOUND, "No such page.")
}

/// A cookie's value from the request headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty() && v.len() <= 256)
}

/// Whether the request reached us over https (directly, or as a trusted proxy says).
pub fn is_https(state: &AppState, headers: &HeaderMap) -> bool {
    state.config.security.trust_forwarded_for
        && headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|p| p.eq_ignore_ascii_case("https"))
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, path /console, `Secure` over https;
/// `max_age` in seconds (0 deletes it).
pub fn set_cookie(name: &str, value: &str, max_age: i64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let v = format!("{name}={value}; Path=/console; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}");
    HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The signed-in person of a console request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub signed: Signed,
    /// The CSRF token every form of this session carries.
    pub csrf: String,
    /// A member's memberships (this one included), for the header's account switch; read only
    /// for a person with several (empty otherwise, and for a reseller user).
    pub accounts: Vec<Membership>,
}

impl Caller {
    /// The member's role; `None` for a reseller portal user.
    pub fn role(&self) -> Option<Role> {
        match &self.signed {
            Signed::Member { member, .. } => Some(member.role),
            Signed::Reseller(_) => None,
        }
    }

    pub fn account_id(&self) -> &str {
        self.signed.account_id()
    }

    pub fn member(&self) -> Option<&OrgMember> {
        match &self.signed {
            Signed::Member { member, .. } => Some(member),
            Signed::Reseller(_) => None,
        }
    }

    pub fn reseller(&self) -> Option<&PortalSession> {
        match &self.signed {
            Signed::Reseller(s) => Some(s),
            Signed::Member { .. } => None,
        }
    }

    /// The signed-in person's e-mail.
    pub fn email(&self) -> &str {
        match &self.signed {
            Signed::Member { member, .. } => &member.email,
            Signed::Reseller(s) => &s.email,
        }
    }

    pub fn may_open(&self, page: Page) -> bool {
        match self.role() {
            Some(role) => role.may_open(page),
            None => page == Page::Reseller,
        }
    }

    /// 403 unless the caller may open `page` (D17.31).
    pub fn open(&self, page: Page) -> Result<(), ConsoleError> {
        if self.may_open(page) {
            Ok(())
        } else {
            Err(ConsoleError::Forbidden(format!("your role may not open {}", page.title())))
        }
    }

    /// Where the caller lands: gate members on the gate page, reseller users on the reseller
    /// page, everyone else on the dashboard (D17.43).
    pub fn landing(&self) -> Page {
        self.role().map(Role::landing).unwrap_or(Page::Reseller)
    }
}

/// The caller of a request, if signed in.
pub async fn caller_of(state: &AppState, headers: &HeaderMap) -> Result<Option<Caller>, ConsoleError> {
    let Some(token) = cookie(headers, COOKIE) else { return Ok(None) };
    let Some(signed) = flow::session(&state.store, state.keyring(), token, now_ms()).await? else {
        return Ok(None);
    };
    let csrf = flow::csrf_token(state.keyring(), signed.session_hash());
    let accounts = match &signed {
        Signed::Member { member, memberships, .. } if *memberships > 1 => {
            state.store.org_memberships(&member.email).await?
        }
        _ => Vec::new(),
    };
    Ok(Some(Caller { signed, csrf, accounts }))
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ConsoleError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ConsoleError> {
        caller_of(state, &parts.headers).await?.ok_or(ConsoleError::SignIn)
    }
}

/// The fields of a posted form (`application/x-www-form-urlencoded`); a field sent twice keeps
/// its first value.
#[derive(Debug, Clone, Default)]
pub struct FormData(pub BTreeMap<String, String>);

impl FormData {
    pub fn parse(body: &[u8]) -> FormData {
        let mut map = BTreeMap::new();
        for (k, v) in form_urlencoded::parse(body) {
            map.entry(k.into_owned()).or_insert_with(|| v.into_owned());
        }
        FormData(map)
    }

    /// A field's value, trimmed ("" when absent).
    pub fn get(&self, name: &str) -> &str {
        self.0.get(name).map(|v| v.trim()).unwrap_or("")
    }
}

/// A cross-site form post is refused: an `Origin` header, when sent, must name this host.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else { return true };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    origin.split_once("://").map(|(_, rest)| rest.trim_end_matches('/')) == Some(host)
}

async fn form_of(req: Request, state: &AppState) -> Result<(Parts, FormData), ConsoleError> {
    let (parts, body) = req.into_parts();
    let limit = state.config.max_body_bytes;
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| ConsoleError::TooLarge)?;
    if !same_origin(&parts.headers) {
        return Err(ConsoleError::Forbidden("this form was posted from another site".into()));
    }
    Ok((parts, FormData::parse(&bytes)))
}

/// A signed-in person's form post, its CSRF token checked (403 otherwise).
pub struct Posted {
    pub caller: Caller,
    pub form: FormData,
}

impl FromRequest<AppState> for Posted {
    type Rejection = ConsoleError;
    async fn from_request(req: Request, state: &AppState) -> Result<Self, ConsoleError> {
        let (mut parts, form) = form_of(req, state).await?;
        let caller = Caller::from_request_parts(&mut parts, state).await?;
        if !flow::csrf_ok(state.keyring(), caller.signed.session_hash(), form.get("csrf")) {
            return Err(ConsoleError::Forbidden("the form has expired; reload the page and try again".into()));
        }
        Ok(Posted { caller, form })
    }
}

/// A sign-in form post (no session yet): its CSRF token is bound to the pre-session cookie.
pub struct AnonPosted {
    pub form: FormData,
    pub headers: HeaderMap,
}

impl FromRequest<AppState> for AnonPosted {
    type Rejection = ConsoleError;
    async fn from_request(req: Request, state: &AppState) -> Result<Self, ConsoleError> {
        let (parts, form) = form_of(req, state).await?;
        let pre = cookie(&parts.headers, PRE_COOKIE).unwrap_or_default();
        if pre.is_empty() || !flow::csrf_ok(state.keyring(), &format!("pre:{pre}"), form.get("csrf")) {
            return Err(ConsoleError::Forbidden("the sign-in form has expired; reload the page and try again".into()));
        }
        Ok(AnonPosted { form, headers: parts.headers })
    }
}

/// What a console request can fail with, answered as an HTML page.
#[derive(Debug)]
pub enum ConsoleError {
    /// No session: back to the sign-in form (303 to `/console`).
    SignIn,
    /// 403 with the reason.
    Forbidden(String),
    /// 404: no such thing in this account (another account's looks the same).
    NotFound(&'static str),
    /// 413.
    TooLarge,
    /// 429: wait this many seconds.
    Throttled(u64, String),
    /// 500, logged.
    Internal(String),
}

impl From<StoreError> for ConsoleError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => ConsoleError::NotFound(what),
            other => ConsoleError::Internal(other.to_string()),
        }
    }
}

impl From<AccessError> for ConsoleError {
    fn from(e: AccessError) -> Self {
        match e {
            AccessError::Store(s) => s.into(),
            AccessError::Throttled(t) => ConsoleError::Throttled(t.retry_after_secs, t.message.to_string()),
            AccessError::NotFound(what) => ConsoleError::NotFound(what),
            other => ConsoleError::Internal(other.to_string()),
        }
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            ConsoleError::SignIn => return Redirect::to(Page::Dashboard.path()).into_response(),
            ConsoleError::Forbidden(m) => (StatusCode::FORBIDDEN, m),
            ConsoleError::NotFound(what) => (StatusCode::NOT_FOUND, format!("No such {what}.")),
            ConsoleError::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "The form is too large.".to_string()),
            ConsoleError::Throttled(secs, m) => {
                let mut r = view::error_page(StatusCode::TOO_MANY_REQUESTS, &format!("{m}; try again in {secs} s."));
                if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                    r.headers_mut().insert(header::RETRY_AFTER, v);
                }
                return r;
            }
            ConsoleError::Internal(m) => {
                tracing::error!(error = %m, "console request failed");
                (StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong; try again.".to_string())
            }
        };
        view::error_page(status, &message)
    }
}

pub type PageResult = Result<Response, ConsoleError>;

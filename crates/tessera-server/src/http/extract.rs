//! Extractors: JSON bodies and queries with field-path error details (D1.3–D1.4), U+0000
//! refused in any text they carry (one rule for SQLite and PostgreSQL), the query of every list
//! route (`ListQuery`: page, limit and the route's filters, D1.8), and the caller, whose type names the route's scheme and scopes so that no handler can skip a check:
//! `Signed<scope::SettingsRead>`, `DomainKey<scope::Storefront>`, `AnyKey<scope::CampaignsRead>`.
//!
//! The auth middleware has already checked the credentials (headers, key, timestamp, signature,
//! replay: D2.8 steps 1–5). The extractor runs the rest in order: scheme, account status, scope,
//! per-account rate limit.
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use utoipa::openapi::path::{Parameter, ParameterIn};
use utoipa::IntoParams;

use super::envelope::Pagination;
use super::error::{ApiError, Detail};
use crate::auth::guard::LimitInfo;
use crate::domain::accounts::AccountStatus;
use crate::domain::check::Check;
use crate::domain::scopes::{KeyKind, Scope, Scopes};
use crate::state::AppState;

/// How the caller authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Signed,
    DomainKey,
}

/// Who is calling: set by the auth middleware, checked by the extractors below.
#[derive(Debug, Clone)]
pub struct Caller {
    pub account_id: std::sync::Arc<str>,
    pub account_status: AccountStatus,
    pub key_id: std::sync::Arc<str>,
    pub kind: KeyKind,
    pub campaign_id: Option<String>,
    pub scopes: Scopes,
    pub capabilities: Vec<String>,
    pub scheme: Scheme,
    /// The approved domain the request named, if any.
    pub domain: Option<String>,
    /// The account's own tighter request limit, from `security` settings.
    pub rate_limit_per_minute: Option<u32>,
    /// The account limit's verdict when the shared guards already counted the request in their
    /// one round trip (D17.1); `None`: counted here, in memory.
    pub account_limit: Option<Result<Option<LimitInfo>, LimitInfo>>,
}

impl Caller {
    pub fn has_capability(&self, cap: &str) -> bool {
        self.capabilities.iter().any(|c| c == cap)
    }
}

/// Filled by the per-account limit in the extractor, read by the middleware to set the
/// RateLimit headers on the response.
#[derive(Clone, Default)]
pub struct RateSlot(pub Arc<Mutex<Option<LimitInfo>>>);

/// What a route requires beyond its scheme.
pub trait Requirement: Send + Sync + 'static {
    const SCOPES: Scopes;
}

/// Scope requirements, named as in the spec's Scope column.
pub mod scope {
    use super::{Requirement, Scope, Scopes};
    macro_rules! requirement {
        ($($name:ident => [$($s:ident),+];)+) => {$(
            pub struct $name;
            impl Requirement for $name {
                const SCOPES: Scopes = Scopes::of(&[$(Scope::$s),+]);
            }
        )+};
    }
    requirement! {
        SettingsRead => [SettingsRead];
        SettingsWrite => [SettingsWrite];
        CampaignsRead => [CampaignsRead];
        CampaignsWrite => [CampaignsWrite];
        TicketsRead => [TicketsRead];
        TicketsWrite => [TicketsWrite];
        PaymentsWrite => [PaymentsWrite];
        WithdrawalsWrite => [WithdrawalsWrite];
        MyTicketsRead => [MyTicketsRead];
        SubmissionsWrite => [SubmissionsWrite];
        NotificationsWrite => [NotificationsWrite];
        Storefront => [CampaignsRead, TicketsRead];
    }
}

fn admit(parts: &mut Parts, state: &AppState, accept: &[Scheme], required: Scopes) -> Result<Caller, ApiError> {
    // Taken, not cloned: a route has one caller extractor, and nothing reads it afterwards.
    let caller = match parts.extensions.get::<Caller>().map(|c| accept.contains(&c.scheme)) {
        Some(true) => parts.extensions.remove::<Caller>().ok_or_else(|| ApiError::internal("caller vanished"))?,
        _ => {
            return Err(if accept == [Scheme::Signed] {
                ApiError::missing_auth("this route takes a signed request")
                    .with_detail(tessera_sign::HEADER_KEY_ID, "required")
                    .with_detail(tessera_sign::HEADER_SIGNATURE, "required")
                    .with_detail(tessera_sign::HEADER_TIMESTAMP, "required")
                    .with_detail(tessera_sign::HEADER_NONCE, "required")
            } else if accept == [Scheme::DomainKey] {
                ApiError::missing_auth("this route takes a domain and a public or campaign key")
                    .with_detail("x-white-label-domain", "required")
                    .with_detail("x-white-label-key", "required")
            } else {
                ApiError::missing_auth("this route takes a signed request or a domain and a public or campaign key")
            })
        }
    };
    if caller.account_status != AccountStatus::Enabled {
        return Err(ApiError::account_inactive(caller.account_status.as_str()));
    }
    if !caller.scopes.contains_all(required) {
        return Err(ApiError::insufficient_scope(&caller.scopes.missing(required)));
    }
    let verdict = match caller.account_limit {
        Some(v) => v,
        None => state.guards.check_account(&caller.account_id, caller.rate_limit_per_minute),
    };
    match verdict {
        Ok(info) => {
            if let (Some(info), Some(slot)) = (info, parts.extensions.get::<RateSlot>()) {
                *slot.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(info);
            }
        }
        Err(info) => return Err(ApiError::rate_limited(info, "too many requests for this account")),
    }
    Ok(caller)
}

/// The account whose limit the shared guards already counted for this request (D17.1).
fn counted_by_shared(parts: &Parts) -> Option<(Arc<str>, Option<u32>)> {
    let c = parts.extensions.get::<Caller>()?;
    matches!(c.account_limit, Some(Ok(Some(_)))).then(|| (c.account_id.clone(), c.rate_limit_per_minute))
}

/// A request refused after the shared guards counted it against its account (wrong scheme,
/// account status, scope) gives its unit back, as one refused in memory never spent it
/// (D2.8: the limit is the last check).
async fn give_back(state: &AppState, counted: Option<(Arc<str>, Option<u32>)>, refusal: ApiError) -> ApiError {
    if let (Some(shared), Some((account, own))) = (&state.shared, counted) {
        shared.give_back(&account, own).await;
    }
    refusal
}

macro_rules! caller_extractor {
    ($(#[$doc:meta])* $name:ident, [$($scheme:ident),+]) => {
        $(#[$doc])*
        pub struct $name<R>(pub Caller, PhantomData<R>);

        impl<R> std::ops::Deref for $name<R> {
            type Target = Caller;
            fn deref(&self) -> &Caller {
                &self.0
            }
        }

        impl<R: Requirement> FromRequestParts<AppState> for $name<R> {
            type Rejection = ApiError;
            async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
                let counted = counted_by_shared(parts);
                match admit(parts, state, &[$(Scheme::$scheme),+], R::SCOPES) {
                    Ok(c) => Ok($name(c, PhantomData)),
                    Err(e) => Err(give_back(state, counted, e).await),
                }
            }
        }
    };
}

caller_extractor!(
    /// A signed request (spec Scheme 2) with the scopes of `R`.
    Signed,
    [Signed]
);
caller_extractor!(
    /// A domain plus public or campaign key (spec Scheme 1) with the scopes of `R`.
    DomainKey,
    [DomainKey]
);
caller_extractor!(
    /// Either scheme, for routes the spec gives in two forms.
    AnyKey,
    [DomainKey, Signed]
);

/// Turns a serde error at a path into a details item naming the field.
fn detail_from_path(path: &serde_path_to_error::Path, message: &str) -> Detail {
    let base = path.to_string();
    let base = if base == "." { String::new() } else { base };
    // serde_path_to_error already includes an unknown key in the path; add a missing one.
    let join = |name: &str| {
        if base.is_empty() {
            name.to_string()
        } else if base == name || base.ends_with(&format!(".{name}")) {
            base.clone()
        } else {
            format!("{base}.{name}")
        }
    };
    for prefix in ["unknown field `", "missing field `", "duplicate field `"] {
        if let Some(rest) = message.strip_prefix(prefix) {
            if let Some(name) = rest.split('`').next() {
                let msg = match prefix.as_bytes()[0] {
                    b'u' => "unknown field",
                    b'm' => "is required",
                    _ => "must be given once",
                };
                return Detail { field: join(name), message: msg.to_string() };
            }
        }
    }
    let field = if base.is_empty() { "body".to_string() } else { base };
    Detail { field, message: message.to_string() }
}

const NUL_MESSAGE: &str = "must not contain the character U+0000";

/// Every string (and object key) of `v` that contains U+0000, as details naming its path
/// (`title`, `metadata.note`, `ticketTypes[0].name`). PostgreSQL cannot store U+0000 in text and
/// SQLite cuts strings at it, so it is refused everywhere, before anything reads the value.
fn nul_details(v: &serde_json::Value, path: &mut String, check: &mut Check) {
    use serde_json::Value;
    let field = |p: &str| if p.is_empty() { "body".to_string() } else { p.to_string() };
    match v {
        Value::String(s) if s.contains('\0') => check.fail(field(path), NUL_MESSAGE),
        Value::Object(m) => {
            for (k, v) in m {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                if k.contains('\0') {
                    path.push_str(&k.replace('\0', "\\u0000"));
                    check.fail(field(path), format!("key {NUL_MESSAGE}"));
                } else {
                    path.push_str(k);
                    nul_details(v, path, check);
                }
                path.truncate(len);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                nul_details(v, path, check);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Refuses a JSON value with U+0000 in any string or key: 400 `validation_failed` naming each.
pub fn reject_nul(v: &serde_json::Value) -> Result<(), ApiError> {
    let mut check = Check::new();
    nul_details(v, &mut String::new(), &mut check);
    Ok(check.finish()?)
}

/// Refuses a query string with U+0000 in a parameter name or value, naming the parameter.
pub fn reject_nul_in_query(query: Option<&str>) -> Result<(), ApiError> {
    let mut check = Check::new();
    for (k, v) in form_urlencoded_parse(query.unwrap_or("")) {
        if k.contains('\0') || v.contains('\0') {
            check.fail(k.replace('\0', "\\u0000"), NUL_MESSAGE);
        }
    }
    Ok(check.finish()?)
}

/// Parses a JSON body that must be an object, naming the field of any error.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::malformed_json(format!("the body is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::malformed_json("the body must be a JSON object"));
    }
    reject_nul(&value)?;
    parse_json_value(value)
}

/// Reads an already decoded JSON object into `T`, naming the field of any error (routes whose
/// body shape depends on its content decode once, then pick the type).
pub fn parse_json_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let d = detail_from_path(e.path(), &e.inner().to_string());
        ApiError::validation(vec![d])
    })
}

/// A JSON body: 413 past the limit, 400 `malformed_json`, 400 `validation_failed` with details.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = axum::body::Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::payload_too_large(state.config.max_body_bytes)
            } else {
                ApiError::malformed_json(e.body_text())
            }
        })?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// A query string: unknown parameters and bad values are 400 with details naming them.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        reject_nul_in_query(parts.uri.query())?;
        let q = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(q));
        serde_path_to_error::deserialize(de).map(ApiQuery).map_err(|e| {
            let d = detail_from_path(e.path(), &e.inner().to_string());
            ApiError::validation(vec![d])
        })
    }
}

/// The filters of one list route: their query parameters (documented by `IntoParams`, with
/// `parameter_in = Query`) and their parse into domain types.
pub trait ListFilters: DeserializeOwned + IntoParams {
    /// The filters as the store's query takes them.
    type Parsed;
    /// Parses every filter, recording each broken rule in `check` (the value of a broken one
    /// is never read: the extractor answers 400 first).
    fn parse(self, check: &mut Check) -> Self::Parsed;
}

/// No filters: `page` and `limit` only.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoFilters {}

impl IntoParams for NoFilters {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        Vec::new()
    }
}

impl ListFilters for NoFilters {
    type Parsed = ();
    fn parse(self, _: &mut Check) {}
}

/// The query of a list route (D1.8): the route's filters `F`, then `page` (from 1, default 1)
/// and `limit` (1–100, default 20), parsed together so that one 400 names every broken rule
/// (page and limit first, then the filters in their order).
pub struct ListQuery<F: ListFilters> {
    pub page: Page,
    pub filters: F::Parsed,
}

/// Which page of a list: its number (from 1) and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub number: u32,
    pub limit: u32,
}

impl Page {
    /// `(page, limit)`, as the store's list methods take them.
    pub fn bounds(self) -> (u32, u32) {
        (self.number, self.limit)
    }

    /// `pagination` of the answer, for `total` matching items.
    pub fn pagination(self, total: u64) -> Pagination {
        Pagination::of(self.number, self.limit, total)
    }
}

/// `page` and `limit` as the document shows them, after the filters of each list route.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
struct PageParams {
    /// Page number, from 1 (default 1).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1_000_000)]
    page: Option<String>,
    /// Items per page, 1–100 (default 20).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    limit: Option<String>,
}

impl<F: ListFilters> IntoParams for ListQuery<F> {
    fn into_params(parameter_in: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let mut params = F::into_params(&parameter_in);
        params.extend(PageParams::into_params(parameter_in));
        params
    }
}

/// A whole number in `1..=max`, `default` when absent.
fn page_number(check: &mut Check, field: &str, v: Option<String>, default: u32, max: u32) -> u32 {
    match v.map(|s| s.parse::<u32>()) {
        None => default,
        Some(Ok(n)) if (1..=max).contains(&n) => n,
        Some(_) => {
            check.fail(field, format!("must be a whole number from 1 to {max}"));
            default
        }
    }
}

impl<F: ListFilters, S: Send + Sync> FromRequestParts<S> for ListQuery<F> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        reject_nul_in_query(parts.uri.query())?;
        let q = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(q));
        let raw: paged::Paged<F> = serde_path_to_error::deserialize(de).map_err(|e| {
            let d = detail_from_path(e.path(), &e.inner().to_string());
            ApiError::validation(vec![d])
        })?;
        let mut check = Check::new();
        let number = page_number(&mut check, "page", raw.page, 1, 1_000_000);
        let limit = page_number(&mut check, "limit", raw.limit, 20, 100);
        let filters = raw.filters.parse(&mut check);
        check.finish()?;
        Ok(ListQuery { page: Page { number, limit }, filters })
    }
}

/// Reads `page` and `limit` out of a query map and hands every other parameter, in order, to
/// the filters' own `Deserialize` (so their unknown and repeated parameters are refused as
/// before, and a repeated `page` or `limit` as well).
mod paged {
    use std::marker::PhantomData;

    use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
    use serde::Deserialize;

    pub struct Paged<F> {
        pub page: Option<String>,
        pub limit: Option<String>,
        pub filters: F,
    }

    impl<'de, F: Deserialize<'de>> Deserialize<'de> for Paged<F> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_map(PagedVisitor(PhantomData))
        }
    }

    struct PagedVisitor<F>(PhantomData<F>);

    impl<'de, F: Deserialize<'de>> Visitor<'de> for PagedVisitor<F> {
        type Value = Paged<F>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("query parameters")
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Paged<F>, A::Error> {
            let mut rest = Rest { map, page: None, limit: None };
            let filters = F::deserialize(&mut rest)?;
            Ok(Paged { page: rest.page, limit: rest.limit, filters })
        }
    }

    /// The query map less `page` and `limit`, which it keeps aside.
    struct Rest<A> {
        map: A,
        page: Option<String>,
        limit: Option<String>,
    }

    impl<'de, A: MapAccess<'de>> MapAccess<'de> for Rest<A> {
        type Error = A::Error;

        fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
            while let Some(key) = self.map.next_key::<String>()? {
                let (slot, name) = match key.as_str() {
                    "page" => (&mut self.page, "page"),
                    "limit" => (&mut self.limit, "limit"),
                    _ => return seed.deserialize(key.into_deserializer()).map(Some),
                };
                if slot.is_some() {
                    return Err(de::Error::duplicate_field(name));
                }
                *slot = Some(self.map.next_value()?);
            }
            Ok(None)
        }

        fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
            self.map.next_value_seed(seed)
        }
    }

    impl<'de, A: MapAccess<'de>> Deserializer<'de> for &mut Rest<A> {
        type Error = A::Error;

        fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
            visitor.visit_map(self)
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
        }
    }
}

fn form_urlencoded_parse(q: &str) -> form_urlencoded::Parse<'_> {
    form_urlencoded::parse(q.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One filter, refused when it says `bad`.
    #[derive(Debug, Deserialize, IntoParams)]
    #[serde(deny_unknown_fields)]
    #[into_params(parameter_in = Query)]
    struct KindFilter {
        kind: Option<String>,
    }

    impl ListFilters for KindFilter {
        type Parsed = Option<String>;
        fn parse(self, check: &mut Check) -> Option<String> {
            if self.kind.as_deref() == Some("bad") {
                check.fail("kind", "is bad");
            }
            self.kind
        }
    }

    async fn list(query: &str) -> Result<ListQuery<KindFilter>, ApiError> {
        let request = axum::http::Request::get(format!("/items?{query}")).body(()).expect("request");
        let (mut parts, ()) = request.into_parts();
        ListQuery::<KindFilter>::from_request_parts(&mut parts, &()).await
    }

    async fn refusal(query: &str) -> Vec<(String, String)> {
        match list(query).await {
            Ok(_) => Vec::new(),
            Err(e) => e.details.into_iter().map(|d| (d.field, d.message)).collect(),
        }
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(f, m)| (f.to_string(), m.to_string())).collect()
    }

    #[tokio::test]
    async fn page_limit_and_filters_are_parsed_together() {
        let q = list("kind=a&page=3&limit=50").await.expect("valid");
        assert_eq!((q.page.bounds(), q.filters.as_deref()), ((3, 50), Some("a")));
        assert_eq!(list("").await.expect("valid").page.bounds(), (1, 20));
        assert_eq!(
            refusal("limit=0&kind=bad&page=x").await,
            pairs(&[
                ("page", "must be a whole number from 1 to 1000000"),
                ("limit", "must be a whole number from 1 to 100"),
                ("kind", "is bad"),
            ])
        );
    }

    #[tokio::test]
    async fn unknown_and_repeated_parameters_are_refused_by_name() {
        assert_eq!(refusal("page=1&page=2").await, pairs(&[("page", "must be given once")]));
        assert_eq!(refusal("kind=a&kind=b").await, pairs(&[("kind", "must be given once")]));
        assert_eq!(refusal("limit=5&other=1").await, pairs(&[("other", "unknown field")]));
    }

    #[test]
    fn the_document_shows_the_filters_then_page_and_limit() {
        let names: Vec<String> =
            <ListQuery<KindFilter> as IntoParams>::into_params(|| None).into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["kind", "page", "limit"]);
    }
}

//! Webhook endpoints (D17.24, D17.27, D17.41): the rules of an endpoint's input (its URL passes
//! the outbound guard of D16.25, its event filter names known types or is null for every type),
//! its status and why it was disabled, the two forms of a replay, and the feed's cursor
//! (`GET /events`). No I/O.
use serde_json::Value;

use super::check::{text, Check};
use super::time::parse_rfc3339;
use super::urls::check_account_url;
use super::webhooks::EventType;
use super::DomainError;

str_enum! {
    /// Whether an endpoint is sent its events.
    pub enum EndpointStatus {
        Enabled = "enabled",
        Disabled = "disabled",
    } else "must be enabled or disabled"
}

str_enum! {
    /// Why an endpoint is disabled: it answered 410 (`gone`), it failed for 5 days (`failing`,
    /// D17.26), or the account turned it off (`manual`).
    pub enum DisabledReason {
        Gone = "gone",
        Failing = "failing",
        Manual = "manual",
    } else "must be gone, failing or manual"
}

/// The longest URL an endpoint may have (as other stored URLs).
pub const URL_MAX_CHARS: usize = 2048;
/// The longest description.
pub const DESCRIPTION_MAX_CHARS: usize = 255;
/// A replay `{since, until}` covers at most this long (31 days).
pub const REPLAY_MAX_RANGE_MS: i64 = 31 * 24 * 3_600_000;
/// The feed's page size: default and most.
pub const FEED_DEFAULT_LIMIT: i64 = 50;
pub const FEED_MAX_LIMIT: i64 = 100;

/// The fields of a create or patch body as sent. `event_types` and `description` are
/// `Some(Value::Null)` / `Some(None)` when sent as null, `None` when absent: on a patch, null
/// clears (every type; no description) and absent keeps.
#[derive(Debug, Default, Clone, Copy)]
pub struct EndpointInput<'a> {
    pub url: Option<&'a str>,
    pub description: Option<Option<&'a str>>,
    pub event_types: Option<&'a Value>,
    pub status: Option<&'a str>,
}

/// A valid new endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEndpoint {
    pub url: String,
    pub description: Option<String>,
    /// `None`: every type.
    pub event_types: Option<Vec<EventType>>,
}

/// A valid change to an endpoint: each field present is set, the others kept. Enabling clears
/// the disabled reason and the failing run; disabling here records `manual`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct EndpointPatch {
    pub url: Option<String>,
    pub description: Option<Option<String>>,
    pub event_types: Option<Option<Vec<EventType>>>,
    pub status: Option<EndpointStatus>,
}

/// Parses `POST /webhook-endpoints {url, eventTypes?, description?}` (D17.24). `allow_private`
/// is `security.allow_private_endpoints` (test rigs on loopback).
pub fn parse_new(i: &EndpointInput<'_>, allow_private: bool) -> Result<NewEndpoint, DomainError> {
    let mut check = Check::new();
    let url = check.required("url", i.url).and_then(|u| check.take(parse_url("url", u, allow_private)));
    let description = i.description.flatten().and_then(|d| check.take(parse_description(d)));
    let event_types = match i.event_types {
        Some(v) => check.take(parse_event_types("eventTypes", v)),
        None => Some(None),
    };
    if i.status.is_some() {
        check.fail("status", "an endpoint is created enabled; change it with PATCH");
    }
    check.finish()?;
    match (url, event_types) {
        (Some(url), Some(event_types)) => Ok(NewEndpoint { url, description: description.flatten(), event_types }),
        _ => Err(DomainError::field("body", "could not be read")),
    }
}

/// Parses `PATCH /webhook-endpoints/:id {url?, description?, eventTypes?, status?}` (D17.24).
pub fn parse_patch(i: &EndpointInput<'_>, allow_private: bool) -> Result<EndpointPatch, DomainError> {
    let mut check = Check::new();
    let patch = EndpointPatch {
        url: i.url.and_then(|u| check.take(parse_url("url", u, allow_private))),
        description: match i.description {
            Some(Some(d)) => check.take(parse_description(d)),
            Some(None) => Some(None),
            None => None,
        },
        event_types: i.event_types.and_then(|v| check.take(parse_event_types("eventTypes", v))),
        status: i.status.and_then(|s| check.take(EndpointStatus::parse("status", s))),
    };
    check.finish()?;
    Ok(patch)
}

/// An absolute https URL of a public host (D16.25), at most 2048 characters.
pub fn parse_url(field: &str, s: &str, allow_private: bool) -> Result<String, DomainError> {
    let s = s.trim();
    if s.chars().count() > URL_MAX_CHARS {
        return Err(DomainError::field(field, format!("must be at most {URL_MAX_CHARS} characters")));
    }
    check_account_url(s, allow_private).map_err(|m| DomainError::field(field, m))?;
    Ok(s.to_string())
}

/// At most 255 characters after trimming; empty means none.
fn parse_description(s: &str) -> Result<Option<String>, DomainError> {
    let t = text("description", s, 0, DESCRIPTION_MAX_CHARS)?;
    Ok((!t.is_empty()).then_some(t))
}

/// `eventTypes`: null (every type) or a non-empty array of event type names, each named once
/// (a repeat is dropped). A bad item is refused by its index (`eventTypes[2]`).
pub fn parse_event_types(field: &str, v: &Value) -> Result<Option<Vec<EventType>>, DomainError> {
    let items = match v {
        Value::Null => return Ok(None),
        Value::Array(items) => items,
        _ => return Err(DomainError::field(field, "must be an array of event types, or null for every type")),
    };
    if items.is_empty() {
        return Err(DomainError::field(field, "must name at least one event type; null means every type"));
    }
    let mut check = Check::new();
    let mut types = Vec::with_capacity(items.len());
    for (n, item) in items.iter().enumerate() {
        let at = format!("{field}[{n}]");
        let parsed = match item.as_str() {
            Some(s) => check.take(EventType::parse(&at, s)),
            None => {
                check.fail(at, "must be a string");
                None
            }
        };
        if let Some(t) = parsed.filter(|t| !types.contains(t)) {
            types.push(t);
        }
    }
    check.finish()?;
    Ok(Some(types))
}

/// The stored form of a filter: a JSON array of names, NULL for every type (what
/// `store::events::takes` reads).
pub fn event_types_json(types: Option<&[EventType]>) -> Option<String> {
    types.map(|t| Value::from(t.iter().map(|x| x.as_str()).collect::<Vec<_>>()).to_string())
}

/// What a replay re-sends (D17.27, D17.41).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replay {
    /// That event, whatever the endpoint's filter.
    Event(String),
    /// Every event with `created_at` in `[since, until]` (ms) the filter takes, in sequence order.
    Range { since: i64, until: i64 },
}

/// Parses `{eventId}` or `{since, until}` (RFC 3339, since ≤ until, at most 31 days apart).
/// Neither form, or both, is refused. An `eventId` that is no UUID names no event: `Ok`, and the
/// store answers not found (as for any id of another account).
pub fn parse_replay(event_id: Option<&str>, since: Option<&str>, until: Option<&str>) -> Result<Replay, DomainError> {
    match (event_id, since.is_some() || until.is_some()) {
        (Some(_), true) => {
            return Err(DomainError::field("eventId", "give eventId, or since and until, not both"));
        }
        (None, false) => return Err(DomainError::field("eventId", "give eventId, or since and until")),
        (Some(id), false) => return Ok(Replay::Event(id.to_string())),
        (None, true) => {}
    }
    let mut check = Check::new();
    let mut time = |field: &str, v: Option<&str>| {
        let ms = v.and_then(parse_rfc3339);
        match (v, ms) {
            (None, _) => check.fail(field, "is required with the other end of the range"),
            (Some(_), None) => check.fail(field, "must be an RFC 3339 date-time"),
            _ => {}
        }
        ms
    };
    let (since, until) = (time("since", since), time("until", until));
    if let (Some(s), Some(u)) = (since, until) {
        if s > u {
            check.fail("until", "must not be before since");
        } else if u - s > REPLAY_MAX_RANGE_MS {
            check.fail("until", "must be at most 31 days after since");
        }
    }
    check.finish()?;
    match (since, until) {
        (Some(since), Some(until)) => Ok(Replay::Range { since, until }),
        _ => Err(DomainError::field("since", "could not be read")),
    }
}

/// `POST /webhook-endpoints/:id/test {type}`: the type of the sample event.
pub fn parse_test_type(t: Option<&str>) -> Result<EventType, DomainError> {
    EventType::parse("type", t.ok_or_else(|| DomainError::field("type", "is required"))?)
}

/// The feed's cursor (`GET /events?after=&limit=`): `after` a sequence ≥ 0 (default 0), `limit`
/// 1–100 (default 50).
pub fn parse_feed(after: Option<&str>, limit: Option<&str>) -> Result<(i64, i64), DomainError> {
    let mut check = Check::new();
    let after = match after.map(str::parse::<i64>) {
        None => 0,
        Some(Ok(n)) if n >= 0 => n,
        Some(_) => {
            check.fail("after", "must be a whole number ≥ 0 (a sequence)");
            0
        }
    };
    let limit = match limit.map(str::parse::<i64>) {
        None => FEED_DEFAULT_LIMIT,
        Some(Ok(n)) if (1..=FEED_MAX_LIMIT).contains(&n) => n,
        Some(_) => {
            check.fail("limit", format!("must be a whole number from 1 to {FEED_MAX_LIMIT}"));
            FEED_DEFAULT_LIMIT
        }
    };
    check.finish()?;
    Ok((after, limit))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(e: DomainError) -> Vec<String> {
        match e {
            DomainError::Validation(f) => f.into_iter().map(|f| f.field).collect(),
            other => vec![other.to_string()],
        }
    }

    #[test]
    fn a_new_endpoint_needs_a_public_https_url_and_known_event_types() {
        let types = json!(["payment.failed", "ticket.checked_in", "payment.failed"]);
        let i = EndpointInput {
            url: Some(" https://hooks.example.com/t "),
            event_types: Some(&types),
            ..Default::default()
        };
        let e = parse_new(&i, false).expect("valid");
        assert_eq!(e.url, "https://hooks.example.com/t");
        assert_eq!(e.event_types, Some(vec![EventType::PaymentFailed, EventType::TicketCheckedIn]));
        assert_eq!(
            event_types_json(e.event_types.as_deref()).as_deref(),
            Some(r#"["payment.failed","ticket.checked_in"]"#)
        );
        for url in ["http://hooks.example.com", "https://127.0.0.1/x", "https://localhost/x", "ftp://x.example.com"] {
            let i = EndpointInput { url: Some(url), ..Default::default() };
            assert_eq!(fields(parse_new(&i, false).expect_err(url)), ["url"], "{url}");
        }
        let i = EndpointInput { url: Some("http://127.0.0.1:9/x"), ..Default::default() };
        assert!(parse_new(&i, true).is_ok());
        assert_eq!(fields(parse_new(&EndpointInput::default(), false).expect_err("no url")), ["url"]);
    }

    #[test]
    fn event_types_are_refused_by_index_and_null_means_every_type() {
        assert_eq!(parse_event_types("eventTypes", &Value::Null), Ok(None));
        let bad = json!(["payment.failed", "nope", 3]);
        assert_eq!(fields(parse_event_types("eventTypes", &bad).expect_err("bad")), ["eventTypes[1]", "eventTypes[2]"]);
        assert_eq!(fields(parse_event_types("eventTypes", &json!([])).expect_err("empty")), ["eventTypes"]);
        assert_eq!(fields(parse_event_types("eventTypes", &json!("x")).expect_err("string")), ["eventTypes"]);
    }

    #[test]
    fn a_patch_keeps_what_is_absent_and_clears_what_is_null() {
        let null = Value::Null;
        let i =
            EndpointInput { description: Some(None), event_types: Some(&null), status: Some("disabled"), url: None };
        let p = parse_patch(&i, false).expect("valid");
        assert_eq!(
            p,
            EndpointPatch {
                url: None,
                description: Some(None),
                event_types: Some(None),
                status: Some(EndpointStatus::Disabled)
            }
        );
        let long = "x".repeat(256);
        let i = EndpointInput { description: Some(Some(&long)), status: Some("paused"), ..Default::default() };
        assert_eq!(fields(parse_patch(&i, false).expect_err("bad")), ["description", "status"]);
    }

    #[test]
    fn a_replay_is_one_event_or_a_bounded_range() {
        assert_eq!(parse_replay(Some("e"), None, None), Ok(Replay::Event("e".into())));
        assert_eq!(fields(parse_replay(None, None, None).expect_err("neither")), ["eventId"]);
        assert_eq!(fields(parse_replay(Some("e"), Some("x"), None).expect_err("both")), ["eventId"]);
        let r = parse_replay(None, Some("2026-01-01T00:00:00Z"), Some("2026-01-31T00:00:00Z")).expect("range");
        assert!(matches!(r, Replay::Range { since, until } if until - since == 30 * 86_400_000));
        assert_eq!(fields(parse_replay(None, Some("yesterday"), None).expect_err("bad")), ["since", "until"]);
        let backwards = parse_replay(None, Some("2026-02-01T00:00:00Z"), Some("2026-01-01T00:00:00Z"));
        assert_eq!(fields(backwards.expect_err("backwards")), ["until"]);
        let long = parse_replay(None, Some("2026-01-01T00:00:00Z"), Some("2026-02-01T00:00:01Z"));
        assert_eq!(fields(long.expect_err("too long")), ["until"]);
    }

    #[test]
    fn the_feed_cursor_has_defaults_and_bounds() {
        assert_eq!(parse_feed(None, None), Ok((0, 50)));
        assert_eq!(parse_feed(Some("7"), Some("100")), Ok((7, 100)));
        assert_eq!(fields(parse_feed(Some("-1"), Some("0")).expect_err("bad")), ["after", "limit"]);
    }
}

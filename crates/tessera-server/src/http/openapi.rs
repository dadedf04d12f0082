//! The shared error responses of the OpenAPI document (D1.1–D1.3, D16.26): one `IntoResponses`
//! type per group of statuses, so that a handler documents every error it can answer in one
//! line of its `#[utoipa::path]`:
//!
//! ```text
//! responses((status = 201, body = Envelope<CampaignCreatedOut>), SignedErrors, BodyErrors, Conflict)
//! ```
//!
//! Each response names its envelope schema and the `x-request-id` header; a 429 adds
//! `Retry-After` and the `RateLimit-*` headers. Another envelope (portal `{success, error, code}`,
//! provider callback `{success, error, code, requestId}`) gets its own sets from the same macro, e.g.
//! `error_responses!(PortalErrors = PortalErrorEnvelope { 401 => "…", 403 => "…" })`.
//! docs/openapi.md says which sets a new route declares; `tests/api/openapi.rs` enforces it.
use std::collections::BTreeMap;

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};

/// An inline string enum, for `#[schema(schema_with = …)]` on wire fields whose Rust type is a
/// string parsed later (so that a bad value is a 400 naming the field, not a serde error).
pub fn string_enum(values: &[&str], description: &str) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .description(Some(description))
        .build()
}

/// One documented error response: `description`, a JSON body of the schema `envelope`, and the
/// headers every error carries.
pub fn error_response(status: u16, description: &str, envelope: &str) -> Response {
    let header = |d: &str| HeaderBuilder::new().description(Some(d)).build();
    let mut r = ResponseBuilder::new()
        .description(description)
        .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name(envelope))).build())
        .header("x-request-id", header("The request id; the same value as `requestId` in the body (D1.1)."));
    if status == 429 {
        r = r
            .header("retry-after", header("Seconds to wait before retrying."))
            .header("ratelimit-limit", header("Requests allowed per window (account and IP limits only)."))
            .header("ratelimit-remaining", header("Requests left in the window."))
            .header("ratelimit-reset", header("Seconds until the window resets."));
    }
    r.build()
}

/// Declares `IntoResponses` types: a name, its envelope schema, and `status => description`.
#[macro_export]
macro_rules! error_responses {
    ($($(#[$doc:meta])* $name:ident = $envelope:ty { $($status:literal => $desc:expr),+ $(,)? })+) => {$(
        $(#[$doc])*
        pub struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses() -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>> {
                let envelope = <$envelope as utoipa::ToSchema>::name();
                [$(($status.to_string(), $crate::http::openapi::error_response($status, $desc, &envelope).into())),+]
                    .into_iter()
                    .collect()
            }
        }
    )+};
}

use super::error::ErrorEnvelope;

const AUTH_401: &str = "Credentials missing or refused: `missing_auth`, `invalid_key`, `invalid_signature`, \
                        `stale_timestamp` or `replayed_request` (D2.4–D2.6).";
const LIMIT_429: &str = "`rate_limited`: the account or IP limit (D2.10), or a block after repeated failed \
                         authentication (D2.9). Retry after `Retry-After` seconds.";

error_responses! {
    /// 401, 403 and 429 of a signed route (spec Scheme 2).
    SignedErrors = ErrorEnvelope {
        401 => AUTH_401,
        403 => "`insufficient_scope`, `account_inactive`, or `domain_not_allowed` when `x-white-label-domain` \
                is sent and is not an approved domain of the account (D2.7–D2.8).",
        429 => LIMIT_429,
        503 => "`replay_store_unavailable`: instances share their replay store through Redis and it does not \
                answer (D17.2); nothing ran. Retry after `Retry-After` (1) seconds with a fresh signature.",
    }

    /// 401, 403 and 429 of a domain-key route (spec Scheme 1).
    DomainKeyErrors = ErrorEnvelope {
        401 => "Headers missing, or the key unknown, revoked, private or not matching: `missing_auth`, `invalid_key`.",
        403 => "`domain_not_allowed` (the domain or Origin is not an approved domain of the key's account), \
                `insufficient_scope` or `account_inactive` (D2.3).",
        429 => LIMIT_429,
    }

    /// 401, 403 and 429 of a route served in both forms (signed, or domain key).
    AnyKeyErrors = ErrorEnvelope {
        401 => AUTH_401,
        403 => "`insufficient_scope`, `account_inactive` or `domain_not_allowed` (D2.3, D2.7–D2.8).",
        429 => LIMIT_429,
    }

    /// 400 and 413 of a route that takes a JSON body.
    BodyErrors = ErrorEnvelope {
        400 => "`malformed_json` (not JSON, or not an object) or `validation_failed`: `details` names each \
                field by its path (`title`, `metadata.note`, `ticketTypes[0].price`), unknown fields and \
                text containing U+0000 included (D1.3–D1.4).",
        413 => "`payload_too_large`: the body is over the configured limit (1 MiB by default).",
        415 => "`unsupported_media_type`: a signed request with a body must send `content-type: application/json` \
                (a charset parameter is allowed); requests without a body may omit it (D17.11).",
    }

    /// 400 of a route that reads query parameters.
    QueryErrors = ErrorEnvelope {
        400 => "`validation_failed`: `details` names each bad or unknown query parameter, values containing \
                U+0000 included.",
    }

    /// 404 of a route that names a resource (path or body).
    NotFound = ErrorEnvelope {
        404 => "`not_found`: no such resource in this account (another account's looks the same, D1.3).",
    }

    /// 409 of a route whose request can conflict with the stored state.
    ProviderErrors = ErrorEnvelope {
        502 => "`provider_unavailable`: no payment provider could take the request (none configured, or none \
                reachable after the fallback: network error, timeout or 5xx; or the provider refused it). \
                Nothing was reserved (D5.4, D16.6).",
    }

    WithdrawalConflict = ErrorEnvelope {
        409 => "`insufficient_balance`: the amount exceeds the available balance (nothing held, the key stays \
                free); or `idempotency_key_reused`: the key was used with another body (D9.1, D16.12).",
    }

    CallbackErrors = ErrorEnvelope {
        400 => "`validation_failed` for an unsupported provider (answered before the body is read), or \
                `malformed_json` for a signed body that is not the provider's event.",
        401 => "`missing_auth` (no signature header) or `invalid_signature`: nothing is stored (D6.1).",
        413 => "`payload_too_large`: the body is over the configured limit (1 MiB by default).",
        429 => LIMIT_429,
    }

    UssdErrors = ErrorEnvelope {
        400 => "`validation_failed` naming `gateway` (an unknown gateway, answered before the body is read) or \
                the gateway's missing or invalid field, or `malformed_json`: nothing is read or charged.",
        401 => "`missing_auth` without `token`; `invalid_key` for a wrong token or an unknown account (alike, so the \
                route does not tell which accounts exist).",
        413 => "`payload_too_large`: the body is over the configured limit (1 MiB by default).",
        429 => LIMIT_429,
    }

    /// 401, 403 and 429 of a signed route that belongs to a module (D17.14).
    ModuleSignedErrors = ErrorEnvelope {
        401 => AUTH_401,
        403 => "`insufficient_scope`, `account_inactive`, `domain_not_allowed` when `x-white-label-domain` \
                is sent and is not an approved domain of the account (D2.7–D2.8), or `module_disabled`: the \
                account turned the route's module off in `operations.modules` (D17.14, D17.44).",
        429 => LIMIT_429,
    }

    /// 401, 403 and 429 of a domain-key route that belongs to a module (D17.14).
    ModuleDomainKeyErrors = ErrorEnvelope {
        401 => "Headers missing, or the key unknown, revoked, private or not matching: `missing_auth`, `invalid_key`.",
        403 => "`domain_not_allowed`, `insufficient_scope` or `account_inactive` (D2.3), or `module_disabled`: \
                the account turned the route's module off in `operations.modules` (D17.14, D17.44).",
        429 => LIMIT_429,
    }

    /// 401, 403 and 429 of a voting route served in both forms (D17.17, D17.18).
    VotingAnyKeyErrors = ErrorEnvelope {
        401 => AUTH_401,
        403 => "`insufficient_scope`, `account_inactive` or `domain_not_allowed` (D2.3, D2.7–D2.8); \
                `module_disabled`: the account turned the voting module off in `operations.modules` \
                (D17.14); `vote_counts_hidden` (leaderboard, domain key): the campaign's \
                `metadata.showVoteCounts` is not true (D17.18).",
        429 => LIMIT_429,
    }

    /// 409 of a ticket type change (D17.15).
    QuantityConflict = ErrorEnvelope {
        409 => "`quantity_below_sold`: `quantity_available` would go below the seats already sold or held \
                (checked in the updating statement, so it holds under concurrent checkouts; D17.15).",
    }

    Conflict = ErrorEnvelope {
        409 => "`conflict` (e.g. a slug or code taken, the wrong campaign type, a concurrent change) or \
                `invalid_transition` (an illegal status move, D3.1).",
    }
}

/// Responses kept in `components.responses` for answers that belong to no single operation.
pub fn shared_components() -> BTreeMap<String, RefOr<Response>> {
    let mut m = BTreeMap::new();
    m.insert(
        "MethodNotAllowed".to_string(),
        error_response(
            405,
            "`method_not_allowed`: the path exists but does not take this method (D1.3); `Allow` lists \
             the methods it takes.",
            "ErrorEnvelope",
        )
        .into(),
    );
    m.insert(
        "RouteNotFound".to_string(),
        error_response(404, "`not_found`: no route has this path (D1.3).", "ErrorEnvelope").into(),
    );
    m
}

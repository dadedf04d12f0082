//! THE route table: every path once, grouped by auth scheme, each documented in OpenAPI by
//! construction (utoipa-axum's `routes!` registers the handler and its `#[utoipa::path]`).
pub mod callbacks;
pub mod console;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod health;
pub mod middleware;
pub mod openapi;
pub mod pages;
pub mod portal;
pub mod serve;
pub mod ussd;
pub mod v1;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Router;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;
use error::ApiError;

pub const V1: &str = "/api/white-label/v1";

/// Paths served to browsers with a domain key (CORS preflight is answered only for these).
pub const DOMAIN_KEY_PATHS: &[&str] = &[
    "/api/white-label/v1/config",
    "/api/white-label/v1/campaigns",
    "/api/white-label/v1/ticket-types",
    "/api/white-label/v1/participants",
    "/api/white-label/v1/storefront",
    "/api/white-label/v1/tickets/verify",
];

pub fn is_domain_key_path(path: &str) -> bool {
    DOMAIN_KEY_PATHS.contains(&path) || is_leaderboard_path(path)
}

/// `/campaigns/{id}/leaderboard` and `…/leaderboard/stream` (D17.18): domain-key paths with an id.
fn is_leaderboard_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/api/white-label/v1/campaigns/") else {
        return false;
    };
    let id = rest.split('/').next().unwrap_or_default();
    crate::domain::is_uuid(id) && matches!(&rest[id.len()..], "/leaderboard" | "/leaderboard/stream")
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tessera White-Label Organization and Reseller API",
        version = "1",
        description = "Every version 1 answer is `{success: true, data, requestId}` or the error envelope \
                       `{success: false, error, code, requestId, details?}`, with the same id in `x-request-id`. \
                       Each operation lists the errors it can answer; an unknown path answers 404 and a known \
                       path with another method 405 (`components.responses`), both in the envelope. \
                       Reseller portal routes (`/api/white-label/portal/…`) answer `{success: true, data}` or \
                       `{success: false, error, code, details?}` (no requestId; the header is set) and take the \
                       `portalSession` bearer token (D15.5, D16.26).",
    ),
    modifiers(&SecuritySchemes),
    components(schemas(error::ErrorEnvelope, error::Detail, envelope::Pagination, portal::PortalErrorEnvelope)),
)]
struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let c = openapi.components.get_or_insert_with(Default::default);
        c.responses.extend(openapi::shared_components());
        c.add_security_scheme(
            "signed",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                tessera_sign::HEADER_KEY_ID,
                "Signed request (Scheme 2): x-white-label-key-id, x-white-label-timestamp (Unix ms), \
                 x-white-label-nonce and x-white-label-signature = hex HMAC-SHA256 of \
                 `<timestamp>.<METHOD>.<path>.<body>` with the private key secret. See docs/signing.md.",
            ))),
        );
        c.add_security_scheme(
            "domainKey",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "x-white-label-key",
                "Domain key (Scheme 1): x-white-label-key = `<keyId>:<secret>` of a public or campaign key, \
                 with x-white-label-domain = an approved domain of the account.",
            ))),
        );
        c.add_security_scheme(
            "portalSession",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "User session (Scheme 3): `Authorization: Bearer <token>` from \
                         POST /api/white-label/portal/auth/otp/verify (or `tessera admin session create`); \
                         12 hours after its last use. Keys and signatures are refused on portal routes.",
                    ))
                    .build(),
            ),
        );
    }
}

/// Version 1 routes (auth middleware applies to all of them).
fn v1_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        // Signed
        .routes(routes!(v1::context::show))
        .routes(routes!(v1::campaigns::create))
        .routes(routes!(v1::campaigns::show, v1::campaigns::update))
        .routes(routes!(v1::campaigns::cancel))
        .routes(routes!(v1::ticket_types::create))
        .routes(routes!(v1::ticket_types::bootstrap))
        .routes(routes!(v1::ticket_types::update))
        .routes(routes!(v1::participants::update))
        .routes(routes!(v1::settings::show))
        .routes(routes!(v1::settings::update))
        .routes(routes!(v1::submissions::create, v1::submissions::list))
        .routes(routes!(v1::payments::initialize))
        .routes(routes!(v1::payments::verify))
        .routes(routes!(v1::payments::list))
        .routes(routes!(v1::payments::show))
        .routes(routes!(v1::refunds::create, v1::refunds::list))
        .routes(routes!(v1::refunds::show))
        .routes(routes!(v1::ledger::balance))
        .routes(routes!(v1::ledger::list))
        .routes(routes!(v1::withdrawals::create, v1::withdrawals::list))
        .routes(routes!(v1::withdrawals::show))
        .routes(routes!(v1::my_tickets::request_otp))
        .routes(routes!(v1::my_tickets::verify_otp))
        .routes(routes!(v1::my_tickets::list))
        .routes(routes!(v1::my_tickets::qr))
        .routes(routes!(v1::notifications::create, v1::notifications::list))
        .routes(routes!(v1::notifications::show))
        .routes(routes!(v1::webhook_endpoints::create, v1::webhook_endpoints::list))
        .routes(routes!(v1::webhook_endpoints::show, v1::webhook_endpoints::update, v1::webhook_endpoints::delete))
        .routes(routes!(v1::webhook_endpoints::rotate_secret))
        .routes(routes!(v1::webhook_endpoints::test))
        .routes(routes!(v1::webhook_endpoints::replay))
        .routes(routes!(v1::webhook_endpoints::attempts))
        .routes(routes!(v1::events::list))
        // Both forms: signed, or domain key
        .routes(routes!(v1::campaigns::list))
        .routes(routes!(v1::tickets::verify))
        .routes(routes!(v1::participants::create, v1::participants::list))
        .routes(routes!(v1::leaderboard::show))
        .routes(routes!(v1::leaderboard::stream))
        // Domain-key
        .routes(routes!(v1::config::show))
        .routes(routes!(v1::ticket_types::list))
        .routes(routes!(v1::storefront::show))
}

/// Reseller portal routes behind the session scheme (spec Scheme 3).
fn portal_session_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(portal::auth::logout))
        .routes(routes!(portal::reseller::show))
        .routes(routes!(portal::reseller::update_profile))
        .routes(routes!(portal::members::create))
        .routes(routes!(portal::members::update))
        .routes(routes!(portal::approvals::create, portal::approvals::list))
        .routes(routes!(portal::approvals::decide))
        .routes(routes!(portal::otp::send))
        .routes(routes!(portal::otp::verify))
}

/// Portal sign-in: no credentials yet (D10.1).
fn portal_sign_in_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(portal::auth::otp_start)).routes(routes!(portal::auth::otp_verify))
}

fn open_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .routes(routes!(pages::pay_done))
}

/// Provider callbacks: their own signature scheme, no tenant key (spec Scheme 4).
fn callback_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(callbacks::receive)).routes(routes!(callbacks::receive_tokened))
}

/// USSD gateways: the account's callback token in the query, no key (D17.19).
fn ussd_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(ussd::receive))
}

/// The OpenAPI 3.1 document of every route.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (_, doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(v1_routes())
        .merge(callback_routes())
        .merge(ussd_routes())
        .merge(portal_sign_in_routes())
        .merge(portal_session_routes())
        .merge(open_routes())
        .split_for_parts();
    doc
}

async fn openapi_json(State(state): State<AppState>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], state.openapi_json.clone())
}

async fn not_found() -> ApiError {
    ApiError::not_found("route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::method_not_allowed()
}

/// The whole application router, layers included.
pub fn router(state: AppState) -> Router {
    let (v1, _) = v1_routes().split_for_parts();
    let v1 = v1.route_layer(middleware::auth::AuthLayer::new(state.clone()));
    let (open, _) = open_routes().split_for_parts();
    crate::telemetry::metrics::install();
    let (callbacks, _) = callback_routes().split_for_parts();
    let (ussd, _) = ussd_routes().split_for_parts();
    let (portal_session, _) = portal_session_routes().split_for_parts();
    let portal_session =
        portal_session.route_layer(axum::middleware::from_fn_with_state(state.clone(), middleware::session::layer));
    let (portal_sign_in, _) = portal_sign_in_routes().split_for_parts();
    let portal = Router::new()
        .merge(portal_session)
        .merge(portal_sign_in)
        .route_layer(axum::middleware::from_fn(middleware::session::envelope));
    let router = Router::new()
        .merge(v1)
        .merge(callbacks)
        .merge(ussd)
        .merge(portal)
        .merge(open)
        .merge(console::router())
        .route("/api/white-label/v1/openapi.json", axum::routing::get(openapi_json));
    // D16.20: on the main listener unless turned off or moved to `metrics.listen`.
    let metrics = &state.config.metrics;
    let router = if metrics.enabled && metrics.listen.trim().is_empty() {
        router.route("/metrics", axum::routing::get(health::metrics))
    } else {
        router
    };
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::extract::DefaultBodyLimit::max(state.config.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(state.clone(), middleware::edge::layer))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_| {
            ApiError::internal("handler panicked").into_response()
        }))
        .layer(axum::middleware::from_fn(middleware::request_id::layer))
        .with_state(state)
}

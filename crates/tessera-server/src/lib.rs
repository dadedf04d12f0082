//! # Tessera server: a guided tour
//!
//! Tessera implements the White-Label Organization and Reseller API as the OpenAPI document
//! describes it (served at `/api/white-label/v1/openapi.json`, printed by `tessera openapi`;
//! docs/openapi.md). The open points the API left are decided in `docs/decisions.md`, which the
//! code cites as `D16.8` and the like.
//!
//! ## Layout
//! Layers import only downward: `http` → `flows` → `store` / [`providers`] → [`domain`];
//! workers call `flows` too; nothing imports `http` or `workers`.
//! - [`config`], [`telemetry`]: settings and logging.
//! - [`state`]: [`state::AppState`], what handlers and workers share. `http` imports it, never
//!   [`app`], which builds the state, the router and the workers and serves them.
//! - [`http`]: the route table ([`http::router`]), envelope, errors, extractors and middleware;
//!   handlers in `http::v1::<resource>` parse, call one flow function and render.
//! - [`flows`]: the layer between `http` and `store`, one module per flow (checkout, fulfilment,
//!   payouts, refunds, campaigns, gate, approvals, notifications, webhooks, callbacks, USSD,
//!   customer access, console, …); handlers and workers call the same flow functions, and every
//!   side effect (an event, a status change, a ledger entry, a queued message) is decided and
//!   recorded there, the store running the statements.
//! - [`views`]: resources as the API returns them and messages as their recipient sees them; no
//!   I/O.
//! - [`auth`]: master key and secrets, key directory (cached keys), replay store, guards.
//! - [`domain`]: types and rules, no I/O.
//! - [`store`]: persistence on SQLite or PostgreSQL, queries and one transaction per change.
//! - [`cli`]: the command line: its definition (`cli::args`) and dispatch, `tessera serve` and
//!   `tessera sandbox`, the operator's `tessera admin …` and the integrator's `tessera call`.
//!   `main.rs` only installs the allocator, parses and hands over to [`cli::run`].
//! - [`providers`]: payment provider adapters (the provider list is in [`providers::payments`]),
//!   the messaging transports ([`providers::messaging`]: SMTP, the SMS gateway) and the
//!   outbound guard; [`sandbox`]: the in-memory provider, SMS and SMTP peer for demos and
//!   tests (`tessera sandbox`, `tessera serve --demo`).
//!
//! ## Words
//! One name per noun, in every layer (published names that predate a word keep theirs, and the
//! code says so where it maps one onto the other):
//! - **callback**: what a payment provider sends us, `POST /api/white-label/webhooks/:provider`
//!   (`http::callbacks`, `flows::callbacks`, `store::callbacks`, `workers::callbacks`; stored in
//!   `webhook_events`, queued as `webhook`). Its `event` field is the provider's own name for it.
//! - **webhook**: what we send an organization's endpoints (`flows::webhooks`,
//!   `domain::webhooks`, `webhook_endpoints`, `webhook_deliveries`).
//! - **event**: one of those outbound event records (`flows::events`, `store::events`,
//!   `GET /events`, `domain::webhooks::EventType`).
//! - **console**: the organization web console under `/console` (`http::console`,
//!   `flows::console`, `store::console*`); the reseller's session routes under
//!   `/api/white-label/portal/reseller` are the **portal**'s.
//!
//! ## The request flow
//! ```text
//! request id + access log → catch panic → edge (per-IP limit, CORS preflight) → body limit
//!   → route match → auth middleware (headers, key, timestamp, signature, replay; D2.8 1–5)
//!   → handler's caller extractor: Signed<scope::X> / DomainKey<…> / AnyKey<…>
//!     (scheme, account status, scope, per-account limit; D2.8 6–8)
//!   → parse into a domain type → one flow function (rules) → store (tenant-scoped: every query takes the account id)
//!   → ApiResponse or ApiError
//! ```
#![forbid(unsafe_code)]

pub mod app;
pub mod auth;
pub mod cli;
pub mod config;
pub mod domain;
pub mod flows;
pub mod http;
pub mod live;
pub mod providers;
pub mod sandbox;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod views;
pub mod workers;

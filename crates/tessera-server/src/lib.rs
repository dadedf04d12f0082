//! # Tessera server: a guided tour
//!
//! Tessera implements the White-Label Organization and Reseller API
//! (`shared/spec/api-spec.md`, open points decided in `shared/spec/DECISIONS.md`).
//!
//! ## Layout
//! - [`config`], [`telemetry`]: settings and logging.
//! - [`state`]: [`state::AppState`], what handlers and workers share. `http` imports it, never
//!   [`app`], which builds the state, the router and the workers and serves them.
//! - [`http`]: the route table ([`http::router`]), envelope, errors, extractors and middleware;
//!   handlers in `http::v1::<resource>`.
//! - [`auth`]: master key and secrets, key directory (cached keys), replay store, guards.
//! - [`domain`]: types and rules, no I/O.
//! - [`store`]: persistence on SQLite or PostgreSQL, one transaction per change.
//! - [`cli`]: the operator's `tessera admin …` and the integrator's `tessera call`.
//! - [`providers`]: payment provider adapters and the outbound guard; [`sandbox`]: the
//!   in-memory provider, SMS and SMTP peer for demos and tests (`tessera sandbox`).
//!
//! ## The request flow
//! ```text
//! request id + access log → catch panic → edge (per-IP limit, CORS preflight) → body limit
//!   → route match → auth middleware (headers, key, timestamp, signature, replay; D2.8 1–5)
//!   → handler's caller extractor: Signed<scope::X> / DomainKey<…> / AnyKey<…>
//!     (scheme, account status, scope, per-account limit; D2.8 6–8)
//!   → domain parse and rules → store (tenant-scoped by AccountId) → ApiResponse or ApiError
//! ```
#![forbid(unsafe_code)]

pub mod app;
pub mod auth;
pub mod cli;
pub mod config;
pub mod domain;
pub mod flows;
pub mod http;
pub mod notify;
pub mod payments;
pub mod providers;
pub mod sandbox;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod workers;

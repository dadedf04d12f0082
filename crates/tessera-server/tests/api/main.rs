//! The one integration-test binary. Every test drives a real server over HTTP, on SQLite
//! always and on PostgreSQL when `TESSERA_TEST_DATABASE_URL` is set (see `support::on_both!`).
//! What the feature files share lives in `support/`; a feature file imports from there only,
//! never from another feature file.
#[macro_use]
mod support;

mod auth;
mod callbacks;
mod campaigns;
mod cli;
mod cluster;
mod console;
mod console_browser;
mod console_campaigns;
mod console_gate;
mod console_isolation;
mod console_money;
mod console_pages;
mod console_reseller;
mod console_team;
mod console_withdrawals;
mod crash;
mod foundation;
mod hardening;
mod instances;
mod isolation;
mod mail;
mod metrics;
mod my_tickets;
mod notifications;
mod nul;
mod openapi;
mod participants;
mod payments;
mod portal;
mod portal_console;
mod providers;
mod refunds;
mod refunds_core;
mod sandbox_inbox;
mod settings;
mod shutdown;
mod storefront;
mod stress_regressions;
mod submissions;
mod ticket_types;
mod tickets;
mod ussd;
mod voting;
mod webhook_endpoints;
mod webhooks_out;
mod wire_flutterwave;
mod wire_hubtel;
mod wire_settings;
mod wire_sms;
mod withdrawals;

//! Test support for the one integration-test binary: what the feature files share, by topic.
//! Feature files import from here only, never from one another.
//!
//! - `server`: a real server on port 0 with a fresh database and account (`spawn`, `TestApp`),
//!   the queues drained by hand (`drain`), and `on_both!`, which runs a test on SQLite and on
//!   PostgreSQL.
//! - `client`: signed and domain-key requests, the typed `Api` calls that take the expected
//!   status, and the error-envelope assertions.
//! - `payments`: a server paying through the sandbox (`PayApp`), checkouts and settlements.
//! - `callbacks`: inbound provider callbacks, signed as a provider signs them.
//! - `catalogue`: campaigns, ticket types and participants.
//! - `ledger`: the ledger read and the money audit.
//! - `mail`: mail to the sandbox's SMTP sink and the passcodes it carries.
//! - `tickets`, `portal`, `console`: issued tickets, the reseller portal, the console browser.
//! - `fakes_sms`: Africa's Talking's SMS API, faked from its documentation (D18.4).
//! - `process`: `tessera serve` as a real process (the SIGKILL tests).
//! - `fakes`: providers' real wires faked from their documentation (`fakes::hubtel`).
//! - `db`: direct SQL for what no route writes (events recorded as the store records them), and
//!   the clock in the store's milliseconds.
#![allow(dead_code)]

/// Declares each listed `async fn name(b: Backend)` as two tests: `sqlite::name` and
/// `postgres::name` (the latter runs only when `TESSERA_TEST_DATABASE_URL` is set).
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::support::server::Backend::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    match $crate::support::server::Backend::postgres() {
                        Some(b) => super::$name(b).await,
                        None => eprintln!("TESSERA_TEST_DATABASE_URL not set; PostgreSQL run skipped"),
                    }
                }
            )*
        }
    };
}

pub mod callbacks;
pub mod catalogue;
pub mod client;
pub mod console;
pub mod db;
pub mod fakes;
pub mod fakes_sms;
pub mod ledger;
pub mod mail;
pub mod payments;
pub mod portal;
pub mod process;
pub mod server;
pub mod tickets;

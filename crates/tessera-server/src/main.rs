//! The one binary: `tessera serve | admin | call | openapi | sandbox`. Start-up only: the
//! allocator, the command line's parse, and the dispatch to [`tessera_server::cli::run`], where
//! the definition ([`tessera_server::cli::args`]) and every command live.
use std::process::ExitCode;

use clap::Parser;
use tessera_server::cli::{self, Cli};

/// mimalloc instead of the system allocator: the request path allocates small, short-lived
/// buffers (headers, bodies, envelopes) on two runtime threads, where glibc's malloc showed as
/// ~5 % of a signed request's CPU (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    cli::run(Cli::parse()).await
}

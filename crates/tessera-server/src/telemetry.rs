//! Logging: `tracing` to stdout, human text or JSON lines (`TESSERA_LOG_FORMAT=json`).
//! `RUST_LOG` overrides the configured filter. Prometheus metrics live in [`metrics`].
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber once; later calls (tests) are no-ops.
pub fn init(format: LogFormat, filter: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(filter));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

pub mod metrics;

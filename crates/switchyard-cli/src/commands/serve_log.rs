//! `switchyard serve`'s log: `tracing` output on stderr, filtered by `RUST_LOG` (default:
//! warnings, the gateway's own events and one access line per call at info), written by
//! a thread of its own so a call never waits on the terminal or a slow pipe.

use std::io::IsTerminal;
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

/// What `RUST_LOG` is when unset: every crate's warnings, the gateway's info (the access
/// log `switchyard::access`, the refusal trace `switchyard::refused`, the store).
pub(super) const DEFAULT_FILTER: &str = "warn,switchyard=info,switchyard_gateway=info";

/// Installs the log; the guard flushes it when dropped (keep it until exit). A `RUST_LOG`
/// that does not parse is reported and the default used.
pub(super) fn init() -> WorkerGuard {
    // Redacted on the log's own thread, off the calls' path.
    let (writer, guard) =
        tracing_appender::non_blocking(crate::redacting::Redacting(std::io::stderr()));
    let filter = match std::env::var("RUST_LOG") {
        Ok(text) if !text.trim().is_empty() => EnvFilter::try_new(&text).unwrap_or_else(|e| {
            eprintln!(
                "switchyard serve: RUST_LOG=`{text}` is not a log filter ({e}); using `{DEFAULT_FILTER}`. \
                 Write e.g. RUST_LOG=info or RUST_LOG=warn,switchyard::access=off"
            );
            EnvFilter::new(DEFAULT_FILTER)
        }),
        _ => EnvFilter::new(DEFAULT_FILTER),
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
    guard
}

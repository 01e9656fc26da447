//! The trace export of a command that calls models (`ask`, `serve`): started from the
//! run config's `otel:` (with its overrides) or the `OTEL_EXPORTER_OTLP_*` variables, and
//! flushed when the command ends, so the last spans are not lost on exit.

use super::CliEnv;
use std::time::Duration;
use switchyard::registry::Config;

/// Flushes and stops the export when dropped.
pub(super) struct Exporting {
    timeout: Duration,
    /// Where spans go, for `serve`'s banner.
    pub(super) url: String,
    /// `grpc` or `http/protobuf`.
    pub(super) protocol: &'static str,
}

impl Drop for Exporting {
    fn drop(&mut self) {
        // Bounded: a collector that hangs delays the exit by the export timeout at most.
        if !switchyard::trace::shutdown(self.timeout) {
            eprintln!(
                "switchyard: the last spans could not be sent to {} within {:?}",
                self.url, self.timeout
            );
        }
    }
}

/// Starts the export when the config or the environment asks for it.
pub(super) fn start(config: &Config) -> Result<Option<Exporting>, String> {
    let section = switchyard::run::section(config, "otel");
    let started = switchyard::trace::start_from(section.as_ref(), &CliEnv)
        .map_err(|e| format!("error: {e}"))?;
    Ok(started.map(|c| Exporting {
        timeout: c.timeout,
        url: c.traces_url(),
        protocol: c.protocol.as_str(),
    }))
}

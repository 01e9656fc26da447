//! OpenTelemetry traces over OTLP (HTTP or gRPC), off unless asked for: one span per
//! call and a child span per attempt, under the GenAI semantic conventions
//! (`docs/observability.md`).
//!
//! The spans are made after the fact, from what a finished call knows (its record, or
//! the gateway's meter), with the call's own start and end times: the call path does no
//! tracing work while it runs, and a call without a call log is traced all the same. The
//! export is one per process ([`start`]): `Run::open` starts it from the run config's
//! `otel:` section or the `OTEL_EXPORTER_OTLP_ENDPOINT` variable, the CLI and
//! `switchyard serve` do too, and a program may call [`start`] itself. Call [`shutdown`]
//! (or [`flush`]) before the process exits, or the last second of spans is lost.
//!
//! Without the `otel` cargo feature the section is still read and checked, and
//! [`start`] says the build cannot export.

mod config;
#[cfg(feature = "otel")]
mod export;
mod facts;
#[cfg(feature = "otel")]
mod span;

pub use config::{resolve, OtelConfig, Protocol, DEFAULT_MAX_QUEUE, DEFAULT_TIMEOUT};
pub use facts::{
    finish_reason, input_messages, output_messages, AttemptSpan, CallSpan, Operation, Parent,
};

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Whether spans are being exported (read on every call: one atomic load).
static ON: AtomicBool = AtomicBool::new(false);
/// Whether prompts and replies go on the spans.
static CONTENTS: AtomicBool = AtomicBool::new(false);

/// What the export has done since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Spans the collector accepted.
    pub exported: u64,
    /// Spans dropped because the queue was full (a collector slower than the calls).
    pub dropped_queue_full: u64,
    /// Spans dropped because their export failed or timed out.
    pub dropped_export_failed: u64,
}

/// Whether calls are being traced.
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Whether the export asks for prompts and replies (`contents: true`).
pub fn contents() -> bool {
    CONTENTS.load(Ordering::Relaxed)
}

/// The export's counts.
pub fn stats() -> Stats {
    #[cfg(feature = "otel")]
    {
        use std::sync::atomic::Ordering::Relaxed;
        Stats {
            exported: export::EXPORTED.load(Relaxed),
            dropped_queue_full: export::DROPPED_QUEUE_FULL.load(Relaxed),
            dropped_export_failed: export::DROPPED_EXPORT_FAILED.load(Relaxed),
        }
    }
    #[cfg(not(feature = "otel"))]
    Stats::default()
}

/// Starts the export from an `otel:` section (or none) and the environment: `Ok(None)`
/// when neither asks for it, the config it runs with otherwise; every problem of the
/// section listed in one message.
pub fn start_from(
    section: Option<&serde_json::Value>,
    env: &dyn crate::env::EnvSource,
) -> Result<Option<OtelConfig>, String> {
    match resolve(section, env) {
        // A build without the feature, asked by the environment alone (a variable set
        // for other programs too), says so and goes on; a config's `otel:` is refused.
        Ok(Some(config)) if cfg!(not(feature = "otel")) && section.is_none() => {
            tracing::warn!(
                target: "switchyard::otel",
                "OTEL_EXPORTER_OTLP_ENDPOINT is set, but this build of switchyard has no OpenTelemetry export (the `otel` feature): no traces"
            );
            let _ = config;
            Ok(None)
        }
        Ok(Some(config)) => start(&config).map(|()| Some(config)),
        Ok(None) => Ok(None),
        Err(problems) => Err(problems.join("; ")),
    }
}

#[cfg(feature = "otel")]
mod running {
    use super::export::Exporter;
    use super::OtelConfig;
    use std::sync::{Arc, RwLock};

    pub(super) struct Pipeline {
        pub(super) exporter: Exporter,
        pub(super) scope: opentelemetry::InstrumentationScope,
        pub(super) config: OtelConfig,
    }

    pub(super) static PIPELINE: RwLock<Option<Arc<Pipeline>>> = RwLock::new(None);

    pub(super) fn current() -> Option<Arc<Pipeline>> {
        PIPELINE.read().ok()?.clone()
    }
}

/// Starts exporting with `config`. The same config again is a no-op (every `Run::open`
/// of a program may ask); another replaces the running export, whose queued spans are
/// still sent.
pub fn start(config: &OtelConfig) -> Result<(), String> {
    #[cfg(feature = "otel")]
    {
        use std::sync::Arc;
        if running::current().is_some_and(|p| &p.config == config) {
            return Ok(());
        }
        let exporter = export::Exporter::start(config)?;
        let pipeline = Arc::new(running::Pipeline {
            exporter,
            scope: opentelemetry::InstrumentationScope::builder("switchyard")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
            config: config.clone(),
        });
        let old = match running::PIPELINE.write() {
            Ok(mut slot) => slot.replace(pipeline),
            Err(_) => return Err("otel: the export's state is unusable (a thread panicked)".into()),
        };
        CONTENTS.store(config.contents, Ordering::Relaxed);
        ON.store(true, Ordering::Relaxed);
        if let Some(old) = old {
            // Off the caller's thread: the old collector may be slow.
            std::thread::spawn(move || old.exporter.shutdown(old.config.timeout));
        }
        tracing::info!(
            target: "switchyard::otel",
            "exporting traces to {} over {}",
            config.traces_url(),
            config.protocol.as_str()
        );
        Ok(())
    }
    #[cfg(not(feature = "otel"))]
    {
        Err(format!(
            "otel: this build of switchyard cannot export traces to {} (it was built without the `otel` feature)",
            config.endpoint
        ))
    }
}

/// Queues a finished call's spans for export; returns at once (a full queue drops them,
/// counted in [`stats`]). Nothing happens while the export is off.
pub fn emit(call: &CallSpan) {
    if !enabled() {
        return;
    }
    #[cfg(feature = "otel")]
    if let Some(p) = running::current() {
        p.exporter.offer(span::build(call, &p.scope));
    }
    #[cfg(not(feature = "otel"))]
    let _ = call;
}

/// A library call's spans from its record (the call log's, or the one made for the
/// spans alone when the handle records nowhere).
pub(crate) fn emit_record(record: &crate::record::CallRecord) {
    if enabled() {
        emit(&CallSpan::from_record(record, contents()));
    }
}

/// Sends every queued span now; waits `timeout` at most. `true` when done in time.
pub fn flush(timeout: Duration) -> bool {
    #[cfg(feature = "otel")]
    if let Some(p) = running::current() {
        return p.exporter.flush(timeout);
    }
    let _ = timeout;
    true
}

/// Sends every queued span and stops the export (calls are no longer traced); waits
/// `timeout` at most. What a program calls before it exits.
pub fn shutdown(timeout: Duration) -> bool {
    ON.store(false, Ordering::Relaxed);
    #[cfg(feature = "otel")]
    {
        let old = running::PIPELINE.write().ok().and_then(|mut s| s.take());
        if let Some(p) = old {
            return p.exporter.shutdown(timeout);
        }
    }
    let _ = timeout;
    true
}

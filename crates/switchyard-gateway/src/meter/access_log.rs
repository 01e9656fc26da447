//! One log line per call (`switchyard::access`, level info): what an operator reads with
//! `RUST_LOG`, e.g. `200 chat→messages mock/echo 1.8ms in=12 out=34 $0.000123 key=alice`.
//! Formatted only when the target is enabled (`RUST_LOG=switchyard::access=off` turns it
//! off), and written by the log's own thread, not the call's.

use crate::meter::metrics::CallSummary;

/// Logs a finished call.
pub(crate) fn call(s: &CallSummary) {
    tracing::info!(
        target: "switchyard::access",
        "{} {}→{} {} {:.1}ms{} in={} out={} {}{}{}",
        s.status,
        s.client_dialect,
        s.upstream_dialect.map_or("-".to_string(), |d| d.to_string()),
        if s.backend.is_empty() {
            // Escaped: a client's newline must not forge a log line.
            s.requested
                .chars()
                .take(120)
                .flat_map(char::escape_debug)
                .collect::<String>()
        } else {
            format!("{}/{}", s.backend, s.model)
        },
        s.latency.as_secs_f64() * 1000.0,
        s.time_to_first_byte
            .map(|t| format!(" ttfb={:.1}ms", t.as_secs_f64() * 1000.0))
            .unwrap_or_default(),
        s.usage.map_or(0, |u| u.input),
        s.usage.map_or(0, |u| u.output),
        s.cost_usd
            .map_or("cost=unknown".to_string(), |c| format!("${c:.6}")),
        if s.key == "-" {
            String::new()
        } else {
            format!(" key={}", s.key)
        },
        s.error
            .as_deref()
            .map(|e| format!(" error={e}"))
            .unwrap_or_default(),
    );
}

//! Calls refused before any upstream call — no key, a key that may not use the model, a
//! model that does not exist, a body that is not a request, a budget or rate limit —
//! are counted in `/metrics` like every call and kept as a bounded, sampled trace rather
//! than full records: a flood of them (62,000 unauthenticated requests in three seconds
//! once wrote 53 MB of records) costs a counter, not the disk.
//!
//! At most [`TRACE_PER_SECOND`] refusals a second are traced, each as one log line
//! (`switchyard::refused`) and, with a store, one JSON line in `<data-dir>/refused.jsonl`
//! (turned over to `refused.jsonl.1` past [`TRACE_FILE_BYTES`]); each traced line says
//! how many were left out since the last one.

use crate::meter::metrics::CallSummary;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

/// Refusals traced per second, at most.
pub(crate) const TRACE_PER_SECOND: u32 = 10;

/// The trace file's size before it is turned over (one older file is kept).
pub(crate) const TRACE_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The file name of the trace in the data directory.
pub(crate) const TRACE_FILE: &str = "refused.jsonl";

/// The refusal counts and trace.
pub(crate) struct Refusals {
    file: Option<PathBuf>,
    state: Mutex<State>,
}

struct State {
    window: Instant,
    traced: u32,
    left_out: u64,
    /// Refusals by reason (the error kind), for `/metrics`.
    counts: BTreeMap<String, u64>,
}

impl Refusals {
    /// A trace written into `dir` when there is a store.
    pub(crate) fn new(dir: Option<&Path>) -> Self {
        Refusals {
            file: dir.map(|d| d.join(TRACE_FILE)),
            state: Mutex::new(State {
                window: Instant::now(),
                traced: 0,
                left_out: 0,
                counts: BTreeMap::new(),
            }),
        }
    }

    /// Counts a refused call, and traces it unless this second's share is spent.
    pub(crate) fn note(&self, call: &CallSummary) {
        let reason = call.error.clone().unwrap_or_else(|| "refused".into());
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // The reasons are the gateway's own categories: a handful, never the client's text.
        *state.counts.entry(reason.clone()).or_default() += 1;
        if state.window.elapsed().as_secs() >= 1 {
            state.window = Instant::now();
            state.traced = 0;
        }
        if state.traced >= TRACE_PER_SECOND {
            state.left_out += 1;
            return;
        }
        state.traced += 1;
        let left_out = std::mem::take(&mut state.left_out);
        drop(state);
        let model: String = call.requested.chars().take(120).collect();
        // A client's newline or escape sequence must not forge or colour a log line.
        let logged: String = model.chars().flat_map(char::escape_debug).collect();
        tracing::warn!(
            target: "switchyard::refused",
            "{} {} refused ({reason}): key {}, model `{logged}`{}",
            call.status,
            call.client_dialect,
            call.key,
            if left_out > 0 {
                format!(" ({left_out} more refusals since the last one traced)")
            } else {
                String::new()
            }
        );
        if let Some(path) = &self.file {
            let line = serde_json::json!({
                "time": switchyard::record::timestamp(SystemTime::now()),
                "status": call.status,
                "reason": reason,
                "key": call.key,
                "client_dialect": call.client_dialect,
                "model": model,
                "left_out_before": left_out,
            });
            append(path, &line.to_string());
        }
    }

    /// The counts, as Prometheus text.
    pub(crate) fn render(&self, out: &mut String) {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let name = "switchyard_gateway_refused_total";
        let _ = writeln!(
            out,
            "# HELP {name} Calls the gateway refused before any upstream call, by reason.\n# TYPE {name} counter"
        );
        for (reason, n) in &state.counts {
            let _ = writeln!(out, "{name}{{reason=\"{reason}\"}} {n}");
        }
    }
}

/// Appends one line, turning the file over when it is full. A trace that cannot be
/// written is logged and skipped: it never fails a call.
fn append(path: &Path, line: &str) {
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= TRACE_FILE_BYTES) {
        let mut old = path.as_os_str().to_owned();
        old.push(".1");
        let _ = std::fs::rename(path, old);
    }
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| {
            let line = switchyard::internal::redact::redact(line);
            f.write_all(format!("{line}\n").as_bytes())
        });
    if let Err(e) = written {
        tracing::warn!("cannot write the refusal trace {}: {e}", path.display());
    }
}

//! Metering: every finished call becomes a [`CallSummary`], counted into the Prometheus
//! text `/metrics` serves and handed to the [`CallRecorder`] hook, where the recording
//! issue's call log plugs in (the same record plus the client key's name).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchyard::{Dialect, Usage};

/// One call through the gateway, as metered.
#[derive(Debug, Clone)]
pub struct CallSummary {
    /// The client key's name (`-` when no keys are configured).
    pub key: String,
    /// The backend called (empty when the call failed before one was chosen).
    pub backend: String,
    /// The model id on the backend.
    pub model: String,
    /// The dialect the client spoke.
    pub client_dialect: Dialect,
    /// The dialect spoken upstream.
    pub upstream_dialect: Option<Dialect>,
    /// Whether the reply was streamed.
    pub stream: bool,
    /// Passed through untouched (same dialect) or translated.
    pub passthrough: bool,
    /// The HTTP status sent to the client.
    pub status: u16,
    /// The error kind, when the call failed (`RateLimited`, `gateway:unauthenticated`…).
    pub error: Option<String>,
    /// Token usage, when the reply reported it.
    pub usage: Option<Usage>,
    /// Cost in USD from the backend's prices, when known.
    pub cost_usd: Option<f64>,
    /// From the request's arrival to the end of the reply.
    pub latency: Duration,
    /// From the request's arrival to the first byte sent back.
    pub time_to_first_byte: Option<Duration>,
    /// Time spent in the gateway itself (before sending upstream and after the upstream
    /// answered, until the reply's head was sent).
    pub overhead: Duration,
    /// The model name the client sent.
    pub requested: String,
    /// Whether anything was sent upstream (false for the gateway's own refusals).
    pub upstream_called: bool,
    /// Whether calls of this model have succeeded: only such models get a label of
    /// their own in `/metrics` (the others count under `model="(unknown)"`).
    pub model_known: bool,
}

/// The hook the recorder plugs into: called once per finished call, off the reply path
/// (the stream has already been sent when it runs).
pub trait CallRecorder: Send + Sync {
    /// A call finished.
    fn record(&self, call: &CallSummary);
}

/// A counter's name, help text and how to read it from a series.
type Counter = (&'static str, &'static str, fn(&Series) -> String);

/// The most `/metrics` series (backend × model × key) by default.
pub const DEFAULT_MAX_SERIES: usize = 1000;

/// The most bytes of the `/metrics` text by default: a Prometheus scrape of this size takes
/// milliseconds, and it holds ~1,000 series with names of everyday length.
pub const DEFAULT_MAX_BYTES: usize = 4 * 1024 * 1024;

/// The least `limits.max_metrics_bytes` accepted: room for `RESERVED_BYTES` and some series.
pub const MIN_MAX_BYTES: usize = 2 * RESERVED_BYTES;

/// Bytes of the `/metrics` text kept for what is not a series of the call metrics (the
/// unlabelled metrics, the refusal counters, the store's gauges, the help lines): under
/// 10 KiB today, so the budget leaves room to grow.
const RESERVED_BYTES: usize = 64 * 1024;

/// The most characters of a label value: longer ones (a model name of a few KB) are cut
/// and end in `…`, so one series' lines stay a few KB however long its names.
pub const MAX_LABEL_CHARS: usize = 100;

/// Lines of one series over every family: 7 counters and 2 histograms of
/// `LATENCY_BUCKETS.len() + 3` lines.
const LINES_PER_SERIES: usize = 7 + 2 * (LATENCY_BUCKETS.len() + 3);

/// Bytes of one series' line besides its labels, at most: the longest metric name with
/// its `_bucket` suffix and `le` label (~70) and a value (≤ 24).
const LINE_BYTES_BESIDES_LABELS: usize = 100;

/// The model label of calls whose model never answered (a name the upstream refuses, a
/// refusal before any upstream call): one label, however many names clients send.
const UNKNOWN_MODEL: &str = "(unknown)";

/// The labels of calls past the series bound.
const OTHER: &str = "(other)";

const LATENCY_BUCKETS: &[f64] = &[
    0.000_05, 0.0001, 0.000_25, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, v: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; LATENCY_BUCKETS.len()];
        }
        for (i, b) in LATENCY_BUCKETS.iter().enumerate() {
            if v <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }

    /// Adds `other`'s observations (for series shown summed).
    fn merge(&mut self, other: &Histogram) {
        if self.counts.is_empty() {
            self.counts = vec![0; LATENCY_BUCKETS.len()];
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.sum += other.sum;
        self.count += other.count;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, b) in LATENCY_BUCKETS.iter().enumerate() {
            let c = self.counts.get(i).copied().unwrap_or(0);
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {c}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

#[derive(Debug, Default, Clone)]
struct Series {
    requests: u64,
    errors: u64,
    input_tokens: u64,
    cached_input_tokens: u64,
    output_tokens: u64,
    cost_usd: f64,
    /// Calls made upstream whose cost is unknown (a model without a price): their cost is
    /// not counted as 0 in `cost_usd`, it is counted here.
    unpriced: u64,
    latency: Histogram,
    ttfb: Histogram,
}

impl Series {
    /// Adds `other` (for series shown summed under `(other)`).
    fn merge(&mut self, other: &Series) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
        self.unpriced += other.unpriced;
        self.latency.merge(&other.latency);
        self.ttfb.merge(&other.ttfb);
    }
}

/// A series' labels: backend, model, key.
type Labels = (String, String, String);

#[derive(Default)]
struct Inner {
    /// (backend, model, key) → series.
    series: BTreeMap<Labels, Series>,
    overhead: Histogram,
    in_flight: i64,
}

/// The gateway's counters.
pub struct Metrics {
    inner: Mutex<Inner>,
    recorder: Mutex<Option<Arc<dyn CallRecorder>>>,
    max_series: usize,
    max_bytes: usize,
    refusals: crate::transport::refusals::Refusals,
    cache_hits: std::sync::atomic::AtomicU64,
    cache_misses: std::sync::atomic::AtomicU64,
    over_reservation: OverReservation,
    /// The kept conversations' counters.
    pub(crate) kept: crate::meter::kept_metrics::KeptCounts,
}

/// Calls that cost more than their budget reservation (`budget_stop.rs`), and calls whose
/// reported usage cannot be real.
#[derive(Default)]
struct OverReservation {
    /// Streams stopped at their reservation.
    stopped: std::sync::atomic::AtomicU64,
    /// Whole replies (and streams that ended whole) billed past it.
    billed: std::sync::atomic::AtomicU64,
    /// Calls whose usage has a count past `MOST_TOKENS_PER_CALL`.
    usage_suspect: std::sync::atomic::AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new(DEFAULT_MAX_SERIES)
    }
}

impl Metrics {
    /// Counters keeping at most `max_series` label sets.
    pub fn new(max_series: usize) -> Self {
        Metrics {
            inner: Mutex::default(),
            recorder: Mutex::default(),
            max_series: max_series.max(1),
            max_bytes: DEFAULT_MAX_BYTES,
            refusals: Default::default(),
            cache_hits: Default::default(),
            cache_misses: Default::default(),
            over_reservation: Default::default(),
            kept: Default::default(),
        }
    }

    /// The same counters, their text kept under `max_bytes` (`limits.max_metrics_bytes`;
    /// at least [`MIN_MAX_BYTES`]): series past it are shown summed under `(other)`.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes.max(MIN_MAX_BYTES);
        self
    }

    /// The series counted so far.
    pub fn series(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .series
            .len()
    }

    /// Sets the recorder hook.
    pub fn set_recorder(&self, recorder: Arc<dyn CallRecorder>) {
        *self.recorder.lock().unwrap_or_else(|p| p.into_inner()) = Some(recorder);
    }

    /// The listener's refusals, by reason.
    pub(crate) fn refusals(&self) -> &crate::transport::refusals::Refusals {
        &self.refusals
    }

    /// A call started (for the in-flight gauge).
    pub fn started(&self) {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .in_flight += 1;
    }

    /// A cache lookup: a hit, or a miss.
    pub(crate) fn cache_lookup(&self, hit: bool) {
        let counter = if hit {
            &self.cache_hits
        } else {
            &self.cache_misses
        };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// A call cost more than its budget reservation: a stream `stopped` there, or a
    /// whole reply billed past it.
    pub(crate) fn over_reservation(&self, stopped: bool) {
        let o = &self.over_reservation;
        let counter = if stopped { &o.stopped } else { &o.billed };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// A call's reported usage cannot be real (`Usage::suspect`).
    pub(crate) fn usage_suspect(&self) {
        self.over_reservation
            .usage_suspect
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// A call finished: counted, then handed to the recorder.
    pub fn finished(&self, call: &CallSummary) {
        {
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            inner.in_flight -= 1;
            inner.overhead.observe(call.overhead.as_secs_f64());
            let mut labels = (
                label_value(&call.backend),
                if call.model_known {
                    label_value(&call.model)
                } else {
                    UNKNOWN_MODEL.to_string()
                },
                label_value(&call.key),
            );
            if inner.series.len() >= self.max_series && !inner.series.contains_key(&labels) {
                labels = (OTHER.into(), OTHER.into(), OTHER.into());
            }
            let s = inner.series.entry(labels).or_default();
            s.requests += 1;
            if call.error.is_some() {
                s.errors += 1;
            }
            if let Some(u) = call.usage {
                // Saturating: one provider's absurd count must not wrap the totals.
                s.input_tokens = s.input_tokens.saturating_add(u.input);
                s.cached_input_tokens = s.cached_input_tokens.saturating_add(u.cached_input);
                s.output_tokens = s.output_tokens.saturating_add(u.output);
            }
            match call.cost_usd {
                Some(c) => s.cost_usd += c,
                None if call.upstream_called => s.unpriced += 1,
                None => {}
            }
            s.latency.observe(call.latency.as_secs_f64());
            if let Some(t) = call.time_to_first_byte {
                s.ttfb.observe(t.as_secs_f64());
            }
        }
        let recorder = self
            .recorder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(r) = recorder {
            r.record(call);
        }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (shown, folded) = fit(&inner.series, self.max_bytes - RESERVED_BYTES);
        let mut out = String::with_capacity(4096);
        let counters: [Counter; 7] = [
            (
                "switchyard_gateway_requests_total",
                "Calls through the gateway.",
                |s| s.requests.to_string(),
            ),
            (
                "switchyard_gateway_errors_total",
                "Calls that ended in an error.",
                |s| s.errors.to_string(),
            ),
            (
                "switchyard_gateway_input_tokens_total",
                "Prompt tokens (cached included).",
                |s| s.input_tokens.to_string(),
            ),
            (
                "switchyard_gateway_cached_input_tokens_total",
                "Prompt tokens read from a cache.",
                |s| s.cached_input_tokens.to_string(),
            ),
            (
                "switchyard_gateway_output_tokens_total",
                "Generated tokens (reasoning included).",
                |s| s.output_tokens.to_string(),
            ),
            (
                "switchyard_gateway_cost_usd_total",
                "Cost in USD from the backends' prices, of the calls whose price is known.",
                |s| format!("{}", s.cost_usd),
            ),
            (
                "switchyard_gateway_unpriced_requests_total",
                "Calls made upstream whose cost is unknown (the model has no price).",
                |s| s.unpriced.to_string(),
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for ((backend, model, key), s) in &shown {
                let _ = writeln!(
                    out,
                    "{name}{{{}}} {}",
                    labels(backend, model, key),
                    value(s)
                );
            }
        }
        for (name, help, pick) in [
            (
                "switchyard_gateway_request_duration_seconds",
                "From a request's arrival to the end of its reply.",
                (|s: &Series| &s.latency) as fn(&Series) -> &Histogram,
            ),
            (
                "switchyard_gateway_time_to_first_byte_seconds",
                "From a request's arrival to the first byte of its reply.",
                |s: &Series| &s.ttfb,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
            for ((backend, model, key), s) in &shown {
                pick(s).render(&mut out, name, &labels(backend, model, key));
            }
        }
        let name = "switchyard_gateway_overhead_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time spent in the gateway itself, upstream time excluded.\n# TYPE {name} histogram"
        );
        inner.overhead.render(&mut out, name, "");
        let _ = writeln!(
            out,
            "# HELP switchyard_gateway_in_flight Calls in progress.\n# TYPE switchyard_gateway_in_flight gauge\nswitchyard_gateway_in_flight {}",
            inner.in_flight
        );
        for (name, help, counter) in [
            (
                "switchyard_gateway_cache_hits_total",
                "Calls answered from the cache.",
                &self.cache_hits,
            ),
            (
                "switchyard_gateway_cache_misses_total",
                "Cacheable calls the cache could not answer.",
                &self.cache_misses,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                counter.load(std::sync::atomic::Ordering::Relaxed)
            );
        }
        let name = "switchyard_gateway_metrics_series_folded";
        let _ = writeln!(
            out,
            "# HELP {name} Series of the call metrics shown summed under (other) in this text, to keep it under limits.max_metrics_bytes.\n# TYPE {name} gauge\n{name} {folded}"
        );
        let o = &self.over_reservation;
        let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        let name = "switchyard_gateway_over_reservation_total";
        let _ = writeln!(
            out,
            "# HELP {name} Calls that cost more than their key's budget reserved for them (a provider past max_tokens): streams stopped there, whole replies billed past it.\n# TYPE {name} counter\n{name}{{how=\"stopped\"}} {}\n{name}{{how=\"billed\"}} {}",
            load(&o.stopped),
            load(&o.billed)
        );
        let name = "switchyard_gateway_usage_suspect_total";
        let _ = writeln!(
            out,
            "# HELP {name} Calls whose reported usage has a count past 2^32 tokens (billed as reported, saturated, the record flagged).\n# TYPE {name} counter\n{name} {}",
            load(&o.usage_suspect)
        );
        self.kept.render(&mut out);
        self.refusals.render(&mut out);
        render_otel(&mut out);
        // Labels hold what clients sent (model names): a key among them is not shown.
        switchyard::internal::redact::redact_string(&mut out);
        out
    }
}

/// The series to show within `budget` bytes, the busiest first: those that do not fit are
/// summed into the `(other)` series, so every total stays whole. Returns the series to
/// render and how many were summed.
fn fit(series: &BTreeMap<Labels, Series>, budget: usize) -> (BTreeMap<Labels, Series>, usize) {
    let cost = |(backend, model, key): &Labels| {
        LINES_PER_SERIES * (LINE_BYTES_BESIDES_LABELS + labels(backend, model, key).len())
    };
    let other: Labels = (OTHER.into(), OTHER.into(), OTHER.into());
    let mut busiest: Vec<(&Labels, &Series)> = series.iter().collect();
    busiest.sort_by_key(|s| std::cmp::Reverse(s.1.requests));
    // The (other) series is always shown: what does not fit goes into it.
    let mut spent = cost(&other);
    let mut shown: BTreeMap<Labels, Series> = BTreeMap::new();
    let mut summed = Series::default();
    let mut folded = 0;
    for (labels, s) in busiest {
        if *labels == other {
            summed.merge(s);
            continue;
        }
        let c = cost(labels);
        if spent + c <= budget {
            spent += c;
            shown.insert(labels.clone(), s.clone());
        } else {
            summed.merge(s);
            folded += 1;
        }
    }
    if folded > 0 || series.contains_key(&other) {
        shown.insert(other, summed);
    }
    (shown, folded)
}

/// A label value of at most [`MAX_LABEL_CHARS`] characters (cut ones end in `…`).
fn label_value(s: &str) -> String {
    // No more bytes than the bound: no more characters either, and nothing to walk (this
    // runs on every call).
    if s.len() <= MAX_LABEL_CHARS {
        return s.to_string();
    }
    match s.char_indices().nth(MAX_LABEL_CHARS) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}…", &s[..cut]),
    }
}

/// The trace export's counts (`switchyard::trace`), zero while it is off.
fn render_otel(out: &mut String) {
    let stats = switchyard::trace::stats();
    let name = "switchyard_otel_spans_exported_total";
    let _ = writeln!(
        out,
        "# HELP {name} Spans the OpenTelemetry collector accepted.\n# TYPE {name} counter\n{name} {}",
        stats.exported
    );
    let name = "switchyard_otel_spans_dropped_total";
    let _ = writeln!(
        out,
        "# HELP {name} Spans not exported: the queue was full (a collector slower than the calls), or their export failed or timed out.\n# TYPE {name} counter\n{name}{{reason=\"queue_full\"}} {}\n{name}{{reason=\"export_failed\"}} {}",
        stats.dropped_queue_full, stats.dropped_export_failed
    );
}

fn labels(backend: &str, model: &str, key: &str) -> String {
    format!(
        "backend=\"{}\",model=\"{}\",key=\"{}\"",
        escape(backend),
        escape(model),
        escape(key)
    )
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

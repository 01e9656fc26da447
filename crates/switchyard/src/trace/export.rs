//! The export: finished spans into a bounded queue, and one thread of its own that sends
//! them in batches through the OTLP exporter (HTTP or gRPC) on a single-threaded tokio
//! runtime of its own. A call only ever tries to put its spans in the queue: a full queue
//! drops them (counted), and an unreachable or hanging collector holds up that thread
//! alone, never a call.

use super::config::{OtelConfig, Protocol};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::time::{Duration, Instant};

/// Spans per export request (the SDK's default batch).
const MAX_BATCH: usize = 512;
/// How long a span may wait for its batch to fill (the SDK waits 5 s; a CLI run is short).
const DELAY: Duration = Duration::from_secs(1);
/// How often the thread looks for a flush while spans are scarce.
const TICK: Duration = Duration::from_millis(50);

/// Spans handed to the collector.
pub(crate) static EXPORTED: AtomicU64 = AtomicU64::new(0);
/// Spans dropped because the queue was full.
pub(crate) static DROPPED_QUEUE_FULL: AtomicU64 = AtomicU64::new(0);
/// Spans dropped because their export failed or timed out.
pub(crate) static DROPPED_EXPORT_FAILED: AtomicU64 = AtomicU64::new(0);

enum Control {
    /// Send everything queued now, then answer.
    Flush(mpsc::Sender<()>),
    /// Send everything queued, shut the exporter down, answer and end.
    Shutdown(mpsc::Sender<()>),
}

/// The running export: the queue's sending end and the thread's control line.
pub(crate) struct Exporter {
    spans: SyncSender<SpanData>,
    control: mpsc::Sender<Control>,
}

impl Exporter {
    /// Starts the export thread; the exporter is built on it (a tonic channel and a
    /// reqwest client belong to the runtime they are made on).
    pub(crate) fn start(config: &OtelConfig) -> Result<Exporter, String> {
        let (spans, queue) = mpsc::sync_channel(config.max_queue);
        let (control, orders) = mpsc::channel();
        let (ready, built) = mpsc::channel();
        let config = config.clone();
        std::thread::Builder::new()
            .name("switchyard-otel".into())
            .spawn(move || run(config, queue, orders, ready))
            .map_err(|e| format!("could not start the OpenTelemetry export thread: {e}"))?;
        match built.recv() {
            Ok(Ok(())) => Ok(Exporter { spans, control }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the OpenTelemetry export thread ended while starting".into()),
        }
    }

    /// Queues spans without waiting; those that find the queue full are counted.
    pub(crate) fn offer(&self, spans: Vec<SpanData>) {
        for span in spans {
            match self.spans.try_send(span) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    DROPPED_QUEUE_FULL.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Sends what is queued; waits `timeout` at most.
    pub(crate) fn flush(&self, timeout: Duration) -> bool {
        self.order(Control::Flush, timeout)
    }

    /// Sends what is queued and stops; waits `timeout` at most.
    pub(crate) fn shutdown(&self, timeout: Duration) -> bool {
        self.order(Control::Shutdown, timeout)
    }

    fn order(&self, make: fn(mpsc::Sender<()>) -> Control, timeout: Duration) -> bool {
        let (done, wait) = mpsc::channel();
        if self.control.send(make(done)).is_err() {
            return false;
        }
        wait.recv_timeout(timeout).is_ok()
    }
}

fn build(config: &OtelConfig) -> Result<opentelemetry_otlp::SpanExporter, String> {
    let url = config.traces_url();
    let built = match config.protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(url.clone())
            .with_timeout(config.timeout)
            .with_headers(config.headers.iter().cloned().collect())
            .build(),
        Protocol::Grpc => {
            let mut headers = reqwest::header::HeaderMap::new();
            for (k, v) in &config.headers {
                let key =
                    reqwest::header::HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes());
                match (key, reqwest::header::HeaderValue::from_str(v)) {
                    (Ok(key), Ok(value)) => {
                        headers.insert(key, value);
                    }
                    // Named by its key only: the value may be a token.
                    _ => return Err(format!("otel: the header `{k}` cannot be sent over gRPC")),
                }
            }
            let metadata =
                opentelemetry_otlp::tonic_types::metadata::MetadataMap::from_headers(headers);
            opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(url.clone())
                .with_timeout(config.timeout)
                .with_metadata(metadata)
                .build()
        }
    };
    built.map_err(|e| format!("otel: cannot export to {url}: {e}"))
}

fn run(
    config: OtelConfig,
    queue: Receiver<SpanData>,
    orders: mpsc::Receiver<Control>,
    ready: mpsc::Sender<Result<(), String>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(format!("otel: no runtime for the export thread: {e}")));
            return;
        }
    };
    let mut exporter = match runtime.block_on(async { build(&config) }) {
        Ok(e) => e,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    exporter.set_resource(
        &opentelemetry_sdk::Resource::builder()
            .with_service_name(config.service_name.clone())
            .build(),
    );
    let _ = ready.send(Ok(()));
    let send = |exporter: &opentelemetry_otlp::SpanExporter, batch: Vec<SpanData>| {
        let n = batch.len() as u64;
        // The exporter has its own timeout; this one also bounds a connection that
        // never completes.
        // (The timer is made inside the runtime, which it needs.)
        let limit = config.timeout + Duration::from_millis(100);
        let result =
            runtime.block_on(async { tokio::time::timeout(limit, exporter.export(batch)).await });
        match result {
            Ok(Ok(())) => {
                EXPORTED.fetch_add(n, Ordering::Relaxed);
            }
            Ok(Err(e)) => failed(n, &e.to_string()),
            Err(_) => failed(n, "timed out"),
        }
    };
    let mut batch = Vec::new();
    let mut due: Option<Instant> = None;
    loop {
        match orders.try_recv() {
            Ok(Control::Flush(done)) => {
                drain(&queue, &mut batch, |b| send(&exporter, b));
                due = None;
                let _ = done.send(());
            }
            Ok(Control::Shutdown(done)) => {
                drain(&queue, &mut batch, |b| send(&exporter, b));
                let _ = exporter.shutdown();
                let _ = done.send(());
                return;
            }
            Err(TryRecvError::Empty) => {}
            // Every handle on the export is gone: what is queued goes, then the thread.
            Err(TryRecvError::Disconnected) => {
                drain(&queue, &mut batch, |b| send(&exporter, b));
                return;
            }
        }
        let wait = due.map_or(TICK, |d| {
            d.saturating_duration_since(Instant::now()).min(TICK)
        });
        match queue.recv_timeout(wait) {
            Ok(span) => {
                batch.push(span);
                due.get_or_insert_with(|| Instant::now() + DELAY);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                if !batch.is_empty() {
                    send(&exporter, std::mem::take(&mut batch));
                }
                return;
            }
        }
        if batch.len() >= MAX_BATCH.min(config.max_queue)
            || due.is_some_and(|d| Instant::now() >= d)
        {
            send(&exporter, std::mem::take(&mut batch));
            due = None;
        }
    }
}

/// Everything in the queue, sent in batches.
fn drain(
    queue: &Receiver<SpanData>,
    batch: &mut Vec<SpanData>,
    mut send: impl FnMut(Vec<SpanData>),
) {
    while let Ok(span) = queue.try_recv() {
        batch.push(span);
        if batch.len() >= MAX_BATCH {
            send(std::mem::take(batch));
        }
    }
    if !batch.is_empty() {
        send(std::mem::take(batch));
    }
}

/// A failed export: its spans counted, and a warning now and then (not one per batch
/// against a collector that is down).
fn failed(spans: u64, why: &str) {
    let before = DROPPED_EXPORT_FAILED.fetch_add(spans, Ordering::Relaxed);
    static WARNED: AtomicU64 = AtomicU64::new(0);
    let n = WARNED.fetch_add(1, Ordering::Relaxed);
    if n.is_power_of_two() || n == 0 {
        tracing::warn!(
            target: "switchyard::otel",
            "OpenTelemetry export failed ({why}): {spans} spans dropped, {} so far",
            before + spans
        );
    }
}

//! The gateway's store: every finished call becomes a [`CallRecord`] (the recording
//! issue's record, plus the client key's name and the client's dialect) in a run
//! directory — `llm_log/` and `calls.sqlite` — through the library's [`Recorder`].
//!
//! Nothing here runs on a reply's path. When a call ends (the last byte went out, or
//! the client left), its meter hands a [`Finished`] — the bytes it kept as they passed,
//! reference-counted, never copied — to this module's thread, which decodes the
//! canonical request and reply from those bytes, builds the record and queues it with
//! [`Recorder::submit`]. A finished call is therefore in process memory the moment the
//! client has its last byte, and on disk within the writer's batch time after that;
//! [`Store::close`] (on shutdown, after the drain) waits for every one of them.

use crate::metrics::CallSummary;
use bytes::{Bytes, BytesMut};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};
use switchyard::record::{self, AttemptRecord, CallRecord, ErrorRecord, RawBytes, Timings};
use switchyard::registry::Price;
use switchyard::{Dialect, Recorder, RecorderOptions, RunInfo};
use switchyard_wire::{codec, ByteStreamDecoder, Reply, Request};

/// Records queued in the recorder at most (its writer takes batches of up to 256).
const WINDOW: usize = 512;

/// What a call kept for its record while it ran.
#[derive(Debug, Default)]
pub struct Draft {
    /// The request body as sent upstream (the last attempt's).
    pub sent_body: Option<Bytes>,
    /// The reply's bytes as received, chunk by chunk (the error body for an upstream
    /// error).
    pub raw: Vec<Bytes>,
    /// The canonical reply when the call already has it (translated streams assemble
    /// it as they go); otherwise it is decoded from `raw` off the reply path.
    pub reply: Option<Reply>,
    /// Every attempt upstream.
    pub attempts: Vec<AttemptRecord>,
    /// The error, when the call failed with one the gateway knows in full.
    pub error: Option<ErrorRecord>,
}

impl Draft {
    /// Keeps a chunk of the reply as received.
    pub fn keep(&mut self, bytes: &Bytes) {
        if !bytes.is_empty() {
            self.raw.push(compact(bytes));
        }
    }
}

/// Bytes to keep until the record is written: a small slice is copied, because a `Bytes`
/// cut from the connection's read buffer keeps that whole buffer (several times its own
/// size) alive while the call waits for the writer; a large one is shared as it is.
pub fn compact(bytes: &Bytes) -> Bytes {
    if bytes.len() <= 16 * 1024 {
        Bytes::copy_from_slice(bytes)
    } else {
        bytes.clone()
    }
}

/// A call that ended, on its way to the store.
pub struct Finished {
    /// What the meter saw.
    pub summary: CallSummary,
    /// `<backend>/<model>`, or the model name the client sent when no backend was chosen.
    pub reference: String,
    /// The body the client sent (the canonical request is decoded from the body sent
    /// upstream, or this one when nothing was sent).
    pub client_body: Option<Bytes>,
    /// When the call arrived.
    pub started_at: SystemTime,
    /// The model's price.
    pub price: Option<Price>,
    /// What the call kept.
    pub draft: Draft,
}

/// The store a gateway records into.
pub struct Store {
    dir: PathBuf,
    recorder: Arc<Recorder>,
    tx: Mutex<Option<mpsc::Sender<Finished>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Finished calls handed over and not yet written (the backlog `/metrics` shows).
    pending: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("dir", &self.dir).finish()
    }
}

impl Store {
    /// Opens (creating) the store in `dir`, appending to the calls already there: a
    /// gateway restarts on the same data directory.
    pub fn open(dir: &Path) -> Result<Store, String> {
        std::fs::create_dir_all(dir).map_err(|e| {
            format!(
                "cannot create the gateway's data directory {}: {e}",
                dir.display()
            )
        })?;
        let options = RecorderOptions {
            resume: true,
            ..RecorderOptions::default()
        };
        let recorder = Recorder::create(dir, &RunInfo::new(), options)
            .map_err(|e| format!("cannot open the gateway's store: {e}"))?;
        let (tx, rx) = mpsc::channel::<Finished>();
        let thread_recorder = recorder.clone();
        let pending = Arc::new(AtomicUsize::new(0));
        let thread_pending = pending.clone();
        let thread = std::thread::Builder::new()
            .name("switchyard-gateway-store".into())
            .spawn(move || {
                switchyard::background::lower_this_thread();
                store_loop(&rx, &thread_recorder, &thread_pending)
            })
            .map_err(|e| format!("cannot start the gateway's store thread: {e}"))?;
        Ok(Store {
            dir: dir.to_path_buf(),
            recorder,
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            pending,
        })
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Finished calls handed to the store and not yet written: the backlog, which grows
    /// when calls end faster than the writer writes them.
    pub fn backlog(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    /// Hands a finished call to the store's thread (never blocks).
    pub fn submit(&self, call: Finished) {
        let guard = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        self.pending.fetch_add(1, Ordering::Relaxed);
        let sent = guard.as_ref().is_some_and(|tx| tx.send(call).is_ok());
        if !sent {
            self.pending.fetch_sub(1, Ordering::Relaxed);
            tracing::error!(
                "the gateway's store {} is closed; a call that ended after shutdown was not recorded",
                self.dir.display()
            );
        }
    }

    /// Records every call handed over so far, then closes the recorder; reports the
    /// first recording failure, if any.
    pub fn close(&self) -> Result<(), String> {
        drop(self.tx.lock().unwrap_or_else(|p| p.into_inner()).take());
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = t.join();
        }
        self.recorder.close().map_err(|e| e.to_string())
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// The store's thread: builds each finished call's record and queues it in the recorder,
/// keeping at most [`WINDOW`] queued there, and counts down `pending` as records are
/// written.
fn store_loop(rx: &mpsc::Receiver<Finished>, recorder: &Arc<Recorder>, pending: &AtomicUsize) {
    use futures::FutureExt as _;
    // At most WINDOW records are queued in the recorder at once: a backlog (a load above
    // what the writer can write) waits here as the calls' kept bytes, not as built
    // records several times their size.
    let mut queued = std::collections::VecDeque::with_capacity(WINDOW);
    loop {
        // With records in flight, wake now and then to count the written ones even when
        // no call ends (so the backlog gauge falls to zero).
        let next = if queued.is_empty() {
            rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected)
        } else {
            rx.recv_timeout(Duration::from_millis(20))
        };
        match next {
            Ok(call) => queued.push_back(recorder.submit(build_record(call))),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if queued.len() >= WINDOW {
            if let Some(oldest) = queued.pop_front() {
                futures::executor::block_on(oldest);
                pending.fetch_sub(1, Ordering::Relaxed);
            }
        }
        // Records are written in order: count off those already in place.
        while let Some(front) = queued.front_mut() {
            if front.now_or_never().is_none() {
                break;
            }
            queued.pop_front();
            pending.fetch_sub(1, Ordering::Relaxed);
        }
    }
    // What is still queued is written by the recorder's close.
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

fn concat(chunks: &[Bytes]) -> Bytes {
    match chunks {
        [] => Bytes::new(),
        [one] => one.clone(),
        many => {
            let mut out = BytesMut::with_capacity(many.iter().map(Bytes::len).sum());
            for c in many {
                out.extend_from_slice(c);
            }
            out.freeze()
        }
    }
}

/// The canonical reply in `raw` (a whole body or a stream, possibly cut short): what
/// the stream carried up to where it stopped.
fn decode_reply(dialect: Dialect, raw: &[u8], stream: bool) -> Option<Reply> {
    if raw.is_empty() {
        return None;
    }
    if !stream {
        return codec(dialect).decode_reply(raw).ok();
    }
    let mut decoder = ByteStreamDecoder::new(codec(dialect));
    let mut events = decoder.push(raw).ok()?;
    if let Ok(rest) = decoder.finish() {
        events.extend(rest);
    }
    let mut assembler = switchyard_wire::Assembler::new();
    for e in &events {
        if assembler.push(e).is_err() {
            break;
        }
    }
    Some(assembler.into_reply())
}

/// The record of a finished call; runs on the store's thread.
fn build_record(call: Finished) -> CallRecord {
    let Finished {
        summary: s,
        reference,
        client_body,
        started_at,
        price,
        draft,
    } = call;
    let upstream = s.upstream_dialect.unwrap_or(s.client_dialect);
    let body = draft.sent_body.clone().or(client_body);
    let request: Request = body
        .as_ref()
        .and_then(|b| codec(upstream).decode_request(b).ok())
        .map(|d| d.request)
        .unwrap_or_default();
    let raw = concat(&draft.raw);
    let succeeded = s.error.is_none() && s.status < 400;
    let mut reply = draft
        .reply
        .map(|r| r.without_raw())
        .or_else(|| decode_reply(upstream, &raw, s.stream).map(|r| r.without_raw()));
    if !succeeded && reply.as_ref().is_some_and(|r| r.content.is_empty()) {
        reply = None;
    }
    let usage = s.usage.or_else(|| reply.as_ref().and_then(|r| r.usage));
    let error = draft.error.or_else(|| {
        s.error.as_ref().map(|kind| ErrorRecord {
            kind: kind.clone(),
            message: match kind.as_str() {
                "client_disconnected" => "the client went away before the reply ended; the upstream request was cancelled".to_string(),
                _ => format!("the call ended with status {}", s.status),
            },
            provider: None,
            fields: serde_json::Map::new(),
        })
    });
    let ended_at = started_at + s.latency;
    CallRecord {
        format: record::FORMAT,
        number: 0,
        role: None,
        reference,
        backend: s.backend,
        model: s.model,
        dialect: s.upstream_dialect,
        stream: s.stream,
        // Filled by the recorder's writer.
        prompt_digest: String::new(),
        parameters: serde_json::Map::new(),
        request,
        body: draft.sent_body.and_then(|b| {
            String::from_utf8(b.to_vec())
                .ok()
                .and_then(|t| serde_json::value::RawValue::from_string(t).ok())
        }),
        usage_reported: if reply.is_some() && !raw.is_empty() {
            record::reported_usage(&raw, s.stream)
        } else {
            None
        },
        reply,
        raw: (!raw.is_empty()).then(|| RawBytes::new(&raw)),
        usage,
        attempts: draft.attempts,
        timings: Timings {
            started_at: record::timestamp(started_at),
            ended_at: record::timestamp(ended_at),
            first_byte_ms: s.time_to_first_byte.map(ms),
            duration_ms: ms(s.latency),
        },
        cost_usd: switchyard::cost::call_cost(price.as_ref(), usage.as_ref()),
        provider_cost_usd: None,
        error,
        client_key: (s.key != "-").then_some(s.key),
        client_dialect: Some(s.client_dialect),
    }
}

/// The attempts of a library call, as records keep them.
pub fn attempt_records(attempts: &[switchyard::Attempt]) -> Vec<AttemptRecord> {
    attempts
        .iter()
        .map(|a| AttemptRecord {
            number: a.number,
            wait_before_ms: ms(a.wait_before),
            started_at: record::timestamp(a.started_at),
            duration_ms: ms(a.duration),
            status: a.status,
            error_kind: a.error_kind.map(|k| k.as_str().to_string()),
            error: a.error.clone(),
        })
        .collect()
}

//! The gateway's store: every finished call becomes a [`CallRecord`] (the recording
//! issue's record, plus the client key's name and the client's dialect) in a run
//! directory — `llm_log/` and `calls.sqlite` — through the library's [`Recorder`].
//!
//! Nothing here runs on a reply's path. When a call ends (the last byte went out, or
//! the client left), its meter puts a [`Finished`] — the bytes it kept as they passed
//! (see [`compact`]) — in the store's intake. The store's thread takes
//! the intake in batches: it decodes each call's canonical request and reply from those
//! bytes, builds the records and hands the batch to the [`Recorder`] at once. A finished
//! call is therefore in process memory the moment the client has its last byte, and on
//! disk a few milliseconds later; [`Store::close`] (on shutdown, after the drain) waits
//! for every one of them.
//!
//! Why batches: at one connection every call would otherwise wake the store's thread,
//! the recorder's writer and the index's thread on its own — context switches on the
//! cores that serve the calls, which showed as added latency. The store's thread waits
//! [`LINGER`] after the first call of a batch, so a busy gateway wakes it, the writer
//! and the index about once per batch instead. While the store keeps up, the three
//! threads also yield the core to calls between two records ([`Courtesy`], switched by
//! [`Pace`]).

use crate::metrics::CallSummary;
use bytes::{Bytes, BytesMut};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};
use switchyard::background::Courtesy;
use switchyard::record::{self, AttemptRecord, CallRecord, ErrorRecord, RawBytes, Timings};
use switchyard::registry::Price;
use switchyard::{Dialect, Recorder, RecorderOptions, RunInfo};
use switchyard_wire::{codec, ByteStreamDecoder, Reply, Request};

/// How long the store's thread lets finished calls gather after the first of a batch.
const LINGER: Duration = Duration::from_millis(4);

/// A backlog from which the recording threads stop yielding to calls and catch up.
const BEHIND: usize = WINDOW;

/// A backlog under which they yield again.
const CAUGHT_UP: usize = FULL / 4;

/// Records handed to the recorder and not yet written, at most.
const WINDOW: usize = 2 * FULL;

/// Calls in the intake that wake the store's thread at once, lingering or not (a burst
/// is recorded without waiting, and the intake stays small).
const FULL: usize = 512;

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
    intake: Arc<Intake>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Finished calls handed over and not yet written (the backlog `/metrics` shows).
    pending: Arc<AtomicUsize>,
}

/// Finished calls waiting for the store's thread.
#[derive(Default)]
struct Intake {
    queue: Mutex<Queue>,
    wake: Condvar,
}

#[derive(Default)]
struct Queue {
    calls: Vec<Finished>,
    closed: bool,
}

impl Intake {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
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
        let courtesy = Courtesy::on();
        let options = RecorderOptions {
            resume: true,
            courtesy: courtesy.clone(),
            ..RecorderOptions::default()
        };
        let recorder = Recorder::create(dir, &RunInfo::new(), options)
            .map_err(|e| format!("cannot open the gateway's store: {e}"))?;
        let intake = Arc::new(Intake::default());
        let pending = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (recorder, intake, pending) = (recorder.clone(), intake.clone(), pending.clone());
            let pace = Pace { pending, courtesy };
            std::thread::Builder::new()
                .name("switchyard-gateway-store".into())
                .spawn(move || store_loop(&intake, &recorder, &pace))
                .map_err(|e| format!("cannot start the gateway's store thread: {e}"))?
        };
        Ok(Store {
            dir: dir.to_path_buf(),
            recorder,
            intake,
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

    /// Hands a finished call to the store (never blocks on the store's work). Wakes the
    /// store's thread only for the first call of a batch or a full intake.
    pub fn submit(&self, call: Finished) {
        let mut queue = self.intake.lock();
        if queue.closed {
            drop(queue);
            tracing::error!(
                "the gateway's store {} is closed; a call that ended after shutdown was not recorded",
                self.dir.display()
            );
            return;
        }
        self.pending.fetch_add(1, Ordering::Relaxed);
        queue.calls.push(call);
        let wake = queue.calls.len() == 1 || queue.calls.len() >= FULL;
        drop(queue);
        if wake {
            self.intake.wake.notify_one();
        }
    }

    /// Records every call handed over so far, then closes the recorder; reports the
    /// first recording failure, if any.
    pub fn close(&self) -> Result<(), String> {
        self.intake.lock().closed = true;
        self.intake.wake.notify_one();
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

/// Batches handed to the recorder and not yet written, with how many calls each holds.
type Batch = (futures::future::BoxFuture<'static, Option<u64>>, usize);
type InFlight = std::collections::VecDeque<Batch>;

/// The store's thread: takes the intake in batches, builds their records and hands each
/// batch to the recorder, building the next while the recorder writes (at most
/// [`WINDOW`] records in flight), counting down `pending` as batches are written.
fn store_loop(intake: &Intake, recorder: &Arc<Recorder>, pace: &Pace) {
    let mut in_flight = InFlight::new();
    loop {
        let mut queue = intake.lock();
        if queue.calls.is_empty() && !in_flight.is_empty() {
            // Nothing to build: wait for the writer, so the backlog reads zero when idle.
            drop(queue);
            while let Some(batch) = in_flight.pop_front() {
                pace.settle(batch);
            }
            continue;
        }
        if queue.calls.is_empty() {
            while queue.calls.is_empty() && !queue.closed {
                queue = intake.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
            if queue.calls.is_empty() {
                return; // closed, and everything handed over is written
            }
            // The first call of a batch: let the batch gather; a full intake or a close
            // cuts the wait short.
            queue = intake
                .wake
                .wait_timeout_while(queue, LINGER, |q| !q.closed && q.calls.len() < FULL)
                .map(|(q, _)| q)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        // At most FULL records are built at once: a backlog waits as the calls' kept
        // bytes, not as records several times their size.
        let take = queue.calls.len().min(FULL);
        let rest = queue.calls.split_off(take);
        let calls = std::mem::replace(&mut queue.calls, rest);
        drop(queue);
        let records = calls
            .into_iter()
            .map(|call| {
                // Calls are served first: a call's thread waiting for this core gets it
                // between two records, not at the end of the batch.
                pace.courtesy.give_way();
                build_record(call)
            })
            .collect();
        in_flight.push_back((recorder.submit_many(records), take));
        while in_flight.iter().map(|(_, n)| n).sum::<usize>() > WINDOW {
            if let Some(oldest) = in_flight.pop_front() {
                pace.settle(oldest);
            }
        }
        // Batches are written in order: count off those already in place.
        while let Some((front, _)) = in_flight.front_mut() {
            if futures::FutureExt::now_or_never(front).is_none() {
                break;
            }
            if let Some((_, n)) = in_flight.pop_front() {
                pace.written(n);
            }
        }
        pace.adjust();
    }
}

/// The store's backlog, and how courteous the recording threads are with it.
struct Pace {
    /// Finished calls handed over and not yet written.
    pending: Arc<AtomicUsize>,
    /// Whether the recording threads yield to calls between two records: on while the
    /// store keeps up, off while it catches up (yielding would hand away the slices it
    /// needs to, on a machine saturated with calls).
    courtesy: Courtesy,
}

impl Pace {
    /// Waits until a batch is written and counts it off the backlog.
    fn settle(&self, (batch, calls): Batch) {
        futures::executor::block_on(batch);
        self.written(calls);
    }

    fn written(&self, calls: usize) {
        self.pending.fetch_sub(calls, Ordering::Relaxed);
    }

    /// Turns courtesy off when the backlog passes [`BEHIND`] and on again once it is
    /// back under [`CAUGHT_UP`].
    fn adjust(&self) {
        let backlog = self.pending.load(Ordering::Relaxed);
        if backlog >= BEHIND && self.courtesy.is_on() {
            self.courtesy.set(false);
        } else if backlog <= CAUGHT_UP && !self.courtesy.is_on() {
            self.courtesy.set(true);
        }
    }
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
                "cancelled" => "the gateway stopped before the reply ended (drain deadline passed)".to_string(),
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
            record::reported_usage(&raw, s.stream, s.upstream_dialect)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(i: usize) -> Finished {
        let body =
            format!(r#"{{"model":"echo","messages":[{{"role":"user","content":"call {i}"}}]}}"#);
        let reply = format!(
            r#"{{"id":"c{i}","object":"chat.completion","created":1,"model":"echo","choices":[{{"index":0,"message":{{"role":"assistant","content":"ok {i}"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}}}"#
        );
        Finished {
            summary: CallSummary {
                key: "team".into(),
                backend: "mock".into(),
                model: "echo".into(),
                client_dialect: Dialect::Chat,
                upstream_dialect: Some(Dialect::Chat),
                stream: false,
                passthrough: true,
                status: 200,
                error: None,
                usage: None,
                cost_usd: None,
                latency: Duration::from_millis(1),
                time_to_first_byte: None,
                overhead: Duration::ZERO,
            },
            reference: "mock/echo".into(),
            client_body: None,
            started_at: SystemTime::now(),
            price: None,
            draft: Draft {
                sent_body: Some(Bytes::from(body)),
                raw: vec![Bytes::from(reply)],
                ..Draft::default()
            },
        }
    }

    #[test]
    fn a_burst_from_many_threads_is_written_whole_without_waiting_for_close() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(tmp.path()).unwrap());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let store = store.clone();
                std::thread::spawn(move || {
                    (0..500).for_each(|i| store.submit(finished(t * 500 + i)))
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        // Written in batches as they come (a linger of a few ms each), not at close.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while store.backlog() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "backlog stuck at {}",
                store.backlog()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let numbers = record::record_numbers(tmp.path()).unwrap();
        assert_eq!(numbers, (1..=2000).collect::<Vec<u64>>());
        store.close().unwrap();
        let records = record::read_records(tmp.path()).unwrap();
        let mut contents: Vec<String> = records
            .iter()
            .map(|r| {
                r.request.messages[0].content[0]
                    .as_text()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        contents.sort();
        contents.dedup();
        assert_eq!(contents.len(), 2000, "every call once");
        assert!(records
            .iter()
            .all(|r| r.client_key.as_deref() == Some("team")));
        assert!(records
            .iter()
            .all(|r| r.usage.is_some_and(|u| u.output == 2)));
    }

    #[test]
    fn recording_stops_yielding_to_calls_when_behind_and_resumes_once_caught_up() {
        let pace = Pace {
            pending: Arc::new(AtomicUsize::new(0)),
            courtesy: Courtesy::on(),
        };
        let at = |n: usize| {
            pace.pending.store(n, Ordering::Relaxed);
            pace.adjust();
            pace.courtesy.is_on()
        };
        assert!(at(10));
        assert!(at(BEHIND - 1));
        assert!(!at(BEHIND), "behind: catch up at full share");
        assert!(!at(CAUGHT_UP + 1), "still catching up");
        assert!(at(CAUGHT_UP), "caught up: yield again");
    }
}

//! The gateway's store: every finished call becomes a [`CallRecord`](switchyard::record::CallRecord) (the recording
//! issue's record, plus the client key's name and the client's dialect) in a run
//! directory — `llm_log/` and `calls.sqlite` — through the library's [`Recorder`].
//!
//! When a call ends (its last byte is going out, or the client left), its meter hands the
//! store a [`Finished`] — the bytes it kept as they passed (see [`compact`]) and what the
//! meter knows. The record is built from them ([`build`]; record format 3, whose readers
//! derive the canonical request and reply, so nothing is decoded here) and serialised on
//! the call's lane once its reply has gone out, or by the store's thread for a call that
//! ended alone on its lane (`intake.rs` says why). The store's thread takes the records in
//! batches and hands each batch to the [`Recorder`], whose writer numbers and writes
//! them. [`Store::close`] (on shutdown, after the drain) waits for every one of them.
//!
//! **Durability** ([`StoreDurability`]). In the `fast` mode nothing here runs on a
//! reply's path: a finished call is in process memory the moment the client has its last
//! byte, on disk a few milliseconds later, and a `kill -9` loses what was in between. The
//! backlog of that window is bounded ([`StoreOptions::max_backlog`]): past it, calls wait
//! for their records as in the `answered` mode, where the last byte of a reply goes out
//! only once its record is written ([`Store::submit_and_wait`]); `synced` also `fsync`s
//! the segment first. Waiting calls are written together (group commit: every call that
//! ended while a batch was being written goes in the next), so a busy gateway pays one
//! write per batch, not per call.
//!
//! Why batches in the fast mode: at one connection every call would otherwise wake the
//! store's thread, the recorder's writer and the index's thread on its own — context
//! switches on the cores that serve the calls, which showed as added latency. The store's
//! thread waits [`LINGER`] after the first call of a batch, so a busy gateway wakes it,
//! the writer and the index about once per batch instead. While the store keeps up, the
//! writer and the index also yield the core to calls between two records ([`Courtesy`],
//! switched by [`Pace`]).
//!
//! **Failures** (a full disk, a folder gone) are never silent: each record that could not
//! be written is counted ([`StoreHealth`]: `/metrics`, `/healthz`), the recorder logs the
//! error, a waiting call learns it, and `switchyard serve` exits non-zero.

pub(crate) mod build;
pub mod cache;
mod intake;
#[cfg(feature = "postgres")]
pub mod pg;
// Built without the `postgres` feature: the same surface, a store that cannot exist.
#[cfg(not(feature = "postgres"))]
#[path = "pg/absent.rs"]
pub mod pg;

pub(crate) use build::{attempt_records, decode_reply};
use intake::{Handover, Intake, Record, FULL};

use crate::meter::metrics::CallSummary;
use bytes::Bytes;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};
use switchyard::internal::background::Courtesy;
use switchyard::internal::redact::Redacted;
use switchyard::record::{AttemptRecord, Durability, ErrorRecord};
use switchyard::registry::Price;
use switchyard::{Recorder, RecorderOptions, RunInfo};
use switchyard_wire::Reply;
use tokio::sync::oneshot;

/// How long the store's thread lets finished calls gather after the first of a batch
/// (the fast mode; a call waiting for its record is never kept waiting for others).
const LINGER: Duration = Duration::from_millis(4);

/// A backlog from which the recording threads stop yielding to calls and catch up.
const BEHIND: usize = WINDOW;

/// Records handed to the recorder and not yet written, at most.
const WINDOW: usize = 2 * FULL;

/// The default bound on the fast mode's backlog: past it, calls wait for their records.
pub(crate) const DEFAULT_MAX_BACKLOG: usize = 1024;

/// How many bytes of a reply a record keeps unless `limits.max_recorded_reply_bytes` says
/// otherwise: 64 MiB, past the stream of the longest output a provider allows (128k tokens
/// at 100 to 300 bytes an event, about 40 MB), so that a real chat reply is recorded
/// whole; an embeddings batch near the largest OpenAI allows (about 90 MB as JSON) is
/// not. Writing a record takes a few times its size, and reading it back (`log stats`)
/// about twice: this is what bounds both.
pub(crate) const DEFAULT_MAX_RECORDED_REPLY_BYTES: usize = 64 << 20;

/// When a reply's last byte may go out, with respect to its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreDurability {
    /// At once; the record follows a few milliseconds later (at most `max_backlog`
    /// calls behind).
    #[default]
    Fast,
    /// Once its record is written to the segment: a `kill -9` of the gateway loses no
    /// answered call (the operating system holds the data).
    Answered,
    /// Once its record is written and `fsync`ed: a power cut loses no answered call.
    Synced,
}

impl StoreDurability {
    /// The names the config accepts.
    pub const NAMES: &'static str = "fast, answered, synced";

    /// Reads a config name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "fast" => StoreDurability::Fast,
            "answered" => StoreDurability::Answered,
            "synced" => StoreDurability::Synced,
            _ => return None,
        })
    }

    /// The config name.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreDurability::Fast => "fast",
            StoreDurability::Answered => "answered",
            StoreDurability::Synced => "synced",
        }
    }
}

/// How the store records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// When a reply's last byte may go out.
    pub durability: StoreDurability,
    /// In the fast mode, the most finished calls not yet written; a call ending past it
    /// waits for its record (so a `kill -9` loses at most this many answered calls).
    pub max_backlog: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            durability: StoreDurability::Fast,
            max_backlog: DEFAULT_MAX_BACKLOG,
        }
    }
}

/// Where a replica's written batches are announced, and its acks held until shipped.
#[derive(Clone)]
pub(crate) struct Shipping {
    /// Notified after each batch is written.
    pub written: Arc<tokio::sync::Notify>,
    /// Holds the acks of waiting calls until the shipper commits their records.
    pub gate: Arc<crate::store::pg::Gate>,
}

/// What a call kept for its record while it ran.
#[derive(Debug, Default)]
pub(crate) struct Draft {
    /// The request body as sent upstream (the last attempt's).
    pub sent_body: Option<Bytes>,
    /// The reply's bytes as received, chunk by chunk (the error body for an upstream
    /// error), at most [`Draft::keeping_at_most`] of them.
    pub raw: Vec<Bytes>,
    /// How many of the reply's bytes `raw` may hold, how many it holds and how many came.
    pub kept: Kept,
    /// The keys every chunk of `raw` was redacted under where it entered, when all came
    /// from one upstream answer ([`Draft::keep_redacted`]): the record is written without
    /// searching them again while those keys are still the process's.
    pub raw_redacted: RawRedacted,
    /// The canonical reply when the call already has it (translated streams assemble
    /// it as they go); otherwise it is decoded from `raw` off the reply path.
    pub reply: Option<Reply>,
    /// Every attempt upstream.
    pub attempts: Vec<AttemptRecord>,
    /// The error, when the call failed with one the gateway knows in full.
    pub error: Option<ErrorRecord>,
    /// How the usage was estimated, when the provider never reported it.
    pub usage_estimated: Option<String>,
    /// An embeddings call's shape and canonical request (`embeddings.rs`).
    pub embedding: Option<switchyard::record::EmbedRecord>,
    /// The route the client's model named, when it named one.
    pub route: Option<String>,
    /// The stream broke after its first byte reached the client.
    pub cut: bool,
    /// The cache key to enter the call under (`cache: read-write`, a call passed through).
    pub cache_key: Option<String>,
    /// A call answered from the cache: the recorded call that answered it.
    pub cache_hit: Option<u64>,
    /// A hit from the shared store: the answering call's id there.
    pub cache_hit_call: Option<String>,
    /// The call cost more than its budget reservation (`budget_stop.rs`).
    pub over_reservation: Option<switchyard::record::OverReservation>,
}

/// What a draft knows of how its raw bytes were redacted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum RawRedacted {
    /// Nothing kept yet.
    #[default]
    Nothing,
    /// Every chunk kept was redacted under these keys.
    Under(Redacted),
    /// Some chunk came from elsewhere (a cached record, an error's body, the library's
    /// reply): the writer searches the bytes.
    Unknown,
}

impl RawRedacted {
    /// What is known once a chunk `redacted` so (`None`: not known) is kept too.
    fn and(self, redacted: Option<Redacted>) -> RawRedacted {
        match (self, redacted) {
            (RawRedacted::Nothing, Some(r)) => RawRedacted::Under(r),
            (RawRedacted::Under(a), Some(b)) if a == b => self,
            _ => RawRedacted::Unknown,
        }
    }

    /// The keys to tell the writer the bytes were redacted under.
    pub(crate) fn under(self) -> Option<Redacted> {
        match self {
            RawRedacted::Under(r) => Some(r),
            RawRedacted::Nothing | RawRedacted::Unknown => None,
        }
    }
}

/// What a draft kept of a reply's bytes, against its bound.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kept {
    /// The most bytes kept (`limits.max_recorded_reply_bytes`).
    pub limit: usize,
    /// Bytes in `raw`.
    pub bytes: usize,
    /// Bytes that came (`None`: more than `raw` holds, by an unknown number).
    pub received: Option<u64>,
}

impl Default for Kept {
    fn default() -> Self {
        Kept {
            limit: DEFAULT_MAX_RECORDED_REPLY_BYTES,
            bytes: 0,
            received: Some(0),
        }
    }
}

impl Kept {
    /// The record's note when `raw` holds less than came.
    pub(crate) fn truncated(&self) -> Option<switchyard::record::RawTruncated> {
        let cut = self.received.is_none_or(|n| n > self.bytes as u64);
        cut.then(|| switchyard::record::RawTruncated {
            kept: self.bytes as u64,
            received: self.received,
            setting: "limits.max_recorded_reply_bytes".to_string(),
        })
    }
}

impl Draft {
    /// A draft whose record keeps at most `limit` bytes of the reply.
    pub(crate) fn keeping_at_most(limit: usize) -> Draft {
        Draft {
            kept: Kept {
                limit,
                ..Kept::default()
            },
            ..Draft::default()
        }
    }

    /// Keeps a chunk of the reply as received, as far as the bound allows (the rest is
    /// counted, not kept).
    pub(crate) fn keep(&mut self, bytes: &Bytes) {
        self.keep_chunk(bytes, None);
    }

    /// [`Draft::keep`] of a chunk of an upstream's answer, which was redacted under the
    /// keys `redacted` as it entered ([`RawResponse::redacted`]).
    ///
    /// [`RawResponse::redacted`]: switchyard::backend::http::RawResponse::redacted
    pub(crate) fn keep_redacted(&mut self, bytes: &Bytes, redacted: Redacted) {
        self.keep_chunk(bytes, Some(redacted));
    }

    fn keep_chunk(&mut self, bytes: &Bytes, redacted: Option<Redacted>) {
        // A prefix of a redacted chunk (cut at the bound) holds no key either: the
        // redactor held back a key's beginning until its end came.
        self.raw_redacted = self.raw_redacted.and(redacted);
        if let Some(n) = &mut self.kept.received {
            *n += bytes.len() as u64;
        }
        let room = self.kept.limit - self.kept.bytes;
        let part = match bytes.len() > room {
            // Copied: a slice would keep the whole chunk alive.
            true => Bytes::copy_from_slice(&bytes[..room]),
            false => compact(bytes),
        };
        if !part.is_empty() {
            self.kept.bytes += part.len();
            self.raw.push(part);
        }
    }

    /// The reply's bytes, all of them in one piece (replacing what was kept).
    pub(crate) fn keep_all(&mut self, bytes: Bytes) {
        self.raw.clear();
        self.raw_redacted = RawRedacted::Nothing;
        self.kept = Kept {
            limit: self.kept.limit,
            ..Kept::default()
        };
        self.keep(&bytes);
    }

    /// The first bytes of an answer that passed a size bound (`Error::ReplyTooLarge`):
    /// more came than they are.
    pub(crate) fn keep_head(&mut self, head: &Bytes) {
        self.keep_all(head.clone());
        self.kept.received = None;
    }
}

/// Bytes to keep until the record is written: a small slice is copied, because a `Bytes`
/// cut from the connection's read buffer keeps that whole buffer (several times its own
/// size) alive while the call waits for the writer; a large one is shared as it is.
pub(crate) fn compact(bytes: &Bytes) -> Bytes {
    if bytes.len() <= 16 * 1024 {
        Bytes::copy_from_slice(bytes)
    } else {
        bytes.clone()
    }
}

/// A call that ended, on its way to the store.
pub(crate) struct Finished {
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

/// Whether the store writes what it is given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreHealth {
    /// Records that could not be written since the gateway started.
    pub lost: u64,
    /// Whether the last write failed (the store is failing now).
    pub failing: bool,
    /// The first error, as the recorder reported it.
    pub error: Option<String>,
    /// Lines of the call log set aside as unreadable when the store opened (each named in
    /// a warning and listed in `quarantine/set-aside.jsonl`; every other record is served).
    pub quarantined: u64,
}

/// The store a gateway records into.
pub(crate) struct Store {
    options: StoreOptions,
    /// Where the calls' threads put their records (and count the backlog `/metrics` shows).
    handover: Arc<Handover>,
    thread: Mutex<Option<JoinHandle<()>>>,
    cache: Arc<switchyard::cache::Cache>,
}

/// What became of the records handed to the recorder.
#[derive(Default)]
struct Outcome {
    lost: AtomicU64,
    failing: std::sync::atomic::AtomicBool,
    /// Batches handed to the recorder and answered (each one write, and one wake-up of
    /// the recording threads).
    batches: AtomicU64,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.handover.dir)
            .finish()
    }
}

impl Store {
    /// Opens (creating) the store in `dir`, appending to the calls already there, with
    /// no cache and no shared store (the tests' store).
    #[cfg(test)]
    pub(crate) fn open(dir: &Path, options: StoreOptions) -> Result<Store, String> {
        Store::open_shipping(
            dir,
            options,
            crate::store::cache::CacheConfig::default(),
            None,
        )
    }

    /// Opens (creating) the store in `dir`, appending to the calls already there (a
    /// gateway restarts on the same data directory), with the response cache `cache` over
    /// its records (empty until [`Store::load_cache`]); for a replica that ships its
    /// records to a shared store (`shipping`): each written batch is announced on `shipping`'s notify, and in the
    /// `answered` and `synced` modes its calls' acks wait at the gate for the shipper's
    /// commit.
    pub(crate) fn open_shipping(
        dir: &Path,
        options: StoreOptions,
        cache: crate::store::cache::CacheConfig,
        shipping: Option<Shipping>,
    ) -> Result<Store, String> {
        std::fs::create_dir_all(dir).map_err(|e| {
            format!(
                "cannot create the gateway's data directory {}: {e}",
                dir.display()
            )
        })?;
        // Yielding to calls helps only where calls do not wait for their records.
        let courtesy = if options.durability == StoreDurability::Fast {
            Courtesy::on()
        } else {
            Courtesy::default()
        };
        let cache = switchyard::cache::Cache::new(cache, dir, switchyard::cache::CacheScope::Store);
        let recorder_options = RecorderOptions {
            cache: cache.config().reads().then(|| cache.index().clone()),
            resume: true,
            courtesy: courtesy.clone(),
            durability: match options.durability {
                StoreDurability::Synced => Durability::Disk,
                StoreDurability::Fast | StoreDurability::Answered => Durability::Process,
            },
        };
        let recorder = Recorder::create(dir, &RunInfo::new(), recorder_options)
            .map_err(|e| format!("cannot open the gateway's store: {e}"))?;
        let intake = Arc::new(Intake::default());
        let pending = Arc::new(AtomicUsize::new(0));
        let outcome = Arc::new(Outcome::default());
        let thread = {
            let (recorder, intake) = (recorder.clone(), intake.clone());
            let pace = Pace {
                pending: pending.clone(),
                courtesy,
                outcome: outcome.clone(),
                linger: options.durability == StoreDurability::Fast,
                behind: behind(options.max_backlog),
                shipping,
            };
            std::thread::Builder::new()
                .name("switchyard-gateway-store".into())
                .spawn(move || store_loop(&intake, &recorder, &pace))
                .map_err(|e| format!("cannot start the gateway's store thread: {e}"))?
        };
        Ok(Store {
            options,
            handover: Arc::new(Handover::new(
                dir.to_path_buf(),
                recorder,
                intake,
                pending,
                outcome,
            )),
            thread: Mutex::new(Some(thread)),
            cache,
        })
    }

    /// The response cache over the store's records (filled from the calls index by
    /// [`Store::load_cache`], then by the recorder as calls entered in it are written).
    pub(crate) fn cache(&self) -> &switchyard::cache::Cache {
        &self.cache
    }

    /// Reads the cache entries of the calls already in the store (a gateway restarted
    /// on its data directory answers from them, unless the cache's scope is `run`).
    pub(crate) fn load_cache(&self) {
        self.cache.load(true);
    }

    /// The data directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.handover.dir
    }

    /// How the store records.
    pub(crate) fn options(&self) -> StoreOptions {
        self.options
    }

    /// Finished calls handed to the store and not yet written: the backlog, which grows
    /// when calls end faster than the writer writes them.
    pub(crate) fn backlog(&self) -> usize {
        self.handover.pending.load(Ordering::Acquire)
    }

    /// Batches written so far.
    #[cfg(test)]
    fn batches(&self) -> u64 {
        self.handover.outcome.batches.load(Ordering::Relaxed)
    }

    /// Whether a call ending now must hold its last byte until its record is written:
    /// always in the `answered` and `synced` modes, and in the fast mode once the backlog
    /// is at its bound.
    pub(crate) fn must_wait(&self) -> bool {
        self.options.durability != StoreDurability::Fast
            || self.backlog() >= self.options.max_backlog
    }

    /// Whether records are being written, and how many were lost.
    pub(crate) fn health(&self) -> StoreHealth {
        let (outcome, recorder) = (&self.handover.outcome, &self.handover.recorder);
        let lost = outcome.lost.load(Ordering::Relaxed);
        StoreHealth {
            lost,
            failing: outcome.failing.load(Ordering::Relaxed),
            error: (lost > 0).then(|| recorder.failure()).flatten(),
            quarantined: recorder.quarantined(),
        }
    }

    /// Hands a finished call to the store (never blocks on the store's work). With
    /// `lane_busy` (other calls are open on the caller's lane) its record is prepared on
    /// the lane once the caller's task yields, after the reply's last bytes are written;
    /// otherwise the store's thread prepares it (`intake.rs` says why). The store's thread
    /// is woken only for the first call of a batch or a full intake.
    pub(crate) fn submit(&self, call: Finished, lane_busy: bool) {
        if lane_busy {
            self.handover.defer(call);
        } else {
            self.handover.to_thread(call);
        }
    }

    /// Hands a finished call to the store, its record prepared now, and gives the answer
    /// to wait for before its reply's last byte goes out: `true` once the record is
    /// written, `false` when it could not be (the call is counted lost and the client
    /// still gets its reply).
    pub(crate) fn submit_and_wait(&self, call: Finished) -> oneshot::Receiver<bool> {
        self.handover.now(call)
    }

    /// Records every call handed over so far, then closes the recorder; reports the
    /// first recording failure, if any.
    pub(crate) fn close(&self) -> Result<(), String> {
        self.handover.close();
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = t.join();
        }
        self.handover.recorder.close().map_err(|e| e.to_string())
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// A batch handed to the recorder and not yet written: its answer, how many calls it
/// holds, and the acks of the calls waiting for it.
struct Batch {
    written: futures::future::BoxFuture<'static, Option<u64>>,
    calls: usize,
    acks: Vec<oneshot::Sender<bool>>,
}

type InFlight = std::collections::VecDeque<Batch>;

/// The store's thread: takes the intake in batches, builds their records and hands each
/// batch to the recorder, building the next while the recorder writes (at most
/// [`WINDOW`] records in flight), counting down `pending` as batches are written and
/// answering the calls that wait.
fn store_loop(intake: &Intake, recorder: &Arc<Recorder>, pace: &Pace) {
    let mut in_flight = InFlight::new();
    loop {
        switchyard::internal::placement::keep_off_lanes();
        let mut queue = intake.lock();
        if queue.calls.is_empty() && !in_flight.is_empty() {
            // Nothing to build: wait for the writer, so the backlog reads zero when idle
            // and waiting calls get their answer.
            drop(queue);
            while let Some(batch) = in_flight.pop_front() {
                pace.settle(batch);
            }
            continue;
        }
        while queue.calls.is_empty() && !queue.closed {
            queue = intake.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
        }
        if queue.calls.is_empty() {
            return; // closed, and everything handed over is written
        }
        if pace.linger {
            // Let the batch gather for LINGER from its first call, also when the calls
            // came while the last batch was being written (else at one connection each
            // batch would be the one or two calls of a write's time); a full intake, a
            // call waiting for its record or a close cuts the wait short.
            let left = queue
                .first_at
                .map_or(Duration::ZERO, |at| LINGER.saturating_sub(at.elapsed()));
            queue = intake
                .wake
                .wait_timeout_while(queue, left, |q| {
                    !q.closed && q.calls.len() < FULL && q.waiting == 0
                })
                .map(|(q, _)| q)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        // At most FULL records are handed to the recorder at once.
        let take = queue.calls.len().min(FULL);
        let rest = queue.calls.split_off(take);
        let calls = std::mem::replace(&mut queue.calls, rest);
        // What is left (past FULL) starts the next batch now.
        queue.first_at = (!queue.calls.is_empty()).then(Instant::now);
        let waits = calls.iter().filter(|q| q.ack.is_some()).count();
        queue.waiting = queue.waiting.saturating_sub(waits);
        drop(queue);
        let mut waiting = Vec::with_capacity(waits);
        let records = calls
            .into_iter()
            .map(|queued| {
                if let Some(ack) = queued.ack {
                    waiting.push(ack);
                }
                if let Record::ToPrepare(_) = queued.record {
                    // Calls are served first: a call's thread waiting for this core gets
                    // it between two records, not at the end of the batch.
                    pace.courtesy.give_way();
                }
                queued.record.prepared(recorder)
            })
            .collect();
        in_flight.push_back(Batch {
            written: recorder.submit_prepared(records),
            calls: take,
            acks: waiting,
        });
        while in_flight.iter().map(|b| b.calls).sum::<usize>() > WINDOW {
            if let Some(oldest) = in_flight.pop_front() {
                pace.settle(oldest);
            }
        }
        // Batches are written in order: answer those already in place.
        while let Some(front) = in_flight.front_mut() {
            let Some(written) = futures::FutureExt::now_or_never(&mut front.written) else {
                break;
            };
            if let Some(batch) = in_flight.pop_front() {
                pace.answer(batch, written);
            }
        }
        pace.adjust();
    }
}

/// The store's backlog, how courteous the recording threads are with it, and what became
/// of the records.
/// Where the recording threads stop yielding for a fast mode bounded at `max_backlog`.
fn behind(max_backlog: usize) -> usize {
    BEHIND.min(max_backlog / 2).max(1)
}

struct Pace {
    /// Finished calls handed over and not yet written.
    pending: Arc<AtomicUsize>,
    /// Whether the recording threads yield to calls between two records: on while the
    /// store keeps up, off while it catches up (yielding would hand away the slices it
    /// needs to, on a machine saturated with calls).
    courtesy: Courtesy,
    outcome: Arc<Outcome>,
    /// Whether a batch may gather for [`LINGER`] (the fast mode).
    linger: bool,
    /// The backlog from which the recording threads stop yielding: [`BEHIND`], or half
    /// the fast mode's `max_backlog` when that is lower, so that they catch up before calls
    /// start waiting for their records (yielding to calls that wait for them only slows
    /// both).
    behind: usize,
    /// A replica shipping its records to a shared store.
    shipping: Option<Shipping>,
}

impl Pace {
    /// Waits until a batch is written and answers it.
    fn settle(&self, mut batch: Batch) {
        let written = futures::executor::block_on(&mut batch.written);
        self.answer(batch, written);
    }

    /// Counts a written (or lost) batch off the backlog and answers its waiting calls.
    fn answer(&self, batch: Batch, written: Option<u64>) {
        let ok = written.is_some();
        self.outcome.batches.fetch_add(1, Ordering::Relaxed);
        self.outcome.failing.store(!ok, Ordering::Relaxed);
        if !ok {
            self.outcome
                .lost
                .fetch_add(batch.calls as u64, Ordering::Relaxed);
        }
        // Counted off last, so that a backlog seen at zero comes with the outcome of
        // every write before it.
        self.pending.fetch_sub(batch.calls, Ordering::Release);
        match (&self.shipping, written) {
            (Some(shipping), Some(last)) => {
                shipping.written.notify_one();
                shipping.gate.hold(last, batch.acks);
            }
            _ => {
                for ack in batch.acks {
                    let _ = ack.send(ok);
                }
            }
        }
    }

    /// Turns courtesy off when the backlog passes `behind` and on again once it is back
    /// under a quarter of that (the fast mode only: the other modes never yield).
    fn adjust(&self) {
        if !self.linger {
            return;
        }
        let backlog = self.pending.load(Ordering::Relaxed);
        if backlog >= self.behind && self.courtesy.is_on() {
            self.courtesy.set(false);
        } else if backlog <= self.behind / 4 && !self.courtesy.is_on() {
            self.courtesy.set(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard::record;
    use switchyard::Dialect;

    /// The record is told its raw bytes' keys only when every chunk came redacted under
    /// the same ones: a chunk from elsewhere, or under other keys, leaves them unknown
    /// (and the writer searches the bytes).
    #[test]
    fn a_draft_knows_its_bytes_redacted_only_when_every_chunk_was() {
        use switchyard::internal::redact::{register, StreamRedactor};
        let a = StreamRedactor::new().redacted();
        register("sk-draft-test-0123456789abcdef", "a test key");
        let b = StreamRedactor::new().redacted();
        assert_ne!(a, b);
        let chunk = Bytes::from_static(b"data: {}\n\n");
        let mut draft = Draft::default();
        assert_eq!(draft.raw_redacted.under(), None);
        draft.keep_redacted(&chunk, a);
        draft.keep_redacted(&chunk, a);
        assert_eq!(draft.raw_redacted.under(), Some(a));
        let mut other = Draft::default();
        other.keep_redacted(&chunk, a);
        other.keep_redacted(&chunk, b);
        assert_eq!(other.raw_redacted.under(), None);
        let mut mixed = Draft::default();
        mixed.keep_redacted(&chunk, a);
        mixed.keep(&chunk);
        mixed.keep_redacted(&chunk, a);
        assert_eq!(mixed.raw_redacted.under(), None);
        // Replaced whole by bytes of unknown provenance.
        draft.keep_all(chunk.clone());
        assert_eq!(draft.raw_redacted.under(), None);
        // A prefix kept at the bound is still of the same answer.
        let mut bounded = Draft::keeping_at_most(4);
        bounded.keep_redacted(&chunk, b);
        assert_eq!(
            (bounded.kept.bytes, bounded.raw_redacted.under()),
            (4, Some(b))
        );
        // What the record is handed: the mark with the bytes of a format-3 record.
        let derived = || {
            let mut call = finished(0);
            call.summary.usage = Some(switchyard::Usage {
                input: 3,
                output: 2,
                ..Default::default()
            });
            call
        };
        let (_, raw) = build::build_record_and_raw(derived());
        assert_eq!(raw.as_ref().map(|r| r.redacted), Some(None));
        let mut call = derived();
        let reply = build::concat(&call.draft.raw);
        call.draft.raw.clear();
        call.draft.raw_redacted = RawRedacted::Nothing;
        call.draft.keep_redacted(&reply, b);
        let (record, raw) = build::build_record_and_raw(call);
        assert!(record::leaves_out(record.format));
        let raw = raw.expect("the bytes, apart");
        assert_eq!((raw.bytes, raw.redacted), (reply, Some(b)));
    }

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
                requested: "mock/echo".into(),
                upstream_called: true,
                model_known: true,
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
        let store = Arc::new(Store::open(tmp.path(), StoreOptions::default()).unwrap());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let store = store.clone();
                std::thread::spawn(move || {
                    (0..500).for_each(|i| store.submit(finished(t * 500 + i), t % 2 == 0))
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

    /// Calls deferred on a busy lane are prepared together by the task the first of them
    /// spawned, once the lane's running task yields, at most `BATCH_MOST` by one task;
    /// with two lanes deferring at once,
    /// every call is written once, those whose task never ran (the lane's runtime shut
    /// down first) included.
    #[test]
    fn calls_deferred_together_are_prepared_by_one_task_and_none_is_lost() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(tmp.path(), StoreOptions::default()).unwrap());
        let lane = |store: Arc<Store>, first: usize, alone: bool| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            runtime.block_on(async {
                for turn in 0..50 {
                    // A turn's calls end without yielding: one batch, left to its task.
                    for i in 0..10 {
                        store.submit(finished(first + turn * 10 + i), true);
                    }
                    if alone {
                        assert_eq!(store.handover.deferred().len(), 10);
                    }
                    // More than one task's most: the rest went to a task of its own, which
                    // ran in the same turn of the scheduler (a yield waits for the others).
                    const _: () = assert!(10 > intake::BATCH_MOST);
                    tokio::task::yield_now().await;
                    if alone {
                        assert!(store.handover.deferred().is_empty());
                    }
                }
                // A batch whose task never runs: dropped with the runtime.
                for i in 500..507 {
                    store.submit(finished(first + i), true);
                }
            });
            drop(runtime);
        };
        lane(store.clone(), 0, true);
        let lanes: Vec<_> = [1000, 2000]
            .map(|first| {
                let store = store.clone();
                std::thread::spawn(move || lane(store, first, false))
            })
            .into_iter()
            .collect();
        lanes.into_iter().for_each(|t| t.join().unwrap());
        assert!(store.handover.deferred().is_empty());
        store.close().unwrap();
        let mut calls: Vec<usize> = record::read_records(tmp.path())
            .unwrap()
            .iter()
            .map(|r| {
                let text = r.request.messages[0].content[0].as_text().unwrap();
                text.trim_start_matches("call ").parse().unwrap()
            })
            .collect();
        calls.sort();
        let expected: Vec<usize> = [0, 1000, 2000]
            .into_iter()
            .flat_map(|first| first..first + 507)
            .collect();
        assert_eq!(calls, expected, "every call written once");
        assert_eq!(store.health().lost, 0);
    }

    /// Calls ending one at a time, faster than a batch is written (one connection's
    /// pace), are written a linger's worth per batch: the first calls of two batches are
    /// at least LINGER apart, also for the calls that came while a batch was being
    /// written. Taking those at once made batches of a write's time, each waking the
    /// store's thread, the writer and the index.
    #[test]
    fn calls_one_at_a_time_are_written_a_linger_per_batch() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(tmp.path(), StoreOptions::default()).unwrap();
        let start = std::time::Instant::now();
        let calls = 800;
        for i in 0..calls {
            store.submit(finished(i), false);
            // 50 µs apart, spun rather than slept (a sleep lasts at least a timer tick).
            let next = start + Duration::from_micros(50) * (i as u32 + 1);
            while std::time::Instant::now() < next {
                std::hint::spin_loop();
            }
        }
        let submitting = start.elapsed();
        store.close().unwrap();
        let most = (submitting.as_micros() / LINGER.as_micros()) as u64 + 2;
        let batches = store.batches();
        assert!(
            batches <= most,
            "{calls} calls over {submitting:?} were written in {batches} batches, more than {most}"
        );
        assert_eq!(
            record::record_numbers(tmp.path()).unwrap(),
            (1..=calls as u64).collect::<Vec<_>>()
        );
    }

    /// A call handed over on a lane is counted in the backlog at once and its record
    /// prepared once the task that ended it yields; a lane's runtime that stops first
    /// drops the tasks it still holds, and each prepares its record as it goes: no call
    /// is lost either way.
    #[test]
    fn a_call_handed_over_on_a_runtime_is_recorded_whether_its_task_runs_or_the_runtime_stops() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(tmp.path(), StoreOptions::default()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            store.submit(finished(0), true);
            assert_eq!(store.backlog(), 1, "counted from the hand-over");
            assert!(
                store.handover.intake.lock().calls.is_empty(),
                "not yet prepared"
            );
            tokio::task::yield_now().await;
        });
        runtime.block_on(async {
            for i in 1..5 {
                store.submit(finished(i), true);
            }
        });
        drop(runtime);
        store.close().unwrap();
        assert_eq!(store.health().lost, 0);
        assert_eq!(store.backlog(), 0);
        assert_eq!(
            record::record_numbers(tmp.path()).unwrap(),
            (1..=5).collect::<Vec<_>>()
        );
    }

    #[test]
    fn recording_stops_yielding_to_calls_when_behind_and_resumes_once_caught_up() {
        for (max_backlog, behind) in [(DEFAULT_MAX_BACKLOG, 512), (64, 32), (100_000, BEHIND)] {
            let pace = Pace {
                pending: Arc::new(AtomicUsize::new(0)),
                courtesy: Courtesy::on(),
                outcome: Arc::default(),
                linger: true,
                behind: super::behind(max_backlog),
                shipping: None,
            };
            assert_eq!(pace.behind, behind, "max_backlog {max_backlog}");
            let at = |n: usize| {
                pace.pending.store(n, Ordering::Relaxed);
                pace.adjust();
                pace.courtesy.is_on()
            };
            assert!(at(1));
            assert!(at(behind - 1));
            assert!(!at(behind), "behind: catch up at full share");
            assert!(!at(behind / 4 + 1), "still catching up");
            assert!(at(behind / 4), "caught up: yield again");
        }
    }
}

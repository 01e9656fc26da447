//! How a finished call's record reaches the store's thread: built and serialised by the
//! thread the call ended on, then queued in the intake the store's thread takes in batches.
//!
//! Preparing a record is most of what recording costs a call (building it, serialising
//! it, escaping its bytes, redacting it). In the fast mode, a call that ends while others
//! are open on its lane prepares it there, after its reply has gone out: the meter closes
//! as the reply's last bytes are about to be written, so [`Handover::defer`] spawns the
//! work on the lane's runtime, which runs it once the connection's task has written them.
//! On busy lanes the work is then spread evenly over the calls, where the store's thread,
//! woken for a batch, took a core from the lanes for the whole batch, which made the
//! calls' tail latency (`docs/performance.md`, *What stalls the lanes*). A call that ends
//! alone on its lane leaves its record to the store's thread ([`Handover::to_thread`]),
//! on an otherwise idle core: its lane is then free at once for the client's next
//! request. A call whose reply waits for its record (the `answered` and `synced` modes, a
//! backlog at its bound) prepares it at once.

use super::{build, Finished, Outcome};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use switchyard::record::PreparedRecord;
use switchyard::Recorder;
use tokio::sync::oneshot;

/// A call in the intake, with the answer its reply waits for (`true`: written).
pub(super) struct Queued {
    pub(super) record: Record,
    pub(super) ack: Option<oneshot::Sender<bool>>,
}

impl Record {
    /// The prepared record, preparing it now if it is still to be.
    pub(super) fn prepared(self, recorder: &Recorder) -> Result<PreparedRecord, String> {
        match self {
            Record::Prepared(prepared) => prepared,
            Record::ToPrepare(call) => prepare(recorder, *call),
        }
    }
}

/// A finished call's record built and serialised (the one way either thread prepares it).
fn prepare(recorder: &Recorder, call: Finished) -> Result<PreparedRecord, String> {
    let (record, raw) = build::build_record_and_raw(call);
    recorder.prepare(record, raw)
}

/// A call's record as the intake holds it.
// Unboxed: a prepared record is a busy gateway's every call, and a box would cost each
// one an allocation; the intake moves them, it does not copy them.
#[allow(clippy::large_enum_variant)]
pub(super) enum Record {
    /// Prepared where the call ended (or why it could not be).
    Prepared(Result<PreparedRecord, String>),
    /// For the store's thread to prepare: the call ended alone on its lane.
    ToPrepare(Box<Finished>),
}

/// Records waiting for the store's thread.
#[derive(Default)]
pub(super) struct Intake {
    queue: Mutex<Queue>,
    pub(super) wake: Condvar,
}

#[derive(Default)]
pub(super) struct Queue {
    pub(super) calls: Vec<Queued>,
    /// Calls in `calls` whose reply waits for them: the thread does not linger.
    pub(super) waiting: usize,
    /// When the first of `calls` came (`None` when there is none).
    pub(super) first_at: Option<Instant>,
    pub(super) closed: bool,
}

impl Intake {
    pub(super) fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Calls in the intake that wake the store's thread at once, lingering or not (a burst
/// is recorded without waiting, and the intake stays small).
pub(super) const FULL: usize = 512;

/// How long [`Handover::close`] waits for the records still being prepared on the lanes
/// (microseconds' work each, unless a lane is wedged).
const PREPARED_WITHIN: Duration = Duration::from_secs(5);

/// What the threads that end calls share with the store: where a record goes and what
/// is counted on the way.
pub(super) struct Handover {
    pub(super) dir: PathBuf,
    pub(super) recorder: Arc<Recorder>,
    pub(super) intake: Arc<Intake>,
    /// Calls handed over and not yet written (the backlog), counted from the hand-over.
    pub(super) pending: Arc<AtomicUsize>,
    pub(super) outcome: Arc<Outcome>,
    /// Calls handed over whose record is not yet in the intake (being prepared).
    preparing: AtomicUsize,
}

impl Handover {
    pub(super) fn new(
        dir: PathBuf,
        recorder: Arc<Recorder>,
        intake: Arc<Intake>,
        pending: Arc<AtomicUsize>,
        outcome: Arc<Outcome>,
    ) -> Handover {
        Handover {
            dir,
            recorder,
            intake,
            pending,
            outcome,
            preparing: AtomicUsize::new(0),
        }
    }

    /// Hands `call` over: counted in the backlog now, its record prepared once the task
    /// ending it yields (on a tokio runtime; at once elsewhere) and queued.
    pub(super) fn defer(self: &Arc<Self>, call: Finished) {
        self.count_in();
        let deferred = Deferred {
            handover: self.clone(),
            call: Some(call),
        };
        match tokio::runtime::Handle::try_current() {
            // Dropping it prepares the record (see `Deferred`).
            Ok(runtime) => {
                runtime.spawn(async move { drop(deferred) });
            }
            Err(_) => drop(deferred),
        }
    }

    /// Hands `call` over for the store's thread to prepare.
    pub(super) fn to_thread(&self, call: Finished) {
        self.pending.fetch_add(1, Ordering::Relaxed);
        self.queue(Queued {
            record: Record::ToPrepare(Box::new(call)),
            ack: None,
        });
    }

    /// Hands `call` over, its record prepared now, and gives the answer its reply waits
    /// for.
    pub(super) fn now(&self, call: Finished) -> oneshot::Receiver<bool> {
        self.count_in();
        let (tx, rx) = oneshot::channel();
        self.prepare_and_queue(call, Some(tx));
        rx
    }

    fn count_in(&self) {
        self.pending.fetch_add(1, Ordering::Relaxed);
        self.preparing.fetch_add(1, Ordering::Relaxed);
    }

    fn prepare_and_queue(&self, call: Finished, ack: Option<oneshot::Sender<bool>>) {
        let record = Record::Prepared(prepare(&self.recorder, call));
        self.queue(Queued { record, ack });
        self.preparing.fetch_sub(1, Ordering::Release);
    }

    fn queue(&self, queued: Queued) {
        let mut queue = self.intake.lock();
        if queue.closed {
            drop(queue);
            self.pending.fetch_sub(1, Ordering::Relaxed);
            self.outcome.lost.fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                "the gateway's store {} is closed; a call that ended after shutdown was not recorded",
                self.dir.display()
            );
            if let Some(ack) = queued.ack {
                let _ = ack.send(false);
            }
            return;
        }
        let waits = queued.ack.is_some();
        if queue.calls.is_empty() {
            queue.first_at = Some(Instant::now());
        }
        queue.calls.push(queued);
        if waits {
            queue.waiting += 1;
        }
        // The store's thread is woken for the first call of a batch only (it lingers for
        // the rest), a full intake, or a call whose reply waits.
        let wake = queue.calls.len() == 1 || queue.calls.len() >= FULL || waits;
        drop(queue);
        if wake {
            self.intake.wake.notify_one();
        }
    }

    /// Closes the intake once the records being prepared are in it (at most
    /// [`PREPARED_WITHIN`]; a record prepared later is counted lost).
    pub(super) fn close(&self) {
        let since = Instant::now();
        while self.preparing.load(Ordering::Acquire) > 0 && since.elapsed() < PREPARED_WITHIN {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.intake.lock().closed = true;
        self.intake.wake.notify_one();
    }
}

/// A call whose record is still to prepare: prepared when it is dropped, whether its
/// task ran or not (a lane's runtime shutting down drops the tasks it still holds), so
/// no call is lost on the way.
struct Deferred {
    handover: Arc<Handover>,
    call: Option<Finished>,
}

impl Drop for Deferred {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            self.handover.prepare_and_queue(call, None);
            // A busy lane also inserts the calls index's rows, for the reason it prepares
            // records (see the module's doc; `record/index_feed.rs`).
            self.handover.recorder.help_index();
        }
    }
}

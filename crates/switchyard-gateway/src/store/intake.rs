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
//!
//! The records deferred meanwhile are prepared together, by one task: the calls that end
//! in one turn of a busy lane's scheduler wait in [`Handover`]'s batch for the task the
//! first of them spawned. A record's preparation runs tens of kilobytes of code (the
//! line's writer, the escaping, SQLite's insert) that a call's own path has pushed out of
//! the core's instruction cache; run back to back, the batch's records find it there, and
//! the batch takes the intake's lock and spawns its task once.

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
    /// Calls deferred whose records the next [`Batch`] task prepares; while it is not
    /// empty, that task is spawned (or being dropped, which prepares them too).
    deferred: Mutex<Vec<Finished>>,
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
            deferred: Mutex::new(Vec::new()),
        }
    }

    /// Hands `call` over: counted in the backlog now, its record prepared once the task
    /// ending it yields (on a tokio runtime; at once elsewhere) and queued, with the
    /// others deferred until then.
    pub(super) fn defer(self: &Arc<Self>, call: Finished) {
        self.count_in();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.prepare_deferred(vec![call]);
            return;
        };
        let first = {
            let mut deferred = self.deferred();
            deferred.push(call);
            deferred.len() == 1
        };
        if first {
            Batch::spawn(self.clone(), &runtime);
        }
    }

    pub(super) fn deferred(&self) -> MutexGuard<'_, Vec<Finished>> {
        self.deferred.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands `call` over for the store's thread to prepare.
    pub(super) fn to_thread(&self, call: Finished) {
        self.pending.fetch_add(1, Ordering::Relaxed);
        self.queue(vec![Queued {
            record: Record::ToPrepare(Box::new(call)),
            ack: None,
        }]);
    }

    /// Hands `call` over, its record prepared now, and gives the answer its reply waits
    /// for.
    pub(super) fn now(&self, call: Finished) -> oneshot::Receiver<bool> {
        self.count_in();
        let (tx, rx) = oneshot::channel();
        let record = Record::Prepared(prepare(&self.recorder, call));
        self.queue(vec![Queued {
            record,
            ack: Some(tx),
        }]);
        self.preparing.fetch_sub(1, Ordering::Release);
        rx
    }

    fn count_in(&self) {
        self.pending.fetch_add(1, Ordering::Relaxed);
        self.preparing.fetch_add(1, Ordering::Relaxed);
    }

    /// Prepares the records of `calls` deferred on a busy lane (none of whose replies
    /// waits for them) and queues them together. The lane also inserts the calls index's
    /// rows, for the reason it prepares records (see the module's doc;
    /// `record/index_feed.rs`): a statement's worth for each call when that many wait, as
    /// when each call's record was prepared alone.
    fn prepare_deferred(&self, calls: Vec<Finished>) {
        let n = calls.len();
        if n == 0 {
            return;
        }
        let prepared = calls
            .into_iter()
            .map(|call| Queued {
                record: Record::Prepared(prepare(&self.recorder, call)),
                ack: None,
            })
            .collect();
        self.queue(prepared);
        self.preparing.fetch_sub(n, Ordering::Release);
        for _ in 0..n {
            self.recorder.help_index();
        }
    }

    fn queue(&self, queued: Vec<Queued>) {
        let mut queue = self.intake.lock();
        if queue.closed {
            drop(queue);
            self.pending.fetch_sub(queued.len(), Ordering::Relaxed);
            self.outcome
                .lost
                .fetch_add(queued.len() as u64, Ordering::Relaxed);
            tracing::error!(
                "the gateway's store {} is closed; {} call(s) that ended after shutdown were not recorded",
                self.dir.display(),
                queued.len()
            );
            for ack in queued.into_iter().filter_map(|q| q.ack) {
                let _ = ack.send(false);
            }
            return;
        }
        let waits = queued.iter().filter(|q| q.ack.is_some()).count();
        let was_empty = queue.calls.is_empty();
        if was_empty {
            queue.first_at = Some(Instant::now());
        }
        queue.calls.extend(queued);
        queue.waiting += waits;
        // The store's thread is woken for the first calls of a batch only (it lingers for
        // the rest), a full intake, or a call whose reply waits.
        let wake = was_empty || queue.calls.len() >= FULL || waits > 0;
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

/// The most records one [`Batch`] prepares before the lane's other tasks run again: a
/// burst of calls ending together does not hold the lane's other connections for more
/// than a few records' work (tens of microseconds).
pub(super) const BATCH_MOST: usize = 8;

/// The task that prepares the calls deferred until it runs, [`BATCH_MOST`] of them, and
/// leaves the rest to a task of its own. A batch whose task never ran (a lane's runtime
/// shutting down drops the tasks it still holds) prepares them all when dropped, so no
/// call is lost on the way.
struct Batch {
    handover: Arc<Handover>,
    /// It ran: what it left has a task of its own.
    ran: bool,
}

impl Batch {
    fn spawn(handover: Arc<Handover>, runtime: &tokio::runtime::Handle) {
        let mut batch = Batch {
            handover,
            ran: false,
        };
        runtime.spawn(async move { batch.run() });
    }

    fn run(&mut self) {
        let (calls, more) = {
            let mut deferred = self.handover.deferred();
            let n = deferred.len().min(BATCH_MOST);
            let calls: Vec<Finished> = deferred.drain(..n).collect();
            (calls, !deferred.is_empty())
        };
        self.ran = true;
        if more {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                Batch::spawn(self.handover.clone(), &runtime);
            } else {
                self.ran = false;
            }
        }
        self.handover.prepare_deferred(calls);
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        if !self.ran {
            let calls = std::mem::take(&mut *self.handover.deferred());
            self.handover.prepare_deferred(calls);
        }
    }
}

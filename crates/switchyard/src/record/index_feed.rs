//! Who inserts the calls index's rows, and when.
//!
//! The writer hands each batch's rows, numbered, to a queue. The index's own thread takes
//! the queue whole when a batch has gathered (the first row, then up to [`BATCH_WAIT`] or
//! [`BATCH_ROWS`]), inserts and commits it, and checkpoints the WAL into the database
//! now and then ([`CHECKPOINT_ROWS`]). No caller waits on any of it.
//!
//! On a busy gateway, the threads serving calls also take rows, a statement's worth at a
//! time, between two calls ([`IndexFeed::help`]): woken for its batch, the index's thread
//! took a core from them for the whole batch, and that made the calls' tail latency
//! (docs/performance.md, *What stalls the lanes*). A helper never waits: it inserts only
//! when the connection is free (the index's thread or another lane holds it otherwise),
//! rows wait, and SQLite's write lock is free. It commits once the open transaction holds
//! [`COMMIT_ROWS`]. The checkpoint, which writes the database file and syncs it, and the
//! commit after it, which starts the WAL again and syncs its header, are the index's
//! thread's alone. Rows are taken from the queue's front by whoever holds the
//! connection, so they are inserted in number order and a killed process leaves the index
//! a prefix of the log, caught up from the log when it is opened again.

use super::index_insert::{Inserter, Refused, ROWS_PER_STATEMENT};
use super::index_row::IndexRow;
use crate::internal::background::Courtesy;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::thread::JoinHandle;
use std::time::Duration;

/// Rows the index's thread takes together, at most a batch's worth of waiting.
pub(super) const BATCH_ROWS: usize = 500;
const BATCH_WAIT: Duration = Duration::from_millis(100);

/// The most rows a transaction opened by the threads serving calls holds before one of
/// them commits it (the index's thread commits at each batch it takes).
const COMMIT_ROWS: usize = 512;

/// Rows inserted between two checkpoints: about SQLite's own 1,000 pages of WAL, whose
/// automatic checkpoint is off on this connection so that no commit, and so no thread
/// serving calls, runs one.
const CHECKPOINT_ROWS: usize = 16_384;

/// How long a checkpoint waits for readers to be done with the WAL.
const RESTART_WAIT: Duration = Duration::from_millis(100);

/// How long the index's thread waits for another connection's write lock (a `sqlite3`
/// shell, say). The threads serving calls do not wait for it at all.
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// What the writer, the index's thread and the helpers share.
struct Feed {
    queue: Mutex<Queue>,
    /// Wakes the index's thread.
    ready: Condvar,
    /// Rows in the queue, looked at without its lock.
    queued: AtomicUsize,
    /// The connection, with a buffer for the rows taken; `None` once closed.
    inserting: Mutex<Option<Inserting>>,
    /// The first failure, reported at the close.
    failure: Mutex<Option<String>>,
    path: PathBuf,
}

#[derive(Default)]
struct Queue {
    rows: VecDeque<IndexRow>,
    /// The index's thread waits for a batch's first row (it is woken by that row only).
    idle: bool,
    /// A helper took rows since the thread took its last batch: the thread has their
    /// commit to make, even with no row left queued.
    helped: bool,
    closed: bool,
}

struct Inserting {
    inserter: Inserter,
    /// Rows taken from the queue, being inserted (kept for its capacity).
    taken: Vec<IndexRow>,
    /// Rows inserted since the last checkpoint.
    since_checkpoint: usize,
}

/// Feeds the index: [`IndexWriter::push`] from the writer's thread, the inserting from a
/// thread of its own and from helpers ([`IndexWriter::feed`]).
pub(crate) struct IndexWriter {
    feed: Arc<Feed>,
    thread: Option<JoinHandle<Option<String>>>,
    /// The lines the catch-up found unreadable (no row made for them).
    pub(crate) set_aside: Vec<super::read::SetAside>,
}

/// A handle on an index's feed for the threads serving calls: see [`IndexFeed::help`].
#[derive(Clone)]
pub(crate) struct IndexFeed(Arc<Feed>);

impl IndexWriter {
    /// Starts feeding through `inserter` (its connection's catch-up done), from a thread
    /// of its own that gives way to calls by `courtesy`.
    pub(super) fn start(
        inserter: Inserter,
        path: PathBuf,
        courtesy: Courtesy,
        set_aside: Vec<super::read::SetAside>,
    ) -> crate::error::Result<IndexWriter> {
        let feed = Arc::new(Feed::new(inserter, path));
        let shared = feed.clone();
        let thread = std::thread::Builder::new()
            .name("switchyard-index".into())
            .spawn(move || shared.run(&courtesy))
            .map_err(|e| {
                crate::error::Error::Config(format!("calls index: cannot start its thread: {e}"))
            })?;
        Ok(IndexWriter {
            feed,
            thread: Some(thread),
            set_aside,
        })
    }

    /// A handle for the threads serving calls.
    pub(crate) fn feed(&self) -> IndexFeed {
        IndexFeed(self.feed.clone())
    }

    /// Queues `rows` (numbered, in order).
    pub(crate) fn push(&self, rows: Vec<IndexRow>) {
        self.feed.push(rows);
    }

    /// Inserts and commits what is queued, and stops the thread.
    pub(crate) fn close(mut self) -> std::result::Result<(), String> {
        self.feed.close();
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Some(m))) => Err(m),
            Some(Err(_)) => Err("calls index: its thread panicked".into()),
            _ => Ok(()),
        }
    }
}

impl Drop for IndexWriter {
    /// Without [`IndexWriter::close`] (the writer's thread ended early), the index's
    /// thread still commits what it holds and ends.
    fn drop(&mut self) {
        self.feed.close();
    }
}

impl IndexFeed {
    /// Inserts a statement's worth of waiting rows, if that many wait, the connection is
    /// free and SQLite's write lock too; returns at once otherwise. Commits when the open
    /// transaction holds [`COMMIT_ROWS`]. For a thread serving calls, between two calls.
    pub(crate) fn help(&self) {
        let feed = &self.0;
        if feed.queued.load(Ordering::Relaxed) < ROWS_PER_STATEMENT {
            return;
        }
        let mut inserting = match feed.inserting.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        let Some(inserting) = inserting.as_mut() else {
            return;
        };
        if !feed.take_statement(&mut inserting.taken) {
            return;
        }
        feed.insert(inserting, &Courtesy::default());
        if inserting.inserter.uncommitted() >= COMMIT_ROWS {
            feed.commit(inserting);
        }
    }
}

impl Feed {
    fn new(inserter: Inserter, path: PathBuf) -> Feed {
        Feed {
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
            queued: AtomicUsize::new(0),
            inserting: Mutex::new(Some(Inserting {
                inserter,
                taken: Vec::new(),
                since_checkpoint: 0,
            })),
            failure: Mutex::new(None),
            path,
        }
    }

    fn lock_queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_inserting(&self) -> MutexGuard<'_, Option<Inserting>> {
        self.inserting.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, rows: Vec<IndexRow>) {
        if rows.is_empty() {
            return;
        }
        let mut queue = self.lock_queue();
        let before = queue.rows.len();
        queue.rows.extend(rows);
        let after = queue.rows.len();
        self.queued.store(after, Ordering::Relaxed);
        // The thread is woken by a batch's first row, a full batch or the close, not by
        // every batch the writer hands over: at one connection the writer writes every
        // few calls, and a wake-up per write was a context switch on the cores serving
        // the calls.
        let wake = queue.idle || (before < BATCH_ROWS && after >= BATCH_ROWS);
        drop(queue);
        if wake {
            self.ready.notify_one();
        }
    }

    fn close(&self) {
        self.lock_queue().closed = true;
        self.ready.notify_one();
    }

    /// Moves the queue's first [`ROWS_PER_STATEMENT`] rows into `taken`, for a helper:
    /// `false` when fewer wait. Wakes the index's thread if it waits for a first row, so
    /// that it commits them.
    fn take_statement(&self, taken: &mut Vec<IndexRow>) -> bool {
        let mut queue = self.lock_queue();
        if queue.rows.len() < ROWS_PER_STATEMENT {
            return false;
        }
        taken.extend(queue.rows.drain(..ROWS_PER_STATEMENT));
        self.queued.store(queue.rows.len(), Ordering::Relaxed);
        queue.helped = true;
        if queue.idle {
            self.ready.notify_one();
        }
        true
    }

    /// Moves every queued row into `taken`, for the index's thread.
    fn take_all(&self, taken: &mut Vec<IndexRow>) {
        let mut queue = self.lock_queue();
        taken.extend(queue.rows.drain(..));
        self.queued.store(0, Ordering::Relaxed);
        queue.helped = false;
    }

    /// Inserts the rows taken; rows refused because another connection writes go back to
    /// the queue's front, for later.
    fn insert(&self, inserting: &mut Inserting, courtesy: &Courtesy) {
        let taken = &mut inserting.taken;
        match inserting.inserter.insert(taken, courtesy) {
            Ok(()) => inserting.since_checkpoint += taken.len(),
            Err(Refused::Busy) => {
                let mut queue = self.lock_queue();
                for row in taken.drain(..).rev() {
                    queue.rows.push_front(row);
                }
                self.queued.store(queue.rows.len(), Ordering::Relaxed);
            }
            Err(Refused::Failed(e)) => self.failed("insert rows", &e),
        }
        taken.clear();
    }

    fn commit(&self, inserting: &mut Inserting) {
        if let Err(e) = inserting.inserter.commit() {
            self.failed("commit rows", &e);
        }
    }

    fn failed(&self, what: &str, e: &rusqlite::Error) {
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        if failure.is_none() {
            let message = format!("calls index {}: cannot {what}: {e}", self.path.display());
            tracing::error!("{message}");
            *failure = Some(message);
        }
    }

    /// The index's thread: a batch at a time until the close, then what is left; gives
    /// the first failure.
    fn run(&self, courtesy: &Courtesy) -> Option<String> {
        loop {
            let closed = self.wait_for_batch();
            let mut slot = self.lock_inserting();
            if let Some(inserting) = slot.as_mut() {
                let _ = inserting.inserter.conn().busy_timeout(BUSY_WAIT);
                self.take_all(&mut inserting.taken);
                // The checkpoint comes before a batch's insert, so that the batch's commit
                // is the first after it: that commit writes the WAL again from its start,
                // and syncs its header, here rather than on a lane.
                if inserting.since_checkpoint >= CHECKPOINT_ROWS && !inserting.taken.is_empty() {
                    self.commit(inserting);
                    self.checkpoint(inserting);
                }
                self.insert(inserting, courtesy);
                self.commit(inserting);
                let _ = inserting.inserter.conn().busy_timeout(Duration::ZERO);
            }
            if closed {
                // The connection closes here, with its last checkpoint.
                *slot = None;
                return self
                    .failure
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take();
            }
        }
    }

    /// Waits for a batch's first row, then for the batch to gather; `true` at the close.
    fn wait_for_batch(&self) -> bool {
        let mut queue = self.lock_queue();
        while queue.rows.is_empty() && !queue.helped && !queue.closed {
            queue.idle = true;
            queue = self.ready.wait(queue).unwrap_or_else(|p| p.into_inner());
        }
        queue.idle = false;
        let (queue, _) = self
            .ready
            .wait_timeout_while(queue, BATCH_WAIT, |q| {
                q.rows.len() < BATCH_ROWS && !q.closed
            })
            .unwrap_or_else(|p| p.into_inner());
        // The close comes after the writer's last rows, which are taken with it.
        queue.closed
    }

    /// Copies the WAL's pages into the database, and waits (at most [`RESTART_WAIT`]) for
    /// readers to be done with the WAL, so that the next commit writes it again from its
    /// start. A reader that holds on makes the WAL grow until a later checkpoint.
    fn checkpoint(&self, inserting: &mut Inserting) {
        let conn = inserting.inserter.conn();
        let _ = conn.busy_timeout(RESTART_WAIT);
        let done = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get::<_, i64>(0));
        let _ = conn.busy_timeout(BUSY_WAIT);
        match done {
            Ok(0) => inserting.since_checkpoint = 0,
            Ok(_) => {} // a reader held on: again at the next batch
            Err(e) => self.failed("checkpoint its WAL", &e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::index::{open, open_writer};
    use crate::record::index_insert::tests::{committed, row};
    use crate::record::index_row::INDEX_FILE;
    use std::time::Instant;

    /// A feed with no thread of its own, so that only the test inserts.
    fn feed(path: &std::path::Path) -> IndexFeed {
        let inserter = Inserter::new(open(path).unwrap());
        inserter.conn().busy_timeout(Duration::ZERO).unwrap();
        IndexFeed(Arc::new(Feed::new(inserter, path.to_path_buf())))
    }

    fn push(feed: &IndexFeed, numbers: std::ops::RangeInclusive<u64>) {
        feed.0.push(numbers.map(row).collect());
    }

    fn queued(feed: &IndexFeed) -> Vec<u64> {
        feed.0.lock_queue().rows.iter().map(|r| r.number).collect()
    }

    fn uncommitted(feed: &IndexFeed) -> usize {
        feed.0
            .lock_inserting()
            .as_ref()
            .unwrap()
            .inserter
            .uncommitted()
    }

    /// A helper inserts exactly a statement's worth from the queue's front, nothing while
    /// fewer wait, and commits once the open transaction holds `COMMIT_ROWS`.
    #[test]
    fn a_helper_inserts_a_statements_worth_and_commits_at_commit_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        let feed = feed(&path);
        push(&feed, 1..=15);
        feed.help();
        assert_eq!(queued(&feed).len(), 15);
        assert_eq!(uncommitted(&feed), 0);
        push(&feed, 16..=20);
        feed.help();
        assert_eq!(queued(&feed), (17..=20).collect::<Vec<_>>());
        assert_eq!(uncommitted(&feed), 16);
        assert!(committed(&path).is_empty());
        push(&feed, 21..=(COMMIT_ROWS as u64 + 100));
        while uncommitted(&feed) != 0 {
            feed.help();
        }
        let rows = committed(&path);
        assert_eq!(rows.len(), COMMIT_ROWS);
        assert_eq!(
            rows.last().unwrap()[0],
            rusqlite::types::Value::Integer(COMMIT_ROWS as i64)
        );
        assert_eq!(*queued(&feed).first().unwrap(), COMMIT_ROWS as u64 + 1);
    }

    /// A helper never waits: not for the connection (another thread holds it), not for
    /// SQLite's write lock (another connection holds it). Refused rows stay queued, in
    /// order, and go in once the lock is free.
    #[test]
    fn a_helper_never_waits_and_rows_it_could_not_insert_stay_queued_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        let feed = feed(&path);
        push(&feed, 1..=40);
        let held = feed.0.lock_inserting();
        let helper = feed.clone();
        let since = Instant::now();
        std::thread::spawn(move || helper.help()).join().unwrap();
        assert!(since.elapsed() < Duration::from_secs(1));
        drop(held);
        assert_eq!(queued(&feed).len(), 40);

        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let since = Instant::now();
        feed.help();
        assert!(since.elapsed() < Duration::from_secs(1));
        assert_eq!(queued(&feed), (1..=40).collect::<Vec<_>>());
        assert_eq!(uncommitted(&feed), 0);
        other.execute_batch("COMMIT").unwrap();
        feed.help();
        feed.help();
        assert_eq!(queued(&feed), (33..=40).collect::<Vec<_>>());
        assert_eq!(uncommitted(&feed), 32);
    }

    /// Rows a helper took leave the index's thread a commit to make even when no row
    /// stays queued: its wait for a batch ends (within the batch wait) instead of waiting
    /// for a next row that may never come.
    #[test]
    fn rows_a_helper_took_end_the_threads_wait_for_a_batch() {
        let dir = tempfile::tempdir().unwrap();
        let feed = feed(&dir.path().join(INDEX_FILE));
        push(&feed, 1..=16);
        feed.help();
        assert!(queued(&feed).is_empty());
        let (done, waited) = std::sync::mpsc::channel();
        let thread = feed.clone();
        std::thread::spawn(move || done.send(thread.0.wait_for_batch()).unwrap());
        assert_eq!(waited.recv_timeout(Duration::from_secs(20)), Ok(false));
        let mut batch = Vec::new();
        feed.0.take_all(&mut batch);
        assert!(batch.is_empty());
        assert!(!feed.0.lock_queue().helped);
    }

    /// The index's thread is woken by a batch's first row, not by each handing-over: rows
    /// handed over one at a time are committed within the batch wait without a close,
    /// and the rest of a batch and more are all there after the close.
    #[test]
    fn rows_handed_over_one_at_a_time_are_committed_within_a_batch_wait_and_all_at_close() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        let writer = open_writer(dir.path(), 0, Courtesy::default()).unwrap();
        (1..=10).for_each(|n| writer.push(vec![row(n)]));
        let deadline = Instant::now() + Duration::from_secs(20);
        while committed(&path).len() < 10 {
            assert!(Instant::now() < deadline, "rows not committed");
            std::thread::sleep(Duration::from_millis(10));
        }
        let last = BATCH_ROWS as u64 + 30;
        (11..=last).for_each(|n| writer.push(vec![row(n)]));
        writer.close().unwrap();
        assert_eq!(committed(&path).len(), last as usize);
    }

    /// The writer hands rows over while helpers on three threads and the index's thread
    /// insert them: every row is inserted once, what readers see is always the log's
    /// first rows (a prefix, as a kill must leave it), the thread's checkpoints keep the
    /// WAL far below the rows' size, and the index ends as one fed by its thread alone.
    #[test]
    fn helpers_and_the_thread_insert_every_row_once_in_order_with_the_wal_bounded() {
        let total = 3 * CHECKPOINT_ROWS as u64;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        let writer = open_writer(dir.path(), 0, Courtesy::default()).unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let helpers: Vec<_> = (0..3)
            .map(|_| {
                let (feed, stop) = (writer.feed(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        feed.help();
                        std::thread::yield_now();
                    }
                })
            })
            .collect();
        let reader = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        // The WAL's largest size in each third of the rows.
        let mut largest_wal = [0; 3];
        let mut next = 1;
        while next <= total {
            let last = (next + 200).min(total);
            writer.push((next..=last).map(row).collect());
            next = last + 1;
            let (count, max): (i64, i64) = reader
                .query_row(
                    "SELECT COUNT(*), COALESCE(MAX(number), 0) FROM llm_calls",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            assert_eq!(count, max, "the index is not a prefix of the log");
            let wal = std::fs::metadata(dir.path().join(format!("{INDEX_FILE}-wal")));
            let third = &mut largest_wal[((next - 2) * 3 / total) as usize];
            *third = (*third).max(wal.map_or(0, |m| m.len()));
        }
        stop.store(true, Ordering::Relaxed);
        helpers.into_iter().for_each(|h| h.join().unwrap());
        writer.close().unwrap();
        drop(reader);

        let alone_dir = tempfile::tempdir().unwrap();
        let alone = open_writer(alone_dir.path(), 0, Courtesy::default()).unwrap();
        alone.push((1..=total).map(row).collect());
        alone.close().unwrap();
        let rows = committed(&path);
        assert_eq!(rows.len(), total as usize);
        assert_eq!(rows, committed(&alone_dir.path().join(INDEX_FILE)));
        // Without checkpoints the WAL grows with the rows, to three times its first
        // third's size in the last; checkpointed, it is written again from its start.
        let [first, _, last] = largest_wal;
        assert!(
            first > 0 && last < first * 2,
            "the WAL grew from {first} to {last} bytes"
        );
    }
}

//! Who inserts the calls index's rows, and when.
//!
//! The writer hands each batch's rows, numbered, to a queue. The index's own thread takes
//! the queue whole when a batch has gathered (the first row, then up to [`BATCH_WAIT`] or
//! [`BATCH_ROWS`]), inserts and commits it. No caller waits on any of it.
//!
//! On a busy gateway, the threads serving calls also take rows, a statement's worth at a
//! time, between two calls ([`IndexFeed::help`]): woken for its batch, the index's thread
//! took a core from them for the whole batch, and that made the calls' tail latency
//! (docs/performance.md, *What stalls the lanes*). A helper never waits: it inserts only
//! when the connection is free (the index's thread or another lane holds it otherwise),
//! rows wait, and SQLite's write lock is free. It commits once the open transaction holds
//! [`COMMIT_ROWS`]. Rows are taken from the queue's front by whoever holds the
//! connection, so they are inserted in number order and a killed process leaves the index
//! a prefix of the log, caught up from the log when it is opened again.
//!
//! The WAL's checkpoint (its pages copied into the database file, which is synced) is the
//! index's thread's: once the feed is [`QUIET`], and after [`CHECKPOINT_ROWS`] for a feed
//! that never is. It is what is left of the index in a busy gateway's tail latency (run
//! on this thread, not on a lane, it still lengthened the lanes' p99 by a fifth to a
//! half), so it waits for a pause when there is one. So is the write after it, which
//! starts the WAL again from its beginning and syncs its header: the helpers leave the
//! rows to the thread until it has made it.

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

/// Room for rows the queue and the thread's buffer keep between two batches: a backlog
/// (the index locked by another process, say) does not pin its size for good.
const KEPT_ROWS: usize = 4 * BATCH_ROWS;

/// The most rows a transaction opened by the threads serving calls holds before one of
/// them commits it (the index's thread commits at each batch it takes).
const COMMIT_ROWS: usize = 512;

/// How long no row comes before the feed is quiet and its WAL checkpointed. SQLite's own
/// checkpoint (at each commit past 1,000 pages) is off on this connection, so that no
/// commit, and so no thread serving calls, runs one.
const QUIET: Duration = Duration::from_millis(250);

/// The most rows inserted between two checkpoints, for a feed never quiet: a WAL of about
/// 7 MB (some 430 bytes of WAL a row, each commit writing its pages again), near SQLite's
/// own 1,000 pages. Rarer, larger checkpoints stalled the busy lanes longer.
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
    /// [`CHECKPOINT_ROWS`] (fewer in tests).
    checkpoint_rows: usize,
}

/// What the index's thread waited for.
enum Waited {
    /// A batch gathered (or helpers took rows, or the close came: `closed`).
    Batch { closed: bool },
    /// No row for [`QUIET`].
    Quiet,
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
    /// The WAL was checkpointed whole while the feed was quiet: its next write starts it
    /// again and syncs its header, and that is the index's thread's to make, so helpers
    /// insert nothing until it has.
    restart_pending: bool,
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
        let feed =
            Feed::new(inserter, path.clone()).map_err(|e| super::index::db_error(&path, e))?;
        IndexWriter::spawn(feed, courtesy, set_aside)
    }

    fn spawn(
        feed: Feed,
        courtesy: Courtesy,
        set_aside: Vec<super::read::SetAside>,
    ) -> crate::error::Result<IndexWriter> {
        let feed = Arc::new(feed);
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
        let Some(inserting) = inserting.as_mut().filter(|i| !i.restart_pending) else {
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
    /// The feed of `inserter`'s connection. From here no commit checkpoints the WAL (the
    /// index's thread does), and a busy write lock is not waited for: the threads serving
    /// calls insert through this connection.
    fn new(inserter: Inserter, path: PathBuf) -> rusqlite::Result<Feed> {
        let conn = inserter.conn();
        conn.execute_batch("PRAGMA wal_autocheckpoint=0;")?;
        conn.busy_timeout(Duration::ZERO)?;
        Ok(Feed {
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
            queued: AtomicUsize::new(0),
            inserting: Mutex::new(Some(Inserting {
                inserter,
                taken: Vec::new(),
                since_checkpoint: 0,
                restart_pending: false,
            })),
            failure: Mutex::new(None),
            path,
            checkpoint_rows: CHECKPOINT_ROWS,
        })
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

    /// Moves every queued row into `taken`, for the index's thread. The queue gives back
    /// the room a backlog made it take (past [`KEPT_ROWS`]).
    fn take_all(&self, taken: &mut Vec<IndexRow>) {
        let mut queue = self.lock_queue();
        taken.extend(queue.rows.drain(..));
        queue.rows.shrink_to(KEPT_ROWS);
        self.queued.store(0, Ordering::Relaxed);
        queue.helped = false;
    }

    /// Inserts the rows taken; rows refused because another connection writes go back to
    /// the queue's front, for later. `true` when rows went in.
    fn insert(&self, inserting: &mut Inserting, courtesy: &Courtesy) -> bool {
        let taken = &mut inserting.taken;
        let inserted = !taken.is_empty();
        match inserting.inserter.insert(taken, courtesy) {
            Ok(()) => inserting.since_checkpoint += taken.len(),
            Err(Refused::Busy(_)) => {
                let mut queue = self.lock_queue();
                for row in taken.drain(..).rev() {
                    queue.rows.push_front(row);
                }
                self.queued.store(queue.rows.len(), Ordering::Relaxed);
                return false;
            }
            Err(Refused::Failed(e)) => {
                self.failed("insert rows", &e);
                taken.clear();
                return false;
            }
        }
        taken.clear();
        inserted
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

    /// The index's thread: a batch at a time until the close, then what is left, and a
    /// checkpoint when the feed is quiet; gives the first failure.
    fn run(&self, courtesy: &Courtesy) -> Option<String> {
        let mut quiet_checkpoint = false;
        loop {
            let waited = self.wait(quiet_checkpoint);
            crate::internal::placement::keep_off_lanes();
            let mut slot = self.lock_inserting();
            if let Some(inserting) = slot.as_mut() {
                let _ = inserting.inserter.conn().busy_timeout(BUSY_WAIT);
                match waited {
                    Waited::Quiet => self.quiet(inserting),
                    Waited::Batch { .. } => self.batch(inserting, courtesy),
                }
                let _ = inserting.inserter.conn().busy_timeout(Duration::ZERO);
                // Once per quiet spell: a reader holding the WAL waits for the next.
                quiet_checkpoint =
                    inserting.since_checkpoint > 0 && !matches!(waited, Waited::Quiet);
            }
            if let Waited::Batch { closed: true } = waited {
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

    /// Takes every queued row, inserts and commits them (with what helpers left open).
    /// Past [`CHECKPOINT_ROWS`] the checkpoint comes first, so that this batch's commit is
    /// the WAL's first write after it.
    fn batch(&self, inserting: &mut Inserting, courtesy: &Courtesy) {
        self.take_all(&mut inserting.taken);
        if inserting.since_checkpoint >= self.checkpoint_rows && !inserting.taken.is_empty() {
            self.commit(inserting);
            self.checkpoint(inserting);
        }
        if self.insert(inserting, courtesy) {
            inserting.restart_pending = false;
        }
        inserting.taken.shrink_to(KEPT_ROWS);
        self.commit(inserting);
    }

    /// The feed is quiet: checkpoints, and keeps the WAL's restart for the next batch.
    fn quiet(&self, inserting: &mut Inserting) {
        self.commit(inserting);
        if self.checkpoint(inserting) {
            inserting.restart_pending = true;
        }
    }

    /// Waits for a batch's first row, then for the batch to gather; with
    /// `quiet_checkpoint`, for at most [`QUIET`] before the first row.
    fn wait(&self, quiet_checkpoint: bool) -> Waited {
        let mut queue = self.lock_queue();
        while queue.rows.is_empty() && !queue.helped && !queue.closed {
            queue.idle = true;
            if !quiet_checkpoint {
                queue = self.ready.wait(queue).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            let (back, waited) = self
                .ready
                .wait_timeout(queue, QUIET)
                .unwrap_or_else(|p| p.into_inner());
            queue = back;
            if waited.timed_out() && queue.rows.is_empty() && !queue.helped && !queue.closed {
                queue.idle = false;
                return Waited::Quiet;
            }
        }
        queue.idle = false;
        let (queue, _) = self
            .ready
            .wait_timeout_while(queue, BATCH_WAIT, |q| {
                q.rows.len() < BATCH_ROWS && !q.closed
            })
            .unwrap_or_else(|p| p.into_inner());
        // The close comes after the writer's last rows, which are taken with it.
        Waited::Batch {
            closed: queue.closed,
        }
    }

    /// Copies the WAL's pages into the database, and waits (at most [`RESTART_WAIT`]) for
    /// readers to be done with the WAL, so that the next commit writes it again from its
    /// start. A reader that holds on makes the WAL grow until a later checkpoint.
    /// `true` when the WAL was checkpointed whole.
    fn checkpoint(&self, inserting: &mut Inserting) -> bool {
        let conn = inserting.inserter.conn();
        let _ = conn.busy_timeout(RESTART_WAIT);
        let done = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get::<_, i64>(0));
        let _ = conn.busy_timeout(BUSY_WAIT);
        match done {
            Ok(0) => {
                inserting.since_checkpoint = 0;
                true
            }
            Ok(_) => false, // a reader held on: again later
            Err(e) => {
                self.failed("checkpoint its WAL", &e);
                false
            }
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

    /// The feed of a new index at `path`, its thread not started.
    fn new_feed(path: &std::path::Path) -> Feed {
        Feed::new(Inserter::new(open(path).unwrap()), path.to_path_buf()).unwrap()
    }

    /// A feed with no thread of its own, so that only the test inserts, on a new index in
    /// a directory of its own (kept while the directory lives).
    fn feed() -> (tempfile::TempDir, PathBuf, IndexFeed) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        let feed = IndexFeed(Arc::new(new_feed(&path)));
        (dir, path, feed)
    }

    /// The bytes of the database file and of its WAL.
    fn sizes(path: &std::path::Path) -> (u64, u64) {
        let size = |p: std::path::PathBuf| std::fs::metadata(p).map_or(0, |m| m.len());
        (
            size(path.to_path_buf()),
            size(path.with_extension("sqlite-wal")),
        )
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
        let (_dir, path, feed) = feed();
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
        let (_dir, path, feed) = feed();
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
        let (_dir, _, feed) = feed();
        push(&feed, 1..=16);
        feed.help();
        assert!(queued(&feed).is_empty());
        let (done, waited) = std::sync::mpsc::channel();
        let thread = feed.clone();
        std::thread::spawn(move || {
            let batch = matches!(thread.0.wait(false), Waited::Batch { closed: false });
            done.send(batch).unwrap()
        });
        assert_eq!(waited.recv_timeout(Duration::from_secs(20)), Ok(true));
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

    /// Once the feed is quiet, the thread checkpoints the WAL (the rows reach the database
    /// file) and keeps its restart for itself: helpers insert nothing until its next
    /// batch has written, then help again.
    #[test]
    fn a_quiet_feed_is_checkpointed_and_its_next_write_is_the_threads() {
        let (_dir, path, feed) = feed();
        push(&feed, 1..=2000);
        while !queued(&feed).is_empty() {
            feed.help();
        }
        let mut slot = feed.0.lock_inserting();
        let inserting = slot.as_mut().unwrap();
        feed.0.commit(inserting);
        let (database, wal) = sizes(&path);
        assert!(wal > 2000 * 100, "the WAL holds the rows: {wal} bytes");
        feed.0.quiet(inserting);
        assert!(inserting.restart_pending);
        assert!(sizes(&path).0 > database + 2000 * 100, "checkpointed");
        drop(slot);
        push(&feed, 2001..=2032);
        feed.help();
        assert_eq!(
            queued(&feed).len(),
            32,
            "a helper waits for the thread's write"
        );
        let mut slot = feed.0.lock_inserting();
        feed.0.batch(slot.as_mut().unwrap(), &Courtesy::default());
        assert!(!slot.as_ref().unwrap().restart_pending);
        drop(slot);
        push(&feed, 2033..=2048);
        feed.help();
        assert!(queued(&feed).is_empty());
        assert_eq!(committed(&path).len(), 2032);
    }

    /// The same with the thread: rows handed over, then nothing; within the quiet wait the
    /// WAL is checkpointed without a close.
    #[test]
    fn the_thread_checkpoints_once_the_feed_is_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        let writer = open_writer(dir.path(), 0, Courtesy::default()).unwrap();
        let (empty, _) = sizes(&path);
        writer.push((1..=2000).map(row).collect());
        let deadline = Instant::now() + Duration::from_secs(20);
        while sizes(&path).0 < empty + 2000 * 100 {
            assert!(Instant::now() < deadline, "not checkpointed");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(committed(&path).len(), 2000);
        writer.close().unwrap();
    }

    /// The writer hands rows over without a pause while helpers on three threads and the
    /// index's thread insert them: every row is inserted once, what readers see is always
    /// the log's first rows (a prefix, as a kill must leave it), the checkpoints every
    /// `checkpoint_rows` keep the WAL from growing with the rows, and the index ends as
    /// one fed by its thread alone.
    #[test]
    fn helpers_and_the_thread_insert_every_row_once_in_order_with_the_wal_bounded() {
        let every = 16_384;
        let total = 3 * every as u64;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        let mut feed = new_feed(&path);
        feed.checkpoint_rows = every;
        let writer = IndexWriter::spawn(feed, Courtesy::default(), Vec::new()).unwrap();
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
            let third = &mut largest_wal[((next - 2) * 3 / total) as usize];
            *third = (*third).max(sizes(&path).1);
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

//! The recorder: numbers finished calls, appends each record to the call log, and feeds
//! the calls index.
//!
//! One writer thread takes finished calls from a channel in the order they finished,
//! gives each the next number and appends it as one line to the current segment
//! (`llm_log/segment-NNNNNN.jsonl`). A record comes whole, and the writer completes and
//! serialises it, or already serialised by the thread its call ended on (`prepare.rs`;
//! the gateway's lanes), and the writer only numbers its line. Records that queued up
//! while it wrote are written together, in one `write` (group commit). A call's future waits until its line is
//! written before it returns, so a call the program saw finish is on disk; lines are
//! appended in number order by one thread, so a `kill -9` leaves a gap-free prefix, and
//! a line cut short (a write interrupted by the kill) has no newline and is not a record
//! to any reader. The SQLite index is fed from there by a second thread, in batched
//! transactions, off every caller's path.

use super::index::{open_writer, IndexFeed, IndexWriter};
use super::index_row::IndexRow;
use super::prepare::{PreparedRecord, RawReply};
use super::read::{last_record, log_dir};
use super::run_dir::RUN_FILE;
use super::segment::{self, Location, SEGMENT_BYTES};
use super::{CallRecord, RunInfo};
use crate::error::{Error, Result};
use crate::internal::background::Courtesy;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// How hard a record is pushed to disk before the call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Written to the segment: survives the process being killed (the operating system
    /// holds the data), not a power cut. The default.
    #[default]
    Process,
    /// Also `fsync`ed (the segment, and the folder when a segment is created) before the
    /// call returns: survives a power cut, at the cost of a disk flush per batch of
    /// records.
    Disk,
}

/// How to open a run directory.
#[derive(Debug, Clone, Default)]
pub struct RecorderOptions {
    /// Append to a directory that already holds a run (`--resume`).
    pub resume: bool,
    /// How hard records are pushed to disk.
    pub durability: Durability,
    /// Whether the writer and index threads yield to calls between two records: for a
    /// program whose calls do not wait for their records (the gateway); off by default.
    pub courtesy: Courtesy,
    /// The response cache's entries, to which the writer adds each record that answers a
    /// cache key as it writes it (with where it lies).
    pub cache: Option<Arc<crate::cache::CacheIndex>>,
}

type Ack = tokio::sync::oneshot::Sender<std::result::Result<u64, String>>;

/// Records handed over together, acknowledged together.
struct Job {
    entries: Vec<Entry>,
    ack: Ack,
}

// Unboxed: prepared records are the gateway's every call, and a box would cost each one an
// allocation; a batch's entries are moved, not copied, on the way.
#[allow(clippy::large_enum_variant)]
enum Entry {
    /// A record still to complete and serialise, with the reply's raw bytes (the
    /// library's own calls: the writer thread does it, off the caller's path).
    Record {
        record: Box<CallRecord>,
        raw: Option<bytes::Bytes>,
    },
    /// A record its caller prepared (the gateway's lanes), or why it could not be.
    Prepared(std::result::Result<PreparedRecord, String>),
}

/// Records the calls of one run into its directory. Share it (`Arc`) between handles.
pub struct Recorder {
    dir: PathBuf,
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<Option<String>>>>,
    failure: Mutex<Failures>,
    /// The log's lines set aside as unreadable (see `quarantine.rs`) when it was opened.
    quarantined: u64,
    /// Whether the writer feeds a response cache (a prepared record brings its entry).
    feeds_cache: bool,
    /// The calls index's feed, which the threads serving calls help ([`Recorder::help_index`]).
    index_feed: IndexFeed,
}

/// The recording failures of a run: the first one, kept for [`Recorder::failure`], and
/// how often they are logged. Every call of a failing batch fails the same way, and a full
/// disk fails every batch after it: one line per call would flood the log (often on the
/// very disk that is full), so a failure is logged at most once per [`FAILURE_LOG_EVERY`],
/// with the count of those not logged since.
#[derive(Default)]
struct Failures {
    first: Option<String>,
    logged_at: Option<std::time::Instant>,
    unlogged: u64,
}

/// How often a recording failure goes on being logged while recording fails.
const FAILURE_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("dir", &self.dir).finish()
    }
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Config(format!("recording: cannot {what} {}: {e}", path.display()))
}

impl Recorder {
    /// Opens `dir` for a new run (refused when it already holds one, unless
    /// `options.resume`), writes `run.yaml` and starts the writer threads.
    pub fn create(dir: &Path, run: &RunInfo, options: RecorderOptions) -> Result<Arc<Recorder>> {
        let log = log_dir(dir);
        let run_file = dir.join(RUN_FILE);
        if segment::holds_format_1(&log) {
            return Err(Error::Config(format!(
                "{} holds records of format 1 (one file per call); this version writes format {}: name another directory with --log",
                log.display(),
                super::FORMAT
            )));
        }
        let (last, mut set_aside) = last_record(&log)?;
        let holds_run = run_file.exists() || last.is_some();
        if holds_run && !options.resume {
            return Err(Error::Config(format!(
                "{} already holds a run ({} recorded calls); pass --resume to append to it, or name another directory with --log",
                dir.display(),
                last.map_or(0, |(n, _)| n)
            )));
        }
        std::fs::create_dir_all(&log).map_err(|e| io_error("create", &log, e))?;
        if !run_file.exists() {
            let text = serde_yaml_ng::to_string(&run.to_value())
                .map_err(|e| Error::Config(format!("recording: cannot write run.yaml: {e}")))?;
            write_atomic(&run_file, text.as_bytes(), options.durability)
                .map_err(|e| io_error("write", &run_file, e))?;
        }
        let next = last.map_or(0, |(n, _)| n) + 1;
        let segments = SegmentWriter::open(&log, options.durability)?;
        let index = open_writer(dir, next - 1, options.courtesy.clone())?;
        let index_feed = index.feed();
        // The lines that do not read, found on the way (the log's tail after a killed
        // run, a whole log without an index): listed and counted, never fatal.
        set_aside.extend(index.set_aside.iter().cloned());
        set_aside.sort_by_key(|s| (s.at.segment, s.at.offset));
        let quarantined = super::quarantine::keep(dir, &set_aside);
        let courtesy = options.courtesy;
        let cache = options.cache;
        let feeds_cache = cache.is_some();
        let (tx, rx) = mpsc::channel::<Job>();
        let failure = Mutex::new(Failures::default());
        let thread = std::thread::Builder::new()
            .name("switchyard-recorder".into())
            .spawn(move || writer_loop(rx, segments, next, index, &courtesy, cache))
            .map_err(|e| Error::Config(format!("recording: cannot start the writer: {e}")))?;
        Ok(Arc::new(Recorder {
            dir: dir.to_path_buf(),
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            failure,
            quarantined,
            feeds_cache,
            index_feed,
        }))
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many lines of the log are set aside as unreadable (listed in
    /// `quarantine/set-aside.jsonl`), as found when the recorder opened it.
    pub fn quarantined(&self) -> u64 {
        self.quarantined
    }

    fn send(&self, job: Job) -> bool {
        let guard = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        match guard.as_ref() {
            Some(tx) => tx.send(job).is_ok(),
            None => false,
        }
    }

    fn note_failure(&self, message: String) {
        let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        let due = f
            .logged_at
            .is_none_or(|at| now.duration_since(at) >= FAILURE_LOG_EVERY);
        if due {
            match std::mem::take(&mut f.unlogged) {
                0 => tracing::error!("{message}"),
                n => tracing::error!(
                    "{message} ({n} more recording failures since the last one logged)"
                ),
            }
            f.logged_at = Some(now);
        } else {
            f.unlogged += 1;
        }
        f.first.get_or_insert(message);
    }

    /// Records a finished call and waits until its record is in place; gives its number.
    /// A recording failure does not fail the call: it is logged and reported by
    /// [`Recorder::close`].
    pub async fn record(self: &Arc<Self>, record: CallRecord) -> Option<u64> {
        self.submit(record).await
    }

    /// Queues a finished call's record now and gives a future that waits for it to be
    /// in place (dropping the future does not unqueue the record).
    pub fn submit(
        self: &Arc<Self>,
        record: CallRecord,
    ) -> futures::future::BoxFuture<'static, Option<u64>> {
        self.submit_draft(record, None)
    }

    /// As [`Recorder::submit`], with the reply's raw bytes still to be written into the
    /// record by the writer thread.
    pub(crate) fn submit_draft(
        self: &Arc<Self>,
        record: CallRecord,
        raw: Option<bytes::Bytes>,
    ) -> futures::future::BoxFuture<'static, Option<u64>> {
        self.submit_entries(vec![Entry::Record {
            record: Box::new(record),
            raw,
        }])
    }

    /// Queues several finished calls' records at once, numbered in the order given, and
    /// gives a future that waits until they are all in place; it gives the last one's
    /// number, or `None` when any of them could not be recorded (reported as for
    /// [`Recorder::submit`]). One hand-over for the lot: a caller that collects finished
    /// calls (the gateway's store) wakes the writer once per batch, not once per call.
    pub fn submit_many(
        self: &Arc<Self>,
        records: Vec<CallRecord>,
    ) -> futures::future::BoxFuture<'static, Option<u64>> {
        let entries = records
            .into_iter()
            .map(|record| Entry::Record {
                record: Box::new(record),
                raw: None,
            })
            .collect();
        self.submit_entries(entries)
    }

    /// Completes and serialises a finished call's record on the calling thread, for
    /// [`Recorder::submit_prepared`]: the writer is left to number the line and write it.
    /// The reply's raw bytes may be given apart (`raw`): a record of format 3 then writes
    /// them after its line as they are (format 4), without copying them into the record.
    /// The error says why the record cannot be written (it is reported as such when
    /// submitted).
    pub fn prepare(
        &self,
        record: CallRecord,
        raw: Option<RawReply>,
    ) -> std::result::Result<PreparedRecord, String> {
        PreparedRecord::new(record, raw, self.feeds_cache)
    }

    /// Inserts a statement's worth of the calls index's waiting rows, when they wait and
    /// nothing else is inserting them; never waits (`record/index_feed.rs`). For a busy
    /// program's threads serving calls, between two calls (the gateway's lanes).
    pub fn help_index(&self) {
        self.index_feed.help();
    }

    /// As [`Recorder::submit_many`], for records already prepared ([`Recorder::prepare`]).
    pub fn submit_prepared(
        self: &Arc<Self>,
        records: Vec<std::result::Result<PreparedRecord, String>>,
    ) -> futures::future::BoxFuture<'static, Option<u64>> {
        self.submit_entries(records.into_iter().map(Entry::Prepared).collect())
    }

    fn submit_entries(
        self: &Arc<Self>,
        entries: Vec<Entry>,
    ) -> futures::future::BoxFuture<'static, Option<u64>> {
        let (ack, done) = tokio::sync::oneshot::channel();
        let sent = self.send(Job { entries, ack });
        let this = self.clone();
        Box::pin(async move {
            if !sent {
                this.note_failure(format!(
                    "recording into {}: the recorder is closed; a call was not recorded",
                    this.dir.display()
                ));
                return None;
            }
            match done.await {
                Ok(Ok(n)) => Some(n),
                Ok(Err(message)) => {
                    this.note_failure(message);
                    None
                }
                Err(_) => {
                    this.note_failure("recording: the writer stopped".to_string());
                    None
                }
            }
        })
    }

    /// The first recording failure so far (a write refused by a full disk, a record
    /// that could not be serialised…), as logged; `None` while every record was written.
    pub fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .first
            .clone()
    }

    /// Writes every pending record and the index, and stops the threads. Reports the
    /// first recording failure of the run, if any. Calls recorded after this are lost
    /// (and reported).
    pub fn close(&self) -> Result<()> {
        drop(self.tx.lock().unwrap_or_else(|p| p.into_inner()).take());
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = thread {
            match t.join() {
                Ok(Some(message)) => self.note_failure(message),
                Ok(None) => {}
                Err(_) => self.note_failure("recording: the writer thread panicked".into()),
            }
        }
        match self.failure() {
            Some(m) => Err(Error::Config(m)),
            None => Ok(()),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Appends record lines to the log's segments.
struct SegmentWriter {
    log: PathBuf,
    segment: u32,
    file: std::fs::File,
    len: u64,
    durability: Durability,
}

impl SegmentWriter {
    /// Opens the last segment for appending (creating the first), truncating a line cut
    /// short at its end (a write interrupted by a kill or a power cut: not a record).
    fn open(log: &Path, durability: Durability) -> Result<SegmentWriter> {
        let segment = segment::segment_ids(log)?.last().copied().unwrap_or(1);
        let path = segment::segment_path(log, segment);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| io_error("open", &path, e))?;
        let bytes = std::fs::read(&path).map_err(|e| io_error("read", &path, e))?;
        let len = segment::complete_len(&bytes);
        if len < bytes.len() as u64 {
            tracing::warn!(
                "{}: dropping {} bytes of a record line cut short at its end",
                path.display(),
                bytes.len() as u64 - len
            );
            file.set_len(len)
                .map_err(|e| io_error("truncate", &path, e))?;
        }
        if durability == Durability::Disk {
            sync_dir(log);
        }
        Ok(SegmentWriter {
            log: log.to_path_buf(),
            segment,
            file,
            len,
            durability,
        })
    }

    /// Appends `lines` (whole lines) in one write; gives the segment and the offset they
    /// start at. A failed write is cut off again, so no partial line stays.
    fn append(&mut self, lines: &[u8]) -> std::io::Result<(u32, u64)> {
        if self.len >= SEGMENT_BYTES {
            let next = self.segment + 1;
            let path = segment::segment_path(&self.log, next);
            self.file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            self.segment = next;
            self.len = 0;
            if self.durability == Durability::Disk {
                sync_dir(&self.log);
            }
        }
        let at = self.len;
        if let Err(e) = self.file.write_all(lines) {
            let _ = self.file.set_len(at);
            return Err(e);
        }
        if self.durability == Durability::Disk {
            self.file.sync_data()?;
        }
        self.len += lines.len() as u64;
        Ok((self.segment, at))
    }

    fn path(&self) -> PathBuf {
        segment::segment_path(&self.log, self.segment)
    }
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// A record serialised into the batch, waiting for the batch's write.
struct Pending {
    row: IndexRow,
    start: usize,
    len: usize,
    /// The cache entry the record makes, when the recorder feeds a cache.
    entry: Option<(String, crate::cache::Entry)>,
}

/// A job whose records are serialised into the batch: its ack, the number of its last
/// record, and the first failure among its records.
struct JobState {
    ack: Ack,
    last: Option<u64>,
    failure: Option<String>,
}

impl JobState {
    fn answer(self, written: std::result::Result<(), &str>) {
        let _ = self.ack.send(match (written, self.failure, self.last) {
            (Err(m), _, _) => Err(m.to_string()),
            (Ok(()), Some(m), _) => Err(m),
            (Ok(()), None, Some(n)) => Ok(n),
            (Ok(()), None, None) => Err("recording: a batch of no records".to_string()),
        });
    }
}

/// Records taken in one batch at most (one `write`).
const BATCH_RECORDS: usize = 256;

/// The room the writer's buffer starts with, and goes back to after a batch that grew it
/// past [`BUF_MOST_KEPT`].
const BUF_KEPT: usize = 256 * 1024;

/// The most room the writer's buffer keeps between two batches: a full batch of ordinary
/// calls (256 records of a few KB) fits, so a busy store reuses its buffer batch after
/// batch; a batch of large records (long prompts, long replies) does not pin its room for
/// the process's life.
const BUF_MOST_KEPT: usize = 4 * 1024 * 1024;

fn writer_loop(
    rx: mpsc::Receiver<Job>,
    mut segments: SegmentWriter,
    mut next: u64,
    index: IndexWriter,
    courtesy: &Courtesy,
    cache: Option<Arc<crate::cache::CacheIndex>>,
) -> Option<String> {
    let mut failure = None;
    let mut buf = Vec::with_capacity(BUF_KEPT);
    while let Ok(first) = rx.recv() {
        crate::internal::placement::keep_off_lanes();
        let mut batch = vec![first];
        let mut records = batch[0].entries.len();
        while records < BATCH_RECORDS {
            match rx.try_recv() {
                Ok(j) => {
                    records += j.entries.len();
                    batch.push(j);
                }
                Err(_) => break,
            }
        }
        buf.clear();
        let mut pending: Vec<Pending> = Vec::with_capacity(records);
        let mut jobs: Vec<JobState> = Vec::with_capacity(batch.len());
        for job in batch {
            let mut state = JobState {
                ack: job.ack,
                last: None,
                failure: None,
            };
            for entry in job.entries {
                let number = next + pending.len() as u64;
                let prepared = match entry {
                    Entry::Record { record, raw } => {
                        courtesy.give_way();
                        PreparedRecord::new(*record, raw.map(RawReply::from), cache.is_some())
                    }
                    Entry::Prepared(prepared) => prepared,
                };
                match prepared {
                    Ok(prepared) => {
                        let start = buf.len();
                        let (row, entry) = prepared.place(&mut buf, number);
                        let len = buf.len() - start;
                        buf.push(b'\n');
                        pending.push(Pending {
                            row,
                            start,
                            len,
                            entry,
                        });
                        state.last = Some(number);
                    }
                    Err(e) => {
                        let m = format!("recording: cannot serialise call {number}: {e}");
                        failure.get_or_insert_with(|| m.clone());
                        state.failure.get_or_insert(m);
                    }
                }
            }
            jobs.push(state);
        }
        if pending.is_empty() {
            jobs.into_iter().for_each(|j| j.answer(Ok(())));
            continue;
        }
        let appended = segments.append(&buf);
        if buf.capacity() > BUF_MOST_KEPT {
            buf = Vec::with_capacity(BUF_KEPT);
        }
        match appended {
            Ok((segment, offset)) => {
                next += pending.len() as u64;
                let rows = pending
                    .into_iter()
                    .map(|p| {
                        let mut row = p.row;
                        let at = Location {
                            segment,
                            offset: offset + p.start as u64,
                            len: p.len as u32,
                        };
                        row.set_location(at);
                        if let (Some(cache), Some((key, mut entry))) = (&cache, p.entry) {
                            entry.location = Some(at);
                            cache.add(key, entry);
                        }
                        row
                    })
                    .collect();
                index.push(rows);
                jobs.into_iter().for_each(|j| j.answer(Ok(())));
            }
            Err(e) => {
                let m = format!(
                    "recording: cannot write {} call record{} to {}: {e}",
                    pending.len(),
                    if pending.len() == 1 { "" } else { "s" },
                    segments.path().display()
                );
                failure.get_or_insert_with(|| m.clone());
                jobs.into_iter().for_each(|j| j.answer(Err(&m)));
            }
        }
    }
    if let Err(m) = index.close() {
        failure.get_or_insert(m);
    }
    failure
}

/// Writes `path` whole or not at all: a temporary file beside it, then a rename.
pub(crate) fn write_atomic(
    path: &Path,
    bytes: &[u8],
    durability: Durability,
) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        if durability == Durability::Disk {
            f.sync_data()?;
        }
    }
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::record::{first_too_deep, read_record, read_records, CallRecord, MAX_RECORD_DEPTH};
    use serde_json::Value;

    /// A record as the recorder wrote it (the example run's first call).
    pub(crate) fn sample() -> CallRecord {
        let segment =
            include_str!("../../../../examples/runs/mock_campaign/llm_log/segment-000001.jsonl");
        super::super::parse_record_line(segment.lines().next().unwrap().as_bytes()).unwrap()
    }

    fn nested(levels: usize) -> Value {
        (0..levels).fold(Value::from(7), |v, _| Value::Array(vec![v]))
    }

    /// A key in the reference or the model is redacted from the line and the index row:
    /// a plain key found in the line, and one with a quote (escaped in the line, so not
    /// found there) searched for in the row's strings themselves.
    #[cfg(feature = "sqlite")]
    #[test]
    fn a_key_in_the_reference_or_model_is_in_neither_the_line_nor_the_row() {
        use crate::internal::redact::{register, MARKER};
        let plain = "sk-writer-row-test-0123456789";
        let quoted = "sk-writer\"row-test-0123456789";
        register(plain, "a test key");
        register(quoted, "a test key");
        let dir = tempfile::tempdir().unwrap();
        let recorder =
            Recorder::create(dir.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
        for (reference, model) in [
            (format!("b/{plain}"), "m".to_string()),
            ("b/m".to_string(), format!("x{quoted}")),
            ("b/m".to_string(), "m".to_string()),
        ] {
            let mut r = sample();
            r.reference = reference;
            r.model = model;
            assert!(futures::executor::block_on(recorder.record(r)).is_some());
        }
        recorder.close().unwrap();
        let conn = rusqlite::Connection::open(dir.path().join(super::super::INDEX_FILE)).unwrap();
        let mut stmt = conn
            .prepare("SELECT reference, model FROM llm_calls ORDER BY number")
            .unwrap();
        let rows: Vec<(String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            rows,
            [
                (format!("b/{MARKER}"), "m".to_string()),
                ("b/m".to_string(), format!("x{MARKER}")),
                ("b/m".to_string(), "m".to_string()),
            ]
        );
        assert_eq!(
            read_record(dir.path(), 1).unwrap().reference,
            format!("b/{MARKER}")
        );
    }

    #[test]
    fn a_record_nested_past_the_bound_is_written_with_its_deepest_values_as_text() {
        let dir = tempfile::tempdir().unwrap();
        let recorder =
            Recorder::create(dir.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
        // A usage object no bound held (an upstream's), and a shallow one.
        let mut deep = sample();
        deep.usage_reported = Some(serde_json::json!({"n": nested(300)}));
        let shallow = sample();
        for r in [deep, shallow] {
            assert!(futures::executor::block_on(recorder.record(r)).is_some());
        }
        recorder.close().unwrap();
        let mut lines = Vec::new();
        crate::record::for_each_record_line(dir.path(), |_, l| {
            lines.push(l.to_vec());
            Ok(())
        })
        .unwrap();
        assert!(lines
            .iter()
            .all(|l| first_too_deep(l, MAX_RECORD_DEPTH).is_none()));
        let back = read_record(dir.path(), 1).unwrap();
        assert!(back.depth_capped);
        // Down to the bound as it was, then the rest as its JSON text: nothing lost.
        let mut at = &back.usage_reported.unwrap()["n"];
        let mut levels = 0;
        while let Value::Array(inner) = at {
            at = &inner[0];
            levels += 1;
        }
        // The record is level 1, `usage_reported` 2, `n` 3.
        assert_eq!(levels, MAX_RECORD_DEPTH - 2);
        let rest: Value =
            crate::record::from_slice_bounded(at.as_str().unwrap().as_bytes(), MAX_RECORD_DEPTH)
                .unwrap();
        assert_eq!(rest, nested(300 - levels));
        assert!(!read_record(dir.path(), 2).unwrap().depth_capped);
        assert_eq!(read_records(dir.path()).unwrap().len(), 2);
    }
}

//! The recorder: numbers finished calls, writes each record atomically, and feeds the
//! calls index.
//!
//! One writer thread takes finished calls from a channel in the order they finished,
//! gives each the next number, writes it to a temporary file and renames it into place,
//! in number order. A call's future waits for its record before it returns, so a call
//! the program saw finish is on disk; and since records are renamed in number order by
//! one thread, a `kill -9` leaves a gap-free prefix and never a torn file. The SQLite
//! index is fed from there by a second thread, in batched transactions, off every
//! caller's path.

use super::index::{IndexRow, IndexWriter};
use super::read::record_numbers;
use super::run_dir::{LOG_DIR, RUN_FILE};
use super::{CallRecord, RunInfo};
use crate::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// How hard a record is pushed to disk before the call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Written and renamed into place: survives the process being killed (the
    /// operating system holds the data), not a power cut. The default.
    #[default]
    Process,
    /// Also `fsync`ed (file and folder) before the rename is acknowledged: survives a
    /// power cut, at the cost of a disk flush per batch of records.
    Disk,
}

/// How to open a run directory.
#[derive(Debug, Clone, Default)]
pub struct RecorderOptions {
    /// Append to a directory that already holds a run (`--resume`).
    pub resume: bool,
    /// How hard records are pushed to disk.
    pub durability: Durability,
}

type Ack = tokio::sync::oneshot::Sender<std::result::Result<u64, String>>;

struct Job {
    record: Box<CallRecord>,
    /// The reply's raw bytes, still to be put into the record (with the other fields
    /// derived from the call) by the writer thread, off the caller's path.
    raw: Option<bytes::Bytes>,
    ack: Option<Ack>,
}

/// Fills the fields derived from the call: the prompt digest, the parameters, the raw
/// bytes and the usage as the provider reported it.
fn finish_record(record: &mut CallRecord, raw: Option<bytes::Bytes>) {
    if record.prompt_digest.is_empty() {
        record.prompt_digest = super::prompt_digest(&record.request);
    }
    if record.parameters.is_empty() {
        record.parameters = super::parameters(&record.request);
    }
    if let Some(raw) = raw {
        if record.reply.is_some() {
            record.usage_reported = super::reported_usage(&raw, record.stream);
        }
        record.raw = Some(super::RawBytes::new(&raw));
    }
}

/// Records the calls of one run into its directory. Share it (`Arc`) between handles.
pub struct Recorder {
    dir: PathBuf,
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<Option<String>>>>,
    failure: Arc<Mutex<Option<String>>>,
}

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
        let log = dir.join(LOG_DIR);
        let run_file = dir.join(RUN_FILE);
        let existing = record_numbers(dir).unwrap_or_default();
        let holds_run = run_file.exists() || !existing.is_empty();
        if holds_run && !options.resume {
            return Err(Error::Config(format!(
                "{} already holds a run ({} recorded calls); pass --resume to append to it, or name another directory with --log",
                dir.display(),
                existing.len()
            )));
        }
        std::fs::create_dir_all(&log).map_err(|e| io_error("create", &log, e))?;
        // Temporary files of a run that was killed are not records: clear them.
        if let Ok(entries) = std::fs::read_dir(&log) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().ends_with(".tmp") {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        if !run_file.exists() {
            let text = serde_yaml_ng::to_string(&run.to_value())
                .map_err(|e| Error::Config(format!("recording: cannot write run.yaml: {e}")))?;
            write_atomic(&run_file, text.as_bytes(), options.durability)
                .map_err(|e| io_error("write", &run_file, e))?;
        }
        let next = existing.last().copied().unwrap_or(0) + 1;
        let index = IndexWriter::open(dir)?;
        let (tx, rx) = mpsc::channel::<Job>();
        let failure = Arc::new(Mutex::new(None));
        let thread_log = log.clone();
        let durability = options.durability;
        let thread = std::thread::Builder::new()
            .name("switchyard-recorder".into())
            .spawn(move || writer_loop(rx, thread_log, next, durability, index))
            .map_err(|e| Error::Config(format!("recording: cannot start the writer: {e}")))?;
        Ok(Arc::new(Recorder {
            dir: dir.to_path_buf(),
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            failure,
        }))
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn send(&self, job: Job) -> bool {
        let guard = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        match guard.as_ref() {
            Some(tx) => tx.send(job).is_ok(),
            None => false,
        }
    }

    fn note_failure(&self, message: String) {
        tracing::error!("{message}");
        let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert(message);
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
        let (ack, done) = tokio::sync::oneshot::channel();
        let sent = self.send(Job {
            record: Box::new(record),
            raw,
            ack: Some(ack),
        });
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
        match self
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
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

/// The records' file name: the number zero-padded to 8 digits.
pub(crate) fn file_name(number: u64) -> String {
    format!("{number:08}.json")
}

fn writer_loop(
    rx: mpsc::Receiver<Job>,
    log: PathBuf,
    mut next: u64,
    durability: Durability,
    index: IndexWriter,
) -> Option<String> {
    let mut failure = None;
    let mut buf = Vec::with_capacity(16 * 1024);
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < 256 {
            match rx.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        let mut done = Vec::with_capacity(batch.len());
        for job in batch {
            let mut record = job.record;
            finish_record(&mut record, job.raw);
            record.number = next;
            buf.clear();
            let result = serde_json::to_writer(&mut buf, &record)
                .map_err(|e| format!("recording: cannot serialise call {next}: {e}"))
                .and_then(|_| {
                    let path = log.join(file_name(next));
                    write_atomic(&path, &buf, durability)
                        .map_err(|e| format!("recording: cannot write {}: {e}", path.display()))
                });
            match result {
                Ok(()) => {
                    index.push(IndexRow::new(&record));
                    done.push((job.ack, Ok(next)));
                    next += 1;
                }
                Err(m) => {
                    failure.get_or_insert_with(|| m.clone());
                    done.push((job.ack, Err(m)));
                }
            }
        }
        if durability == Durability::Disk {
            // The renames themselves are made durable by syncing the folder.
            if let Ok(d) = std::fs::File::open(&log) {
                let _ = d.sync_all();
            }
        }
        for (ack, result) in done {
            if let Some(ack) = ack {
                let _ = ack.send(result);
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

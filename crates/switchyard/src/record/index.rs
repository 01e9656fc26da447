//! The calls index: `<run_dir>/calls.sqlite`, table `llm_calls`, one row per call.
//!
//! Rows come from the recorder's writer thread through a channel to a thread of their
//! own, which inserts them in transactions of up to 500 rows or every 100 ms, so no
//! caller ever waits on SQLite. The log files are the truth: an index that missed rows
//! (a killed run) is caught up from them when the run is opened again.

use super::read::{log_dir, parse_or_set_aside, parse_record, SetAside};
use super::segment::{self, Location};
use crate::error::{Error, Result};
use crate::internal::background::Courtesy;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::index_row::{IndexRow, INDEX_FILE, INDEX_SCHEMA, INDEX_VERSION};

fn db_error(path: &Path, e: rusqlite::Error) -> Error {
    Error::Config(format!("calls index {}: {e}", path.display()))
}

fn open(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).map_err(|e| db_error(path, e))?;
    // WAL: readers (`sqlite3`, `switchyard log`) do not block the writer; NORMAL sync is
    // enough since the log files, not the index, are the record of truth.
    conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
        .map_err(|e| db_error(path, e))?;
    conn.execute_batch(INDEX_SCHEMA)
        .map_err(|e| db_error(path, e))?;
    upgrade(&conn, path).map_err(|e| db_error(path, e))?;
    Ok(conn)
}

/// Brings an index written by an older version to [`INDEX_VERSION`], keeping its rows.
fn upgrade(conn: &Connection, path: &Path) -> rusqlite::Result<()> {
    let has = |column: &str| -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT COUNT(*) FROM pragma_table_info('llm_calls') WHERE name = ?1",
            [column],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )
    };
    if !has("client_key")? {
        conn.execute_batch("ALTER TABLE llm_calls ADD COLUMN client_key TEXT;")?;
    }
    if !has("cache_key")? {
        conn.execute_batch(
            "ALTER TABLE llm_calls ADD COLUMN client_dialect TEXT;
             ALTER TABLE llm_calls ADD COLUMN cache_key TEXT;
             ALTER TABLE llm_calls ADD COLUMN cache_hit INTEGER;",
        )?;
        if let Some(dir) = path.parent() {
            fill_cache_columns(conn, dir)?;
        }
    }
    conn.execute_batch(&format!(
        "CREATE INDEX IF NOT EXISTS llm_calls_client_key ON llm_calls(client_key, time);
         CREATE INDEX IF NOT EXISTS llm_calls_cache_key ON llm_calls(cache_key) WHERE cache_key IS NOT NULL;
         PRAGMA user_version = {INDEX_VERSION};"
    ))
}

/// The cache's columns of rows indexed before they existed, from the records that name
/// a cache key (only those lines are parsed).
fn fill_cache_columns(conn: &Connection, dir: &Path) -> rusqlite::Result<()> {
    let mut rows = Vec::new();
    let _ = super::read::for_each_record_line(dir, |at, line| {
        if line.windows(8).any(|w| w == b"\"cache_k") {
            if let Ok(record) = parse_record(line, &log_dir(dir), at) {
                rows.push(IndexRow::new(&record, at));
            }
        }
        Ok(())
    });
    let tx = conn.unchecked_transaction()?;
    {
        let mut stmt = tx.prepare(
            "UPDATE llm_calls SET client_dialect = ?2, cache_key = ?3, cache_hit = ?4 WHERE number = ?1",
        )?;
        for r in &rows {
            stmt.execute(params![
                r.number as i64,
                r.client_dialect,
                r.cache_key,
                r.cache_hit.map(|n| n as i64)
            ])?;
        }
    }
    tx.commit()
}

/// The cache entries of a run directory's index: every call that answers a cache key,
/// with where its record lies. `None` when the directory has no index (the caller then
/// reads the log).
pub(crate) fn cache_entries(dir: &Path) -> Option<Vec<(String, crate::cache::Entry)>> {
    let path = dir.join(INDEX_FILE);
    if !path.exists() {
        return None;
    }
    let conn = open(&path).ok()?;
    let mut stmt = conn
        .prepare(
            "SELECT cache_key, number, time, dialect, client_dialect, stream, segment, line_offset, line_length
             FROM llm_calls WHERE cache_key IS NOT NULL ORDER BY number",
        )
        .ok()?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, bool>(5)?,
                Location {
                    segment: r.get(6)?,
                    offset: r.get::<_, i64>(7)? as u64,
                    len: r.get(8)?,
                },
            ))
        })
        .ok()?;
    let mut out = Vec::new();
    for row in rows.flatten() {
        let (key, number, time, dialect, client, stream, at) = row;
        let parse = |d: Option<String>| d.and_then(|d| d.parse::<switchyard_wire::Dialect>().ok());
        let dialect = parse(dialect);
        let Some(entry) = crate::cache::Entry::new(
            number as u64,
            &time,
            dialect,
            parse(client).is_none_or(|c| Some(c) == dialect),
            stream,
            Some(at),
        ) else {
            continue;
        };
        out.push((key, entry));
    }
    Some(out)
}

/// The dollars spent per gateway client key (`client_key`) by the calls of a run
/// directory's index that started at or after `since` (RFC 3339 UTC, as the `time`
/// column; `None`: every call). Calls of unknown cost add nothing. Empty when the
/// directory has no index yet.
pub fn spend_by_client_key(
    dir: &Path,
    since: Option<&str>,
) -> Result<std::collections::HashMap<String, f64>> {
    let path = dir.join(INDEX_FILE);
    if !path.exists() {
        return Ok(std::collections::HashMap::new());
    }
    let conn = open(&path)?;
    client_key_spend(&conn, since).map_err(|e| db_error(&path, e))
}

/// [`spend_by_client_key`] over an index already open, read-only or not (the console
/// reads a directory it must not write to, so it cannot open it as the recorder does).
pub fn client_key_spend(
    conn: &Connection,
    since: Option<&str>,
) -> rusqlite::Result<std::collections::HashMap<String, f64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT client_key, COALESCE(SUM(cost_usd), 0) FROM llm_calls
         WHERE client_key IS NOT NULL AND time >= ?1 GROUP BY client_key",
    )?;
    let rows = stmt.query_map([since.unwrap_or("")], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?))
    })?;
    rows.collect()
}

/// What the calls recorded in a run directory's index spent, as a run's budget counts it
/// (every call let through, failed ones included, but not those the budget itself refused;
/// dollars of priced calls; tokens in and out), leaving out the calls of `exclude_roles`.
/// Nothing when the directory has no index yet. A resumed run starts its budget from this,
/// so a budget spans the run directory, not one process.
pub fn run_spend(
    dir: &Path,
    exclude_roles: &std::collections::BTreeSet<String>,
) -> Result<crate::budget::Spend> {
    let path = dir.join(INDEX_FILE);
    if !path.exists() {
        return Ok(crate::budget::Spend::default());
    }
    let conn = open(&path)?;
    run_spend_in(&conn, exclude_roles).map_err(|e| db_error(&path, e))
}

/// [`run_spend`] over an index already open, read-only or not (the console's). A call
/// the budget refused was never sent (no attempt); one it stopped mid-stream was, and
/// counts. The
/// tokens are summed with `TOTAL` (a float, which never overflows; SQLite's `SUM` of
/// integers fails past `i64::MAX`) and cast back, which saturates at `i64::MAX`.
pub fn run_spend_in(
    conn: &Connection,
    exclude_roles: &std::collections::BTreeSet<String>,
) -> rusqlite::Result<crate::budget::Spend> {
    let mut spend = crate::budget::Spend::default();
    let mut stmt = conn.prepare_cached(
        "SELECT role, COUNT(*), COALESCE(SUM(cost_usd), 0),
                CAST(TOTAL(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0)) AS INTEGER)
         FROM llm_calls WHERE error_kind IS NOT 'BudgetExceeded' OR attempts > 0 GROUP BY role",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, Option<String>>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, f64>(2)?,
            r.get::<_, i64>(3)?,
        ))
    })?;
    for row in rows {
        let (role, calls, usd, tokens) = row?;
        if exclude_roles.contains(role.as_deref().unwrap_or("")) {
            continue;
        }
        spend.calls += calls.max(0) as u64;
        spend.usd += usd;
        spend.tokens = spend.tokens.saturating_add(tokens.max(0) as u64);
    }
    Ok(spend)
}

/// Drops the rows of calls after the log's last record. Their lines were lost (a power
/// cut can keep the index's last commit and lose the segment's tail, which was not yet
/// synced), and the writer numbers new calls from the last record on: without this, a
/// new call's row would meet a stale row of the same number.
fn drop_rows_after(conn: &Connection, last: u64, path: &Path) -> Result<()> {
    let stale = conn
        .execute("DELETE FROM llm_calls WHERE number > ?1", [last as i64])
        .map_err(|e| db_error(path, e))?;
    if stale > 0 {
        tracing::warn!(
            "calls index {}: dropped {stale} rows of calls after number {last}, the log's last record (their lines were lost, as a power cut can lose a log's unsynced tail)",
            path.display()
        );
    }
    Ok(())
}

/// The columns of a row as [`bind_row`] binds them, in this order.
const COLUMNS: &str = "number, time, role, reference, backend, model, dialect, stream, status,
    error_kind, input_tokens, cached_input_tokens, cache_write_tokens, output_tokens,
    reasoning_tokens, cost_usd, provider_cost_usd, latency_ms, ttfb_ms, attempts,
    prompt_digest, segment, line_offset, line_length, client_key, client_dialect, cache_key,
    cache_hit";

/// How many columns [`bind_row`] binds.
const COLUMN_COUNT: usize = 28;

/// Rows inserted by one statement when a batch has that many. A statement's own work (its
/// start and end, opening its cursors on the table and its indexes, finding the table's end
/// from the root) was about a sixth of a row's insert; once per 16 rows, it is a few
/// percent.
const ROWS_PER_STATEMENT: usize = 16;

/// The insert of `rows` rows, each bound by [`bind_row`].
fn insert_sql(rows: usize) -> String {
    let row = format!("({})", vec!["?"; COLUMN_COUNT].join(","));
    format!(
        "INSERT OR IGNORE INTO llm_calls ({COLUMNS}) VALUES {}",
        vec![row; rows].join(",")
    )
}

/// Inserts rows of calls the index does not hold yet (new calls, or the catch-up's rows
/// after the last one it holds), [`ROWS_PER_STATEMENT`] at a time and the rest one by one.
/// `OR IGNORE`, not `OR REPLACE`: a row of an existing number cannot come (the stale ones
/// are dropped at open), and a statement that may replace or abort needs SQLite's statement
/// journal, a sixth of the insert's cost (docs/performance.md, *Where a recorded
/// pass-through call's instructions go*).
///
/// The two statements are prepared once, for the connection's life: preparing the one of
/// 16 rows, or finding it again in rusqlite's cache by its text, cost more per batch than
/// a row's insert.
struct Inserter<'c> {
    conn: &'c Connection,
    many: Option<rusqlite::Statement<'c>>,
    one: Option<rusqlite::Statement<'c>>,
}

impl<'c> Inserter<'c> {
    fn new(conn: &'c Connection) -> Self {
        Inserter {
            conn,
            many: None,
            one: None,
        }
    }

    /// Inserts `rows` in one transaction.
    fn insert(&mut self, rows: &[IndexRow], courtesy: &Courtesy) -> rusqlite::Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        let mut chunks = rows.chunks_exact(ROWS_PER_STATEMENT);
        if chunks.len() > 0 {
            let many = prepared(self.conn, &mut self.many, ROWS_PER_STATEMENT)?;
            for chunk in &mut chunks {
                courtesy.give_way();
                for (i, r) in chunk.iter().enumerate() {
                    bind_row(many, i * COLUMN_COUNT, r)?;
                }
                many.raw_execute()?;
            }
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let one = prepared(self.conn, &mut self.one, 1)?;
            for r in rest {
                courtesy.give_way();
                bind_row(one, 0, r)?;
                one.raw_execute()?;
            }
        }
        tx.commit()
    }
}

/// The insert of `rows` rows kept in `slot`, prepared the first time.
fn prepared<'s, 'c>(
    conn: &'c Connection,
    slot: &'s mut Option<rusqlite::Statement<'c>>,
    rows: usize,
) -> rusqlite::Result<&'s mut rusqlite::Statement<'c>> {
    if slot.is_none() {
        *slot = Some(conn.prepare(&insert_sql(rows))?);
    }
    slot.as_mut().ok_or(rusqlite::Error::InvalidQuery)
}

/// [`Inserter::insert`] with statements prepared for this batch alone (the catch-up's).
fn insert(conn: &Connection, rows: &[IndexRow], courtesy: &Courtesy) -> rusqlite::Result<()> {
    Inserter::new(conn).insert(rows, courtesy)
}

/// Binds row `r` to the [`COLUMNS`] of `stmt` after its first `before` parameters.
fn bind_row(
    stmt: &mut rusqlite::Statement<'_>,
    before: usize,
    r: &IndexRow,
) -> rusqlite::Result<()> {
    let u = r.usage;
    let status = if r.error_kind.is_some() {
        "error"
    } else {
        "ok"
    };
    let at = |column: usize| before + column;
    stmt.raw_bind_parameter(at(1), r.number as i64)?;
    stmt.raw_bind_parameter(at(2), r.time.as_str())?;
    stmt.raw_bind_parameter(at(3), r.role.as_str())?;
    stmt.raw_bind_parameter(at(4), r.reference.as_str())?;
    stmt.raw_bind_parameter(at(5), r.backend.as_str())?;
    stmt.raw_bind_parameter(at(6), r.model.as_str())?;
    stmt.raw_bind_parameter(at(7), r.dialect)?;
    stmt.raw_bind_parameter(at(8), r.stream)?;
    stmt.raw_bind_parameter(at(9), status)?;
    stmt.raw_bind_parameter(at(10), r.error_kind.as_deref())?;
    stmt.raw_bind_parameter(at(11), u.map(|u| big(u.input)))?;
    stmt.raw_bind_parameter(at(12), u.map(|u| big(u.cached_input)))?;
    stmt.raw_bind_parameter(at(13), u.map(|u| big(u.cache_write)))?;
    stmt.raw_bind_parameter(at(14), u.map(|u| big(u.output)))?;
    stmt.raw_bind_parameter(at(15), u.map(|u| big(u.reasoning)))?;
    stmt.raw_bind_parameter(at(16), r.cost_usd)?;
    stmt.raw_bind_parameter(at(17), r.provider_cost_usd)?;
    stmt.raw_bind_parameter(at(18), r.latency_ms)?;
    stmt.raw_bind_parameter(at(19), r.ttfb_ms)?;
    stmt.raw_bind_parameter(at(20), r.attempts)?;
    stmt.raw_bind_parameter(at(21), r.prompt_digest.as_str())?;
    stmt.raw_bind_parameter(at(22), r.location.segment)?;
    stmt.raw_bind_parameter(at(23), r.location.offset as i64)?;
    stmt.raw_bind_parameter(at(24), r.location.len)?;
    stmt.raw_bind_parameter(at(25), r.client_key.as_deref())?;
    stmt.raw_bind_parameter(at(26), r.client_dialect)?;
    stmt.raw_bind_parameter(at(27), r.cache_key.as_deref())?;
    stmt.raw_bind_parameter(at(28), r.cache_hit.map(|n| n as i64))
}

/// Adds rows for records on disk that the index lacks (after a killed run): the lines
/// after the last indexed one. A line that does not read is set aside (given back, with
/// no row) and the others are indexed.
fn catch_up(conn: &Connection, dir: &Path) -> Result<Vec<SetAside>> {
    let path = dir.join(INDEX_FILE);
    let last: Option<(i64, u32, i64, u32)> = conn
        .query_row(
            "SELECT number, segment, line_offset, line_length FROM llm_calls ORDER BY number DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .map_err(|e| db_error(&path, e))?;
    let (max, from) = match last {
        Some((n, segment, offset, len)) => {
            let at = Location {
                segment,
                offset: offset as u64,
                len,
            };
            (n as u64, Some((segment, at.end())))
        }
        None => (0, None),
    };
    let log = log_dir(dir);
    let mut missing: Vec<IndexRow> = Vec::new();
    let mut set_aside = Vec::new();
    segment::for_each_line(&log, from, |at, line| {
        // A line numbered at or below the index's last row is one it holds.
        if segment::line_number(line).is_none_or(|n| n > max) {
            match parse_or_set_aside(line, &log, at) {
                Ok(record) => missing.push(IndexRow::new(&record, at)),
                Err(aside) => set_aside.push(aside),
            }
        }
        Ok(())
    })?;
    if !missing.is_empty() {
        insert(conn, &missing, &Courtesy::default()).map_err(|e| db_error(&path, e))?;
    }
    Ok(set_aside)
}

/// Where record `number` lies, as the index of `run_dir` has it (`None` without an index
/// or a row).
pub(crate) fn location(run_dir: &Path, number: u64) -> Option<Location> {
    let path = run_dir.join(INDEX_FILE);
    if !path.exists() {
        return None;
    }
    let conn =
        Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    conn.query_row(
        "SELECT segment, line_offset, line_length FROM llm_calls WHERE number = ?1",
        [number as i64],
        |r| {
            Ok(Location {
                segment: r.get(0)?,
                offset: r.get::<_, i64>(1)? as u64,
                len: r.get(2)?,
            })
        },
    )
    .ok()
}

/// Rebuilds the index of a run directory from its records (for a copied or old log).
pub fn rebuild(dir: &Path) -> Result<usize> {
    let path = dir.join(INDEX_FILE);
    // Dropped rather than emptied: an index of an older schema is rebuilt in this one.
    if path.exists() {
        let conn = Connection::open(&path).map_err(|e| db_error(&path, e))?;
        conn.execute_batch("DROP TABLE IF EXISTS llm_calls")
            .map_err(|e| db_error(&path, e))?;
    }
    let conn = open(&path)?;
    catch_up(&conn, dir)?.iter().for_each(SetAside::warn);
    conn.query_row("SELECT COUNT(*) FROM llm_calls", [], |r| r.get::<_, i64>(0))
        .map(|n| n as usize)
        .map_err(|e| db_error(&path, e))
}

/// Feeds the index from a thread of its own.
pub(crate) struct IndexWriter {
    rows: Arc<RowQueue>,
    thread: Option<JoinHandle<Option<String>>>,
    /// The lines the catch-up found unreadable (no row made for them).
    pub(crate) set_aside: Vec<SetAside>,
}

/// Rows on their way to the index's thread. The thread is woken by the first row of a
/// batch, a full batch or the close, not by every batch the writer hands over: at one
/// connection the writer writes every few calls, and a wake-up per write was a context
/// switch on the cores serving the calls.
#[derive(Default)]
struct RowQueue {
    pending: Mutex<PendingRows>,
    ready: Condvar,
}

#[derive(Default)]
struct PendingRows {
    rows: Vec<IndexRow>,
    closed: bool,
}

impl RowQueue {
    fn lock(&self) -> MutexGuard<'_, PendingRows> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }
}

impl IndexWriter {
    /// Opens (creating) the index of `dir`, whose log's last record is `last` (0: none),
    /// catches it up with the records on disk and starts its thread.
    pub(crate) fn open(dir: &Path, last: u64, courtesy: Courtesy) -> Result<IndexWriter> {
        let path = dir.join(INDEX_FILE);
        let conn = open(&path)?;
        drop_rows_after(&conn, last, &path)?;
        let set_aside = catch_up(&conn, dir)?;
        let rows = Arc::new(RowQueue::default());
        let queue = rows.clone();
        let thread = std::thread::Builder::new()
            .name("switchyard-index".into())
            .spawn(move || index_loop(conn, &queue, &path, &courtesy))
            .map_err(|e| Error::Config(format!("calls index: cannot start its thread: {e}")))?;
        Ok(IndexWriter {
            rows,
            thread: Some(thread),
            set_aside,
        })
    }

    pub(crate) fn push(&self, rows: Vec<IndexRow>) {
        if rows.is_empty() {
            return;
        }
        let mut pending = self.rows.lock();
        let before = pending.rows.len();
        pending.rows.extend(rows);
        let wake = before == 0 || (before < BATCH_ROWS && pending.rows.len() >= BATCH_ROWS);
        drop(pending);
        if wake {
            self.rows.ready.notify_one();
        }
    }

    /// Commits what is pending and stops the thread.
    pub(crate) fn close(mut self) -> std::result::Result<(), String> {
        self.rows.close();
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
        self.rows.close();
    }
}

/// Rows inserted in one transaction, at most a batch's worth of waiting.
const BATCH_ROWS: usize = 500;
const BATCH_WAIT: Duration = Duration::from_millis(100);

fn index_loop(
    conn: Connection,
    queue: &RowQueue,
    path: &Path,
    courtesy: &Courtesy,
) -> Option<String> {
    let mut failure = None;
    let mut inserter = Inserter::new(&conn);
    let mut batch: Vec<IndexRow> = Vec::with_capacity(BATCH_ROWS);
    loop {
        let mut pending = queue.lock();
        while pending.rows.is_empty() && !pending.closed {
            pending = queue.ready.wait(pending).unwrap_or_else(|p| p.into_inner());
        }
        // The batch gathers from its first row for at most BATCH_WAIT.
        let (mut pending, _) = queue
            .ready
            .wait_timeout_while(pending, BATCH_WAIT, |p| {
                p.rows.len() < BATCH_ROWS && !p.closed
            })
            .unwrap_or_else(|p| p.into_inner());
        std::mem::swap(&mut pending.rows, &mut batch);
        let closed = pending.closed;
        drop(pending);
        if !batch.is_empty() {
            if let Err(e) = inserter.insert(&batch, courtesy) {
                failure.get_or_insert_with(|| {
                    format!("calls index {}: cannot insert rows: {e}", path.display())
                });
            }
            batch.clear();
        }
        // The close comes after the writer's last rows, which were taken with it.
        if closed {
            return failure;
        }
    }
}

/// A token count as SQLite's integer, saturating at `i64::MAX` (a provider's absurd
/// `2^64 − 1` is kept as the largest count, not wrapped to -1).
fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_without_client_key_is_upgraded_in_place_keeping_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        {
            // An index without `client_key` (as written before the gateway kept key
            // names), one row.
            let conn = Connection::open(&path).unwrap();
            let columns_end = INDEX_SCHEMA.find("    client_key").unwrap();
            let without_key = format!(
                "{}\n);",
                INDEX_SCHEMA[..columns_end].trim_end().replace(
                    "INTEGER NOT NULL,    --   this many bytes",
                    "INTEGER NOT NULL     --   this many bytes"
                )
            );
            assert!(!without_key.contains("client_key"));
            conn.execute_batch(&without_key).unwrap();
            conn.execute(
                "INSERT INTO llm_calls VALUES (1,'2025-01-01T00:00:00.000000Z','','mock/echo','mock','echo','chat',0,'ok',NULL,1,0,0,1,0,0.5,NULL,1.0,NULL,1,'d',1,0,100)",
                [],
            )
            .unwrap();
        }
        let conn = open(&path).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, INDEX_VERSION);
        let (n, key): (i64, Option<String>) = conn
            .query_row("SELECT number, client_key FROM llm_calls", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((n, key), (1, None));
        drop(conn);
        // Old rows have no key: they count for nobody's budget.
        assert!(spend_by_client_key(dir.path(), None).unwrap().is_empty());
    }

    /// Every column of every row as SQLite holds it, in number order.
    fn table(conn: &Connection) -> Vec<Vec<rusqlite::types::Value>> {
        let mut stmt = conn
            .prepare("SELECT * FROM llm_calls ORDER BY number")
            .unwrap();
        let columns = stmt.column_count();
        stmt.query_map([], |r| {
            (0..columns)
                .map(|i| r.get::<_, rusqlite::types::Value>(i))
                .collect()
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    }

    /// The index's thread is woken by a batch's first row, not by each handing-over: rows
    /// handed over one at a time are committed within the batch wait without a close,
    /// and the rest of a batch and more are all there after the close.
    #[test]
    fn rows_handed_over_one_at_a_time_are_committed_within_a_batch_wait_and_all_at_close() {
        let dir = tempfile::tempdir().unwrap();
        let writer = IndexWriter::open(dir.path(), 0, Courtesy::default()).unwrap();
        let row = |n: u64| {
            let mut r = crate::record::writer::tests::sample();
            r.number = n;
            let at = Location {
                segment: 1,
                offset: n * 100,
                len: 99,
            };
            IndexRow::new(&r, at)
        };
        let count = || {
            let conn = Connection::open_with_flags(
                dir.path().join(INDEX_FILE),
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .unwrap();
            conn.query_row("SELECT COUNT(*) FROM llm_calls", [], |r| r.get::<_, i64>(0))
                .unwrap()
        };
        (1..=10).for_each(|n| writer.push(vec![row(n)]));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while count() < 10 {
            assert!(std::time::Instant::now() < deadline, "rows not committed");
            std::thread::sleep(Duration::from_millis(10));
        }
        let last = BATCH_ROWS as u64 + 30;
        (11..=last).for_each(|n| writer.push(vec![row(n)]));
        writer.close().unwrap();
        assert_eq!(count(), last as i64);
    }

    /// Rows inserted many per statement hold what rows inserted one by one hold, column
    /// for column, for a batch of two full statements and a rest; a row of a number the
    /// index holds is left as it was.
    #[test]
    fn rows_inserted_many_per_statement_are_those_inserted_one_by_one() {
        let rows: Vec<IndexRow> = (1..=2 * ROWS_PER_STATEMENT as u64 + 5)
            .map(|n| {
                let mut r = crate::record::writer::tests::sample();
                r.number = n;
                r.role = (n % 3 == 0).then(|| format!("role-{n}"));
                r.client_key = (n % 2 == 0).then(|| "alice".to_string());
                r.client_dialect = (n % 4 == 0).then_some(switchyard_wire::Dialect::Messages);
                r.usage = (n % 5 != 0).then(|| switchyard_wire::Usage {
                    input: n,
                    output: u64::MAX,
                    ..Default::default()
                });
                r.cost_usd = (n % 7 != 0).then_some(n as f64 / 8.0);
                r.cache_hit = (n % 6 == 0).then_some(n - 1);
                let at = Location {
                    segment: 1,
                    offset: n * 100,
                    len: 99,
                };
                IndexRow::new(&r, at)
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let together = open(&dir.path().join("together.sqlite")).unwrap();
        let alone = open(&dir.path().join("alone.sqlite")).unwrap();
        let mut inserter = Inserter::new(&together);
        inserter.insert(&rows, &Courtesy::default()).unwrap();
        for r in &rows {
            insert(&alone, std::slice::from_ref(r), &Courtesy::default()).unwrap();
        }
        let written = table(&together);
        assert_eq!(written.len(), rows.len());
        assert_eq!(written, table(&alone));
        // Again, with a changed row among them: ignored, as every row already held.
        let mut again = rows.clone();
        again[ROWS_PER_STATEMENT + 1].model = "other".into();
        inserter.insert(&again, &Courtesy::default()).unwrap();
        assert_eq!(table(&together), written);
        // The statements kept insert a later batch as a new one would.
        let later: Vec<IndexRow> = rows
            .iter()
            .map(|r| IndexRow {
                number: r.number + 1000,
                ..r.clone()
            })
            .collect();
        inserter.insert(&later, &Courtesy::default()).unwrap();
        insert(&alone, &later, &Courtesy::default()).unwrap();
        assert_eq!(table(&together).len(), 2 * rows.len());
        assert_eq!(table(&together), table(&alone));
    }

    /// A provider's absurd usage (`i64::MAX`, what `2^64 − 1` is stored as): the run's
    /// token spend saturates instead of failing (SQLite's `SUM` of integers fails past
    /// `i64::MAX`) or wrapping, and a stream the budget stopped (an attempt made) counts
    /// while a call it refused (none) does not.
    #[test]
    fn absurd_token_counts_saturate_the_run_spend() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join(INDEX_FILE)).unwrap();
        for (n, error, attempts) in [
            (1, None, 1),
            (2, None, 1),
            (3, Some("BudgetExceeded"), 1),
            (4, Some("BudgetExceeded"), 0),
        ] {
            conn.execute(
                "INSERT INTO llm_calls (number, time, role, reference, backend, model, dialect, stream,
                     status, error_kind, input_tokens, output_tokens, cost_usd, latency_ms, attempts,
                     prompt_digest, segment, line_offset, line_length)
                 VALUES (?1, '2025-01-01T00:00:00.000000Z', '', 'mock/x', 'mock', 'x', 'chat', 0,
                     'ok', ?2, ?3, ?3, 0.5, 1.0, ?4, 'd', 1, 0, 100)",
                rusqlite::params![n, error, big(u64::MAX), attempts],
            )
            .unwrap();
        }
        let spend = run_spend_in(&conn, &Default::default()).unwrap();
        assert_eq!(spend.calls, 3);
        assert_eq!(spend.tokens, i64::MAX as u64);
        assert!((spend.usd - 1.5).abs() < 1e-9);
    }
}

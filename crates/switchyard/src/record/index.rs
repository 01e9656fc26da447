//! The calls index: `<run_dir>/calls.sqlite`, table `llm_calls`, one row per call.
//!
//! Rows come from the recorder's writer thread, numbered, and are inserted off every
//! caller's path (`index_feed.rs`: by a thread of their own, and on a busy gateway by its
//! lanes between two calls; `index_insert.rs`: the statements). The log files are the
//! truth: an index that missed rows (a killed run) is caught up from them when the run is
//! opened again.

use super::read::{log_dir, parse_or_set_aside, parse_record, SetAside};
use super::segment::{self, Location};
use crate::error::{Error, Result};
use crate::internal::background::Courtesy;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

pub(crate) use super::index_feed::{IndexFeed, IndexWriter};
use super::index_insert::Inserter;
use super::index_row::{IndexRow, INDEX_FILE, INDEX_KEYS_SCHEMA, INDEX_SCHEMA, INDEX_VERSION};

pub(super) fn db_error(path: &Path, e: rusqlite::Error) -> Error {
    Error::Config(format!("calls index {}: {e}", path.display()))
}

pub(super) fn open(path: &Path) -> Result<Connection> {
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
    // The client key's and the role's indexes of an older version held every row: each
    // is made again partial, holding only the rows that have a key or a role.
    for index in ["llm_calls_client_key", "llm_calls_role"] {
        let whole: bool = conn
            .query_row(
                "SELECT sql NOT LIKE '%WHERE%' FROM sqlite_master
                 WHERE type = 'index' AND name = ?1",
                [index],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(false);
        if whole {
            conn.execute_batch(&format!("DROP INDEX {index};"))?;
        }
    }
    // INDEX_SCHEMA again, for the role's index dropped above (the rest exists).
    conn.execute_batch(&format!(
        "{INDEX_SCHEMA}
         {INDEX_KEYS_SCHEMA}
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

/// Adds rows for records on disk that the index lacks (after a killed run): the lines
/// after the last indexed one. A line that does not read is set aside (given back, with
/// no row) and the others are indexed.
fn catch_up(inserter: &mut Inserter, dir: &Path) -> Result<Vec<SetAside>> {
    let path = dir.join(INDEX_FILE);
    let last: Option<(i64, u32, i64, u32)> = inserter
        .conn()
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
        inserter
            .insert_all(&missing)
            .map_err(|e| db_error(&path, e))?;
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
    let mut inserter = Inserter::new(open(&path)?);
    catch_up(&mut inserter, dir)?
        .iter()
        .for_each(SetAside::warn);
    inserter
        .conn()
        .query_row("SELECT COUNT(*) FROM llm_calls", [], |r| r.get::<_, i64>(0))
        .map(|n| n as usize)
        .map_err(|e| db_error(&path, e))
}

/// Opens (creating) the index of `dir`, whose log's last record is `last` (0: none),
/// catches it up with the records on disk and starts feeding it (`index_feed.rs`).
pub(crate) fn open_writer(dir: &Path, last: u64, courtesy: Courtesy) -> Result<IndexWriter> {
    let path = dir.join(INDEX_FILE);
    let conn = open(&path)?;
    drop_rows_after(&conn, last, &path)?;
    let mut inserter = Inserter::new(conn);
    let set_aside = catch_up(&mut inserter, dir)?;
    IndexWriter::start(inserter, path, courtesy, set_aside)
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
                rusqlite::params![n, error, i64::MAX, attempts],
            )
            .unwrap();
        }
        let spend = run_spend_in(&conn, &Default::default()).unwrap();
        assert_eq!(spend.calls, 3);
        assert_eq!(spend.tokens, i64::MAX as u64);
        assert!((spend.usd - 1.5).abs() < 1e-9);
    }

    /// Entries in the client key's index, counted from its pages (`dbstat`), not through
    /// a query the planner might answer from the table.
    fn key_index_entries(conn: &Connection) -> i64 {
        index_entries(conn, "llm_calls_client_key")
    }

    /// Entries in the index `name`, counted from its pages.
    fn index_entries(conn: &Connection, name: &str) -> i64 {
        conn.query_row(
            "SELECT COALESCE(SUM(ncell), 0) FROM dbstat
             WHERE name = ?1 AND pagetype = 'leaf'",
            [name],
            |r| r.get(0),
        )
        .unwrap()
    }

    /// An index whose role index held every row (as every version before made it) gets
    /// it again holding only the rows of a role, its rows kept; a query by a role, as
    /// the console makes it, reads the index.
    #[test]
    fn the_role_index_holds_only_rows_of_a_role_and_an_older_one_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        let insert = |conn: &Connection, n: i64, role: &str| {
            conn.execute(
                "INSERT INTO llm_calls (number, time, role, reference, backend, model, stream,
                     status, cost_usd, latency_ms, attempts, prompt_digest, segment, line_offset,
                     line_length)
                 VALUES (?1, '2025-01-01T00:00:00.000000Z', ?2, 'mock/x', 'mock', 'x', 0, 'ok',
                     0.5, 1.0, 1, '', 1, 0, 100)",
                rusqlite::params![n, role],
            )
            .unwrap();
        };
        {
            let conn = Connection::open(&path).unwrap();
            let whole = INDEX_SCHEMA.replace(" WHERE role <> ''", "");
            assert_ne!(whole, INDEX_SCHEMA);
            conn.execute_batch(&whole).unwrap();
            conn.execute_batch(&format!("{INDEX_KEYS_SCHEMA} PRAGMA user_version = 3;"))
                .unwrap();
            for n in 1..=10 {
                insert(&conn, n, if n % 5 == 0 { "coder" } else { "" });
            }
            assert_eq!(index_entries(&conn, "llm_calls_role"), 10);
        }
        let conn = open(&path).unwrap();
        assert_eq!(
            index_entries(&conn, "llm_calls_role"),
            2,
            "only the rows of a role"
        );
        let rows: i64 = conn
            .query_row("SELECT COUNT(*) FROM llm_calls", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 10);
        for n in 11..=20 {
            insert(&conn, n, if n == 20 { "planner" } else { "" });
        }
        assert_eq!(index_entries(&conn, "llm_calls_role"), 3);
        let query = format!(
            "SELECT COUNT(*) FROM llm_calls WHERE role = ?1 AND {}",
            super::super::ROLE_INDEXED
        );
        let plan: String = conn
            .query_row(&format!("EXPLAIN QUERY PLAN {query}"), ["coder"], |r| {
                r.get(3)
            })
            .unwrap();
        assert!(plan.contains("llm_calls_role"), "{query}: {plan}");
        let coder: i64 = conn.query_row(&query, ["coder"], |r| r.get(0)).unwrap();
        assert_eq!(coder, 2);
        // Opened again: left as it is.
        drop(conn);
        let conn = open(&path).unwrap();
        assert_eq!(index_entries(&conn, "llm_calls_role"), 3);
    }

    /// An index whose client-key index held every row (as every version before made it)
    /// gets it again holding only the keyed rows, its rows kept; new keyless rows enter
    /// no entry, and the queries by key still read the index.
    #[test]
    fn the_client_key_index_holds_only_keyed_rows_and_an_older_one_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(INDEX_FILE);
        let insert = |conn: &Connection, n: i64, key: Option<&str>| {
            conn.execute(
                "INSERT INTO llm_calls (number, time, role, reference, backend, model, stream,
                     status, cost_usd, latency_ms, attempts, prompt_digest, segment, line_offset,
                     line_length, client_key)
                 VALUES (?1, '2025-01-01T00:00:00.000000Z', '', 'mock/x', 'mock', 'x', 0, 'ok',
                     0.5, 1.0, 1, '', 1, 0, 100, ?2)",
                rusqlite::params![n, key],
            )
            .unwrap();
        };
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(INDEX_SCHEMA).unwrap();
            conn.execute_batch(
                "CREATE INDEX llm_calls_client_key ON llm_calls(client_key, time);
                 PRAGMA user_version = 3;",
            )
            .unwrap();
            for n in 1..=10 {
                insert(&conn, n, (n % 5 == 0).then_some("alice"));
            }
            assert_eq!(key_index_entries(&conn), 10);
        }
        let conn = open(&path).unwrap();
        assert_eq!(key_index_entries(&conn), 2, "only the keyed rows");
        let rows: i64 = conn
            .query_row("SELECT COUNT(*) FROM llm_calls", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 10);
        for n in 11..=20 {
            insert(&conn, n, (n == 20).then_some("bob"));
        }
        assert_eq!(key_index_entries(&conn), 3);
        // Opened again: made once, left as it is.
        drop(conn);
        let conn = open(&path).unwrap();
        assert_eq!(key_index_entries(&conn), 3);
        for query in [
            "SELECT COUNT(*) FROM llm_calls WHERE client_key = 'alice'",
            "SELECT client_key, SUM(cost_usd) FROM llm_calls
             WHERE client_key IS NOT NULL AND time >= '' GROUP BY client_key",
        ] {
            let plan: String = conn
                .query_row(&format!("EXPLAIN QUERY PLAN {query}"), [], |r| r.get(3))
                .unwrap();
            assert!(plan.contains("llm_calls_client_key"), "{query}: {plan}");
        }
        drop(conn);
        let spend = spend_by_client_key(dir.path(), None).unwrap();
        assert_eq!(spend.len(), 2);
        assert!((spend["alice"] - 1.0).abs() < 1e-9);
        assert!((spend["bob"] - 0.5).abs() < 1e-9);
    }
}

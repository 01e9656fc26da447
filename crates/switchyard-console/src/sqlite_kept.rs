//! The conversation turns a gateway keeps in its data directory, read for the console:
//! `conversations.sqlite` beside the calls index, written by the gateway
//! (`switchyard-gateway`'s `conversations/local.rs`: a turn per row of `kept(kind, owner,
//! id, created, expires, turn)`, times in seconds since the epoch, `turn` JSON).
//!
//! Opened read-only and only when the file is there: a run directory, or a gateway
//! that never kept a conversation, has none, and viewing it creates none. The gateway
//! may be writing at the same moment (WAL lets both go on). A turn's sizes, chain and
//! model are read by SQLite's JSON functions for the page's rows only, so a page costs
//! its rows, not every turn's JSON; a turn whose JSON does not read shows as empty.

use crate::source::{KeptKind, KeptPage, KeptQuery, KeptRow, KeptTurn};
use rusqlite::types::{Value as Sql, ValueRef};
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The file in the data directory (the gateway's name for it).
pub(crate) const FILE: &str = "conversations.sqlite";

/// The newest format of the file this console reads (its `user_version`).
const FORMAT: i64 = 1;

/// How long a read waits for the gateway's lock (a checkpoint).
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// Seconds since the epoch: a turn whose `expires` is not after it is not shown.
pub(crate) fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs().min(i64::MAX as u64) as i64)
}

/// The turn's JSON when it reads as JSON, else an empty object (its row still shows).
const TURN: &str = "CASE WHEN json_valid(k.turn) THEN k.turn ELSE '{}' END";

/// What a row shows of a turn (`t` its JSON, [`TURN`]).
const COLUMNS: &str = "kind, owner, id, created, expires,
    json_extract(t, '$.previous'), json_extract(t, '$.upstream'),
    json_array_length(t, '$.input'), json_array_length(t, '$.output'),
    CASE WHEN kind = 'response' THEN json_extract(t, '$.response.model') END";

/// The file of `dir`, open read-only; `None` when `dir` keeps no conversations.
fn open(dir: &Path) -> Result<Option<(Connection, PathBuf)>, String> {
    let path = dir.join(FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let fail = |e: rusqlite::Error| format!("kept conversations {}: {e}", path.display());
    // Read-only: never creates the file, never writes to it.
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&path, flags).map_err(fail)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
    let format: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(fail)?;
    if format > FORMAT {
        return Err(format!(
            "kept conversations {}: its format is {format}, newer than this console reads ({FORMAT}): view it with the switchyard that wrote it",
            path.display()
        ));
    }
    let has_table = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kept'",
            [],
            |_| Ok(()),
        )
        .optional()
        .map_err(fail)?
        .is_some();
    Ok(has_table.then_some((conn, path)))
}

/// A text column, `None` for anything else (a JSON field that is absent or not a string).
fn text(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    Ok(match r.get_ref(i)? {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    })
}

/// A count column, 0 when the JSON had no such array.
fn count(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<u64> {
    Ok(match r.get_ref(i)? {
        ValueRef::Integer(n) => n.max(0) as u64,
        _ => 0,
    })
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<KeptRow> {
    Ok(KeptRow {
        kind: r.get(0)?,
        key: r.get(1)?,
        id: r.get(2)?,
        created: r.get(3)?,
        expires: r.get(4)?,
        previous: text(r, 5)?,
        upstream: text(r, 6)?,
        input_items: count(r, 7)?,
        output_items: count(r, 8)?,
        model: text(r, 9)?,
    })
}

/// A page of the unexpired turns of `dir` at `now`, the newest first (the order they
/// were kept in breaks a tie of the same second); `None` when it keeps none.
pub(crate) fn page(dir: &Path, q: &KeptQuery, now: i64) -> Result<Option<KeptPage>, String> {
    let Some((conn, path)) = open(dir)? else {
        return Ok(None);
    };
    let fail = |e: rusqlite::Error| format!("kept conversations {}: {e}", path.display());
    let mut terms = vec!["expires > ?"];
    let mut values = vec![Sql::Integer(now)];
    if let Some(key) = &q.key {
        terms.push("owner = ?");
        values.push(Sql::Text(key.clone()));
    }
    if let Some(kind) = q.kind {
        terms.push("kind = ?");
        values.push(Sql::Text(kind.as_str().to_string()));
    }
    let clause = terms.join(" AND ");
    let total: i64 = conn
        .query_row(
            &format!("SELECT COUNT(*) FROM kept WHERE {clause}"),
            rusqlite::params_from_iter(values.iter()),
            |r| r.get(0),
        )
        .map_err(fail)?;
    // The page's rows are chosen by their columns alone; only their JSON is read.
    let sql = format!(
        "SELECT {COLUMNS} FROM (
            SELECT k.kind, k.owner, k.id, k.created, k.expires, k.rowid AS n, {TURN} AS t
            FROM (SELECT rowid AS r FROM kept WHERE {clause}
                  ORDER BY created DESC, rowid DESC LIMIT {} OFFSET {}) p
            JOIN kept k ON k.rowid = p.r)
         ORDER BY created DESC, n DESC",
        q.limit,
        q.offset.min(i64::MAX as u64)
    );
    let mut stmt = conn.prepare(&sql).map_err(fail)?;
    let turns = stmt
        .query_map(rusqlite::params_from_iter(values.iter()), row)
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(fail)?;
    Ok(Some(KeptPage {
        turns,
        total: total.max(0) as u64,
    }))
}

/// The turn `key` kept under `kind` and `id`, when it has not expired at `now`.
pub(crate) fn turn(
    dir: &Path,
    kind: KeptKind,
    key: &str,
    id: &str,
    now: i64,
) -> Result<Option<KeptTurn>, String> {
    let Some((conn, path)) = open(dir)? else {
        return Ok(None);
    };
    let sql = format!(
        "SELECT {COLUMNS}, turn FROM (
            SELECT k.kind, k.owner, k.id, k.created, k.expires, k.turn, {TURN} AS t FROM kept k
            WHERE k.kind = ?1 AND k.owner = ?2 AND k.id = ?3 AND k.expires > ?4)"
    );
    conn.query_row(&sql, rusqlite::params![kind.as_str(), key, id, now], |r| {
        Ok(KeptTurn {
            row: row(r)?,
            turn: r.get(10)?,
        })
    })
    .optional()
    .map_err(|e| format!("kept conversations {}: {e}", path.display()))
}

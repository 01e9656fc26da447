//! How rows go into the calls index: the index's connection, owned with its insert
//! statements, prepared once for its life, and the transaction left open between two
//! inserts until its owner commits it.

use super::index_row::IndexRow;
use super::index_statement::RawInsert;
use crate::internal::background::Courtesy;
use rusqlite::{Connection, ErrorCode};

/// The columns of a row as `index_statement` binds them, in this order.
const COLUMNS: &str = "number, time, role, reference, backend, model, dialect, stream, status,
    error_kind, input_tokens, cached_input_tokens, cache_write_tokens, output_tokens,
    reasoning_tokens, cost_usd, provider_cost_usd, latency_ms, ttfb_ms, attempts,
    prompt_digest, segment, line_offset, line_length, client_key, client_dialect, cache_key,
    cache_hit";

/// How many columns a row binds.
pub(super) const COLUMN_COUNT: usize = 28;

/// Rows inserted by one statement when a batch has that many. A statement's own work (its
/// start and end, opening its cursors on the table and its indexes, finding the table's end
/// from the root) was about a sixth of a row's insert; once per 16 rows, it is a few
/// percent.
pub(super) const ROWS_PER_STATEMENT: usize = 16;

/// The insert of `rows` rows.
fn insert_sql(rows: usize) -> String {
    let row = format!("({})", vec!["?"; COLUMN_COUNT].join(","));
    format!(
        "INSERT OR IGNORE INTO llm_calls ({COLUMNS}) VALUES {}",
        vec![row; rows].join(",")
    )
}

/// Inserts rows of calls the index does not hold yet (new calls, or the catch-up's rows
/// after the last one it holds), [`ROWS_PER_STATEMENT`] at a time and the rest one by one,
/// into a transaction it keeps open until [`Inserter::commit`].
/// `OR IGNORE`, not `OR REPLACE`: a row of an existing number cannot come (the stale ones
/// are dropped at open), and a statement that may replace or abort needs SQLite's statement
/// journal, a sixth of the insert's cost (docs/performance.md, *Where a recorded
/// pass-through call's instructions go*).
///
/// The two statements are prepared once, for the connection's life: preparing the one of
/// 16 rows, or finding it again in rusqlite's cache by its text, cost more per batch than
/// a row's insert.
pub(super) struct Inserter {
    /// The insert of [`ROWS_PER_STATEMENT`] rows, and of one, prepared on first use.
    /// Declared before the connection: dropped (finalised) before it closes.
    many: Option<RawInsert>,
    one: Option<RawInsert>,
    conn: Connection,
    /// Rows inserted in the open transaction (0: none is open).
    uncommitted: usize,
}

/// Why rows were not inserted.
pub(super) enum Refused {
    /// Another connection holds the index's write lock (a `sqlite3` shell writing, say):
    /// nothing was inserted and nothing is lost; the rows can be inserted later.
    Busy(rusqlite::Error),
    /// Anything else: the open transaction was rolled back, with the rows the index had
    /// taken since its last commit (the log holds them).
    Failed(rusqlite::Error),
}

impl Inserter {
    pub(super) fn new(conn: Connection) -> Inserter {
        Inserter {
            many: None,
            one: None,
            conn,
            uncommitted: 0,
        }
    }

    pub(super) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Rows inserted since the last commit.
    pub(super) fn uncommitted(&self) -> usize {
        self.uncommitted
    }

    /// Inserts `rows` into the open transaction, beginning one when none is open, giving
    /// way to calls (`courtesy`) between two statements.
    pub(super) fn insert(
        &mut self,
        rows: &[IndexRow],
        courtesy: &Courtesy,
    ) -> std::result::Result<(), Refused> {
        if rows.is_empty() {
            return Ok(());
        }
        let began = self.uncommitted == 0;
        if began {
            self.conn()
                .execute_batch("BEGIN")
                .map_err(Refused::Failed)?;
        }
        let done = self.insert_rows(rows, courtesy);
        match done {
            Ok(()) => {
                self.uncommitted += rows.len();
                Ok(())
            }
            // The write lock is taken by a transaction's first statement, and only there
            // can it be busy: nothing of this transaction was written.
            Err(e) if began && is_busy(&e) => {
                self.rollback();
                Err(Refused::Busy(e))
            }
            Err(e) => {
                self.rollback();
                Err(Refused::Failed(e))
            }
        }
    }

    /// Commits the open transaction, if one is.
    pub(super) fn commit(&mut self) -> rusqlite::Result<()> {
        if self.uncommitted == 0 {
            return Ok(());
        }
        let done = self.conn().execute_batch("COMMIT");
        if done.is_err() {
            self.rollback();
        }
        self.uncommitted = 0;
        done
    }

    /// Inserts `rows` and commits them (the catch-up's one transaction).
    pub(super) fn insert_all(&mut self, rows: &[IndexRow]) -> rusqlite::Result<()> {
        match self.insert(rows, &Courtesy::default()) {
            Ok(()) => self.commit(),
            Err(Refused::Busy(e) | Refused::Failed(e)) => Err(e),
        }
    }

    /// Ends the open transaction without its rows (after a failure).
    fn rollback(&mut self) {
        if !self.conn().is_autocommit() {
            let _ = self.conn().execute_batch("ROLLBACK");
        }
        self.uncommitted = 0;
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

impl Inserter {
    fn insert_rows(&mut self, rows: &[IndexRow], courtesy: &Courtesy) -> rusqlite::Result<()> {
        let mut chunks = rows.chunks_exact(ROWS_PER_STATEMENT);
        if chunks.len() > 0 {
            let many = prepared(&self.conn, &mut self.many, ROWS_PER_STATEMENT)?;
            for chunk in &mut chunks {
                courtesy.give_way();
                many.run(chunk)?;
            }
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let one = prepared(&self.conn, &mut self.one, 1)?;
            for r in rest {
                courtesy.give_way();
                one.run(std::slice::from_ref(r))?;
            }
        }
        Ok(())
    }
}

/// The insert of `rows` rows kept in `slot`, prepared the first time.
fn prepared<'s>(
    conn: &Connection,
    slot: &'s mut Option<RawInsert>,
    rows: usize,
) -> rusqlite::Result<&'s mut RawInsert> {
    if slot.is_none() {
        *slot = Some(RawInsert::prepare(conn, &insert_sql(rows), rows)?);
    }
    slot.as_mut().ok_or(rusqlite::Error::InvalidQuery)
}

/// A token count as SQLite's integer, saturating at `i64::MAX` (a provider's absurd
/// `2^64 − 1` is kept as the largest count, not wrapped to -1).
pub(super) fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::record::index::open;
    use crate::record::segment::Location;
    use std::path::Path;
    use std::time::{Duration, Instant};

    /// Row `n` of a sample call, its columns varied with `n`.
    pub(crate) fn row(n: u64) -> IndexRow {
        let mut r = crate::record::writer::tests::sample();
        r.number = n;
        r.role = n.is_multiple_of(3).then(|| format!("role-{n}"));
        r.client_key = n.is_multiple_of(2).then(|| "alice".to_string());
        r.client_dialect = n
            .is_multiple_of(4)
            .then_some(switchyard_wire::Dialect::Messages);
        r.usage = (!n.is_multiple_of(5)).then(|| switchyard_wire::Usage {
            input: n,
            output: u64::MAX,
            ..Default::default()
        });
        r.cost_usd = (!n.is_multiple_of(7)).then_some(n as f64 / 8.0);
        r.cache_hit = n.is_multiple_of(6).then_some(n - 1);
        let at = Location {
            segment: 1,
            offset: n * 100,
            len: 99,
        };
        IndexRow::new(&r, at)
    }

    /// Every column of every row as SQLite holds it, in number order.
    pub(crate) fn table(conn: &Connection) -> Vec<Vec<rusqlite::types::Value>> {
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

    /// The committed rows as another connection reads them.
    pub(crate) fn committed(path: &Path) -> Vec<Vec<rusqlite::types::Value>> {
        let reader =
            Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        table(&reader)
    }

    /// Rows inserted many per statement hold what rows inserted one by one hold, column
    /// for column, for a batch of two full statements and a rest; a row of a number the
    /// index holds is left as it was.
    #[test]
    fn rows_inserted_many_per_statement_are_those_inserted_one_by_one() {
        let rows: Vec<IndexRow> = (1..=2 * ROWS_PER_STATEMENT as u64 + 5).map(row).collect();
        let dir = tempfile::tempdir().unwrap();
        let mut together = Inserter::new(open(&dir.path().join("together.sqlite")).unwrap());
        let mut alone = Inserter::new(open(&dir.path().join("alone.sqlite")).unwrap());
        together.insert_all(&rows).unwrap();
        for r in &rows {
            alone.insert_all(std::slice::from_ref(r)).unwrap();
        }
        let written = table(together.conn());
        assert_eq!(written.len(), rows.len());
        assert_eq!(written, table(alone.conn()));
        // Again, with a changed row among them: ignored, as every row already held.
        let mut again = rows.clone();
        again[ROWS_PER_STATEMENT + 1].model = "other".into();
        together.insert_all(&again).unwrap();
        assert_eq!(table(together.conn()), written);
        // The statements kept insert a later batch as a new one would.
        let later: Vec<IndexRow> = rows
            .iter()
            .map(|r| IndexRow {
                number: r.number + 1000,
                ..r.clone()
            })
            .collect();
        together.insert_all(&later).unwrap();
        alone.insert_all(&later).unwrap();
        assert_eq!(table(together.conn()).len(), 2 * rows.len());
        assert_eq!(table(together.conn()), table(alone.conn()));
    }

    /// Inserts go into one open transaction, which readers see only once committed; the
    /// inserter counts its rows and moves to another thread with its statements.
    #[test]
    fn inserts_stay_in_one_open_transaction_until_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite");
        let mut inserter = Inserter::new(open(&path).unwrap());
        let rows: Vec<IndexRow> = (1..=40).map(row).collect();
        assert!(inserter.insert(&rows[..16], &Courtesy::default()).is_ok());
        assert!(inserter.insert(&rows[16..19], &Courtesy::default()).is_ok());
        assert_eq!(inserter.uncommitted(), 19);
        assert!(committed(&path).is_empty());
        let mut inserter = std::thread::spawn(move || {
            assert!(inserter.insert(&rows[19..], &Courtesy::default()).is_ok());
            inserter
        })
        .join()
        .unwrap();
        assert_eq!(inserter.uncommitted(), 40);
        inserter.commit().unwrap();
        assert_eq!(inserter.uncommitted(), 0);
        assert_eq!(committed(&path), table(inserter.conn()));
        assert_eq!(committed(&path).len(), 40);
    }

    /// Another connection's write lock: with no busy wait, the insert is refused at once,
    /// nothing of it written and no transaction left open; once the lock is free the same
    /// rows go in.
    #[test]
    fn a_write_lock_held_elsewhere_refuses_the_insert_at_once_and_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite");
        let mut inserter = Inserter::new(open(&path).unwrap());
        inserter.conn().busy_timeout(Duration::ZERO).unwrap();
        let rows: Vec<IndexRow> = (1..=20).map(row).collect();
        let other = Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let since = Instant::now();
        assert!(matches!(
            inserter.insert(&rows, &Courtesy::default()),
            Err(Refused::Busy(_))
        ));
        assert!(since.elapsed() < Duration::from_secs(1));
        assert_eq!(inserter.uncommitted(), 0);
        assert!(inserter.conn().is_autocommit());
        other.execute_batch("COMMIT").unwrap();
        inserter.insert_all(&rows).unwrap();
        assert_eq!(committed(&path).len(), 20);
    }
}

//! The calls index's insert statement driven through SQLite's C API, so a row's values
//! are bound where they lie.
//!
//! Why not rusqlite's `Statement`: its binding copies every text value into memory SQLite
//! allocates (`SQLITE_TRANSIENT`) and goes through `ToSql`'s conversions for every value;
//! for a row of 28 columns that was ~5,200 instructions against ~5,400 for SQLite's own
//! insert of the row. Here it is ~3,400, SQLite's bind calls and the clearing of them
//! (docs/performance.md, *What the store costs per call*). Texts are bound as
//! `SQLITE_STATIC`: SQLite reads them in place while the statement runs, and
//! [`RawInsert::run`] clears every binding before it returns, so no pointer into a row
//! outlives the borrow it was bound under.

use super::index_insert::COLUMN_COUNT;
use super::index_row::IndexRow;
use rusqlite::ffi;
use rusqlite::Connection;
use std::ffi::{c_int, CStr};
use std::ptr::NonNull;

/// A prepared statement inserting a fixed number of rows, finalised when dropped. It
/// must be dropped before the connection it was prepared on is closed (its owner,
/// `Inserter`, declares it before the connection, and Rust drops fields in order).
pub(super) struct RawInsert {
    stmt: NonNull<ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    rows: usize,
}

impl RawInsert {
    /// Prepares `sql`, an insert of `rows` rows of [`COLUMN_COUNT`] parameters each.
    pub(super) fn prepare(conn: &Connection, sql: &str, rows: usize) -> rusqlite::Result<Self> {
        let len = c_int::try_from(sql.len())
            .map_err(|_| failure(ffi::SQLITE_TOOBIG, "the insert statement is too long"))?;
        // SAFETY: `handle` is the open connection `conn` owns; `sql` is valid for `len`
        // bytes; SQLite writes the new statement (or null) into `stmt`.
        unsafe {
            let db = conn.handle();
            let mut stmt = std::ptr::null_mut();
            let rc = ffi::sqlite3_prepare_v3(
                db,
                sql.as_ptr().cast(),
                len,
                ffi::SQLITE_PREPARE_PERSISTENT as _,
                &mut stmt,
                std::ptr::null_mut(),
            );
            if rc != ffi::SQLITE_OK {
                if !stmt.is_null() {
                    ffi::sqlite3_finalize(stmt);
                }
                return Err(error(db, rc));
            }
            let stmt = NonNull::new(stmt)
                .ok_or_else(|| failure(ffi::SQLITE_MISUSE, "the insert statement is empty"))?;
            let params = ffi::sqlite3_bind_parameter_count(stmt.as_ptr());
            // Owned before the check: a statement refused below is finalised by its drop.
            let this = RawInsert { stmt, db, rows };
            if params as usize != rows * COLUMN_COUNT {
                return Err(failure(
                    ffi::SQLITE_MISUSE,
                    "the insert statement's parameters are not its rows' columns",
                ));
            }
            Ok(this)
        }
    }

    /// Inserts `rows` (as many as the statement was prepared for): binds them, runs the
    /// statement once, resets it and clears its bindings.
    pub(super) fn run(&mut self, rows: &[IndexRow]) -> rusqlite::Result<()> {
        if rows.len() != self.rows {
            return Err(failure(
                ffi::SQLITE_MISUSE,
                "rows given to an insert prepared for another count",
            ));
        }
        let stmt = self.stmt.as_ptr();
        let mut bound = Ok(());
        for (i, row) in rows.iter().enumerate() {
            bound = bind_row(stmt, i * COLUMN_COUNT, row);
            if bound.is_err() {
                break;
            }
        }
        // SAFETY: `stmt` is this statement, alive until `self` drops; every text bound
        // above borrows from `rows`, which outlives this call, and the bindings are
        // cleared before it returns.
        unsafe {
            let rc = match bound {
                Ok(()) => ffi::sqlite3_step(stmt),
                Err(rc) => rc,
            };
            // The step's error is also what the reset returns; the message is read before
            // the reset or the clearing can replace it.
            let done = if rc == ffi::SQLITE_DONE {
                Ok(())
            } else {
                Err(error(self.db, rc))
            };
            ffi::sqlite3_reset(stmt);
            ffi::sqlite3_clear_bindings(stmt);
            done
        }
    }
}

impl Drop for RawInsert {
    fn drop(&mut self) {
        // SAFETY: the statement is finalised once, here, while its connection is open.
        unsafe {
            ffi::sqlite3_finalize(self.stmt.as_ptr());
        }
    }
}

// SAFETY: a statement belongs to one connection, which SQLite (built thread-safe) lets one
// thread use after another; `RawInsert` is used only through `&mut` by its `Inserter`,
// which moves with its connection (see `Inserter`'s own `Send`).
unsafe impl Send for RawInsert {}

/// Binds row `r` to the parameters of `stmt` after its first `before`, in the order of
/// `index_insert`'s `COLUMNS`; the SQLite result code of the first bind that fails.
fn bind_row(stmt: *mut ffi::sqlite3_stmt, before: usize, r: &IndexRow) -> Result<(), c_int> {
    let mut b = Binder {
        stmt,
        at: before as c_int,
        rc: ffi::SQLITE_OK,
    };
    let u = r.usage;
    b.int(r.number as i64);
    b.text(&r.time);
    b.text(&r.role);
    b.text(&r.reference);
    b.text(&r.backend);
    b.text(&r.model);
    b.text_or_null(r.dialect);
    b.int(i64::from(r.stream));
    b.text(if r.error_kind.is_some() {
        "error"
    } else {
        "ok"
    });
    b.text_or_null(r.error_kind.as_deref());
    b.int_or_null(u.map(|u| super::index_insert::big(u.input)));
    b.int_or_null(u.map(|u| super::index_insert::big(u.cached_input)));
    b.int_or_null(u.map(|u| super::index_insert::big(u.cache_write)));
    b.int_or_null(u.map(|u| super::index_insert::big(u.output)));
    b.int_or_null(u.map(|u| super::index_insert::big(u.reasoning)));
    b.real_or_null(r.cost_usd);
    b.real_or_null(r.provider_cost_usd);
    b.real_or_null(Some(r.latency_ms));
    b.real_or_null(r.ttfb_ms);
    b.int(i64::from(r.attempts));
    b.text(&r.prompt_digest);
    b.int(i64::from(r.location.segment));
    b.int(r.location.offset as i64);
    b.int(i64::from(r.location.len));
    b.text_or_null(r.client_key.as_deref());
    b.text_or_null(r.client_dialect);
    b.text_or_null(r.cache_key.as_deref());
    b.int_or_null(r.cache_hit.map(|n| n as i64));
    match b.rc {
        ffi::SQLITE_OK => Ok(()),
        rc => Err(rc),
    }
}

/// Binds values to the next parameters in turn, keeping the first failure's code.
struct Binder {
    stmt: *mut ffi::sqlite3_stmt,
    /// The last parameter bound (SQLite numbers them from 1).
    at: c_int,
    rc: c_int,
}

impl Binder {
    fn next(&mut self, bind: impl FnOnce(*mut ffi::sqlite3_stmt, c_int) -> c_int) {
        self.at += 1;
        if self.rc == ffi::SQLITE_OK {
            self.rc = bind(self.stmt, self.at);
        }
    }

    fn int(&mut self, v: i64) {
        // SAFETY (each bind below): `stmt` is a live statement and `at` one of its
        // parameters, checked at prepare; SQLite answers a wrong index with an error code.
        self.next(|s, i| unsafe { ffi::sqlite3_bind_int64(s, i, v) });
    }

    fn int_or_null(&mut self, v: Option<i64>) {
        match v {
            Some(v) => self.int(v),
            None => self.null(),
        }
    }

    fn real_or_null(&mut self, v: Option<f64>) {
        match v {
            Some(v) => self.next(|s, i| unsafe { ffi::sqlite3_bind_double(s, i, v) }),
            None => self.null(),
        }
    }

    fn null(&mut self) {
        self.next(|s, i| unsafe { ffi::sqlite3_bind_null(s, i) });
    }

    /// A text bound in place (`SQLITE_STATIC`): valid until [`RawInsert::run`] clears
    /// the bindings, within the borrow of the rows it came from.
    fn text(&mut self, v: &str) {
        self.next(|s, i| match c_int::try_from(v.len()) {
            Ok(len) => unsafe {
                ffi::sqlite3_bind_text(s, i, v.as_ptr().cast(), len, ffi::SQLITE_STATIC())
            },
            Err(_) => ffi::SQLITE_TOOBIG,
        });
    }

    fn text_or_null(&mut self, v: Option<&str>) {
        match v {
            Some(v) => self.text(v),
            None => self.null(),
        }
    }
}

/// The error SQLite reports for `rc` on `db`, with its message.
///
/// # Safety
/// `db` is an open connection.
unsafe fn error(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Error {
    let message = unsafe {
        let m = ffi::sqlite3_errmsg(db);
        (!m.is_null()).then(|| CStr::from_ptr(m).to_string_lossy().into_owned())
    };
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), message)
}

fn failure(rc: c_int, message: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(message.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::index::open;
    use crate::record::index_insert::tests::{row, table};
    use crate::record::index_insert::{big, Inserter};

    /// rusqlite's binding of a row, as the index bound rows before: the reference the
    /// binding in place is held to.
    fn insert_through_rusqlite(conn: &Connection, r: &IndexRow) {
        let u = r.usage;
        let status = if r.error_kind.is_some() {
            "error"
        } else {
            "ok"
        };
        let sql = format!(
            "INSERT INTO llm_calls VALUES ({})",
            vec!["?"; COLUMN_COUNT].join(",")
        );
        conn.execute(
            &sql,
            rusqlite::params![
                r.number as i64,
                r.time,
                r.role,
                r.reference,
                r.backend,
                r.model,
                r.dialect,
                r.stream,
                status,
                r.error_kind,
                u.map(|u| big(u.input)),
                u.map(|u| big(u.cached_input)),
                u.map(|u| big(u.cache_write)),
                u.map(|u| big(u.output)),
                u.map(|u| big(u.reasoning)),
                r.cost_usd,
                r.provider_cost_usd,
                r.latency_ms,
                r.ttfb_ms,
                r.attempts,
                r.prompt_digest,
                r.location.segment,
                r.location.offset as i64,
                r.location.len,
                r.client_key,
                r.client_dialect,
                r.cache_key,
                r.cache_hit.map(|n| n as i64),
            ],
        )
        .unwrap();
    }

    /// Rows bound in place hold, column for column, what rusqlite's binding stores: every
    /// optional column set and not, empty and non-ASCII texts, a NUL inside a text, the
    /// largest counts, and a cost that is no number.
    #[test]
    fn rows_bound_in_place_hold_what_rusqlite_binds() {
        let mut rows: Vec<IndexRow> = (1..=2 * 16 + 3).map(row).collect();
        rows[0].model = "モデル\0after-nul".into();
        rows[1].reference = String::new();
        rows[2].error_kind = Some("RateLimited".into());
        rows[3].cost_usd = Some(f64::NAN);
        rows[4].cache_key = Some("k".repeat(64));
        rows[5].cache_hit = Some(u64::MAX);
        rows[6].location.offset = u64::MAX;
        rows[7].stream = true;
        rows[8].dialect = None;
        rows[9].ttfb_ms = Some(3.5);
        rows[10].provider_cost_usd = Some(0.25);
        let dir = tempfile::tempdir().unwrap();
        let mut in_place = Inserter::new(open(&dir.path().join("in-place.sqlite")).unwrap());
        in_place.insert_all(&rows).unwrap();
        let reference = open(&dir.path().join("rusqlite.sqlite")).unwrap();
        for r in &rows {
            insert_through_rusqlite(&reference, r);
        }
        let held = table(in_place.conn());
        assert_eq!(held.len(), rows.len());
        for (i, (a, b)) in held.iter().zip(table(&reference)).enumerate() {
            assert_eq!(a, &b, "row {i}");
        }
    }

    /// A statement given another count of rows than it was prepared for refuses them,
    /// and is left ready for a right count.
    #[test]
    fn a_statement_refuses_rows_of_another_count() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("index.sqlite")).unwrap();
        let sql = format!(
            "INSERT INTO llm_calls VALUES ({})",
            vec!["?"; COLUMN_COUNT].join(",")
        );
        let mut one = RawInsert::prepare(&conn, &sql, 1).unwrap();
        let rows: Vec<IndexRow> = (1..=2).map(row).collect();
        assert!(one.run(&rows).is_err());
        assert!(RawInsert::prepare(&conn, &sql, 2).is_err());
        one.run(&rows[..1]).unwrap();
        assert_eq!(table(&conn).len(), 1);
    }
}

//! Kept conversations in the data directory: `conversations.sqlite`, beside the call
//! log, so that a thread or a chain of responses goes on after the gateway restarts.
//!
//! Two tables: `kept` (a turn per row, keyed by kind, owner and id, its JSON and when it
//! expires) and `kept_items` (which turn holds an item id, for `item_reference`). The
//! file's `user_version` is its format: a later format migrates from it, and a file
//! newer than this build is refused rather than written in a shape it does not know.
//! Writes are committed before the call's last byte goes out (WAL, `synchronous =
//! NORMAL`: a turn survives the gateway's crash; an OS crash may lose the latest).
//! Expired turns are purged as new ones are kept, one sweep per [`SWEEP_EVERY`].

use super::{Kind, Row};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The file in the data directory.
pub(crate) const FILE: &str = "conversations.sqlite";

/// The format this build writes.
const FORMAT: i64 = 1;

/// Turns kept between two sweeps of the expired ones.
const SWEEP_EVERY: u64 = 256;

/// `conversations.sqlite`, open.
pub(crate) struct Local {
    db: Mutex<Connection>,
    kept: AtomicU64,
}

fn fail(doing: &str, e: rusqlite::Error) -> String {
    format!("{FILE}: {doing}: {e}")
}

impl Local {
    /// Opens (creating) the file in `dir`.
    pub(crate) fn open(dir: &Path) -> Result<Local, String> {
        let path = dir.join(FILE);
        let db = Connection::open(&path).map_err(|e| fail("opening", e))?;
        db.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| fail("setting its busy timeout", e))?;
        db.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| fail("turning on its write-ahead log", e))?;
        db.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| fail("setting its synchronous mode", e))?;
        let format: i64 = db
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| fail("reading its format", e))?;
        if format > FORMAT {
            return Err(format!(
                "{}: its format is {format}, newer than this gateway's {FORMAT}; run a newer switchyard, or move the file away (its conversations are then lost)",
                path.display()
            ));
        }
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS kept (
                kind TEXT NOT NULL,
                owner TEXT NOT NULL,
                id TEXT NOT NULL,
                created INTEGER NOT NULL,
                expires INTEGER NOT NULL,
                turn TEXT NOT NULL,
                PRIMARY KEY (kind, owner, id)
            );
            CREATE INDEX IF NOT EXISTS kept_expires ON kept (expires);
            CREATE TABLE IF NOT EXISTS kept_items (
                owner TEXT NOT NULL,
                item_id TEXT NOT NULL,
                id TEXT NOT NULL,
                PRIMARY KEY (owner, item_id)
            );
            PRAGMA user_version = 1;",
        )
        .map_err(|e| fail("creating its tables", e))?;
        Ok(Local {
            db: Mutex::new(db),
            kept: AtomicU64::new(0),
        })
    }

    fn db(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.db.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The turn's JSON, when held and not expired at `now`.
    pub(crate) fn get(
        &self,
        kind: Kind,
        owner: &str,
        id: &str,
        now: i64,
    ) -> Result<Option<String>, String> {
        self.db()
            .prepare_cached(
                "SELECT turn FROM kept WHERE kind = ?1 AND owner = ?2 AND id = ?3 AND expires > ?4",
            )
            .and_then(|mut s| {
                s.query_row(params![kind.as_str(), owner, id, now], |r| r.get(0))
                    .optional()
            })
            .map_err(|e| fail("reading a turn", e))
    }

    /// The JSON of the response turn holding item `item_id`.
    pub(crate) fn item(
        &self,
        owner: &str,
        item_id: &str,
        now: i64,
    ) -> Result<Option<String>, String> {
        self.db()
            .prepare_cached(
                "SELECT k.turn FROM kept_items i
                 JOIN kept k ON k.kind = 'response' AND k.owner = i.owner AND k.id = i.id
                 WHERE i.owner = ?1 AND i.item_id = ?2 AND k.expires > ?3",
            )
            .and_then(|mut s| {
                s.query_row(params![owner, item_id, now], |r| r.get(0))
                    .optional()
            })
            .map_err(|e| fail("finding an item", e))
    }

    /// Keeps a turn (replacing one of the same id), with its items.
    pub(crate) fn put(&self, row: &Row) -> Result<(), String> {
        let mut db = self.db();
        let tx = db.transaction().map_err(|e| fail("keeping a turn", e))?;
        tx.prepare_cached(
            "INSERT OR REPLACE INTO kept (kind, owner, id, created, expires, turn)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .and_then(|mut s| {
            s.execute(params![
                row.kind,
                row.owner,
                row.id,
                row.created,
                row.expires,
                row.turn
            ])
        })
        .map_err(|e| fail("keeping a turn", e))?;
        {
            let mut s = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO kept_items (owner, item_id, id) VALUES (?1, ?2, ?3)",
                )
                .map_err(|e| fail("keeping a turn's items", e))?;
            for item in &row.items {
                s.execute(params![row.owner, item, row.id])
                    .map_err(|e| fail("keeping a turn's items", e))?;
            }
        }
        if self
            .kept
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(SWEEP_EVERY)
        {
            sweep(&tx, row.created).map_err(|e| fail("purging expired turns", e))?;
        }
        tx.commit().map_err(|e| fail("keeping a turn", e))
    }

    /// Forgets a turn and its items; whether it was held.
    pub(crate) fn delete(
        &self,
        kind: Kind,
        owner: &str,
        id: &str,
        now: i64,
    ) -> Result<bool, String> {
        let mut db = self.db();
        let tx = db.transaction().map_err(|e| fail("deleting a turn", e))?;
        let n = tx
            .execute(
                "DELETE FROM kept WHERE kind = ?1 AND owner = ?2 AND id = ?3 AND expires > ?4",
                params![kind.as_str(), owner, id, now],
            )
            .map_err(|e| fail("deleting a turn", e))?;
        if kind == Kind::Response {
            tx.execute(
                "DELETE FROM kept_items WHERE owner = ?1 AND id = ?2",
                params![owner, id],
            )
            .map_err(|e| fail("deleting a turn's items", e))?;
        }
        tx.commit().map_err(|e| fail("deleting a turn", e))?;
        Ok(n > 0)
    }
}

/// Removes the turns expired at `now` and the items they held.
fn sweep(tx: &rusqlite::Transaction<'_>, now: i64) -> rusqlite::Result<()> {
    tx.execute(
        "DELETE FROM kept_items WHERE id IN (SELECT id FROM kept WHERE kind = 'response' AND expires <= ?1)",
        params![now],
    )?;
    tx.execute("DELETE FROM kept WHERE expires <= ?1", params![now])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, owner: &str, created: i64, expires: i64, items: &[&str]) -> Row {
        Row {
            kind: "response",
            owner: owner.into(),
            id: id.into(),
            created,
            expires,
            turn: format!("{{\"input\":[],\"output\":[],\"previous\":\"{id}-before\"}}"),
            items: items.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn turns_are_scoped_expire_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let local = Local::open(dir.path()).unwrap();
        local
            .put(&row("resp_a", "alice", 100, 200, &["rs_1"]))
            .unwrap();
        assert!(local
            .get(Kind::Response, "alice", "resp_a", 150)
            .unwrap()
            .is_some());
        // Another owner, another kind, or past its expiry: not held.
        assert!(local
            .get(Kind::Response, "bob", "resp_a", 150)
            .unwrap()
            .is_none());
        assert!(local
            .get(Kind::Thread, "alice", "resp_a", 150)
            .unwrap()
            .is_none());
        assert!(local
            .get(Kind::Response, "alice", "resp_a", 200)
            .unwrap()
            .is_none());
        assert!(local.item("alice", "rs_1", 150).unwrap().is_some());
        assert!(local.item("bob", "rs_1", 150).unwrap().is_none());
        assert!(local.item("alice", "rs_1", 250).unwrap().is_none());
        drop(local);
        let local = Local::open(dir.path()).unwrap();
        assert!(local
            .get(Kind::Response, "alice", "resp_a", 150)
            .unwrap()
            .is_some());
        assert!(!local.delete(Kind::Response, "bob", "resp_a", 150).unwrap());
        assert!(local
            .delete(Kind::Response, "alice", "resp_a", 150)
            .unwrap());
        assert!(local.item("alice", "rs_1", 150).unwrap().is_none());
    }

    #[test]
    fn expired_turns_are_swept_and_a_newer_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let local = Local::open(dir.path()).unwrap();
        // The first keep sweeps: the expired turn and its items go.
        local.put(&row("resp_old", "", 10, 20, &["x"])).unwrap();
        local.kept.store(0, Ordering::Relaxed);
        local.put(&row("resp_new", "", 30, 90, &["y"])).unwrap();
        let left: i64 = local
            .db()
            .query_row("SELECT count(*) FROM kept_items", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 1);
        local.db().pragma_update(None, "user_version", 9).unwrap();
        drop(local);
        let e = Local::open(dir.path()).err().unwrap();
        assert!(e.contains("format is 9") && e.contains("newer"), "{e}");
    }
}

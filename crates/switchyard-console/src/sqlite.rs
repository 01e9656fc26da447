//! [`CallSource`] over a run directory or a gateway's data directory: the rows from
//! `calls.sqlite`, a call in full from its line in `llm_log/` (through the library's
//! reader, at the place the row names); a gateway's kept conversations from its
//! `conversations.sqlite` (`sqlite_kept`).
//!
//! The index is opened read-only: the console never writes to a store it views, and
//! the recorder may be adding rows at the same moment (WAL lets both go on; a busy
//! timeout covers the instant of a checkpoint). Connections are kept for the next
//! request, since opening one costs more than most of the console's queries.

use crate::source::{
    CallRow, CallSource, CallsQuery, Filter, KeptKind, KeptPage, KeptQuery, KeptTurn, Page,
    RunBudget, Sort, SourceError, SourceResult, SpendBy, SpendPoint, SpendQuery, Status, Summary,
};
use crate::sqlite_kept;
use futures::future::BoxFuture;
use rusqlite::types::Value as Sql;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchyard::record::{self, CallRecord, Location, INDEX_FILE};

/// How long a query waits for the writer's lock (a checkpoint) before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections kept open between requests.
const KEPT: usize = 4;

/// The calls of one directory.
#[derive(Clone)]
pub struct SqliteSource {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    index: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// A temporary index built for a log that has none, removed with the source.
    scratch: Option<PathBuf>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(dir) = &self.scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// An index of `dir`'s log built in a temporary directory (the log linked into it, so
/// the rows' places are the log's own): a run recorded without the `sqlite` feature, or a
/// copied log, is viewed without writing into it.
#[cfg(unix)]
fn scratch_index(dir: &Path) -> Result<PathBuf, String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let scratch = std::env::temp_dir().join(format!(
        "switchyard-console-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    // The link's target absolute: a relative one would be read from the scratch directory.
    let made = std::fs::create_dir_all(&scratch).and_then(|()| {
        let log = dir.join(record::LOG_DIR).canonicalize()?;
        std::os::unix::fs::symlink(log, scratch.join(record::LOG_DIR))
    });
    if let Err(e) = made {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(format!(
            "cannot make a temporary index for {} in {}: {e}",
            dir.display(),
            scratch.display()
        ));
    }
    match record::rebuild_index(&scratch) {
        Ok(_) => Ok(scratch),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&scratch);
            Err(format!("cannot index {}: {e}", dir.display()))
        }
    }
}

#[cfg(not(unix))]
fn scratch_index(dir: &Path) -> Result<PathBuf, String> {
    Err(format!(
        "{} has no calls index ({INDEX_FILE}) and this platform cannot build one beside it without writing into it",
        dir.display()
    ))
}

impl SqliteSource {
    /// Opens the calls of `dir` (a run directory, or a gateway's data directory), checking
    /// that its index can be read. A log without an index (recorded without the `sqlite`
    /// feature, or copied without it) is indexed into a temporary directory, never into
    /// `dir`.
    pub fn open(dir: &Path) -> Result<SqliteSource, String> {
        let dir = record::run_dir_of(dir);
        let mut index = dir.join(INDEX_FILE);
        let mut scratch = None;
        if !index.is_file() {
            let has_log =
                record::segment_ids(&dir.join(record::LOG_DIR)).is_ok_and(|s| !s.is_empty());
            if !has_log {
                return Err(format!(
                    "{} has no calls index ({INDEX_FILE}) and no call log ({}/segment-NNNNNN.jsonl): the console reads a run directory or a gateway's data directory",
                    dir.display(),
                    record::LOG_DIR
                ));
            }
            let built = scratch_index(&dir)?;
            index = built.join(INDEX_FILE);
            scratch = Some(built);
        }
        let source = SqliteSource {
            inner: Arc::new(Inner {
                dir,
                index,
                idle: Mutex::new(Vec::new()),
                scratch,
            }),
        };
        source.inner.with(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM llm_calls WHERE number < 0",
                [],
                |_| Ok(()),
            )
        })?;
        Ok(source)
    }

    /// The directory read.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> Result<T, String> + Send + 'static,
    ) -> BoxFuture<'_, SourceResult<T>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || f(&inner))
                .await
                .map_err(|e| SourceError(format!("the console's query task failed: {e}")))?
                .map_err(SourceError)
        })
    }
}

impl Inner {
    fn connect(&self) -> Result<Connection, String> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.index, flags).map_err(|e| self.error(e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| self.error(e))?;
        Ok(conn)
    }

    fn error(&self, e: rusqlite::Error) -> String {
        format!("calls index {}: {e}", self.index.display())
    }

    /// Runs `f` on a kept connection (or a new one), keeping it after.
    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, String> {
        let kept = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match kept {
            Some(c) => c,
            None => self.connect()?,
        };
        let out = f(&conn).map_err(|e| self.error(e));
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < KEPT {
            idle.push(conn);
        }
        out
    }
}

/// A filter as SQL: the `WHERE` clause (empty when nothing is filtered) and its values.
fn where_clause(f: &Filter) -> (String, Vec<Sql>) {
    let mut terms: Vec<&str> = Vec::new();
    let mut values = Vec::new();
    let mut eq = |term: &'static str, v: &Option<String>| {
        if let Some(v) = v {
            terms.push(term);
            values.push(Sql::Text(v.clone()));
        }
    };
    eq("error_kind = ?", &f.kind);
    eq("reference = ?", &f.reference);
    eq("model = ?", &f.model);
    eq("role = ?", &f.role);
    eq("client_key = ?", &f.key);
    eq("time >= ?", &f.since);
    eq("time < ?", &f.until);
    // The role's index holds the rows of a role only: said for SQLite to read it.
    if f.role.as_deref().is_some_and(|r| !r.is_empty()) {
        terms.push(record::ROLE_INDEXED);
    }
    if let Some(text) = &f.text {
        terms.push("(instr(reference, ?) > 0 OR instr(model, ?) > 0)");
        values.push(Sql::Text(text.clone()));
        values.push(Sql::Text(text.clone()));
    }
    match f.status {
        Some(Status::Ok) => terms.push("error_kind IS NULL"),
        Some(Status::Error) => terms.push("error_kind IS NOT NULL"),
        None => {}
    }
    if terms.is_empty() {
        (String::new(), values)
    } else {
        (format!(" WHERE {}", terms.join(" AND ")), values)
    }
}

const ROW_COLUMNS: &str =
    "number, time, role, client_key, reference, model, dialect, client_dialect, stream, \
     error_kind, input_tokens, output_tokens, cost_usd, latency_ms, attempts, cache_hit";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CallRow> {
    let number: i64 = r.get(0)?;
    let error_kind: Option<String> = r.get(9)?;
    Ok(CallRow {
        id: number.to_string(),
        number: number.max(0) as u64,
        time: r.get(1)?,
        role: r.get(2)?,
        key: r.get(3)?,
        reference: r.get(4)?,
        model: r.get(5)?,
        dialect: r.get(6)?,
        client_dialect: r.get(7)?,
        stream: r.get(8)?,
        status: if error_kind.is_some() { "error" } else { "ok" },
        error_kind,
        input_tokens: r.get(10)?,
        output_tokens: r.get(11)?,
        cost_usd: r.get(12)?,
        latency_ms: r.get(13)?,
        attempts: r.get(14)?,
        cache_hit: r.get(15)?,
    })
}

/// `ORDER BY` for a sort: the number breaks ties, so pages never overlap; unknown costs
/// go last either way (they are not the cheapest calls).
fn order_by(sort: Sort, descending: bool) -> String {
    let dir = if descending { "DESC" } else { "ASC" };
    match sort {
        Sort::Time => format!("number {dir}"),
        Sort::Cost => format!("cost_usd IS NULL, cost_usd {dir}, number {dir}"),
        Sort::Latency => format!("latency_ms {dir}, number {dir}"),
        Sort::Tokens => {
            format!("COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) {dir}, number {dir}")
        }
    }
}

fn page(conn: &Connection, q: &CallsQuery) -> rusqlite::Result<Page> {
    let (clause, values) = where_clause(&q.filter);
    let total: i64 = conn.query_row(
        &format!("SELECT COUNT(*) FROM llm_calls{clause}"),
        rusqlite::params_from_iter(values.iter()),
        |r| r.get(0),
    )?;
    let sql = format!(
        "SELECT {ROW_COLUMNS} FROM llm_calls{clause} ORDER BY {} LIMIT {} OFFSET {}",
        order_by(q.sort, q.descending),
        q.limit,
        q.offset.min(i64::MAX as u64)
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let calls = stmt
        .query_map(rusqlite::params_from_iter(values.iter()), row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Page {
        calls,
        total: total.max(0) as u64,
    })
}

/// Spend per bucket and group, aggregated here over one pass of the rows: SQLite groups
/// by sorting every row, which over a million calls costs seconds; a hash map of the few
/// groups costs one scan.
fn spend(conn: &Connection, q: &SpendQuery) -> rusqlite::Result<Vec<SpendPoint>> {
    let (clause, values) = where_clause(&q.filter);
    let group = match q.by {
        SpendBy::Model => "reference",
        SpendBy::Key => "COALESCE(client_key, '')",
        SpendBy::Role => "role",
    };
    let sql = format!(
        "SELECT substr(time, 1, {}), {group}, cost_usd,
                CAST(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) AS INTEGER)
         FROM llm_calls{clause}",
        q.bucket.prefix_len()
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
    // Looked up by the borrowed texts: a string is made only for a new bucket or group.
    let mut points: HashMap<String, HashMap<String, SpendPoint>> = HashMap::new();
    while let Some(r) = rows.next()? {
        let bucket = r.get_ref(0)?.as_str()?;
        let group = r.get_ref(1)?.as_str()?;
        if !points.contains_key(bucket) {
            points.insert(bucket.to_string(), HashMap::new());
        }
        let Some(groups) = points.get_mut(bucket) else {
            continue;
        };
        if !groups.contains_key(group) {
            groups.insert(
                group.to_string(),
                SpendPoint {
                    bucket: bucket.to_string(),
                    group: group.to_string(),
                    cost_usd: 0.0,
                    calls: 0,
                    unknown_cost_calls: 0,
                    tokens: 0,
                },
            );
        }
        let Some(p) = groups.get_mut(group) else {
            continue;
        };
        p.calls += 1;
        match r.get::<_, Option<f64>>(2)? {
            Some(usd) => p.cost_usd += usd,
            None => p.unknown_cost_calls += 1,
        }
        p.tokens = p.tokens.saturating_add(r.get::<_, i64>(3)?.max(0) as u64);
    }
    let mut out: Vec<SpendPoint> = points
        .into_values()
        .flat_map(HashMap::into_values)
        .collect();
    out.sort_by(|a, b| (&a.bucket, &a.group).cmp(&(&b.bucket, &b.group)));
    Ok(out)
}

/// The most distinct values of one column a summary lists (the filters' choices).
const MOST_VALUES: usize = 200;

/// The store at a glance, in one pass of the rows aggregated here (as [`spend`], for the
/// same reason).
fn summary(conn: &Connection, source: String) -> rusqlite::Result<Summary> {
    let mut s = Summary {
        source,
        ..Summary::default()
    };
    let mut stmt = conn.prepare_cached(
        "SELECT reference, role, client_key, error_kind, cost_usd, time FROM llm_calls",
    )?;
    let mut rows = stmt.query([])?;
    let count = |map: &mut BTreeMap<String, u64>, v: &str| {
        if let Some(n) = map.get_mut(v) {
            *n += 1;
        } else if map.len() < MOST_VALUES {
            map.insert(v.to_string(), 1);
        }
    };
    let (mut first, mut last): (Option<String>, Option<String>) = (None, None);
    while let Some(r) = rows.next()? {
        s.calls += 1;
        count(&mut s.references, r.get_ref(0)?.as_str()?);
        count(&mut s.roles, r.get_ref(1)?.as_str()?);
        if let Some(key) = r.get_ref(2)?.as_str_or_null()? {
            count(&mut s.keys, key);
        }
        if let Some(kind) = r.get_ref(3)?.as_str_or_null()? {
            s.errors += 1;
            count(&mut s.kinds, kind);
        }
        match r.get::<_, Option<f64>>(4)? {
            Some(usd) => s.cost_usd += usd,
            None => s.unknown_cost_calls += 1,
        }
        let time = r.get_ref(5)?.as_str()?;
        if first.as_deref().is_none_or(|t| time < t) {
            first = Some(time.to_string());
        }
        if last.as_deref().is_none_or(|t| time > t) {
            last = Some(time.to_string());
        }
    }
    s.first_time = first;
    s.last_time = last;
    Ok(s)
}

fn location(conn: &Connection, number: i64) -> rusqlite::Result<Option<Location>> {
    conn.query_row(
        "SELECT segment, line_offset, line_length FROM llm_calls WHERE number = ?1",
        [number],
        |r| {
            Ok(Location {
                segment: r.get(0)?,
                offset: r.get::<_, i64>(1)?.max(0) as u64,
                len: r.get(2)?,
            })
        },
    )
    .optional()
}

/// Reads call `number` of `dir`: at the place its index row names, else by the log.
fn read_call(inner: &Inner, dir: &Path, number: u64) -> Result<Option<CallRecord>, String> {
    let at = if dir == inner.dir {
        inner.with(|c| location(c, number.min(i64::MAX as u64) as i64))?
    } else {
        None
    };
    let read = match at {
        Some(at) => record::read_record_at(dir, at),
        None => record::read_record(dir, number),
    };
    match read {
        Ok(r) if r.number == number => Ok(Some(r)),
        // The row pointed elsewhere (an index rebuilt under it): the log is the truth.
        Ok(_) => record::read_record(dir, number)
            .map(Some)
            .map_err(|e| e.to_string()),
        Err(_) if at.is_none() => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// The run a run replayed: `replay_of` in its `run.yaml`, else itself.
fn replayed_dir(dir: &Path) -> PathBuf {
    record::read_run_file(dir)
        .ok()
        .and_then(|v| v.get("replay_of")?.as_str().map(PathBuf::from))
        .unwrap_or_else(|| dir.to_path_buf())
}

fn run_budget(inner: &Inner) -> Result<Option<RunBudget>, String> {
    let Ok(run) = record::read_run_file(&inner.dir) else {
        return Ok(None);
    };
    let Some(serde_json::Value::Object(settings)) = run.get("settings") else {
        return Ok(None);
    };
    let sections: BTreeMap<String, serde_json::Value> = settings
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let (Some(budget), _) = switchyard::budget::Budget::read(&sections) else {
        return Ok(None);
    };
    let spend = inner.with(|c| record::run_spend_in(c, &budget.exclude_roles))?;
    Ok(Some(RunBudget {
        max_usd: budget.max_usd,
        max_calls: budget.max_calls,
        max_tokens: budget.max_tokens,
        exclude_roles: budget.exclude_roles.iter().cloned().collect(),
        spent_usd: spend.usd,
        calls: spend.calls,
        tokens: spend.tokens,
    }))
}

impl CallSource for SqliteSource {
    fn describe(&self) -> String {
        self.inner.dir.display().to_string()
    }

    fn page(&self, query: CallsQuery) -> BoxFuture<'_, SourceResult<Page>> {
        self.blocking(move |inner| inner.with(|c| page(c, &query)))
    }

    fn record(&self, id: String) -> BoxFuture<'_, SourceResult<Option<CallRecord>>> {
        self.blocking(move |inner| match id.parse::<u64>() {
            Ok(n) => read_call(inner, &inner.dir.clone(), n),
            Err(_) => Ok(None),
        })
    }

    fn replayed_record(
        &self,
        _failed: &CallRecord,
        number: u64,
    ) -> BoxFuture<'_, SourceResult<Option<CallRecord>>> {
        self.blocking(move |inner| {
            let dir = replayed_dir(&inner.dir);
            read_call(inner, &dir, number)
        })
    }

    fn spend(&self, query: SpendQuery) -> BoxFuture<'_, SourceResult<Vec<SpendPoint>>> {
        self.blocking(move |inner| inner.with(|c| spend(c, &query)))
    }

    fn summary(&self) -> BoxFuture<'_, SourceResult<Summary>> {
        let source = self.describe();
        self.blocking(move |inner| inner.with(|c| summary(c, source)))
    }

    fn key_spend(
        &self,
        since: Option<String>,
    ) -> BoxFuture<'_, SourceResult<BTreeMap<String, f64>>> {
        self.blocking(move |inner| {
            inner.with(|c| {
                record::client_key_spend(c, since.as_deref()).map(|m| m.into_iter().collect())
            })
        })
    }

    fn run_budget(&self) -> BoxFuture<'_, SourceResult<Option<RunBudget>>> {
        self.blocking(run_budget)
    }

    fn kept(&self, query: KeptQuery) -> BoxFuture<'_, SourceResult<Option<KeptPage>>> {
        self.blocking(move |inner| sqlite_kept::page(&inner.dir, &query, sqlite_kept::now_secs()))
    }

    fn kept_turn(
        &self,
        kind: KeptKind,
        key: String,
        id: String,
    ) -> BoxFuture<'_, SourceResult<Option<KeptTurn>>> {
        self.blocking(move |inner| {
            sqlite_kept::turn(&inner.dir, kind, &key, &id, sqlite_kept::now_secs())
        })
    }
}

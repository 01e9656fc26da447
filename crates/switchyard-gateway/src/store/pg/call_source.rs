//! The web console's [`CallSource`] over the PostgreSQL store: every replica's calls in
//! `llm_calls`, a call named by its id (`<replica>-<number>`), its record the stored line.
//! Read only: the console never writes to the database. The kept conversations are read
//! in `kept_source.rs`. `switchyard log view --store
//! postgres` and a gateway sharing a store (`/console`) read it through this.

use super::connect::Pool;
use super::PgError;
use futures::future::BoxFuture;
use std::collections::BTreeMap;
use switchyard::record::CallRecord;
use switchyard_console::{
    CallRow, CallSource, CallsQuery, Filter, KeptKind, KeptPage, KeptQuery, KeptTurn, Page,
    RunBudget, Sort, SourceError, SourceResult, SpendBy, SpendPoint, SpendQuery, Status, Summary,
};
use tokio_postgres::types::ToSql;

/// The calls of a PostgreSQL store.
pub struct PgCallSource {
    pool: Pool,
    shown: String,
}

impl PgCallSource {
    /// Reads through `pool`; `shown` names the store for people (its URL without the
    /// password).
    pub fn new(pool: Pool, shown: String) -> Self {
        PgCallSource { pool, shown }
    }

    /// Whether the store answers and holds the calls table (what `log view` checks before
    /// it prints its URL).
    pub async fn check(&self) -> Result<(), String> {
        let c = self.client().await.map_err(|e| e.0)?;
        c.query("SELECT 1 FROM llm_calls LIMIT 0", &[])
            .await
            .map(|_| ())
            .map_err(|e| failed(&format!("reading llm_calls in {}", self.shown), e).0)
    }

    pub(super) async fn client(&self) -> SourceResult<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|e| {
            SourceError(format!(
                "PostgreSQL store {}: no connection: {e}",
                self.shown
            ))
        })
    }
}

pub(super) fn failed(doing: &str, e: tokio_postgres::Error) -> SourceError {
    SourceError(PgError::of(doing, e).0)
}

type Params = Vec<Box<dyn ToSql + Sync + Send>>;

fn refs(p: &Params) -> Vec<&(dyn ToSql + Sync)> {
    p.iter()
        .map(|b| b.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

/// A filter as SQL with numbered placeholders.
fn where_clause(f: &Filter) -> (String, Params) {
    let mut terms: Vec<String> = Vec::new();
    let mut values: Params = Vec::new();
    let mut eq = |column: &str, op: &str, v: &Option<String>| {
        if let Some(v) = v {
            values.push(Box::new(v.clone()));
            terms.push(format!("{column} {op} ${}", values.len()));
        }
    };
    eq("error_kind", "=", &f.kind);
    eq("reference", "=", &f.reference);
    eq("model", "=", &f.model);
    eq("role", "=", &f.role);
    eq("client_key", "=", &f.key);
    eq("started_at", ">=", &f.since);
    eq("started_at", "<", &f.until);
    if let Some(text) = &f.text {
        values.push(Box::new(text.clone()));
        let n = values.len();
        terms.push(format!(
            "(strpos(reference, ${n}) > 0 OR strpos(model, ${n}) > 0)"
        ));
    }
    match f.status {
        Some(Status::Ok) => terms.push("error_kind IS NULL".into()),
        Some(Status::Error) => terms.push("error_kind IS NOT NULL".into()),
        None => {}
    }
    if terms.is_empty() {
        (String::new(), values)
    } else {
        (format!(" WHERE {}", terms.join(" AND ")), values)
    }
}

/// `ORDER BY`: time is the call's start (numbers are per replica); the id breaks ties.
fn order_by(sort: Sort, descending: bool) -> String {
    let dir = if descending { "DESC" } else { "ASC" };
    let time = format!("started_at {dir}, call_id {dir}");
    match sort {
        Sort::Time => time,
        Sort::Cost => format!("cost_usd {dir} NULLS LAST, {time}"),
        Sort::Latency => format!("latency_ms {dir}, {time}"),
        Sort::Tokens => {
            format!("COALESCE(input_tokens, 0)::numeric + COALESCE(output_tokens, 0) {dir}, {time}")
        }
    }
}

fn row(r: &tokio_postgres::Row) -> CallRow {
    let error_kind: Option<String> = r.get(9);
    CallRow {
        id: r.get(0),
        number: u64::try_from(r.get::<_, i64>(1)).unwrap_or(0),
        time: r.get(2),
        role: r.get(3),
        key: r.get(4),
        reference: r.get(5),
        model: r.get(6),
        dialect: r.get(7),
        client_dialect: r.get(8),
        status: if error_kind.is_some() { "error" } else { "ok" },
        error_kind,
        stream: r.get(10),
        input_tokens: r.get(11),
        output_tokens: r.get(12),
        cost_usd: r.get(13),
        latency_ms: r.get(14),
        attempts: i64::from(r.get::<_, i32>(15)),
        cache_hit: r.get(16),
    }
}

const ROW_COLUMNS: &str = "call_id, number, started_at, role, client_key, reference, model, dialect, \
     client_dialect, error_kind, stream, input_tokens, output_tokens, cost_usd, latency_ms, attempts, cache_hit";

impl CallSource for PgCallSource {
    fn describe(&self) -> String {
        format!("the PostgreSQL store {}", self.shown)
    }

    fn page(&self, q: CallsQuery) -> BoxFuture<'_, SourceResult<Page>> {
        Box::pin(async move {
            let c = self.client().await?;
            let (clause, values) = where_clause(&q.filter);
            let total: i64 = c
                .query_one(
                    &format!("SELECT count(*) FROM llm_calls{clause}"),
                    &refs(&values),
                )
                .await
                .map_err(|e| failed("counting calls", e))?
                .get(0);
            let sql = format!(
                "SELECT {ROW_COLUMNS} FROM llm_calls{clause} ORDER BY {} LIMIT {} OFFSET {}",
                order_by(q.sort, q.descending),
                q.limit,
                q.offset.min(i64::MAX as u64)
            );
            let rows = c
                .query(&sql, &refs(&values))
                .await
                .map_err(|e| failed("reading a page of calls", e))?;
            Ok(Page {
                calls: rows.iter().map(row).collect(),
                total: u64::try_from(total).unwrap_or(0),
            })
        })
    }

    fn record(&self, id: String) -> BoxFuture<'_, SourceResult<Option<CallRecord>>> {
        Box::pin(async move {
            let c = self.client().await?;
            let found = c
                .query_opt("SELECT record FROM llm_calls WHERE call_id = $1", &[&id])
                .await
                .map_err(|e| failed("reading a call", e))?;
            match found {
                None => Ok(None),
                Some(r) => switchyard::record::parse_record_line(r.get::<_, &[u8]>(0))
                    .map(Some)
                    .map_err(|e| {
                        SourceError(format!(
                            "PostgreSQL store: the record of {id} does not read: {e}"
                        ))
                    }),
            }
        })
    }

    fn replayed_record(
        &self,
        _failed: &CallRecord,
        _number: u64,
    ) -> BoxFuture<'_, SourceResult<Option<CallRecord>>> {
        // A gateway replays nothing: its calls name no replayed run.
        Box::pin(async { Ok(None) })
    }

    fn spend(&self, q: SpendQuery) -> BoxFuture<'_, SourceResult<Vec<SpendPoint>>> {
        Box::pin(async move {
            let c = self.client().await?;
            let (clause, values) = where_clause(&q.filter);
            let group = match q.by {
                SpendBy::Model => "reference",
                SpendBy::Key => "COALESCE(client_key, '')",
                SpendBy::Role => "role",
            };
            let sql = format!(
                "SELECT substr(started_at, 1, {}) AS b, {group} AS g, COALESCE(SUM(cost_usd), 0),
                        count(*), count(*) FILTER (WHERE cost_usd IS NULL),
                        LEAST(COALESCE(SUM(COALESCE(input_tokens, 0)::numeric + COALESCE(output_tokens, 0)), 0), 9223372036854775807)::bigint
                 FROM llm_calls{clause} GROUP BY 1, 2 ORDER BY 1, 2",
                q.bucket.prefix_len()
            );
            let rows = c
                .query(&sql, &refs(&values))
                .await
                .map_err(|e| failed("reading spend", e))?;
            Ok(rows
                .iter()
                .map(|r| SpendPoint {
                    bucket: r.get(0),
                    group: r.get(1),
                    cost_usd: r.get(2),
                    calls: u64::try_from(r.get::<_, i64>(3)).unwrap_or(0),
                    unknown_cost_calls: u64::try_from(r.get::<_, i64>(4)).unwrap_or(0),
                    tokens: u64::try_from(r.get::<_, i64>(5)).unwrap_or(0),
                })
                .collect())
        })
    }

    fn summary(&self) -> BoxFuture<'_, SourceResult<Summary>> {
        Box::pin(async move {
            let c = self.client().await?;
            let rows = c
                .query(
                    "SELECT reference, role, COALESCE(client_key, ''), COALESCE(error_kind, ''), count(*),
                            COALESCE(SUM(cost_usd), 0), count(*) FILTER (WHERE cost_usd IS NULL),
                            min(started_at), max(started_at)
                     FROM llm_calls GROUP BY 1, 2, 3, 4",
                    &[],
                )
                .await
                .map_err(|e| failed("reading the store's summary", e))?;
            let mut s = Summary {
                source: self.describe(),
                ..Summary::default()
            };
            for r in &rows {
                let calls = u64::try_from(r.get::<_, i64>(4)).unwrap_or(0);
                s.calls += calls;
                s.cost_usd += r.get::<_, f64>(5);
                s.unknown_cost_calls += u64::try_from(r.get::<_, i64>(6)).unwrap_or(0);
                let (first, last): (String, String) = (r.get(7), r.get(8));
                if s.first_time.as_ref().is_none_or(|t| first < *t) {
                    s.first_time = Some(first);
                }
                if s.last_time.as_ref().is_none_or(|t| last > *t) {
                    s.last_time = Some(last);
                }
                *s.references.entry(r.get(0)).or_default() += calls;
                *s.roles.entry(r.get(1)).or_default() += calls;
                let (key, kind): (String, String) = (r.get(2), r.get(3));
                if !key.is_empty() {
                    *s.keys.entry(key).or_default() += calls;
                }
                if !kind.is_empty() {
                    s.errors += calls;
                    *s.kinds.entry(kind).or_default() += calls;
                }
            }
            Ok(s)
        })
    }

    fn key_spend(
        &self,
        since: Option<String>,
    ) -> BoxFuture<'_, SourceResult<BTreeMap<String, f64>>> {
        Box::pin(async move {
            let c = self.client().await?;
            let since = since.unwrap_or_default();
            let rows = c
                .query(
                    "SELECT client_key, COALESCE(SUM(cost_usd), 0) FROM llm_calls
                     WHERE client_key IS NOT NULL AND started_at >= $1 GROUP BY client_key",
                    &[&since],
                )
                .await
                .map_err(|e| failed("reading the keys' spend", e))?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn run_budget(&self) -> BoxFuture<'_, SourceResult<Option<RunBudget>>> {
        Box::pin(async { Ok(None) })
    }

    fn kept(&self, query: KeptQuery) -> BoxFuture<'_, SourceResult<Option<KeptPage>>> {
        Box::pin(self.kept_page(query))
    }

    fn kept_turn(
        &self,
        kind: KeptKind,
        key: String,
        id: String,
    ) -> BoxFuture<'_, SourceResult<Option<KeptTurn>>> {
        Box::pin(async move { self.kept_one(kind, &key, &id).await })
    }
}

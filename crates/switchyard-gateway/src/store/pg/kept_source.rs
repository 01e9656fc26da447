//! The console's reading of the conversation turns replicas keep in the shared store
//! (`kept_conversations`, written by `conversations.rs`): a page of them the newest
//! first, one in full. Unexpired turns only; read only.
//!
//! A page's rows are chosen by their columns alone and only their JSON is parsed, so a
//! page costs its rows, not every kept turn's JSON. A database from before the table
//! (schema version 3) keeps none.

use super::call_source::{failed, PgCallSource};
use switchyard_console::{KeptKind, KeptPage, KeptQuery, KeptRow, KeptTurn, SourceResult};

/// What a row shows of a turn (`k` its row, `t` its JSON).
const COLUMNS: &str = "k.kind, k.owner, k.id, k.created, k.expires,
    t->>'previous', t->>'upstream',
    CASE WHEN jsonb_typeof(t->'input') = 'array' THEN jsonb_array_length(t->'input') ELSE 0 END,
    CASE WHEN jsonb_typeof(t->'output') = 'array' THEN jsonb_array_length(t->'output') ELSE 0 END,
    CASE WHEN k.kind = 'response' THEN t->'response'->>'model' END";

/// The filter: unexpired at `$1`, of key `$2` and kind `$3` when given.
const MATCHING: &str =
    "expires > $1 AND ($2::text IS NULL OR owner = $2) AND ($3::text IS NULL OR kind = $3)";

/// The newest first; the primary key breaks a tie of the same second.
const NEWEST_FIRST: &str = "created DESC, id DESC, owner DESC, kind DESC";

/// Seconds since the epoch, as the turns' times are kept.
fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs().min(i64::MAX as u64) as i64)
}

fn row(r: &tokio_postgres::Row) -> KeptRow {
    KeptRow {
        kind: r.get(0),
        key: r.get(1),
        id: r.get(2),
        created: r.get(3),
        expires: r.get(4),
        previous: r.get(5),
        upstream: r.get(6),
        input_items: u64::try_from(r.get::<_, i32>(7)).unwrap_or(0),
        output_items: u64::try_from(r.get::<_, i32>(8)).unwrap_or(0),
        model: r.get(9),
    }
}

impl PgCallSource {
    /// Whether the store has the table of kept conversations.
    async fn keeps(&self, c: &deadpool_postgres::Object) -> SourceResult<bool> {
        Ok(
            c.query_one("SELECT to_regclass('kept_conversations') IS NOT NULL", &[])
                .await
                .map_err(|e| failed("looking for the kept conversations", e))?
                .get(0),
        )
    }

    /// A page of the unexpired kept turns; `None` when the store has no such table.
    pub(super) async fn kept_page(&self, q: KeptQuery) -> SourceResult<Option<KeptPage>> {
        let c = self.client().await?;
        if !self.keeps(&c).await? {
            return Ok(None);
        }
        let now = now_secs();
        let kind = q.kind.map(KeptKind::as_str);
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&now, &q.key, &kind];
        let total: i64 = c
            .query_one(
                &format!("SELECT count(*) FROM kept_conversations WHERE {MATCHING}"),
                &params,
            )
            .await
            .map_err(|e| failed("counting the kept conversations", e))?
            .get(0);
        let sql = format!(
            "WITH p AS (
                SELECT kind, owner, id FROM kept_conversations WHERE {MATCHING}
                ORDER BY {NEWEST_FIRST} LIMIT {} OFFSET {})
             SELECT {COLUMNS} FROM p JOIN kept_conversations k USING (kind, owner, id),
                  LATERAL (SELECT k.turn::jsonb AS t) j
             ORDER BY {NEWEST_FIRST}",
            q.limit,
            q.offset.min(i64::MAX as u64)
        );
        let rows = c
            .query(&sql, &params)
            .await
            .map_err(|e| failed("reading a page of kept conversations", e))?;
        Ok(Some(KeptPage {
            turns: rows.iter().map(row).collect(),
            total: u64::try_from(total).unwrap_or(0),
        }))
    }

    /// One unexpired kept turn in full.
    pub(super) async fn kept_one(
        &self,
        kind: KeptKind,
        key: &str,
        id: &str,
    ) -> SourceResult<Option<KeptTurn>> {
        let c = self.client().await?;
        if !self.keeps(&c).await? {
            return Ok(None);
        }
        let now = now_secs();
        let found = c
            .query_opt(
                &format!(
                    "SELECT {COLUMNS}, k.turn FROM kept_conversations k,
                          LATERAL (SELECT k.turn::jsonb AS t) j
                     WHERE k.kind = $1 AND k.owner = $2 AND k.id = $3 AND k.expires > $4"
                ),
                &[&kind.as_str(), &key, &id, &now],
            )
            .await
            .map_err(|e| failed("reading a kept conversation", e))?;
        Ok(found.map(|r| KeptTurn {
            row: row(&r),
            turn: r.get(10),
        }))
    }
}

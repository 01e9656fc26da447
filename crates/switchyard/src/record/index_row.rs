//! What the calls index holds, with or without SQLite: its file name and schema, and
//! one call's row (made by the recorder's writer for every record it writes).

use super::segment::Location;
use super::CallRecord;

/// The index's file name in a run directory.
pub const INDEX_FILE: &str = "calls.sqlite";

/// The index's schema (also in `docs/recording.md`).
pub const INDEX_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS llm_calls (
    number              INTEGER PRIMARY KEY, -- the record's number
    time                TEXT NOT NULL,       -- start, RFC 3339 UTC
    role                TEXT NOT NULL,       -- '' for calls made without a role
    reference           TEXT NOT NULL,
    backend             TEXT NOT NULL,
    model               TEXT NOT NULL,
    dialect             TEXT,
    stream              INTEGER NOT NULL,    -- 1 when streamed
    status              TEXT NOT NULL,       -- 'ok' or 'error'
    error_kind          TEXT,                -- ErrorKind name, NULL when ok
    input_tokens        INTEGER,             -- every prompt token (cached included); NULL: no usage
    cached_input_tokens INTEGER,
    cache_write_tokens  INTEGER,
    output_tokens       INTEGER,             -- every generated token (reasoning included)
    reasoning_tokens    INTEGER,
    cost_usd            REAL,                -- NULL when the model has no price
    provider_cost_usd   REAL,                -- as reported by the provider, if it does
    latency_ms          REAL NOT NULL,       -- start to end
    ttfb_ms             REAL,                -- start to first byte (streams)
    attempts            INTEGER NOT NULL,
    prompt_digest       TEXT NOT NULL,       -- what replay matches on
    segment             INTEGER NOT NULL,    -- the record's line: llm_log/segment-<segment>.jsonl,
    line_offset         INTEGER NOT NULL,    --   from this byte offset,
    line_length         INTEGER NOT NULL,    --   this many bytes (without the newline)
    client_key          TEXT,                -- the gateway client key's name; NULL elsewhere
    client_dialect      TEXT,                -- the dialect the gateway's client spoke; NULL elsewhere
    cache_key           TEXT,                -- the cache key this call answers (a success entered in the cache); NULL otherwise
    cache_hit           INTEGER              -- for a call answered from the cache, the call that answered it
);
CREATE INDEX IF NOT EXISTS llm_calls_role ON llm_calls(role) WHERE role <> '';";

/// The indexes on the columns added since the first schema, made once [`INDEX_SCHEMA`]'s
/// table has them (an older index gets the columns first). The client key's holds only
/// the rows that have one: a library's calls and a gateway's without client keys have
/// none, and an entry `(NULL, time)` for each of them was a B-tree insert per call that
/// no query reads (`WHERE client_key = ?` and `WHERE client_key IS NOT NULL` use the
/// partial index). The role's index ([`INDEX_SCHEMA`]) holds only the rows of a role, for
/// the same reason: a gateway's calls have none (`''`), and a query by a role says
/// `role = ? AND role <> ''` for SQLite to read it ([`ROLE_INDEXED`]).
pub const INDEX_KEYS_SCHEMA: &str =
    "CREATE INDEX IF NOT EXISTS llm_calls_client_key ON llm_calls(client_key, time) WHERE client_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS llm_calls_cache_key ON llm_calls(cache_key) WHERE cache_key IS NOT NULL;";

/// The term a query by a role adds to `role = ?` (a role that is not `''`) so that
/// SQLite reads the role's index, which holds only such rows.
pub const ROLE_INDEXED: &str = "role <> ''";

/// The index schema's version (`PRAGMA user_version`): 2 is the schema of record format 2
/// (segment files) with `client_key`; 3 adds `client_dialect`, `cache_key` and
/// `cache_hit` (the response cache's entries, read by the cache as replay reads the
/// rest). An older index gets the missing columns when opened, the cache's filled from
/// the log.
pub const INDEX_VERSION: i64 = 3;

/// One row of `llm_calls`.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexRow {
    pub(super) number: u64,
    pub(super) time: String,
    pub(super) role: String,
    pub(super) reference: String,
    pub(super) backend: String,
    pub(super) model: String,
    pub(super) dialect: Option<&'static str>,
    pub(super) stream: bool,
    pub(super) error_kind: Option<String>,
    pub(super) usage: Option<switchyard_wire::Usage>,
    pub(super) cost_usd: Option<f64>,
    pub(super) provider_cost_usd: Option<f64>,
    pub(super) latency_ms: f64,
    pub(super) ttfb_ms: Option<f64>,
    pub(super) attempts: u32,
    pub(super) prompt_digest: String,
    pub(super) location: Location,
    pub(super) client_key: Option<String>,
    pub(super) client_dialect: Option<&'static str>,
    pub(super) cache_key: Option<String>,
    pub(super) cache_hit: Option<u64>,
}

impl IndexRow {
    /// The row of a record whose line lies at `location`.
    pub fn new(r: &CallRecord, location: Location) -> Self {
        IndexRow {
            number: r.number,
            time: r.timings.started_at.clone(),
            role: r.role_name().to_string(),
            // As in the record's line (a model id is the client's text).
            reference: crate::internal::redact::redact(&r.reference).into_owned(),
            backend: r.backend.clone(),
            model: crate::internal::redact::redact(&r.model).into_owned(),
            dialect: r.dialect.map(|d| d.as_str()),
            stream: r.stream,
            error_kind: r.error.as_ref().map(|e| e.kind.clone()),
            usage: r.usage,
            cost_usd: r.cost_usd,
            provider_cost_usd: r.provider_cost_usd,
            latency_ms: r.timings.duration_ms,
            ttfb_ms: r.timings.first_byte_ms,
            attempts: r.attempts.len() as u32,
            prompt_digest: r.prompt_digest.clone(),
            location,
            client_key: r.client_key.clone(),
            client_dialect: r.client_dialect.map(|d| d.as_str()),
            cache_key: crate::cache::entry_key(r).map(str::to_string),
            cache_hit: r.cache_hit,
        }
    }

    /// [`IndexRow::new`] of a record that is written and about to be dropped (the
    /// recorder's writer): its strings are moved into the row, not copied. `line_clean`:
    /// the line written holds no key in any of its strings
    /// ([`crate::internal::redact::redact_json`]), so the reference and the model, which
    /// it holds, are not searched again. `has_raw`: the record has raw bytes, in it or
    /// written after its line (format 4).
    pub(crate) fn taking(
        r: &mut CallRecord,
        location: Location,
        line_clean: bool,
        has_raw: bool,
    ) -> Self {
        use std::mem::take;
        let cache_key = crate::cache::entry_key_with(r, has_raw).map(str::to_string);
        let mut reference = take(&mut r.reference);
        let mut model = take(&mut r.model);
        if !line_clean {
            crate::internal::redact::redact_string(&mut reference);
            crate::internal::redact::redact_string(&mut model);
        }
        IndexRow {
            number: r.number,
            time: take(&mut r.timings.started_at),
            role: r.role.take().unwrap_or_default(),
            reference,
            backend: take(&mut r.backend),
            model,
            dialect: r.dialect.map(|d| d.as_str()),
            stream: r.stream,
            error_kind: r.error.as_mut().map(|e| take(&mut e.kind)),
            usage: r.usage,
            cost_usd: r.cost_usd,
            provider_cost_usd: r.provider_cost_usd,
            latency_ms: r.timings.duration_ms,
            ttfb_ms: r.timings.first_byte_ms,
            attempts: r.attempts.len() as u32,
            prompt_digest: take(&mut r.prompt_digest),
            location,
            client_key: r.client_key.take(),
            client_dialect: r.client_dialect.map(|d| d.as_str()),
            cache_key,
            cache_hit: r.cache_hit,
        }
    }

    /// Places the row's record at `location` (known once its batch is written).
    pub(crate) fn set_location(&mut self, location: Location) {
        self.location = location;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer's row (strings moved out of the record) is the row every other
    /// indexer makes (strings copied), for a record with every optional column set.
    #[test]
    fn a_row_taken_from_a_record_is_the_row_made_from_it() {
        let mut full = crate::record::writer::tests::sample();
        full.role = Some("planner".into());
        full.client_key = Some("alice".into());
        full.client_dialect = Some(switchyard_wire::Dialect::Messages);
        full.cache_key = Some("k".repeat(64));
        full.error = Some(crate::record::ErrorRecord {
            kind: "RateLimited".into(),
            message: "slow down".into(),
            provider: None,
            fields: Default::default(),
        });
        for mut record in [crate::record::writer::tests::sample(), full] {
            let at = Location {
                segment: 3,
                offset: 17,
                len: 99,
            };
            let made = IndexRow::new(&record, at);
            let has_raw = record.raw.is_some();
            assert_eq!(
                IndexRow::taking(&mut record.clone(), at, true, has_raw),
                made
            );
            assert_eq!(IndexRow::taking(&mut record, at, false, has_raw), made);
        }
    }
}

//! Call records into `llm_calls`: each record's line as the segment files hold it (byte
//! for byte) beside its queryable columns, a batch per statement, idempotent by call id.

use super::PgError;
use switchyard::record::CallRecord;
use tokio_postgres::Client;

/// The id a record is stored under: unique across replicas, since each replica has its
/// own id and numbers its own records.
pub fn call_id(replica: &str, number: u64) -> String {
    format!("{replica}-{number}")
}

/// The columns of a batch, one vector per column (sent as arrays and unnested: one
/// statement and one round trip for the whole batch).
#[derive(Default)]
struct Columns {
    call_id: Vec<String>,
    number: Vec<i64>,
    started_at: Vec<String>,
    role: Vec<String>,
    reference: Vec<String>,
    route: Vec<Option<String>>,
    backend: Vec<String>,
    model: Vec<String>,
    dialect: Vec<Option<&'static str>>,
    client_dialect: Vec<Option<&'static str>>,
    client_key: Vec<Option<String>>,
    stream: Vec<bool>,
    input_tokens: Vec<Option<i64>>,
    output_tokens: Vec<Option<i64>>,
    cost_usd: Vec<Option<f64>>,
    error_kind: Vec<Option<String>>,
    cut: Vec<bool>,
    latency_ms: Vec<f64>,
    ttfb_ms: Vec<Option<f64>>,
    attempts: Vec<i32>,
    cache_key: Vec<Option<String>>,
    cache_hit: Vec<Option<i64>>,
    record: Vec<Vec<u8>>,
}

fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Columns {
    fn push(&mut self, replica: &str, r: &CallRecord, line: Vec<u8>) {
        self.call_id.push(call_id(replica, r.number));
        self.number.push(big(r.number));
        self.started_at.push(r.timings.started_at.clone());
        self.role.push(r.role_name().to_string());
        self.reference.push(r.reference.clone());
        self.route.push(r.route.clone());
        self.backend.push(r.backend.clone());
        self.model.push(r.model.clone());
        self.dialect.push(r.dialect.map(|d| d.as_str()));
        self.client_dialect
            .push(r.client_dialect.map(|d| d.as_str()));
        self.client_key.push(r.client_key.clone());
        self.stream.push(r.stream);
        self.input_tokens.push(r.usage.map(|u| big(u.input)));
        self.output_tokens.push(r.usage.map(|u| big(u.output)));
        self.cost_usd.push(r.cost_usd);
        self.error_kind
            .push(r.error.as_ref().map(|e| e.kind.clone()));
        self.cut.push(r.cut);
        self.latency_ms.push(r.timings.duration_ms);
        self.ttfb_ms.push(r.timings.first_byte_ms);
        self.attempts
            .push(i32::try_from(r.attempts.len()).unwrap_or(i32::MAX));
        self.cache_key.push(r.cache_key.clone());
        self.cache_hit.push(r.cache_hit.map(big));
        self.record.push(line);
    }
}

/// Inserts the record lines `lines` (of the replica `replica`, each with its number) in
/// one statement; a record whose call id is already there is skipped, so a batch retried
/// after an unknown outcome (a connection dropped at commit) writes nothing twice. How
/// many rows were new comes back. A line that is not a call record is named and left
/// out (it stays in the replica's own log).
pub async fn insert_lines(
    client: &Client,
    replica: &str,
    lines: Vec<(u64, Vec<u8>)>,
) -> Result<u64, PgError> {
    let mut c = Columns::default();
    for (number, line) in lines {
        // The columns are fields every line holds: a line of format 3 is not derived.
        match switchyard::record::parse_record_fields(&line) {
            Ok(r) => c.push(replica, &r, line),
            Err(e) => tracing::error!(
                number,
                "PostgreSQL store: record {number} of this replica's log does not read ({e}); it is not shipped"
            ),
        }
    }
    if c.call_id.is_empty() {
        return Ok(0);
    }
    client
        .execute(
            "INSERT INTO llm_calls (call_id, replica, number, started_at, role, reference,
                route, backend, model, dialect, client_dialect, client_key, stream,
                input_tokens, output_tokens, cost_usd, error_kind, cut, latency_ms, ttfb_ms,
                attempts, cache_key, cache_hit, record)
             SELECT u.call_id, $1, u.number, u.started_at, u.role, u.reference, u.route,
                u.backend, u.model, u.dialect, u.client_dialect, u.client_key, u.stream,
                u.input_tokens, u.output_tokens, u.cost_usd, u.error_kind, u.cut,
                u.latency_ms, u.ttfb_ms, u.attempts, u.cache_key, u.cache_hit, u.record
             FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],
                $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
                $13::boolean[], $14::bigint[], $15::bigint[], $16::float8[], $17::text[],
                $18::boolean[], $19::float8[], $20::float8[], $21::integer[], $22::text[],
                $23::bigint[], $24::bytea[])
                AS u(call_id, number, started_at, role, reference, route, backend, model,
                dialect, client_dialect, client_key, stream, input_tokens, output_tokens,
                cost_usd, error_kind, cut, latency_ms, ttfb_ms, attempts, cache_key,
                cache_hit, record)
             ON CONFLICT (call_id) DO NOTHING",
            &[
                &replica,
                &c.call_id,
                &c.number,
                &c.started_at,
                &c.role,
                &c.reference,
                &c.route,
                &c.backend,
                &c.model,
                &c.dialect,
                &c.client_dialect,
                &c.client_key,
                &c.stream,
                &c.input_tokens,
                &c.output_tokens,
                &c.cost_usd,
                &c.error_kind,
                &c.cut,
                &c.latency_ms,
                &c.ttfb_ms,
                &c.attempts,
                &c.cache_key,
                &c.cache_hit,
                &c.record,
            ],
        )
        .await
        .map_err(|e| PgError::of("writing a batch of call records", e))
}

/// Inserts `records` (serialised as the segment files would hold them): for callers
/// that have records rather than lines (tests, imports).
pub async fn insert_batch(
    client: &Client,
    replica: &str,
    records: &[CallRecord],
) -> Result<u64, PgError> {
    let lines = records
        .iter()
        .map(|r| {
            serde_json::to_vec(r)
                .map(|line| (r.number, line))
                .map_err(|e| PgError(format!("PostgreSQL store: record {}: {e}", r.number)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    insert_lines(client, replica, lines).await
}

/// The highest record number of `replica` in the database (0: none yet): where its
/// shipping goes on from.
pub async fn last_number(client: &Client, replica: &str) -> Result<u64, PgError> {
    let row = client
        .query_one(
            "SELECT coalesce(max(number), 0) FROM llm_calls WHERE replica = $1",
            &[&replica],
        )
        .await
        .map_err(|e| PgError::of("reading where this replica's records stop", e))?;
    Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}

/// The records of the database, oldest first by time, then replica and number.
pub async fn read_all(client: &Client) -> Result<Vec<CallRecord>, PgError> {
    Ok(read_with_ids(client)
        .await?
        .into_iter()
        .map(|(_, r)| r)
        .collect())
}

/// [`read_all`], each record with its call id. A record that does not read is set aside
/// (logged as a warning, naming its call id) and the others are read.
pub async fn read_with_ids(client: &Client) -> Result<Vec<(String, CallRecord)>, PgError> {
    let rows = client
        .query(
            "SELECT call_id, record FROM llm_calls ORDER BY started_at, replica, number",
            &[],
        )
        .await
        .map_err(|e| PgError::of("reading call records", e))?;
    Ok(rows
        .iter()
        .filter_map(|row| {
            let id: String = row.get(0);
            match switchyard::record::parse_record_line(row.get::<_, &[u8]>(1)) {
                Ok(r) => Some((id, r)),
                Err(e) => {
                    tracing::warn!(
                        "PostgreSQL store: the record of {id} does not read ({e}); it is set aside, the others are read"
                    );
                    None
                }
            }
        })
        .collect())
}

/// One record: by its call id (`<replica>-<number>`), or by a number only one replica
/// has (several is an error naming their ids).
pub async fn read_call(client: &Client, call: &str) -> Result<CallRecord, PgError> {
    let rows = match call.parse::<i64>() {
        Ok(number) => {
            client
                .query(
                    "SELECT call_id, record FROM llm_calls WHERE number = $1 ORDER BY call_id",
                    &[&number],
                )
                .await
        }
        Err(_) => {
            client
                .query(
                    "SELECT call_id, record FROM llm_calls WHERE call_id = $1",
                    &[&call],
                )
                .await
        }
    }
    .map_err(|e| PgError::of(&format!("reading call {call}"), e))?;
    match rows.as_slice() {
        [row] => switchyard::record::parse_record_line(row.get::<_, &[u8]>(1)).map_err(|e| {
            PgError(format!(
                "PostgreSQL store: the record of {} does not read: {e}",
                row.get::<_, &str>(0)
            ))
        }),
        [] => Err(PgError(format!(
            "PostgreSQL store: no call {call}; give a call id as `log export --store` shows them (`<replica>-<number>`)"
        ))),
        many => {
            let ids: Vec<&str> = many.iter().map(|r| r.get(0)).collect();
            Err(PgError(format!(
                "PostgreSQL store: several replicas have a call {call}: {}; give one of these ids",
                ids.join(", ")
            )))
        }
    }
}

//! Call records into `llm_calls`: the whole [`CallRecord`] as `jsonb` beside its
//! queryable columns, a batch per transaction, idempotent by call id.

use super::PgError;
use switchyard::record::CallRecord;
use tokio_postgres::Client;

/// The id a record is stored under: unique across replicas, since each replica has its
/// own id and numbers its own records.
pub fn call_id(replica: &str, number: u64) -> String {
    format!("{replica}-{number}")
}

/// Inserts `records` (of the replica `replica`) in one transaction; a record whose call id
/// is already there is skipped, so a batch retried after an unknown outcome (a dropped
/// connection at commit) writes nothing twice. How many rows were new comes back.
pub async fn insert_batch(
    client: &mut Client,
    replica: &str,
    records: &[CallRecord],
) -> Result<u64, PgError> {
    let doing = "writing a batch of call records";
    let tx = client
        .transaction()
        .await
        .map_err(|e| PgError::of(doing, e))?;
    let insert = tx
        .prepare(
            "INSERT INTO llm_calls (call_id, replica, number, started_at, role, reference,
                backend, model, dialect, client_dialect, client_key, stream, input_tokens,
                output_tokens, cost_usd, error_kind, latency_ms, ttfb_ms, attempts, record)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                $17, $18, $19, $20)
             ON CONFLICT (call_id) DO NOTHING",
        )
        .await
        .map_err(|e| PgError::of(doing, e))?;
    let mut new = 0;
    for r in records {
        let json = serde_json::to_value(r)
            .map_err(|e| PgError(format!("PostgreSQL store: record {}: {e}", r.number)))?;
        let number = i64::try_from(r.number).unwrap_or(i64::MAX);
        let tokens = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let input = r.usage.map(|u| tokens(u.input));
        let output = r.usage.map(|u| tokens(u.output));
        let attempts = i32::try_from(r.attempts.len()).unwrap_or(i32::MAX);
        new += tx
            .execute(
                &insert,
                &[
                    &call_id(replica, r.number),
                    &replica,
                    &number,
                    &r.timings.started_at,
                    &r.role_name(),
                    &r.reference,
                    &r.backend,
                    &r.model,
                    &r.dialect.map(|d| d.as_str()),
                    &r.client_dialect.map(|d| d.as_str()),
                    &r.client_key,
                    &r.stream,
                    &input,
                    &output,
                    &r.cost_usd,
                    &r.error.as_ref().map(|e| e.kind.as_str()),
                    &r.timings.duration_ms,
                    &r.timings.first_byte_ms,
                    &attempts,
                    &json,
                ],
            )
            .await
            .map_err(|e| PgError::of(doing, e))?;
    }
    tx.commit().await.map_err(|e| PgError::of(doing, e))?;
    Ok(new)
}

/// Every record of the database, oldest first by replica and number (what `log stats`
/// over the store will read).
pub async fn read_all(client: &Client) -> Result<Vec<CallRecord>, PgError> {
    let rows = client
        .query("SELECT record FROM llm_calls ORDER BY replica, number", &[])
        .await
        .map_err(|e| PgError::of("reading call records", e))?;
    rows.iter()
        .map(|row| {
            serde_json::from_value(row.get(0)).map_err(|e| {
                PgError(format!(
                    "PostgreSQL store: a stored record does not read: {e}"
                ))
            })
        })
        .collect()
}

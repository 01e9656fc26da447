//! A key's spend and rates shared by replicas, one SQL statement per step, so two
//! replicas reserving from one budget at once cannot both pass its last dollar: the row
//! lock of `INSERT … ON CONFLICT DO UPDATE … WHERE` orders them, and the check and the
//! reservation are one statement.
//!
//! Cost per call: one round trip to reserve, one to settle, one per rate checked — each a
//! single-row upsert on a primary key. One round trip each because the statements go with
//! their parameters' types (`query_typed`): a plain `query` first asks the server to
//! prepare the statement, a second round trip on every call.

use super::PgError;
use switchyard::budget::ROUNDING_SLACK_USD;
use tokio_postgres::types::Type;
use tokio_postgres::Client;

/// Reserves `amount` of `key`'s budget `limit` for `period` (`"day:2026-12-02"`,
/// `"total"`…): `Some(committed)` (spent plus reserved, this reservation included) when it
/// fits, `None` when it would take the key past its budget.
pub async fn reserve(
    client: &Client,
    key: &str,
    period: &str,
    amount: f64,
    limit: f64,
) -> Result<Option<f64>, PgError> {
    let row = client
        .query_typed_opt(
            "INSERT INTO spend_ledger AS l (key, period, reserved_usd)
             SELECT $1, $2, $3::float8 WHERE $3::float8 <= $4::float8
             ON CONFLICT (key, period) DO UPDATE
                SET reserved_usd = l.reserved_usd + EXCLUDED.reserved_usd
                WHERE l.spent_usd + l.reserved_usd + EXCLUDED.reserved_usd <= $4::float8
             RETURNING spent_usd + reserved_usd",
            &[
                (&key, Type::TEXT),
                (&period, Type::TEXT),
                (&amount, Type::FLOAT8),
                (&(limit + ROUNDING_SLACK_USD), Type::FLOAT8),
            ],
        )
        .await
        .map_err(|e| PgError::of(&format!("reserving from the budget of key {key}"), e))?;
    Ok(row.map(|r| r.get(0)))
}

/// Settles a reservation of `reserved`: the call cost `cost` (at most what was reserved,
/// by the reservation's rule), and the rest is given back.
pub async fn settle(
    client: &Client,
    key: &str,
    period: &str,
    reserved: f64,
    cost: f64,
) -> Result<(), PgError> {
    client
        .execute_typed(
            "UPDATE spend_ledger
             SET reserved_usd = greatest(reserved_usd - $3::float8, 0),
                 spent_usd = spent_usd + $4::float8
             WHERE key = $1 AND period = $2",
            &[
                (&key, Type::TEXT),
                (&period, Type::TEXT),
                (&reserved, Type::FLOAT8),
                (&cost, Type::FLOAT8),
            ],
        )
        .await
        .map_err(|e| PgError::of(&format!("settling a call of key {key}"), e))?;
    Ok(())
}

/// What `key` has spent and holds reserved in `period`.
pub async fn balance(client: &Client, key: &str, period: &str) -> Result<(f64, f64), PgError> {
    let row = client
        .query_opt(
            "SELECT spent_usd, reserved_usd FROM spend_ledger WHERE key = $1 AND period = $2",
            &[&key, &period],
        )
        .await
        .map_err(|e| PgError::of(&format!("reading the spend of key {key}"), e))?;
    Ok(row.map(|r| (r.get(0), r.get(1))).unwrap_or((0.0, 0.0)))
}

/// Takes one request from `key`'s window starting at `window_start` (Unix seconds of the
/// minute): `true` when fewer than `rpm` requests were taken in it and fewer than `tpm`
/// tokens charged to it (`None`: no such limit).
pub async fn take_request(
    client: &Client,
    key: &str,
    window_start: i64,
    rpm: Option<i64>,
    tpm: Option<i64>,
) -> Result<bool, PgError> {
    if rpm.is_some_and(|n| n < 1) || tpm.is_some_and(|n| n < 1) {
        return Ok(false);
    }
    let (rpm, tpm) = (rpm.unwrap_or(i64::MAX), tpm.unwrap_or(i64::MAX));
    let row = client
        .query_typed_opt(
            "INSERT INTO rate_windows AS w (key, window_start, requests) VALUES ($1, $2, 1)
             ON CONFLICT (key, window_start) DO UPDATE SET requests = w.requests + 1
                WHERE w.requests < $3 AND w.tokens < $4
             RETURNING requests",
            &[
                (&key, Type::TEXT),
                (&window_start, Type::INT8),
                (&rpm, Type::INT8),
                (&tpm, Type::INT8),
            ],
        )
        .await
        .map_err(|e| PgError::of(&format!("counting a request of key {key}"), e))?;
    Ok(row.is_some())
}

/// Charges `tokens` a call used to `key`'s window starting at `window_start`.
pub async fn charge_tokens(
    client: &Client,
    key: &str,
    window_start: i64,
    tokens: i64,
) -> Result<(), PgError> {
    client
        .execute_typed(
            "INSERT INTO rate_windows AS w (key, window_start, tokens) VALUES ($1, $2, $3)
             ON CONFLICT (key, window_start) DO UPDATE SET tokens = LEAST(w.tokens::numeric + EXCLUDED.tokens, 9223372036854775807)::bigint",
            &[
                (&key, Type::TEXT),
                (&window_start, Type::INT8),
                (&tokens, Type::INT8),
            ],
        )
        .await
        .map_err(|e| PgError::of(&format!("counting the tokens of key {key}"), e))?;
    Ok(())
}

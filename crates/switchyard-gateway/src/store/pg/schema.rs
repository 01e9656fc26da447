//! The PostgreSQL store's schema, created and upgraded by the gateway itself.
//!
//! `switchyard_schema` holds the one version the database is at; [`migrate`] applies the
//! steps above it in order, each in the transaction that also records its version, under
//! an advisory lock so that replicas starting together upgrade the database once.

use super::PgError;
use tokio_postgres::Client;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// The advisory lock replicas take while migrating (any constant of our own).
const MIGRATION_LOCK: i64 = 0x5357_4954_4348; // "SWITCH"

/// Step `n` (1-based) takes a database at version `n - 1` to version `n`.
pub const MIGRATIONS: &[&str] = &[
    // 1: every call in full (`record`: the record's line as the segment files hold it,
    // byte for byte — `bytea`, since `jsonb` refuses a NUL in a string and would reorder
    // keys) beside the columns `log stats` and operators query. `call_id` is unique
    // across replicas (the replica's id and its record number), so a retried batch
    // inserts nothing twice.
    "CREATE TABLE llm_calls (
        call_id text PRIMARY KEY,
        replica text NOT NULL,
        number bigint NOT NULL,
        started_at text NOT NULL,
        role text NOT NULL,
        reference text NOT NULL,
        route text,
        backend text NOT NULL,
        model text NOT NULL,
        dialect text,
        client_dialect text,
        client_key text,
        stream boolean NOT NULL,
        input_tokens bigint,
        output_tokens bigint,
        cost_usd double precision,
        error_kind text,
        cut boolean NOT NULL DEFAULT false,
        latency_ms double precision NOT NULL,
        ttfb_ms double precision,
        attempts integer NOT NULL,
        cache_key text,
        cache_hit bigint,
        record bytea NOT NULL
    );
    CREATE INDEX llm_calls_replica_number ON llm_calls (replica, number);
    CREATE INDEX llm_calls_client_key ON llm_calls (client_key, started_at);
    CREATE INDEX llm_calls_reference ON llm_calls (reference);
    CREATE INDEX llm_calls_cache_key ON llm_calls (cache_key) WHERE cache_key IS NOT NULL;",
    // 2: what replicas share to hold budgets and rates together: a key's spend per
    // budget period (settled and reserved), and its calls and tokens per rate window.
    "CREATE TABLE spend_ledger (
        key text NOT NULL,
        period text NOT NULL,
        spent_usd double precision NOT NULL DEFAULT 0,
        reserved_usd double precision NOT NULL DEFAULT 0,
        PRIMARY KEY (key, period)
    );
    CREATE TABLE rate_windows (
        key text NOT NULL,
        window_start bigint NOT NULL,
        requests bigint NOT NULL DEFAULT 0,
        tokens bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (key, window_start)
    );",
    // 3: kept conversations (`conversations/`): a turn per row under its kind, its
    // client key's name and its id, its JSON and when it expires; which turn holds an
    // item id, for `item_reference`.
    "CREATE TABLE kept_conversations (
        kind text NOT NULL,
        owner text NOT NULL,
        id text NOT NULL,
        created bigint NOT NULL,
        expires bigint NOT NULL,
        turn text NOT NULL,
        PRIMARY KEY (kind, owner, id)
    );
    CREATE INDEX kept_conversations_expires ON kept_conversations (expires);
    CREATE TABLE kept_conversation_items (
        owner text NOT NULL,
        item_id text NOT NULL,
        id text NOT NULL,
        PRIMARY KEY (owner, item_id)
    );",
];

/// The database's version: 0 for a database the store has never touched.
pub async fn version(client: &Client) -> Result<i32, PgError> {
    let exists = client
        .query_one("SELECT to_regclass('switchyard_schema') IS NOT NULL", &[])
        .await
        .map_err(|e| PgError::of("reading the schema version", e))?;
    if !exists.get::<_, bool>(0) {
        return Ok(0);
    }
    let row = client
        .query_one("SELECT version FROM switchyard_schema", &[])
        .await
        .map_err(|e| PgError::of("reading the schema version", e))?;
    Ok(row.get(0))
}

/// Brings the database to [`SCHEMA_VERSION`]; the version it was at comes back. A
/// database newer than this build is refused rather than written in a shape it does not
/// know.
pub async fn migrate(client: &mut Client) -> Result<i32, PgError> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(|e| PgError::of("waiting for the migration lock", e))?;
    let result = migrate_locked(client).await;
    // The lock is the session's: given back whatever happened (and with the connection).
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await;
    result
}

async fn migrate_locked(client: &mut Client) -> Result<i32, PgError> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS switchyard_schema (
                one boolean PRIMARY KEY DEFAULT true CHECK (one),
                version integer NOT NULL
            );
            INSERT INTO switchyard_schema (version) VALUES (0) ON CONFLICT DO NOTHING;",
        )
        .await
        .map_err(|e| PgError::of("creating the version table", e))?;
    let was = version(client).await?;
    if was > SCHEMA_VERSION {
        return Err(PgError(format!(
            "PostgreSQL store: the database's schema is at version {was}, newer than this \
             gateway's {SCHEMA_VERSION}; run a newer switchyard against it"
        )));
    }
    for (i, step) in MIGRATIONS.iter().enumerate().skip(was as usize) {
        let to = i as i32 + 1;
        let doing = format!("upgrading the schema to version {to}");
        let tx = client
            .transaction()
            .await
            .map_err(|e| PgError::of(&doing, e))?;
        tx.batch_execute(step)
            .await
            .map_err(|e| PgError::of(&doing, e))?;
        tx.execute("UPDATE switchyard_schema SET version = $1", &[&to])
            .await
            .map_err(|e| PgError::of(&doing, e))?;
        tx.commit().await.map_err(|e| PgError::of(&doing, e))?;
    }
    Ok(was)
}

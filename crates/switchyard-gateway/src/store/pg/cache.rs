//! The cache's entries in the shared store: a replica that misses a key in its own
//! index asks `llm_calls` for the calls every replica recorded under it, and picks among
//! them as its own index would (the newest in the asker's form, else the newest of any
//! form, within the ttl).

use super::records::call_id;
use super::PgError;
use std::time::{Duration, SystemTime};
use switchyard::cache::{entry_key, CacheIndex, Entry};
use switchyard::record::CallRecord;
use switchyard::Dialect;
use tokio_postgres::types::Type;
use tokio_postgres::Client;

/// How many of a key's newest entries are weighed: enough for every form a key is
/// recorded in (dialects × stream flags), few enough to read in one short round trip.
const CANDIDATES: i64 = 16;

/// A recorded call that answers a key, found in the shared store.
#[derive(Debug)]
pub struct SharedHit {
    /// Its record, read from its line.
    pub record: CallRecord,
    /// Its call id (`<replica>-<number>`).
    pub call_id: String,
    /// Whether its raw bytes answer the asker as they are (see
    /// [`switchyard::cache::Found::exact`]).
    pub exact: bool,
}

/// The call recorded under `key` that answers a client in `dialect` (`None`: any form)
/// asking `stream`, younger than `ttl`.
pub async fn find(
    client: &Client,
    key: &str,
    dialect: Option<Dialect>,
    stream: bool,
    ttl: Option<Duration>,
) -> Result<Option<SharedHit>, PgError> {
    let rows = client
        // Typed, as the ledger's statements: one round trip, no prepare.
        .query_typed(
            "SELECT replica, record FROM llm_calls
             WHERE cache_key = $1 AND cache_hit IS NULL AND error_kind IS NULL AND NOT cut
             ORDER BY started_at DESC LIMIT $2",
            &[(&key, Type::TEXT), (&CANDIDATES, Type::INT8)],
        )
        .await
        .map_err(|e| PgError::of("looking a cache key up", e))?;
    // The rows become entries of an index of their own, so that the choice is the one
    // a replica's own index makes; an entry's `source` is its row.
    let index = CacheIndex::default();
    let mut records = Vec::with_capacity(rows.len());
    for row in &rows {
        let replica: String = row.get(0);
        let Ok(record) = switchyard::record::parse_record_line(row.get::<_, &[u8]>(1)) else {
            continue;
        };
        let Some((entry_key, mut entry)) = Entry::of(&record, None) else {
            continue;
        };
        if entry_key != key {
            continue;
        }
        entry.source = records.len() as u32;
        index.add(entry_key, entry);
        records.push((replica, record));
    }
    let Some(found) = index.find(key, dialect, stream, ttl, SystemTime::now()) else {
        return Ok(None);
    };
    let (replica, record) = records.swap_remove(found.source as usize);
    debug_assert_eq!(entry_key(&record), Some(key));
    Ok(Some(SharedHit {
        call_id: call_id(&replica, record.number),
        record,
        exact: found.exact,
    }))
}

//! The PostgreSQL store (issue 18): what replicas of the gateway share.
//!
//! The embedded store (`store/`, segments plus SQLite) keeps running on every replica:
//! its log is the replica's own copy of its calls and the buffer while the database is
//! away. On top of it:
//! - [`config`]: `store: {postgres: {url_env, on_store_down, pool_size}}` — the URL only
//!   ever from the environment (it carries a password), and a URL without its password
//!   for messages;
//! - [`connect`](mod@connect): connections and the pool, TLS when the URL asks for it;
//! - [`schema`]: the schema, created and upgraded by the gateway itself under a version
//!   table, one replica at a time (an advisory lock);
//! - [`records`]: call records in full (the log's lines, byte for byte) beside the
//!   queryable `llm_calls` columns, in batches, idempotent by call id;
//! - `shipper`: the records from the replica's log to the database, off every reply's
//!   path, going on after an outage from where the database's copy stops;
//! - [`cache`]: the cache's entries read from every replica's records, on a local miss;
//! - [`gate`]: `durability: answered` waiting for the database's commit;
//! - [`ledger`]: a key's spend per period and its rate windows, by single statements so
//!   replicas sharing one budget never overshoot it together;
//! - [`shared`]: the replica's side of it all, as the call path uses it;
//! - [`call_source`]: the web console's reading of every replica's calls;
//! - `conversations`: the kept conversations (`crate::conversations`), shared by replicas.

pub mod cache;
pub mod call_source;
pub mod config;
pub mod connect;
mod conversations;
pub mod gate;
mod kept_source;
pub mod ledger;
pub mod records;
pub mod schema;
pub mod shared;
mod shipper;

pub use config::{redact_url, OnStoreDown, PgStoreConfig, NOT_BUILT};
pub use connect::connect;
pub use gate::Gate;
pub use shared::{Health, SharedHold, SharedStore};

use std::fmt;

/// Reads `store.postgres` (see [`PgStoreConfig::read`]); a build without the `postgres`
/// feature refuses it here, naming the feature.
pub fn read_config(section: &serde_json::Value) -> Result<PgStoreConfig, String> {
    PgStoreConfig::read(section)
}

/// A PostgreSQL failure, worded for a person: what was being done, and the server's or
/// the driver's reason (never the URL's password).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgError(pub String);

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PgError {}

impl PgError {
    /// `doing`: what failed (`"creating the schema"`), then the driver's reason.
    pub(crate) fn of(doing: &str, e: tokio_postgres::Error) -> Self {
        // The database's own message (code and text) when there is one: the driver's
        // Display alone often reads "db error".
        let reason = match e.as_db_error() {
            Some(db) => format!("{} ({})", db.message(), db.code().code()),
            None => e.to_string(),
        };
        PgError(format!("PostgreSQL store: {doing}: {reason}"))
    }
}

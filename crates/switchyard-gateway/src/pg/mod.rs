//! The PostgreSQL store (issue 18), first slice: what replicas of the gateway will share.
//!
//! Not yet wired into the gateway's call path: the embedded store (`store/`, segments plus
//! SQLite) stays the only one a running gateway writes. What is here, each tested against
//! a real server (`tests/postgres.rs`, `scripts/pg`):
//! - [`config`]: `store: {postgres: {url_env: …}}` — the URL only ever from the
//!   environment (it carries a password), and a URL without its password for messages;
//! - [`schema`]: the schema, created and upgraded by the gateway itself under a version
//!   table, one replica at a time (an advisory lock);
//! - [`records`]: call records in full (`jsonb`) beside the queryable `llm_calls` columns,
//!   inserted in batches, idempotent by call id so a retried batch never writes twice;
//! - [`ledger`]: a key's spend per period, reserved and settled by single statements so
//!   replicas sharing one budget never overshoot it together.

pub mod config;
pub mod ledger;
pub mod records;
pub mod schema;

pub use config::{redact_url, PgStoreConfig};

use std::fmt;

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

/// Connects to `url` without TLS, the connection driven by a task of its own on the
/// current tokio runtime. `sslmode=require` is refused for now, not silently ignored.
pub async fn connect(url: &str) -> Result<tokio_postgres::Client, PgError> {
    let shown = redact_url(url);
    let config: tokio_postgres::Config = url.parse().map_err(|e| {
        PgError(format!(
            "PostgreSQL store: the URL {shown} does not parse: {e}"
        ))
    })?;
    if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
        return Err(PgError(format!(
            "PostgreSQL store: {shown} asks for sslmode=require, and TLS is not built yet; \
             accepted: sslmode=disable or prefer (plain TCP), e.g. to a server on loopback"
        )));
    }
    let (client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| PgError::of(&format!("connecting to {shown}"), e))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "PostgreSQL store: connection closed");
        }
    });
    Ok(client)
}

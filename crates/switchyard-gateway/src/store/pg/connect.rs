//! Connections to the database: one at a time (the shipper's, the settler's,
//! `switchyard store migrate`'s) or a pool (the calls' budget and rate checks). TLS
//! through rustls with the system's roots whenever the URL's `sslmode` asks for it
//! (`prefer`, the driver's default, tries it and goes on in plain text when the server
//! has none; `require` insists; `disable` never tries).

use super::{redact_url, PgError};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_postgres_rustls::MakeRustlsConnect;

/// How long a connection may take to open, unless the URL's `connect_timeout` says.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a call waits for a pooled connection before it is answered that the store is
/// unreachable.
const POOL_WAIT: Duration = Duration::from_secs(5);

/// A pool of connections for the calls' checks.
pub type Pool = deadpool_postgres::Pool;

/// The URL read into the driver's config (its password never in a message).
fn parse(url: &str) -> Result<tokio_postgres::Config, PgError> {
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
        PgError(format!(
            "PostgreSQL store: the URL {} does not parse: {e}",
            redact_url(url)
        ))
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    Ok(config)
}

/// The TLS connector: rustls, the system's root certificates (read once).
fn tls() -> Result<MakeRustlsConnect, PgError> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            // A certificate the system holds that rustls cannot read is left out.
            let _ = roots.add(cert);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
            .map_err(|e| format!("PostgreSQL store: TLS cannot be set up: {e}"))
    });
    match config {
        Ok(c) => Ok(MakeRustlsConnect::new((**c).clone())),
        Err(e) => Err(PgError(e.clone())),
    }
}

/// Connects to `url`, the connection driven by a task of its own on the current tokio
/// runtime.
pub async fn connect(url: &str) -> Result<tokio_postgres::Client, PgError> {
    let config = parse(url)?;
    let (client, connection) = config
        .connect(tls()?)
        .await
        .map_err(|e| PgError::of(&format!("connecting to {}", redact_url(url)), e))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "PostgreSQL store: connection closed");
        }
    });
    Ok(client)
}

/// A pool of at most `size` connections to `url`, opened as they are first needed.
pub fn pool(url: &str, size: usize) -> Result<Pool, PgError> {
    let manager = deadpool_postgres::Manager::from_config(
        parse(url)?,
        tls()?,
        deadpool_postgres::ManagerConfig {
            recycling_method: deadpool_postgres::RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size)
        .wait_timeout(Some(POOL_WAIT))
        .create_timeout(Some(CONNECT_TIMEOUT))
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .build()
        .map_err(|e| PgError(format!("PostgreSQL store: the connection pool: {e}")))
}

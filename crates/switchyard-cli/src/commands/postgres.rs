//! The PostgreSQL store as the command line reaches it: what `--store` names, the calls
//! read from it (`log stats|show|export`), the console over it (`log view`) and its schema
//! migrated (`store migrate`). A build without the `postgres` feature has
//! `postgres_absent.rs` in this module's place, answering each with why not.

use std::sync::Arc;
use switchyard::record::CallRecord;
use switchyard_console::CallSource;
use switchyard_gateway::pg::{self, call_source::PgCallSource, records, schema, PgStoreConfig};

/// Connections the console keeps to a PostgreSQL store.
const CONSOLE_CONNECTIONS: usize = 4;

/// What `--store` names: `postgres` (`None`: the URL from the environment) or a
/// postgres:// URL, refused when it holds a password (a command line is seen by every
/// user of the machine).
pub(crate) fn command_line_url(store: &str) -> Result<Option<String>, String> {
    if store == "postgres" {
        return Ok(None);
    }
    if !(store.starts_with("postgres://") || store.starts_with("postgresql://")) {
        return Err(format!(
            "error: --store {store}: expected `postgres` (the URL from $SWITCHYARD_PG_URL) or a postgres:// URL without a password"
        ));
    }
    if pg::redact_url(store) != store {
        return Err(
            "error: --store: the URL holds a password, which a command line shows to every user of the machine; put the URL in SWITCHYARD_PG_URL and pass --store postgres".into(),
        );
    }
    Ok(Some(store.to_string()))
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("error: cannot start the async runtime: {e}"))
}

/// Every call of the store at `url`, each with its call id, oldest first.
pub(super) fn records(url: &str) -> Result<Vec<(String, CallRecord)>, String> {
    runtime()?
        .block_on(async {
            let client = pg::connect(url).await?;
            records::read_with_ids(&client).await
        })
        .map_err(|e| format!("error: {e}"))
}

/// One call of the store at `url`, by id or by a number only one replica has.
pub(super) fn call(url: &str, call: &str) -> Result<CallRecord, String> {
    runtime()?.block_on(async {
        let client = pg::connect(url).await.map_err(|e| format!("error: {e}"))?;
        records::read_call(&client, call)
            .await
            .map_err(|e| format!("error: {e}"))
    })
}

/// The console's source over the store at `url`, once it answers and holds the calls.
pub(super) async fn console(url: &str) -> Result<Arc<dyn CallSource>, String> {
    let store = PgCallSource::new(
        pg::connect::pool(url, CONSOLE_CONNECTIONS).map_err(|e| format!("error: {e}"))?,
        pg::redact_url(url),
    );
    store.check().await.map_err(|e| format!("error: {e}"))?;
    Ok(Arc::new(store))
}

/// Creates or upgrades the schema of the store whose URL is in the variable `url_env`:
/// the URL as it may be shown, and the schema's version before and after.
pub(super) fn migrate(url_env: &str) -> Result<(String, i32, i32), String> {
    let config = PgStoreConfig::read(&serde_json::json!({ "url_env": url_env }))
        .map_err(|e| format!("error: --url-env: {e}"))?;
    let url = config
        .url(|name| std::env::var(name).ok())
        .map_err(|e| format!("error: {e}"))?;
    let (was, now) = runtime()?
        .block_on(async {
            let mut client = pg::connect(&url).await?;
            let was = schema::migrate(&mut client).await?;
            Ok::<_, pg::PgError>((was, schema::version(&client).await?))
        })
        .map_err(|e| format!("error: {e}"))?;
    Ok((pg::redact_url(&url), was, now))
}

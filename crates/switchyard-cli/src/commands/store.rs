//! `switchyard store migrate`: the gateway's PostgreSQL schema created or upgraded, alone
//! (the gateway also migrates on start once it uses the store; docs/scaling.md).

use crate::cli::StoreMigrateArgs;
use switchyard_gateway::pg::{self, schema, PgStoreConfig};

/// Runs `store migrate`.
pub(super) fn migrate(args: &StoreMigrateArgs) -> Result<(), String> {
    let config = PgStoreConfig::read(&serde_json::json!({ "url_env": args.url_env }))
        .map_err(|e| format!("error: --url-env: {e}"))?;
    let url = config
        .url(|name| std::env::var(name).ok())
        .map_err(|e| format!("error: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("error: cannot start the async runtime: {e}"))?;
    let (was, now) = runtime
        .block_on(async {
            let mut client = pg::connect(&url).await?;
            let was = schema::migrate(&mut client).await?;
            Ok::<_, pg::PgError>((was, schema::version(&client).await?))
        })
        .map_err(|e| format!("error: {e}"))?;
    let shown = pg::redact_url(&url);
    if was == now {
        println!("{shown}: schema at version {now}, nothing to do");
    } else {
        println!("{shown}: schema upgraded from version {was} to {now}");
    }
    Ok(())
}

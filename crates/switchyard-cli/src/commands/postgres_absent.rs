//! The PostgreSQL store in a command line built without the `postgres` feature: every
//! command that would reach one says that this build has none, and how to get one.

use std::sync::Arc;
use switchyard::record::CallRecord;
use switchyard_console::CallSource;
use switchyard_gateway::pg::NOT_BUILT;

/// Refuses `--store`, before any URL is looked for.
pub(crate) fn command_line_url(store: &str) -> Result<Option<String>, String> {
    Err(format!(
        "error: --store {store}: {NOT_BUILT}, or leave --store out"
    ))
}

fn refused() -> String {
    format!("error: {NOT_BUILT}")
}

/// Refuses (no `--store` gets this far).
pub(super) fn records(_url: &str) -> Result<Vec<(String, CallRecord)>, String> {
    Err(refused())
}

/// Refuses (no `--store` gets this far).
pub(super) fn call(_url: &str, _call: &str) -> Result<CallRecord, String> {
    Err(refused())
}

/// Refuses (no `--store` gets this far).
pub(super) async fn console(_url: &str) -> Result<Arc<dyn CallSource>, String> {
    Err(refused())
}

/// Refuses `store migrate`, before the URL is looked for.
pub(super) fn migrate(_url_env: &str) -> Result<(String, i32, i32), String> {
    Err(format!("error: store migrate: {NOT_BUILT}"))
}

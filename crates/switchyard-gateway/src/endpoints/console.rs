//! The web console at `/console` (the `switchyard-console` crate) over the gateway's own
//! data directory (or, sharing a PostgreSQL store, every replica's calls there), with
//! the gateway's rule for who may open it:
//!
//! - with client keys, only a key of `role: admin` reads its API (any other key: 403
//!   naming it; none or an unknown one: 401);
//! - without keys on a loopback listener, anyone the request guard lets in (loopback
//!   `Host` names and origins only, so no web page reaches it by DNS rebinding);
//! - without keys on any other address (`--allow-public-without-keys`), never: there is
//!   no admin key to ask for, and the calls show every prompt.

use crate::shared::Shared;
use std::net::SocketAddr;
use std::sync::Arc;
use switchyard_console::{Access, CallSource, KeyBudgetSpec, KeyCheck, SqliteSource};

/// The console's routes for a gateway listening on `local`.
pub(crate) fn router(state: &Arc<Shared>, local: SocketAddr) -> axum::Router {
    let access = if !state.keys.is_empty() {
        let judge = state.clone();
        Access::AdminKeys(Arc::new(move |headers: &axum::http::HeaderMap| match judge
            .keys
            .authenticate(headers, None)
        {
            Ok(key) if key.admin => KeyCheck::Admin,
            Ok(key) => KeyCheck::NotAdmin(key.name.clone()),
            Err(crate::account::keys::KeyRefusal::Unknown) => KeyCheck::Unknown,
            Err(crate::account::keys::KeyRefusal::Missing) => KeyCheck::Missing,
        }))
    } else if local.ip().is_loopback() {
        Access::Open
    } else {
        Access::Closed(format!(
            "the console does not open on {local} without client keys: it shows every recorded prompt and reply. Add `keys:` with a key of `role: admin` to the gateway config, or listen on 127.0.0.1"
        ))
    };
    // With a shared PostgreSQL store, every replica's calls; else the data directory's.
    let shared = state.books.pg.as_ref().map(|pg| pg.call_source());
    let local = || {
        let store = state.books.store.as_ref()?;
        match SqliteSource::open(store.dir()) {
            Ok(s) => Some(Arc::new(s) as Arc<dyn CallSource>),
            Err(e) => {
                tracing::warn!("the console cannot read the store: {e}");
                None
            }
        }
    };
    let source = shared.or_else(local);
    let budgets = state.clone();
    let key_budgets = Arc::new(move || {
        let mut out: Vec<KeyBudgetSpec> = budgets
            .keys
            .iter()
            .filter_map(|k| {
                let b = k.budget.as_ref()?;
                Some(KeyBudgetSpec {
                    key: k.name.clone(),
                    budget_usd: b.usd(),
                    period: b.period().as_str().to_string(),
                    since: b.since(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    });
    switchyard_console::router(source, access, key_budgets)
}

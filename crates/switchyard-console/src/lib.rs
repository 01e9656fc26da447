//! The web console (`docs/console.md`): the calls a store recorded, filtered, sorted and
//! paged on the server; one call in full; spend over time; budgets and their use; the
//! replay diff of a `ReplayExhausted` failure; the conversation turns a gateway keeps. A
//! read-only view over a [`CallSource`], served by `switchyard serve` at `/console` and by
//! `switchyard log view`.
//!
//! The page is plain HTML, CSS and JavaScript modules embedded in the binary
//! (`assets/`): no build step, no framework, no network at run time.

mod access;
mod api;
mod assets;
mod detail;
mod params;
mod source;
mod sqlite;
mod sqlite_kept;

pub use access::{Access, KeyCheck, KeyJudge};
pub use params::{BadParam, DEFAULT_LIMIT, MAX_LIMIT};
pub use source::{
    Bucket, CallRow, CallSource, CallsQuery, Filter, KeptKind, KeptPage, KeptQuery, KeptRow,
    KeptTurn, Page, RunBudget, Sort, SourceError, SourceResult, SpendBy, SpendPoint, SpendQuery,
    Status, Summary,
};
pub use sqlite::SqliteSource;

use axum::http::{header, HeaderValue};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

/// A gateway key's budget as the budgets page shows it (its spend is read from the store).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyBudgetSpec {
    /// The key's name.
    pub key: String,
    /// Dollars per period.
    pub budget_usd: f64,
    /// `day`, `week`, `month` or `total`.
    pub period: String,
    /// Where the current period starts, as the index writes times (`None`: every call).
    pub since: Option<String>,
}

/// The gateway's key budgets, asked at each request (a period rolls over while it runs).
pub type KeyBudgets = Arc<dyn Fn() -> Vec<KeyBudgetSpec> + Send + Sync>;

/// What the console's handlers share.
pub(crate) struct Console {
    pub(crate) source: Option<Arc<dyn CallSource>>,
    pub(crate) access: Access,
    pub(crate) key_budgets: KeyBudgets,
}

/// The page's rules: scripts and styles from this origin only, no inline script, no
/// frames, no form posts anywhere.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The console's routes, under `/console` (merge them into a router at its root).
/// `source`: the calls (`None`: the gateway records none, and the API says so).
pub fn router(
    source: Option<Arc<dyn CallSource>>,
    access: Access,
    key_budgets: KeyBudgets,
) -> Router {
    let console = Arc::new(Console {
        source,
        access,
        key_budgets,
    });
    Router::new()
        .route("/console", get(assets::index))
        .route("/console/", get(assets::index))
        .route("/console/assets/{name}", get(assets::asset))
        .route("/console/api/calls", get(api::calls))
        .route("/console/api/calls/{id}", get(api::call))
        .route("/console/api/calls/{id}/raw", get(api::raw))
        .route("/console/api/spend", get(api::spend))
        .route("/console/api/budgets", get(api::budgets))
        .route("/console/api/summary", get(api::summary))
        .route("/console/api/conversations", get(api::conversations))
        .route(
            "/console/api/conversations/{kind}/{id}",
            get(api::conversation),
        )
        .route("/console/api/{*rest}", get(api::unknown))
        .layer(axum::middleware::map_response(secure))
        .with_state(console)
}

/// No key budgets (a directory viewed by `switchyard log view`).
pub fn no_key_budgets() -> KeyBudgets {
    Arc::new(Vec::new)
}

async fn secure(mut r: axum::response::Response) -> axum::response::Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    r
}

/// Serves the console alone on `listener` (`switchyard log view`) until `shutdown`,
/// admitting loopback `Host`s and origins only. `/` leads to `/console`.
pub async fn serve_alone(
    listener: tokio::net::TcpListener,
    source: Arc<dyn CallSource>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(Some(source), Access::Loopback, no_key_budgets()).route(
        "/",
        get(|| async { axum::response::Redirect::to("/console") }),
    );
    use axum::serve::ListenerExt;
    // Without it a reused connection stalls ~40 ms per small answer (Nagle + delayed ACK).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

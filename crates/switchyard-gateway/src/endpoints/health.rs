//! `GET`/`HEAD /` (Claude Code's connectivity preflight), `GET /healthz` and
//! `GET /metrics`.

use crate::shared::Shared;
use axum::extract::State as S;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::fmt::Write as _;
use std::sync::Arc;

/// What `/healthz` answers; [`crate::probe`] looks for the `service` field.
pub const SERVICE: &str = "switchyard-gateway";

/// `GET /` and `HEAD /`.
pub(crate) async fn root() -> &'static str {
    "switchyard gateway: POST /v1/chat/completions, /v1/responses, /v1/messages, /v1beta/models/{model}:generateContent\n"
}

/// `GET /healthz`: 200 `ok`; 200 `degraded` once records were lost but the store writes
/// again; 503 `failing` while the store cannot write (a full disk), so a load balancer
/// takes the replica out before more answered calls go unrecorded.
pub(crate) async fn healthz(S(state): S<Arc<Shared>>) -> Response {
    // The backlog is read first: seen at zero, the health read after it is the outcome
    // of every write handed over.
    let store = state
        .books
        .store
        .as_ref()
        .map(|s| (s, s.backlog(), s.health()));
    let status = match &store {
        Some((_, _, h)) if h.failing => "failing",
        Some((_, _, h)) if h.lost > 0 => "degraded",
        _ => "ok",
    };
    let mut body = serde_json::json!({
        "status": status,
        "service": SERVICE,
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_seconds": state.started.elapsed().as_secs(),
    });
    if let Some((s, backlog, h)) = &store {
        body["store"] = serde_json::json!({
            "dir": s.dir().display().to_string(),
            "durability": s.options().durability.as_str(),
            "backlog": backlog,
            "lost_records": h.lost,
            "quarantined_records": h.quarantined,
            "error": h.error,
        });
    }
    if let Some(pg) = &state.books.pg {
        let h = pg.health();
        body["postgres"] = serde_json::json!({
            "url": pg.shown_url(),
            "replica": pg.replica(),
            "reachable": !h.is_down(),
            "shipped": h.shipped.load(std::sync::atomic::Ordering::Relaxed),
            "last_shipped": h.last_shipped.load(std::sync::atomic::Ordering::Relaxed),
            "unsettled": h.unsettled.load(std::sync::atomic::Ordering::Relaxed),
            "error": h.error(),
        });
        if h.is_down() && body["status"] == "ok" {
            body["status"] = "degraded".into();
        }
    }
    let code = if status == "failing" {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (
        code,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `GET /metrics`, Prometheus text format.
pub(crate) async fn metrics(S(state): S<Arc<Shared>>) -> Response {
    let mut text = state.books.metrics.render();
    state.books.refusals.render(&mut text);
    if let Some(store) = &state.books.store {
        let health = store.health();
        // Finished calls waiting to be written: grows when calls end faster than the
        // store writes them.
        let _ = writeln!(
            text,
            "# HELP switchyard_gateway_store_backlog Finished calls not yet written to the store.\n# TYPE switchyard_gateway_store_backlog gauge\nswitchyard_gateway_store_backlog {}",
            store.backlog()
        );
        let _ = writeln!(
            text,
            "# HELP switchyard_gateway_store_lost_records_total Finished calls whose record could not be written.\n# TYPE switchyard_gateway_store_lost_records_total counter\nswitchyard_gateway_store_lost_records_total {}",
            health.lost
        );
        let _ = writeln!(
            text,
            "# HELP switchyard_gateway_store_failing 1 while the store cannot write (its last write failed).\n# TYPE switchyard_gateway_store_failing gauge\nswitchyard_gateway_store_failing {}",
            u8::from(health.failing)
        );
        let _ = writeln!(
            text,
            "# HELP switchyard_gateway_store_quarantined_records Lines of the store's call log set aside as unreadable when it opened (listed in quarantine/set-aside.jsonl).\n# TYPE switchyard_gateway_store_quarantined_records gauge\nswitchyard_gateway_store_quarantined_records {}",
            health.quarantined
        );
    }
    let _ = writeln!(
        text,
        "# HELP switchyard_gateway_targets Upstream targets cached (bounded by limits.max_targets).\n# TYPE switchyard_gateway_targets gauge\nswitchyard_gateway_targets {}",
        state.upstreams.cached()
    );
    let mut r = text.into_response();
    r.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

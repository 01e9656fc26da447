//! `GET`/`HEAD /` (Claude Code's connectivity preflight), `GET /healthz` and
//! `GET /metrics`.

use crate::server::State;
use axum::extract::State as S;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use std::fmt::Write as _;
use std::sync::Arc;

/// What `/healthz` answers; [`crate::probe`] looks for the `service` field.
pub const SERVICE: &str = "switchyard-gateway";

/// `GET /` and `HEAD /`.
pub async fn root() -> &'static str {
    "switchyard gateway: POST /v1/chat/completions, /v1/responses, /v1/messages, /v1beta/models/{model}:generateContent\n"
}

/// `GET /healthz`.
pub async fn healthz(S(state): S<Arc<State>>) -> Response {
    (
        [("content-type", "application/json")],
        serde_json::json!({
            "status": "ok",
            "service": SERVICE,
            "version": env!("CARGO_PKG_VERSION"),
            "uptime_seconds": state.started.elapsed().as_secs(),
        })
        .to_string(),
    )
        .into_response()
}

/// `GET /metrics`, Prometheus text format.
pub async fn metrics(S(state): S<Arc<State>>) -> Response {
    let mut text = state.metrics.render();
    if let Some(store) = &state.store {
        // Finished calls waiting to be written: grows when calls end faster than the
        // store writes them.
        let _ = writeln!(
            text,
            "# HELP switchyard_gateway_store_backlog Finished calls not yet written to the store.\n# TYPE switchyard_gateway_store_backlog gauge\nswitchyard_gateway_store_backlog {}",
            store.backlog()
        );
    }
    let mut r = text.into_response();
    r.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

//! `POST /v1/messages` and `POST /v1/messages/count_tokens` (Anthropic Messages, what
//! Claude Code speaks; `?beta=true` and `anthropic-beta` flags are accepted and never
//! refused).

use crate::call::{handle, Inbound};
use crate::state::State;
use axum::extract::{Request, State as S};
use axum::response::Response;
use std::sync::Arc;
use switchyard::Dialect;

/// Serves a message.
pub(crate) async fn create(S(state): S<Arc<State>>, request: Request) -> Response {
    handle(state, Inbound::body(Dialect::Messages), request).await
}

/// Counts a request's input tokens.
pub(crate) async fn count_tokens(S(state): S<Arc<State>>, request: Request) -> Response {
    let inbound = Inbound {
        count_tokens: true,
        ..Inbound::body(Dialect::Messages)
    };
    handle(state, inbound, request).await
}

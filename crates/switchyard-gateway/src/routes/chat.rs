//! `POST /v1/chat/completions` (OpenAI chat completions).

use crate::call::{handle, Inbound};
use crate::state::State;
use axum::extract::{Request, State as S};
use axum::response::Response;
use std::sync::Arc;
use switchyard::Dialect;

/// Serves a chat completion.
pub(crate) async fn completions(S(state): S<Arc<State>>, request: Request) -> Response {
    handle(state, Inbound::body(Dialect::Chat), request).await
}

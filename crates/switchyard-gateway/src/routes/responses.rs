//! `POST /v1/responses` (OpenAI Responses, what Codex speaks).

use crate::call::{handle, Inbound};
use crate::state::State;
use axum::extract::{Request, State as S};
use axum::response::Response;
use std::sync::Arc;
use switchyard::Dialect;

/// Serves a response.
pub(crate) async fn create(S(state): S<Arc<State>>, request: Request) -> Response {
    handle(state, Inbound::body(Dialect::Responses), request).await
}

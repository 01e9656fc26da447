//! `POST /v1/embeddings` (OpenAI's embeddings) into `embeddings.rs`.

use crate::state::State;
use axum::extract::{Request, State as S};
use axum::response::Response;
use std::sync::Arc;

/// Serves an embeddings request.
pub(crate) async fn create(S(state): S<Arc<State>>, request: Request) -> Response {
    crate::embeddings::handle(state, crate::embeddings::Client::Openai, request).await
}

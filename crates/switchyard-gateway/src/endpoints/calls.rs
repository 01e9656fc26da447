//! The model-call endpoints whose model is in the body: `POST /v1/chat/completions`
//! (OpenAI chat completions), `POST /v1/responses` (OpenAI Responses, what Codex speaks),
//! `POST /v1/messages` and `POST /v1/messages/count_tokens` (Anthropic Messages, what
//! Claude Code speaks; `?beta=true` and `anthropic-beta` flags are accepted and never
//! refused), and `POST /v1/embeddings` (OpenAI's embeddings). Each only names what the
//! call is; [`crate::call`] serves it.

use crate::call::{self, Inbound};
use crate::shared::Shared;
use axum::extract::{Request, State as S};
use axum::response::Response;
use std::sync::Arc;
use switchyard::Dialect;

/// Serves a chat completion.
pub(crate) async fn chat_completions(S(state): S<Arc<Shared>>, request: Request) -> Response {
    call::handle(state, Inbound::body(Dialect::Chat), request).await
}

/// Serves a Responses call.
pub(crate) async fn responses(S(state): S<Arc<Shared>>, request: Request) -> Response {
    call::handle(state, Inbound::body(Dialect::Responses), request).await
}

/// Serves a message.
pub(crate) async fn messages(S(state): S<Arc<Shared>>, request: Request) -> Response {
    call::handle(state, Inbound::body(Dialect::Messages), request).await
}

/// Counts a Messages request's input tokens.
pub(crate) async fn count_tokens(S(state): S<Arc<Shared>>, request: Request) -> Response {
    let inbound = Inbound::Model {
        dialect: Dialect::Messages,
        gemini: None,
        count_tokens: true,
    };
    call::handle(state, inbound, request).await
}

/// Serves an embeddings request.
pub(crate) async fn embeddings(S(state): S<Arc<Shared>>, request: Request) -> Response {
    let inbound = Inbound::Embedding(call::embeddings::Client::Openai);
    call::handle(state, inbound, request).await
}

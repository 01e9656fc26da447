//! `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent`,
//! `:countTokens` and the embeddings methods `:embedContent` and `:batchEmbedContents`
//! (Gemini), also under `/v1/`. The model is in the path and may hold slashes (`mock/echo`); the
//! method is after its last `:`.

use crate::call::{handle, Inbound};
use crate::errors::{ApiError, Category};
use crate::state::State;
use axum::extract::{Path, Request, State as S};
use axum::response::Response;
use std::sync::Arc;
use switchyard::Dialect;

/// Serves a Gemini call.
pub(crate) async fn call(
    S(state): S<Arc<State>>,
    Path(rest): Path<String>,
    request: Request,
) -> Response {
    let Some((model, method)) = rest.rsplit_once(':') else {
        return not_found(&rest);
    };
    let (stream, count_tokens) = match method {
        "generateContent" => (false, false),
        "streamGenerateContent" => (true, false),
        "countTokens" => (false, true),
        "embedContent" | "batchEmbedContents" => {
            let client = crate::embeddings::Client::Gemini {
                model: model.to_string(),
                single: method == "embedContent",
            };
            return crate::embeddings::handle(state, client, request).await;
        }
        _ => return not_found(&rest),
    };
    let inbound = Inbound {
        gemini: Some((model.to_string(), stream)),
        count_tokens,
        ..Inbound::body(Dialect::Gemini)
    };
    handle(state, inbound, request).await
}

fn not_found(rest: &str) -> Response {
    ApiError::new(
        Category::NotFound,
        format!("`models/{rest}`: expected models/<model>:generateContent, :streamGenerateContent, :countTokens, :embedContent or :batchEmbedContents"),
    )
    .into_response_for(Dialect::Gemini)
}

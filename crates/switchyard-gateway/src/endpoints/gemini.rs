//! `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent`,
//! `:countTokens` and the embeddings methods `:embedContent` and `:batchEmbedContents`
//! (Gemini), also under `/v1/`. The model is in the path and may hold slashes (`mock/echo`,
//! or `mock%2Fecho` as the gateway itself sends ids); the method is after its last `:`. The
//! path is percent-decoded exactly once, here, and the model read from it is what keys,
//! aliases, routes and prices are decided on and what is sent: a `%` left after that one
//! decoding is refused with the other characters no model id holds (`switchyard::model_id`).

use crate::call::{handle, Inbound};
use crate::errors::{ApiError, Category};
use crate::shared::Shared;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State as S};
use axum::response::Response;
use std::sync::Arc;
use switchyard::Dialect;

/// Serves a Gemini call.
pub(crate) async fn call(
    S(state): S<Arc<Shared>>,
    rest: Result<Path<String>, PathRejection>,
    request: Request,
) -> Response {
    // A path whose escapes do not decode to UTF-8 (`%FF`) gets the dialect's 400.
    let rest = match rest {
        Ok(Path(rest)) => rest,
        Err(e) => {
            return ApiError::new(
                Category::BadRequest,
                format!("the model in the path is not text once percent-decoded: {e}; a model id is UTF-8 text"),
            )
            .into_response_for(Dialect::Gemini)
        }
    };
    let Some((model, method)) = rest.rsplit_once(':') else {
        return not_found(&rest);
    };
    let (stream, count_tokens) = match method {
        "generateContent" => (false, false),
        "streamGenerateContent" => (true, false),
        "countTokens" => (false, true),
        "embedContent" | "batchEmbedContents" => {
            let client = crate::call::embeddings::Client::Gemini {
                model: model.to_string(),
                single: method == "embedContent",
            };
            return handle(state, Inbound::Embedding(client), request).await;
        }
        _ => return not_found(&rest),
    };
    let inbound = Inbound::Model {
        dialect: Dialect::Gemini,
        gemini: Some((model.to_string(), stream)),
        count_tokens,
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

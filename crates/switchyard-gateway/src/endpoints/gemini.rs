//! Gemini's model paths, under `/v1beta/` and `/v1/`: `POST models/{model}:generateContent`,
//! `:streamGenerateContent`, `:countTokens` and the embeddings methods `:embedContent` and
//! `:batchEmbedContents`; and the same with the model as the resource itself,
//! `{backend}/{model…}:{method}` (and `GET {backend}/{model…}`, one model), which is what
//! a Google client sends for an id holding `/` (the AI SDK's Google provider with
//! `mock/echo`). That form is taken only when its first segment names a backend (or the
//! whole name a `models:` entry) and is no Google collection (`models`, `tunedModels`,
//! `files`…: those keep Google's meaning, so a backend named like one is reached by the
//! `models/` form only); any other path under these roots is no route.
//!
//! The model may hold slashes (`mock/echo`, or `mock%2Fecho` as the gateway itself sends
//! ids); the method is after its last `:`. The path is percent-decoded exactly once, here,
//! and the model read from it is what keys, aliases, routes and prices are decided on and
//! what is sent: a `%` left after that one decoding is refused with the other characters
//! no model id holds (`switchyard::model_id`).

use crate::call::{handle, Inbound};
use crate::errors::{ApiError, Category};
use crate::shared::Shared;
use crate::transport::path_dialect::{gemini_method, GEMINI_METHODS};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State as S};
use axum::http::Method;
use axum::response::Response;
use std::sync::Arc;
use switchyard::Dialect;

/// Serves `models/{model}:{method}` (the route's rest: `{model}:{method}`).
pub(crate) async fn call(
    S(state): S<Arc<Shared>>,
    rest: Result<Path<String>, PathRejection>,
    request: Request,
) -> Response {
    // A path whose escapes do not decode to UTF-8 (`%FF`) gets the dialect's 400.
    let rest = match rest {
        Ok(Path(rest)) => rest,
        Err(e) => return undecodable(&e),
    };
    let Some((model, method)) = rest.rsplit_once(':') else {
        return not_found(&rest);
    };
    if !GEMINI_METHODS.contains(&method) {
        return not_found(&rest);
    }
    serve(state, model, method, request).await
}

/// Google's collections under `/v1beta/` and `/v1/`: a path whose first segment is one
/// keeps Google's meaning (the gateway serves `models/` by its own route, the others not
/// at all) and is never read as `{backend}/{model}`.
const GOOGLE_COLLECTIONS: &[&str] = &[
    "models",
    "tunedModels",
    "cachedContents",
    "files",
    "operations",
    "corpora",
    "batches",
    "generatedFiles",
    "fileSearchStores",
];

/// Serves `/v1beta/{*rest}` and `/v1/{*rest}` (the routes of their own, `models/…`
/// included, are matched first): `{backend}/{model…}:{method}` as the `models/` form
/// with that model, `GET {backend}/{model…}` as one model; anything else is no route,
/// answered as every unknown path is.
pub(crate) async fn by_backend(
    S(state): S<Arc<Shared>>,
    rest: Result<Path<String>, PathRejection>,
    request: Request,
) -> Response {
    let is_call = request.method() == Method::POST;
    let is_get = matches!(*request.method(), Method::GET | Method::HEAD);
    let rest = match rest {
        Ok(Path(rest)) => rest,
        // Escapes that do not decode to UTF-8 in what has a Gemini method: the 400 of
        // the `models/` form, as its model cannot be read either.
        Err(e) if is_call && gemini_method(request.uri().path()).is_some() => {
            return undecodable(&e)
        }
        Err(_) => return crate::endpoints::not_found::not_found(S(state), request).await,
    };
    if is_call {
        if let Some((model, method)) = rest.rsplit_once(':') {
            if GEMINI_METHODS.contains(&method) && backend_first(&state, model) {
                return serve(state, model, method, request).await;
            }
        }
    } else if is_get {
        // `models::one` answers a GET of a method path with 405.
        let model = rest
            .rsplit_once(':')
            .map_or(rest.as_str(), |(model, _)| model);
        if backend_first(&state, model) {
            let gemini_root = request.uri().path().starts_with("/v1beta/");
            return match gemini_root {
                true => crate::endpoints::models::get_gemini(S(state), Path(rest), request).await,
                false => crate::endpoints::models::get(S(state), Path(rest), request).await,
            };
        }
    }
    crate::endpoints::not_found::not_found(S(state), request).await
}

/// True when `model` (decoded) is read with the backend first: `{backend}/{id…}` whose
/// first segment is no Google collection and names a backend, or a `models:` entry
/// holding a `/` (whose first segment is no Google collection either).
fn backend_first(state: &Shared, model: &str) -> bool {
    let Some((first, _)) = model.split_once('/') else {
        return false;
    };
    !GOOGLE_COLLECTIONS.contains(&first)
        && (state.upstreams.registry().backend(first).is_some()
            || state.upstreams.models().contains_key(model))
}

/// The Gemini call `method` (one of [`GEMINI_METHODS`]) of `model`.
async fn serve(state: Arc<Shared>, model: &str, method: &str, request: Request) -> Response {
    let (stream, count_tokens) = match method {
        "streamGenerateContent" => (true, false),
        "countTokens" => (false, true),
        "embedContent" | "batchEmbedContents" => {
            let client = crate::call::embeddings::Client::Gemini {
                model: model.to_string(),
                single: method == "embedContent",
            };
            return handle(state, Inbound::Embedding(client), request).await;
        }
        // `generateContent`: the callers took only [`GEMINI_METHODS`].
        _ => (false, false),
    };
    let inbound = Inbound::Model {
        dialect: Dialect::Gemini,
        gemini: Some((model.to_string(), stream)),
        count_tokens,
    };
    handle(state, inbound, request).await
}

/// A path whose escapes do not decode to UTF-8 (`%FF`): the dialect's 400.
fn undecodable(e: &PathRejection) -> Response {
    ApiError::new(
        Category::BadRequest,
        format!(
            "the model in the path is not text once percent-decoded: {e}; a model id is UTF-8 text"
        ),
    )
    .into_response_for(Dialect::Gemini)
}

fn not_found(rest: &str) -> Response {
    ApiError::new(
        Category::NotFound,
        format!("`models/{rest}`: expected models/<model>:generateContent, :streamGenerateContent, :countTokens, :embedContent or :batchEmbedContents"),
    )
    .into_response_for(Dialect::Gemini)
}

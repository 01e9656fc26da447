//! Unknown routes (404) and known routes asked with the wrong method (405), answered in
//! the dialect's error shape of the path, naming the routes that exist, so a client
//! pointed at a wrong base URL (`/v1/v1/messages`, `/chat/completions`) reads why.

use crate::shared::Shared;
use crate::transport::path_dialect::{dialect_of, gemini_method};
use crate::transport::refusals::{self as refusals, Reason};
use axum::extract::{Request, State as S};
use axum::http::StatusCode;
use axum::response::Response;
use std::sync::Arc;

/// The routes the gateway serves: methods and path (`…` ends a prefix).
const ROUTES: &[(&str, &str)] = &[
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/responses"),
    ("POST", "/v1/messages"),
    ("POST", "/v1/messages/count_tokens"),
    ("POST", "/v1/embeddings"),
    ("POST", "/v1beta/models/…"),
    ("POST", "/v1/models/…"),
    ("GET", "/v1/models"),
    ("GET", "/v1beta/models"),
    ("GET, HEAD", "/"),
    ("GET", "/healthz"),
    ("GET", "/metrics"),
];

const LISTED: &str = "POST /v1/chat/completions, POST /v1/responses, POST /v1/messages, \
     POST /v1/messages/count_tokens, POST /v1/embeddings, POST /v1beta/models/{model}:generateContent, \
     :streamGenerateContent, :countTokens, :embedContent or :batchEmbedContents (also under /v1/models/), \
     the same as POST /v1beta/{backend}/{model}:{method} (also under /v1/) where {backend} is one of \
     the gateway's backends, GET /v1/models, GET /v1beta/models, /v1beta/models/{model} and \
     /v1beta/{backend}/{model}, GET or HEAD /, GET /healthz, GET /metrics";

/// The router's fallback: no route has this path.
pub(crate) async fn not_found(S(state): S<Arc<Shared>>, request: Request) -> Response {
    state.books.metrics.refusals().count(Reason::NotFound);
    let path = request.uri().path();
    let dialect = dialect_of(path, request.headers());
    refusals::error(
        dialect,
        StatusCode::NOT_FOUND,
        format!(
            "the gateway has no route `{} {path}`; it serves {LISTED} (OpenAI clients take \
             the base URL http://HOST:PORT/v1, Anthropic and Gemini clients http://HOST:PORT)",
            request.method()
        ),
    )
    .into_response_for(dialect)
}

/// Every route's fallback for a method it does not take (axum adds `Allow`).
pub(crate) async fn method_not_allowed(S(state): S<Arc<Shared>>, request: Request) -> Response {
    state.books.metrics.refusals().count(Reason::Method);
    let path = request.uri().path();
    let dialect = dialect_of(path, request.headers());
    let takes = methods_of(path).unwrap_or("another method");
    refusals::error(
        dialect,
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "`{} {path}`: this route takes {takes}; the gateway serves {LISTED}",
            request.method()
        ),
    )
    .into_response_for(dialect)
}

/// The methods the route at `path` takes.
fn methods_of(path: &str) -> Option<&'static str> {
    ROUTES
        .iter()
        .find_map(|(methods, route)| {
            let matches = match route.strip_suffix('…') {
                Some(prefix) => path.starts_with(prefix),
                None => path == *route,
            };
            matches.then_some(*methods)
        })
        // `/v1beta/{backend}/{model}:{method}` (and under `/v1/`), asked with GET.
        .or_else(|| gemini_method(path).map(|_| "POST"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_knows_its_methods() {
        assert_eq!(methods_of("/v1/chat/completions"), Some("POST"));
        assert_eq!(methods_of("/v1beta/models/m:generateContent"), Some("POST"));
        assert_eq!(methods_of("/v1/models"), Some("GET"));
        assert_eq!(methods_of("/"), Some("GET, HEAD"));
        assert_eq!(methods_of("/v1beta/mock/echo:countTokens"), Some("POST"));
        assert_eq!(methods_of("/nowhere"), None);
    }
}

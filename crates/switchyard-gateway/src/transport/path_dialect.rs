//! Which dialect's error shape a request gets when the listener answers it before any
//! route has (a refusal, an unknown route, a wrong method): the one its path belongs to.

use axum::http::{HeaderMap, Method};
use switchyard::Dialect;

/// `/v1/messages…` → Anthropic; `/v1beta/…` or a Gemini method (`…:generateContent`, any
/// of [`GEMINI_METHODS`]) → Gemini; `/v1/responses…` → Responses; anything else → OpenAI
/// chat, unless the client announced itself with `anthropic-version` (Claude Code does on
/// every request).
pub(crate) fn dialect_of(path: &str, headers: &HeaderMap) -> Dialect {
    if path.starts_with("/v1/messages") {
        Dialect::Messages
    } else if path.starts_with("/v1beta/") || names_gemini_method(path) {
        Dialect::Gemini
    } else if path.starts_with("/v1/responses") {
        Dialect::Responses
    } else if headers.contains_key("anthropic-version") {
        Dialect::Messages
    } else {
        Dialect::Chat
    }
}

/// True for a model call: the routes whose body is a JSON request to forward.
pub(crate) fn is_model_call(method: &Method, path: &str) -> bool {
    method == Method::POST
        && (matches!(
            path,
            "/v1/chat/completions"
                | "/v1/responses"
                | "/v1/messages"
                | "/v1/messages/count_tokens"
                | "/v1/embeddings"
        ) || path.starts_with("/v1beta/models/")
            || path.starts_with("/v1/models/")
            || is_gemini_call_path(path))
}

/// The methods a Gemini model path takes, after its last `:`.
pub(crate) const GEMINI_METHODS: &[&str] = &[
    "generateContent",
    "streamGenerateContent",
    "countTokens",
    "embedContent",
    "batchEmbedContents",
];

/// The Gemini method `path` ends in (`…:countTokens` → `countTokens`), if any.
pub(crate) fn gemini_method(path: &str) -> Option<&str> {
    path.rsplit_once(':')
        .map(|(_, method)| method)
        .filter(|method| GEMINI_METHODS.contains(method))
}

/// True when a Gemini method follows a `:` anywhere in `path` (which may be cut short).
fn names_gemini_method(path: &str) -> bool {
    path.split(':')
        .skip(1)
        .any(|tail| GEMINI_METHODS.iter().any(|m| tail.starts_with(m)))
}

/// A path under `/v1beta/` or `/v1/` holding a `:`, as written or escaped: it may be a
/// Gemini call `{backend}/{model…}:{method}` once decoded, so it is judged as one (a
/// keyless gateway's JSON rule) before the route reads it.
fn is_gemini_call_path(path: &str) -> bool {
    (path.starts_with("/v1beta/") || path.starts_with("/v1/"))
        && (path.contains(':')
            || path
                .as_bytes()
                .windows(3)
                .any(|w| w.eq_ignore_ascii_case(b"%3a")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_family_of_paths_has_its_dialect() {
        let none = HeaderMap::new();
        assert_eq!(
            dialect_of("/v1/messages/count_tokens", &none),
            Dialect::Messages
        );
        assert_eq!(dialect_of("/v1beta/models/x", &none), Dialect::Gemini);
        assert_eq!(
            dialect_of("/v1/models/m:generateContent", &none),
            Dialect::Gemini
        );
        assert_eq!(dialect_of("/v1/responses/abc", &none), Dialect::Responses);
        assert_eq!(dialect_of("/nowhere", &none), Dialect::Chat);
        let mut claude = HeaderMap::new();
        claude.insert("anthropic-version", "2023-06-01".parse().unwrap());
        assert_eq!(dialect_of("/nowhere", &claude), Dialect::Messages);
        assert!(is_model_call(&Method::POST, "/v1/models/m:generateContent"));
        assert!(!is_model_call(&Method::GET, "/v1/models"));
        assert!(!is_model_call(&Method::POST, "/v1/unknown"));
        assert!(is_model_call(&Method::POST, "/v1/embeddings"));
        // `{backend}/{model…}:{method}`, the colon as written or escaped.
        assert!(is_model_call(
            &Method::POST,
            "/v1beta/mock/echo:countTokens"
        ));
        assert!(is_model_call(
            &Method::POST,
            "/v1/mock/echo%3AgenerateContent"
        ));
        assert_eq!(
            dialect_of("/v1/mock/echo:embedContent", &none),
            Dialect::Gemini
        );
        assert_eq!(
            dialect_of("/v1/mock/echo:countTokens", &none),
            Dialect::Gemini
        );
        assert_eq!(dialect_of("/v1/mock/echo:other", &none), Dialect::Chat);
    }
}

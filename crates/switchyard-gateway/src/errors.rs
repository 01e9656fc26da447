//! Errors in the client's dialect: the status, body shape and type/code strings each
//! client branches on (Codex on `context_length_exceeded` and "try again in Ns", Claude
//! Code on "prompt is too long", `rate_limit_error`, `overloaded_error`).

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{json, Value};
use std::time::Duration;
use switchyard::{Dialect, Error};
use switchyard_wire::StreamError;

/// What went wrong, in terms every dialect has a word for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// No valid client key (401).
    Unauthenticated,
    /// The key may not use this model (403).
    Forbidden,
    /// No such model (404).
    NotFound,
    /// The request is malformed or cannot be served (400).
    BadRequest,
    /// The body is over the limit (413).
    TooLarge,
    /// A rate limit, the gateway's or the provider's (429).
    RateLimited,
    /// The prompt does not fit the context window (400).
    ContextLength,
    /// The provider account is out of credit (429 / 402).
    Quota,
    /// The provider is overloaded (503 / 529).
    Overloaded,
    /// The upstream failed in some other way (502).
    Upstream,
    /// The upstream did not answer in time (504).
    Timeout,
    /// The gateway itself (500).
    Internal,
}

/// An error to send to a client.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// What kind.
    pub category: Category,
    /// The message.
    pub message: String,
    /// The HTTP status (derived from the category unless a provider said otherwise).
    pub status: StatusCode,
    /// `Retry-After`, in seconds.
    pub retry_after: Option<Duration>,
    /// Numbers of a context overflow, to write the message each client pattern-matches.
    pub context: Option<(Option<u64>, Option<u64>)>,
    /// Sent with `x-should-retry: false`, which the official OpenAI and Anthropic SDKs
    /// obey: retrying cannot help (a spent budget).
    pub no_retry: bool,
    /// The machine-readable reason a client acts on, where its category's usual one is
    /// not precise enough: `error.details.error_code` in the Messages shape
    /// (`thread_unsupported_request`: the SDK resends the whole history without
    /// `thread`), `error.code` in OpenAI's (`previous_response_not_found`).
    pub error_code: Option<&'static str>,
    /// The request field at fault, written as `error.param` in OpenAI's shape.
    pub param: Option<&'static str>,
}

impl ApiError {
    /// An error of `category` with its usual status.
    pub fn new(category: Category, message: impl Into<String>) -> Self {
        ApiError {
            status: default_status(category),
            category,
            message: message.into(),
            retry_after: None,
            context: None,
            no_retry: false,
            error_code: None,
            param: None,
        }
    }

    /// A library error from calling the upstream.
    pub fn from_upstream(e: &Error) -> Self {
        let details = e.provider_details();
        let message = details
            .map(|d| d.message.clone())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| e.to_string());
        let retry_after = details.and_then(|d| retry_after(&d.headers));
        let mut out = match e {
            Error::ContextLengthExceeded {
                prompt_tokens,
                limit,
                message,
                ..
            } => {
                let mut a = ApiError::new(Category::ContextLength, message.clone());
                a.context = Some((*prompt_tokens, *limit));
                a
            }
            Error::RateLimited { .. } => ApiError::new(Category::RateLimited, message),
            Error::ProviderQuotaExhausted(_) => ApiError::new(Category::Quota, message),
            Error::Overloaded(_) => ApiError::new(Category::Overloaded, message),
            Error::Timeout { .. } => ApiError::new(Category::Timeout, e.to_string()),
            Error::Transport { .. } | Error::ProviderReplyMalformed { .. } => {
                ApiError::new(Category::Upstream, e.to_string())
            }
            // Asked again, the upstream would likely send as much again: a client's SDK is
            // told not to.
            Error::ReplyTooLarge { .. } => {
                ApiError::new(Category::Upstream, e.to_string()).not_retryable()
            }
            // The upstream refused the gateway's own key: the client's key is fine, so this
            // is the gateway's problem, not a 401 the client would take as its own.
            Error::Auth(_) => ApiError::new(
                Category::Upstream,
                format!("the upstream refused the gateway's credentials: {message}"),
            ),
            Error::BadRequest(d) => {
                let mut a = ApiError::new(Category::BadRequest, message);
                if matches!(d.status, 400 | 404 | 413 | 422) {
                    a.status = StatusCode::from_u16(d.status).unwrap_or(StatusCode::BAD_REQUEST);
                }
                if d.status == 404 {
                    a.category = Category::NotFound;
                }
                a
            }
            Error::Provider(d) => {
                let mut a = ApiError::new(Category::Upstream, message);
                if (500..600).contains(&d.status) {
                    a.status = StatusCode::from_u16(d.status).unwrap_or(StatusCode::BAD_GATEWAY);
                }
                a
            }
            Error::MissingKey { backend, .. } => ApiError::new(
                Category::Internal,
                format!("the gateway has no key for backend `{backend}`; its operator must set it"),
            ),
            Error::Unsupported(m) => ApiError::new(Category::BadRequest, m.clone()),
            _ => ApiError::new(Category::Internal, e.to_string()),
        };
        out.retry_after = retry_after;
        out
    }

    /// Marks the error as one a client should not retry (`x-should-retry: false`).
    pub fn not_retryable(mut self) -> Self {
        self.no_retry = true;
        self
    }

    /// Sets the reason written as `error.details.error_code` to Messages clients and as
    /// `error.code` to OpenAI's.
    pub fn with_error_code(mut self, code: &'static str) -> Self {
        self.error_code = Some(code);
        self
    }

    /// Names the request field at fault (`error.param` to OpenAI's clients).
    pub fn with_param(mut self, param: &'static str) -> Self {
        self.param = Some(param);
        self
    }

    /// Sets `Retry-After`.
    pub fn with_retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// The response in `dialect`'s shape.
    pub fn into_response_for(self, dialect: Dialect) -> Response {
        let (status, headers, body) = self.parts_for(dialect);
        let mut response = Response::new(axum::body::Body::from(body));
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        response
    }

    /// The status, headers and body of the response in `dialect`'s shape.
    pub fn parts_for(&self, dialect: Dialect) -> (StatusCode, HeaderMap, Bytes) {
        let body = self.body(dialect);
        let status = match (dialect, self.category) {
            (Dialect::Messages, Category::Overloaded) => {
                StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE)
            }
            _ => self.status,
        };
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        if self.no_retry {
            headers.insert("x-should-retry", HeaderValue::from_static("false"));
        }
        if let Some(after) = self.retry_after {
            let secs = after.as_secs_f64().ceil().max(1.0) as u64;
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                headers.insert("retry-after", v);
            }
            if let Ok(v) = HeaderValue::from_str(&after.as_millis().to_string()) {
                headers.insert("retry-after-ms", v);
            }
        }
        (status, headers, Bytes::from(body.to_string()))
    }

    /// The error as a stream event, for failures after the stream began.
    pub fn stream_error(&self, dialect: Dialect) -> StreamError {
        let (kind, code) = match dialect {
            Dialect::Chat | Dialect::Responses => {
                let (t, c) = openai_type_code(self.category);
                (Some(t.to_string()), c.map(str::to_string))
            }
            Dialect::Messages => (Some(anthropic_type(self.category).to_string()), None),
            Dialect::Gemini => (Some(grpc_status(self.category).to_string()), None),
        };
        StreamError {
            kind,
            code,
            message: self.message_for(dialect),
            status: Some(self.status.as_u16()),
        }
    }

    fn message_for(&self, dialect: Dialect) -> String {
        let mut message = self.message.clone();
        if self.category == Category::RateLimited && dialect != Dialect::Messages {
            // Codex reads the wait from "try again in 1.5s".
            if let Some(after) = self.retry_after {
                if !message.contains("try again in") {
                    message = format!("{message} Please try again in {:.1}s.", after.as_secs_f64());
                }
            }
        }
        if self.category == Category::ContextLength {
            let (prompt, limit) = self.context.unwrap_or((None, None));
            match dialect {
                Dialect::Messages
                    if !message.starts_with("prompt is too long")
                        && !message.starts_with("input length and") =>
                {
                    message = match (prompt, limit) {
                        (Some(p), Some(l)) => {
                            format!("prompt is too long: {p} tokens > {l} maximum")
                        }
                        _ => format!("prompt is too long: {message}"),
                    };
                }
                Dialect::Chat | Dialect::Responses
                    if !message.contains("maximum context length")
                        && !message.contains("context window") =>
                {
                    message = match (prompt, limit) {
                        (Some(p), Some(l)) => format!(
                            "This model's maximum context length is {l} tokens. However, your messages resulted in {p} tokens. ({message})"
                        ),
                        _ => format!("Your input exceeds the context window of this model. ({message})"),
                    };
                }
                Dialect::Gemini if !message.contains("exceeds the maximum number of tokens") => {
                    if let (Some(p), Some(l)) = (prompt, limit) {
                        message = format!(
                            "The input token count ({p}) exceeds the maximum number of tokens allowed ({l})."
                        );
                    }
                }
                _ => {}
            }
        }
        // The gateway's own words may quote what an upstream or a client sent.
        switchyard::internal::redact::redact_string(&mut message);
        message
    }

    fn body(&self, dialect: Dialect) -> Value {
        let message = self.message_for(dialect);
        match dialect {
            Dialect::Chat | Dialect::Responses => {
                let (kind, code) = openai_type_code(self.category);
                let code = self.error_code.or(code);
                json!({"error": {"message": message, "type": kind, "param": self.param, "code": code}})
            }
            Dialect::Messages => {
                let mut error = json!({"type": anthropic_type(self.category), "message": message});
                if let Some(code) = self.error_code {
                    error["details"] = json!({"error_code": code});
                }
                json!({"type": "error", "error": error})
            }
            Dialect::Gemini => json!({"error": {
                "code": self.status.as_u16(),
                "message": message,
                "status": grpc_status(self.category),
            }}),
        }
    }
}

fn default_status(c: Category) -> StatusCode {
    match c {
        Category::Unauthenticated => StatusCode::UNAUTHORIZED,
        Category::Forbidden => StatusCode::FORBIDDEN,
        Category::NotFound => StatusCode::NOT_FOUND,
        Category::BadRequest | Category::ContextLength => StatusCode::BAD_REQUEST,
        Category::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Category::RateLimited | Category::Quota => StatusCode::TOO_MANY_REQUESTS,
        Category::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
        Category::Upstream => StatusCode::BAD_GATEWAY,
        Category::Timeout => StatusCode::GATEWAY_TIMEOUT,
        Category::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn openai_type_code(c: Category) -> (&'static str, Option<&'static str>) {
    match c {
        Category::Unauthenticated => ("invalid_request_error", Some("invalid_api_key")),
        Category::Forbidden => ("invalid_request_error", Some("model_not_allowed")),
        Category::NotFound => ("invalid_request_error", Some("model_not_found")),
        Category::BadRequest => ("invalid_request_error", None),
        Category::TooLarge => ("invalid_request_error", Some("request_too_large")),
        Category::RateLimited => ("requests", Some("rate_limit_exceeded")),
        Category::ContextLength => ("invalid_request_error", Some("context_length_exceeded")),
        Category::Quota => ("insufficient_quota", Some("insufficient_quota")),
        Category::Overloaded => ("server_error", Some("server_is_overloaded")),
        Category::Upstream => ("server_error", Some("upstream_error")),
        Category::Timeout => ("server_error", Some("timeout")),
        Category::Internal => ("server_error", None),
    }
}

fn anthropic_type(c: Category) -> &'static str {
    match c {
        Category::Unauthenticated => "authentication_error",
        Category::Forbidden => "permission_error",
        Category::NotFound => "not_found_error",
        Category::BadRequest | Category::ContextLength => "invalid_request_error",
        Category::TooLarge => "request_too_large",
        Category::RateLimited => "rate_limit_error",
        Category::Quota => "billing_error",
        Category::Overloaded => "overloaded_error",
        Category::Upstream | Category::Internal => "api_error",
        Category::Timeout => "timeout_error",
    }
}

fn grpc_status(c: Category) -> &'static str {
    match c {
        Category::Unauthenticated => "UNAUTHENTICATED",
        Category::Forbidden => "PERMISSION_DENIED",
        Category::NotFound => "NOT_FOUND",
        Category::BadRequest | Category::ContextLength | Category::TooLarge => "INVALID_ARGUMENT",
        Category::RateLimited | Category::Quota => "RESOURCE_EXHAUSTED",
        Category::Overloaded | Category::Upstream => "UNAVAILABLE",
        Category::Timeout => "DEADLINE_EXCEEDED",
        Category::Internal => "INTERNAL",
    }
}

/// `retry-after` (seconds) or `retry-after-ms` from provider headers.
pub fn retry_after(headers: &[(String, String)]) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    get("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_overflow_reads_as_each_client_expects() {
        let mut e = ApiError::new(Category::ContextLength, "input too long");
        e.context = Some((Some(9000), Some(8192)));
        let m = e.body(Dialect::Messages);
        assert_eq!(m["error"]["type"], "invalid_request_error");
        assert_eq!(
            m["error"]["message"],
            "prompt is too long: 9000 tokens > 8192 maximum"
        );
        let c = e.body(Dialect::Chat);
        assert_eq!(c["error"]["code"], "context_length_exceeded");
        assert!(c["error"]["message"]
            .as_str()
            .unwrap()
            .contains("maximum context length is 8192"));
        let g = e.body(Dialect::Gemini);
        assert_eq!(g["error"]["status"], "INVALID_ARGUMENT");
    }

    #[test]
    fn rate_limits_carry_the_wait() {
        let e = ApiError::new(Category::RateLimited, "Rate limit reached.")
            .with_retry_after(Duration::from_millis(1500));
        let c = e.body(Dialect::Responses);
        assert_eq!(c["error"]["code"], "rate_limit_exceeded");
        assert!(c["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("try again in 1.5s."));
        assert_eq!(
            e.body(Dialect::Messages)["error"]["type"],
            "rate_limit_error"
        );
        let r = e.into_response_for(Dialect::Messages);
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["retry-after"], "2");
    }

    #[test]
    fn an_error_code_is_written_as_anthropic_details() {
        let e = ApiError::new(Category::BadRequest, "no threads here")
            .with_error_code("thread_unsupported_request");
        assert_eq!(
            e.body(Dialect::Messages),
            json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": "no threads here",
                "details": {"error_code": "thread_unsupported_request"},
            }})
        );
        let plain = ApiError::new(Category::BadRequest, "no threads here");
        assert!(plain.body(Dialect::Messages)["error"]
            .get("details")
            .is_none());
    }

    #[test]
    fn overload_is_529_for_anthropic_clients() {
        let r =
            ApiError::new(Category::Overloaded, "Overloaded").into_response_for(Dialect::Messages);
        assert_eq!(r.status().as_u16(), 529);
        let r = ApiError::new(Category::Overloaded, "Overloaded").into_response_for(Dialect::Chat);
        assert_eq!(r.status().as_u16(), 503);
    }
}

//! Error bodies shaped like each provider's, byte for byte in structure: one envelope
//! function per dialect family, and the per-status, quota and context-length texts.

use crate::behaviour::{ContextKind, QuotaKind, RetryAfter};
use serde_json::{json, Value};
use switchyard_wire::Dialect;

/// An error response: status, extra headers and a JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorResponse {
    /// HTTP status.
    pub status: u16,
    /// Headers to add (lowercase names).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// OpenAI's envelope (chat and responses, and vLLM, DeepSeek…):
/// `{"error":{"message","type","param","code"}}`.
pub fn openai_envelope(message: &str, kind: &str, param: Option<&str>, code: Value) -> Value {
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}

/// Anthropic's envelope: `{"type":"error","error":{"type","message"},"request_id"}`.
pub fn anthropic_envelope(kind: &str, message: &str, request_id: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id})
}

/// Google's envelope: `{"error":{"code","message","status","details"}}`.
pub fn gemini_envelope(code: u16, message: &str, status: &str, details: Vec<Value>) -> Value {
    let mut error = json!({"code": code, "message": message, "status": status});
    if !details.is_empty() {
        error["details"] = Value::Array(details);
    }
    json!({ "error": error })
}

/// The google.rpc status name of an HTTP status.
pub fn grpc_status(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        500 => "INTERNAL",
        501 => "UNIMPLEMENTED",
        503 | 529 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        s if s < 500 => "FAILED_PRECONDITION",
        _ => "UNKNOWN",
    }
}

/// A Google duration string (`"2s"`, `"1.500s"`).
pub fn google_duration(retry: RetryAfter) -> String {
    let ms = retry.duration().as_millis();
    let (secs, millis) = (ms / 1000, ms % 1000);
    if millis == 0 {
        format!("{secs}s")
    } else {
        format!("{secs}.{millis:03}s")
    }
}

fn retry_info(retry: RetryAfter) -> Value {
    json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": google_duration(retry)})
}

fn quota_failure(model: &str, quota_id: &str, value: &str) -> Value {
    json!({
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            "quotaId": quota_id,
            "quotaDimensions": {"location": "global", "model": model},
            "quotaValue": value
        }]
    })
}

fn help_link() -> Value {
    json!({
        "@type": "type.googleapis.com/google.rpc.Help",
        "links": [{
            "description": "Learn more about Gemini API quotas",
            "url": "https://ai.google.dev/gemini-api/docs/rate-limits"
        }]
    })
}

/// Gemini's 429 `RetryInfo` delay when the model name asks for none.
pub const GEMINI_DEFAULT_RETRY: RetryAfter = RetryAfter::Seconds(23);

fn retry_headers(dialect: Dialect, retry: Option<RetryAfter>) -> Vec<(String, String)> {
    // Google carries the delay in the body (`RetryInfo`), not in a header.
    match (dialect, retry) {
        (Dialect::Gemini, _) | (_, None) => Vec::new(),
        (_, Some(RetryAfter::Seconds(s))) => vec![("retry-after".into(), s.to_string())],
        (_, Some(RetryAfter::Millis(ms))) => vec![("retry-after-ms".into(), ms.to_string())],
    }
}

fn rate_limit_headers(dialect: Dialect) -> Vec<(String, String)> {
    let pairs: &[(&str, &str)] = match dialect {
        Dialect::Chat | Dialect::Responses => &[
            ("x-ratelimit-limit-requests", "3"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "20s"),
            ("x-ratelimit-limit-tokens", "40000"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "1m30s"),
        ],
        Dialect::Messages => &[
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2026-01-01T00:00:20Z"),
        ],
        Dialect::Gemini => &[],
    };
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn retry_text(retry: Option<RetryAfter>) -> String {
    match retry {
        Some(RetryAfter::Seconds(s)) => format!(" Please try again in {s}s."),
        Some(RetryAfter::Millis(ms)) => format!(" Please try again in {ms}ms."),
        None => String::new(),
    }
}

/// The error object (type, code, message) OpenAI sends for a status.
fn openai_status(status: u16, model: &str, retry: Option<RetryAfter>) -> Value {
    let (message, kind, code): (String, &str, Value) = match status {
        400 => (
            "Invalid request (injected by switchyard-mock).".into(),
            "invalid_request_error",
            Value::Null,
        ),
        401 => (
            "Incorrect API key provided: sk-mock***. You can find your API key at https://platform.openai.com/account/api-keys.".into(),
            "invalid_request_error",
            json!("invalid_api_key"),
        ),
        403 => (
            "Country, region, or territory not supported".into(),
            "request_forbidden",
            json!("unsupported_country_region_territory"),
        ),
        404 => (
            format!("The model `{model}` does not exist or you do not have access to it."),
            "invalid_request_error",
            json!("model_not_found"),
        ),
        429 => (
            format!(
                "Rate limit reached for {model} in organization org-mock on requests per min (RPM): Limit 3, Used 3, Requested 1.{} Visit https://platform.openai.com/account/rate-limits to learn more.",
                retry_text(retry)
            ),
            "requests",
            json!("rate_limit_exceeded"),
        ),
        500 => (
            "The server had an error while processing your request. Sorry about that!".into(),
            "server_error",
            Value::Null,
        ),
        503 | 529 => (
            "The engine is currently overloaded, please try again later.".into(),
            "server_error",
            Value::Null,
        ),
        s if s < 500 => (
            format!("HTTP {s} (injected by switchyard-mock)."),
            "invalid_request_error",
            Value::Null,
        ),
        s => (
            format!("HTTP {s} (injected by switchyard-mock)."),
            "server_error",
            Value::Null,
        ),
    };
    openai_envelope(&message, kind, None, code)
}

/// The (type, message) Anthropic sends for a status.
fn anthropic_status(status: u16, model: &str) -> (&'static str, String) {
    match status {
        400 => ("invalid_request_error", "Invalid request (injected by switchyard-mock).".into()),
        401 => ("authentication_error", "invalid x-api-key".into()),
        402 => ("billing_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.".into()),
        403 => ("permission_error", "Your API key does not have permission to use the specified resource.".into()),
        404 => ("not_found_error", format!("model: {model}")),
        413 => ("request_too_large", "Request exceeds the maximum allowed number of bytes.".into()),
        429 => ("rate_limit_error", "This request would exceed the rate limit for your organization (mock) of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.".into()),
        500 => ("api_error", "Internal server error".into()),
        504 => ("timeout_error", "Request timed out".into()),
        529 => ("overloaded_error", "Overloaded".into()),
        s if s < 500 => ("invalid_request_error", format!("HTTP {s} (injected by switchyard-mock).")),
        s => ("api_error", format!("HTTP {s} (injected by switchyard-mock).")),
    }
}

fn gemini_status_message(status: u16, model: &str) -> String {
    match status {
        400 => "Request contains an invalid argument.".into(),
        401 => "API key not valid. Please pass a valid API key.".into(),
        403 => "The caller does not have permission".into(),
        404 => format!("models/{model} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."),
        429 => "Resource has been exhausted (e.g. check quota).".into(),
        500 => "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting".into(),
        503 | 529 => "The model is overloaded. Please try again later.".into(),
        504 => "Deadline expired before operation could complete.".into(),
        s => format!("HTTP {s} (injected by switchyard-mock)."),
    }
}

/// The error object for a status, without the HTTP framing (also used in streams).
pub fn status_body(
    dialect: Dialect,
    status: u16,
    model: &str,
    retry: Option<RetryAfter>,
    request_id: &str,
) -> Value {
    match dialect {
        Dialect::Chat | Dialect::Responses => openai_status(status, model, retry),
        Dialect::Messages => {
            let (kind, message) = anthropic_status(status, model);
            anthropic_envelope(kind, &message, request_id)
        }
        Dialect::Gemini => {
            let mut details = Vec::new();
            if status == 429 {
                details.push(quota_failure(
                    model,
                    "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                    "10",
                ));
                details.push(help_link());
                details.push(retry_info(retry.unwrap_or(GEMINI_DEFAULT_RETRY)));
            } else if let Some(r) = retry {
                details.push(retry_info(r));
            }
            gemini_envelope(
                status,
                &gemini_status_message(status, model),
                grpc_status(status),
                details,
            )
        }
    }
}

fn response(status: u16, headers: Vec<(String, String)>, body: &Value) -> ErrorResponse {
    ErrorResponse {
        status,
        headers,
        body: body.to_string().into_bytes(),
    }
}

/// `fault-<status>`: the dialect's error for `status`, with Retry-After headers (or
/// Gemini's `RetryInfo`) when asked, and rate-limit headers on 429.
pub fn status_error(
    dialect: Dialect,
    status: u16,
    model: &str,
    retry: Option<RetryAfter>,
    request_id: &str,
) -> ErrorResponse {
    let mut headers = retry_headers(dialect, retry);
    if status == 429 {
        headers.extend(rate_limit_headers(dialect));
    }
    response(
        status,
        headers,
        &status_body(dialect, status, model, retry, request_id),
    )
}

/// `quota…`: each dialect's real quota or billing error.
pub fn quota_error(
    dialect: Dialect,
    kind: QuotaKind,
    model: &str,
    request_id: &str,
) -> ErrorResponse {
    const OPENAI_QUOTA: &str = "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.";
    const CREDIT: &str = "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.";
    match (dialect, kind) {
        (Dialect::Chat | Dialect::Responses, QuotaKind::PaymentRequired) => response(
            402,
            Vec::new(),
            // OpenRouter's shape for exhausted credits.
            &json!({"error": {"code": 402, "message": "Insufficient credits. Add more using https://openrouter.ai/settings/credits"}, "user_id": "user_mock"}),
        ),
        (Dialect::Chat | Dialect::Responses, _) => response(
            429,
            Vec::new(),
            &openai_envelope(
                OPENAI_QUOTA,
                "insufficient_quota",
                None,
                json!("insufficient_quota"),
            ),
        ),
        (Dialect::Messages, QuotaKind::Default) => response(
            400,
            Vec::new(),
            &anthropic_envelope("billing_error", CREDIT, request_id),
        ),
        (Dialect::Messages, QuotaKind::Credit) => response(
            400,
            Vec::new(),
            &anthropic_envelope("invalid_request_error", CREDIT, request_id),
        ),
        (Dialect::Messages, QuotaKind::PaymentRequired) => response(
            402,
            Vec::new(),
            &anthropic_envelope("billing_error", CREDIT, request_id),
        ),
        (Dialect::Messages, QuotaKind::SpendLimit) => {
            let mut body = anthropic_envelope(
                "rate_limit_error",
                "You have reached your specified workspace API usage limits. You will regain access on 2026-01-01 at 00:00 UTC.",
                request_id,
            );
            body["error"]["details"] = json!({"error_code": "enforced_spend_limit_reached"});
            response(429, Vec::new(), &body)
        }
        (Dialect::Gemini, _) => response(
            429,
            Vec::new(),
            &gemini_envelope(
                429,
                "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
                "RESOURCE_EXHAUSTED",
                vec![
                    quota_failure(
                        model,
                        "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                        "250",
                    ),
                    help_link(),
                ],
            ),
        ),
    }
}

/// The numbers the context-length errors quote.
pub mod numbers {
    /// OpenAI's window in `context-overflow`.
    pub const OPENAI_LIMIT: u64 = 8192;
    /// OpenAI's prompt tokens in `context-overflow`.
    pub const OPENAI_PROMPT: u64 = 9000;
    /// vLLM's window.
    pub const VLLM_LIMIT: u64 = 4096;
    /// Anthropic's prompt tokens in "prompt is too long".
    pub const ANTHROPIC_PROMPT: u64 = 219898;
    /// Anthropic's window.
    pub const ANTHROPIC_LIMIT: u64 = 200000;
    /// Anthropic's input in the `max_tokens` variant.
    pub const ANTHROPIC_INPUT: u64 = 197000;
    /// Anthropic's `max_tokens` in the `max_tokens` variant.
    pub const ANTHROPIC_MAX_TOKENS: u64 = 8192;
    /// Gemini's input token count.
    pub const GEMINI_PROMPT: u64 = 1200000;
    /// Gemini's limit.
    pub const GEMINI_LIMIT: u64 = 1048576;
}

/// `context-overflow…`: each dialect's real context-length error, with numbers.
pub fn context_error(dialect: Dialect, kind: ContextKind, request_id: &str) -> ErrorResponse {
    use numbers::*;
    let vllm = format!("This model's maximum context length is {VLLM_LIMIT} tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.");
    let openai_max = format!("This model's maximum context length is {OPENAI_LIMIT} tokens. However, you requested {OPENAI_PROMPT} tokens (8000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.");
    let body = match (dialect, kind) {
        (Dialect::Chat | Dialect::Responses, ContextKind::Vllm) => {
            openai_envelope(&vllm, "BadRequestError", None, json!(400))
        }
        (Dialect::Chat, ContextKind::Default) => openai_envelope(
            &format!("This model's maximum context length is {OPENAI_LIMIT} tokens. However, your messages resulted in {OPENAI_PROMPT} tokens. Please reduce the length of the messages."),
            "invalid_request_error",
            Some("messages"),
            json!("context_length_exceeded"),
        ),
        (Dialect::Responses, ContextKind::Default) => openai_envelope(
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "invalid_request_error",
            Some("input"),
            json!("context_length_exceeded"),
        ),
        (Dialect::Chat | Dialect::Responses, ContextKind::MaxTokens) => openai_envelope(
            &openai_max,
            "invalid_request_error",
            Some("messages"),
            json!("context_length_exceeded"),
        ),
        (Dialect::Messages, ContextKind::Default) => anthropic_envelope(
            "invalid_request_error",
            &format!("prompt is too long: {ANTHROPIC_PROMPT} tokens > {ANTHROPIC_LIMIT} maximum"),
            request_id,
        ),
        (Dialect::Messages, ContextKind::MaxTokens) => anthropic_envelope(
            "invalid_request_error",
            &format!("input length and `max_tokens` exceed context limit: {ANTHROPIC_INPUT} + {ANTHROPIC_MAX_TOKENS} > {ANTHROPIC_LIMIT}, decrease input length or `max_tokens` and try again"),
            request_id,
        ),
        (Dialect::Messages, ContextKind::Vllm) => {
            anthropic_envelope("BadRequestError", &vllm, request_id)
        }
        (Dialect::Gemini, _) => gemini_envelope(
            400,
            &format!("The input token count ({GEMINI_PROMPT}) exceeds the maximum number of tokens allowed ({GEMINI_LIMIT})."),
            "INVALID_ARGUMENT",
            Vec::new(),
        ),
    };
    response(400, Vec::new(), &body)
}

/// A request the mock cannot serve (unknown model, undecodable body) in the dialect's shape.
pub fn client_error(
    dialect: Dialect,
    status: u16,
    message: &str,
    request_id: &str,
) -> ErrorResponse {
    let body = match dialect {
        Dialect::Chat | Dialect::Responses => {
            let code = if status == 404 {
                json!("model_not_found")
            } else {
                Value::Null
            };
            openai_envelope(message, "invalid_request_error", None, code)
        }
        Dialect::Messages => {
            let kind = if status == 404 {
                "not_found_error"
            } else {
                "invalid_request_error"
            };
            anthropic_envelope(kind, message, request_id)
        }
        Dialect::Gemini => gemini_envelope(status, message, grpc_status(status), Vec::new()),
    };
    response(status, Vec::new(), &body)
}

/// The bytes of the dialect's in-stream error event for `status`. `sequence` is the
/// number of events sent before (Responses numbers its events); `response_id` and
/// `model` fill the Responses `response` object.
pub fn stream_error_event(
    dialect: Dialect,
    status: u16,
    model: &str,
    response_id: &str,
    created: u64,
    sequence: u64,
) -> Vec<u8> {
    let mut out = Vec::new();
    match dialect {
        Dialect::Chat => {
            let body = openai_status(status, model, None);
            switchyard_wire::sse::write_event(&mut out, None, &body.to_string());
        }
        Dialect::Responses => {
            let error = openai_status(status, model, None);
            let code = match error["error"]["code"].as_str() {
                Some(c) => c.to_string(),
                None => "server_error".to_string(),
            };
            let body = json!({
                "type": "response.failed",
                "sequence_number": sequence,
                "response": {
                    "id": response_id,
                    "object": "response",
                    "created_at": created,
                    "status": "failed",
                    "error": {"code": code, "message": error["error"]["message"]},
                    "incomplete_details": null,
                    "model": model,
                    "output": [],
                    "usage": null
                }
            });
            switchyard_wire::sse::write_event(&mut out, Some("response.failed"), &body.to_string());
        }
        Dialect::Messages => {
            let (kind, message) = anthropic_status(status, model);
            let body = json!({"type": "error", "error": {"type": kind, "message": message}});
            switchyard_wire::sse::write_event(&mut out, Some("error"), &body.to_string());
        }
        Dialect::Gemini => {
            let body = status_body(dialect, status, model, None, "");
            switchyard_wire::sse::write_event(&mut out, None, &body.to_string());
        }
    }
    out
}

/// The status an in-stream error uses when the model name gives none.
pub fn default_stream_error_status(dialect: Dialect) -> u16 {
    match dialect {
        Dialect::Messages => 529,
        Dialect::Gemini => 503,
        Dialect::Chat | Dialect::Responses => 500,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_of(r: &ErrorResponse) -> Value {
        serde_json::from_slice(&r.body).unwrap()
    }

    #[test]
    fn rate_limits_per_dialect() {
        let r = status_error(
            Dialect::Chat,
            429,
            "m",
            Some(RetryAfter::Seconds(2)),
            "req_1",
        );
        assert_eq!(r.status, 429);
        assert!(r.headers.contains(&("retry-after".into(), "2".into())));
        assert_eq!(json_of(&r)["error"]["code"], "rate_limit_exceeded");
        assert!(json_of(&r)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("try again in 2s"));

        let r = status_error(
            Dialect::Messages,
            429,
            "m",
            Some(RetryAfter::Millis(1500)),
            "req_1",
        );
        assert!(r
            .headers
            .contains(&("retry-after-ms".into(), "1500".into())));
        let v = json_of(&r);
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "rate_limit_error");
        assert_eq!(v["request_id"], "req_1");

        let r = status_error(
            Dialect::Gemini,
            429,
            "m",
            Some(RetryAfter::Millis(1500)),
            "",
        );
        assert!(r.headers.iter().all(|(k, _)| !k.starts_with("retry-after")));
        let v = json_of(&r);
        assert_eq!(v["error"]["status"], "RESOURCE_EXHAUSTED");
        assert_eq!(v["error"]["details"][2]["retryDelay"], "1.500s");
    }

    #[test]
    fn overload_and_quota() {
        let v = json_of(&status_error(Dialect::Messages, 529, "m", None, "r"));
        assert_eq!(v["error"]["type"], "overloaded_error");
        let v = json_of(&status_error(Dialect::Gemini, 503, "m", None, "r"));
        assert_eq!(v["error"]["status"], "UNAVAILABLE");
        let r = quota_error(Dialect::Chat, QuotaKind::Default, "m", "r");
        assert_eq!(
            (r.status, json_of(&r)["error"]["code"].clone()),
            (429, json!("insufficient_quota"))
        );
        let r = quota_error(Dialect::Chat, QuotaKind::PaymentRequired, "m", "r");
        assert_eq!(r.status, 402);
        let r = quota_error(Dialect::Messages, QuotaKind::SpendLimit, "m", "r");
        assert_eq!(
            json_of(&r)["error"]["details"]["error_code"],
            "enforced_spend_limit_reached"
        );
        let r = quota_error(Dialect::Messages, QuotaKind::Default, "m", "r");
        assert_eq!(
            (r.status, json_of(&r)["error"]["type"].clone()),
            (400, json!("billing_error"))
        );
    }

    #[test]
    fn context_texts_are_verbatim() {
        let v = json_of(&context_error(Dialect::Messages, ContextKind::Default, "r"));
        assert_eq!(
            v["error"]["message"],
            "prompt is too long: 219898 tokens > 200000 maximum"
        );
        let v = json_of(&context_error(Dialect::Chat, ContextKind::Default, "r"));
        assert_eq!(v["error"]["code"], "context_length_exceeded");
        let v = json_of(&context_error(Dialect::Gemini, ContextKind::Default, "r"));
        assert!(v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("The input token count (1200000)"));
    }

    #[test]
    fn google_durations() {
        assert_eq!(google_duration(RetryAfter::Seconds(23)), "23s");
        assert_eq!(google_duration(RetryAfter::Millis(250)), "0.250s");
    }
}

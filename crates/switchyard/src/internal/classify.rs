//! Turning a provider's error answer into a typed [`Error`].
//!
//! One reader for every dialect's error envelope (OpenAI and Gemini put it under
//! `error`, Anthropic under `error` beside `type: "error"`), then rules on status, type,
//! code and message, in the order that makes the most specific reading win: quota before
//! rate limit (OpenAI's `insufficient_quota` is a 429), context length before bad request.

use crate::error::{Error, ProviderDetails};
use bytes::Bytes;
use serde_json::Value;

/// Response headers worth keeping with an error.
pub fn is_kept_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "retry-after" | "retry-after-ms" | "x-request-id" | "request-id" | "x-goog-request-id"
    ) || name.starts_with("x-ratelimit-")
        || name.starts_with("anthropic-ratelimit-")
}

/// What an error body says, whatever the dialect.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ErrorBody {
    /// `error.type` (OpenAI, Anthropic) or `error.status` (Gemini).
    pub kind: Option<String>,
    /// `error.code` when a string (OpenAI), or Anthropic's `error.details.error_code`.
    pub code: Option<String>,
    /// `error.message`.
    pub message: Option<String>,
    /// Anthropic's top-level `request_id`.
    pub request_id: Option<String>,
    /// Gemini's `RetryInfo.retryDelay`, in seconds.
    pub retry_delay_secs: Option<f64>,
}

/// Reads an error envelope from a body; an unreadable body gives an empty reading.
pub fn read_error_body(body: &[u8]) -> ErrorBody {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return ErrorBody::default();
    };
    // Some servers wrap the envelope in a one-element array (Gemini's streaming route).
    let value = match value {
        Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        other => other,
    };
    let mut out = ErrorBody {
        request_id: value
            .get("request_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        ..ErrorBody::default()
    };
    let Some(error) = value.get("error") else {
        return out;
    };
    if let Some(message) = error.as_str() {
        out.message = Some(message.to_string());
        return out;
    }
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    out.message = text(error.get("message"));
    out.kind = text(error.get("type")).or_else(|| text(error.get("status")));
    out.code = text(error.get("code")).or_else(|| {
        error
            .get("details")
            .and_then(|d| d.get("error_code"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    if let Some(details) = error.get("details").and_then(Value::as_array) {
        out.retry_delay_secs = details
            .iter()
            .filter_map(|d| d.get("retryDelay").and_then(Value::as_str))
            .find_map(parse_google_duration);
    }
    out
}

/// Reads a protobuf duration such as `"23s"` or `"1.5s"`.
pub fn parse_google_duration(text: &str) -> Option<f64> {
    text.trim().strip_suffix('s')?.parse::<f64>().ok()
}

/// Builds the details of an error answer.
pub fn details(
    backend: &str,
    status: u16,
    headers: &[(String, String)],
    body: Bytes,
) -> (ProviderDetails, ErrorBody) {
    let reading = read_error_body(&body);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let message = reading.message.clone().unwrap_or_else(|| {
        let text = crate::text::preview(&body, 300);
        if text.is_empty() {
            format!("HTTP {status} with an empty body")
        } else {
            text
        }
    });
    let details = ProviderDetails {
        backend: backend.to_string(),
        status,
        request_id: header("x-request-id")
            .or_else(|| header("request-id"))
            .or_else(|| reading.request_id.clone()),
        kind: reading.kind.clone(),
        code: reading.code.clone(),
        message,
        headers: headers
            .iter()
            .filter(|(k, _)| is_kept_header(k))
            .cloned()
            .collect(),
        body,
    };
    (details, reading)
}

/// The typed error for a provider's error answer.
pub fn classify(details: ProviderDetails) -> Error {
    let kind = details.kind.as_deref().unwrap_or("");
    let code = details.code.as_deref().unwrap_or("");
    let message = details.message.to_ascii_lowercase();
    let status = details.status;

    let quota = status == 402
        || code == "insufficient_quota"
        || kind == "insufficient_quota"
        || kind == "billing_error"
        || code == "enforced_spend_limit_reached"
        || message.contains("credit balance is too low")
        || message.contains("exceeded your current quota");
    if quota {
        return Error::ProviderQuotaExhausted(Box::new(details));
    }
    if let Some(numbers) = context_overflow(code, &details.message) {
        return Error::ContextLengthExceeded {
            prompt_tokens: numbers.prompt,
            max_tokens: numbers.max_output,
            limit: numbers.limit,
            message: details.message.clone(),
            details: Some(Box::new(details)),
        };
    }
    if status == 429
        || kind == "rate_limit_error"
        || kind == "RESOURCE_EXHAUSTED"
        || code == "rate_limit_exceeded"
    {
        return Error::RateLimited {
            attempts: 1,
            waited: std::time::Duration::ZERO,
            last: Box::new(details),
        };
    }
    // OpenAI reports overload as a `server_error` saying so (in a 503, or inside a stream).
    let openai_overload =
        (kind == "server_error" || code == "server_error") && message.contains("overloaded");
    if status == 529
        || status == 503
        || kind == "overloaded_error"
        || kind == "UNAVAILABLE"
        || openai_overload
    {
        return Error::Overloaded(Box::new(details));
    }
    match status {
        401 | 403 => Error::Auth(Box::new(details)),
        400 | 404 | 413 | 422 => Error::BadRequest(Box::new(details)),
        _ if kind == "authentication_error" || kind == "permission_error" => {
            Error::Auth(Box::new(details))
        }
        _ if kind == "invalid_request_error" || kind == "INVALID_ARGUMENT" => {
            Error::BadRequest(Box::new(details))
        }
        _ => Error::Provider(Box::new(details)),
    }
}

/// The numbers of a context-overflow message.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ContextNumbers {
    /// Prompt tokens.
    pub prompt: Option<u64>,
    /// Output tokens asked for.
    pub max_output: Option<u64>,
    /// The window.
    pub limit: Option<u64>,
}

/// Recognises each provider's context-overflow message and reads its numbers.
pub fn context_overflow(code: &str, message: &str) -> Option<ContextNumbers> {
    let lower = message.to_ascii_lowercase();
    let numbers = numbers_in(message);
    if lower.contains("prompt is too long") {
        // Anthropic: "prompt is too long: 219898 tokens > 200000 maximum"
        return Some(ContextNumbers {
            prompt: numbers.first().copied(),
            max_output: None,
            limit: numbers.get(1).copied(),
        });
    }
    if lower.contains("exceed context limit") {
        // Anthropic: "input length and `max_tokens` exceed context limit: 180000 + 40000 > 200000"
        return Some(ContextNumbers {
            prompt: numbers.first().copied(),
            max_output: numbers.get(1).copied(),
            limit: numbers.get(2).copied(),
        });
    }
    if lower.contains("input token count") && lower.contains("exceeds the maximum") {
        // Gemini: "The input token count (N) exceeds the maximum number of tokens allowed (M)"
        return Some(ContextNumbers {
            prompt: numbers.first().copied(),
            max_output: None,
            limit: numbers.get(1).copied(),
        });
    }
    if code == "context_length_exceeded" || lower.contains("maximum context length") {
        // OpenAI: "This model's maximum context length is 8192 tokens. However, your messages
        // resulted in 9000 tokens (8000 in the messages, 1000 in the completion)."
        // vLLM: "This model's maximum context length is 4096 tokens. However, you requested
        // 5000 tokens (3000 in the messages, 2000 in the completion)."
        let limit = numbers.first().copied();
        let (prompt, max_output) = match (numbers.get(2), numbers.get(3)) {
            (Some(p), Some(m)) => (Some(*p), Some(*m)),
            _ => (numbers.get(1).copied(), None),
        };
        return Some(ContextNumbers {
            prompt,
            max_output,
            limit,
        });
    }
    None
}

fn numbers_in(text: &str) -> Vec<u64> {
    text.split(|c: char| !c.is_ascii_digit() && c != ',')
        .map(|s| s.replace(',', ""))
        .filter_map(|s| s.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_for(status: u16, body: &str) -> Error {
        let (d, _) = details("b", status, &[], Bytes::from(body.to_string()));
        classify(d)
    }

    #[test]
    fn quota_bodies_are_quota_not_rate_limits() {
        let openai = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        assert!(matches!(
            error_for(429, openai),
            Error::ProviderQuotaExhausted(_)
        ));
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}"#;
        assert!(matches!(
            error_for(400, anthropic),
            Error::ProviderQuotaExhausted(_)
        ));
        let spend = r#"{"type":"error","error":{"type":"rate_limit_error","message":"limit","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        assert!(matches!(
            error_for(429, spend),
            Error::ProviderQuotaExhausted(_)
        ));
        assert!(matches!(
            error_for(402, "{}"),
            Error::ProviderQuotaExhausted(_)
        ));
    }

    #[test]
    fn context_messages_give_their_numbers() {
        let cases = [
            ("prompt is too long: 219898 tokens > 200000 maximum", (Some(219898), None, Some(200000))),
            ("input length and `max_tokens` exceed context limit: 180000 + 40000 > 200000", (Some(180000), Some(40000), Some(200000))),
            ("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", (Some(1200000), None, Some(1048576))),
            ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens (8000 in the messages, 1000 in the completion).", (Some(8000), Some(1000), Some(8192))),
            ("This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens.", (Some(5000), None, Some(4096))),
        ];
        for (message, (prompt, max_output, limit)) in cases {
            let n = context_overflow("", message).unwrap();
            assert_eq!(
                (n.prompt, n.max_output, n.limit),
                (prompt, max_output, limit),
                "{message}"
            );
        }
    }

    #[test]
    fn statuses_map_to_kinds() {
        assert!(matches!(error_for(429, "{}"), Error::RateLimited { .. }));
        assert!(matches!(error_for(529, "{}"), Error::Overloaded(_)));
        assert!(matches!(error_for(503, "{}"), Error::Overloaded(_)));
        assert!(matches!(error_for(401, "{}"), Error::Auth(_)));
        assert!(matches!(error_for(400, "{}"), Error::BadRequest(_)));
        assert!(matches!(error_for(500, "{}"), Error::Provider(_)));
    }

    #[test]
    fn gemini_retry_delay_is_read() {
        let body = r#"{"error":{"code":429,"message":"Quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"23s"}]}}"#;
        assert_eq!(
            read_error_body(body.as_bytes()).retry_delay_secs,
            Some(23.0)
        );
    }
}

//! An [`Error`] in a record: its kind and message for people, and its fields so that a
//! replay gives back the very same error.

use super::raw::RawBytes;
use crate::error::{Error, ProviderDetails, ReplyBound, TimeoutPhase};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::time::Duration;

/// A failed call's error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorRecord {
    /// The [`crate::ErrorKind`] name (`RateLimited`); `Dropped` for a stream the caller
    /// dropped before its end.
    pub kind: String,
    /// The message as shown to people.
    pub message: String,
    /// The provider's answer, for errors that came from one (no request header, so no
    /// key, is ever in it).
    pub provider: Option<ProviderRecord>,
    /// The error's other fields (backend, reason, phase, waits…).
    #[serde(default)]
    pub fields: Map<String, Value>,
}

/// What a provider sent with an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRecord {
    /// The backend that answered.
    pub backend: String,
    /// HTTP status (0 for an error inside a stream without one).
    pub status: u16,
    /// The provider's request id.
    pub request_id: Option<String>,
    /// The provider's error type.
    pub kind: Option<String>,
    /// The provider's error code.
    pub code: Option<String>,
    /// The provider's message.
    pub message: String,
    /// Response headers kept (retry hints, rate-limit counters, request ids).
    pub headers: Vec<(String, String)>,
    /// The body as received.
    pub body: RawBytes,
}

impl ProviderRecord {
    fn new(d: &ProviderDetails) -> Self {
        ProviderRecord {
            backend: d.backend.clone(),
            status: d.status,
            request_id: d.request_id.clone(),
            kind: d.kind.clone(),
            code: d.code.clone(),
            message: d.message.clone(),
            // Only response headers are ever here; the filter is a second lock on the door.
            headers: d
                .headers
                .iter()
                .filter(|(k, _)| {
                    !crate::secrets::is_key_field(k) && !k.eq_ignore_ascii_case("x-goog-api-key")
                })
                .cloned()
                .collect(),
            body: RawBytes::new(&d.body),
        }
    }

    fn details(&self) -> ProviderDetails {
        ProviderDetails {
            backend: self.backend.clone(),
            status: self.status,
            request_id: self.request_id.clone(),
            kind: self.kind.clone(),
            code: self.code.clone(),
            message: self.message.clone(),
            headers: self.headers.clone(),
            body: self.body.to_bytes().unwrap_or_default(),
        }
    }
}

fn ms(d: Duration) -> Value {
    json!(d.as_secs_f64() * 1000.0)
}

fn phase_name(p: TimeoutPhase) -> &'static str {
    match p {
        TimeoutPhase::Connect => "connect",
        TimeoutPhase::FirstByte => "first_byte",
        TimeoutPhase::Idle => "idle",
        TimeoutPhase::Total => "total",
    }
}

impl ErrorRecord {
    /// The record of an error.
    pub fn new(e: &Error) -> ErrorRecord {
        let mut fields = Map::new();
        let mut put = |k: &str, v: Value| {
            fields.insert(k.to_string(), v);
        };
        match e {
            Error::RateLimited {
                attempts, waited, ..
            } => {
                put("attempts", json!(attempts));
                put("waited_ms", ms(*waited));
            }
            Error::ProviderReplyMalformed {
                backend,
                reason,
                attempts,
                body,
            } => {
                put("backend", json!(backend));
                put("reason", json!(reason));
                put("attempts", json!(attempts));
                put("body", json!(RawBytes::new(body)));
            }
            Error::ContextLengthExceeded {
                prompt_tokens,
                max_tokens,
                limit,
                message,
                ..
            } => {
                put("prompt_tokens", json!(prompt_tokens));
                put("max_tokens", json!(max_tokens));
                put("limit", json!(limit));
                put("message", json!(message));
            }
            Error::Timeout {
                backend,
                phase,
                after,
            } => {
                put("backend", json!(backend));
                put("phase", json!(phase_name(*phase)));
                put("after_ms", ms(*after));
            }
            Error::Transport { backend, message } => {
                put("backend", json!(backend));
                put("message", json!(message));
            }
            Error::MissingKey { backend, variable } => {
                put("backend", json!(backend));
                put("variable", json!(variable));
            }
            Error::Config(m) | Error::Unsupported(m) => put("message", json!(m)),
            Error::BudgetExceeded {
                limit,
                max,
                spent,
                in_flight,
            } => {
                put("limit", json!(limit));
                put("max", json!(max));
                put("spent", json!(spent));
                put("in_flight", json!(in_flight));
            }
            Error::Cancelled { backend, during } => {
                put("backend", json!(backend));
                put("during", json!(during));
            }
            // The bound by its setting's name: the record says which bound and its value
            // (the bytes kept are the record's `raw`).
            Error::ReplyTooLarge {
                backend,
                bound,
                limit,
                ..
            } => {
                put("backend", json!(backend));
                put("bound", json!(bound.setting()));
                put("limit", json!(limit));
            }
            Error::BudgetStopped { max, spent, stream } => {
                put("limit", json!("max_usd"));
                put("max", json!(max));
                put("spent", json!(spent));
                put("stream", json!(stream));
            }
            Error::ReplayExhausted {
                role,
                digest,
                nearest,
            } => {
                put("role", json!(role));
                put("digest", json!(digest));
                put("nearest", json!(nearest));
            }
            _ => {}
        }
        ErrorRecord {
            kind: e.kind().as_str().to_string(),
            message: e.to_string(),
            provider: e.provider_details().map(ProviderRecord::new),
            fields,
        }
    }

    /// A stream the caller dropped before its end.
    pub fn cancelled() -> ErrorRecord {
        ErrorRecord {
            kind: "Dropped".to_string(),
            message: "the caller dropped the stream before its end".to_string(),
            provider: None,
            fields: Map::new(),
        }
    }

    fn str_field(&self, k: &str) -> String {
        self.fields
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    fn u64_field(&self, k: &str) -> Option<u64> {
        self.fields.get(k).and_then(Value::as_u64)
    }

    fn duration_field(&self, k: &str) -> Duration {
        Duration::from_secs_f64(
            self.fields
                .get(k)
                .and_then(Value::as_f64)
                .unwrap_or(0.0)
                .max(0.0)
                / 1000.0,
        )
    }

    /// The error back, as it was (a kind this version cannot rebuild comes back as
    /// [`Error::Unsupported`] with the recorded message).
    pub fn to_error(&self) -> Error {
        let provider = || {
            Box::new(
                self.provider
                    .as_ref()
                    .map(ProviderRecord::details)
                    .unwrap_or_default(),
            )
        };
        match self.kind.as_str() {
            "RateLimited" => Error::RateLimited {
                attempts: self.u64_field("attempts").unwrap_or(1) as u32,
                waited: self.duration_field("waited_ms"),
                last: provider(),
            },
            "ProviderQuotaExhausted" => Error::ProviderQuotaExhausted(provider()),
            "Overloaded" => Error::Overloaded(provider()),
            "Auth" => Error::Auth(provider()),
            "BadRequest" => Error::BadRequest(provider()),
            "Provider" => Error::Provider(provider()),
            "ProviderReplyMalformed" => Error::ProviderReplyMalformed {
                backend: self.str_field("backend"),
                reason: self.str_field("reason"),
                attempts: self.u64_field("attempts").unwrap_or(1) as u32,
                body: self
                    .fields
                    .get("body")
                    .and_then(|b| serde_json::from_value::<RawBytes>(b.clone()).ok())
                    .and_then(|b| b.to_bytes().ok())
                    .unwrap_or_default(),
            },
            "ContextLengthExceeded" => Error::ContextLengthExceeded {
                prompt_tokens: self.u64_field("prompt_tokens"),
                max_tokens: self.u64_field("max_tokens"),
                limit: self.u64_field("limit"),
                message: self.str_field("message"),
                details: self.provider.as_ref().map(|p| Box::new(p.details())),
            },
            "Timeout" => Error::Timeout {
                backend: self.str_field("backend"),
                phase: match self.str_field("phase").as_str() {
                    "connect" => TimeoutPhase::Connect,
                    "first_byte" => TimeoutPhase::FirstByte,
                    "idle" => TimeoutPhase::Idle,
                    _ => TimeoutPhase::Total,
                },
                after: self.duration_field("after_ms"),
            },
            "Transport" => Error::Transport {
                backend: self.str_field("backend"),
                message: self.str_field("message"),
            },
            "MissingKey" => Error::MissingKey {
                backend: self.str_field("backend"),
                variable: self.str_field("variable"),
            },
            "Config" => Error::Config(self.str_field("message")),
            "Cancelled" if self.fields.contains_key("during") => Error::Cancelled {
                backend: self.str_field("backend"),
                during: self.str_field("during"),
            },
            "ReplyTooLarge" => match ReplyBound::from_setting(&self.str_field("bound")) {
                Some(bound) => Error::ReplyTooLarge {
                    backend: self.str_field("backend"),
                    bound,
                    limit: self.u64_field("limit").unwrap_or(0),
                    head: bytes::Bytes::new(),
                },
                None => Error::Unsupported(self.message.clone()),
            },
            "BudgetExceeded" if self.fields.contains_key("stream") => Error::BudgetStopped {
                max: self.str_field("max"),
                spent: self.str_field("spent"),
                stream: self.str_field("stream"),
            },
            "BudgetExceeded" => Error::BudgetExceeded {
                limit: self.str_field("limit"),
                max: self.str_field("max"),
                spent: self.str_field("spent"),
                in_flight: self.u64_field("in_flight").unwrap_or(0),
            },
            _ => Error::Unsupported(self.message.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn errors_come_back_the_same() {
        let details = ProviderDetails {
            backend: "mock".into(),
            status: 429,
            request_id: Some("req_1".into()),
            kind: Some("rate_limit_error".into()),
            code: None,
            message: "slow down".into(),
            headers: vec![("retry-after".into(), "2".into())],
            body: Bytes::from_static(b"{\"error\":{}}"),
        };
        let errors = vec![
            Error::RateLimited {
                attempts: 3,
                waited: Duration::from_millis(1500),
                last: Box::new(details.clone()),
            },
            Error::Overloaded(Box::new(details.clone())),
            Error::ProviderReplyMalformed {
                backend: "mock".into(),
                reason: "null".into(),
                attempts: 1,
                body: Bytes::from_static(&[0xff, b'n']),
            },
            Error::Timeout {
                backend: "mock".into(),
                phase: TimeoutPhase::Idle,
                after: Duration::from_millis(250),
            },
            Error::Transport {
                backend: "mock".into(),
                message: "the stream broke: reset".into(),
            },
            Error::ContextLengthExceeded {
                prompt_tokens: Some(9000),
                max_tokens: None,
                limit: Some(8192),
                message: "too long".into(),
                details: Some(Box::new(details)),
            },
            // Each bound, by its setting's name (the head is the record's raw, not here).
            Error::ReplyTooLarge {
                backend: "mock".into(),
                bound: ReplyBound::Reply,
                limit: 128 << 20,
                head: Bytes::new(),
            },
            Error::ReplyTooLarge {
                backend: "mock".into(),
                bound: ReplyBound::Stream,
                limit: 4096,
                head: Bytes::new(),
            },
            Error::ReplyTooLarge {
                backend: "mock".into(),
                bound: ReplyBound::Event,
                limit: 1000,
                head: Bytes::new(),
            },
        ];
        for e in errors {
            let record = ErrorRecord::new(&e);
            let json = serde_json::to_string(&record).unwrap();
            let back: ErrorRecord = serde_json::from_str(&json).unwrap();
            let rebuilt = back.to_error();
            assert_eq!(rebuilt.kind(), e.kind());
            assert_eq!(rebuilt.to_string(), e.to_string());
            assert_eq!(rebuilt.provider_details(), e.provider_details());
        }
    }
}

//! What one finished call's spans say, as plain data: the library fills it from the
//! call's record, the gateway from its meter, and `span.rs` turns it into OpenTelemetry
//! spans. Plain data so that every build (with or without the `otel` feature) compiles
//! the callers the same way.

use crate::record::{AttemptRecord, CallRecord};
use serde_json::{json, Value};
use std::time::{Duration, SystemTime};
use switchyard_wire::{Message, Part, Reply, Usage};

/// The GenAI operation (`gen_ai.operation.name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A chat call (`chat`): every dialect's generation.
    Chat,
    /// An embeddings call (`embeddings`).
    Embeddings,
}

impl Operation {
    /// The convention's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Chat => "chat",
            Operation::Embeddings => "embeddings",
        }
    }
}

/// One finished call, as its spans tell it.
#[derive(Debug, Clone)]
pub struct CallSpan {
    /// Chat or embeddings.
    pub operation: Operation,
    /// A call the gateway served (span kind SERVER) rather than one a program made
    /// (CLIENT).
    pub server: bool,
    /// The backend (`gen_ai.provider.name`).
    pub provider: String,
    /// The model id asked for (`gen_ai.request.model`).
    pub request_model: String,
    /// The reference that served (`<backend>/<model>`, a route's member).
    pub reference: String,
    /// The model the provider reported.
    pub response_model: Option<String>,
    /// The provider's response id.
    pub response_id: Option<String>,
    /// Why the reply stopped (the provider's own word when it gave one).
    pub finish_reasons: Vec<String>,
    /// Tokens, when known.
    pub usage: Option<Usage>,
    /// Cost at the backend's prices; `None` when unknown (never 0 for unknown).
    pub cost_usd: Option<f64>,
    /// The run's role that called.
    pub role: Option<String>,
    /// The gateway client key's name (never the key).
    pub client_key: Option<String>,
    /// Answered from the cache.
    pub cache_hit: bool,
    /// The route the call went through.
    pub route: Option<String>,
    /// Streamed.
    pub stream: bool,
    /// The HTTP status the gateway answered with.
    pub status: Option<u16>,
    /// The error kind and message, when the call failed.
    pub error: Option<(String, String)>,
    /// The dialect the client spoke (gateway) and the one spoken upstream.
    pub client_dialect: Option<String>,
    /// The dialect spoken upstream.
    pub upstream_dialect: Option<String>,
    /// When the call started and ended.
    pub start: SystemTime,
    /// When the call ended.
    pub end: SystemTime,
    /// From the start to the first byte of the reply.
    pub time_to_first_byte: Option<Duration>,
    /// Every attempt upstream.
    pub attempts: Vec<AttemptSpan>,
    /// The caller's span (a gateway request's `traceparent`).
    pub parent: Option<Parent>,
    /// The prompt as `gen_ai.input.messages` JSON, when the config asks for contents.
    pub input_messages: Option<String>,
    /// The reply as `gen_ai.output.messages` JSON, when the config asks for contents.
    pub output_messages: Option<String>,
}

/// One attempt upstream.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptSpan {
    /// 1 for the first try.
    pub number: u32,
    /// The retry loop's wait before it.
    pub wait_before: Duration,
    /// When it was sent.
    pub start: SystemTime,
    /// How long it took.
    pub duration: Duration,
    /// The provider's HTTP status on a refusal.
    pub status: Option<u16>,
    /// The error kind it ended with.
    pub error_kind: Option<String>,
    /// A route's member it went to.
    pub reference: Option<String>,
}

/// A W3C trace context: the span a call continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parent {
    /// The trace id (16 bytes, not all zero).
    pub trace_id: [u8; 16],
    /// The parent span's id (8 bytes, not all zero).
    pub span_id: [u8; 8],
    /// The `sampled` flag: an unsampled parent's calls are not exported.
    pub sampled: bool,
}

impl Parent {
    /// Reads a `traceparent` header (`00-<32 hex>-<16 hex>-<2 hex>`); `None` for anything
    /// else, as the W3C recommendation says (the request then starts a trace).
    pub fn from_traceparent(text: &str) -> Option<Parent> {
        let mut fields = text.trim().split('-');
        let version = fields.next()?;
        let trace = fields.next()?;
        let span = fields.next()?;
        let flags = fields.next()?;
        // Version 00 has exactly four fields; a later version may append more.
        if version.len() != 2 || version == "ff" || (version == "00" && fields.next().is_some()) {
            return None;
        }
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        let mut flag = [0u8; 1];
        hex(trace, &mut trace_id)?;
        hex(span, &mut span_id)?;
        hex(flags, &mut flag)?;
        hex(version, &mut [0u8; 1])?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Parent {
            trace_id,
            span_id,
            sampled: flag[0] & 1 == 1,
        })
    }
}

/// Lower-case hex of exactly `out.len()` bytes.
fn hex(text: &str, out: &mut [u8]) -> Option<()> {
    if text.len() != out.len() * 2 {
        return None;
    }
    for (i, b) in out.iter_mut().enumerate() {
        let pair = text.get(i * 2..i * 2 + 2)?;
        if pair.chars().any(|c| c.is_ascii_uppercase()) {
            return None;
        }
        *b = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(())
}

impl AttemptSpan {
    /// An attempt as the record keeps it (its start read back from the timestamp).
    pub fn from_record(a: &AttemptRecord) -> AttemptSpan {
        AttemptSpan {
            number: a.number,
            wait_before: duration_ms(a.wait_before_ms),
            start: parse_time(&a.started_at).unwrap_or_else(SystemTime::now),
            duration: duration_ms(a.duration_ms),
            status: a.status,
            error_kind: a.error_kind.clone(),
            reference: a.reference.clone(),
        }
    }
}

impl CallSpan {
    /// A library call's spans from its record; `contents` adds the prompt and reply.
    pub fn from_record(r: &CallRecord, contents: bool) -> CallSpan {
        let start = parse_time(&r.timings.started_at).unwrap_or_else(SystemTime::now);
        let reply = r.reply.as_ref();
        CallSpan {
            operation: match r.embedding {
                Some(_) => Operation::Embeddings,
                None => Operation::Chat,
            },
            server: false,
            provider: r.backend.clone(),
            request_model: r.model.clone(),
            reference: r.reference.clone(),
            response_model: reply.and_then(|r| r.model.clone()),
            response_id: reply.and_then(|r| r.id.clone()),
            finish_reasons: reply.map(finish_reason).into_iter().collect(),
            usage: r.usage,
            cost_usd: r.cost_usd,
            role: r.role.clone(),
            client_key: r.client_key.clone(),
            cache_hit: r.cache_hit.is_some(),
            route: r.route.clone(),
            stream: r.stream,
            status: None,
            error: r
                .error
                .as_ref()
                .map(|e| (e.kind.clone(), e.message.clone())),
            client_dialect: r.client_dialect.map(|d| d.to_string()),
            upstream_dialect: r.dialect.map(|d| d.to_string()),
            start,
            end: start + duration_ms(r.timings.duration_ms),
            time_to_first_byte: r.timings.first_byte_ms.map(duration_ms),
            attempts: r.attempts.iter().map(AttemptSpan::from_record).collect(),
            parent: None,
            input_messages: (contents && r.embedding.is_none())
                .then(|| input_messages(&r.request.messages)),
            output_messages: contents.then(|| reply.map(output_messages)).flatten(),
        }
    }
}

/// The finish reason as the provider wrote it, else the canonical one.
pub fn finish_reason(reply: &Reply) -> String {
    reply.finish_raw.clone().unwrap_or_else(|| {
        serde_json::to_value(reply.finish)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "other".into())
    })
}

/// `gen_ai.input.messages`: each message's role and parts, text as the convention's
/// `{type: text, content}`, other parts in Switchyard's canonical form without their
/// opaque provider state (signatures are no one's reading).
pub fn input_messages(messages: &[Message]) -> String {
    let list: Vec<Value> = messages
        .iter()
        .map(|m| json!({"role": m.role, "parts": parts(&m.content)}))
        .collect();
    Value::Array(list).to_string()
}

/// `gen_ai.output.messages`: the reply as one assistant message with its finish reason.
pub fn output_messages(reply: &Reply) -> String {
    json!([{
        "role": "assistant",
        "parts": parts(&reply.content),
        "finish_reason": finish_reason(reply),
    }])
    .to_string()
}

fn parts(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .map(|p| match p {
            Part::Text { text, .. } => json!({"type": "text", "content": text}),
            Part::Thinking(t) => json!({"type": "reasoning", "content": t.text}),
            other => {
                let mut v = serde_json::to_value(other).unwrap_or(Value::Null);
                if let Some(map) = v.as_object_mut() {
                    map.remove("state");
                }
                v
            }
        })
        .collect()
}

fn duration_ms(ms: f64) -> Duration {
    crate::seconds::from_secs(ms / 1000.0).unwrap_or_default()
}

fn parse_time(text: &str) -> Option<SystemTime> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| SystemTime::from(t.with_timezone(&chrono::Utc)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_read_as_the_w3c_says() {
        let p = Parent::from_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
            .unwrap();
        assert_eq!(p.trace_id[0], 0x0a);
        assert_eq!(p.span_id[7], 0x31);
        assert!(p.sampled);
        let unsampled =
            Parent::from_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
        assert!(!unsampled.unwrap().sampled);
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-xyz-b7ad6b7169203331-01",
        ] {
            assert_eq!(Parent::from_traceparent(bad), None, "{bad}");
        }
        // A later version may carry more fields.
        assert!(Parent::from_traceparent(
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-more"
        )
        .is_some());
    }

    #[test]
    fn contents_in_the_conventions_shape() {
        let m = vec![Message::text(switchyard_wire::Role::User, "hi")];
        assert_eq!(
            input_messages(&m),
            r#"[{"role":"user","parts":[{"type":"text","content":"hi"}]}]"#
        );
        let reply = Reply {
            content: vec![Part::text("hello")],
            ..Reply::default()
        };
        assert!(output_messages(&reply).contains(r#""finish_reason":"stop""#));
    }
}

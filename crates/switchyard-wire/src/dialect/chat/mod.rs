//! The `chat` dialect: OpenAI chat completions (`POST /v1/chat/completions`), also spoken
//! by DeepSeek, vLLM, SGLang, Ollama, llama.cpp, OpenRouter, Fireworks and most other
//! OpenAI-compatible servers.
//!
//! # Mapping
//!
//! - Roles: `system`, `developer` (kept as `developer`; the HTTP layer renames it for
//!   backends configured with `developer_role: system`), `user`, `assistant`, `tool`. The
//!   legacy `function` role decodes as a tool result whose call id is the function name.
//! - User content is a string when it is one text part, else an array of
//!   `{type:"text"}` / `{type:"image_url", image_url:{url}}` parts (inline images as
//!   `data:` URLs).
//! - Assistant history: `content` (string for one text part, array of text parts for
//!   several, `null` when there is none and tool calls are present), reasoning as
//!   `reasoning_content` (what DeepSeek expects back), `tool_calls`.
//! - Tool results: one `role:"tool"` message per result, with `tool_call_id`.
//! - Replies: `reasoning_content` (DeepSeek, older vLLM) or `reasoning` (newer vLLM,
//!   OpenRouter) becomes a thinking part placed *before* the text; then the text; then
//!   the tool calls.
//! - Usage: chat's convention is already the canonical one (`prompt_tokens` includes
//!   `prompt_tokens_details.cached_tokens`; `completion_tokens` includes
//!   `completion_tokens_details.reasoning_tokens`). DeepSeek's `prompt_cache_hit_tokens`
//!   is read when the OpenAI detail is absent.
//! - Streams: chunks end with `data: [DONE]`; tool-call fragments are matched by
//!   `index`; the usage-only final chunk (`choices: []`) and usage on the last choice
//!   chunk are both read. The decoder holds the finish back until `[DONE]` so that
//!   [`Event::Usage`](crate::Event::Usage) always precedes
//!   [`Event::Finish`](crate::Event::Finish).
//!
//! # What is lossy
//!
//! - A tool result's error flag has no chat field: the text is prefixed with `Error: `.
//!   Images in tool results cannot ride in a `tool` message: they are sent in one `user`
//!   message right after the run of tool messages. A result's tool name and kind are
//!   dropped.
//! - Custom (free-form) tools are declared as functions taking one string argument
//!   `input`; a custom call in history is sent as arguments `{"input": "<text>"}`. Replies
//!   decode them as ordinary function calls: turning them back into custom calls needs
//!   the request's tool list (the gateway's job).
//! - Namespaced tools (Codex MCP namespaces) are flattened to plain functions named
//!   `<namespace><name>` (Codex namespaces end in `__`, giving the familiar
//!   `mcp__server__tool`); calls and declarations decode without a namespace. Restoring
//!   it is the gateway's job.
//! - Thinking: only the text travels (`reasoning_content`); opaque state from any dialect
//!   is dropped, redacted thinking is dropped, several thinking parts are joined, and
//!   their position relative to text is lost (chat puts reasoning first).
//! - Reasoning: `effort` becomes `reasoning_effort`; a token budget and a summary mode
//!   have no chat field and are dropped.
//! - `max_tokens` is sent as `max_completion_tokens` (OpenAI's current name); both are
//!   read.
//! - Usage `cache_write` has no chat field and is dropped when encoding.
//! - Per-message `name` fields, image `detail`, and `refusal` text are dropped; audio and
//!   file content parts are refused with an error.
//! - Text state (Gemini signatures on text) has no chat carrier and is dropped; so is
//!   OpenRouter's `reasoning_details` (its encrypted reasoning) on decode.
//! - Images in system or developer messages are dropped (chat takes text there).
//! - Only the first choice is decoded (`n > 1` is not supported). A tool call without an
//!   id gets `call_<index>`.
//! - OpenAI's chat `custom` tools and calls (`{type:"custom", custom:{...}}`) are decoded
//!   as custom; they are encoded as functions (see above), which every server accepts.
//!
//! # Server side
//!
//! `decode_request` keeps every top-level field the hub does not model (`seed`, `user`,
//! `n`, `logit_bias`, `stream_options`, a `tool_choice` or `response_format` of a shape
//! the hub lacks…) as chat passthrough; re-encoding forwards them, except `stream` and
//! `stream_options`, which the encoder always decides. Replies and streams carry
//! reasoning as `reasoning_content`. The stream encoder writes the usage-only chunk
//! whenever a usage event arrives; a gateway whose client did not ask for
//! `stream_options.include_usage` (see the passthrough) should drop usage events.

mod plain_request;
mod reply;
mod request;
mod stream_decode;
mod stream_encode;

use crate::codec::*;
use crate::event::StreamError;
use crate::json::{obj_at, str_at, u64_at, Object};
use crate::reply::{FinishReason, Usage};
use crate::{Dialect, Reply, Request};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

pub use stream_decode::ChatStreamDecoder;
pub use stream_encode::ChatStreamEncoder;

/// The chat codec.
pub struct ChatCodec;

impl Codec for ChatCodec {
    fn dialect(&self) -> Dialect {
        Dialect::Chat
    }

    fn encode_request(
        &self,
        request: &Request,
        options: &EncodeOptions,
    ) -> Result<Map<String, Value>, EncodeError> {
        request::encode(request, options)
    }

    fn decode_reply(&self, body: &[u8]) -> Result<Reply, DecodeError> {
        reply::decode(body)
    }

    fn decode_usage(&self, usage: &Object) -> Usage {
        usage_from_chat_object(usage)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(ChatStreamDecoder::new())
    }

    fn decode_request(&self, body: &[u8]) -> Result<DecodedRequest, DecodeError> {
        request::decode(body)
    }

    fn encode_reply(&self, reply: &Reply, context: &ServerContext) -> Vec<u8> {
        reply::encode(reply, context)
    }

    fn stream_encoder(&self, context: &ServerContext) -> Box<dyn StreamEncoder> {
        Box::new(ChatStreamEncoder::new(context))
    }

    fn stream_error_event(&self, error: &StreamError, _response_id: Option<&str>) -> Vec<u8> {
        crate::sse::event_bytes(None, &error_to_chat(error).to_string())
    }
}

/// The normalised reason for one of chat's `finish_reason` strings.
fn finish_from_chat(raw: &str) -> FinishReason {
    match raw {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

/// The finish reason as decoded: chat's string normalised, except that a `stop` with tool
/// calls present (vLLM, Ollama and others say so) is a tool-call finish.
fn decoded_finish(raw: &str, has_tool_calls: bool) -> FinishReason {
    match finish_from_chat(raw) {
        FinishReason::Stop if has_tool_calls => FinishReason::ToolCalls,
        other => other,
    }
}

/// The `finish_reason` string to send: the provider's own string when it is a chat string
/// meaning the same, the raw string of an `Other` reason, else chat's name for the reason.
fn finish_to_chat(reason: FinishReason, raw: Option<&str>) -> String {
    if let Some(raw) = raw.filter(|raw| finish_from_chat(raw) == reason) {
        return raw.to_string();
    }
    match reason {
        FinishReason::Stop | FinishReason::Other => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::ContentFilter => "content_filter",
    }
    .to_string()
}

/// Canonical usage from a chat `usage` object (`None` when it is absent or `null`).
fn usage_from_chat(usage: Option<&Value>) -> Option<Usage> {
    Some(usage_from_chat_object(usage?.as_object()?))
}

fn usage_from_chat_object(usage: &Object) -> Usage {
    let cached = obj_at(usage, "prompt_tokens_details")
        .and_then(|d| u64_at(d, "cached_tokens"))
        .or_else(|| u64_at(usage, "prompt_cache_hit_tokens"))
        .unwrap_or(0);
    let reasoning = obj_at(usage, "completion_tokens_details")
        .and_then(|d| u64_at(d, "reasoning_tokens"))
        .unwrap_or(0);
    Usage {
        input: u64_at(usage, "prompt_tokens").unwrap_or(0),
        cached_input: cached,
        cache_write: 0,
        output: u64_at(usage, "completion_tokens").unwrap_or(0),
        reasoning,
    }
}

/// A chat `usage` object, parsed as typed fields (for the plain replies and chunks of [`reply`] and [`stream_decode`]), read as [`usage_from_chat_object`] reads it.
#[derive(Deserialize)]
pub(super) struct PlainUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PlainDetails>,
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens_details: Option<PlainDetails>,
}

/// The top level of a chat completion (`C`: its choices) or of a stream chunk (`C`: a
/// chunk's choices), parsed as borrowed typed fields for the plain replies of [`reply`]
/// and chunks of [`stream_decode`]; `error` is only looked at, to send a body that has
/// one to the lenient reader.
#[derive(Deserialize)]
pub(super) struct PlainTop<'a, C> {
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) model: Option<Cow<'a, str>>,
    // Named, not bare `default`: serde would then ask `C: Default` of every choice type.
    #[serde(default = "Option::default")]
    pub(super) choices: Option<Vec<C>>,
    #[serde(default)]
    pub(super) usage: Option<PlainUsage>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

impl<C> PlainTop<'_, C> {
    /// Whether it carries an error (a `null` is none).
    pub(super) fn has_error(&self) -> bool {
        self.error.is_some_and(|e| e.get() != "null")
    }
}

/// The texts of a chat message or stream delta, parsed as borrowed typed fields (for the
/// plain replies of [`reply`] and chunks of [`stream_decode`]); `tool_calls` is only
/// looked at, to send a message that has them to the lenient reader.
#[derive(Deserialize)]
pub(super) struct PlainTexts<'a> {
    #[serde(borrow, default)]
    pub(super) content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Option<&'a RawValue>,
}

impl PlainTexts<'_> {
    /// The reasoning text, as the lenient reader takes it: the first non-empty of
    /// `reasoning_content` (DeepSeek) and `reasoning` (OpenRouter, vLLM).
    pub(super) fn reasoning(&self) -> Option<&str> {
        [&self.reasoning_content, &self.reasoning]
            .into_iter()
            .find_map(|t| t.as_deref().filter(|t| !t.is_empty()))
    }

    /// Whether it carries tool calls (a `null` is none).
    pub(super) fn has_tool_calls(&self) -> bool {
        self.tool_calls.is_some_and(|t| t.get() != "null")
    }
}

#[derive(Deserialize)]
pub(super) struct PlainDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// The canonical usage of a chat `usage` object given as raw JSON, read as typed fields
/// (as [`usage_from_chat_object`] reads them); `None` when it does not fit them, for the
/// caller to read it as a map.
pub(crate) fn typed_usage(raw: &str) -> Option<Usage> {
    serde_json::from_str::<PlainUsage>(raw)
        .ok()
        .map(|u| u.canonical())
}

impl PlainUsage {
    pub(super) fn canonical(&self) -> Usage {
        Usage {
            input: self.prompt_tokens.unwrap_or(0),
            cached_input: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
                .or(self.prompt_cache_hit_tokens)
                .unwrap_or(0),
            cache_write: 0,
            output: self.completion_tokens.unwrap_or(0),
            reasoning: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

/// A chat `usage` object for canonical usage (`cache_write` has no chat field), in
/// OpenAI's order of keys.
#[derive(Serialize)]
pub(super) struct ChatUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: CachedTokens,
    completion_tokens_details: ReasoningTokens,
}

#[derive(Serialize)]
struct CachedTokens {
    cached_tokens: u64,
}

#[derive(Serialize)]
struct ReasoningTokens {
    reasoning_tokens: u64,
}

fn usage_to_chat(usage: &Usage) -> ChatUsage {
    ChatUsage {
        prompt_tokens: usage.input,
        completion_tokens: usage.output,
        total_tokens: usage.total(),
        prompt_tokens_details: CachedTokens {
            cached_tokens: usage.cached_input,
        },
        completion_tokens_details: ReasoningTokens {
            reasoning_tokens: usage.reasoning,
        },
    }
}

/// The error carried by an `error` value (object, or a bare string some servers send).
pub(crate) fn error_from_chat(error: &Value) -> StreamError {
    match error {
        Value::Object(e) => StreamError {
            kind: str_at(e, "type").map(str::to_string),
            code: scalar_string(e.get("code")),
            message: str_at(e, "message")
                .map(str::to_string)
                .unwrap_or_else(|| Value::Object(e.clone()).to_string()),
            status: u64_at(e, "status")
                .or_else(|| u64_at(e, "code"))
                .and_then(|s| u16::try_from(s).ok())
                .filter(|s| (100..600).contains(s)),
        },
        Value::String(s) => StreamError::message(s.clone()),
        other => StreamError::message(other.to_string()),
    }
}

/// An OpenAI `{"error": {...}}` body for a stream error.
fn error_to_chat(error: &StreamError) -> Value {
    json!({
        "error": {
            "message": error.message,
            "type": error.kind,
            "param": Value::Null,
            "code": error.code,
        }
    })
}

/// A string or number as a string (error codes are either, depending on the server).
fn scalar_string(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The name a tool or call goes by on the chat wire: namespaced tools are flattened.
fn wire_tool_name(name: &str, namespace: Option<&str>) -> String {
    crate::part::flat_name(name, namespace)
}

/// The arguments of a custom (free-form) call as chat function arguments.
fn custom_arguments(input: &str) -> String {
    json!({ "input": input }).to_string()
}

/// The reasoning text of a `message` or `delta`: `reasoning_content` (DeepSeek, older
/// vLLM) or else `reasoning` (newer vLLM, OpenRouter); servers sending both send the same.
fn reasoning_text(obj: &Object) -> Option<&str> {
    str_at(obj, "reasoning_content")
        .filter(|s| !s.is_empty())
        .or_else(|| str_at(obj, "reasoning").filter(|s| !s.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_typed_usage_reads_as_the_map_reads_or_not_at_all() {
        for raw in [
            r#"{"prompt_tokens":12,"completion_tokens":13,"total_tokens":25}"#,
            r#"{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}"#,
            r#"{"prompt_tokens":12,"prompt_tokens_details":{"cached_tokens":null},"prompt_cache_hit_tokens":5}"#,
            r#"{"prompt_tokens":12,"prompt_tokens_details":null,"completion_tokens_details":{}}"#,
            r#"{"prompt_tokens":null,"completion_tokens":1}"#,
            r#"{"prompt_tokens":"12","completion_tokens":1}"#,
            r#"{"prompt_tokens":12.5,"completion_tokens":-1}"#,
            r#"{"prompt_tokens":1,"prompt_tokens":2}"#,
            r#"{"prompt_tokens_details":"none","completion_tokens":4}"#,
            r#"{}"#,
        ] {
            let map: Object = serde_json::from_str(raw).unwrap();
            if let Some(typed) = typed_usage(raw) {
                assert_eq!(typed, usage_from_chat_object(&map), "{raw}");
            }
        }
        assert!(typed_usage(r#"{"prompt_tokens":"12"}"#).is_none());
    }

    #[test]
    fn finish_strings_round_trip() {
        for raw in [
            "stop",
            "length",
            "tool_calls",
            "function_call",
            "content_filter",
        ] {
            let reason = finish_from_chat(raw);
            assert_eq!(finish_to_chat(reason, Some(raw)), raw);
        }
        assert_eq!(
            finish_to_chat(FinishReason::Other, Some("pause_turn")),
            "pause_turn"
        );
        assert_eq!(finish_to_chat(FinishReason::Other, None), "stop");
        assert_eq!(
            finish_to_chat(FinishReason::ToolCalls, Some("tool_use")),
            "tool_calls"
        );
        assert_eq!(
            finish_to_chat(FinishReason::ToolCalls, Some("stop")),
            "tool_calls"
        );
        assert_eq!(decoded_finish("stop", true), FinishReason::ToolCalls);
        assert_eq!(decoded_finish("length", true), FinishReason::Length);
    }

    #[test]
    fn errors_read_objects_strings_and_numeric_codes() {
        let e = error_from_chat(&json!({"message": "m", "type": "t", "code": 429}));
        assert_eq!(e.code.as_deref(), Some("429"));
        assert_eq!(e.status, Some(429));
        assert_eq!(error_from_chat(&json!("boom")).message, "boom");
    }
}

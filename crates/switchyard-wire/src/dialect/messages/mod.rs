//! The `messages` dialect: Anthropic Messages (`POST /v1/messages`), as spoken by the
//! Anthropic API, Claude Code and the official SDKs, and by the Messages endpoints of
//! vLLM, SGLang, Ollama and llama.cpp.
//!
//! One file per job: [`request`] (encode for a backend, decode a client's body),
//! `reply` (the non-streamed message object, both ways), `stream_decode` and
//! `stream_encode` (the SSE grammar, both ways), `blocks` (content blocks ↔ parts),
//! `shape` (what the hub cannot hold, kept for same-dialect re-encoding) and `common`
//! (usage, stop reasons, errors).
//!
//! # Mapping
//! - **System and developer messages** become the top-level `system`, wherever they
//!   stand in the conversation and in order: a string for one plain text, text blocks
//!   otherwise. A client's `system` decodes to one system message in front (blocks
//!   become its text parts). Their position among the turns is lost; `developer`
//!   decodes back as `system`.
//! - **Tool results**: canonical tool messages become user messages of `tool_result`
//!   blocks; consecutive ones share one message, and a user message right after them
//!   joins it (results first). A client's user message decodes the other way: each
//!   leading `tool_result` becomes one tool message, the rest one user message, so the
//!   body re-encodes the same. (Two consecutive user messages of which the first holds
//!   only results re-encode as one; Anthropic merges consecutive user turns anyway.)
//! - **Tool calls**: `input` is the arguments parsed; empty arguments are `{}`; text that
//!   is not a JSON object (invalid or truncated JSON, an array) is sent as
//!   `{"_raw_arguments": "<text>"}` so the call stays in the transcript. Decoded `input`
//!   is written back as compact JSON. Ids are kept as given. Custom (free-form) tools and
//!   namespaces have no Messages form: they are sent as plain function tools, a
//!   namespaced tool or call named `<namespace><name>` as chat names it.
//! - **Thinking**: only thinking parts whose state is tagged `messages` go upstream
//!   (`thinking{thinking,signature}`, `redacted_thinking{data}`); unsigned thinking and
//!   thinking of other dialects is dropped from requests, always. Replies and streams to a
//!   client send unsigned thinking with `signature: ""` (so it is shown), and an empty
//!   signature decodes as no state.
//! - **Reasoning**: a budget is `thinking:{type:"enabled",budget_tokens}`; effort
//!   `none` is `{type:"disabled"}`; reasoning without effort or budget is
//!   `{type:"adaptive"}`, and so is an effort the client itself sent in
//!   `output_config.effort`; any other effort is `enabled` with the budget of
//!   [`request::effort_budget`] (minimal 1024, low 2048, medium 8192, high 16384, xhigh
//!   and max 24576), clamped below `max_tokens`. `reasoning.summary` has no Messages
//!   form and is dropped.
//! - **`max_tokens`** is required: the request's, else [`request::DEFAULT_MAX_TOKENS`]
//!   (4096), plus the thinking budget when there is one.
//! - **Tool choice**: auto, none, any (required), tool (named);
//!   `parallel_tool_calls: false` is `disable_parallel_tool_use: true` (with
//!   `{type:"auto"}` when no choice was set).
//! - **Response format**: a JSON schema is `output_config.format`
//!   `{type:"json_schema",schema}` (its name and strictness are lost: decoded schemas are
//!   named [`request::SCHEMA_NAME`]); a bare JSON object becomes the schema
//!   `{"type":"object"}`.
//! - **Usage**: Anthropic's `input_tokens`, `cache_read_input_tokens` and
//!   `cache_creation_input_tokens` are disjoint; canonical `input` is their sum,
//!   `cached_input` the cache read, `cache_write` the cache creation, `output` the
//!   `output_tokens` (thinking included). Anthropic reports no reasoning count:
//!   `reasoning` decodes as 0 and is not sent.
//! - **Stop reasons**: `end_turn`/`stop_sequence` → stop, `max_tokens` → length,
//!   `tool_use` → tool calls, `refusal` → content filter, `pause_turn`,
//!   `model_context_window_exceeded` and unknown strings → other; the string is kept in
//!   `finish_raw` and sent back when it reads as the same reason. The matched
//!   `stop_sequence` is not kept (always sent as `null`).
//!
//! # Passthrough (server side)
//! Top-level fields the hub does not model (`metadata`, `top_k`, `context_management`,
//! `output_config` other than its `format`, `service_tier`, `mcp_servers`, `container`…)
//! go into `request.passthrough`, tagged `messages`, and are re-sent by this codec only.
//! Per-block fields (`cache_control` on system blocks, message blocks and tools,
//! `citations`…), block types the hub does not model (`document`, `search_result`,
//! Files-API images, server tools and their blocks) and the string-or-array choice are
//! kept in a shape record under [`shape::SHAPE_KEY`] (see that module): a Claude Code
//! request, billing-header system block and cache markers included, re-encodes to the
//! same body. `anthropic-beta` and the other headers are the transport's concern.
//!
//! # Lossy
//! Text-part state (Gemini), tool-call state, thinking ids (Responses) and
//! `reasoning.summary` are dropped; `citations` and server-tool blocks in *replies* are
//! dropped (the caller has nothing to run for them); usage `reasoning` is not carried;
//! `stream: false` is not written (absent means the same).

mod blocks;
mod common;
mod reply;
pub mod request;
pub mod shape;
mod stream_decode;
mod stream_encode;

pub use common::RAW_ARGUMENTS_KEY;

use crate::codec::{
    Codec, DecodeError, DecodedRequest, EncodeError, EncodeOptions, ServerContext, StreamDecoder,
    StreamEncoder,
};
use crate::{Dialect, Reply, Request};
use serde_json::{Map, Value};

/// The Anthropic Messages codec.
pub struct MessagesCodec;

impl Codec for MessagesCodec {
    fn dialect(&self) -> Dialect {
        Dialect::Messages
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

    fn decode_usage(&self, usage: &Map<String, Value>) -> crate::Usage {
        let mut wire = common::WireUsage::default();
        wire.merge(usage);
        wire.canonical()
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::<stream_decode::MessagesStreamDecoder>::default()
    }

    fn decode_request(&self, body: &[u8]) -> Result<DecodedRequest, DecodeError> {
        request::decode(body)
    }

    fn encode_reply(&self, reply: &Reply, context: &ServerContext) -> Vec<u8> {
        reply::encode(reply, context)
    }

    fn stream_encoder(&self, context: &ServerContext) -> Box<dyn StreamEncoder> {
        Box::new(stream_encode::MessagesStreamEncoder::new(context))
    }

    fn stream_error_event(
        &self,
        error: &crate::StreamError,
        _response_id: Option<&str>,
    ) -> Vec<u8> {
        crate::sse::event_bytes(Some("error"), &common::error_to_wire(error).to_string())
    }
}

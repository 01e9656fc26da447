//! The `responses` dialect: OpenAI Responses (`POST /v1/responses`), the API Codex speaks.
//!
//! A request is `instructions` plus a flat list of `input` *items* (messages, function
//! calls, their outputs, reasoning); a reply is a list of `output` items; a stream is a
//! sequence of named SSE events (`response.created` … `response.completed`) each with a
//! `sequence_number`, ended by a terminal `response.completed`, `response.incomplete` or
//! `response.failed` (there is no `[DONE]`).
//!
//! Files: [`request`] (both directions of the request body), [`reply`] (the non-streamed
//! reply body, both directions), [`stream_decode`] and [`stream_encode`] (the SSE
//! grammar), [`items`] (the item ⇄ part conversions the others share).
//!
//! # Mapping
//!
//! - **System and developer.** The first message, when it is a system message of exactly
//!   one text part, becomes `instructions`; every other system or developer message
//!   becomes an `input` message item with role `system` or `developer` (the Responses API
//!   has both roles, so `developer` stays `developer`). Decoding puts `instructions` back
//!   as a leading system message, so both directions round-trip.
//! - **Messages ⇄ items.** The text and image parts of a message become one `message`
//!   item (`input_text`/`input_image`, or `output_text` for the assistant); each tool
//!   call, tool result and thinking part becomes its own item, in order. Decoding merges
//!   consecutive assistant-side items (assistant `message`, `reasoning`, `function_call`,
//!   `custom_tool_call`) into one assistant message, and consecutive tool outputs into one
//!   [`Role::Tool`](crate::Role::Tool) message. So two adjacent assistant messages (or
//!   two adjacent tool messages) come back as one; tool results inside a user message come
//!   back as a tool message; a tool message's text parts are sent as a user message.
//! - **Tool results.** `function_call_output.output` is a string when the result is one
//!   text part, else an array of `input_text`/`input_image` parts. The wire has no error
//!   flag and no tool name: `is_error` and `name` are dropped.
//! - **Reasoning.** A `reasoning` item's summary parts are joined with a blank line
//!   (`"\n\n"`) into [`Thinking::text`](crate::Thinking) (its `content` of
//!   `reasoning_text` parts is used when there is no summary); `encrypted_content` is the
//!   state, tagged `responses`; `id` is [`Thinking::id`](crate::Thinking). On encode a
//!   thinking part is sent when it has Responses state or an id (a reference to reasoning
//!   the server stored); one with another dialect's state, or no state and no id, is
//!   dropped, because the API rejects reasoning items it did not produce. Re-encoded
//!   summaries are one `summary_text` part. In replies, the item id is kept only beside
//!   encrypted content (a stream can only carry the id with the state, and stream and
//!   non-stream decoding must agree), and a reasoning item with neither text nor
//!   encrypted content is skipped.
//! - **Tools.** `function` and `custom` tools map to [`Tool`](crate::Tool) (a custom tool's
//!   `format` is kept in `parameters`). A `namespace` tool is flattened: each member keeps
//!   its own name and carries `namespace`; on encode, members of one namespace are grouped
//!   back into one `namespace` tool at the place of the first. The namespace's own fields
//!   (its description) and every tool type the hub does not model (`web_search`,
//!   `local_shell`, `image_generation`…) are kept in the passthrough `tools` array and
//!   re-emitted after the modelled tools (so their position among tools is not kept).
//!   Calls keep their `namespace`.
//! - **Fields the hub lacks** (`prompt_cache_key`, `store`, `include`, `service_tier`,
//!   `client_metadata`, `previous_response_id`, `metadata`, `text.verbosity`, an unknown
//!   `tool_choice` shape…) go to the passthrough and are re-emitted when encoding
//!   Responses again. When reasoning is set, the encoder sends `store: false` and
//!   `include: ["reasoning.encrypted_content"]` (unless the passthrough says otherwise) so
//!   the reasoning comes back as state; decoding drops exactly those implied values again.
//! - **Usage.** Responses' convention is the canonical one (`input_tokens` includes
//!   `cached_tokens`, `output_tokens` includes `reasoning_tokens`): copied as is. There is
//!   no cache-write count: `cache_write` is dropped on encode and 0 on decode.
//! - **Finish.** `completed` → [`Stop`](crate::FinishReason::Stop), or
//!   [`ToolCalls`](crate::FinishReason::ToolCalls) when the reply calls tools;
//!   `incomplete` with `max_output_tokens` → `Length`, with `content_filter` →
//!   `ContentFilter`, anything else → `Other`. `finish_raw` is the incomplete reason, or
//!   the status. Encoding maps `Other` to `completed`.
//!
//! # Lossy or left out
//!
//! - `stop` sequences: the Responses API has none; dropped on encode.
//! - A thinking budget in tokens: mapped to an effort (≤ 2048 `low`, ≤ 16384 `medium`,
//!   else `high`) when no effort is given; decoding gives the effort.
//! - Input items the hub does not model (`local_shell_call`, `web_search_call`,
//!   `tool_search_call`, compaction items, `item_reference`…) are dropped on decode, as
//!   are `input_file` parts, an image's `detail`, item `id`s and `status` of messages and
//!   function calls, and text annotations/logprobs. A `refusal` part is read as text.
//! - Opaque state of other dialects (Anthropic signatures, Gemini thought signatures on
//!   text and calls) is dropped on encode.
//! - Server side: item ids the reply does not carry (`msg_…`, `fc_…`) are synthesised from
//!   the response id and the item's position. In a stream, a reasoning item's real id is
//!   known only at its end (it rides with the state), so `output_item.added` and the
//!   deltas use a synthesised id and `output_item.done` the real one.

pub mod items;
pub mod reply;
pub mod request;
pub mod stream_decode;
pub mod stream_encode;

use crate::codec::{
    Codec, DecodeError, DecodedRequest, EncodeError, EncodeOptions, ServerContext, StreamDecoder,
    StreamEncoder,
};
use crate::{Dialect, Reply, Request};
use serde_json::{Map, Value};

/// The responses codec.
pub struct ResponsesCodec;

impl Codec for ResponsesCodec {
    fn dialect(&self) -> Dialect {
        Dialect::Responses
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
        items::usage_from(usage)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(stream_decode::ResponsesStreamDecoder::new())
    }

    fn decode_request(&self, body: &[u8]) -> Result<DecodedRequest, DecodeError> {
        request::decode(body)
    }

    fn encode_reply(&self, reply: &Reply, context: &ServerContext) -> Vec<u8> {
        reply::encode(reply, context)
    }

    fn stream_encoder(&self, context: &ServerContext) -> Box<dyn StreamEncoder> {
        Box::new(stream_encode::ResponsesStreamEncoder::new(context))
    }

    fn stream_error_event(&self, error: &crate::StreamError, response_id: Option<&str>) -> Vec<u8> {
        stream_encode::failed_event(error, response_id)
    }
}

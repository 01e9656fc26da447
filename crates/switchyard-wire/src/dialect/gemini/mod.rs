//! The `gemini` dialect: Google's `generateContent` and
//! `streamGenerateContent?alt=sse` (Gemini Developer API and Vertex AI). The model is in
//! the URL (`…/models/{model}:generateContent`), never in the body.
//!
//! # Mapping
//!
//! - **System**: `system` and `developer` messages (Gemini has no developer role) become
//!   the parts of `systemInstruction`, in order, wherever they sit in the conversation.
//! - **Roles**: `user` → `user`, `assistant` → `model`; tool results (`tool` messages)
//!   are `functionResponse` parts of a `user` content, consecutive tool messages sharing
//!   one content (the shape Gemini expects for parallel calls). Decoding, a `user`
//!   content made only of function responses is a `tool` message.
//! - **Parts**: `text`; images as `inlineData{mimeType,data}` (base64) or
//!   `fileData{mimeType?,fileUri}` (URLs; the MIME type guessed from a known extension);
//!   calls as `functionCall{name,args}` with the arguments parsed into an object (empty
//!   arguments give `{}`; a custom free-form call gives `{"input": text}`); results as
//!   `functionResponse{name,response}`.
//! - **Tool results**: the name is the result's own, else the name of the earlier call
//!   with the result's id. A text that is a JSON object is sent as the `response` object
//!   itself; any other text as `{content: text}`; an error as `{error: text-or-object}`.
//!   Decoding reverses this (`{content:"…"}` alone and `{error:…}` alone read back as
//!   text; any other object as its JSON text), and an object that would read back
//!   differently is wrapped as text, so the text round-trips exactly. Images in a result
//!   ride in `functionResponse.parts` (Gemini 3's multimodal function responses).
//! - **Opaque state**: a `thoughtSignature` may sit on any part. On a `functionCall` it
//!   becomes the call's `state`, on a `thought:true` part the thinking's `state`, on a text
//!   part the text's `state`; all tagged `gemini`. Encoding puts it back on the same kind
//!   of part. State from other dialects is dropped; thinking is sent back only when it
//!   has a Gemini signature (`{text, thought:true, thoughtSignature}`): other dialects'
//!   reasoning and unsigned thought summaries mean nothing to Gemini.
//! - **Call ids**: Gemini calls have no ids. Decoding synthesises stable ones with
//!   [`synthetic_call_id`] from the call's position, name and arguments (an `id` on the
//!   wire, as the Live API sends, is kept instead). Identical replies give identical ids,
//!   and a stream gives the ids of its non-streamed twin. In a decoded request each
//!   `functionResponse` takes the id of the earliest unanswered call of the same name.
//!   Encoding never sends ids: Gemini pairs results with calls by name and order.
//! - **Tools**: one `{functionDeclarations:[{name, description, parametersJsonSchema}]}`
//!   entry. `parametersJsonSchema` takes a full JSON schema (what OpenAI and Anthropic
//!   clients send) where `parameters` accepts only Gemini's OpenAPI subset and rejects
//!   keywords such as `additionalProperties`. Decoding reads either; `parameters` types
//!   (`OBJECT`, `STRING`…) are lower-cased into JSON schema. Tool choice:
//!   `toolConfig.functionCallingConfig.mode` `AUTO` / `NONE` / `ANY`, a named tool as
//!   `ANY` with `allowedFunctionNames: [name]`.
//! - **Generation config**: `maxOutputTokens`, `temperature`, `topP`, `stopSequences`;
//!   a response format as `responseMimeType: application/json` (+ `responseJsonSchema`,
//!   a full JSON schema; `responseSchema` is read too); reasoning as
//!   `thinkingConfig{thinkingBudget | thinkingLevel, includeThoughts: true}`: a budget
//!   wins over an effort, effort `none` is `thinkingBudget: 0`, `xhigh`/`max` is
//!   `high`, other efforts are sent as the level. Gemini 2.x models take no level: for
//!   a `gemini-2…` model id an effort is a budget (`minimal` 512, `low` 1,024, `medium`
//!   8,192, `high`/`xhigh`/`max` 24,576, others `-1`, the model's choice).
//! - **Passthrough**: every other top-level field (`safetySettings`, `cachedContent`,
//!   `labels`…), the unknown keys of `generationConfig` (`topK`, `seed`,
//!   `candidateCount`, `responseModalities`, a `thinkingBudget` of `-1`…), of `toolConfig`
//!   and of `systemInstruction`, and non-function tools (`googleSearch`, `codeExecution`…)
//!   are kept; encoding merges them back key by key (hub fields win) and appends the
//!   tools after the declarations.
//! - **Replies**: `candidates[0].content.parts` in order. Consecutive text parts (and
//!   consecutive thought parts) fold into one canonical part until a part carrying a
//!   `thoughtSignature` closes it; this is what a stream's chunks must do, so both give
//!   the same reply. `finishReason`: `STOP` → stop (tool calls when the reply has calls),
//!   `MAX_TOKENS` → length, `SAFETY`/`RECITATION`/`BLOCKLIST`/`PROHIBITED_CONTENT`/`SPII`
//!   and the image filters → content filter, anything else (`MALFORMED_FUNCTION_CALL`,
//!   `OTHER`…) → other; the string is kept in `finish_raw`. A blocked prompt (no
//!   candidates, `promptFeedback.blockReason`) is an empty reply with a content-filter
//!   finish whose raw string is the block reason. `modelVersion` → model, `responseId` →
//!   id. An `{"error":{code,message,status}}` body is a provider error whose `kind` is
//!   the status (`RESOURCE_EXHAUSTED`) and `status` the code.
//! - **Usage**: `input` = `promptTokenCount` (cached tokens already inside) +
//!   `toolUsePromptTokenCount` (results of Gemini's own tool use, billed as prompt);
//!   `cached_input` = `cachedContentTokenCount`; `output` = `candidatesTokenCount` +
//!   `thoughtsTokenCount`; `reasoning` = `thoughtsTokenCount`.
//! - **Streams**: each SSE `data:` is a whole response chunk; text arrives in pieces,
//!   calls whole (start, one arguments delta, end); `usageMetadata` is cumulative and
//!   repeated, and a usage event is emitted when it changes; the chunk with a
//!   `finishReason` ends the reply. There is no `[DONE]` (one is tolerated): a stream
//!   that ends without a finish reason is reported as cut off. An error object chunk is an
//!   error event. The encoder writes one part per chunk, the signature joined to the last
//!   chunk of its part, the finish reason and usage on the last chunk.
//! - **Requests decoded by the server**: the model and the streaming choice are in the
//!   URL, so [`DecodedRequest`]'s `model` is `None` and `stream` is `false`; the
//!   gateway's route sets them.
//!
//! # What is lossy
//!
//! - Developer messages come back as system messages; system messages are hoisted to the
//!   front (one message when decoded).
//! - Unsigned thinking and other dialects' thinking are not sent; text-part signatures
//!   from other dialects are dropped.
//! - Tool-call ids are not sent; custom tools are declared as functions taking one
//!   string `input` (calls decode as ordinary function calls); a namespaced tool or call
//!   is named `<namespace><name>`, as chat names it; `strict` and
//!   `parallel_tool_calls` have no Gemini field. A response schema's name and `strict`
//!   flag are dropped (decoded schemas are named [`RESPONSE_SCHEMA_NAME`]); the
//!   reasoning `summary` is dropped; a tool result's text parts are joined and its
//!   images follow the text.
//! - A `fileData` MIME type that cannot be guessed from the URL is lost; parts the hub
//!   cannot hold (`executableCode`, `codeExecutionResult`, `videoMetadata`…) are skipped;
//!   `functionDeclarations[].response`/`behavior` are dropped.
//! - `toolUsePromptTokenCount` is folded into input and written back inside
//!   `promptTokenCount`; a cache-write count has no Gemini field.
//! - Images in a streamed reply are dropped (the stream events have no image event).
//! - Only the first candidate is read; `safetyRatings`, `citationMetadata`,
//!   `groundingMetadata` and error `details` (such as `RetryInfo.retryDelay`) stay in
//!   the raw bytes only.

mod field_names;
mod parts;
mod reply;
mod request;
mod stream_decode;
mod stream_encode;

pub use parts::synthetic_call_id;
pub(crate) use reply::provider_error;
pub use request::RESPONSE_SCHEMA_NAME;

use crate::codec::*;
use crate::{Dialect, Reply, Request};
use serde_json::{Map, Value};

/// The gemini codec.
pub struct GeminiCodec;

impl Codec for GeminiCodec {
    fn dialect(&self) -> Dialect {
        Dialect::Gemini
    }

    fn encode_request(
        &self,
        request: &Request,
        options: &EncodeOptions,
    ) -> Result<Map<String, Value>, EncodeError> {
        // The model and `options.stream` choose the URL; the model also chooses how an
        // effort is written (a level, or a budget for Gemini 2.x).
        request::encode(request, options.model)
    }

    fn decode_reply(&self, body: &[u8]) -> Result<Reply, DecodeError> {
        reply::decode(body)
    }

    fn decode_usage(&self, usage: &Map<String, Value>) -> crate::Usage {
        reply::usage_from_metadata(usage)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::<stream_decode::Decoder>::default()
    }

    fn decode_request(&self, body: &[u8]) -> Result<DecodedRequest, DecodeError> {
        request::decode(body)
    }

    fn encode_reply(&self, reply: &Reply, context: &ServerContext) -> Vec<u8> {
        reply::encode(reply, context)
    }

    fn stream_encoder(&self, context: &ServerContext) -> Box<dyn StreamEncoder> {
        Box::new(stream_encode::Encoder::new(context))
    }

    fn stream_error_event(
        &self,
        error: &crate::StreamError,
        _response_id: Option<&str>,
    ) -> Vec<u8> {
        crate::sse::event_bytes(None, &reply::error_object(error).to_string())
    }
}

//! The codec interface every dialect implements (the dispatcher from a dialect to its
//! codec is in `dialect/mod.rs`, so the dialects import this file and nothing here imports
//! them).
//!
//! A codec is pure: it turns canonical values into bytes or JSON and back, and does no
//! I/O. The client side (encode a request, decode a reply or stream) is what backends
//! use; the server side (decode a request, encode a reply or stream) is what the gateway
//! and the mock provider use.

use crate::event::{Event, StreamError};
use crate::reply::{Reply, Usage};
use crate::request::Request;
use crate::sse::{SseEvent, SseParser};
use crate::Dialect;
use serde_json::{Map, Value};
use std::fmt;

/// What encoding a request needs besides the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeOptions<'a> {
    /// The model id as the provider knows it (Gemini carries it in the URL, not the body).
    pub model: &'a str,
    /// Whether to ask for a stream.
    pub stream: bool,
}

/// What a server-side encoder needs besides the reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerContext {
    /// Unix seconds for fields such as chat's `created`.
    pub created: u64,
    /// The response id to use when the reply has none.
    pub fallback_id: String,
}

/// A request decoded by the server side.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedRequest {
    /// The model the client named (absent for Gemini, whose model is in the URL).
    pub model: Option<String>,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// The request.
    pub request: Request,
}

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes are not what the dialect says they must be (not JSON, `null`, a
    /// required field missing or of the wrong type). The message says what and where.
    Malformed(String),
    /// The body is the provider's error object, not a reply.
    Provider(StreamError),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Malformed(m) => write!(f, "malformed: {m}"),
            DecodeError::Provider(e) => write!(f, "provider error: {}", e.message),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A request the dialect cannot express.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError(pub String);

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EncodeError {}

/// One dialect's two-way codec.
pub trait Codec: Send + Sync {
    /// The dialect.
    fn dialect(&self) -> Dialect;

    /// Client side: the request body to send.
    fn encode_request(
        &self,
        request: &Request,
        options: &EncodeOptions,
    ) -> Result<Map<String, Value>, EncodeError>;

    /// Client side: a non-streamed reply body. The reply's `raw` is set to `body`.
    fn decode_reply(&self, body: &[u8]) -> Result<Reply, DecodeError>;

    /// Canonical usage from the dialect's usage object as a whole reply carries it
    /// (`usage`, Gemini's `usageMetadata`): what [`Codec::decode_reply`] gives as the
    /// reply's usage. See [`crate::usage_scan::reply_usage`] for a body's.
    fn decode_usage(&self, usage: &Map<String, Value>) -> Usage;

    /// Client side: a decoder for one streamed reply, fed SSE events in order.
    fn stream_decoder(&self) -> Box<dyn StreamDecoder>;

    /// Server side: a client's request body.
    fn decode_request(&self, body: &[u8]) -> Result<DecodedRequest, DecodeError>;

    /// Server side: the body of a non-streamed reply.
    fn encode_reply(&self, reply: &Reply, context: &ServerContext) -> Vec<u8>;

    /// Server side: an encoder turning events into this dialect's SSE bytes.
    fn stream_encoder(&self, context: &ServerContext) -> Box<dyn StreamEncoder>;

    /// Server side: the error event that ends a stream this codec's encoder did not
    /// write — a stream passed through from an upstream that broke off. It needs no
    /// encoder state; `response_id` is the stream's own when known (a Responses
    /// `response.failed` names its response).
    fn stream_error_event(&self, error: &StreamError, response_id: Option<&str>) -> Vec<u8>;
}

/// Decodes one streamed reply, event by event. Stateful: tool-call fragments, block
/// indices and cumulative usage are tracked across events.
pub trait StreamDecoder: Send {
    /// Takes one SSE event and returns the canonical events it carries.
    fn event(&mut self, event: &SseEvent) -> Result<Vec<Event>, DecodeError>;

    /// The stream ended. Returns closing events (a pending finish), or an error when the
    /// stream ended before the dialect's end marker.
    fn finish(&mut self) -> Result<Vec<Event>, DecodeError>;

    /// Whether the stream has reached its end as the dialect marks it (`[DONE]`,
    /// `message_stop`, a terminal `response.*` event, Gemini's finishReason) or an error
    /// event: nothing after it belongs to the reply.
    fn ended(&self) -> bool;

    /// Whether the last event given to [`StreamDecoder::event`] was a chunk of usage alone
    /// (chat: `choices` an empty array, `usage` not `null`), which a relay hides from a
    /// client that did not ask for usage. Read from the decoder's own parse of the event,
    /// so a relay that decodes the event does not parse it again to know.
    fn last_was_usage_alone(&self) -> bool {
        false
    }
}

/// Encodes canonical events as one dialect's SSE stream.
pub trait StreamEncoder: Send {
    /// Appends the bytes for `event` to `out` (possibly none: some events only change
    /// state that a later event carries).
    fn event(&mut self, event: &Event, out: &mut Vec<u8>);

    /// Appends the stream's closing bytes (`data: [DONE]`, a final `message_stop`…).
    fn finish(&mut self, out: &mut Vec<u8>);
}

/// Bytes in, canonical events out: an SSE parser feeding a dialect's stream decoder.
pub struct ByteStreamDecoder {
    sse: SseParser,
    decoder: Box<dyn StreamDecoder>,
}

impl ByteStreamDecoder {
    /// Decodes a stream of `codec`'s dialect.
    pub fn new(codec: &dyn Codec) -> Self {
        ByteStreamDecoder {
            sse: SseParser::new(),
            decoder: codec.stream_decoder(),
        }
    }

    /// Takes the next network chunk.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Event>, DecodeError> {
        let mut out = Vec::new();
        for sse in self.sse.push(chunk) {
            out.extend(self.decoder.event(&sse)?);
        }
        Ok(out)
    }

    /// Whether the stream reached its end marker or an error event.
    pub fn ended(&self) -> bool {
        self.decoder.ended()
    }

    /// The bytes ended.
    pub fn finish(&mut self) -> Result<Vec<Event>, DecodeError> {
        let mut out = Vec::new();
        if let Some(sse) = self.sse.finish() {
            out.extend(self.decoder.event(&sse)?);
        }
        out.extend(self.decoder.finish()?);
        Ok(out)
    }
}

/// Parses a JSON body, naming what was wrong when it is not a JSON object: the shared
/// first step of every decoder.
pub fn parse_object(body: &[u8], what: &str) -> Result<Map<String, Value>, DecodeError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        DecodeError::Malformed(format!(
            "{what} is not JSON ({e}); starts with: {}",
            preview(body)
        ))
    })?;
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Err(DecodeError::Malformed(format!(
            "{what} is `null` instead of a JSON object"
        ))),
        other => Err(DecodeError::Malformed(format!(
            "{what} is a JSON {} instead of an object",
            json_type(&other)
        ))),
    }
}

/// The first 120 characters of a body, for error messages.
pub fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out: String = text.chars().take(120).collect();
    if text.chars().count() > 120 {
        out.push('…');
    }
    out
}

/// The JSON type name of a value, for error messages.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

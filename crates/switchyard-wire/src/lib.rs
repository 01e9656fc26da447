//! Switchyard's wire layer: the canonical request, reply and stream event that every
//! dialect converts to and from, and one pure two-way codec per dialect.
//!
//! Nothing here does I/O. Backends encode a [`Request`] with a dialect's [`Codec`],
//! send it, and decode the reply or the stream; the gateway does the reverse. Because
//! every dialect meets at the canonical types, N dialects need N codecs, not N×M
//! converters.
//!
//! ```
//! use switchyard_wire::{codec, Dialect, EncodeOptions, Request};
//!
//! let request = Request::user("hello").with_system("be brief").with_max_tokens(64);
//! let body = codec(Dialect::Chat)
//!     .encode_request(&request, &EncodeOptions { model: "gpt-5.4", stream: false })
//!     .unwrap();
//! assert_eq!(body["model"], "gpt-5.4");
//! ```

pub mod codec;
pub mod dialect;
mod dialect_name;
pub mod embed;
pub mod event;
pub mod json;
pub mod kept;
pub mod part;
pub mod reply;
pub mod request;
pub mod shape;
pub mod sse;
pub mod state_owner;
pub mod stream;
#[cfg(test)]
mod typed_agrees;
pub mod usage_scan;

pub use codec::{
    ByteStreamDecoder, Codec, DecodeError, DecodedRequest, EncodeError, EncodeOptions,
    ServerContext, StreamDecoder, StreamEncoder,
};
pub use dialect::codec;
pub use dialect_name::{Dialect, UnknownDialect};
pub use event::{Event, StreamError};
pub use part::{flat_name, Image, Opaque, Part, Thinking, ToolCall, ToolKind, ToolResult};
pub use reply::{FinishReason, Reply, Usage, MOST_TOKENS_PER_CALL};
pub use request::{
    Message, Passthrough, Reasoning, Request, ResponseFormat, Role, Tool, ToolChoice,
};
pub use stream::{assemble, reply_events, Assembler};

//! One module per wire dialect, each a pure two-way [`Codec`].

pub mod chat;
pub mod gemini;
pub mod messages;
pub mod responses;

use crate::codec::Codec;
use crate::Dialect;

/// The codec of a dialect.
pub fn codec(dialect: Dialect) -> &'static dyn Codec {
    match dialect {
        Dialect::Chat => &chat::ChatCodec,
        Dialect::Responses => &responses::ResponsesCodec,
        Dialect::Messages => &messages::MessagesCodec,
        Dialect::Gemini => &gemini::GeminiCodec,
    }
}

//! Switchyard: name, reach, meter, record and replay every LLM a program calls.

pub mod backend;
pub mod classify;
pub mod error;
mod reply_stream;
mod text;

pub use backend::{Backend, Call};
pub use error::{Error, ErrorKind, ProviderDetails, Result, TimeoutPhase};
pub use reply_stream::{Chunk, ReplyStream};
pub use switchyard_wire as wire;
pub use switchyard_wire::{
    Dialect, Event, FinishReason, Message, Part, Reply, Request, Role, Usage,
};

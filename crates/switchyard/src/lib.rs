//! Switchyard: name, reach, meter, record and replay every LLM a program calls.

pub mod backend;
pub mod classify;
pub mod config_error;
pub mod connect;
pub mod env;
pub mod error;
mod llm;
pub mod reference;
pub mod registry;
mod reply_stream;
mod secrets;
mod suggest;
mod text;

pub use backend::{Backend, Call};
pub use config_error::{ConfigError, ConfigErrors, ConfigProblem, Location};
pub use error::{Error, ErrorKind, ProviderDetails, Result, TimeoutPhase};
pub use llm::{check_reply, Llm};
pub use reference::{Parsed, Reference, ReferenceError};
pub use registry::{Config, Layer, LoadOptions, Registry, Resolved};
pub use reply_stream::{Chunk, ReplyStream};
pub use switchyard_wire as wire;
pub use switchyard_wire::{
    Dialect, Event, FinishReason, Message, Part, Reply, Request, Role, Usage,
};

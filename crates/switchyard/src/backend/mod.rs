//! The backend trait: anything that can answer a canonical request.
//!
//! Switchyard ships an HTTP backend (every dialect), and later ones for the CLI agents
//! and for replaying a recorded run; a program can pass its own.

pub mod auth;
pub mod http;
pub mod replay;

use crate::error::Result;
use crate::reply_stream::ReplyStream;
use async_trait::async_trait;
use serde_json::{Map, Value};
use switchyard_wire::{Dialect, Reply, Request};

/// One call: the model id as the backend knows it and the request.
#[derive(Debug, Clone)]
pub struct Call {
    /// The model id on the backend (after aliases).
    pub model: String,
    /// The request.
    pub request: Request,
}

/// Something that answers requests.
#[async_trait]
pub trait Backend: Send + Sync {
    /// The backend's name, for messages and records.
    fn name(&self) -> &str;

    /// The wire dialect spoken, for records (`None` for backends that speak none).
    fn dialect(&self) -> Option<Dialect> {
        None
    }

    /// The body this backend sends for a call, exactly, for records (`None` for backends
    /// that send none). Never holds a key.
    fn request_body(&self, _call: &Call, _stream: bool) -> Option<Map<String, Value>> {
        None
    }

    /// Answers a request whole.
    async fn complete(&self, call: &Call) -> Result<Reply>;

    /// Answers a request as a stream. The default completes the call and replays the
    /// reply as events, for backends that cannot stream.
    async fn stream(&self, call: &Call) -> Result<ReplyStream> {
        Ok(ReplyStream::from_reply(self.complete(call).await?))
    }
}

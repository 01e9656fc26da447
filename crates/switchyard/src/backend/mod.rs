//! The backend trait: anything that can answer a canonical request.
//!
//! Switchyard ships an HTTP backend (every dialect), the CLI agents (Claude Code, Codex)
//! run as subprocesses, and later one replaying a recorded run; a program can pass its own.

pub mod auth;
pub mod cli;
pub mod http;

use crate::error::Result;
use crate::reply_stream::ReplyStream;
use async_trait::async_trait;
use switchyard_wire::{Reply, Request};

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

    /// Answers a request whole.
    async fn complete(&self, call: &Call) -> Result<Reply>;

    /// Answers a request as a stream. The default completes the call and replays the
    /// reply as events, for backends that cannot stream.
    async fn stream(&self, call: &Call) -> Result<ReplyStream> {
        Ok(ReplyStream::from_reply(self.complete(call).await?))
    }
}

//! The backend trait: anything that can answer a canonical request.
//!
//! Switchyard ships an HTTP backend (every dialect), the CLI agents (Claude Code, Codex)
//! run as subprocesses, and later one replaying a recorded run; a program can pass its own.

pub mod auth;
#[cfg(feature = "cli-agents")]
pub mod cli;
pub mod http;
pub mod replay;

use crate::error::Result;
use crate::reply_stream::ReplyStream;
use async_trait::async_trait;
use bytes::Bytes;
use std::sync::{Arc, Mutex};
use switchyard_wire::{Dialect, Reply, Request};

/// What a backend noted about a call for its record.
#[derive(Debug, Default)]
pub(crate) struct Sent {
    /// The body sent (the last attempt's).
    pub body: Option<Bytes>,
    /// The attempts a replayed call took when it was recorded.
    pub replayed_attempts: Option<Vec<crate::record::AttemptRecord>>,
    /// The error a replayed call ended with when it was recorded (its counts of
    /// attempts and waits are the recorded run's, not the replay's single attempt).
    pub replayed_error: Option<crate::error::Error>,
    /// What a replayed call was when it was recorded.
    pub replayed_call: Option<ReplayedCall>,
    /// The shape a replayed embeddings call was recorded in.
    pub replayed_embed_shape: Option<switchyard_wire::embed::EmbedShape>,
}

/// A recorded call's own description, kept by its replay's record whatever handle made
/// the replayed call.
#[derive(Debug, Clone)]
pub(crate) struct ReplayedCall {
    pub reference: String,
    pub backend: String,
    pub model: String,
    pub dialect: Option<Dialect>,
    /// The recorded cost (`None`: unknown then, unknown now).
    pub cost_usd: Option<f64>,
}

/// Where a backend notes what it sent for a call, for the call's record: travels with the
/// [`Call`] (its clones share it), so a backend that hands the call to a task of its own
/// still notes into the right record.
#[derive(Debug, Clone, Default)]
pub struct CallNotes(Arc<Mutex<Sent>>);

impl CallNotes {
    /// Notes the request body the backend sends, exactly as sent (a backend of your own
    /// calls it too; the last attempt's wins). The body must hold no key: keys go in
    /// headers.
    pub fn sent_body(&self, body: Bytes) {
        self.lock().body = Some(body);
    }

    /// The body noted as sent, if any.
    pub fn body(&self) -> Option<Bytes> {
        self.lock().body.clone()
    }

    /// Notes the attempts, final error and description a replayed call had when it was
    /// recorded, so that the replay's record tells the same story.
    pub(crate) fn replayed(
        &self,
        attempts: Vec<crate::record::AttemptRecord>,
        error: Option<crate::error::Error>,
        call: ReplayedCall,
    ) {
        let mut sent = self.lock();
        sent.replayed_attempts = Some(attempts);
        sent.replayed_error = error;
        sent.replayed_call = Some(call);
    }

    /// Notes the shape a replayed embeddings call was recorded in.
    pub(crate) fn replayed_embed_shape(&self, shape: switchyard_wire::embed::EmbedShape) {
        self.lock().replayed_embed_shape = Some(shape);
    }

    /// Takes everything noted so far.
    pub(crate) fn take(&self) -> Sent {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sent> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One call: the model id as the backend knows it, the request, the calling handle's
/// role, and where the backend notes what it sent.
#[derive(Debug, Clone)]
pub struct Call {
    /// The model id on the backend (after aliases).
    pub model: String,
    /// The request.
    pub request: Request,
    /// The role of the handle making the call (`None`: a handle without one). A replay
    /// backend shared by handles answers each call for its own role.
    pub role: Option<Arc<str>>,
    /// Where the backend notes the body it sent ([`CallNotes::sent_body`]).
    pub notes: CallNotes,
}

impl Call {
    /// A call of `model` with `request`, made by no role.
    pub fn new(model: impl Into<String>, request: Request) -> Call {
        Call {
            model: model.into(),
            request,
            role: None,
            notes: CallNotes::default(),
        }
    }

    /// The same call made by `role`.
    pub fn with_role(mut self, role: Option<Arc<str>>) -> Call {
        self.role = role;
        self
    }
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

    /// The cost the provider reported itself for a reply, read from its raw bytes
    /// (Claude Code's `total_cost_usd`), for the record's `provider_cost_usd`. Most
    /// providers report none.
    fn reported_cost(&self, _raw: &[u8]) -> Option<f64> {
        None
    }

    /// Whether every reply carries its token usage, so that a reply without it is
    /// malformed (asked again). False for a backend that cannot know it (a Python
    /// function answering a str, a replay of such a call): its replies without usage are
    /// replies whose usage is unknown (no tokens or cost counted).
    fn reports_usage(&self) -> bool {
        true
    }

    /// Answers a request whole.
    async fn complete(&self, call: &Call) -> Result<Reply>;

    /// Answers a request as a stream. The default completes the call and replays the
    /// reply as events, for backends that cannot stream.
    async fn stream(&self, call: &Call) -> Result<ReplyStream> {
        Ok(ReplyStream::from_reply(self.complete(call).await?))
    }
}

//! The backend trait: anything that can answer a canonical request.
//!
//! Switchyard ships an HTTP backend (every dialect), the CLI agents (Claude Code, Codex)
//! run as subprocesses, and later one replaying a recorded run; a program can pass its own.

pub mod auth;
pub mod cli;
pub mod http;
pub mod replay;

use crate::error::Result;
use crate::reply_stream::ReplyStream;
use async_trait::async_trait;
use bytes::Bytes;
use std::cell::RefCell;
use std::future::Future;
use switchyard_wire::{Dialect, Reply, Request};

tokio::task_local! {
    /// What a backend notes about the call being made on this task, when a recording
    /// handle asks.
    static SENT: RefCell<Sent>;
}

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

/// Notes the request body a backend sends for the call being made, exactly as sent, for
/// the call's record (a backend of your own calls it too). Outside a recording handle it
/// does nothing. The body must hold no key: keys go in headers.
pub fn note_sent_body(body: Bytes) {
    let _ = SENT.try_with(|s| s.borrow_mut().body = Some(body));
}

/// Notes the attempts a replayed call took when it was recorded, so that the replay's
/// record tells the same story (a replay makes one attempt: the recorded result).
pub(crate) fn note_replayed_attempts(attempts: Vec<crate::record::AttemptRecord>) {
    let _ = SENT.try_with(|s| s.borrow_mut().replayed_attempts = Some(attempts));
}

/// Notes the error a replayed call ended with when it was recorded.
pub(crate) fn note_replayed_error(error: crate::error::Error) {
    let _ = SENT.try_with(|s| s.borrow_mut().replayed_error = Some(error));
}

/// Notes what a replayed call was when recorded (reference, backend, model, dialect,
/// cost), for the replay's record.
pub(crate) fn note_replayed_call(call: ReplayedCall) {
    let _ = SENT.try_with(|s| s.borrow_mut().replayed_call = Some(call));
}

/// Runs a backend call, catching the body it notes as sent (the last one, if it sent
/// several).
pub(crate) async fn capturing_body<F: Future>(call: F) -> (F::Output, Sent) {
    SENT.scope(RefCell::new(Sent::default()), async move {
        let out = call.await;
        let sent = SENT.with(|s| std::mem::take(&mut *s.borrow_mut()));
        (out, sent)
    })
    .await
}

tokio::task_local! {
    /// The role of the handle making the call on this task (a replay backend shared by
    /// handles answers each for its own role).
    static HANDLE_ROLE: Option<std::sync::Arc<str>>;
}

/// Runs a handle's backend call with the handle's role known to the backend.
pub(crate) async fn as_role<F: Future>(role: Option<std::sync::Arc<str>>, call: F) -> F::Output {
    HANDLE_ROLE.scope(role, call).await
}

/// The role of the handle making the call on this task: `None` outside a handle's call,
/// `Some(None)` for a handle without a role.
pub(crate) fn handle_role() -> Option<Option<std::sync::Arc<str>>> {
    HANDLE_ROLE.try_with(Clone::clone).ok()
}

/// Runs a backend call (or an [`crate::Llm`] call on a handle without a recorder) and
/// gives the request body the backend noted as sent, byte for byte (the last attempt's).
/// How a program that keeps its own records (the gateway) gets the body as sent without
/// encoding the request a second time.
pub async fn capture_sent_body<F: Future>(call: F) -> (F::Output, Option<Bytes>) {
    let (out, sent) = capturing_body(call).await;
    (out, sent.body)
}

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

    /// The cost the provider reported itself for a reply, read from its raw bytes
    /// (Claude Code's `total_cost_usd`), for the record's `provider_cost_usd`. Most
    /// providers report none.
    fn reported_cost(&self, _raw: &[u8]) -> Option<f64> {
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

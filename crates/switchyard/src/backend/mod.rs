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
use bytes::Bytes;
use std::cell::RefCell;
use std::future::Future;
use switchyard_wire::{Dialect, Reply, Request};

tokio::task_local! {
    /// The body sent for the call being made on this task, when a recording handle asks.
    static SENT_BODY: RefCell<Option<Bytes>>;
}

/// Notes the request body a backend sends for the call being made, exactly as sent, for
/// the call's record (a backend of your own calls it too). Outside a recording handle it
/// does nothing. The body must hold no key: keys go in headers.
pub fn note_sent_body(body: Bytes) {
    let _ = SENT_BODY.try_with(|b| *b.borrow_mut() = Some(body));
}

/// Runs a backend call, catching the body it notes as sent (the last one, if it sent
/// several).
pub(crate) async fn capturing_body<F: Future>(call: F) -> (F::Output, Option<Bytes>) {
    SENT_BODY
        .scope(RefCell::new(None), async move {
            let out = call.await;
            let body = SENT_BODY.with(|b| b.borrow_mut().take());
            (out, body)
        })
        .await
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

    /// Answers a request whole.
    async fn complete(&self, call: &Call) -> Result<Reply>;

    /// Answers a request as a stream. The default completes the call and replays the
    /// reply as events, for backends that cannot stream.
    async fn stream(&self, call: &Call) -> Result<ReplyStream> {
        Ok(ReplyStream::from_reply(self.complete(call).await?))
    }
}

//! A streamed reply: canonical events as they arrive, with the reply assembled beside
//! them so that the partial output survives a failure and the raw bytes are kept.

use crate::error::{Error, Result};
use bytes::{Bytes, BytesMut};
use futures::stream::{BoxStream, Stream, StreamExt};
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use switchyard_wire::{reply_events, Assembler, Event, Reply};

/// What a backend's stream yields: the bytes of one network chunk and the events decoded
/// from them.
#[derive(Debug, Default)]
pub struct Chunk {
    /// The bytes exactly as received (empty for backends that are not byte streams).
    pub raw: Bytes,
    /// Canonical events decoded from them.
    pub events: Vec<Event>,
}

/// A stream of [`Event`]s that assembles the [`Reply`] as it goes.
///
/// Poll it as a `Stream<Item = Result<Event>>`; at any point [`ReplyStream::reply`]
/// gives the reply so far (with every raw byte received), and
/// [`ReplyStream::into_reply`] drains the rest. An error ends the stream; what came
/// before it stays in the reply.
pub struct ReplyStream {
    inner: BoxStream<'static, Result<Chunk>>,
    pending: VecDeque<Event>,
    assembler: Assembler,
    raw: BytesMut,
    ended: bool,
    /// The backend whose reply is checked at the end (`check_reply`), when set.
    end_check: Option<String>,
}

impl ReplyStream {
    /// Wraps a backend's chunk stream.
    pub fn new(inner: impl Stream<Item = Result<Chunk>> + Send + 'static) -> Self {
        ReplyStream {
            inner: inner.boxed(),
            pending: VecDeque::new(),
            assembler: Assembler::new(),
            raw: BytesMut::new(),
            ended: false,
            end_check: None,
        }
    }

    /// Checks the reply when the stream ends (a stream without text and tool calls, or
    /// without usage, ends with `ProviderReplyMalformed`), naming `backend`.
    pub(crate) fn check_at_end(mut self, backend: impl Into<String>) -> Self {
        self.end_check = Some(backend.into());
        self
    }

    /// Reads ahead, without handing anything out, until the first output event (text,
    /// thinking, a tool call) is waiting. An error before it, or an end without output
    /// that the end check refuses, is returned: nothing has reached the caller, so the
    /// call can safely be sent again.
    pub(crate) async fn start(&mut self) -> Result<()> {
        loop {
            if self.pending.iter().any(is_output) {
                return Ok(());
            }
            match self.inner.next().await {
                Some(Ok(chunk)) => {
                    self.raw.extend_from_slice(&chunk.raw);
                    self.pending.extend(chunk.events);
                }
                Some(Err(e)) => {
                    self.ended = true;
                    return Err(e);
                }
                None => {
                    self.ended = true;
                    let Some(backend) = self.end_check.take() else {
                        return Ok(());
                    };
                    let mut assembler = self.assembler.clone();
                    for event in &self.pending {
                        if let Err(e) = assembler.push(event) {
                            return Err(order_error(e));
                        }
                    }
                    let mut reply = assembler.reply().clone();
                    reply.raw = Bytes::copy_from_slice(&self.raw);
                    return crate::llm::check_reply(&backend, &reply);
                }
            }
        }
    }

    /// A stream that replays a finished reply as events (for backends that cannot
    /// stream); its raw bytes are the reply's.
    pub fn from_reply(reply: Reply) -> Self {
        let chunk = Chunk {
            raw: reply.raw.clone(),
            events: reply_events(&reply, 0),
        };
        ReplyStream::new(futures::stream::iter([Ok(chunk)]))
    }

    /// The reply so far: everything assembled from the events seen, and every raw byte.
    pub fn reply(&self) -> Reply {
        let mut reply = self.assembler.reply().clone();
        reply.raw = Bytes::copy_from_slice(&self.raw);
        reply
    }

    /// Whether the stream reported its finish.
    pub fn is_finished(&self) -> bool {
        self.assembler.is_finished()
    }

    /// Reads the stream to its end and returns the whole reply, or the first error.
    pub async fn into_reply(mut self) -> Result<Reply> {
        while let Some(item) = self.next().await {
            item?;
        }
        Ok(self.reply())
    }
}

impl Stream for ReplyStream {
    type Item = Result<Event>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                if let Err(e) = self.assembler.push(&event) {
                    self.ended = true;
                    self.end_check = None;
                    return Poll::Ready(Some(Err(order_error(e))));
                }
                return Poll::Ready(Some(Ok(event)));
            }
            if self.ended {
                return Poll::Ready(None);
            }
            match self.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    self.ended = true;
                    if let Some(backend) = self.end_check.take() {
                        if let Err(e) = crate::llm::check_reply(&backend, &self.reply()) {
                            return Poll::Ready(Some(Err(e)));
                        }
                    }
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(e))) => {
                    self.ended = true;
                    self.end_check = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(Some(Ok(chunk))) => {
                    self.raw.extend_from_slice(&chunk.raw);
                    self.pending.extend(chunk.events);
                }
            }
        }
    }
}

/// Whether an event is output a caller sees (after it, a call is never re-sent).
fn is_output(event: &Event) -> bool {
    !matches!(
        event,
        Event::Start { .. } | Event::Usage(_) | Event::Finish { .. } | Event::Error(_)
    )
}

fn order_error(e: impl std::fmt::Display) -> Error {
    Error::Unsupported(format!("the stream broke its own order: {e}"))
}

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
                    return Poll::Ready(Some(Err(Error::Unsupported(format!(
                        "the stream broke its own order: {e}"
                    )))));
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
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(e))) => {
                    self.ended = true;
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

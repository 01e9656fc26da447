//! A streamed reply: canonical events as they arrive, with the reply assembled beside
//! them so that the partial output survives a failure and the raw bytes are kept.

use crate::error::{Error, Result};
use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use futures::stream::{BoxStream, Stream, StreamExt};
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;
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

/// How a stream ended, for the hook a recording handle attaches.
pub(crate) enum StreamEnd<'a> {
    /// The stream reached its end.
    Done,
    /// The stream ended with an error.
    Failed(&'a Error),
    /// The caller dropped the stream before its end.
    Dropped,
}

/// Called once when a stream ends, with the reply so far and the time of the first
/// chunk; the future it returns is awaited before the end is shown to the caller (a
/// recorder writes the call's record there).
pub(crate) type EndHook =
    Box<dyn FnOnce(&Reply, StreamEnd<'_>, Option<Instant>) -> BoxFuture<'static, ()> + Send>;

/// Looks at each event before it is handed out; an error ends the stream there, billed
/// the usage given with it (a run budget's hold of a stream's running cost,
/// [`crate::budget::RunningHold`]).
pub(crate) type Guard = Box<dyn FnMut(&Event) -> Option<(Error, switchyard_wire::Usage)> + Send>;

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
    /// The most bytes `raw` keeps ([`ReplyStream::keeping_raw_at_most`]).
    raw_limit: usize,
    /// Bytes received, kept or not.
    raw_received: u64,
    ended: bool,
    /// The backend whose reply is checked at the end, and whether its usage is required.
    end_check: Option<(String, bool)>,
    hook: Option<EndHook>,
    first_byte: Option<Instant>,
    finishing: Option<(BoxFuture<'static, ()>, Option<Result<Event>>)>,
    /// Kept for as long as the stream lives (a route member's place in flight).
    held: Option<Box<dyn std::any::Any + Send>>,
    /// Checks each event before it is handed out.
    guard: Option<Guard>,
}

impl ReplyStream {
    /// Wraps a backend's chunk stream.
    pub fn new(inner: impl Stream<Item = Result<Chunk>> + Send + 'static) -> Self {
        ReplyStream {
            inner: inner.boxed(),
            pending: VecDeque::new(),
            assembler: Assembler::new(),
            raw: BytesMut::new(),
            raw_limit: usize::MAX,
            raw_received: 0,
            ended: false,
            end_check: None,
            hook: None,
            first_byte: None,
            finishing: None,
            held: None,
            guard: None,
        }
    }

    /// Keeps at most the first `limit` raw bytes from here (a program that records only
    /// that much of a reply need not hold all of it); [`ReplyStream::raw_received`] still
    /// counts them all.
    pub fn keeping_raw_at_most(mut self, limit: usize) -> Self {
        self.raw_limit = limit;
        self
    }

    /// Every raw byte received so far, kept or not.
    pub fn raw_received(&self) -> u64 {
        self.raw_received
    }

    /// Keeps a chunk's raw bytes, as far as the limit allows.
    fn keep_raw(&mut self, raw: &[u8]) {
        self.raw_received += raw.len() as u64;
        let room = self.raw_limit.saturating_sub(self.raw.len());
        self.raw.extend_from_slice(&raw[..raw.len().min(room)]);
    }

    /// Checks each event with `guard` before it is handed out.
    pub(crate) fn guarded(mut self, guard: Guard) -> Self {
        self.guard = Some(guard);
        self
    }

    /// The guard refused `event` (not handed out): the upstream is dropped, which ends
    /// the generation, `usage` is what the reply is billed, and the stream ends with
    /// `error`.
    fn stop(
        &mut self,
        error: Error,
        usage: switchyard_wire::Usage,
    ) -> Option<Option<Result<Event>>> {
        self.guard = None;
        self.pending.clear();
        self.inner = futures::stream::empty().boxed();
        self.end_check = None;
        // Usage may come at any point of a stream: the assembler takes it.
        let _ = self.assembler.push(&Event::Usage(usage));
        self.end_with(Some(Err(error)))
    }

    /// Keeps `value` alive until the stream is dropped.
    pub(crate) fn holding(mut self, value: Box<dyn std::any::Any + Send>) -> Self {
        self.held = Some(value);
        self
    }

    /// Attaches the hook called when the stream ends.
    pub(crate) fn on_end(mut self, hook: EndHook) -> Self {
        self.hook = Some(hook);
        self
    }

    /// Ends the stream: runs the hook (if any) and shows `item` once it is done; `None`
    /// means the item waits for the hook's future.
    fn end_with(&mut self, item: Option<Result<Event>>) -> Option<Option<Result<Event>>> {
        self.ended = true;
        // A budget's hold is given back before the call settles its cost.
        self.guard = None;
        match self.hook.take() {
            Some(hook) => {
                let reply = self.reply();
                let end = match &item {
                    Some(Err(e)) => StreamEnd::Failed(e),
                    _ => StreamEnd::Done,
                };
                let future = hook(&reply, end, self.first_byte);
                self.finishing = Some((future, item));
                None
            }
            None => Some(item),
        }
    }

    /// Checks the reply when the stream ends (a stream without text and tool calls, or
    /// without usage when `usage_required`, ends with `ProviderReplyMalformed`), naming
    /// `backend`.
    pub(crate) fn check_at_end(mut self, backend: impl Into<String>, usage_required: bool) -> Self {
        self.end_check = Some((backend.into(), usage_required));
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
                    self.first_byte.get_or_insert_with(Instant::now);
                    self.keep_raw(&chunk.raw);
                    self.pending.extend(chunk.events);
                }
                Some(Err(e)) => {
                    self.ended = true;
                    return Err(e);
                }
                None => {
                    self.ended = true;
                    let Some((backend, usage_required)) = self.end_check.take() else {
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
                    return crate::reply_check::check(&backend, &reply, usage_required);
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

    /// The reply so far: everything assembled from the events seen, and every raw byte
    /// kept.
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
            if let Some((future, _)) = &mut self.finishing {
                if future.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let item = self.finishing.take().and_then(|(_, item)| item);
                return Poll::Ready(item);
            }
            if let Some(event) = self.pending.pop_front() {
                if let Some(refused) = self.guard.as_mut().and_then(|g| g(&event)) {
                    match self.stop(refused.0, refused.1) {
                        Some(item) => return Poll::Ready(item),
                        None => continue,
                    }
                }
                if let Err(e) = self.assembler.push(&event) {
                    self.end_check = None;
                    match self.end_with(Some(Err(order_error(e)))) {
                        Some(item) => return Poll::Ready(item),
                        None => continue,
                    }
                }
                return Poll::Ready(Some(Ok(event)));
            }
            if self.ended {
                // Ended while reading ahead (`start`): the hook still runs, once.
                match self.hook.is_some().then(|| self.end_with(None)) {
                    Some(None) => continue,
                    _ => return Poll::Ready(None),
                }
            }
            match self.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    let mut item = None;
                    if let Some((backend, usage_required)) = self.end_check.take() {
                        let reply = self.reply();
                        if let Err(e) = crate::reply_check::check(&backend, &reply, usage_required)
                        {
                            item = Some(Err(e));
                        }
                    }
                    match self.end_with(item) {
                        Some(item) => return Poll::Ready(item),
                        None => continue,
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    self.end_check = None;
                    match self.end_with(Some(Err(e))) {
                        Some(item) => return Poll::Ready(item),
                        None => continue,
                    }
                }
                Poll::Ready(Some(Ok(chunk))) => {
                    self.first_byte.get_or_insert_with(Instant::now);
                    self.keep_raw(&chunk.raw);
                    self.pending.extend(chunk.events);
                }
            }
        }
    }
}

impl Drop for ReplyStream {
    fn drop(&mut self) {
        // A budget's hold is given back before the call settles its cost.
        self.guard = None;
        // A stream dropped before its end is still a call that was made: its hook records
        // it (the returned future only waits for the write, which is already queued).
        if let Some(hook) = self.hook.take() {
            let reply = self.reply();
            drop(hook(&reply, StreamEnd::Dropped, self.first_byte));
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

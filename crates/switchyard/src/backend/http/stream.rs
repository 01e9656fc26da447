//! A streamed reply's bytes decoded into a [`ReplyStream`]: the dialect's stream decoder,
//! with in-stream errors typed as the HTTP backend types an error answer. Replay feeds
//! recorded bytes through the same function, so a replayed stream decodes exactly as the
//! live one did.

use crate::error::{Error, Result};
use crate::internal::classify;
use crate::reply_stream::{Chunk, ReplyStream};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use switchyard_wire::{codec, ByteStreamDecoder, DecodeError, Dialect, Event, StreamError};

/// The first bytes of a stream kept for an error's details (the whole stream is the
/// reply's, in [`ReplyStream`]; a second copy of all of it would double what a long
/// stream holds).
const RECEIVED_KEPT: usize = 1 << 20;

/// A stream of bytes (network chunks, or the error that broke it: a timeout, a broken
/// connection) decoded in `dialect`. `headers` are the answer's, for error details.
pub(crate) fn decode_stream(
    name: &str,
    dialect: Dialect,
    headers: Vec<(String, String)>,
    bytes: BoxStream<'static, Result<Bytes>>,
) -> ReplyStream {
    let state = StreamState {
        bytes,
        decoder: ByteStreamDecoder::new(codec(dialect)),
        name: name.to_string(),
        headers,
        received: Vec::new(),
        done: false,
    };
    ReplyStream::new(futures::stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let item = state.next_chunk().await;
        if item.is_err() {
            state.done = true;
        }
        Some((item, state))
    }))
}

struct StreamState {
    bytes: BoxStream<'static, Result<Bytes>>,
    decoder: ByteStreamDecoder,
    name: String,
    headers: Vec<(String, String)>,
    /// The first bytes so far (at most [`RECEIVED_KEPT`]), for error details.
    received: Vec<u8>,
    done: bool,
}

impl StreamState {
    async fn next_chunk(&mut self) -> Result<Chunk> {
        match self.bytes.next().await {
            Some(Ok(bytes)) => {
                let room = RECEIVED_KEPT.saturating_sub(self.received.len());
                self.received
                    .extend_from_slice(&bytes[..bytes.len().min(room)]);
                let mut events = self
                    .decoder
                    .push(&bytes)
                    .map_err(|e| self.decode_error(e))?;
                self.check_events(&events)?;
                self.tag(&mut events);
                Ok(Chunk { raw: bytes, events })
            }
            Some(Err(e)) => Err(e),
            None => {
                self.done = true;
                let mut events = self.decoder.finish().map_err(|e| self.decode_error(e))?;
                self.check_events(&events)?;
                self.tag(&mut events);
                Ok(Chunk {
                    raw: Bytes::new(),
                    events,
                })
            }
        }
    }

    /// Opaque state in the events is this backend's, to be sent back here only.
    fn tag(&self, events: &mut [Event]) {
        events.iter_mut().for_each(|e| e.tag_state(&self.name));
    }

    /// An error event inside the stream ends it with a typed error.
    fn check_events(&self, events: &[Event]) -> Result<()> {
        match events.iter().find_map(|e| match e {
            Event::Error(err) => Some(err.clone()),
            _ => None,
        }) {
            Some(err) => Err(self.provider_error(err)),
            None => Ok(()),
        }
    }

    fn provider_error(&self, e: StreamError) -> Error {
        stream_error(
            &self.name,
            &self.headers,
            e,
            Bytes::copy_from_slice(&self.received),
        )
    }

    fn decode_error(&self, e: DecodeError) -> Error {
        match e {
            DecodeError::Malformed(reason) => Error::ProviderReplyMalformed {
                backend: self.name.clone(),
                reason: format!("stream: {reason}"),
                attempts: 1,
                body: Bytes::copy_from_slice(&self.received),
            },
            DecodeError::Provider(err) => self.provider_error(err),
        }
    }
}

/// The typed error of an error a provider reported inside a 200 answer (a stream's error
/// event, an error object as a whole body): the status it names, or none — not the 200.
pub fn stream_error(
    backend: &str,
    headers: &[(String, String)],
    e: StreamError,
    body: Bytes,
) -> Error {
    let (mut details, _) = classify::details(backend, 0, headers, body);
    details.status = e.status.unwrap_or(0);
    details.kind = e.kind.or(details.kind);
    details.code = e.code.or(details.code);
    details.message = e.message;
    classify::classify(details)
}

/// The typed error of a reply body that did not decode: malformed, or the provider's
/// error object inside a 200.
pub fn decode_error(
    backend: &str,
    headers: &[(String, String)],
    error: DecodeError,
    body: Bytes,
) -> Error {
    match error {
        DecodeError::Malformed(reason) => Error::ProviderReplyMalformed {
            backend: backend.to_string(),
            reason,
            attempts: 1,
            body,
        },
        DecodeError::Provider(e) => stream_error(backend, headers, e, body),
    }
}

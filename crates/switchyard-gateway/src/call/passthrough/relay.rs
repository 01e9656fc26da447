//! A passed-through stream relayed to its client: the upstream's bytes as they arrive,
//! cut only at event boundaries (an event a client could not read yet anyway waits for
//! its end), read on the way by a [`Watch`].
//!
//! How a stream ends is the gateway's to say, as for a translated one:
//! - at its end marker with an answer and usage: the end goes out once the call is
//!   recorded (when the store asks for that: `durability: answered`);
//! - at its end marker without an answer or usage: the end marker is replaced by the
//!   dialect's error event (`ProviderReplyMalformed`);
//! - with the provider's own error event: relayed as it came, and recorded as that error;
//! - cut before its end marker, broken (`Transport`) or silent past the idle timeout
//!   (`Timeout`): the dialect's error event, never a clean end. An event left incomplete
//!   is dropped rather than sent half.

use super::watch::Watch;
use crate::call::client_model::InStream;
use crate::errors::ApiError;
use crate::meter::Meter;
use bytes::{Bytes, BytesMut};
use serde_json::value::RawValue;
use std::collections::VecDeque;
use std::time::Duration;
use switchyard::backend::http::{decode_error, stream_error, RawResponse};
use switchyard::internal::redact::Redacted;
use switchyard::record::ErrorRecord;
use switchyard::{Dialect, Error};
use switchyard_wire::codec;
use switchyard_wire::json::is_empty_raw_array;
use switchyard_wire::sse::{closes_event, first_event_end, write_event, SseParser};

/// How long the upstream may take to close after its end marker before the gateway ends
/// the client's stream anyway.
const AFTER_END: Duration = Duration::from_secs(2);

/// A stream being relayed.
pub(super) struct Relay {
    upstream: Option<RawResponse>,
    /// Chunks read (and watched) before output began, still to relay.
    opening: VecDeque<Bytes>,
    /// The keys the upstream's chunks were redacted under as they entered.
    redacted: Redacted,
    watch: Watch,
    dialect: Dialect,
    backend: String,
    headers: Vec<(String, String)>,
    /// Names the client's model in the events that name one.
    names: InStream,
    /// Drops the chat usage-only chunk the client did not ask for.
    hide_usage: Option<SseParser>,
    /// The bytes of an event not yet complete.
    tail: BytesMut,
    /// Everything after the end marker, held until the upstream closes.
    held: BytesMut,
    out: VecDeque<Bytes>,
    meter: Meter,
    over: bool,
}

impl Relay {
    /// Relays `upstream` after the `opening` chunks already read (and watched), all of
    /// them redacted under the keys `redacted` as they entered.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        upstream: Option<RawResponse>,
        opening: Vec<Bytes>,
        redacted: Redacted,
        watch: Watch,
        dialect: Dialect,
        backend: &str,
        headers: Vec<(String, String)>,
        hide_usage: bool,
        meter: Meter,
    ) -> Relay {
        Relay {
            upstream,
            opening: opening.into(),
            redacted,
            watch,
            dialect,
            backend: backend.to_string(),
            headers,
            names: InStream::new(dialect, meter.requested()),
            hide_usage: hide_usage.then(SseParser::new),
            tail: BytesMut::new(),
            held: BytesMut::new(),
            out: VecDeque::new(),
            meter,
            over: false,
        }
    }

    /// The next bytes for the client; `None` once the stream is over.
    pub(super) async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(bytes) = self.out.pop_front() {
                self.meter.first_byte();
                return Some(bytes);
            }
            if self.over {
                return None;
            }
            if let Some(chunk) = self.opening.pop_front() {
                self.take(chunk, true).await;
                continue;
            }
            let ended = self.watch.ended();
            let Some(upstream) = self.upstream.as_mut() else {
                self.end().await;
                continue;
            };
            let next = if ended {
                tokio::time::timeout(AFTER_END, upstream.chunk())
                    .await
                    .unwrap_or_default()
            } else {
                upstream.chunk().await
            };
            match next {
                Some(Ok(bytes)) => self.take(bytes, false).await,
                Some(Err(e)) => {
                    self.upstream = None;
                    if self.watch.ended() {
                        // Broken after its end marker: the reply is whole.
                        self.end().await;
                    } else {
                        self.fail(e).await;
                    }
                }
                None => {
                    self.upstream = None;
                    self.end().await;
                }
            }
        }
    }

    /// One chunk from the upstream (`watched`: already read by the watch).
    async fn take(&mut self, bytes: Bytes, watched: bool) {
        self.meter.draft().keep_redacted(&bytes, self.redacted);
        if self.watch.ended() && !watched {
            self.held.extend_from_slice(&bytes);
            return;
        }
        if !watched {
            if let Err(e) = self.watch.push(&bytes) {
                let received = self.received();
                let error = decode_error(&self.backend, &self.headers, e, received);
                self.fail(error).await;
                return;
            }
        }
        // The reservation is the promise: a stream whose cost passed it goes no further.
        if !self.watch.ended() {
            if let Some(passed) = self.meter.over_reservation(self.watch.seen()) {
                self.stop_at_reservation(passed).await;
                return;
            }
        }
        let complete = self.align(bytes);
        if let Some(e) = self.watch.error.clone() {
            // The provider's own error event, already in the client's dialect: relayed
            // as it came, and the call recorded as that error.
            let received = self.received();
            let error = stream_error(&self.backend, &self.headers, e, received);
            self.note_failure(&error);
            self.tail.clear();
            self.release(complete).await;
            return;
        }
        if self.watch.ended() {
            self.held.extend_from_slice(&complete);
        } else {
            self.emit(complete);
        }
    }

    /// The upstream closed (or fell silent after its end marker): the reply ends here.
    async fn end(&mut self) {
        if self.over {
            return;
        }
        if !self.watch.ended() {
            if let Err(e) = self.watch.finish() {
                // Cut before its end marker: what was relayed stays, the incomplete event
                // does not, and the client is told.
                let reason = match e {
                    switchyard_wire::DecodeError::Malformed(m) => m,
                    other => other.to_string(),
                };
                let error = Error::ProviderReplyMalformed {
                    backend: self.backend.clone(),
                    reason: format!("stream: {reason}"),
                    attempts: 1,
                    body: self.received(),
                };
                self.fail(error).await;
                return;
            }
            // A stream the dialect accepts without its marker (a chat finish with no
            // `[DONE]`): its last event may still be in the tail.
            let tail = std::mem::take(&mut self.tail);
            self.held.extend_from_slice(&tail);
        }
        let last = std::mem::take(&mut self.held).freeze();
        if let Some(problem) = self.watch.problem() {
            let error = Error::ProviderReplyMalformed {
                backend: self.backend.clone(),
                reason: format!("stream: {problem}"),
                attempts: 1,
                body: self.received(),
            };
            // Everything but the end marker, then the error in its place.
            self.emit(without_last_event(&last));
            self.fail(error).await;
            return;
        }
        if let Some(usage) = self.watch.usage {
            self.meter.usage(usage);
        }
        self.meter.complete();
        self.release(last).await;
    }

    /// Ends the stream with `error`: recorded, and told to the client as its dialect's
    /// error event.
    async fn fail(&mut self, error: Error) {
        self.note_failure(&error);
        self.tail.clear();
        let api = ApiError::from_upstream(&error);
        let event = codec(self.dialect).stream_error_event(
            &api.stream_error(self.dialect),
            self.watch.response_id.as_deref(),
        );
        self.release(Bytes::from(event)).await;
    }

    /// The stream's running cost passed what its key's budget reserved for it
    /// (`budget_stop.rs`): nothing more is relayed, the upstream connection is dropped
    /// (which ends the generation), and the client gets its dialect's error event.
    async fn stop_at_reservation(&mut self, passed: crate::account::budget_stop::Passed) {
        self.upstream = None;
        self.tail.clear();
        let api = self.meter.stop_at_reservation(passed, self.watch.seen());
        let event = codec(self.dialect).stream_error_event(
            &api.stream_error(self.dialect),
            self.watch.response_id.as_deref(),
        );
        self.release(Bytes::from(event)).await;
    }

    fn note_failure(&mut self, error: &Error) {
        if let Some(usage) = self.watch.usage {
            self.meter.usage(usage);
        }
        self.meter.seen_so_far(self.watch.seen());
        self.meter
            .outcome(0, Some(error.kind().as_str().to_string()));
        let draft = self.meter.draft();
        draft.error = Some(ErrorRecord::new(error));
        // The relay runs once the stream's output began: a failure now is a cut.
        draft.cut = true;
        self.meter.complete();
    }

    /// The stream's last bytes: out once the call is recorded, when the store must have
    /// the record first.
    async fn release(&mut self, last: Bytes) {
        self.meter.first_byte();
        // Queued before the call closes, so the turn kept of it has its end; nothing
        // queued goes out before this returns.
        self.emit(last);
        if let Some(written) = self.meter.finish() {
            let _ = written.await;
        }
        self.over = true;
        // Left unread, the upstream connection could not be reused: it is read to its
        // close (briefly) apart from the client, whose stream ends now.
        if let Some(mut upstream) = self.upstream.take() {
            tokio::spawn(async move {
                let drain = async { while let Some(Ok(_)) = upstream.chunk().await {} };
                let _ = tokio::time::timeout(AFTER_END, drain).await;
            });
        }
    }

    /// Queues bytes for the client: the model named as the client named it, the
    /// usage-only chunk left out where it must be. The record has kept them as they came.
    fn emit(&mut self, bytes: Bytes) {
        if bytes.is_empty() {
            return;
        }
        let bytes = self.names.events(bytes);
        let bytes = match &mut self.hide_usage {
            None => bytes,
            Some(parser) => without_usage_chunks(parser, bytes),
        };
        if !bytes.is_empty() {
            self.meter.reply_chunk(&bytes);
            self.out.push_back(bytes);
        }
    }

    /// The complete events of the held tail and `bytes`; keeps the incomplete rest. Linear
    /// in the bytes however long an event is (one bounded by `max_event_bytes` may come in
    /// thousands of chunks): the tail grows in place, and only the new bytes are searched.
    fn align(&mut self, bytes: Bytes) -> Bytes {
        if self.tail.is_empty() {
            return match last_boundary(&bytes) {
                Some(end) if end == bytes.len() => bytes,
                Some(end) => {
                    self.tail.extend_from_slice(&bytes[end..]);
                    bytes.slice(..end)
                }
                None => {
                    self.tail.extend_from_slice(&bytes);
                    Bytes::new()
                }
            };
        }
        // The tail holds no event's end: a blank line ending in the new bytes begins at
        // most three bytes before them (`\r\n\r\n`).
        let from = self.tail.len().saturating_sub(3);
        self.tail.extend_from_slice(&bytes);
        match last_boundary_from(&self.tail, from) {
            Some(end) => self.tail.split_to(end).freeze(),
            None => Bytes::new(),
        }
    }

    /// Hands the watch's events to the call's record (before the meter closes).
    /// Every byte received so far, for an error's details.
    fn received(&mut self) -> Bytes {
        let raw = &self.meter.draft().raw;
        Bytes::from(raw.concat())
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        // A client that leaves is billed for what it was sent.
        self.meter.seen_so_far(self.watch.seen());
    }
}

/// Where the last complete SSE event of `bytes` ends: after its blank line (`\n\n`, or
/// `\r\n\r\n`). Most chunks end at an event's end, which is answered without a scan;
/// otherwise lines are looked at from the end until a blank one.
fn last_boundary(bytes: &[u8]) -> Option<usize> {
    last_boundary_from(bytes, 0)
}

/// [`last_boundary`] among the line ends at `from` or after.
fn last_boundary_from(bytes: &[u8], from: usize) -> Option<usize> {
    if bytes.ends_with(b"\n\n") || bytes.ends_with(b"\r\n\r\n") {
        return Some(bytes.len());
    }
    let mut end = bytes.len();
    while let Some(i) = memchr::memrchr(b'\n', &bytes[from..end]).map(|i| from + i) {
        if closes_event(bytes, i) {
            return Some(i + 1);
        }
        end = i;
    }
    None
}

/// `bytes` with the usage-only chunks left out, for a client that did not ask for usage.
/// Events with no usage in them (every event but the last, usually) go out as they came,
/// neither parsed nor written again; an event that names usage is parsed, and written
/// again unless it is a usage-only chunk. `parser` holds an event cut across two calls
/// after it named usage; the relay hands over whole events (`align`) but for a stream's
/// last bytes, so an event is not cut before it does.
fn without_usage_chunks(parser: &mut SseParser, bytes: Bytes) -> Bytes {
    // Built once: `memmem::find` builds its searcher on every call, which cost more than
    // the search over an event.
    static USAGE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"usage\""));
    // Where the first search found the word, kept for the loop's first turn.
    let mut first = None;
    if parser.is_idle() {
        first = USAGE.find(&bytes);
        if first.is_none() {
            return bytes;
        }
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        if parser.is_idle() {
            // The events before the next that names usage go out as they came, unread:
            // the bytes are searched once, not event by event.
            let Some(hit) = first.take().or_else(|| USAGE.find(rest)) else {
                out.extend_from_slice(rest);
                break;
            };
            let start = last_boundary(&rest[..hit]).unwrap_or(0);
            out.extend_from_slice(&rest[..start]);
            rest = &rest[start..];
        }
        let end = first_event_end(rest).unwrap_or(rest.len());
        let (event, after) = rest.split_at(end);
        for event in parser.push(event) {
            if !is_usage_only_chunk(&event.data) {
                write_event(&mut out, event.event.as_deref(), &event.data);
            }
        }
        rest = after;
    }
    Bytes::from(out)
}

/// Complete events with the last one (the end marker) left out.
fn without_last_event(bytes: &[u8]) -> Bytes {
    let mut parser = SseParser::new();
    let mut events = parser.push(bytes);
    events.extend(parser.finish());
    events.pop();
    let mut out = Vec::with_capacity(bytes.len());
    for event in events {
        write_event(&mut out, event.event.as_deref(), &event.data);
    }
    Bytes::from(out)
}

/// A chunk of no choices and a usage object: `{"choices": [], "usage": {…}, …}`.
fn is_usage_only_chunk(data: &str) -> bool {
    /// The two fields looked at, borrowed as raw JSON (the rest skipped, not built).
    #[derive(serde::Deserialize)]
    struct Chunk<'a> {
        #[serde(borrow, default)]
        choices: Option<&'a RawValue>,
        #[serde(borrow, default)]
        usage: Option<&'a RawValue>,
    }
    if !data.contains("\"usage\"") {
        return false;
    }
    match serde_json::from_str::<Chunk>(data) {
        Ok(chunk) => {
            chunk.choices.is_some_and(is_empty_raw_array)
                && chunk.usage.is_some_and(|u| u.get() != "null")
        }
        // Not an object, or a field named twice (the lenient reader takes the last).
        Err(_) => serde_json::from_str::<serde_json::Value>(data).is_ok_and(|v| {
            v.get("choices")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|c| c.is_empty())
                && v.get("usage").is_some_and(|u| !u.is_null())
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usage_only_chunk_is_one_with_no_choices_and_a_usage() {
        for (data, expected) in [
            (
                r#"{"id":"c","choices":[],"usage":{"prompt_tokens":1}}"#,
                true,
            ),
            (r#"{"usage":{"prompt_tokens":1},"choices":[ ]}"#, true),
            (
                r#"{"choices":[{"index":0,"delta":{}}],"usage":{"prompt_tokens":1}}"#,
                false,
            ),
            (r#"{"choices":[],"usage":null}"#, false),
            (r#"{"choices":null,"usage":{}}"#, false),
            (r#"{"usage":{}}"#, false),
            (r#"{"choices":[],"usage":{},"usage":null}"#, false),
            (r#"{"choices":[],"usage":null,"usage":{}}"#, true),
            (r#"{"choices":[],"usage":{}"#, false),
            (r#"["usage"]"#, false),
        ] {
            assert_eq!(is_usage_only_chunk(data), expected, "{data}");
        }
    }

    #[test]
    fn events_are_cut_at_their_blank_lines() {
        assert_eq!(last_boundary(b"data: a\n\ndata: b"), Some(9));
        assert_eq!(last_boundary(b"data: a\r\n\r\ndata: b\r\n\r\n"), Some(22));
        assert_eq!(last_boundary(b"data: a\n"), None);
        assert_eq!(last_boundary(b"data: a\n\ndata: b\n"), Some(9));
        assert_eq!(last_boundary(b"data: a\r\n\r\ndata: b\r\n"), Some(11));
        assert_eq!(last_boundary(b"data: a\n\n"), Some(9));
    }

    #[test]
    fn a_boundary_is_found_from_the_new_bytes_however_the_stream_was_cut() {
        // As `align` searches: the bytes before a cut hold no boundary (so only the last
        // three of them, and what follows, are searched).
        for input in [
            &b"data: aaaaaaaa\n\ndata: b"[..],
            b"data: aaaaaaaa\r\n\r\ndata: b",
            b"data: aaaaaaaa\r\n\r\n",
            b"data: aaaaaaaa\n\n",
        ] {
            let first = first_event_end(input).unwrap();
            for cut in 0..first {
                let from = cut.saturating_sub(3);
                assert_eq!(
                    last_boundary_from(input, from),
                    last_boundary(input),
                    "{input:?} cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn events_are_found_from_the_start() {
        assert_eq!(first_event_end(b"data: a\n\ndata: b\n\n"), Some(9));
        assert_eq!(first_event_end(b"data: a\r\n\r\ndata: b"), Some(11));
        assert_eq!(first_event_end(b"data: a\ndata: b\n"), None);
        assert_eq!(first_event_end(b""), None);
    }

    const ROLE: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}";
    const TEXT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}";
    const USAGE_ONLY: &str = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}";
    const WITH_USAGE: &str =
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1}}";

    /// A stream of `events` with `end` after each line, as one string.
    fn stream(events: &[&str], end: &str) -> String {
        events.iter().map(|e| format!("{e}{end}{end}")).collect()
    }

    #[test]
    fn only_usage_only_chunks_are_hidden_and_the_rest_goes_out_as_it_came() {
        let events = [ROLE, TEXT, WITH_USAGE, USAGE_ONLY, "data: [DONE]"];
        for end in ["\n", "\r\n"] {
            // Events that name no usage go out byte for byte; the chunk with a finish
            // and usage is parsed and written again (with LF line ends); the usage-only
            // chunk is left out.
            let expected = format!(
                "{}{}{}",
                stream(&[ROLE, TEXT], end),
                stream(&[WITH_USAGE], "\n"),
                stream(&["data: [DONE]"], end)
            );
            // The relay hands over whole events: in one piece, and split at every
            // event boundary.
            let input = stream(&events, end);
            let mut parser = SseParser::new();
            assert_eq!(
                without_usage_chunks(&mut parser, Bytes::from(input)),
                expected
            );
            let mut parser = SseParser::new();
            let mut out = Vec::new();
            for event in events {
                out.extend_from_slice(&without_usage_chunks(
                    &mut parser,
                    Bytes::from(stream(&[event], end)),
                ));
            }
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
    }

    #[test]
    fn an_event_cut_after_it_names_usage_is_completed_by_the_next_bytes() {
        let input = stream(&[TEXT, USAGE_ONLY, "data: [DONE]"], "\n");
        let cut = input.find("prompt_tokens").unwrap();
        let mut parser = SseParser::new();
        let mut out =
            without_usage_chunks(&mut parser, Bytes::from(input[..cut].to_string())).to_vec();
        out.extend_from_slice(&without_usage_chunks(
            &mut parser,
            Bytes::from(input[cut..].to_string()),
        ));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            stream(&[TEXT, "data: [DONE]"], "\n")
        );
    }

    #[test]
    fn the_end_marker_is_left_out() {
        let out = without_last_event(b"data: {\"a\":1}\n\ndata: [DONE]\n\n");
        assert_eq!(&out[..], b"data: {\"a\":1}\n\n");
    }
}

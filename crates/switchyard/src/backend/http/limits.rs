//! The size bounds on what a backend reads from its provider, checked where the bytes
//! enter (as each chunk arrives, before anything else keeps it): a whole reply body, a
//! stream's total, one server-sent event, and how much of an error body is read.
//!
//! Every path reads through here — the library's `complete` and `stream`, the gateway's
//! pass-through and translation, `ask`, runs and Python — so one place bounds them all.
//! Past a bound the body is dropped unread (hyper closes a connection whose body is
//! dropped before its end, rather than draining it) and the read ends with
//! [`Error::ReplyTooLarge`], which is not retried.

use crate::error::{Error, ReplyBound};
use bytes::Bytes;

/// How much of an answer a backend reads: each bound in bytes. The defaults are far past
/// what a real provider sends, so that only a broken or hostile upstream meets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyLimits {
    /// A whole (not streamed) reply body. Checked against `Content-Length` before reading
    /// when the answer has one, and as the chunks arrive otherwise.
    pub max_reply_bytes: u64,
    /// Every byte of one stream.
    pub max_stream_bytes: u64,
    /// One server-sent event with its lines (so also one line), as received.
    pub max_event_bytes: u64,
    /// The head of an error answer (4xx, 5xx) that is read; the rest is not read, and
    /// the error keeps the head.
    pub max_error_body_bytes: u64,
}

impl ReplyLimits {
    /// The bounds used unless a backend says otherwise.
    ///
    /// Why these values: the longest outputs providers allow are about 128k tokens; as a
    /// stream that is one event per token or so, 100 to 300 bytes each with the JSON
    /// framing, so about 40 MB — `max_stream_bytes` is 256 MiB. The largest whole reply
    /// is an embeddings batch (OpenAI: 2,048 inputs × 3,072 dimensions, about 90 MB as
    /// JSON floats); a chat reply is smaller than its stream, and generated images come
    /// inline at a few MB each — `max_reply_bytes` is 128 MiB. One event holds one chunk
    /// of output (a whole inline image at the largest) — `max_event_bytes` is 16 MiB.
    /// Providers' error bodies are a few hundred bytes of JSON (an HTML page from a
    /// proxy, some KB) — `max_error_body_bytes` is 1 MiB.
    pub const DEFAULT: ReplyLimits = ReplyLimits {
        max_reply_bytes: 128 << 20,
        max_stream_bytes: 256 << 20,
        max_event_bytes: 16 << 20,
        max_error_body_bytes: 1 << 20,
    };

    /// A bound's value.
    pub fn of(&self, bound: ReplyBound) -> u64 {
        match bound {
            ReplyBound::Reply => self.max_reply_bytes,
            ReplyBound::Stream => self.max_stream_bytes,
            ReplyBound::Event => self.max_event_bytes,
        }
    }
}

impl Default for ReplyLimits {
    fn default() -> Self {
        ReplyLimits::DEFAULT
    }
}

/// The first bytes of an answer a [`Error::ReplyTooLarge`] keeps, to show what came.
pub(crate) const HEAD_KEPT: usize = 64 << 10;

/// How a body is being read, and so which bounds apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// A whole body: `max_reply_bytes`.
    Whole,
    /// A stream of server-sent events: `max_stream_bytes` and `max_event_bytes`.
    Events,
}

/// Counts a body's bytes as they arrive against the bounds of its [`Reading`]. It keeps
/// no byte itself: a reader that keeps them gives the error its head ([`head_of`]).
#[derive(Debug)]
pub(crate) struct Counter {
    limits: ReplyLimits,
    reading: Reading,
    received: u64,
    event: EventSize,
}

impl Counter {
    pub(crate) fn new(limits: ReplyLimits, reading: Reading) -> Self {
        Counter {
            limits,
            reading,
            received: 0,
            event: EventSize::default(),
        }
    }

    /// The body is read whole from here (a stream answered with one JSON body).
    pub(crate) fn read_whole(&mut self) {
        self.reading = Reading::Whole;
    }

    /// The bound an announced length (`Content-Length`) already passes, if any.
    pub(crate) fn announced(&self, length: Option<u64>) -> Option<ReplyBound> {
        let bound = self.total_bound();
        length.filter(|&n| n > self.limits.of(bound)).map(|_| bound)
    }

    /// Counts a chunk; the bound it passes, if any.
    pub(crate) fn take(&mut self, chunk: &[u8]) -> Option<ReplyBound> {
        self.received += chunk.len() as u64;
        let bound = self.total_bound();
        if self.received > self.limits.of(bound) {
            return Some(bound);
        }
        if self.reading == Reading::Events && self.event.passes(chunk, self.limits.max_event_bytes)
        {
            return Some(ReplyBound::Event);
        }
        None
    }

    /// The error for a bound passed (its head empty).
    pub(crate) fn error(&self, backend: &str, bound: ReplyBound) -> Error {
        Error::ReplyTooLarge {
            backend: backend.to_string(),
            bound,
            limit: self.limits.of(bound),
            head: Bytes::new(),
        }
    }

    fn total_bound(&self) -> ReplyBound {
        match self.reading {
            Reading::Whole => ReplyBound::Reply,
            Reading::Events => ReplyBound::Stream,
        }
    }
}

/// The first [`HEAD_KEPT`] bytes of `chunks`, for a [`Error::ReplyTooLarge`].
pub(crate) fn head_of(chunks: &[Bytes]) -> Bytes {
    let mut head = Vec::new();
    for chunk in chunks {
        let room = HEAD_KEPT - head.len();
        head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if head.len() == HEAD_KEPT {
            break;
        }
    }
    Bytes::from(head)
}

/// The size of the server-sent event being received, found from its line ends alone (LF,
/// CRLF or a lone CR, as the parser reads them): an event ends at a blank line.
#[derive(Debug)]
struct EventSize {
    /// Bytes of the event so far, its line ends included.
    event: u64,
    /// No byte of the line being received yet (a line end now ends a blank line).
    line_empty: bool,
    /// The last byte was a CR: an LF right after it ends no other line.
    after_cr: bool,
}

impl Default for EventSize {
    fn default() -> Self {
        EventSize {
            event: 0,
            line_empty: true,
            after_cr: false,
        }
    }
}

impl EventSize {
    /// Takes a chunk; whether an event in it (the one being received included) grew past
    /// `bound` bytes.
    ///
    /// No event of a chunk is larger than the one being received plus the whole chunk,
    /// so a chunk that cannot reach the bound is not walked line by line (a stream's
    /// chunk holds dozens of line ends, each a search of its own): only its last line end
    /// is looked for, and when it ends a blank line the event being received is what
    /// follows it. Otherwise, and near the bound, every line end is read ([`Self::take`]).
    fn passes(&mut self, chunk: &[u8], bound: u64) -> bool {
        if self.event.saturating_add(chunk.len() as u64) <= bound && self.skip(chunk) {
            return false;
        }
        self.take(chunk) > bound
    }

    /// The state after `chunk` when its last line end ends a blank line that lies wholly
    /// within it (then nothing before it matters); `false`, the state untouched, when it
    /// does not.
    fn skip(&mut self, chunk: &[u8]) -> bool {
        let Some(last) = memchr::memrchr2(b'\n', b'\r', chunk) else {
            return false;
        };
        // The line end's first byte (a CRLF's CR), and whether a line end comes right
        // before it: the line it ends is then blank.
        let first = match chunk[last] == b'\n' && last > 0 && chunk[last - 1] == b'\r' {
            true => last - 1,
            false => last,
        };
        if first == 0 || !matches!(chunk[first - 1], b'\n' | b'\r') {
            return false;
        }
        let rest = (chunk.len() - last - 1) as u64;
        self.event = rest;
        self.line_empty = rest == 0;
        self.after_cr = rest == 0 && chunk[last] == b'\r';
        true
    }

    /// Takes a chunk line end by line end; gives the largest size the event being
    /// received reached in it.
    fn take(&mut self, mut chunk: &[u8]) -> u64 {
        let mut largest = 0;
        while !chunk.is_empty() {
            if self.after_cr && chunk[0] == b'\n' {
                // The LF of a CRLF (counted with its CR, as one line end).
                self.after_cr = false;
                chunk = &chunk[1..];
                continue;
            }
            self.after_cr = false;
            let Some(at) = memchr::memchr2(b'\n', b'\r', chunk) else {
                self.line_empty = false;
                self.event += chunk.len() as u64;
                break;
            };
            self.event += at as u64 + 1;
            largest = largest.max(self.event);
            if self.line_empty && at == 0 {
                // A blank line: the event ends.
                self.event = 0;
            }
            self.line_empty = true;
            self.after_cr = chunk[at] == b'\r';
            chunk = &chunk[at + 1..];
        }
        largest.max(self.event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits(total: u64, event: u64) -> ReplyLimits {
        ReplyLimits {
            max_reply_bytes: total,
            max_stream_bytes: total,
            max_event_bytes: event,
            max_error_body_bytes: 16,
        }
    }

    #[test]
    fn events_are_measured_between_blank_lines_with_every_line_end() {
        for end in ["\n", "\r\n", "\r"] {
            let event = format!("data: 0123456789{end}{end}");
            let stream = event.repeat(100);
            for piece in [1, 2, 3, 7, stream.len()] {
                // One event is 16 or 18 bytes: a bound of 18 is never passed…
                let mut counter = Counter::new(limits(1 << 20, 18), Reading::Events);
                for chunk in stream.as_bytes().chunks(piece) {
                    assert_eq!(counter.take(chunk), None, "{end:?} in pieces of {piece}");
                }
                // …and two events without their blank line pass it.
                let mut counter = Counter::new(limits(1 << 20, 18), Reading::Events);
                let joined = format!("data: 0123456789{end}data: 0123456789{end}{end}");
                let passed = joined
                    .as_bytes()
                    .chunks(piece)
                    .find_map(|c| counter.take(c));
                assert_eq!(
                    passed,
                    Some(ReplyBound::Event),
                    "{end:?} in pieces of {piece}"
                );
            }
        }
    }

    /// The state an [`EventSize`] holds, to compare two.
    fn state(e: &EventSize) -> (u64, bool, bool) {
        (e.event, e.line_empty, e.after_cr)
    }

    proptest! {
        /// A chunk skipped by its last line end leaves the state a walk over every line
        /// end leaves, and a bound is passed where the walk passes it: any line ends
        /// (LF, CR, CRLF, split across chunks), any chunks, any bound.
        #[test]
        fn a_skipped_chunk_counts_as_every_line_end_read(
            stream in prop::collection::vec(
                prop_oneof![Just(b'x'), Just(b'\n'), Just(b'\r')], 0..300),
            cuts in prop::collection::vec(1usize..40, 1..40),
            bound in prop_oneof![Just(u64::MAX), 0u64..60],
        ) {
            let (mut skipping, mut walking) = (EventSize::default(), EventSize::default());
            let mut rest = &stream[..];
            for cut in cuts.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (chunk, after) = rest.split_at((*cut).min(rest.len()));
                rest = after;
                let passed = walking.take(chunk) > bound;
                prop_assert_eq!(skipping.passes(chunk, bound), passed);
                prop_assert_eq!(state(&skipping), state(&walking));
            }
        }
    }

    /// The chunks of a stream (dozens of events each) are skipped, not walked.
    #[test]
    fn a_stream_of_whole_events_is_skipped_chunk_by_chunk() {
        for end in ["\n", "\r\n", "\r"] {
            let chunk = format!("data: {{\"a\":1}}{end}{end}").repeat(20);
            let mut e = EventSize::default();
            for _ in 0..3 {
                assert!(e.skip(chunk.as_bytes()), "{end:?}");
                assert_eq!(state(&e), (0, true, end == "\r"), "{end:?}");
            }
            // An event cut after its data line is not: its blank line is to come.
            let cut = format!("{chunk}data: 1{end}");
            assert!(!e.skip(cut.as_bytes()), "{end:?}");
        }
    }

    #[test]
    fn one_endless_line_passes_the_event_bound_as_it_grows() {
        let mut counter = Counter::new(limits(1 << 30, 1000), Reading::Events);
        let chunk = [b'x'; 100];
        // 1,000 bytes are within the bound; the 11th chunk passes it.
        let passed_at = (1..100).find(|_| counter.take(&chunk).is_some());
        assert_eq!(passed_at, Some(11));
    }

    #[test]
    fn the_head_is_the_first_bytes_of_the_chunks() {
        let chunks = vec![Bytes::from(vec![b'a'; 40 << 10]); 3];
        assert_eq!(head_of(&chunks).len(), HEAD_KEPT);
        assert_eq!(head_of(&chunks[..1]).len(), 40 << 10);
        assert!(head_of(&[]).is_empty());
    }

    #[test]
    fn the_total_is_the_stream_bound_for_events_and_the_reply_bound_whole() {
        let mut counter = Counter::new(limits(100, 1000), Reading::Events);
        assert_eq!(counter.take(&[b'\n'; 100]), None);
        assert_eq!(counter.take(b"\n"), Some(ReplyBound::Stream));
        let mut counter = Counter::new(limits(100, 1000), Reading::Events);
        counter.read_whole();
        assert_eq!(counter.announced(Some(100)), None);
        assert_eq!(counter.announced(Some(101)), Some(ReplyBound::Reply));
        assert_eq!(counter.take(&[b'x'; 101]), Some(ReplyBound::Reply));
        let e = counter.error("b", ReplyBound::Reply).to_string();
        assert!(
            e.contains("a reply body past its bound of 100 bytes (`max_reply_bytes`)"),
            "{e}"
        );
    }
}

//! A passed-through stream read as it passes, event by event as [`super::pass`] frames
//! them: the dialect's own decoder on the events relayed, keeping only what the call
//! needs — whether output began (before it a failure may be asked again), how much was
//! relayed (billed if the client leaves), the latest usage, the finish, the response id,
//! the provider's error event and the end marker.
//!
//! A plain delta of text or thinking — most of a stream's events — is judged by a look
//! at its bytes ([`super::scan`]) instead of being decoded: only the events that carry
//! something else (the start, tool calls, usage, the finish, errors) are parsed. The
//! record derives the reply from the bytes it kept when it is read (record format 3).

use super::scan;
use crate::meter::SeenSoFar;
use switchyard::{Dialect, FinishReason, Usage};
use switchyard_wire::sse::Seen;
use switchyard_wire::{codec, DecodeError, Event, StreamDecoder, StreamError};

/// How the watch read an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Judged {
    /// Given to the dialect's decoder.
    Decoded,
    /// A plain delta, judged by its bytes: never one to leave out, and its text counted.
    /// With its shape when it has the memo's: the same bytes around its one string as
    /// every other delta of that shape.
    Plain(Option<Shape>),
}

/// A plain delta's shape: the number the watch gave it, and where the delta's one string
/// stands in its data (its opening quote and its closing one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    pub number: u64,
    pub literal: (usize, usize),
}

/// What a stream has shown so far.
pub(super) struct Watch {
    dialect: Dialect,
    decoder: Box<dyn StreamDecoder>,
    /// Plain deltas are scanned, not decoded (off only to test the scan against the
    /// decoder).
    scanning: bool,
    /// Events read so far (the first is always decoded: it starts the stream).
    events: usize,
    /// The shape of the last plain delta judged in full, which the next ones repeat.
    memo: Option<scan::Memo>,
    /// The number of the memo's shape (each new one is the next): what the pass keys
    /// the shape as written by ([`Judged::Plain`]).
    shape: u64,
    /// Output began (any text, thinking or tool call event): from here a failure is never
    /// asked again, as for a call through the library.
    pub began: bool,
    /// An answer was seen: text that is not empty, or a tool call.
    pub answered: bool,
    /// Bytes of text, thinking and tool arguments seen (what a client that leaves is
    /// billed on: bytes ÷ 4 is nearer a non-Latin text's tokens than characters ÷ 4).
    pub output_bytes: usize,
    /// The latest usage reported.
    pub usage: Option<Usage>,
    /// The finish, once reported.
    pub finish: Option<FinishReason>,
    /// The stream's response id (a Responses `response.failed` names it).
    pub response_id: Option<String>,
    /// The error the provider reported inside the stream.
    pub error: Option<StreamError>,
}

impl Watch {
    /// Watches a stream of `dialect`.
    pub(super) fn new(dialect: Dialect) -> Self {
        Watch {
            dialect,
            decoder: codec(dialect).stream_decoder(),
            scanning: true,
            events: 0,
            memo: None,
            shape: 0,
            began: false,
            answered: false,
            output_bytes: 0,
            usage: None,
            finish: None,
            response_id: None,
            error: None,
        }
    }

    /// Reads one event: given to the decoder, or judged a plain delta by its bytes. An
    /// error is a stream the dialect does not allow (or, from some decoders, the
    /// provider's error object).
    pub(super) fn event(&mut self, event: Seen<'_>) -> Result<Judged, DecodeError> {
        self.events += 1;
        if self.scanning && self.events > 1 {
            let (name, data) = (event.event(), event.data());
            let repeated = self.memo.as_ref().and_then(|m| m.plain(name, data));
            let plain = match repeated {
                Some(plain) => Some(plain),
                None => scan::plain(self.dialect, name, data).inspect(|plain| {
                    self.memo = scan::Memo::of(name, data, plain);
                    self.shape = self.shape.wrapping_add(1);
                }),
            };
            if let Some(plain) = plain {
                self.count(plain);
                let shape = plain.literal.filter(|_| self.memo.is_some());
                return Ok(Judged::Plain(shape.map(|literal| Shape {
                    number: self.shape,
                    literal,
                })));
            }
        }
        let events = self.decoder.event(&event.into_event())?;
        self.note(events);
        Ok(Judged::Decoded)
    }

    /// The event a stream's bytes begin with, when it is a delta of the remembered
    /// shape numbered `shape` whose lines around its data are `head` and `tail` (those
    /// of a delta of that shape already read): read as [`Watch::event`] would read it
    /// once framed, without framing it ([`scan::Memo::leading`]). `None`, nothing read,
    /// when it is not one, or the stream has ended.
    pub(super) fn leading(
        &mut self,
        shape: u64,
        bytes: &[u8],
        head: &[u8],
        tail: &[u8],
    ) -> Option<scan::Leading> {
        if !self.scanning || self.shape != shape || self.ended() {
            return None;
        }
        let leading = self.memo.as_ref()?.leading(bytes, head, tail)?;
        self.events += 1;
        self.count(leading.plain);
        Some(leading)
    }

    /// A plain delta noted as the decoder's thinking and text deltas would be.
    fn count(&mut self, plain: scan::Plain) {
        if let Some(bytes) = plain.thinking {
            self.began = true;
            self.output_bytes += bytes;
        }
        if plain.text > 0 {
            self.began = true;
            self.answered = true;
            self.output_bytes += plain.text;
        }
    }

    /// The bytes ended (their last event read): an error when the stream stopped before
    /// its end marker.
    pub(super) fn finish(&mut self) -> Result<(), DecodeError> {
        let events = self.decoder.finish()?;
        self.note(events);
        Ok(())
    }

    /// The event just read was decoded ([`Judged::Decoded`]) and is a chunk of usage
    /// alone, as the decoder parsed it ([`StreamDecoder::last_was_usage_alone`]).
    pub(super) fn usage_alone(&self) -> bool {
        self.decoder.last_was_usage_alone()
    }

    /// The end marker (or an error event) was seen: nothing after it belongs to the reply.
    pub(super) fn ended(&self) -> bool {
        self.error.is_some() || self.decoder.ended()
    }

    /// Why the stream, now ended, is not an answer (the rule of
    /// [`switchyard_wire::shape::reply_problem`]: neither text nor tool calls unless cut
    /// by the output limit, or no usage).
    pub(super) fn problem(&self) -> Option<&'static str> {
        if !self.answered && self.finish != Some(FinishReason::Length) {
            Some("the reply has neither text nor tool calls")
        } else if self.usage.is_none() {
            Some("the reply has no token usage")
        } else {
            None
        }
    }

    /// What a client that leaves now is billed on.
    pub(super) fn seen(&self) -> SeenSoFar {
        SeenSoFar {
            usage: self.usage,
            output_bytes: self.output_bytes,
        }
    }

    fn note(&mut self, events: Vec<Event>) {
        for event in events {
            let output = !matches!(
                event,
                Event::Start { .. } | Event::Usage(_) | Event::Finish { .. } | Event::Error(_)
            );
            self.began |= output;
            match &event {
                Event::Start { id, .. } => {
                    if self.response_id.is_none() {
                        self.response_id = id.clone();
                    }
                }
                Event::TextDelta { text, .. } => {
                    self.answered |= !text.is_empty();
                    self.output_bytes += text.len();
                }
                Event::ThinkingDelta { text, .. } => {
                    self.output_bytes += text.len();
                }
                Event::ToolCallStart { name, .. } => {
                    self.answered = true;
                    self.output_bytes += name.len();
                }
                Event::ToolCallDelta { arguments, .. } => {
                    self.output_bytes += arguments.len();
                }
                Event::Usage(u) => self.usage = Some(*u),
                Event::Finish { reason, .. } => self.finish = Some(*reason),
                Event::Error(e) => {
                    if self.error.is_none() {
                        self.error = Some(e.clone());
                    }
                }
                Event::TextState { .. }
                | Event::ThinkingState { .. }
                | Event::ToolCallEnd { .. } => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::pass::Pass;
    use super::*;

    impl Watch {
        /// A watch that decodes every event, as the scan must match.
        fn decoding(dialect: Dialect) -> Self {
            Watch {
                scanning: false,
                ..Watch::new(dialect)
            }
        }
    }

    /// Two passes over a stream of `dialect`: one whose watch decodes every event, one
    /// whose watch scans them as the call's does.
    fn passes(dialect: Dialect) -> (Pass, Pass) {
        (
            Pass::watching(Watch::decoding(dialect), dialect),
            Pass::watching(Watch::new(dialect), dialect),
        )
    }

    /// What the call reads of a watch.
    fn facts(w: &Watch) -> String {
        format!(
            "began {} answered {} bytes {} usage {:?} finish {:?} id {:?} error {:?} ended {} problem {:?}",
            w.began, w.answered, w.output_bytes, w.usage, w.finish, w.response_id, w.error,
            w.ended(), w.problem()
        )
    }

    /// Bytes that are not UTF-8 inside a delta's text (read in place, unchecked) count
    /// as the decoder counts them once replaced, in any line ends and however cut.
    #[test]
    fn invalid_utf8_in_a_delta_counts_as_the_decoder_counts_it() {
        let chunk = |text: &[u8]| {
            let mut e = br#"data: {"id":"c","choices":[{"index":0,"delta":{"content":""#.to_vec();
            e.extend_from_slice(text);
            e.extend_from_slice(br#""},"finish_reason":null}]}"#);
            e.extend_from_slice(b"\n\n");
            e
        };
        let mut stream =
            br#"data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant"}}]}"#.to_vec();
        stream.extend_from_slice(b"\n\n");
        for text in [&b"ok"[..], b"a\xffb", b"\xe6\x97", b"\xe6\x97\xa5"] {
            stream.extend(chunk(text));
        }
        for size in [1, 5, stream.len()] {
            let (mut decoding, mut scanning) = passes(Dialect::Chat);
            for piece in stream.chunks(size) {
                decoding.push(piece).unwrap();
                scanning.push(piece).unwrap();
                assert_eq!(
                    facts(&decoding.watch),
                    facts(&scanning.watch),
                    "in pieces of {size}"
                );
            }
            // "ok", "a�b", "�" and "日": each replacement character is three bytes.
            assert_eq!(scanning.watch.output_bytes, 2 + 5 + 3 + 3);
        }
    }

    /// A delta whose data is not JSON — two data lines of one event, bytes after its
    /// object — is refused by a scanning watch as the decoder refuses it, the first of a
    /// stream or one after deltas of the same shape, in chat and in Messages.
    #[test]
    fn a_delta_that_is_not_json_is_refused_as_the_decoder_refuses_it() {
        let chat = |text: &str| {
            format!("data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}")
        };
        let role =
            "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}";
        let messages = |text: &str| {
            format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}")
        };
        let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}";
        for (dialect, first, delta) in [
            (
                Dialect::Chat,
                role.to_string(),
                &chat as &dyn Fn(&str) -> String,
            ),
            (Dialect::Messages, start.to_string(), &messages),
        ] {
            for bad in [
                format!("{}\ndata: [DONE]", delta("b")),
                format!("{} x", delta("b")),
                format!("{}\ndata: {}", delta("b"), &delta("c")[6..]),
            ] {
                for before in [0, 3] {
                    let mut stream = format!("{first}\n\n");
                    for _ in 0..before {
                        stream.push_str(&format!("{}\n\n", delta("a")));
                    }
                    stream.push_str(&format!("{bad}\n\n"));
                    let (mut decoding, mut scanning) = passes(dialect);
                    let (d, s) = (
                        decoding.push(stream.as_bytes()),
                        scanning.push(stream.as_bytes()),
                    );
                    assert!(d.is_err(), "{stream}");
                    assert!(s.is_err(), "{stream}");
                    assert_eq!(facts(&decoding.watch), facts(&scanning.watch), "{stream}");
                }
            }
        }
    }

    /// A scanning watch tells the call what a decoding one tells it, at every chunk,
    /// for every stream fixture of every dialect, however the bytes were cut.
    #[test]
    fn a_scanning_watch_sees_what_a_decoding_one_sees() {
        for (path, dialect, raw) in super::super::pass::stream_fixtures() {
            for size in [1, 7, 64, raw.len()] {
                let (mut decoding, mut scanning) = passes(dialect);
                for chunk in raw.chunks(size) {
                    if decoding.watch.ended() {
                        break;
                    }
                    let (d, s) = (decoding.push(chunk), scanning.push(chunk));
                    assert_eq!(
                        d.is_err(),
                        s.is_err(),
                        "{} in chunks of {size}",
                        path.display()
                    );
                    assert_eq!(
                        facts(&decoding.watch),
                        facts(&scanning.watch),
                        "{} in chunks of {size}",
                        path.display()
                    );
                    if d.is_err() {
                        break;
                    }
                }
                let (d, s) = (decoding.finish().is_err(), scanning.finish().is_err());
                assert_eq!(d, s, "{}", path.display());
                assert_eq!(
                    facts(&decoding.watch),
                    facts(&scanning.watch),
                    "{} at its end",
                    path.display()
                );
            }
        }
    }
}

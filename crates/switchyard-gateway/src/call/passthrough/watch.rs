//! A passed-through stream read as it passes: the dialect's own decoder on the bytes
//! relayed, keeping only what the call needs — whether output began (before it a failure
//! may be asked again), how much was relayed (billed if the client leaves), the latest
//! usage, the finish, the response id, the provider's error event and the end marker.
//!
//! When the call's record does not take the stream's events ([`Watch::scanning`]), a
//! plain delta of text or thinking — most of a stream's events — is judged by a look at
//! its bytes ([`super::scan`]) instead of being decoded: only the events that carry
//! something else (the start, tool calls, usage, the finish, errors) are parsed.

use super::scan;
use crate::meter::SeenSoFar;
use switchyard::{Dialect, FinishReason, Usage};
use switchyard_wire::sse::{SseEvent, SseParser};
use switchyard_wire::{codec, DecodeError, Event, StreamDecoder, StreamError};

/// What a stream has shown so far.
pub(super) struct Watch {
    dialect: Dialect,
    sse: SseParser,
    decoder: Box<dyn StreamDecoder>,
    /// Plain deltas are scanned, not decoded (the record keeps no events).
    scanning: bool,
    /// Events read so far (the first is always decoded: it starts the stream).
    events: usize,
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
    /// Every event decoded, for the call's record: its reply is assembled from them on
    /// the store's thread instead of decoding the bytes a second time. `None` once a
    /// chunk did not decode, where the record keeps no reply (as a decoding of the
    /// bytes would give none).
    kept: Option<Vec<Event>>,
    /// Bytes read, and the most whose events are kept (the record's bound on its bytes,
    /// past which the record's reply is decoded from the bytes it kept instead).
    read: usize,
    keep_limit: usize,
    finished: bool,
}

impl Watch {
    /// Watches a stream of `dialect`, keeping its events for the record while the stream
    /// is at most `keep_limit` bytes.
    pub(super) fn keeping_at_most(dialect: Dialect, keep_limit: usize) -> Self {
        Watch {
            keep_limit,
            ..Watch::new(dialect)
        }
    }

    /// Watches a stream of `dialect` for a call whose record takes no events: plain
    /// deltas are scanned, not decoded.
    pub(super) fn scanning(dialect: Dialect) -> Self {
        Watch {
            scanning: true,
            kept: None,
            ..Watch::new(dialect)
        }
    }

    /// Watches a stream of `dialect`.
    pub(super) fn new(dialect: Dialect) -> Self {
        Watch {
            dialect,
            sse: SseParser::new(),
            decoder: codec(dialect).stream_decoder(),
            scanning: false,
            events: 0,
            began: false,
            answered: false,
            output_bytes: 0,
            usage: None,
            finish: None,
            response_id: None,
            error: None,
            kept: Some(Vec::new()),
            read: 0,
            keep_limit: usize::MAX,
            finished: false,
        }
    }

    /// Reads the next chunk; an error is a stream the dialect does not allow (or, from
    /// some decoders, the provider's error object).
    pub(super) fn push(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        self.read = self.read.saturating_add(bytes.len());
        if self.read > self.keep_limit {
            self.kept = None;
        }
        for event in self.sse.push(bytes) {
            self.event(&event).inspect_err(|_| self.kept = None)?;
        }
        Ok(())
    }

    fn event(&mut self, event: &SseEvent) -> Result<(), DecodeError> {
        self.events += 1;
        if self.scanning && self.events > 1 {
            if let Some(plain) = scan::plain(self.dialect, event) {
                // As the decoder's thinking and text deltas would be noted.
                if let Some(bytes) = plain.thinking {
                    self.began = true;
                    self.output_bytes += bytes;
                }
                if plain.text > 0 {
                    self.began = true;
                    self.answered = true;
                    self.output_bytes += plain.text;
                }
                return Ok(());
            }
        }
        let events = self.decoder.event(event)?;
        self.note(events);
        Ok(())
    }

    /// The bytes ended: an error when the stream stopped before its end marker.
    pub(super) fn finish(&mut self) -> Result<(), DecodeError> {
        self.finished = true;
        if let Some(last) = self.sse.finish() {
            self.event(&last)?;
        }
        let events = self.decoder.finish()?;
        self.note(events);
        Ok(())
    }

    /// The events of the stream for its record, closed as a decoding of the bytes
    /// received would close them (the decoder's closing events when the stream stopped
    /// before its end, its refusal ignored). Taken once.
    pub(super) fn take_events(&mut self) -> Option<Vec<Event>> {
        let mut events = self.kept.take()?;
        if !self.finished {
            self.finished = true;
            if let Some(last) = self.sse.finish() {
                if let Ok(more) = self.decoder.event(&last) {
                    events.extend(more);
                }
            }
            if let Ok(rest) = self.decoder.finish() {
                events.extend(rest);
            }
        }
        Some(events)
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
            if let Some(kept) = &mut self.kept {
                kept.push(event);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::build::assemble;
    use crate::store::decode_reply;

    /// The reply a record assembles from the watch's events is the one a decoding of
    /// the bytes received gives, for whole, cut and failed streams of every dialect
    /// that streams SSE, however the bytes were cut into chunks.
    #[test]
    fn the_kept_events_give_the_reply_the_bytes_give() {
        let fixtures = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../switchyard-wire/tests/fixtures"
        );
        let mut seen = 0;
        for (folder, dialect) in [
            ("chat", Dialect::Chat),
            ("messages", Dialect::Messages),
            ("gemini", Dialect::Gemini),
        ] {
            for entry in std::fs::read_dir(format!("{fixtures}/{folder}")).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_none_or(|e| e != "sse") {
                    continue;
                }
                let raw = std::fs::read(&path).unwrap();
                for size in [1, 7, 64, raw.len()] {
                    let mut watch = Watch::new(dialect);
                    for chunk in raw.chunks(size) {
                        // As the relay does: nothing is read after the end, or an error.
                        if watch.ended() || watch.push(chunk).is_err() {
                            break;
                        }
                    }
                    let kept = watch.take_events().map(|e| assemble(&e));
                    let decoded = decode_reply(dialect, &raw, true).map(|r| r.without_raw());
                    assert_eq!(kept, decoded, "{} in chunks of {size}", path.display());
                }
                seen += 1;
            }
        }
        assert!(
            seen >= 10,
            "only {seen} stream fixtures found under {fixtures}"
        );
    }

    /// What the call reads of a watch.
    fn facts(w: &Watch) -> String {
        format!(
            "began {} answered {} bytes {} usage {:?} finish {:?} id {:?} error {:?} ended {} problem {:?}",
            w.began, w.answered, w.output_bytes, w.usage, w.finish, w.response_id, w.error,
            w.ended(), w.problem()
        )
    }

    /// A scanning watch tells the call what a decoding one tells it, at every chunk,
    /// for every stream fixture of every dialect, however the bytes were cut.
    #[test]
    fn a_scanning_watch_sees_what_a_decoding_one_sees() {
        let fixtures = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../switchyard-wire/tests/fixtures"
        );
        let mut seen = 0;
        for (folder, dialect) in [
            ("chat", Dialect::Chat),
            ("messages", Dialect::Messages),
            ("responses", Dialect::Responses),
            ("gemini", Dialect::Gemini),
        ] {
            let Ok(dir) = std::fs::read_dir(format!("{fixtures}/{folder}")) else {
                continue;
            };
            for entry in dir {
                let path = entry.unwrap().path();
                if path.extension().is_none_or(|e| e != "sse") {
                    continue;
                }
                let raw = std::fs::read(&path).unwrap();
                for size in [1, 7, 64, raw.len()] {
                    let (mut decoding, mut scanning) =
                        (Watch::new(dialect), Watch::scanning(dialect));
                    for chunk in raw.chunks(size) {
                        if decoding.ended() {
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
                            facts(&decoding),
                            facts(&scanning),
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
                        facts(&decoding),
                        facts(&scanning),
                        "{} at its end",
                        path.display()
                    );
                }
                seen += 1;
            }
        }
        assert!(
            seen >= 15,
            "only {seen} stream fixtures found under {fixtures}"
        );
    }
}

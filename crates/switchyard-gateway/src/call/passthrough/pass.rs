//! One pass over a passed-through stream's bytes: each event is framed once, where it
//! lies (`sse::next_event`), read by the [`Watch`] and written for the client in the
//! same step — the model named as the client named it ([`InStream`]), the usage-only
//! chunk the client did not ask for left out, every other byte as it came. Before, the
//! watch, the renaming and the usage's removal each framed the events again.
//!
//! The bytes of an event not yet complete wait for the rest; an event the stream never
//! completes is never written (the relay drops it rather than send half). Events after
//! the end marker are written but not watched: nothing after it belongs to the reply.
//!
//! Most of a stream is deltas of one shape, the same bytes around another string each
//! time: the watch judges them by that shape, and the pass writes each as it wrote the
//! shape's first ([`Written`]). A delta of the shape last written, with that delta's
//! lines, is read and written so before it is framed at all ([`Pass::repeat`]).

use super::watch::{Judged, Shape, Watch};
use crate::call::client_model::InStream;
use bytes::{Bytes, BytesMut};
use memchr::memmem::Finder;
use serde_json::value::RawValue;
use std::sync::LazyLock;
use switchyard::Dialect;
use switchyard_wire::json::is_empty_raw_array;
use switchyard_wire::sse::{closes_event, next_event, InPlace, Seen, SseEvent, SseParser};
use switchyard_wire::DecodeError;

/// A stream's bytes read and written in one pass.
pub(super) struct Pass {
    /// What the stream has shown so far.
    pub watch: Watch,
    names: InStream,
    /// Leave out the chat usage-only chunk (the client did not ask for usage).
    hide_usage: bool,
    /// Cuts the bytes into whole events.
    frames: Frames,
    /// The client's bytes of the events read and not yet taken.
    out: Vec<u8>,
    /// Where in `out` the last event written begins.
    last: usize,
    /// The bytes ended ([`Pass::finish`] ran).
    finished: bool,
    /// The last plain delta's shape as written for the client.
    written: Option<Written>,
    /// Plain deltas of one shape written as the shape's first was (off only to test
    /// against [`InStream`]'s writing of each).
    repeating: bool,
}

/// A plain delta's shape ([`Shape`]) as written for the client. A stream repeats one
/// shape delta after delta; each is then written as the shape's first was, around its own
/// string, instead of being searched again for the model to name: the bytes around the
/// string are the same (the watch compared its data, [`Pass::delta`] its lines), and
/// naming the model changes only bytes outside it.
struct Written {
    shape: u64,
    /// The event's bytes before its data and after it (its lines' `data:` and end).
    head: Vec<u8>,
    tail: Vec<u8>,
    /// What the client was written before the string and after it; `None` when the
    /// bytes after it did not go out as they came (the model named after the text),
    /// and each delta of the shape is written through [`InStream`].
    around: Option<(Vec<u8>, Vec<u8>)>,
}

impl Written {
    /// The shape of `event`, whose data is `event[data]` and its one string
    /// `event[string]` (quotes included), as `out` wrote it.
    fn of(
        shape: u64,
        event: &[u8],
        data: (usize, usize),
        string: (usize, usize),
        out: &[u8],
    ) -> Written {
        let (text, after) = (&event[string.0..string.1], &event[string.1..]);
        let around = out
            .strip_suffix(after)
            .and_then(|o| o.strip_suffix(text))
            .map(|before| (before.to_vec(), after.to_vec()));
        Written {
            shape,
            head: event[..data.0].to_vec(),
            tail: event[data.1..].to_vec(),
            around,
        }
    }
}

impl Pass {
    /// A pass over a stream of `dialect`, naming the model `requested`.
    pub(super) fn new(dialect: Dialect, requested: &str, hide_usage: bool) -> Pass {
        Pass::with(Watch::new(dialect), dialect, requested, hide_usage)
    }

    fn with(watch: Watch, dialect: Dialect, requested: &str, hide_usage: bool) -> Pass {
        Pass {
            watch,
            names: InStream::new(dialect, requested),
            hide_usage,
            frames: Frames::default(),
            out: Vec::new(),
            last: 0,
            finished: false,
            written: None,
            repeating: true,
        }
    }

    /// Reads the next chunk: every event it completes is watched (until the end marker)
    /// and written. An error is a stream the dialect does not allow (or, from some
    /// decoders, the provider's error object); what it leaves written is not to be sent.
    pub(super) fn push(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        // Room for the chunk's events as written (a renamed model may be longer), made
        // once rather than grown event by event.
        self.out.reserve(bytes.len() + bytes.len() / 8 + 64);
        let mut frames = std::mem::take(&mut self.frames);
        let read = frames.push(bytes, |whole| self.events(whole));
        self.frames = frames;
        read
    }

    /// Whole events' bytes, event by event: a delta of the last shape written, with
    /// that delta's lines, is read and written without being framed ([`Pass::repeat`]);
    /// any other event is framed ([`first_event`]) and read as it was framed.
    fn events(&mut self, mut bytes: &[u8]) -> Result<(), DecodeError> {
        while !bytes.is_empty() {
            if let Some(end) = self.repeat(bytes) {
                bytes = &bytes[end..];
                continue;
            }
            let (end, read) = first_event(bytes);
            let (event, rest) = bytes.split_at(end);
            bytes = rest;
            self.event(event, read)?;
        }
        Ok(())
    }

    /// The event `bytes` begin with, when it is a delta of the shape last written
    /// ([`Written`]) with that delta's lines around its data: the watch reads it by its
    /// string alone ([`Watch::leading`]) and it is written as the shape's first was,
    /// around its own string, as [`Pass::delta`] would once it was framed. Its length.
    fn repeat(&mut self, bytes: &[u8]) -> Option<usize> {
        if !self.repeating {
            return None;
        }
        let written = self.written.as_ref()?;
        let (before, after) = written.around.as_ref()?;
        let leading = self
            .watch
            .leading(written.shape, bytes, &written.head, &written.tail)?;
        let (open, close) = leading.plain.literal?;
        self.last = self.out.len();
        self.out.extend_from_slice(before);
        self.out.extend_from_slice(&bytes[open..=close]);
        self.out.extend_from_slice(after);
        Some(leading.end)
    }

    /// The bytes ended: the last event, if its blank line never came, read and written
    /// as it stands; an error when the stream stopped before its end marker. Only the
    /// first call reads anything.
    pub(super) fn finish(&mut self) -> Result<(), DecodeError> {
        if std::mem::replace(&mut self.finished, true) {
            return Ok(());
        }
        let tail = self.frames.finish();
        let mut rest = &tail[..];
        while leading_blank_line(rest) > 0 {
            let (line, after) = rest.split_at(leading_blank_line(rest));
            self.out.extend_from_slice(line);
            rest = after;
        }
        if !rest.is_empty() {
            self.last = self.out.len();
            self.parsed(rest)?;
        }
        if self.watch.ended() {
            return Ok(());
        }
        self.watch.finish()
    }

    /// The client's bytes written since the last take.
    pub(super) fn take(&mut self) -> Bytes {
        self.last = 0;
        Bytes::from(std::mem::take(&mut self.out))
    }

    /// The bytes written since the last take, without the last event (the end marker
    /// of a stream that ended without an answer).
    pub(super) fn take_all_but_last(&mut self) -> Bytes {
        self.out.truncate(self.last);
        self.take()
    }

    /// Bytes the gateway wrote itself (an error event) as the client reads them.
    pub(super) fn named(&mut self, bytes: Bytes) -> Bytes {
        self.names.events(bytes)
    }

    /// One whole event's bytes, as [`next_event`] read them.
    fn event(&mut self, event: &[u8], read: InPlace<'_>) -> Result<(), DecodeError> {
        match read {
            InPlace::Event(e) => {
                self.last = self.out.len();
                self.one(event, e)
            }
            InPlace::Nothing => {
                self.out.extend_from_slice(event);
                Ok(())
            }
            InPlace::Parse => {
                self.last = self.out.len();
                self.parsed(event)
            }
        }
    }

    /// One event read in place: `e` lies within `event`'s bytes.
    fn one(
        &mut self,
        event: &[u8],
        e: switchyard_wire::sse::EventRef<'_>,
    ) -> Result<(), DecodeError> {
        // Whether the event is a usage-only chunk to hide: as the watch's decoder parsed
        // it, or, for an event after the end (not decoded), by a parse of its own.
        let (judged, usage_alone) = match self.watch.ended() {
            true => (
                Judged::Decoded,
                self.hide_usage && is_usage_only_chunk(e.data),
            ),
            false => {
                let judged = self.watch.event(Seen::InPlace(e))?;
                let decoded = judged == Judged::Decoded;
                (
                    judged,
                    self.hide_usage && decoded && self.watch.usage_alone(),
                )
            }
        };
        debug_assert!(
            !self.hide_usage
                || matches!(judged, Judged::Plain(_))
                || usage_alone == is_usage_only_chunk(e.data),
            "the decoder and the relay's own parse disagree on a usage-only chunk: {:?}",
            String::from_utf8_lossy(e.data)
        );
        let start = e.data.as_ptr() as usize - event.as_ptr() as usize;
        let data = (start, start + e.data.len());
        match judged {
            // A plain delta is never a usage-only chunk.
            Judged::Decoded if usage_alone => {}
            Judged::Plain(Some(shape)) if self.repeating => self.delta(event, data, shape),
            Judged::Decoded | Judged::Plain(_) => {
                self.names.event_into(event, Some(data), &mut self.out)
            }
        }
        Ok(())
    }

    /// A plain delta of the watch's `shape`, whose data is `event[data]`: written as the
    /// shape's first delta was, around its own string, when its lines are that delta's
    /// too.
    fn delta(&mut self, event: &[u8], data: (usize, usize), shape: Shape) {
        let string = (data.0 + shape.literal.0, data.0 + shape.literal.1 + 1);
        let same = |w: &&Written| {
            w.shape == shape.number
                && event[..data.0] == w.head[..]
                && event[data.1..] == w.tail[..]
        };
        match self.written.as_ref().filter(same) {
            Some(Written {
                around: Some((before, after)),
                ..
            }) => {
                self.out.extend_from_slice(before);
                self.out.extend_from_slice(&event[string.0..string.1]);
                self.out.extend_from_slice(after);
            }
            Some(_) => self.names.event_into(event, Some(data), &mut self.out),
            None => {
                let from = self.out.len();
                self.names.event_into(event, Some(data), &mut self.out);
                let written = Written::of(shape.number, event, data, string, &self.out[from..]);
                self.written = Some(written);
            }
        }
    }

    /// An event of a shape only the parser reads (several data lines, an `id:`, lone CR
    /// line ends), or a stream's last without its blank line.
    fn parsed(&mut self, event: &[u8]) -> Result<(), DecodeError> {
        let mut parser = SseParser::new();
        let mut parsed = parser.push(event);
        parsed.extend(parser.finish());
        // Several events when lone CRs end their lines; none is watched after the end.
        for e in &parsed {
            if self.watch.ended() {
                break;
            }
            self.watch.event(Seen::Parsed(e.clone()))?;
        }
        let hidden = |e: &SseEvent| is_usage_only_chunk(e.data.as_bytes());
        if self.hide_usage && parsed.iter().any(hidden) {
            let kept: Vec<_> = parsed.into_iter().filter(|e| !hidden(e)).collect();
            self.names.write_parsed(&kept, &mut self.out);
        } else {
            self.names.event_into(event, None, &mut self.out);
        }
        Ok(())
    }
}

/// A stream's bytes cut into whole events, each read once where it lies ([`next_event`]);
/// the bytes of an event not yet complete wait for the rest.
#[derive(Default)]
struct Frames {
    tail: BytesMut,
}

impl Frames {
    /// Hands `f` the whole events `bytes` completes, as one slice ([`Pass::events`] cuts
    /// it); none when it completes none. Linear in the bytes however long an event is
    /// (one bounded by `max_event_bytes` may come in thousands of chunks): the tail
    /// grows in place, and only the new bytes are searched for an event's end.
    fn push<E>(
        &mut self,
        bytes: &[u8],
        mut f: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.tail.is_empty() {
            let end = last_boundary(bytes).unwrap_or(0);
            self.tail.extend_from_slice(&bytes[end..]);
            return match end {
                0 => Ok(()),
                _ => f(&bytes[..end]),
            };
        }
        // The tail holds no event's end: a blank line ending in the new bytes begins at
        // most three bytes before them (`\r\n\r\n`).
        let from = self.tail.len().saturating_sub(3);
        self.tail.extend_from_slice(bytes);
        match last_boundary_from(&self.tail, from) {
            Some(end) => {
                let whole = self.tail.split_to(end);
                f(&whole)
            }
            None => Ok(()),
        }
    }

    /// The bytes ended: what is left of them, the last event without its blank line.
    fn finish(&mut self) -> BytesMut {
        std::mem::take(&mut self.tail)
    }
}

/// Each event of `bytes`, which end with a whole event, handed to `f` as it was read
/// (the pass reads them as [`Pass::events`]).
#[cfg(test)]
fn each_event<E>(
    mut bytes: &[u8],
    mut f: impl FnMut(&[u8], InPlace<'_>) -> Result<(), E>,
) -> Result<(), E> {
    while !bytes.is_empty() {
        let (end, read) = first_event(bytes);
        let (event, rest) = bytes.split_at(end);
        bytes = rest;
        f(event, read)?;
    }
    Ok(())
}

/// The length of the event `bytes` (not empty, ending with a whole event) begin with,
/// and how it was read: a blank line first is a slice of its own ([`leading_blank_line`]),
/// read as nothing, as are blank lines with nothing after them.
fn first_event(bytes: &[u8]) -> (usize, InPlace<'_>) {
    let blank = leading_blank_line(bytes);
    if blank > 0 {
        return (blank, InPlace::Nothing);
    }
    // Blank lines and nothing else.
    next_event(bytes).unwrap_or((bytes.len(), InPlace::Nothing))
}

/// The length of the blank line `bytes` begin with (LF or CRLF), 0 for none. Bytes are
/// cut into events where one ends, as seen with the bytes before the cut ([`Frames`]);
/// a blank line just after the cut closes no event seen from its own bytes, so it is a
/// slice of its own wherever it stands first, and goes out as it came: the event after it
/// is then read, and written, the same however the stream was cut.
fn leading_blank_line(bytes: &[u8]) -> usize {
    match bytes {
        [b'\n', ..] => 1,
        [b'\r', b'\n', ..] => 2,
        _ => 0,
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

/// A chunk of no choices and a usage object: `{"choices": [], "usage": {…}, …}`.
fn is_usage_only_chunk(data: &[u8]) -> bool {
    /// The two fields looked at, borrowed as raw JSON (the rest skipped, not built).
    #[derive(serde::Deserialize)]
    struct Chunk<'a> {
        #[serde(borrow, default)]
        choices: Option<&'a RawValue>,
        #[serde(borrow, default)]
        usage: Option<&'a RawValue>,
    }
    // Searched in the bytes before they are checked as text: most events name no usage.
    static USAGE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"usage\""));
    let Some(data) = USAGE
        .find(data)
        .and_then(|_| std::str::from_utf8(data).ok())
    else {
        return false;
    };
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

/// Every stream fixture of the four dialects (the wire crate's): its path, its dialect
/// and its bytes; at least 15 of them, or the test that reads them fails.
#[cfg(test)]
pub(super) fn stream_fixtures() -> Vec<(std::path::PathBuf, Dialect, Vec<u8>)> {
    let fixtures = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../switchyard-wire/tests/fixtures"
    );
    let mut found = Vec::new();
    for (folder, dialect) in [
        ("chat", Dialect::Chat),
        ("messages", Dialect::Messages),
        ("responses", Dialect::Responses),
        ("gemini", Dialect::Gemini),
    ] {
        for entry in std::fs::read_dir(format!("{fixtures}/{folder}")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "sse") {
                let raw = std::fs::read(&path).unwrap();
                found.push((path, dialect, raw));
            }
        }
    }
    assert!(
        found.len() >= 15,
        "only {} stream fixtures under {fixtures}",
        found.len()
    );
    found
}

#[cfg(test)]
impl Pass {
    /// A pass whose watch is `watch` (a decoding one, to test the scan against).
    pub(super) fn watching(watch: Watch, dialect: Dialect) -> Pass {
        Pass::with(watch, dialect, "client/model", false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_wire::sse::first_event_end;

    /// A usage-only chunk, as the relay's own parse judges an event after the end and
    /// as the chat decoder judges the events it decodes (where it accepts them): the two
    /// agree on every case, odd types, repeated keys and an error beside the usage among
    /// them. (Every pass in a test build also checks the two agree on each decoded event.)
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
            (r#"{"choices":[],"usage":5}"#, true),
            (r#"{"choices":[],"usage":[]}"#, true),
            (r#"{"choices":[],"usage":{"prompt_tokens":"x"}}"#, true),
            (r#"{"choices":[],"usage":{},"error":{"message":"m"}}"#, true),
            (
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[]}}],"usage":{}}"#,
                false,
            ),
            (r#"{"choices":{},"usage":{}}"#, false),
            (r#"  {"choices":[],"usage":{}}  "#, true),
        ] {
            assert_eq!(is_usage_only_chunk(data.as_bytes()), expected, "{data}");
            let mut decoder = switchyard_wire::codec(Dialect::Chat).stream_decoder();
            let event = SseEvent {
                data: data.to_string(),
                ..Default::default()
            };
            if decoder.event(&event).is_ok() {
                assert_eq!(decoder.last_was_usage_alone(), expected, "{data}");
            }
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
        // As `push` searches: the bytes before a cut hold no boundary (so only the last
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

    /// What the parser makes of `bytes` read whole.
    fn parsed(bytes: &[u8]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = parser.push(bytes);
        events.extend(parser.finish());
        events
    }

    proptest::proptest! {
        /// The events a stream's bytes are cut into, in chunks of any size, and what is
        /// left at its end, are the events the parser yields from the bytes read whole.
        #[test]
        fn frames_yield_the_parsers_events(bytes in chat_stream(), size in 1usize..40) {
            let mut frames = Frames::default();
            let mut read = Vec::new();
            for chunk in bytes.chunks(size) {
                frames.push(chunk, |whole| {
                    each_event(whole, |event, how| {
                        match how {
                            InPlace::Event(e) => read.push(e.to_event()),
                            InPlace::Nothing => proptest::prop_assert_eq!(parsed(event), vec![]),
                            InPlace::Parse => read.extend(parsed(event)),
                        }
                        Ok(())
                    })
                })?;
            }
            read.extend(parsed(&frames.finish()));
            proptest::prop_assert_eq!(read, parsed(&bytes));
        }
    }

    const ROLE: &str =
        "data: {\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}";
    const TEXT: &str =
        "data: {\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}";
    const USAGE_ONLY: &str =
        "data: {\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}";
    const WITH_USAGE: &str =
        "data: {\"model\":\"up\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}";
    const DONE: &str = "data: [DONE]";

    /// A chat delta of `text` (JSON-escaped here) whose model comes first, as TEXT's.
    fn delta(text: &str) -> String {
        let text = serde_json::to_string(text).unwrap();
        format!("data: {{\"model\":\"up\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{text}}}}}]}}")
    }

    /// A chat delta of `text` whose model follows its choices.
    fn delta_model_after(text: &str) -> String {
        let text = serde_json::to_string(text).unwrap();
        format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{text}}}}}],\"model\":\"up\"}}")
    }

    /// A stream of `events` with `end` after each line, as one string.
    fn stream(events: &[&str], end: &str) -> String {
        events.iter().map(|e| format!("{e}{end}{end}")).collect()
    }

    #[test]
    fn every_event_is_renamed_and_only_the_usage_only_chunk_left_out_however_cut() {
        let events = [ROLE, TEXT, TEXT, WITH_USAGE, USAGE_ONLY, DONE];
        for end in ["\n", "\r\n"] {
            let input = stream(&events, end);
            let renamed = |s: String| s.replace("\"model\":\"up\"", "\"model\":\"gw/model\"");
            let all = renamed(input.clone());
            let hidden = renamed(stream(&[ROLE, TEXT, TEXT, WITH_USAGE, DONE], end));
            for size in 1..=input.len() {
                assert_eq!(written(&input, size, false), (all.clone(), false), "{size}");
                assert_eq!(
                    written(&input, size, true),
                    (hidden.clone(), false),
                    "{size}"
                );
            }
        }
    }

    #[test]
    fn an_event_never_completed_is_not_written_and_a_last_one_without_its_blank_line_is() {
        // Cut inside an event: the watch refuses the stream, and the half event is not
        // written.
        let whole = stream(&[ROLE, TEXT], "\n");
        let input = format!("{whole}data: {{\"model\":\"up\",\"cho");
        let (out, refused) = written(&input, input.len(), false);
        assert!(refused);
        assert!(!out.contains("\"cho\""), "{out}");
        // A finish then `[DONE]` without its blank line: a whole answer, its last event
        // written as it stands.
        let input = format!("{}{DONE}", stream(&[ROLE, TEXT, WITH_USAGE], "\n"));
        let (out, refused) = written(&input, 7, false);
        assert!(!refused);
        assert!(out.ends_with("data: [DONE]"), "{out}");
    }

    /// What the call reads of a pass's watch.
    fn facts(pass: &Pass) -> String {
        let w = &pass.watch;
        format!(
            "began {} answered {} bytes {} usage {:?} finish {:?} ended {} problem {:?}",
            w.began,
            w.answered,
            w.output_bytes,
            w.usage,
            w.finish,
            w.ended(),
            w.problem()
        )
    }

    /// A pass over all of `input` in pieces of `size`: what it wrote, what its watch
    /// saw, and whether the stream was refused.
    fn in_pieces(input: &[u8], size: usize, hide_usage: bool) -> (Vec<u8>, String, bool) {
        in_pieces_of(Dialect::Chat, input, size, hide_usage)
    }

    /// [`in_pieces`] for a stream of `dialect`.
    fn in_pieces_of(
        dialect: Dialect,
        input: &[u8],
        size: usize,
        hide_usage: bool,
    ) -> (Vec<u8>, String, bool) {
        passed(Pass::new(dialect, "gw/model", hide_usage), input, size)
    }

    /// `pass` over all of `input` in pieces of `size`, as [`in_pieces`].
    fn passed(mut pass: Pass, input: &[u8], size: usize) -> (Vec<u8>, String, bool) {
        let mut out = Vec::new();
        for piece in input.chunks(size) {
            if pass.push(piece).is_err() {
                return (out, facts(&pass), true);
            }
            out.extend_from_slice(&pass.take());
        }
        let refused = pass.finish().is_err();
        out.extend_from_slice(&pass.take());
        (out, facts(&pass), refused)
    }

    /// [`in_pieces`]' output as text, and whether the stream was refused.
    fn written(input: &str, size: usize, hide_usage: bool) -> (String, bool) {
        let (out, _, refused) = in_pieces(input.as_bytes(), size, hide_usage);
        (String::from_utf8(out).unwrap(), refused)
    }

    /// Chat streams of the events a model sends, each line ended in LF, CRLF or a lone
    /// CR, with comments, `id:`, `event:` and `retry:` lines and blank ones among them.
    fn chat_stream() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let event = prop_oneof![
            Just(ROLE.to_string()),
            "[a-z日 \\\"]{0,8}".prop_map(|t| delta(&t)),
            "[a-z ]{0,4}".prop_map(|t| delta_model_after(&t)),
            // A run of deltas of one shape, as a model sends its text.
            proptest::collection::vec("[a-z日 \\\"]{0,4}", 2..6).prop_map(|texts| {
                texts
                    .iter()
                    .map(|t| delta(t))
                    .collect::<Vec<_>>()
                    .join("\n\n")
            }),
            Just(WITH_USAGE.to_string()),
            Just(USAGE_ONLY.to_string()),
            Just(DONE.to_string()),
            Just(": keep-alive".to_string()),
            Just("id: 4".to_string()),
            Just("event: ping".to_string()),
            Just("retry: 100".to_string()),
            Just("data".to_string()),
            Just(String::new()),
        ];
        let end = prop_oneof![4 => Just("\n"), 2 => Just("\r\n"), 1 => Just("\r")];
        // Half the lines close their event (a blank line after them), so that deltas
        // follow one another as a model sends them.
        let line = (event, end, proptest::bool::ANY);
        proptest::collection::vec(line, 0..16).prop_map(|lines| {
            lines
                .into_iter()
                .flat_map(|(line, end, close)| {
                    let blank = if close { end } else { "" };
                    format!("{line}{end}{blank}").into_bytes()
                })
                .collect()
        })
    }

    proptest::proptest! {
        /// However a stream is cut into chunks, the pass writes the same bytes and its
        /// watch sees the same: an event is framed once, from whole bytes, and an
        /// event's end is found in the new bytes only.
        #[test]
        fn the_pass_writes_and_sees_the_same_however_the_stream_is_cut(
            input in chat_stream(),
            size in 1usize..48,
            hide in proptest::bool::ANY,
        ) {
            let whole = in_pieces(&input, input.len().max(1), hide);
            let cut = in_pieces(&input, size, hide);
            // And as each event written through `InStream` is.
            let each = passed(not_repeating(Dialect::Chat, hide), &input, size);
            proptest::prop_assert_eq!(&cut, &each);
            proptest::prop_assert_eq!(whole.2, cut.2);
            if !whole.2 {
                proptest::prop_assert_eq!(whole, cut);
            }
        }
    }

    #[test]
    fn nothing_after_the_end_marker_is_watched_even_among_events_the_parser_reads_together() {
        // Lone CRs end every line: the events up to the first LF blank line are one slice
        // for the parser, the end marker among them.
        let answer = [ROLE, TEXT, WITH_USAGE, DONE]
            .map(|e| format!("{e}\r\r"))
            .concat();
        let after = format!("{answer}{TEXT}\r\r\n\n");
        let (_, whole, refused) = in_pieces(answer.as_bytes(), answer.len(), false);
        assert!(!refused);
        for size in [1, 7, after.len()] {
            let (out, seen, refused) = in_pieces(after.as_bytes(), size, false);
            assert!(!refused);
            assert_eq!(seen, whole, "in pieces of {size}");
            // Written all the same.
            assert_eq!(String::from_utf8(out).unwrap().matches("\"hi\"").count(), 2);
        }
    }

    #[test]
    fn a_blank_line_between_events_goes_out_the_same_however_the_stream_is_cut() {
        // Found by the proptest above: cut right after the third LF, the blank line was
        // copied as it came; read whole, it went to the parser with the event after it
        // (lone CR line ends) and was left out when that event was written again.
        // The same with the blank line left in the tail (the stream's last event without
        // its own), which the pass reads at its end.
        for input in [
            format!("{WITH_USAGE}\n\n\n{ROLE}\r\r{DONE}\n\n"),
            format!("{DONE}\n\n{USAGE_ONLY}\n\n\n{ROLE}\r{ROLE}\n"),
            format!("{DONE}\r\n\r\n{USAGE_ONLY}\r\n\r\n\r\n{ROLE}\r{ROLE}\n"),
        ] {
            let input = input.into_bytes();
            let whole = in_pieces(&input, input.len(), false);
            assert!(!whole.2);
            for size in 1..input.len() {
                assert_eq!(in_pieces(&input, size, false), whole, "in pieces of {size}");
            }
        }
    }

    /// Every stream fixture of the four dialects, cut in pieces of every size up to 64
    /// and then some: what the pass writes and what its watch sees are the same as for
    /// the stream in one piece (the proptests above draw chat streams only).
    #[test]
    fn every_dialects_fixtures_are_written_the_same_however_cut() {
        for (path, dialect, raw) in stream_fixtures() {
            for hide in [false, true] {
                let whole = in_pieces_of(dialect, &raw, raw.len().max(1), hide);
                for size in (1..=64).chain([97, 256, 1024]) {
                    let cut = in_pieces_of(dialect, &raw, size, hide);
                    assert_eq!(whole.2, cut.2, "{} in pieces of {size}", path.display());
                    if !whole.2 {
                        assert_eq!(whole, cut, "{} in pieces of {size}", path.display());
                    }
                }
            }
        }
    }

    /// A pass that writes each plain delta through [`InStream`], as the one that writes
    /// the deltas of a shape as its first was must match.
    fn not_repeating(dialect: Dialect, hide_usage: bool) -> Pass {
        Pass {
            repeating: false,
            ..Pass::new(dialect, "gw/model", hide_usage)
        }
    }

    /// Deltas of one shape written as the first was are written as [`InStream`] writes
    /// each: every fixture of every dialect, in pieces, usage hidden or not.
    #[test]
    fn deltas_of_one_shape_are_written_as_each_would_be() {
        for (path, dialect, raw) in stream_fixtures() {
            for hide in [false, true] {
                for size in [1, 7, 64, raw.len().max(1)] {
                    let repeating = passed(Pass::new(dialect, "gw/model", hide), &raw, size);
                    let each = passed(not_repeating(dialect, hide), &raw, size);
                    assert_eq!(repeating, each, "{} in pieces of {size}", path.display());
                }
            }
        }
    }

    /// A delta is read and written without being framed only when it is of the shape
    /// last written, with that delta's lines: an event whose bytes after its string
    /// differ from the shape's by as many bytes (a finish where the shape has `null`), and
    /// a delta of a shape the watch remembered from an event only the parser reads (lone
    /// CR line ends) while the pass wrote it whole, are framed and read in full, as a
    /// pass that writes each delta through [`InStream`] reads and writes them.
    #[test]
    fn only_a_delta_of_the_shape_last_written_is_read_unframed() {
        let with = |text: &str, finish: &str| {
            format!("data: {{\"model\":\"up\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":{finish}}}]}}")
        };
        let plain = |text: &str| with(text, "null");
        let streams = [
            format!(
                "{ROLE}\n\n{}\n\n{}\n\n{}\n\n{}\n\n{DONE}\n\n",
                plain("a"),
                plain("b"),
                with("c", "\"ab\""),
                plain("d"),
            ),
            format!(
                "{ROLE}\n\n{}\n\n{}\n\n{}\r\r{}\n\n{}\n\n{DONE}\n\n",
                delta("a"),
                delta("b"),
                delta_model_after("c"),
                delta_model_after("d"),
                delta_model_after("e"),
            ),
        ];
        for input in streams {
            for size in [1, 7, input.len()] {
                let repeating = in_pieces(input.as_bytes(), size, false);
                let each = passed(not_repeating(Dialect::Chat, false), input.as_bytes(), size);
                assert_eq!(repeating, each, "{input:?} in pieces of {size}");
                assert!(!repeating.2, "{input:?}");
            }
        }
    }

    /// The same when the model is named after the text, and when the deltas' lines
    /// change around one shape (`data:` without its space, CRLF line ends).
    #[test]
    fn deltas_whose_model_follows_their_text_are_each_renamed() {
        let after = |t: &str| format!("{}\n\n", delta_model_after(t));
        let mut input = format!("{ROLE}\n\n");
        for t in ["a", "b", "c"] {
            input.push_str(&after(t));
        }
        input.push_str(&after("d").replacen("data: ", "data:", 1));
        input.push_str(&after("e").replace('\n', "\r\n"));
        input.push_str(&format!(
            "{TEXT}\n\n{TEXT}\r\n\r\n{WITH_USAGE}\n\n{DONE}\n\n"
        ));
        let (out, _, refused) = in_pieces(input.as_bytes(), input.len(), false);
        assert!(!refused);
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            out,
            input.replace("\"model\":\"up\"", "\"model\":\"gw/model\"")
        );
        let each = passed(
            not_repeating(Dialect::Chat, false),
            input.as_bytes(),
            input.len(),
        );
        assert_eq!(String::from_utf8(each.0).unwrap(), out);
    }

    #[test]
    fn the_last_event_can_be_left_out() {
        let mut pass = Pass::new(Dialect::Chat, "gw/model", false);
        pass.push(b": ping\n\ndata: {\"a\":1}\n\ndata: [DONE]\n\n")
            .unwrap();
        assert_eq!(
            &pass.take_all_but_last()[..],
            b": ping\n\ndata: {\"a\":1}\n\n"
        );
    }
}

//! Server-sent events: a parser that survives real networks, and a writer.
//!
//! The parser takes bytes as they arrive and yields whole events. It accepts LF, CRLF
//! and lone CR line ends, a UTF-8 character split across chunks (lines are cut at
//! line-end bytes, which never occur inside a multi-byte character, and decoded whole),
//! comment lines (`: keep-alive`), multi-line `data:` fields (joined with `\n`), and a
//! final event without its closing blank line ([`SseParser::finish`]). It never looks at
//! the content type.
//!
//! A whole event already cut from the stream can also be read in place
//! ([`next_event`]), without the parser's copies, when its shape allows (the gateway's
//! relay of a passed-through stream reads each of its events so).

mod in_place;
pub use in_place::{next_event, EventRef, InPlace, Seen};

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The `id:` field, if any.
    pub id: Option<String>,
}

/// An incremental SSE parser.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line not yet ended (only a line split across chunks is copied here).
    line: Vec<u8>,
    /// The last byte seen was a CR, so a following LF belongs to the same line end.
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
    id: Option<String>,
}

impl SseParser {
    /// A new parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next chunk of bytes and returns the events it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            // The LF of a CRLF whose CR ended the line at the end of the last chunk.
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        // Lines are found with memchr and read in place; only a line that began in an
        // earlier chunk is joined in `self.line` first.
        while let Some(at) = memchr::memchr2(b'\n', b'\r', rest) {
            let ending = rest[at];
            let event = if self.line.is_empty() {
                self.take_line(&rest[..at])
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&rest[..at]);
                let event = self.take_line(&line);
                line.clear();
                self.line = line;
                event
            };
            events.extend(event);
            rest = &rest[at + 1..];
            if ending == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.line.extend_from_slice(rest);
        events
    }

    /// Whether the parser is between two events: no line, field or line end pending, so
    /// the next bytes start a new event.
    pub fn is_idle(&self) -> bool {
        self.line.is_empty()
            && !self.after_cr
            && self.event.is_none()
            && self.data.is_none()
            && self.id.is_none()
    }

    /// Ends the input: returns the event left open by a stream that did not end with a
    /// blank line, if any.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.take_line(&line);
        }
        self.dispatch()
    }

    fn take_line(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return None;
        }
        // The colon is ASCII, so splitting the bytes there splits the text where a
        // decoding of the whole line would.
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let slot = match field {
            b"data" => {
                let value = text(value);
                match &mut self.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(&value);
                    }
                    None => self.data = Some(value.into_owned()),
                }
                return None;
            }
            b"event" => &mut self.event,
            b"id" => &mut self.id,
            // `retry:` and unknown fields are ignored, as the SSE specification says.
            _ => return None,
        };
        *slot = Some(text(value).into_owned());
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let data = self.data.take();
        let event = self.event.take();
        let id = self.id.take();
        // An event with no data is not dispatched (the specification's rule), but a
        // named event without data still counts: some servers send `event: ping` alone.
        if data.is_none() && event.is_none() {
            return None;
        }
        Some(SseEvent {
            event,
            data: data.unwrap_or_default(),
            id,
        })
    }
}

/// A field's value as text: invalid UTF-8 replaced (the checked conversion first, which
/// is much faster than the lossy one on the valid text every provider sends).
fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Whether the line end at `bytes[i]` (a `\n`) closes a blank line, and so ends an event:
/// the line before it ended right before it (`\n\n`, or `\r\n\r\n`).
pub fn closes_event(bytes: &[u8], i: usize) -> bool {
    let before = &bytes[..i];
    before.ends_with(b"\n") || before.ends_with(b"\n\r")
}

/// Where the first complete event of `bytes` ends: just after its blank line (`None`
/// when no event of `bytes` is complete yet).
pub fn first_event_end(bytes: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'\n', &bytes[from..]).map(|i| from + i) {
        if closes_event(bytes, i) {
            return Some(i + 1);
        }
        from = i + 1;
    }
    None
}

/// One event's bytes on their own (see [`write_event`]).
pub fn event_bytes(event: Option<&str>, data: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 16);
    write_event(&mut out, event, data);
    out
}

/// Appends one SSE event to `out`: an optional `event:` line, the data (one `data:` line
/// per line of it) and the closing blank line.
pub fn write_event(out: &mut Vec<u8>, event: Option<&str>, data: &str) {
    if let Some(name) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    for line in data.split('\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_event_ends_after_its_blank_line_in_either_line_end() {
        assert_eq!(first_event_end(b"data: a\n\ndata: b\n\n"), Some(9));
        assert_eq!(first_event_end(b"data: a\r\n\r\ndata: b"), Some(11));
        assert_eq!(first_event_end(b"event: x\ndata: a\n"), None);
        assert!(closes_event(b"data: a\n\n", 8));
        assert!(!closes_event(b"data: a\n\n", 7));
    }

    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            out.extend(p.push(chunk));
        }
        out.extend(p.finish());
        out
    }

    #[test]
    fn lf_crlf_and_cr_line_ends_give_the_same_events() {
        let lf = b"event: a\ndata: 1\n\ndata: 2\n\n".to_vec();
        let crlf = b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n".to_vec();
        let cr = b"event: a\rdata: 1\r\rdata: 2\r\r".to_vec();
        for input in [lf, crlf, cr] {
            for piece in [1, 2, 3, 100] {
                let events = parse_in_pieces(&input, piece);
                assert_eq!(events.len(), 2, "{input:?} in pieces of {piece}");
                assert_eq!(events[0].event.as_deref(), Some("a"));
                assert_eq!(events[0].data, "1");
                assert_eq!(events[1].data, "2");
            }
        }
    }

    #[test]
    fn a_character_split_across_chunks_survives() {
        let input = "data: {\"t\":\"日本語 ✓\"}\n\n".as_bytes();
        for piece in 1..8 {
            let events = parse_in_pieces(input, piece);
            assert_eq!(events[0].data, "{\"t\":\"日本語 ✓\"}");
        }
    }

    #[test]
    fn comments_multi_line_data_and_a_missing_final_blank_line() {
        let input = b": keep-alive\n\ndata: a\ndata: b\n\n:ping\ndata: [DONE]";
        let events = parse_in_pieces(input, 4);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].data, "a\nb");
        assert_eq!(events[1].data, "[DONE]");
    }

    #[test]
    fn every_cut_into_two_chunks_gives_the_events_of_the_whole() {
        let input =
            "event: a\r\ndata: x\r\ndata: 日本\r\r\n: c\nid: 7\ndata:y\n\ndata: z\r\r".as_bytes();
        let whole = parse_in_pieces(input, input.len());
        assert_eq!(whole.len(), 3, "{whole:?}");
        assert_eq!(whole[0].data, "x\n日本");
        assert_eq!(whole[1].id.as_deref(), Some("7"));
        for cut in 0..=input.len() {
            let mut p = SseParser::new();
            let mut events = p.push(&input[..cut]);
            events.extend(p.push(&[]));
            events.extend(p.push(&input[cut..]));
            events.extend(p.finish());
            assert_eq!(events, whole, "cut at {cut}");
        }
    }

    #[test]
    fn invalid_utf8_is_replaced_not_refused() {
        let events = parse_in_pieces(b"data: a\xffb\n\n", 3);
        assert_eq!(events[0].data, "a\u{fffd}b");
    }

    #[test]
    fn written_events_parse_back() {
        let mut out = Vec::new();
        write_event(&mut out, Some("message_start"), "{\"a\":1}");
        write_event(&mut out, None, "x\ny");
        let events = parse_in_pieces(&out, 5);
        assert_eq!(events[0].event.as_deref(), Some("message_start"));
        assert_eq!(events[1].data, "x\ny");
    }
}

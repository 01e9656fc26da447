//! One whole event read where it lies, without a copy: the relay already holds a
//! stream's events whole, and most of them are one `data:` line (perhaps with an
//! `event:` line), which [`SseParser`](super::SseParser) would copy into a `String` of
//! its own only to have it looked at once. An event of any other shape is left to the
//! parser ([`InPlace::Parse`]), so what is read here is always what it would yield.

use super::{first_event_end, SseEvent};

/// An event's fields as they lie in the stream's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRef<'a> {
    /// The `event:` field's value, if any.
    pub event: Option<&'a [u8]>,
    /// The one `data:` line's value (empty for an event with a name and no data), always
    /// a part of the bytes read.
    pub data: &'a [u8],
}

impl EventRef<'_> {
    /// The event as [`SseParser`](super::SseParser) yields it (invalid UTF-8 replaced).
    pub fn to_event(&self) -> SseEvent {
        SseEvent {
            event: self.event.map(|e| super::text(e).into_owned()),
            data: super::text(self.data).into_owned(),
            id: None,
        }
    }
}

/// What one whole event's bytes hold, read in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InPlace<'a> {
    /// One event.
    Event(EventRef<'a>),
    /// No event: blank lines, comments and ignored fields only.
    Nothing,
    /// A shape only the parser reads: several `data:` or `event:` lines, an `id:`, a
    /// lone CR line end.
    Parse,
}

/// The first whole event of `bytes` — where it ends, just after its blank line, as
/// [`first_event_end`] finds it — read in place when its lines end in LF or CRLF and it
/// has at most one `data:` and one `event:` line and no `id:`; comment lines and `retry:`
/// or unknown fields are skipped, as the parser skips them. `None` while no event of
/// `bytes` is complete. One pass over the event's lines.
pub fn next_event(bytes: &[u8]) -> Option<(usize, InPlace<'_>)> {
    if let Some((end, event)) = usual(bytes) {
        return Some((end, InPlace::Event(event)));
    }
    // Any other shape: the parser reads the event, cut where `first_event_end` cuts it.
    let parse = || first_event_end(bytes).map(|end| (end, InPlace::Parse));
    let (mut event, mut data) = (None, None);
    let mut at = 0;
    loop {
        let end = at + memchr::memchr2(b'\n', b'\r', &bytes[at..])?;
        let next = match bytes[end] {
            b'\n' => end + 1,
            _ if bytes.get(end + 1) == Some(&b'\n') => end + 2,
            // A lone CR ends a line too (or a CR the next chunk may follow with LF).
            _ => return parse(),
        };
        let line = &bytes[at..end];
        if line.is_empty() {
            if at == 0 {
                // A blank line first: `first_event_end` reads on to the next.
                return parse();
            }
            let read = match (event, data) {
                (None, None) => InPlace::Nothing,
                (event, data) => InPlace::Event(EventRef {
                    event,
                    // Empty, but within the event's bytes all the same: a reader may
                    // find where the data stands by its address.
                    data: data.unwrap_or(&bytes[at..at]),
                }),
            };
            return Some((next, read));
        }
        at = next;
        if line[0] == b':' {
            continue;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &line[line.len()..]),
        };
        let slot = match field {
            b"data" => &mut data,
            b"event" => &mut event,
            b"id" => return parse(),
            _ => continue,
        };
        if slot.replace(value).is_some() {
            return parse();
        }
    }
}

/// The shape nearly every event of every dialect has, read with two searches at most: an
/// optional `event:` line, one `data:` line and the blank line, each ending in LF alone.
/// `None` for any other shape (which [`next_event`] reads line by line, to the same
/// result for this one).
fn usual(bytes: &[u8]) -> Option<(usize, EventRef<'_>)> {
    // A line ending in LF with no CR in it, and where the next begins.
    let line = |at: usize| {
        let end = at + memchr::memchr2(b'\n', b'\r', bytes.get(at..)?)?;
        (bytes[end] == b'\n').then(|| (&bytes[at..end], end + 1))
    };
    fn value<'a>(line: &'a [u8], field: &[u8]) -> Option<&'a [u8]> {
        let v = line.strip_prefix(field)?;
        Some(v.strip_prefix(b" ").unwrap_or(v))
    }
    let (first, next) = line(0)?;
    let (event, (data, next)) = match value(first, b"event:") {
        Some(name) => (Some(name), line(next)?),
        None => (None, (first, next)),
    };
    let data = value(data, b"data:")?;
    (bytes.get(next) == Some(&b'\n')).then_some((next + 1, EventRef { event, data }))
}

/// An event as a reader of whole events hands it on: read in place, or parsed.
#[derive(Debug)]
pub enum Seen<'a> {
    /// Read in place.
    InPlace(EventRef<'a>),
    /// Parsed.
    Parsed(SseEvent),
}

impl Seen<'_> {
    /// The `event:` field.
    pub fn event(&self) -> Option<&[u8]> {
        match self {
            Seen::InPlace(e) => e.event,
            Seen::Parsed(e) => e.event.as_deref().map(str::as_bytes),
        }
    }

    /// The data.
    pub fn data(&self) -> &[u8] {
        match self {
            Seen::InPlace(e) => e.data,
            Seen::Parsed(e) => e.data.as_bytes(),
        }
    }

    /// The event as the parser yields it.
    pub fn into_event(self) -> SseEvent {
        match self {
            Seen::InPlace(e) => e.to_event(),
            Seen::Parsed(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::SseParser;
    use proptest::prelude::*;

    /// What the parser makes of `bytes`, one whole event.
    fn parsed(bytes: &[u8]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = parser.push(bytes);
        events.extend(parser.finish());
        events
    }

    /// [`next_event`] of one whole event.
    fn in_place(bytes: &[u8]) -> InPlace<'_> {
        let (end, read) = next_event(bytes).unwrap();
        assert_eq!(end, bytes.len(), "{bytes:?}");
        read
    }

    #[test]
    fn the_usual_shapes_are_read_in_place() {
        for (input, event, data) in [
            (&b"data: {\"a\":1}\n\n"[..], None, &b"{\"a\":1}"[..]),
            (b"data:{}\r\n\r\n", None, b"{}"),
            (
                b"event: content_block_delta\ndata: {}\n\n",
                Some(&b"content_block_delta"[..]),
                b"{}",
            ),
            (b": ping\nretry: 10\ndata: x\n\n", None, b"x"),
            (b"event: ping\n\n", Some(b"ping"), b""),
        ] {
            assert_eq!(
                in_place(input),
                InPlace::Event(EventRef { event, data }),
                "{input:?}"
            );
        }
        assert_eq!(in_place(b": keep-alive\n\n"), InPlace::Nothing);
        for other in [
            &b"data: a\ndata: b\n\n"[..],
            b"id: 7\ndata: a\n\n",
            b"data: a\rdata: b\n\n",
            b"event: a\nevent: b\ndata: x\n\n",
        ] {
            assert_eq!(in_place(other), InPlace::Parse, "{other:?}");
        }
    }

    /// Lines of the kinds streams hold, and line ends of every kind.
    fn stream() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            "data: \\{\"t\":\"[a-z日 ]{0,6}\"\\}".prop_map(String::into_bytes),
            "data:[a-z]{0,3}".prop_map(String::into_bytes),
            "event: [a-z_]{1,8}".prop_map(String::into_bytes),
            Just(b"id: 4".to_vec()),
            Just(b": keep-alive".to_vec()),
            Just(b"retry: 100".to_vec()),
            Just(b"data".to_vec()),
            Just(b"data: \xff".to_vec()),
            Just(Vec::new()),
        ];
        let end = prop_oneof![
            4 => Just(&b"\n"[..]),
            2 => Just(&b"\r\n"[..]),
            1 => Just(&b"\r"[..]),
        ];
        prop::collection::vec((line, end), 0..12).prop_map(|lines| {
            lines
                .into_iter()
                .flat_map(|(mut line, end)| {
                    line.extend_from_slice(end);
                    line
                })
                .collect()
        })
    }

    proptest! {
        /// Every event read in place is the one the parser yields from the same bytes,
        /// and nothing read in place is an event the parser does not yield.
        #[test]
        fn what_is_read_in_place_is_what_the_parser_yields(bytes in stream()) {
            let mut rest = &bytes[..];
            loop {
                let (found, expected) = (next_event(rest), first_event_end(rest));
                prop_assert_eq!(found.map(|(end, _)| end), expected);
                let Some((end, read)) = found else { break };
                let (one, after) = rest.split_at(end);
                match read {
                    InPlace::Event(e) => {
                        prop_assert_eq!(parsed(one), vec![e.to_event()]);
                        let at = e.data.as_ptr() as usize;
                        let range = one.as_ptr() as usize..=one.as_ptr() as usize + one.len();
                        prop_assert!(range.contains(&at) && range.contains(&(at + e.data.len())));
                    }
                    InPlace::Nothing => prop_assert_eq!(parsed(one), vec![]),
                    InPlace::Parse => {}
                }
                rest = after;
            }
        }
    }
}

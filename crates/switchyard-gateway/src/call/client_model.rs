//! The model a reply names: the client's own name for it, wherever its dialect carries
//! one, on every path (passed through, translated, from the cache). A client keeps its
//! name for the model as part of its state — Claude Code drops the signed thinking of an
//! earlier reply that names another model than the one it asks — so a reply naming the
//! upstream's id (`echo` for `mock/echo`, a backend's id for an alias) breaks it. The
//! upstream's id is not lost: the record keeps the reply as it came, and the answer's
//! [`HEADER`] names the reference actually called.
//!
//! Where each dialect names the model, and so what is rewritten:
//! - chat completions: a reply's top-level `model`, and every stream chunk's;
//! - Responses: a reply's top-level `model`; in a stream, the `response.model` of the
//!   events that carry the response (`response.created`, `…in_progress`, `…completed`,
//!   `…failed`, `…incomplete`);
//! - Messages: a reply's top-level `model`; in a stream, `message_start`'s
//!   `message.model` only;
//! - Gemini: `modelVersion`, at the top of a reply and of every stream chunk.
//!
//! Passed-through bytes are spliced at those fields (found by a byte-level walk,
//! [`top_level`]), everything else copied as it came; a stream's events that carry no model are found by a byte
//! scan and not parsed.
//!
//! The name is the client's own text, written back out: a key in it (a client may put
//! one anywhere) is redacted as every byte from upstream is ([`written`]), and so is the
//! header's reference, which is read from the same text.

use crate::call::top_level;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use bytes::Bytes;
use memchr::memmem::Finder;
use std::sync::LazyLock;
use switchyard::Dialect;
use switchyard_wire::sse::{next_event, write_event, InPlace, SseEvent, SseParser};

/// The answer's header naming the reference called, `<backend>/<upstream model id>`.
pub(crate) const HEADER: HeaderName = HeaderName::from_static("x-switchyard-model");

/// The client's name for the model as a reply writes it: any key it holds redacted.
pub(crate) fn written(requested: &str) -> String {
    switchyard::internal::redact::redact(requested).into_owned()
}

/// Sets [`HEADER`] to `reference`, any key in it redacted (left out when it cannot be a
/// header's value).
pub(crate) fn name_reference(headers: &mut HeaderMap, reference: &str) {
    let reference = switchyard::internal::redact::redact(reference);
    if let Ok(value) = HeaderValue::from_str(&reference) {
        headers.insert(HEADER, value);
    }
}

/// The field naming the model at the top of a reply or stream chunk of `dialect`.
fn field(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Gemini => "modelVersion",
        _ => "model",
    }
}

/// `name` as a reply writes it ([`written`]), as a JSON string.
fn json_string(name: &str) -> String {
    switchyard_wire::json::quoted(&written(name))
}

/// A whole reply of `dialect` naming `name`: its top-level model field replaced where
/// it stands, every other byte as it came. A reply without the field (or not a JSON
/// object) goes as it came.
pub(crate) fn whole(dialect: Dialect, body: Bytes, name: &str) -> Bytes {
    match renamed(body.as_ref(), field(dialect), &json_string(name)) {
        Some(patched) => Bytes::from(patched),
        None => body,
    }
}

/// `json` with its top-level `field` set to `value` (JSON text); `None` when it has no
/// such field, already holds `value`, or is no JSON object.
fn renamed(json: &[u8], field: &str, value: &str) -> Option<Vec<u8>> {
    top_level::replaced_at(json, top_level::first(json, field)?, value)
}

/// Renames the model in a passed-through stream of one dialect, event by event.
#[derive(Debug)]
pub(crate) struct InStream {
    dialect: Dialect,
    /// The client's name as a JSON string.
    name: String,
    /// The bytes of the last event's data up to the end of the model's value, and where
    /// the value starts: an event whose data begins with the same bytes names the model
    /// at the same place (the walk over those bytes would be the same), so a stream's
    /// chunks after its first are spliced without a walk. Kept only for a string value.
    known: Option<(Vec<u8>, usize)>,
}

/// What an event that may name the model holds (a cheap scan; a hit is then parsed).
fn finder(dialect: Dialect) -> &'static Finder<'static> {
    // Built once: `memmem::find` builds its searcher on every call.
    static MESSAGE_START: LazyLock<Finder<'static>> =
        LazyLock::new(|| Finder::new(b"\"message_start\""));
    static MODEL: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"model\""));
    static MODEL_VERSION: LazyLock<Finder<'static>> =
        LazyLock::new(|| Finder::new(b"\"modelVersion\""));
    match dialect {
        Dialect::Messages => &MESSAGE_START,
        Dialect::Chat | Dialect::Responses => &MODEL,
        Dialect::Gemini => &MODEL_VERSION,
    }
}

impl InStream {
    /// Renames to `name` in a stream of `dialect`.
    pub(crate) fn new(dialect: Dialect, name: &str) -> Self {
        InStream {
            dialect,
            name: json_string(name),
            known: None,
        }
    }

    /// `bytes` — whole SSE events, the last perhaps without its closing blank line —
    /// with every event that names the model naming the client's ([`Self::event_into`]
    /// for each). Bytes with no such event go back as they are, without a copy. A
    /// passed-through stream is renamed event by event as it is framed (`passthrough::pass`);
    /// this serves bytes written whole: a cached stream, a whole reply relayed as a
    /// stream, the gateway's own error events.
    pub(crate) fn events(&mut self, bytes: Bytes) -> Bytes {
        if finder(self.dialect).find(&bytes).is_none() {
            return bytes;
        }
        let mut out = Vec::with_capacity(bytes.len() + 64);
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            // A last event without its blank line ends with the bytes.
            let (end, read) = next_event(rest).unwrap_or((rest.len(), InPlace::Parse));
            let event = &rest[..end];
            let data = match read {
                // Its one data line found in the pass that found its end.
                InPlace::Event(e) => {
                    let start = e.data.as_ptr() as usize - event.as_ptr() as usize;
                    Some((start, start + e.data.len()))
                }
                _ => None,
            };
            self.event_into(event, data, &mut out);
            rest = &rest[end..];
        }
        Bytes::from(out)
    }

    /// One whole event (or a stream's last, without its blank line) into `out`, the model
    /// renamed where it names one; `data` is where its one data line's value stands, when
    /// it was read in place. An event of Messages or Responses that cannot name the model
    /// is copied unread.
    pub(crate) fn event_into(
        &mut self,
        event: &[u8],
        data: Option<(usize, usize)>,
        out: &mut Vec<u8>,
    ) {
        let every = matches!(self.dialect, Dialect::Chat | Dialect::Gemini);
        if !every && finder(self.dialect).find(event).is_none() {
            out.extend_from_slice(event);
            return;
        }
        match data {
            Some(data) => self.splice(event, data, out),
            None => self.event(event, out),
        }
    }

    /// Parsed events written again into `out`, each renamed where it names the model.
    pub(crate) fn write_parsed(&mut self, parsed: &[SseEvent], out: &mut Vec<u8>) {
        let renamed: Vec<_> = parsed
            .iter()
            .map(|e| self.data(e.data.as_bytes()))
            .collect();
        write_renamed(parsed, renamed, out);
    }

    /// Where the event's data (JSON) names the model, when it names another than the
    /// client's.
    fn model_at(&mut self, json: &[u8]) -> Option<(usize, usize)> {
        if let Some((prefix, start)) = &self.known {
            if json.starts_with(prefix) {
                return Some((*start, prefix.len()));
            }
        }
        let span = match self.dialect {
            Dialect::Messages => top_level::first_within(json, "message", "model"),
            Dialect::Responses => top_level::first_within(json, "response", "model"),
            Dialect::Chat | Dialect::Gemini => top_level::first(json, field(self.dialect)),
        }?;
        if &json[span.0..span.1] == self.name.as_bytes() {
            return None;
        }
        if json[span.0] == b'"' {
            self.known = Some((json[..span.1].to_vec(), span.0));
        }
        Some(span)
    }

    /// The event's data (JSON) renamed, or `None` when it names no model.
    fn data(&mut self, json: &[u8]) -> Option<Vec<u8>> {
        top_level::replaced_at(json, self.model_at(json)?, &self.name)
    }

    /// One event into `out` whose one data line's value is `event[data.0..data.1]`, the
    /// model renamed in it where it names one: spliced straight into `out`, with no copy
    /// of the event of its own.
    fn splice(&mut self, event: &[u8], (start, end): (usize, usize), out: &mut Vec<u8>) {
        match self.model_at(&event[start..end]) {
            Some((s, e)) => {
                out.extend_from_slice(&event[..start + s]);
                out.extend_from_slice(self.name.as_bytes());
                out.extend_from_slice(&event[start + e..]);
            }
            None => out.extend_from_slice(event),
        }
    }

    /// One event into `out`, renamed where it names the model: its one `data:` line
    /// spliced in place, or — an event of several data lines, or lone CR line ends —
    /// parsed and written again.
    fn event(&mut self, event: &[u8], out: &mut Vec<u8>) {
        if let Some(data) = one_data_line(event) {
            self.splice(event, data, out);
            return;
        }
        let mut parser = SseParser::new();
        let mut parsed = parser.push(event);
        parsed.extend(parser.finish());
        let renamed: Vec<_> = parsed
            .iter()
            .map(|e| self.data(e.data.as_bytes()))
            .collect();
        if renamed.iter().all(Option::is_none) {
            out.extend_from_slice(event);
            return;
        }
        write_renamed(&parsed, renamed, out);
    }
}

/// `parsed` written into `out`, each with its renamed data where it has one.
fn write_renamed(parsed: &[SseEvent], renamed: Vec<Option<Vec<u8>>>, out: &mut Vec<u8>) {
    for (e, data) in parsed.iter().zip(renamed) {
        if let Some(id) = &e.id {
            out.extend_from_slice(b"id: ");
            out.extend_from_slice(id.as_bytes());
            out.push(b'\n');
        }
        let data = data.map(String::from_utf8);
        match &data {
            Some(Ok(d)) => write_event(out, e.event.as_deref(), d),
            _ => write_event(out, e.event.as_deref(), &e.data),
        }
    }
}

/// Where the value of the event's one `data:` line sits (after `data:` and its one
/// optional space, before the line end); `None` for an event of several data lines, of
/// none, or with a lone CR (a line end the parser must read).
fn one_data_line(event: &[u8]) -> Option<(usize, usize)> {
    let mut found = None;
    let mut at = 0;
    while at < event.len() {
        let end = memchr::memchr(b'\n', &event[at..]).map_or(event.len(), |i| at + i);
        let line = &event[at..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if memchr::memchr(b'\r', line).is_some() {
            return None;
        }
        if let Some(value) = line.strip_prefix(b"data:") {
            if found.is_some() {
                return None;
            }
            let skip = usize::from(value.first() == Some(&b' '));
            found = Some((at + 5 + skip, at + line.len()));
        }
        at = end + 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renamed_stream(dialect: Dialect, input: &str) -> String {
        let out = InStream::new(dialect, "cc-msg/echo").events(Bytes::from(input.to_string()));
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn a_whole_reply_names_the_client_model_and_keeps_every_other_byte() {
        let body = r#"{ "id":"m1", "model" : "echo","content":[{"type":"text","text":"\"model\":\"echo\""}]}"#;
        let out = whole(Dialect::Messages, Bytes::from(body), "cc-msg/echo");
        assert_eq!(
            &out[..],
            br#"{ "id":"m1", "model" : "cc-msg/echo","content":[{"type":"text","text":"\"model\":\"echo\""}]}"#
        );
        let gemini = r#"{"candidates":[],"modelVersion":"echo"}"#;
        let out = whole(Dialect::Gemini, Bytes::from(gemini), "mock/echo");
        assert_eq!(&out[..], br#"{"candidates":[],"modelVersion":"mock/echo"}"#);
        // No field, or not an object: as it came.
        for body in [r#"{"id":"x"}"#, "[1]", "not json"] {
            assert_eq!(
                &whole(Dialect::Chat, Bytes::from(body), "a/b")[..],
                body.as_bytes()
            );
        }
    }

    #[test]
    fn chunks_sharing_the_first_ones_prefix_are_renamed_as_a_walk_would() {
        let mut names = InStream::new(Dialect::Chat, "cc-msg/echo");
        let chunk = |id: &str, text: &str| {
            format!("data: {{\"id\":\"{id}\",\"model\":\"echo\",\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
        };
        // The second chunk is spliced from the first's prefix, the third (another id
        // length) walked again; one network read of several, and reads one by one.
        let input = [
            chunk("c1", "a"),
            chunk("c1", "b"),
            chunk("c22", "\\\"model\\\":\\\"x\\\""),
        ]
        .concat();
        let expected = input.replace("\"model\":\"echo\"", "\"model\":\"cc-msg/echo\"");
        let out = names.events(Bytes::from(input.clone()));
        assert_eq!(String::from_utf8(out.to_vec()).unwrap(), expected);
        let mut one_by_one = String::new();
        for c in [chunk("c1", "a"), chunk("c1", "b"), chunk("c22", "z")] {
            one_by_one.push_str(std::str::from_utf8(&names.events(Bytes::from(c))).unwrap());
        }
        assert_eq!(one_by_one.matches("\"model\":\"cc-msg/echo\"").count(), 3);
        assert!(!one_by_one.contains("\"echo\""));
    }

    #[test]
    fn a_messages_stream_renames_message_start_only() {
        let input = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"echo\",\"content\":[]}}\n\n\
                     event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"\\\"model\\\"\"}}\n\n";
        let expected = input.replace("\"model\":\"echo\"", "\"model\":\"cc-msg/echo\"");
        assert_eq!(renamed_stream(Dialect::Messages, input), expected);
        // Bytes without a message_start go back untouched (the same buffer).
        let delta = Bytes::from_static(b"event: ping\ndata: {\"type\":\"ping\"}\n\n");
        let out = InStream::new(Dialect::Messages, "x").events(delta.clone());
        assert_eq!(out.as_ptr(), delta.as_ptr());
    }

    #[test]
    fn a_responses_stream_renames_the_response_objects_model() {
        let input = "event: response.created\r\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"model\":\"echo\",\"tools\":[{\"model\":\"keep\"}]}}\r\n\r\n\
                     event: response.output_text.delta\r\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\r\n\r\n";
        let expected = input.replace("\"model\":\"echo\"", "\"model\":\"cc-msg/echo\"");
        assert_eq!(renamed_stream(Dialect::Responses, input), expected);
    }

    #[test]
    fn chat_and_gemini_chunks_are_each_renamed_the_end_marker_kept() {
        let input = "data: {\"id\":\"c\",\"model\":\"echo\",\"choices\":[]}\n\ndata: {\"id\":\"c\",\"model\":\"echo\",\"choices\":[]}\n\ndata: [DONE]";
        let expected = input.replace("\"echo\"", "\"cc-msg/echo\"");
        assert_eq!(renamed_stream(Dialect::Chat, input), expected);
        let input = "data:{\"candidates\":[],\"modelVersion\":\"echo\"}\n\n";
        assert_eq!(
            renamed_stream(Dialect::Gemini, input),
            "data:{\"candidates\":[],\"modelVersion\":\"cc-msg/echo\"}\n\n"
        );
    }

    #[test]
    fn an_event_of_several_data_lines_is_parsed_and_written_again() {
        let input = "id: 7\nevent: message_start\ndata: {\"type\":\"message_start\",\ndata: \"message\":{\"model\":\"echo\"}}\n\n";
        let out = renamed_stream(Dialect::Messages, input);
        assert_eq!(
            out,
            "id: 7\nevent: message_start\ndata: {\"type\":\"message_start\",\ndata: \"message\":{\"model\":\"cc-msg/echo\"}}\n\n"
        );
    }
}

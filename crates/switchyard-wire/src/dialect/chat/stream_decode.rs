//! The client-side stream decoder: chat completion chunks to canonical events.

use super::request::arguments_text;
use super::{
    decoded_finish, error_from_chat, reasoning_text, usage_from_chat, PlainTexts, PlainTop,
};
use crate::codec::{json_type, preview, DecodeError, StreamDecoder};
use crate::event::Event;
use crate::json::{arr_at, as_obj, obj_at, str_at, u64_at, Object};
use crate::part::ToolKind;
use crate::reply::FinishReason;
use crate::sse::SseEvent;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

/// The text or thinking part that later deltas of the same kind extend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text(usize),
    Thinking(usize),
}

/// A tool call being streamed, keyed by the chunk's `index`.
#[derive(Debug)]
struct Call {
    key: u64,
    id: String,
    name: String,
    kind: ToolKind,
    /// The content part, once the call started (it starts when its name is known).
    part: Option<usize>,
    /// Argument fragments that arrived before the name.
    pending: String,
    ended: bool,
}

/// Decodes one chat completion stream. Tool-call fragments are matched by `index`; an id
/// or name repeated on later fragments (or sent empty) never overwrites nor duplicates a
/// call, while a fragment with the same index but a *different* id starts a new call
/// (servers that number every call 0). The finish is held back until `data: [DONE]` so
/// that the usage chunk that follows the finish chunk comes first.
#[derive(Debug, Default)]
pub struct ChatStreamDecoder {
    started: bool,
    next_part: usize,
    open: Option<Open>,
    calls: Vec<Call>,
    finish_raw: Option<String>,
    closed: bool,
    errored: bool,
    /// The last event was a chunk of usage alone ([`StreamDecoder::last_was_usage_alone`]).
    usage_alone: bool,
}

impl ChatStreamDecoder {
    /// A decoder for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn chunk(&mut self, chunk: &Object) -> Result<Vec<Event>, DecodeError> {
        let mut out = Vec::new();
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            self.errored = true;
            out.push(Event::Error(error_from_chat(error)));
            return Ok(out);
        }
        self.start(str_at(chunk, "id"), str_at(chunk, "model"), &mut out);
        for (i, choice) in arr_at(chunk, "choices").into_iter().flatten().enumerate() {
            let choice = as_obj(choice, &format!("chat stream chunk choices[{i}]"))?;
            // Only the first choice is decoded (n > 1 is not supported).
            if u64_at(choice, "index").unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = obj_at(choice, "delta") {
                self.delta(delta, &mut out)?;
            }
            if let Some(raw) = str_at(choice, "finish_reason") {
                self.finish_reason(raw, &mut out);
            }
        }
        if let Some(usage) = usage_from_chat(chunk.get("usage")) {
            out.push(Event::Usage(usage));
        }
        Ok(out)
    }

    /// A chunk of the plain kind (see [`PlainChunk`]): the same events [`Self::chunk`]
    /// gives for it.
    fn plain_chunk(&mut self, chunk: &PlainChunk<'_>) -> Vec<Event> {
        let mut out = Vec::new();
        self.start(chunk.id.as_deref(), chunk.model.as_deref(), &mut out);
        for choice in chunk.choices.iter().flatten() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = &choice.delta {
                self.texts(delta.reasoning(), delta.content.as_deref(), &mut out);
            }
            if let Some(raw) = &choice.finish_reason {
                self.finish_reason(raw, &mut out);
            }
        }
        if let Some(usage) = &chunk.usage {
            out.push(Event::Usage(usage.canonical()));
        }
        out
    }

    /// The stream's start, on its first chunk.
    fn start(&mut self, id: Option<&str>, model: Option<&str>, out: &mut Vec<Event>) {
        if !self.started {
            self.started = true;
            out.push(Event::Start {
                id: id.map(str::to_string),
                model: model.map(str::to_string),
            });
        }
    }

    /// A choice's `finish_reason`: its calls end; the finish itself waits for `[DONE]`.
    fn finish_reason(&mut self, raw: &str, out: &mut Vec<Event>) {
        self.end_calls(out);
        self.finish_raw = Some(raw.to_string());
    }

    fn delta(&mut self, delta: &Object, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.texts(reasoning_text(delta), str_at(delta, "content"), out);
        match delta.get("tool_calls") {
            None | Some(Value::Null) => {}
            Some(Value::Array(fragments)) => {
                for (position, fragment) in fragments.iter().enumerate() {
                    let at = format!("chat stream delta.tool_calls[{position}]");
                    self.fragment(as_obj(fragment, &at)?, position, out);
                }
            }
            Some(other) => {
                return Err(DecodeError::Malformed(format!(
                    "chat stream delta: `tool_calls` is a JSON {} where an array is required",
                    json_type(other)
                )))
            }
        }
        Ok(())
    }

    /// A delta's reasoning and text, extending the open part of the same kind.
    fn texts(&mut self, reasoning: Option<&str>, content: Option<&str>, out: &mut Vec<Event>) {
        if let Some(text) = reasoning {
            let part = match self.open {
                Some(Open::Thinking(p)) => p,
                _ => {
                    let p = self.new_part(out);
                    self.open = Some(Open::Thinking(p));
                    p
                }
            };
            out.push(Event::ThinkingDelta {
                part,
                text: text.to_string(),
                id: None,
            });
        }
        if let Some(text) = content.filter(|t| !t.is_empty()) {
            let part = match self.open {
                Some(Open::Text(p)) => p,
                _ => {
                    let p = self.new_part(out);
                    self.open = Some(Open::Text(p));
                    p
                }
            };
            out.push(Event::TextDelta {
                part,
                text: text.to_string(),
            });
        }
    }

    /// Allocates the next content part, ending tool calls still open (a new part means
    /// the earlier ones are complete, which other dialects' encoders rely on).
    fn new_part(&mut self, out: &mut Vec<Event>) -> usize {
        self.end_started_calls(out);
        let part = self.next_part;
        self.next_part += 1;
        self.open = None;
        part
    }

    fn fragment(&mut self, fragment: &Object, position: usize, out: &mut Vec<Event>) {
        let key = u64_at(fragment, "index").unwrap_or(position as u64);
        let id = str_at(fragment, "id").filter(|s| !s.is_empty());
        let (kind, name, arguments) = match obj_at(fragment, "custom") {
            Some(custom) => (
                ToolKind::Custom,
                str_at(custom, "name"),
                str_at(custom, "input").unwrap_or_default().to_string(),
            ),
            None => {
                let function = obj_at(fragment, "function");
                (
                    ToolKind::Function,
                    function.and_then(|f| str_at(f, "name")),
                    arguments_text(function.and_then(|f| f.get("arguments"))),
                )
            }
        };
        let name = name.filter(|s| !s.is_empty());

        // The latest call with this index, unless the fragment names a different id.
        let existing = self
            .calls
            .iter()
            .rposition(|c| c.key == key && id.is_none_or(|new| c.id.is_empty() || c.id == new));
        let index = match existing.and_then(|i| self.calls.get_mut(i).map(|c| (i, c))) {
            Some((i, call)) => {
                if call.id.is_empty() {
                    if let Some(id) = id {
                        call.id = id.to_string();
                    }
                }
                if call.name.is_empty() {
                    if let Some(name) = name {
                        call.name = name.to_string();
                    }
                }
                i
            }
            None => {
                self.calls.push(Call {
                    key,
                    id: id.unwrap_or_default().to_string(),
                    name: name.unwrap_or_default().to_string(),
                    kind,
                    part: None,
                    pending: String::new(),
                    ended: false,
                });
                self.calls.len() - 1
            }
        };

        let startable = self
            .calls
            .get(index)
            .is_some_and(|c| c.part.is_none() && !c.name.is_empty());
        if startable {
            self.start_call(index, out);
        }
        let Some(call) = self.calls.get_mut(index) else {
            return;
        };
        match call.part {
            Some(part) if !arguments.is_empty() => {
                out.push(Event::ToolCallDelta { part, arguments })
            }
            Some(_) => {}
            None => call.pending.push_str(&arguments),
        }
    }

    fn start_call(&mut self, index: usize, out: &mut Vec<Event>) {
        let part = self.new_part(out);
        let Some(call) = self.calls.get_mut(index) else {
            return;
        };
        call.part = Some(part);
        if call.id.is_empty() {
            call.id = format!("call_{}", call.key);
        }
        out.push(Event::ToolCallStart {
            part,
            id: call.id.clone(),
            name: call.name.clone(),
            kind: call.kind,
            namespace: None,
            state: None,
        });
        if !call.pending.is_empty() {
            out.push(Event::ToolCallDelta {
                part,
                arguments: std::mem::take(&mut call.pending),
            });
        }
    }

    fn end_started_calls(&mut self, out: &mut Vec<Event>) {
        for call in &mut self.calls {
            if let (Some(part), false) = (call.part, call.ended) {
                call.ended = true;
                out.push(Event::ToolCallEnd { part });
            }
        }
    }

    /// Starts calls whose name never came (so nothing is lost) and ends every call.
    fn end_calls(&mut self, out: &mut Vec<Event>) {
        for index in 0..self.calls.len() {
            if self.calls.get(index).is_some_and(|c| c.part.is_none()) {
                self.start_call(index, out);
            }
        }
        self.end_started_calls(out);
    }

    /// The closing events: open calls ended, then the finish (none after an error).
    fn close(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        if self.closed {
            return out;
        }
        self.closed = true;
        self.end_calls(&mut out);
        if !self.errored {
            let has_calls = !self.calls.is_empty();
            let reason = match &self.finish_raw {
                Some(raw) => decoded_finish(raw, has_calls),
                None if has_calls => FinishReason::ToolCalls,
                None => FinishReason::Stop,
            };
            out.push(Event::Finish {
                reason,
                raw: self.finish_raw.clone(),
            });
        }
        out
    }
}

/// The fields of a chunk the decoder reads, parsed as borrowed typed values: a chunk of
/// text, reasoning, a finish or usage (nearly every chunk of a stream) is read without
/// building a map of all its fields, which costs several times more. A chunk this parse
/// refuses (a field of an unexpected type, a repeated key) or one carrying tool calls or
/// an error is read from a `Value` by [`ChatStreamDecoder::chunk`], the lenient reader
/// that gives the same events for every plain chunk.
type PlainChunk<'a> = PlainTop<'a, PlainChoice<'a>>;

#[derive(Deserialize)]
struct PlainChoice<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    delta: Option<PlainTexts<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

impl PlainChunk<'_> {
    /// Neither an error nor tool calls, which only the lenient reader reads.
    fn is_plain(&self) -> bool {
        !self.has_error()
            && self
                .choices
                .iter()
                .flatten()
                .all(|c| c.delta.as_ref().is_none_or(|d| !d.has_tool_calls()))
    }
}

impl StreamDecoder for ChatStreamDecoder {
    fn ended(&self) -> bool {
        self.closed || self.errored
    }

    fn last_was_usage_alone(&self) -> bool {
        self.usage_alone
    }

    fn event(&mut self, event: &SseEvent) -> Result<Vec<Event>, DecodeError> {
        self.usage_alone = false;
        let data = event.data.trim();
        if data.is_empty() || self.closed {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            return Ok(self.close());
        }
        if let Ok(plain) = serde_json::from_str::<PlainChunk<'_>>(data) {
            if plain.is_plain() {
                // A `usage` of `null` is parsed as none.
                self.usage_alone =
                    plain.choices.as_ref().is_some_and(Vec::is_empty) && plain.usage.is_some();
                return Ok(self.plain_chunk(&plain));
            }
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            DecodeError::Malformed(format!(
                "chat stream chunk is not JSON ({e}); starts with: {}",
                preview(data.as_bytes())
            ))
        })?;
        // The lenient reader keeps the last of a repeated key, as this reads it.
        self.usage_alone = value
            .get("choices")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
            && value.get("usage").is_some_and(|u| !u.is_null());
        match &value {
            Value::Object(chunk) => self.chunk(chunk),
            other => Err(DecodeError::Malformed(format!(
                "chat stream chunk is a JSON {} instead of an object",
                json_type(other)
            ))),
        }
    }

    fn finish(&mut self) -> Result<Vec<Event>, DecodeError> {
        if self.closed || self.errored {
            return Ok(Vec::new());
        }
        if self.finish_raw.is_some() {
            // A finish arrived but `[DONE]` did not: the answer is whole, accept it.
            return Ok(self.close());
        }
        Err(DecodeError::Malformed(
            "chat stream ended before `data: [DONE]` and without a finish_reason: the stream was cut off"
                .into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::assemble;
    use crate::Reply;

    fn run(chunks: &[&str]) -> (Vec<Event>, Result<Vec<Event>, DecodeError>) {
        let mut d = ChatStreamDecoder::new();
        let mut events = Vec::new();
        for data in chunks {
            let sse = SseEvent {
                data: (*data).to_string(),
                ..SseEvent::default()
            };
            events.extend(d.event(&sse).unwrap());
        }
        (events, d.finish())
    }

    fn reply(chunks: &[&str]) -> Reply {
        let (mut events, rest) = run(chunks);
        events.extend(rest.unwrap());
        assemble(&events).unwrap()
    }

    /// The typed reading of plain chunks gives, chunk by chunk, the events of the
    /// lenient one (here forced, on a second decoder fed the same chunks).
    #[test]
    fn plain_chunks_read_typed_give_the_events_of_the_lenient_reader() {
        let streams: &[&[&str]] = &[
            &[
                r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}"#,
                r#"{"id":"c1","choices":[{"index":0,"delta":{"reasoning_content":"think \"hard\" \u00e9"}}]}"#,
                r#"{"id":"c1","choices":[{"index":0,"delta":{"reasoning":"more","content":"Hi"}}]}"#,
                r#"{"id":"c1","choices":[{"index":1,"delta":{"content":"other choice"}}]}"#,
                r#"{"id":"c1","choices":[{"index":0,"delta":{"content":" there\n"},"finish_reason":null}],"usage":null}"#,
                r#"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
                r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":2}}}"#,
            ],
            &[
                r#"{"choices":[{"delta":{"content":"a"}}],"error":null}"#,
                r#"{"choices":[{"delta":{"content":"b","tool_calls":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"prompt_cache_hit_tokens":2,"prompt_tokens_details":null}}"#,
            ],
            &[
                r#"{"model":"m2","choices":[{"index":0,"delta":{"reasoning_content":"","content":"x"}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"y"}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{}}}"#,
            ],
        ];
        for chunks in streams {
            let (mut typed, mut lenient) = (ChatStreamDecoder::new(), ChatStreamDecoder::new());
            for data in *chunks {
                let plain: PlainChunk<'_> = serde_json::from_str(data).unwrap();
                assert!(plain.is_plain(), "{data}");
                let value: Value = serde_json::from_str(data).unwrap();
                let expected = lenient.chunk(value.as_object().unwrap()).unwrap();
                let sse = SseEvent {
                    data: (*data).to_string(),
                    ..SseEvent::default()
                };
                assert_eq!(typed.event(&sse).unwrap(), expected, "{data}");
            }
            let done = SseEvent {
                data: "[DONE]".into(),
                ..SseEvent::default()
            };
            assert_eq!(typed.event(&done).unwrap(), lenient.event(&done).unwrap());
        }
    }

    /// Chunks the typed reading refuses or leaves to the lenient reader.
    #[test]
    fn chunks_that_are_not_plain_are_read_leniently() {
        for data in [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
        ] {
            let plain: PlainChunk<'_> = serde_json::from_str(data).unwrap();
            assert!(!plain.is_plain(), "{data}");
        }
        for data in [
            r#"{"id":7,"choices":[{"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"index":"0","delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":1.0}}"#,
            r#"{"choices":[{"delta":{"content":"a"}}],"choices":[]}"#,
        ] {
            assert!(
                serde_json::from_str::<PlainChunk<'_>>(data).is_err(),
                "{data}"
            );
            let mut d = ChatStreamDecoder::new();
            let sse = SseEvent {
                data: data.to_string(),
                ..SseEvent::default()
            };
            let events = d.event(&sse).unwrap();
            assert!(!events.is_empty(), "{data}");
        }
    }

    #[test]
    fn repeated_and_empty_names_neither_overwrite_nor_duplicate() {
        let r = reply(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"get","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"get","arguments":"{\"x\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"","function":{"name":"","arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        let calls: Vec<_> = r.tool_calls().collect();
        assert_eq!(calls.len(), 1);
        assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("a", "get"));
        assert_eq!(calls[0].arguments, r#"{"x":1}"#);
    }

    #[test]
    fn same_index_with_a_new_id_is_a_new_call_and_late_names_keep_arguments() {
        let r = reply(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"one","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"two","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"k\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c","function":{"name":"three","arguments":":2}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        let calls: Vec<_> = r
            .tool_calls()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(
            calls,
            [
                ("a", "one", "{}"),
                ("b", "two", "{}"),
                ("c", "three", r#"{"k":2}"#)
            ]
        );
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(r.finish_raw.as_deref(), Some("stop"));
    }

    #[test]
    fn parts_follow_kind_changes() {
        let (events, rest) = run(&[
            r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"a"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"b"}}]}"#,
            r#"{"choices":[{"delta":{"content":"c"}}]}"#,
            r#"{"choices":[{"delta":{"content":"d"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"content":"e"}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        ]);
        let parts: Vec<usize> = events
            .iter()
            .filter_map(|e| match e {
                Event::ThinkingDelta { part, .. } | Event::TextDelta { part, .. } => Some(*part),
                Event::ToolCallStart { part, .. } => Some(*part),
                _ => None,
            })
            .collect();
        assert_eq!(parts, [0, 0, 1, 1, 2, 3]);
        // The call ended when the text after it began.
        let end = events
            .iter()
            .position(|e| *e == Event::ToolCallEnd { part: 2 })
            .unwrap();
        let last_text = events
            .iter()
            .rposition(|e| matches!(e, Event::TextDelta { .. }))
            .unwrap();
        assert!(end < last_text);
        // A finish without [DONE] is accepted.
        assert!(matches!(rest.unwrap().last(), Some(Event::Finish { .. })));
    }

    #[test]
    fn a_cut_stream_is_an_error_and_an_error_chunk_is_an_event() {
        let (_, rest) = run(&[r#"{"choices":[{"delta":{"content":"par"}}]}"#]);
        let err = rest.unwrap_err();
        assert!(format!("{err}").contains("[DONE]"), "{err}");
        let (events, rest) = run(&[
            r#"{"choices":[{"delta":{"content":"par"}}]}"#,
            r#"{"error":{"message":"overloaded","type":"server_error","code":null}}"#,
        ]);
        assert!(matches!(events.last(), Some(Event::Error(e)) if e.message == "overloaded"));
        assert_eq!(rest.unwrap(), Vec::new());
        let mut d = ChatStreamDecoder::new();
        let bad = SseEvent {
            data: "[1]".into(),
            ..SseEvent::default()
        };
        assert!(d.event(&bad).is_err());
    }
}

//! Streams: `streamGenerateContent?alt=sse`, where every SSE `data:` is a whole
//! `GenerateContentResponse` chunk and there is no `[DONE]`.

use super::parts::{
    block_reason, candidate_content, content_parts, placement, read_part, reply_part,
    synthetic_call_id, text_part, Last, Placement, WirePart, SIGNATURE,
};
use super::reply::{
    error_object, first_candidate, provider_error, read_usage, response_object, wire_finish, Finish,
};
use crate::codec::{parse_object, DecodeError, ServerContext, StreamDecoder, StreamEncoder};
use crate::event::Event;
use crate::json::str_at;
use crate::part::{Opaque, Part, ToolCall, ToolKind};
use crate::reply::{FinishReason, Usage};
use crate::sse::{write_event, SseEvent};
use crate::Dialect;
use serde_json::Value;

/// The client-side stream decoder.
#[derive(Debug, Default)]
pub(super) struct Decoder {
    started: bool,
    id: Option<String>,
    model: Option<String>,
    /// Canonical parts started so far (the next part's index).
    parts: usize,
    last: Last,
    /// Function calls seen so far (their position, for synthesised ids).
    calls: usize,
    usage: Option<Usage>,
    finished: bool,
    errored: bool,
}

impl Decoder {
    fn part(&mut self, part: WirePart, out: &mut Vec<Event>) {
        match part {
            WirePart::Text {
                text,
                thought,
                signature,
            } => {
                let signed = signature.is_some();
                let index = match placement(self.last, &text, thought, signed) {
                    Placement::Skip => return,
                    Placement::Extend => self.parts.saturating_sub(1),
                    Placement::New => {
                        self.parts += 1;
                        self.parts - 1
                    }
                };
                if !text.is_empty() {
                    out.push(if thought {
                        Event::ThinkingDelta { part: index, text }
                    } else {
                        Event::TextDelta { part: index, text }
                    });
                }
                if let Some(sig) = signature {
                    let state = Opaque::new(Dialect::Gemini, sig);
                    out.push(if thought {
                        Event::ThinkingState {
                            part: index,
                            state,
                            redacted: false,
                            id: None,
                        }
                    } else {
                        Event::TextState { part: index, state }
                    });
                }
                self.last = if thought {
                    Last::Thinking { signed }
                } else {
                    Last::Text { signed }
                };
            }
            WirePart::Call {
                name,
                args,
                id,
                signature,
            } => {
                let index = self.parts;
                self.parts += 1;
                let id = id.unwrap_or_else(|| synthetic_call_id(0, self.calls, &name, &args));
                self.calls += 1;
                out.push(Event::ToolCallStart {
                    part: index,
                    id,
                    name,
                    kind: ToolKind::Function,
                    namespace: None,
                    state: signature.map(|s| Opaque::new(Dialect::Gemini, s)),
                });
                out.push(Event::ToolCallDelta {
                    part: index,
                    arguments: args,
                });
                out.push(Event::ToolCallEnd { part: index });
                self.last = Last::Closed;
            }
            // Events cannot carry images: an image in a stream is dropped (see the module
            // doc), and it still closes the part before it.
            WirePart::Image(_) => self.last = Last::Closed,
            WirePart::Response(_) | WirePart::Other => {}
        }
    }
}

impl StreamDecoder for Decoder {
    fn ended(&self) -> bool {
        self.finished || self.errored
    }

    fn event(&mut self, event: &SseEvent) -> Result<Vec<Event>, DecodeError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Vec::new());
        }
        let obj = parse_object(data.as_bytes(), "gemini stream chunk")?;
        let mut out = Vec::new();
        if let Some(error) = provider_error(&obj) {
            self.errored = true;
            out.push(Event::Error(error));
            return Ok(out);
        }
        let id = str_at(&obj, "responseId").map(str::to_string);
        let model = str_at(&obj, "modelVersion").map(str::to_string);
        let new_id = id.is_some() && id != self.id;
        let new_model = model.is_some() && model != self.model;
        if !self.started || new_id || new_model {
            self.started = true;
            if new_id {
                self.id.clone_from(&id);
            }
            if new_model {
                self.model.clone_from(&model);
            }
            out.push(Event::Start { id, model });
        }
        let candidate = first_candidate(&obj, "gemini stream chunk")?;
        if let Some(candidate) = candidate {
            let where_ = "gemini stream chunk candidates[0]";
            if let Some(content) = candidate_content(candidate, where_)? {
                let where_ = "gemini stream chunk candidates[0].content";
                for (i, value) in content_parts(content, where_)?.iter().enumerate() {
                    let part = read_part(value, &format!("{where_}.parts[{i}]"))?;
                    self.part(part, &mut out);
                }
            }
        }
        if let Some(usage) = read_usage(&obj, "gemini stream chunk")? {
            if self.usage != Some(usage) {
                self.usage = Some(usage);
                out.push(Event::Usage(usage));
            }
        }
        let finish = match candidate.and_then(|c| str_at(c, "finishReason")) {
            Some(raw) => Some((super::parts::finish_reason(raw, self.calls > 0), raw)),
            None => block_reason(&obj).map(|raw| (FinishReason::ContentFilter, raw)),
        };
        if let Some((reason, raw)) = finish {
            self.finished = true;
            out.push(Event::Finish {
                reason,
                raw: Some(raw.to_string()),
            });
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<Event>, DecodeError> {
        if self.finished || self.errored {
            Ok(Vec::new())
        } else {
            Err(DecodeError::Malformed(
                "gemini stream ended before any chunk carried a finishReason: it was cut off"
                    .into(),
            ))
        }
    }
}

/// The server-side stream encoder. Each content event becomes one chunk holding one
/// part, sent when the next event arrives, so that a signature can join the last text
/// chunk of its part and the finish reason and usage ride on the chunk of the last part.
#[derive(Debug)]
pub(super) struct Encoder {
    id: Option<String>,
    model: Option<String>,
    /// The wire part not yet written, and the canonical part it belongs to.
    pending: Option<Pending>,
    /// A tool call whose arguments are still arriving.
    call: Option<ToolCall>,
    usage: Option<Usage>,
    has_calls: bool,
    finished: bool,
}

#[derive(Debug)]
struct Pending {
    part: usize,
    thought: Option<bool>,
    value: Value,
}

impl Encoder {
    pub(super) fn new(context: &ServerContext) -> Self {
        Encoder {
            id: (!context.fallback_id.is_empty()).then(|| context.fallback_id.clone()),
            model: None,
            pending: None,
            call: None,
            usage: None,
            has_calls: false,
            finished: false,
        }
    }

    fn write(&self, out: &mut Vec<u8>, parts: Vec<Value>, finish: Option<Finish<'_>>) {
        let usage = if finish.is_some() || self.finished {
            self.usage.as_ref()
        } else {
            None
        };
        let chunk = response_object(
            parts,
            finish,
            usage,
            self.model.as_deref(),
            self.id.as_deref(),
        );
        write_event(out, None, &chunk.to_string());
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        if let Some(p) = self.pending.take() {
            self.write(out, vec![p.value], None);
        }
    }

    fn text(&mut self, part: usize, text: &str, thought: bool, out: &mut Vec<u8>) {
        if text.is_empty() {
            return;
        }
        self.flush(out);
        self.pending = Some(Pending {
            part,
            thought: Some(thought),
            value: text_part(text, thought, None),
        });
    }

    fn signature(&mut self, part: usize, state: &Opaque, thought: bool, out: &mut Vec<u8>) {
        if state.dialect != Dialect::Gemini {
            return;
        }
        if let Some(p) = &mut self.pending {
            if p.part == part && p.thought == Some(thought) {
                if let Value::Object(m) = &mut p.value {
                    m.insert(SIGNATURE.into(), Value::String(state.value.clone()));
                }
                return;
            }
        }
        self.flush(out);
        self.pending = Some(Pending {
            part,
            thought: Some(thought),
            value: text_part("", thought, Some(&state.value)),
        });
    }
}

impl StreamEncoder for Encoder {
    fn event(&mut self, event: &Event, out: &mut Vec<u8>) {
        match event {
            Event::Start { id, model } => {
                if id.is_some() {
                    self.id.clone_from(id);
                }
                if model.is_some() {
                    self.model.clone_from(model);
                }
            }
            Event::TextDelta { part, text } => self.text(*part, text, false, out),
            Event::ThinkingDelta { part, text } => self.text(*part, text, true, out),
            Event::TextState { part, state } => self.signature(*part, state, false, out),
            Event::ThinkingState { part, state, .. } => self.signature(*part, state, true, out),
            Event::ToolCallStart {
                id,
                name,
                kind,
                namespace,
                state,
                ..
            } => {
                self.flush(out);
                self.call = Some(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                    kind: *kind,
                    namespace: namespace.clone(),
                    state: state.clone(),
                });
            }
            Event::ToolCallDelta { arguments, .. } => {
                if let Some(call) = &mut self.call {
                    call.arguments.push_str(arguments);
                }
            }
            Event::ToolCallEnd { part } => {
                if let Some(call) = self.call.take() {
                    self.flush(out);
                    self.has_calls = true;
                    if let Some(value) = reply_part(&Part::ToolCall(call)) {
                        self.pending = Some(Pending {
                            part: *part,
                            thought: None,
                            value,
                        });
                    }
                }
            }
            Event::Usage(usage) => {
                self.usage = Some(*usage);
                if self.finished {
                    self.write(out, Vec::new(), None);
                }
            }
            Event::Finish { reason, raw } => {
                let parts: Vec<Value> = self.pending.take().map(|p| p.value).into_iter().collect();
                let finish = wire_finish(*reason, raw.as_deref(), self.has_calls);
                self.finished = true;
                self.write(out, parts, Some(finish));
            }
            Event::Error(error) => {
                self.flush(out);
                write_event(out, None, &error_object(error).to_string());
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        self.flush(out);
        // Gemini has no closing bytes: the chunk carrying finishReason ends the stream.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(data: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: data.to_string(),
            id: None,
        }
    }

    #[test]
    fn text_chunks_extend_one_part_and_a_thought_after_text_starts_a_new_one() {
        let mut d = Decoder::default();
        let mut events = Vec::new();
        for data in [
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}],"modelVersion":"m","responseId":"r"}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]}}],"modelVersion":"m","responseId":"r"}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"hmm","thought":true}]}}],"modelVersion":"m","responseId":"r"}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"!","thoughtSignature":"c2ln"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2},"modelVersion":"m","responseId":"r"}"#,
        ] {
            events.extend(d.event(&sse(data)).unwrap());
        }
        assert!(d.finish().unwrap().is_empty());
        let parts: Vec<usize> = events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { part, .. }
                | Event::ThinkingDelta { part, .. }
                | Event::TextState { part, .. } => Some(*part),
                _ => None,
            })
            .collect();
        assert_eq!(parts, vec![0, 0, 1, 2, 2]);
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, Event::Start { .. }))
                .count(),
            1
        );
    }

    #[test]
    fn a_stream_without_a_finish_reason_is_cut() {
        let mut d = Decoder::default();
        d.event(&sse(
            r#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}"#,
        ))
        .unwrap();
        let err = d.finish().unwrap_err();
        assert!(err.to_string().contains("cut off"), "{err}");
    }

    #[test]
    fn the_signature_joins_the_last_text_chunk() {
        let mut e = Encoder::new(&ServerContext::default());
        let mut out = Vec::new();
        e.event(
            &Event::TextDelta {
                part: 0,
                text: "a".into(),
            },
            &mut out,
        );
        e.event(
            &Event::TextDelta {
                part: 0,
                text: "b".into(),
            },
            &mut out,
        );
        e.event(
            &Event::TextState {
                part: 0,
                state: Opaque::new(Dialect::Gemini, "sig"),
            },
            &mut out,
        );
        e.event(
            &Event::Finish {
                reason: FinishReason::Stop,
                raw: None,
            },
            &mut out,
        );
        e.finish(&mut out);
        let text = String::from_utf8(out).unwrap();
        let chunks: Vec<&str> = text.split("\n\n").filter(|c| !c.is_empty()).collect();
        assert_eq!(chunks.len(), 2, "{text}");
        assert!(
            chunks[1].contains(r#""text":"b","thoughtSignature":"sig""#),
            "{text}"
        );
        assert!(chunks[1].contains(r#""finishReason":"STOP""#), "{text}");
    }
}

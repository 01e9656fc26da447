//! Streams, client side: `streamGenerateContent?alt=sse`, where every SSE `data:` is a
//! whole `GenerateContentResponse` chunk and there is no `[DONE]`, as canonical events.

use super::parts::{
    block_reason, candidate_content, content_parts, placement, read_part, synthetic_call_id, Last,
    Placement, WirePart,
};
use super::reply::{first_candidate, provider_error, read_usage};
use crate::codec::{parse_object, DecodeError, StreamDecoder};
use crate::event::Event;
use crate::json::str_at;
use crate::part::{Opaque, ToolKind};
use crate::reply::{FinishReason, Usage};
use crate::sse::SseEvent;
use crate::Dialect;

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
                        Event::ThinkingDelta {
                            part: index,
                            text,
                            id: None,
                        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{ServerContext, StreamEncoder};
    use crate::dialect::gemini::stream_encode::Encoder;

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

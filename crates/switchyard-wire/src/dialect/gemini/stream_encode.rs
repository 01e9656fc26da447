//! Streams, server side: canonical events as `streamGenerateContent?alt=sse` chunks (every
//! SSE `data:` a whole `GenerateContentResponse`, no `[DONE]`).

use super::parts::{reply_part, text_part, SIGNATURE};
use super::reply::{error_object, response_object, wire_finish, Finish};
use crate::codec::{ServerContext, StreamEncoder};
use crate::event::Event;
use crate::part::{Opaque, Part, ToolCall};
use crate::reply::Usage;
use crate::sse::write_event;
use crate::Dialect;
use serde_json::Value;

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
            Event::ThinkingDelta { part, text, .. } => self.text(*part, text, true, out),
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

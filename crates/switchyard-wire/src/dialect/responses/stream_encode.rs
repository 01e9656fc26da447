//! The server side of a streamed reply: canonical events → the Responses SSE grammar
//! Codex and the OpenAI SDKs consume.
//!
//! `response.created` and `response.in_progress` (each with a full `response` object)
//! open the stream; each canonical part becomes one output item framed by
//! `response.output_item.added` … `response.output_item.done` (always with the full
//! item), with `content_part.added/done` and `output_text.delta/done` for text,
//! `reasoning_summary_part.added/done` and `reasoning_summary_text.delta/done` for
//! thinking, and `function_call_arguments.delta/done` (or `custom_tool_call_input.*`) for
//! calls. An item keeps one id from `added` to `done`: a reasoning item takes the id
//! its part's first event names (the upstream's own `rs_…`), else a synthesised
//! `rs_<response>_<n>`, as do all other items; an id arriving only later (on the closing
//! state) is not used, since the client already tracks the item by the first. The
//! terminal `response.completed` (or `response.incomplete` for `Length` and
//! `ContentFilter`) carries every item and the usage, and is written by
//! [`StreamEncoder::finish`] once a finish event has been seen, so usage arriving after
//! the finish still makes it in; an error event becomes `response.failed` at once.
//! Without a finish or an error nothing terminal is written, so the client sees the
//! stream as cut off, which it was. Every event has an increasing `sequence_number`.

use super::items::{error_to, finish_to, reasoning_item, tool_call_item};
use super::reply::{item_id, message_item, ResponseObject};
use crate::codec::{ServerContext, StreamEncoder};
use crate::event::{Event, StreamError};
use crate::part::{Opaque, Thinking, ToolCall, ToolKind};
use crate::reply::{FinishReason, Usage};
use crate::sse::write_event;
use crate::Dialect;
use serde_json::{json, Map, Value};

/// What the open item is.
enum Kind {
    Text(String),
    Thinking {
        text: String,
        summary_open: bool,
        state: Option<Opaque>,
    },
    Call(ToolCall),
}

/// The item being streamed.
struct Open {
    part: usize,
    output_index: usize,
    item_id: String,
    kind: Kind,
}

/// Encodes one reply as a Responses stream.
pub struct ResponsesStreamEncoder {
    created: u64,
    id: String,
    model: Option<String>,
    sequence: u64,
    started: bool,
    open: Option<Open>,
    output: Vec<Value>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    done: bool,
}

impl ResponsesStreamEncoder {
    /// An encoder at the start of a stream.
    pub fn new(context: &ServerContext) -> Self {
        ResponsesStreamEncoder {
            created: context.created,
            id: context.fallback_id.clone(),
            model: None,
            sequence: 0,
            started: false,
            open: None,
            output: Vec::new(),
            usage: None,
            finish: None,
            done: false,
        }
    }

    fn emit(&mut self, out: &mut Vec<u8>, kind: &str, fields: Value) {
        let mut obj = Map::new();
        obj.insert("type".into(), kind.into());
        obj.insert("sequence_number".into(), self.sequence.into());
        self.sequence += 1;
        if let Value::Object(fields) = fields {
            obj.extend(fields);
        }
        let data = Value::Object(obj).to_string();
        write_event(out, Some(kind), &data);
    }

    fn response(&self, status: &str, incomplete: Option<&str>, error: Option<Value>) -> Value {
        ResponseObject {
            id: &self.id,
            model: self.model.as_deref(),
            created: self.created,
            status,
            incomplete,
            error,
            output: if status == "in_progress" {
                Vec::new()
            } else {
                self.output.clone()
            },
            usage: if status == "in_progress" {
                None
            } else {
                self.usage
            },
        }
        .to_value()
    }

    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        let response = self.response("in_progress", None, None);
        self.emit(out, "response.created", json!({ "response": response }));
        self.emit(out, "response.in_progress", json!({ "response": response }));
    }

    /// Makes `part` the open item, closing the previous one; `new` builds its kind. The
    /// item is named `id` when given, else by a synthesised id, for all its events.
    fn open(
        &mut self,
        part: usize,
        id: Option<&str>,
        out: &mut Vec<u8>,
        new: impl FnOnce() -> Kind,
    ) {
        if self.open.as_ref().is_some_and(|o| o.part == part) {
            return;
        }
        self.close(out);
        let output_index = self.output.len();
        let kind = new();
        let (prefix, added) = match &kind {
            Kind::Text(_) => ("msg", None),
            Kind::Thinking { .. } => ("rs", None),
            Kind::Call(call) => ("fc", Some(call)),
        };
        let item_id = match id {
            Some(id) => id.to_string(),
            None => item_id(prefix, &self.id, output_index),
        };
        let item = match (&kind, added) {
            (_, Some(call)) => tool_call_item(call, Some(&item_id), Some("in_progress")),
            (Kind::Text(_), _) => json!({"type": "message", "id": item_id,
                "status": "in_progress", "role": "assistant", "content": []}),
            _ => json!({"type": "reasoning", "id": item_id, "summary": []}),
        };
        self.emit(
            out,
            "response.output_item.added",
            json!({"output_index": output_index, "item": item}),
        );
        if matches!(kind, Kind::Text(_)) {
            self.emit(
                out,
                "response.content_part.added",
                json!({"item_id": item_id, "output_index": output_index, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
            );
        }
        self.open = Some(Open {
            part,
            output_index,
            item_id,
            kind,
        });
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        let Some(open) = self.open.take() else {
            return;
        };
        let (id, oi) = (open.item_id.as_str(), open.output_index);
        let item = match &open.kind {
            Kind::Text(text) => {
                self.emit(
                    out,
                    "response.output_text.done",
                    json!({"item_id": id, "output_index": oi, "content_index": 0,
                        "text": text, "logprobs": []}),
                );
                self.emit(
                    out,
                    "response.content_part.done",
                    json!({"item_id": id, "output_index": oi, "content_index": 0,
                        "part": {"type": "output_text", "text": text, "annotations": []}}),
                );
                message_item(id, text, "completed")
            }
            Kind::Thinking {
                text,
                summary_open,
                state,
            } => {
                if *summary_open {
                    self.emit(
                        out,
                        "response.reasoning_summary_text.done",
                        json!({"item_id": id, "output_index": oi, "summary_index": 0,
                            "text": text}),
                    );
                    self.emit(
                        out,
                        "response.reasoning_summary_part.done",
                        json!({"item_id": id, "output_index": oi, "summary_index": 0,
                            "part": {"type": "summary_text", "text": text}}),
                    );
                }
                let thinking = Thinking {
                    text: text.clone(),
                    state: state.clone(),
                    redacted: false,
                    id: None,
                };
                reasoning_item(&thinking, Some(id))
            }
            Kind::Call(call) => {
                let (kind, key) = match call.kind {
                    ToolKind::Function => ("response.function_call_arguments.done", "arguments"),
                    ToolKind::Custom => ("response.custom_tool_call_input.done", "input"),
                };
                let mut fields = json!({"item_id": id, "output_index": oi});
                if let Value::Object(f) = &mut fields {
                    f.insert(key.into(), call.arguments.clone().into());
                }
                self.emit(out, kind, fields);
                tool_call_item(call, Some(id), Some("completed"))
            }
        };
        self.emit(
            out,
            "response.output_item.done",
            json!({"output_index": oi, "item": item}),
        );
        self.output.push(item);
    }

    fn fail(&mut self, error: &StreamError, out: &mut Vec<u8>) {
        self.ensure_started(out);
        self.close(out);
        let response = self.response("failed", None, Some(error_to(error)));
        self.emit(out, "response.failed", json!({ "response": response }));
        self.done = true;
    }
}

/// A `response.failed` event on its own, for a stream another encoder began (a
/// passed-through upstream that broke off): the response named by `response_id` when
/// known, with no output (the client already has what came) and the error.
pub(super) fn failed_event(error: &StreamError, response_id: Option<&str>) -> Vec<u8> {
    let response = ResponseObject {
        id: response_id.unwrap_or("resp_failed"),
        model: None,
        created: 0,
        status: "failed",
        incomplete: None,
        error: Some(error_to(error)),
        output: Vec::new(),
        usage: None,
    }
    .to_value();
    let data = json!({"type": "response.failed", "response": response}).to_string();
    crate::sse::event_bytes(Some("response.failed"), &data)
}

impl StreamEncoder for ResponsesStreamEncoder {
    fn event(&mut self, event: &Event, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        if let Event::Start { id, model } = event {
            if !self.started {
                if let Some(id) = id {
                    self.id.clone_from(id);
                }
                self.model.clone_from(model);
            }
        }
        self.ensure_started(out);
        match event {
            Event::Start { .. } => {}
            Event::TextDelta { part, text } => {
                self.open(*part, None, out, || Kind::Text(String::new()));
                if let Some(Open {
                    kind: Kind::Text(acc),
                    item_id,
                    output_index,
                    ..
                }) = &mut self.open
                {
                    if text.is_empty() {
                        return;
                    }
                    acc.push_str(text);
                    let fields = json!({"item_id": item_id, "output_index": output_index,
                        "content_index": 0, "delta": text, "logprobs": []});
                    self.emit(out, "response.output_text.delta", fields);
                }
            }
            // Text state belongs to other dialects (Gemini): the item opens, the state goes.
            Event::TextState { part, .. } => {
                self.open(*part, None, out, || Kind::Text(String::new()))
            }
            Event::ThinkingDelta { part, text, id } => {
                self.open(*part, id.as_deref(), out, || Kind::Thinking {
                    text: String::new(),
                    summary_open: false,
                    state: None,
                });
                let mut events = Vec::new();
                if let Some(Open {
                    kind:
                        Kind::Thinking {
                            text: acc,
                            summary_open,
                            ..
                        },
                    item_id,
                    output_index,
                    ..
                }) = &mut self.open
                {
                    if text.is_empty() {
                        return;
                    }
                    if !*summary_open {
                        *summary_open = true;
                        events.push((
                            "response.reasoning_summary_part.added",
                            json!({"item_id": item_id, "output_index": output_index,
                                "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
                        ));
                    }
                    acc.push_str(text);
                    events.push((
                        "response.reasoning_summary_text.delta",
                        json!({"item_id": item_id, "output_index": output_index,
                            "summary_index": 0, "delta": text}),
                    ));
                }
                for (kind, fields) in events {
                    self.emit(out, kind, fields);
                }
            }
            Event::ThinkingState {
                part,
                state: new_state,
                id,
                ..
            } => {
                self.open(*part, id.as_deref(), out, || Kind::Thinking {
                    text: String::new(),
                    summary_open: false,
                    state: None,
                });
                if let Some(Open {
                    kind: Kind::Thinking { state, .. },
                    ..
                }) = &mut self.open
                {
                    if new_state.dialect == Dialect::Responses {
                        *state = Some(new_state.clone());
                    }
                }
            }
            Event::ToolCallStart {
                part,
                id,
                name,
                kind,
                namespace,
                ..
            } => {
                self.close(out);
                self.open(*part, None, out, || {
                    Kind::Call(ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: String::new(),
                        kind: *kind,
                        namespace: namespace.clone(),
                        state: None,
                    })
                });
            }
            Event::ToolCallDelta { part, arguments } => {
                if let Some(Open {
                    part: open_part,
                    kind: Kind::Call(call),
                    item_id,
                    output_index,
                }) = &mut self.open
                {
                    if *open_part != *part || arguments.is_empty() {
                        return;
                    }
                    call.arguments.push_str(arguments);
                    let kind = match call.kind {
                        ToolKind::Function => "response.function_call_arguments.delta",
                        ToolKind::Custom => "response.custom_tool_call_input.delta",
                    };
                    let fields = json!({"item_id": item_id, "output_index": output_index,
                        "delta": arguments});
                    self.emit(out, kind, fields);
                }
            }
            Event::ToolCallEnd { part } => {
                if self.open.as_ref().is_some_and(|o| o.part == *part) {
                    self.close(out);
                }
            }
            Event::Usage(usage) => self.usage = Some(*usage),
            Event::Finish { reason, .. } => {
                self.close(out);
                self.finish = Some(*reason);
            }
            Event::Error(error) => self.fail(error, out),
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        let Some(finish) = self.finish else {
            return;
        };
        self.ensure_started(out);
        self.close(out);
        let (status, incomplete) = finish_to(finish);
        let kind = if incomplete.is_some() {
            "response.incomplete"
        } else {
            "response.completed"
        };
        let response = self.response(status, incomplete, None);
        self.emit(out, kind, json!({ "response": response }));
        self.done = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::SseParser;

    #[test]
    fn sequence_numbers_increase_and_every_item_is_framed() {
        let mut enc = ResponsesStreamEncoder::new(&ServerContext {
            created: 1,
            fallback_id: "resp_x".into(),
        });
        let mut out = Vec::new();
        for e in [
            Event::TextDelta {
                part: 0,
                text: "hi".into(),
            },
            Event::Finish {
                reason: FinishReason::Stop,
                raw: None,
            },
            Event::Usage(Usage {
                input: 3,
                output: 1,
                ..Usage::default()
            }),
        ] {
            enc.event(&e, &mut out);
        }
        enc.finish(&mut out);
        let events = SseParser::new().push(&out);
        let names: Vec<_> = events.iter().filter_map(|e| e.event.clone()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        for (i, e) in events.iter().enumerate() {
            let v: Value = serde_json::from_str(&e.data).unwrap();
            assert_eq!(v["sequence_number"], i as u64);
        }
        let last: Value = serde_json::from_str(&events[8].data).unwrap();
        assert_eq!(last["response"]["usage"]["total_tokens"], 4);
        assert_eq!(last["response"]["output"][0]["content"][0]["text"], "hi");
    }
}

//! The client side of a streamed reply: Responses SSE events → canonical events.
//!
//! Items are tracked by `output_index` (falling back to `item_id`). Canonical part indices
//! are given out lazily, the first time an item (or a message's content part) produces an
//! event, so items with nothing to say (hosted tool calls, empty reasoning) take no part.
//! `response.output_item.done` (and the `.done` events before it) are authoritative: when
//! deltas were missed, the rest of the final text or arguments is emitted then — never
//! twice. A reasoning item's id rides on its part's first event (the part opens with
//! it) and again on its state, so an encoder names the item by it throughout. The stream
//! must end with `response.completed`, `response.incomplete`, `response.failed` or an
//! `error` event; [`StreamDecoder::finish`] fails otherwise.

use super::items::{
    error_from, finish_from, optional_str, reasoning_state, reasoning_text, usage_from,
    SUMMARY_SEPARATOR,
};
use super::reply::{failure, message_texts};
use crate::codec::{parse_object, DecodeError, StreamDecoder};
use crate::event::{Event, StreamError};
use crate::json::{obj_at, str_at, u64_at, Object};
use crate::part::ToolKind;
use crate::sse::SseEvent;
use serde_json::Value;

/// Text accumulated for one canonical part.
#[derive(Debug, Default)]
struct Acc {
    part: Option<usize>,
    text: String,
}

/// A tool call being streamed.
#[derive(Debug, Default)]
struct Call {
    started: bool,
    ended: bool,
    /// Argument fragments that came before the call could be started.
    pending: String,
}

/// What is known of one output item.
#[derive(Debug, Default)]
struct Item {
    output_index: Option<u64>,
    id: Option<String>,
    /// Message texts by content index.
    texts: Vec<Acc>,
    /// Reasoning text, and the summary/content section the last delta was in.
    thinking: Acc,
    section: Option<(bool, u64)>,
    /// Tool-call state and its accumulated arguments (in `thinking`-like `args`).
    call: Call,
    args: Acc,
}

/// Decodes one Responses stream.
#[derive(Debug, Default)]
pub struct ResponsesStreamDecoder {
    started: bool,
    ended: bool,
    next_part: usize,
    items: Vec<Item>,
    has_calls: bool,
}

impl ResponsesStreamDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn alloc(next_part: &mut usize, acc: &mut Acc) -> usize {
        match acc.part {
            Some(p) => p,
            None => {
                let p = *next_part;
                *next_part += 1;
                acc.part = Some(p);
                p
            }
        }
    }

    /// The index in `items` of the item an event names, created when new.
    fn item(&mut self, data: &Object) -> usize {
        let output_index = u64_at(data, "output_index");
        let id =
            str_at(data, "item_id").or_else(|| obj_at(data, "item").and_then(|i| str_at(i, "id")));
        let found = self.items.iter().position(|it| match output_index {
            Some(oi) => it.output_index == Some(oi),
            None => id.is_some() && it.id.as_deref() == id,
        });
        let index = match found {
            Some(i) => i,
            None => {
                self.items.push(Item {
                    output_index,
                    ..Item::default()
                });
                self.items.len() - 1
            }
        };
        if let (Some(id), Some(item)) = (id, self.items.get_mut(index)) {
            if item.id.is_none() {
                item.id = Some(id.to_string());
            }
        }
        index
    }

    fn text_delta(
        &mut self,
        index: usize,
        content_index: usize,
        delta: &str,
        out: &mut Vec<Event>,
    ) {
        let Some(item) = self.items.get_mut(index) else {
            return;
        };
        while item.texts.len() <= content_index {
            item.texts.push(Acc::default());
        }
        let Some(acc) = item.texts.get_mut(content_index) else {
            return;
        };
        if delta.is_empty() {
            return;
        }
        let part = Self::alloc(&mut self.next_part, acc);
        acc.text.push_str(delta);
        out.push(Event::TextDelta {
            part,
            text: delta.to_string(),
        });
    }

    /// The final text of a message content part: emits what the deltas missed.
    fn text_final(&mut self, index: usize, content_index: usize, text: &str, out: &mut Vec<Event>) {
        let Some(item) = self.items.get_mut(index) else {
            return;
        };
        while item.texts.len() <= content_index {
            item.texts.push(Acc::default());
        }
        let Some(acc) = item.texts.get_mut(content_index) else {
            return;
        };
        let Some(rest) = text.strip_prefix(acc.text.as_str()) else {
            return;
        };
        if acc.part.is_none() || !rest.is_empty() {
            let part = Self::alloc(&mut self.next_part, acc);
            acc.text.push_str(rest);
            out.push(Event::TextDelta {
                part,
                text: rest.to_string(),
            });
        }
    }

    /// The reasoning item's id when its thinking part has not opened yet (the next
    /// event opens it), else `None`: the id rides on the part's first event.
    fn opening_id(item: &Item) -> Option<String> {
        item.thinking
            .part
            .is_none()
            .then(|| item.id.clone())
            .flatten()
    }

    fn thinking_delta(
        &mut self,
        index: usize,
        section: (bool, u64),
        delta: &str,
        out: &mut Vec<Event>,
    ) {
        let Some(item) = self.items.get_mut(index) else {
            return;
        };
        if delta.is_empty() {
            return;
        }
        let mut text = String::new();
        if item.section.is_some_and(|s| s != section) && !item.thinking.text.is_empty() {
            text.push_str(SUMMARY_SEPARATOR);
        }
        item.section = Some(section);
        text.push_str(delta);
        let id = Self::opening_id(item);
        let part = Self::alloc(&mut self.next_part, &mut item.thinking);
        item.thinking.text.push_str(&text);
        out.push(Event::ThinkingDelta { part, text, id });
    }

    fn start_call(&mut self, index: usize, item_obj: &Object, out: &mut Vec<Event>) {
        let (Some(call_id), Some(name)) = (str_at(item_obj, "call_id"), str_at(item_obj, "name"))
        else {
            return;
        };
        let Some(item) = self.items.get_mut(index) else {
            return;
        };
        if item.call.started {
            return;
        }
        let part = Self::alloc(&mut self.next_part, &mut item.args);
        item.call.started = true;
        self.has_calls = true;
        out.push(Event::ToolCallStart {
            part,
            id: call_id.to_string(),
            name: name.to_string(),
            kind: if str_at(item_obj, "type") == Some("custom_tool_call") {
                ToolKind::Custom
            } else {
                ToolKind::Function
            },
            namespace: str_at(item_obj, "namespace").map(str::to_string),
            state: None,
        });
        let pending = std::mem::take(&mut item.call.pending);
        if !pending.is_empty() {
            item.args.text.push_str(&pending);
            out.push(Event::ToolCallDelta {
                part,
                arguments: pending,
            });
        }
    }

    fn args_delta(&mut self, index: usize, delta: &str, out: &mut Vec<Event>) {
        let Some(item) = self.items.get_mut(index) else {
            return;
        };
        if delta.is_empty() || item.call.ended {
            return;
        }
        match (item.call.started, item.args.part) {
            (true, Some(part)) => {
                item.args.text.push_str(delta);
                out.push(Event::ToolCallDelta {
                    part,
                    arguments: delta.to_string(),
                });
            }
            _ => item.call.pending.push_str(delta),
        }
    }

    fn args_final(&mut self, index: usize, arguments: &str, out: &mut Vec<Event>) {
        let Some(item) = self.items.get_mut(index) else {
            return;
        };
        if !item.call.started || item.call.ended {
            return;
        }
        let (Some(part), Some(rest)) = (
            item.args.part,
            arguments.strip_prefix(item.args.text.as_str()),
        ) else {
            return;
        };
        if !rest.is_empty() {
            item.args.text.push_str(rest);
            out.push(Event::ToolCallDelta {
                part,
                arguments: rest.to_string(),
            });
        }
    }

    fn end_call(&mut self, index: usize, out: &mut Vec<Event>) {
        let Some(item) = self.items.get_mut(index) else {
            return;
        };
        if let (true, false, Some(part)) = (item.call.started, item.call.ended, item.args.part) {
            item.call.ended = true;
            out.push(Event::ToolCallEnd { part });
        }
    }

    fn item_done(&mut self, data: &Object, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        let Some(item_obj) = obj_at(data, "item") else {
            return Err(DecodeError::Malformed(
                "responses stream: response.output_item.done has no `item` object".into(),
            ));
        };
        let index = self.item(data);
        match str_at(item_obj, "type") {
            Some("message") => {
                for (ci, text) in message_texts(item_obj).iter().enumerate() {
                    self.text_final(index, ci, text, out);
                }
            }
            Some("reasoning") => {
                let text = reasoning_text(item_obj);
                let state = reasoning_state(item_obj);
                let Some(item) = self.items.get_mut(index) else {
                    return Ok(());
                };
                if let Some(rest) = text.strip_prefix(item.thinking.text.as_str()) {
                    if !rest.is_empty() {
                        let id = Self::opening_id(item);
                        let part = Self::alloc(&mut self.next_part, &mut item.thinking);
                        item.thinking.text.push_str(rest);
                        out.push(Event::ThinkingDelta {
                            part,
                            text: rest.to_string(),
                            id,
                        });
                    }
                }
                if let Some(state) = state {
                    let part = Self::alloc(&mut self.next_part, &mut item.thinking);
                    out.push(Event::ThinkingState {
                        part,
                        state,
                        redacted: false,
                        id: str_at(item_obj, "id").map(str::to_string),
                    });
                }
            }
            Some(kind @ ("function_call" | "custom_tool_call")) => {
                self.start_call(index, item_obj, out);
                let key = if kind == "custom_tool_call" {
                    "input"
                } else {
                    "arguments"
                };
                if let Some(arguments) = optional_str(item_obj, key, "output_item.done item")? {
                    self.args_final(index, arguments, out);
                }
                self.end_call(index, out);
            }
            _ => {}
        }
        Ok(())
    }

    fn terminal(&mut self, kind: &str, data: &Object, out: &mut Vec<Event>) {
        self.ended = true;
        let response = obj_at(data, "response");
        if kind == "response.failed" {
            let error = response
                .and_then(failure)
                .unwrap_or_else(|| StreamError::message("the response failed"));
            out.push(Event::Error(error));
            return;
        }
        for i in 0..self.items.len() {
            self.end_call(i, out);
        }
        let calls_in_output = response
            .and_then(|r| r.get("output"))
            .and_then(Value::as_array)
            .is_some_and(|o| {
                o.iter().filter_map(Value::as_object).any(|i| {
                    matches!(
                        str_at(i, "type"),
                        Some("function_call" | "custom_tool_call")
                    )
                })
            });
        if let Some(usage) = response.and_then(|r| obj_at(r, "usage")) {
            out.push(Event::Usage(usage_from(usage)));
        }
        let status =
            response
                .and_then(|r| str_at(r, "status"))
                .or(Some(if kind == "response.incomplete" {
                    "incomplete"
                } else {
                    "completed"
                }));
        let mut reason = response
            .and_then(|r| obj_at(r, "incomplete_details"))
            .and_then(|d| str_at(d, "reason"));
        if kind == "response.incomplete" && reason.is_none() {
            reason = Some("incomplete");
        }
        let (reason, raw) = finish_from(status, reason, self.has_calls || calls_in_output);
        out.push(Event::Finish { reason, raw });
    }
}

fn index_at(data: &Object, key: &str) -> usize {
    u64_at(data, key)
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
        .min(1 << 16)
}

impl StreamDecoder for ResponsesStreamDecoder {
    fn ended(&self) -> bool {
        self.ended
    }

    fn event(&mut self, event: &SseEvent) -> Result<Vec<Event>, DecodeError> {
        let data = event.data.trim();
        if self.ended || data.is_empty() || data == "[DONE]" {
            return Ok(Vec::new());
        }
        let name = event.event.as_deref().unwrap_or("data-only event");
        let data = parse_object(data.as_bytes(), &format!("responses stream event `{name}`"))?;
        let Some(kind) = str_at(&data, "type").or(event.event.as_deref()) else {
            return Ok(Vec::new());
        };
        let kind = kind.to_string();
        let mut out = Vec::new();
        let delta = str_at(&data, "delta").unwrap_or_default();
        match kind.as_str() {
            "response.created" | "response.in_progress" | "response.queued" if !self.started => {
                self.started = true;
                let response = obj_at(&data, "response");
                out.push(Event::Start {
                    id: response.and_then(|r| str_at(r, "id")).map(str::to_string),
                    model: response
                        .and_then(|r| str_at(r, "model"))
                        .map(str::to_string),
                });
            }
            "response.output_item.added" => {
                let index = self.item(&data);
                if let Some(item) = obj_at(&data, "item") {
                    if matches!(
                        str_at(item, "type"),
                        Some("function_call" | "custom_tool_call")
                    ) {
                        self.start_call(index, item, &mut out);
                        let initial = str_at(item, "arguments")
                            .or_else(|| str_at(item, "input"))
                            .unwrap_or_default();
                        self.args_delta(index, initial, &mut out);
                    }
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let index = self.item(&data);
                let ci = index_at(&data, "content_index");
                self.text_delta(index, ci, delta, &mut out);
            }
            "response.output_text.done" | "response.refusal.done" => {
                let index = self.item(&data);
                let ci = index_at(&data, "content_index");
                let text = str_at(&data, "text").or_else(|| str_at(&data, "refusal"));
                if let Some(text) = text {
                    self.text_final(index, ci, text, &mut out);
                }
            }
            "response.content_part.done" => {
                let index = self.item(&data);
                let ci = index_at(&data, "content_index");
                if let Some(part) = obj_at(&data, "part") {
                    let text = match str_at(part, "type") {
                        Some("refusal") => str_at(part, "refusal"),
                        Some("output_text") => str_at(part, "text"),
                        _ => None,
                    };
                    if let Some(text) = text {
                        self.text_final(index, ci, text, &mut out);
                    }
                }
            }
            "response.reasoning_summary_text.delta" => {
                let index = self.item(&data);
                let section = (true, u64_at(&data, "summary_index").unwrap_or(0));
                self.thinking_delta(index, section, delta, &mut out);
            }
            "response.reasoning_text.delta" => {
                let index = self.item(&data);
                let section = (false, u64_at(&data, "content_index").unwrap_or(0));
                self.thinking_delta(index, section, delta, &mut out);
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                let index = self.item(&data);
                self.args_delta(index, delta, &mut out);
            }
            "response.function_call_arguments.done" | "response.custom_tool_call_input.done" => {
                let index = self.item(&data);
                let key = if kind.starts_with("response.custom") {
                    "input"
                } else {
                    "arguments"
                };
                if let Some(arguments) = str_at(&data, key) {
                    self.args_final(index, arguments, &mut out);
                }
            }
            "response.output_item.done" => self.item_done(&data, &mut out)?,
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.terminal(&kind, &data, &mut out)
            }
            "error" => {
                self.ended = true;
                let error = match obj_at(&data, "error") {
                    Some(inner) => error_from(inner, "the stream reported an error"),
                    None => StreamError {
                        kind: None,
                        code: optional_str(&data, "code", "responses stream `error` event")
                            .ok()
                            .flatten()
                            .map(str::to_string),
                        message: str_at(&data, "message")
                            .unwrap_or("the stream reported an error")
                            .to_string(),
                        status: None,
                    },
                };
                out.push(Event::Error(error));
            }
            // content_part.added, *.done of summaries, in_progress of hosted tools,
            // annotations…: nothing to add.
            _ => {}
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<Event>, DecodeError> {
        if self.ended {
            Ok(Vec::new())
        } else {
            Err(DecodeError::Malformed(
                "the responses stream ended before its terminal event (response.completed, \
                 response.incomplete or response.failed): it was cut off"
                    .into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn feed(decoder: &mut ResponsesStreamDecoder, events: &[Value]) -> Vec<Event> {
        let mut out = Vec::new();
        for e in events {
            let sse = SseEvent {
                event: e["type"].as_str().map(str::to_string),
                data: e.to_string(),
                id: None,
            };
            out.extend(decoder.event(&sse).unwrap());
        }
        out
    }

    #[test]
    fn missed_deltas_are_filled_in_from_the_done_item_without_duplication() {
        let mut d = ResponsesStreamDecoder::new();
        let events = feed(
            &mut d,
            &[
                json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"type": "function_call", "id": "fc_1", "call_id": "c1",
                        "name": "f", "arguments": ""}}),
                json!({"type": "response.function_call_arguments.delta", "output_index": 0,
                    "item_id": "fc_1", "delta": "{\"a\""}),
                json!({"type": "response.output_item.done", "output_index": 0,
                    "item": {"type": "function_call", "id": "fc_1", "call_id": "c1",
                        "name": "f", "arguments": "{\"a\":1}"}}),
                json!({"type": "response.output_item.done", "output_index": 0,
                    "item": {"type": "function_call", "id": "fc_1", "call_id": "c1",
                        "name": "f", "arguments": "{\"a\":1}"}}),
            ],
        );
        let args: String = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolCallDelta { arguments, .. } => Some(arguments.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(args, "{\"a\":1}");
        let ends = events
            .iter()
            .filter(|e| matches!(e, Event::ToolCallEnd { .. }))
            .count();
        assert_eq!(ends, 1);
    }

    #[test]
    fn parts_are_given_out_lazily_and_in_order() {
        let mut d = ResponsesStreamDecoder::new();
        let events = feed(
            &mut d,
            &[
                // A hosted tool item takes no part.
                json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"type": "web_search_call", "id": "ws_1"}}),
                json!({"type": "response.output_item.done", "output_index": 0,
                    "item": {"type": "web_search_call", "id": "ws_1"}}),
                json!({"type": "response.reasoning_summary_text.delta", "output_index": 1,
                    "item_id": "rs_1", "summary_index": 0, "delta": "a"}),
                json!({"type": "response.reasoning_summary_text.delta", "output_index": 1,
                    "item_id": "rs_1", "summary_index": 1, "delta": "b"}),
                json!({"type": "response.output_text.delta", "output_index": 2,
                    "item_id": "msg_1", "content_index": 0, "delta": "x"}),
            ],
        );
        assert_eq!(
            events,
            vec![
                Event::ThinkingDelta {
                    part: 0,
                    text: "a".into(),
                    id: Some("rs_1".into()),
                },
                Event::ThinkingDelta {
                    part: 0,
                    text: "\n\nb".into(),
                    id: None,
                },
                Event::TextDelta {
                    part: 1,
                    text: "x".into()
                },
            ]
        );
    }

    #[test]
    fn a_cut_stream_is_an_error_and_a_terminal_one_is_not() {
        let mut d = ResponsesStreamDecoder::new();
        feed(
            &mut d,
            &[json!({"type": "response.created", "response": {"id": "r"}})],
        );
        assert!(d.finish().is_err());
        feed(
            &mut d,
            &[
                json!({"type": "response.completed", "response": {"id": "r", "status": "completed", "output": []}}),
            ],
        );
        assert!(d.finish().is_ok());
    }
}

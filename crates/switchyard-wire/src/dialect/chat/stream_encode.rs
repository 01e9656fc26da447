//! The server-side stream encoder: canonical events to chat completion chunks.

use super::{error_to_chat, finish_to_chat, usage_to_chat, wire_tool_name};
use crate::codec::{ServerContext, StreamEncoder};
use crate::event::Event;
use crate::part::ToolKind;
use crate::reply::Usage;
use crate::sse::write_event;
use serde_json::{json, Value};

/// Encodes events as the chunks OpenAI sends: a first delta carrying the role, content
/// deltas (`content`, `reasoning_content`, `tool_calls` by index), a chunk with the
/// `finish_reason`, the usage-only chunk with `choices: []`, then `data: [DONE]`. Usage
/// is written at the end whatever its position among the events. After an error event
/// nothing more is written (no `[DONE]`), as a failing OpenAI stream does.
///
/// Custom (free-form) tool calls are sent as function calls whose arguments are
/// `{"input": "<text>"}`, streamed by escaping each fragment.
#[derive(Debug)]
pub struct ChatStreamEncoder {
    id: String,
    model: String,
    created: u64,
    role_sent: bool,
    /// Per started tool call: its content part, chat index and kind.
    calls: Vec<(usize, ToolKind)>,
    usage: Option<Usage>,
    failed: bool,
}

impl ChatStreamEncoder {
    /// An encoder for one stream.
    pub fn new(context: &ServerContext) -> Self {
        ChatStreamEncoder {
            id: context.fallback_id.clone(),
            model: String::new(),
            created: context.created,
            role_sent: false,
            calls: Vec::new(),
            usage: None,
            failed: false,
        }
    }

    fn chunk(&self, out: &mut Vec<u8>, delta: Value, finish: Option<String>) {
        let chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }],
        });
        write_event(out, None, &chunk.to_string());
    }

    fn ensure_role(&mut self, out: &mut Vec<u8>) {
        if !self.role_sent {
            self.role_sent = true;
            self.chunk(out, json!({ "role": "assistant", "content": "" }), None);
        }
    }

    fn call(&self, part: usize) -> Option<(usize, ToolKind)> {
        self.calls
            .iter()
            .position(|(p, _)| *p == part)
            .and_then(|i| self.calls.get(i).map(|(_, kind)| (i, *kind)))
    }
}

/// `text` escaped as the inside of a JSON string.
fn escaped(text: &str) -> String {
    let quoted = crate::json::quoted(text);
    quoted
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or_default()
        .to_string()
}

impl StreamEncoder for ChatStreamEncoder {
    fn event(&mut self, event: &Event, out: &mut Vec<u8>) {
        if self.failed {
            return;
        }
        match event {
            Event::Start { id, model } => {
                if let Some(id) = id {
                    self.id.clone_from(id);
                }
                if let Some(model) = model {
                    self.model.clone_from(model);
                }
                self.ensure_role(out);
            }
            Event::TextDelta { text, .. } => {
                self.ensure_role(out);
                if !text.is_empty() {
                    self.chunk(out, json!({ "content": text }), None);
                }
            }
            Event::ThinkingDelta { text, .. } => {
                self.ensure_role(out);
                if !text.is_empty() {
                    self.chunk(out, json!({ "reasoning_content": text }), None);
                }
            }
            // Chat has no carrier for opaque state.
            Event::TextState { .. } | Event::ThinkingState { .. } => {}
            Event::ToolCallStart {
                part,
                id,
                name,
                kind,
                namespace,
                ..
            } => {
                self.ensure_role(out);
                let index = self.calls.len();
                self.calls.push((*part, *kind));
                let arguments = match kind {
                    ToolKind::Function => "",
                    ToolKind::Custom => "{\"input\":\"",
                };
                let call = json!({
                    "index": index,
                    "id": id,
                    "type": "function",
                    "function": {
                        "name": wire_tool_name(name, namespace.as_deref()),
                        "arguments": arguments,
                    },
                });
                self.chunk(out, json!({ "tool_calls": [call] }), None);
            }
            Event::ToolCallDelta { part, arguments } => {
                if let Some((index, kind)) = self.call(*part) {
                    let arguments = match kind {
                        ToolKind::Function => arguments.clone(),
                        ToolKind::Custom => escaped(arguments),
                    };
                    let call = json!({ "index": index, "function": { "arguments": arguments } });
                    self.chunk(out, json!({ "tool_calls": [call] }), None);
                }
            }
            Event::ToolCallEnd { part } => {
                if let Some((index, ToolKind::Custom)) = self.call(*part) {
                    let call = json!({ "index": index, "function": { "arguments": "\"}" } });
                    self.chunk(out, json!({ "tool_calls": [call] }), None);
                }
            }
            Event::Usage(usage) => self.usage = Some(*usage),
            Event::Finish { reason, raw } => {
                self.ensure_role(out);
                self.chunk(
                    out,
                    json!({}),
                    Some(finish_to_chat(*reason, raw.as_deref())),
                );
            }
            Event::Error(error) => {
                self.failed = true;
                write_event(out, None, &error_to_chat(error).to_string());
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.failed {
            return;
        }
        if let Some(usage) = &self.usage {
            let chunk = json!({
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "choices": [],
                "usage": usage_to_chat(usage),
            });
            write_event(out, None, &chunk.to_string());
        }
        write_event(out, None, "[DONE]");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_tool_input_is_escaped_into_json_arguments() {
        assert_eq!(escaped("a\"b\n"), "a\\\"b\\n");
        let mut enc = ChatStreamEncoder::new(&ServerContext::default());
        let mut out = Vec::new();
        enc.event(
            &Event::ToolCallStart {
                part: 0,
                id: "c".into(),
                name: "apply_patch".into(),
                kind: ToolKind::Custom,
                namespace: None,
                state: None,
            },
            &mut out,
        );
        for piece in ["*** Begin", " \"Patch\"\n"] {
            enc.event(
                &Event::ToolCallDelta {
                    part: 0,
                    arguments: piece.into(),
                },
                &mut out,
            );
        }
        enc.event(&Event::ToolCallEnd { part: 0 }, &mut out);
        let text = String::from_utf8(out).unwrap();
        let args: String = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|v| {
                v["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&args).unwrap(),
            json!({"input": "*** Begin \"Patch\"\n"})
        );
    }
}

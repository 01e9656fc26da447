//! The server-side stream encoder: canonical events → the SSE grammar Claude Code and
//! the Anthropic SDKs read.
//!
//! `message_start` is written when the first event after `Start` arrives, so a usage
//! known before any content (a Messages or Responses upstream) rides in it. A usage
//! that arrives only after the content (chat upstreams send it last) cannot go back in
//! time: `message_start` then carries zeros and the full counts — input and cache counts
//! included, not only `output_tokens` — ride in `message_delta`, which is written at
//! [`finish`](StreamEncoder::finish) so that a usage following the finish still makes
//! it. Clients take the latest non-missing count, so both orders read the same.

use super::common::{error_to_wire, finish_to_wire, usage_to_wire};
use crate::codec::{ServerContext, StreamEncoder};
use crate::event::Event;
use crate::reply::{FinishReason, Usage};
use crate::sse::write_event;
use crate::Dialect;
use serde_json::{json, Value};

/// The kind of the block currently open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
    Tool,
    Redacted,
}

/// Encodes one Messages stream.
#[derive(Debug)]
pub(super) struct MessagesStreamEncoder {
    fallback_id: String,
    id: Option<String>,
    model: Option<String>,
    started: bool,
    /// The open block: (canonical part, wire index, kind).
    open: Option<(usize, usize, Open)>,
    next_index: usize,
    usage: Option<Usage>,
    finish: Option<(FinishReason, Option<String>)>,
    done: bool,
    /// Tool calls that started while another was still open (chat upstreams may
    /// interleave parallel calls; Anthropic blocks cannot): sent, in order, once the
    /// open one ends.
    queued: Vec<QueuedCall>,
}

/// A tool call waiting for its turn.
#[derive(Debug)]
struct QueuedCall {
    part: usize,
    id: String,
    name: String,
    arguments: String,
    ended: bool,
}

impl MessagesStreamEncoder {
    pub(super) fn new(context: &ServerContext) -> Self {
        MessagesStreamEncoder {
            fallback_id: context.fallback_id.clone(),
            id: None,
            model: None,
            started: false,
            open: None,
            next_index: 0,
            usage: None,
            finish: None,
            done: false,
            queued: Vec::new(),
        }
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        let message = json!({
            "type": "message_start",
            "message": {
                "id": self.id.clone().unwrap_or_else(|| self.fallback_id.clone()),
                "type": "message",
                "role": "assistant",
                "model": self.model.clone().unwrap_or_default(),
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": usage_to_wire(&self.usage.unwrap_or_default()),
            }
        });
        emit(out, "message_start", &message);
    }

    /// Makes `part` the open block of `kind`, closing another; returns its wire index.
    fn open(&mut self, part: usize, kind: Open, start_block: Value, out: &mut Vec<u8>) -> usize {
        if let Some((p, index, k)) = self.open {
            if p == part && k == kind {
                return index;
            }
        }
        self.close(out);
        let index = self.next_index;
        self.next_index += 1;
        self.open = Some((part, index, kind));
        emit(
            out,
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start_block}),
        );
        index
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        if let Some((_, index, _)) = self.open.take() {
            emit(
                out,
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            );
        }
    }

    /// Sends queued tool calls until one that has not ended is open.
    fn flush_queue(&mut self, out: &mut Vec<u8>) {
        while !self.queued.is_empty() {
            let call = self.queued.remove(0);
            let block = json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}});
            let index = self.open(call.part, Open::Tool, block, out);
            if !call.arguments.is_empty() {
                Self::delta(
                    out,
                    index,
                    json!({"type": "input_json_delta", "partial_json": call.arguments}),
                );
            }
            if !call.ended {
                return;
            }
            self.close(out);
        }
    }

    /// Before a block that is not a tool call: everything queued goes out whole.
    fn drain_queue(&mut self, out: &mut Vec<u8>) {
        while !self.queued.is_empty() {
            if let Some(call) = self.queued.first_mut() {
                call.ended = true;
            }
            self.flush_queue(out);
        }
    }

    fn delta(out: &mut Vec<u8>, index: usize, delta: Value) {
        emit(
            out,
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
    }
}

impl StreamEncoder for MessagesStreamEncoder {
    fn event(&mut self, event: &Event, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        match event {
            Event::Start { id, model } => {
                if id.is_some() {
                    self.id.clone_from(id);
                }
                if model.is_some() {
                    self.model.clone_from(model);
                }
                return;
            }
            Event::Usage(usage) => {
                self.usage = Some(*usage);
                return;
            }
            Event::Finish { reason, raw } => {
                self.finish = Some((*reason, raw.clone()));
                return;
            }
            Event::Error(error) => {
                // Anthropic ends a failing stream with the error event alone.
                emit(out, "error", &error_to_wire(error));
                self.done = true;
                return;
            }
            _ => {}
        }
        self.start(out);
        if !matches!(
            event,
            Event::ToolCallStart { .. } | Event::ToolCallDelta { .. } | Event::ToolCallEnd { .. }
        ) {
            if !self.queued.is_empty() {
                self.close(out);
            }
            self.drain_queue(out);
        }
        match event {
            Event::TextDelta { part, text } => {
                let index = self.open(*part, Open::Text, json!({"type": "text", "text": ""}), out);
                if !text.is_empty() {
                    Self::delta(out, index, json!({"type": "text_delta", "text": text}));
                }
            }
            Event::ThinkingDelta { part, text, .. } => {
                let block = json!({"type": "thinking", "thinking": "", "signature": ""});
                let index = self.open(*part, Open::Thinking, block, out);
                if !text.is_empty() {
                    Self::delta(
                        out,
                        index,
                        json!({"type": "thinking_delta", "thinking": text}),
                    );
                }
            }
            Event::ThinkingState {
                part,
                state,
                redacted,
                ..
            } => {
                let own = (state.dialect == Dialect::Messages).then_some(state.value.as_str());
                match (redacted, own) {
                    (true, Some(data)) => {
                        let block = json!({"type": "redacted_thinking", "data": data});
                        self.open(*part, Open::Redacted, block, out);
                    }
                    (false, Some(signature)) => {
                        let block = json!({"type": "thinking", "thinking": "", "signature": ""});
                        let index = self.open(*part, Open::Thinking, block, out);
                        Self::delta(
                            out,
                            index,
                            json!({"type": "signature_delta", "signature": signature}),
                        );
                    }
                    // Another dialect's state cannot be sent; the block (if any) stays
                    // unsigned.
                    _ => {}
                }
            }
            Event::ToolCallStart {
                part,
                id,
                name,
                namespace,
                ..
            } => {
                let name = &crate::part::flat_name(name, namespace.as_deref());
                if matches!(self.open, Some((_, _, Open::Tool))) || !self.queued.is_empty() {
                    self.queued.push(QueuedCall {
                        part: *part,
                        id: id.clone(),
                        name: name.clone(),
                        arguments: String::new(),
                        ended: false,
                    });
                } else {
                    let block = json!({"type": "tool_use", "id": id, "name": name, "input": {}});
                    self.open(*part, Open::Tool, block, out);
                }
            }
            Event::ToolCallDelta { part, arguments } => match self.open {
                Some((p, index, Open::Tool)) if p == *part => {
                    if !arguments.is_empty() {
                        Self::delta(
                            out,
                            index,
                            json!({"type": "input_json_delta", "partial_json": arguments}),
                        );
                    }
                }
                _ => {
                    if let Some(call) = self.queued.iter_mut().find(|c| c.part == *part) {
                        call.arguments.push_str(arguments);
                    }
                }
            },
            Event::ToolCallEnd { part } => {
                if matches!(self.open, Some((p, _, Open::Tool)) if p == *part) {
                    self.close(out);
                    self.flush_queue(out);
                } else if let Some(call) = self.queued.iter_mut().find(|c| c.part == *part) {
                    call.ended = true;
                }
            }
            // Gemini's text signatures have no Messages field.
            Event::TextState { .. } => {}
            Event::Start { .. } | Event::Usage(_) | Event::Finish { .. } | Event::Error(_) => {}
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.done = true;
        self.start(out);
        self.close(out);
        self.drain_queue(out);
        self.close(out);
        // A stream that ended without a finish (the gateway reports cut upstreams as an
        // error event instead) still closes with a well-formed `end_turn`.
        let (reason, raw) = self.finish.take().unwrap_or((FinishReason::Stop, None));
        let delta = json!({
            "type": "message_delta",
            "delta": {"stop_reason": finish_to_wire(reason, raw.as_deref()), "stop_sequence": null},
            "usage": usage_to_wire(&self.usage.unwrap_or_default()),
        });
        emit(out, "message_delta", &delta);
        emit(out, "message_stop", &json!({"type": "message_stop"}));
    }
}

fn emit(out: &mut Vec<u8>, name: &str, data: &Value) {
    write_event(out, Some(name), &data.to_string());
}

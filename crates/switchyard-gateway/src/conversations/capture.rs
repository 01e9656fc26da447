//! The reply as the client received it, taken from the bytes that went out, whole or
//! streamed, whichever path made them (passed through or translated): what a kept turn
//! stores, so that a later request expands to exactly what the client saw (its item ids,
//! its sealed opaque state).
//!
//! - Responses: the response object, whole, or from the stream's terminal
//!   `response.completed` / `response.incomplete` event, which carries every item.
//! - Messages: the message, whole, or assembled from the stream's events
//!   (`message_start`, the content blocks and their deltas, `message_delta`).

use serde_json::{Map, Value};
use switchyard::Dialect;
use switchyard_wire::sse::{SseEvent, SseParser};

/// What a reply's bytes are read into.
#[derive(Debug)]
pub(crate) struct Capture {
    dialect: Dialect,
    parser: Option<SseParser>,
    message: Option<MessageAssembly>,
    /// The reply, once whole.
    found: Option<Value>,
}

impl Capture {
    /// A capture of a reply in `dialect` (Responses or Messages).
    pub(crate) fn new(dialect: Dialect) -> Self {
        Capture {
            dialect,
            parser: None,
            message: None,
            found: None,
        }
    }

    /// A whole reply's body: a JSON object, or a stream written at once (a whole
    /// upstream reply the client asked to stream).
    pub(crate) fn whole(&mut self, body: &[u8]) {
        if body.trim_ascii_start().first() != Some(&b'{') {
            return self.chunk(body);
        }
        self.found = serde_json::from_slice::<Value>(body)
            .ok()
            .filter(Value::is_object);
    }

    /// The next bytes of a streamed reply.
    pub(crate) fn chunk(&mut self, bytes: &[u8]) {
        let parser = self.parser.get_or_insert_with(SseParser::new);
        for event in parser.push(bytes) {
            match self.dialect {
                Dialect::Responses => self.responses_event(&event),
                Dialect::Messages => {
                    let assembly = self.message.get_or_insert_with(MessageAssembly::default);
                    if let Some(done) = assembly.event(&event) {
                        self.found = Some(done);
                    }
                }
                _ => {}
            }
        }
    }

    fn responses_event(&mut self, event: &SseEvent) {
        let named = |name: &str| event.event.as_deref() == Some(name);
        // Only the terminal event is parsed; an unnamed event is looked at for its type.
        let terminal = named("response.completed")
            || named("response.incomplete")
            || (event.event.is_none()
                && (event.data.contains("\"response.completed\"")
                    || event.data.contains("\"response.incomplete\"")));
        if !terminal {
            return;
        }
        if let Ok(Value::Object(mut data)) = serde_json::from_str::<Value>(&event.data) {
            if let Some(response) = data.remove("response").filter(Value::is_object) {
                self.found = Some(response);
            }
        }
    }

    /// The reply, when it arrived whole: a Responses response object, or a Messages
    /// message.
    pub(crate) fn into_reply(self) -> Option<Value> {
        self.found
    }
}

/// A Messages stream's message, assembled event by event.
#[derive(Debug, Default)]
struct MessageAssembly {
    message: Map<String, Value>,
    blocks: Vec<Value>,
    /// A tool use's input as it streams (`input_json_delta`), by block.
    partial: Vec<String>,
}

/// The most content blocks one message is assembled with (a stream naming a block past
/// it is not kept).
const MOST_BLOCKS: usize = 4096;

impl MessageAssembly {
    /// Takes one event; the whole message at `message_stop`.
    fn event(&mut self, event: &SseEvent) -> Option<Value> {
        let Ok(Value::Object(data)) = serde_json::from_str::<Value>(&event.data) else {
            return None;
        };
        let index = || {
            data.get("index")
                .and_then(Value::as_u64)
                .map(|i| i as usize)
                .filter(|i| *i < MOST_BLOCKS)
        };
        match data.get("type").and_then(Value::as_str)? {
            "message_start" => {
                if let Some(Value::Object(m)) = data.get("message") {
                    self.message = m.clone();
                }
            }
            "content_block_start" => {
                let i = index()?;
                if self.blocks.len() <= i {
                    self.blocks.resize(i + 1, Value::Null);
                    self.partial.resize(i + 1, String::new());
                }
                self.blocks[i] = data.get("content_block").cloned().unwrap_or(Value::Null);
            }
            "content_block_delta" => {
                let i = index()?;
                let delta = data.get("delta")?;
                let block = self.blocks.get_mut(i)?.as_object_mut()?;
                let append = |block: &mut Map<String, Value>, field: &str, text: Option<&str>| {
                    let Some(text) = text else { return };
                    let mut now = block
                        .get(field)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    now.push_str(text);
                    block.insert(field.into(), Value::String(now));
                };
                let text = |f: &str| delta.get(f).and_then(Value::as_str);
                match delta.get("type").and_then(Value::as_str)? {
                    "text_delta" => append(block, "text", text("text")),
                    "thinking_delta" => append(block, "thinking", text("thinking")),
                    "signature_delta" => append(block, "signature", text("signature")),
                    "input_json_delta" => {
                        if let (Some(p), Some(more)) =
                            (self.partial.get_mut(i), text("partial_json"))
                        {
                            p.push_str(more);
                        }
                    }
                    "citations_delta" => {
                        if let Some(c) = delta.get("citation") {
                            let list = block
                                .entry("citations")
                                .or_insert_with(|| Value::Array(Vec::new()));
                            if let Value::Array(list) = list {
                                list.push(c.clone());
                            }
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let i = index()?;
                let partial = std::mem::take(self.partial.get_mut(i)?);
                if !partial.is_empty() {
                    let input = serde_json::from_str(&partial).unwrap_or(Value::Object(Map::new()));
                    if let Some(block) = self.blocks.get_mut(i).and_then(Value::as_object_mut) {
                        block.insert("input".into(), input);
                    }
                }
            }
            "message_delta" => {
                if let Some(Value::Object(delta)) = data.get("delta") {
                    for (k, v) in delta {
                        self.message.insert(k.clone(), v.clone());
                    }
                }
            }
            "message_stop" => {
                let mut message = std::mem::take(&mut self.message);
                let blocks = std::mem::take(&mut self.blocks);
                let content = blocks.into_iter().filter(|b| !b.is_null()).collect();
                message.insert("content".into(), Value::Array(content));
                return Some(Value::Object(message));
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sse(events: &[(&str, Value)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, data) in events {
            switchyard_wire::sse::write_event(&mut out, Some(name), &data.to_string());
        }
        out
    }

    #[test]
    fn a_messages_stream_is_assembled_as_the_whole_reply_would_read() {
        let bytes = sse(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": []}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "SIG"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "tu_1", "name": "f", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\":"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "1}"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]);
        let mut c = Capture::new(Dialect::Messages);
        // Cut anywhere, it reads the same.
        for piece in bytes.chunks(7) {
            c.chunk(piece);
        }
        let m = c.into_reply().unwrap();
        assert_eq!(m["id"], "msg_1");
        assert_eq!(m["stop_reason"], "tool_use");
        assert_eq!(
            m["content"],
            json!([{"type": "thinking", "thinking": "hm", "signature": "SIG"},
                   {"type": "tool_use", "id": "tu_1", "name": "f", "input": {"a": 1}}])
        );
    }

    #[test]
    fn a_responses_stream_gives_its_terminal_response_and_a_cut_one_nothing() {
        let done = json!({"type": "response.completed", "response": {"id": "resp_1", "output": [{"id": "rs_1", "type": "reasoning"}]}});
        let bytes = sse(&[
            (
                "response.created",
                json!({"type": "response.created", "response": {"id": "resp_1", "output": []}}),
            ),
            ("response.completed", done.clone()),
        ]);
        let mut c = Capture::new(Dialect::Responses);
        c.chunk(&bytes);
        assert_eq!(c.into_reply().unwrap(), done["response"]);
        let mut cut = Capture::new(Dialect::Responses);
        cut.chunk(&bytes[..bytes.len() / 2]);
        assert!(cut.into_reply().is_none());
        let mut whole = Capture::new(Dialect::Messages);
        whole.whole(b"not json");
        assert!(whole.into_reply().is_none());
        // Garbage and blocks past the bound do not panic.
        let mut odd = Capture::new(Dialect::Messages);
        odd.chunk(&sse(&[("x", json!({"type": "content_block_start", "index": 99999999999u64})), ("y", json!({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}}))]));
        assert!(odd.into_reply().is_none());
    }
}

//! What a request added to its conversation, read from its body when its turn is kept
//! (off the request's path: after the reply, before its last byte).

use super::turn::Turn;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use switchyard_wire::kept;

/// The request's own input items: a text as a user message, each item as OpenAI stores
/// it, a held item reference as the item.
pub(super) fn own_items<R: std::borrow::Borrow<Value>>(
    request: &Map<String, Value>,
    refs: &HashMap<&str, R>,
) -> Vec<Value> {
    match request.get("input") {
        Some(Value::String(text)) => vec![json!({
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        })],
        Some(Value::Array(input)) => input
            .iter()
            .map(|item| {
                let held = (item.get("type").and_then(Value::as_str) == Some("item_reference"))
                    .then(|| item.get("id").and_then(Value::as_str))
                    .flatten()
                    .and_then(|id| refs.get(id));
                match held {
                    Some(item) => item.borrow().clone(),
                    None => kept::normalized(item),
                }
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// What a Responses request added, read when its turn is kept.
#[derive(Debug)]
pub(crate) struct Response {
    pub(super) request: Bytes,
    pub(super) refs: Arc<HashMap<String, (Value, Option<String>)>>,
}

impl Response {
    /// The turn of response `id` (`reply`: the response object the client received).
    pub(crate) fn turn(self, id: &str, reply: Value) -> Option<Turn> {
        let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(&self.request) else {
            return None;
        };
        let refs: HashMap<&str, &Value> = self
            .refs
            .iter()
            .map(|(id, (item, _))| (id.as_str(), item))
            .collect();
        let mut input = own_items(&request, &refs);
        kept::assign_ids(&mut input, id);
        let output = reply
            .get("output")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Some(Turn {
            input,
            output,
            response: Some(reply),
            ..Turn::default()
        })
    }
}

/// What a thread's request added, read when its turn is kept.
#[derive(Debug)]
pub(crate) struct Thread {
    pub(super) request: Bytes,
    pub(super) system: Option<Value>,
    pub(super) tools: Option<Value>,
}

impl Thread {
    /// The turn of the reply (`reply`: the message the client received).
    pub(crate) fn turn(self, reply: Value) -> Option<Turn> {
        let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(&self.request) else {
            return None;
        };
        let field = |key: &str, inherited: Option<Value>| request.get(key).cloned().or(inherited);
        let input = match request.get("messages") {
            Some(Value::Array(m)) => m.clone(),
            _ => Vec::new(),
        };
        let content = reply.get("content").cloned().unwrap_or(json!([]));
        Some(Turn {
            input,
            output: vec![Value::Object(Map::from_iter([
                ("role".to_string(), json!("assistant")),
                ("content".to_string(), content),
            ]))],
            system: field("system", self.system),
            tools: field("tools", self.tools),
            ..Turn::default()
        })
    }
}

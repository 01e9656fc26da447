//! Input items as OpenAI stores them, and the ids it gives them.

use serde_json::{json, Value};

/// An input item as OpenAI stores it: a message item has `"type": "message"` and its text
/// content as a list of parts (`input_text`, or `output_text` for the assistant's).
/// Anything else is returned as it is.
pub fn normalized(item: &Value) -> Value {
    let mut item = item.clone();
    let Some(obj) = item.as_object_mut() else {
        return item;
    };
    let role = obj.get("role").and_then(Value::as_str).map(str::to_string);
    let Some(role) = role else { return item };
    if obj.get("type").is_some_and(|t| t != "message") {
        return item;
    }
    obj.insert("type".into(), json!("message"));
    if let Some(Value::String(text)) = obj.get("content") {
        let part = if role == "assistant" {
            json!({"type": "output_text", "text": text, "annotations": []})
        } else {
            json!({"type": "input_text", "text": text})
        };
        obj.insert("content".into(), json!([part]));
    }
    item
}

/// The id prefix OpenAI gives an item of this type.
pub fn item_prefix(kind: Option<&str>) -> &'static str {
    match kind {
        Some("message") => "msg",
        Some("function_call") => "fc",
        Some("function_call_output") => "fco",
        Some("custom_tool_call") => "ctc",
        Some("custom_tool_call_output") => "ctco",
        Some("reasoning") => "rs",
        _ => "item",
    }
}

/// Gives each item without a string `id` one of its own: `<prefix>_<stem>_in_<n>`,
/// `n` counting `items` from 0 (the stem is the response id without its `resp_`).
pub fn assign_ids(items: &mut [Value], response_id: &str) {
    let stem = response_id.strip_prefix("resp_").unwrap_or(response_id);
    for (n, item) in items.iter_mut().enumerate() {
        if let Some(obj) = item.as_object_mut() {
            if !obj.get("id").is_some_and(Value::is_string) {
                let prefix = item_prefix(obj.get("type").and_then(Value::as_str));
                obj.insert("id".into(), json!(format!("{prefix}_{stem}_in_{n}")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_stored_as_openai_lists_them() {
        assert_eq!(
            normalized(&json!({"role": "user", "content": "hi"})),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]})
        );
        assert_eq!(
            normalized(&json!({"role": "assistant", "content": "ok"}))["content"][0]["type"],
            "output_text"
        );
        let call = json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"});
        assert_eq!(normalized(&call), call);
        assert_eq!(normalized(&json!(7)), json!(7));
    }

    #[test]
    fn ids_are_given_only_where_missing() {
        let mut items = vec![
            json!({"type": "message", "role": "user", "content": []}),
            json!({"type": "function_call_output", "call_id": "c", "output": "x", "id": "keep"}),
            json!({"type": "function_call_output", "call_id": "c", "output": "y"}),
            json!(3),
        ];
        assign_ids(&mut items, "resp_abc");
        assert_eq!(items[0]["id"], "msg_abc_in_0");
        assert_eq!(items[1]["id"], "keep");
        assert_eq!(items[2]["id"], "fco_abc_in_2");
        assert_eq!(items[3], json!(3));
    }
}

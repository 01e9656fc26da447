//! Chat completions: a `tool` message must answer a call of an earlier assistant message.

use super::{array, str_at};
use crate::faults::openai_envelope;
use serde_json::Value;
use std::collections::HashSet;

/// OpenAI's refusal of a `tool` message whose `tool_call_id` matches no `tool_calls` id
/// of a preceding assistant message.
pub(super) fn check(body: &Value) -> Option<Value> {
    let mut calls: HashSet<&str> = HashSet::new();
    for (i, message) in array(body, "messages").iter().enumerate() {
        match str_at(message, "role") {
            Some("assistant") => calls.extend(
                array(message, "tool_calls")
                    .iter()
                    .filter_map(|c| str_at(c, "id")),
            ),
            Some("tool") => {
                let answered = str_at(message, "tool_call_id").is_some_and(|id| calls.contains(id));
                if !answered {
                    return Some(openai_envelope(
                        "Invalid parameter: messages with role 'tool' must be a response to a \
                         preceeding message with 'tool_calls'.",
                        "invalid_request_error",
                        Some(&format!("messages.[{i}].role")),
                        Value::Null,
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_messages_answer_earlier_calls() {
        let call = json!({"role":"assistant","content":null,
            "tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]});
        let good = json!({"messages":[{"role":"user","content":"hi"}, call,
            {"role":"tool","tool_call_id":"c1","content":"ok"}]});
        assert_eq!(check(&good), None);
        let bad = json!({"messages":[{"role":"user","content":"hi"}, call,
            {"role":"tool","tool_call_id":"c2","content":"ok"}]});
        let e = check(&bad).unwrap();
        assert_eq!(e["error"]["param"], "messages.[2].role");
        assert_eq!(e["error"]["code"], Value::Null);
        let orphan = json!({"messages":[{"role":"tool","content":"ok"}]});
        assert_eq!(
            check(&orphan).unwrap()["error"]["param"],
            "messages.[0].role"
        );
        assert_eq!(check(&json!({"messages": 3})), None);
        assert_eq!(check(&json!([1])), None);
    }
}

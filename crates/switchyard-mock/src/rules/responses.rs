//! OpenAI Responses: tool outputs answer earlier calls, and reasoning items carry the
//! mock's `encrypted_content`.

use super::{array, str_at};
use crate::faults::openai_envelope;
use crate::signing::{self, Kind};
use serde_json::{json, Value};
use std::collections::HashSet;

/// OpenAI's refusal of an output without its call (unless `previous_response_id` holds
/// the earlier items server-side) or of reasoning the mock did not encrypt.
pub(super) fn check(body: &Value) -> Option<Value> {
    let stateful = body
        .get("previous_response_id")
        .is_some_and(|v| v.as_str().is_some_and(|s| !s.is_empty()));
    let mut calls: HashSet<&str> = HashSet::new();
    for item in array(body, "input") {
        match str_at(item, "type") {
            Some("function_call" | "custom_tool_call") => calls.extend(str_at(item, "call_id")),
            Some("function_call_output" | "custom_tool_call_output") if !stateful => {
                let call_id = str_at(item, "call_id").unwrap_or_default();
                if !calls.contains(call_id) {
                    return Some(openai_envelope(
                        &format!(
                            "No tool call found for function call output with call_id {call_id}."
                        ),
                        "invalid_request_error",
                        Some("input"),
                        Value::Null,
                    ));
                }
            }
            Some("reasoning") => {
                let Some(content) = item.get("encrypted_content").filter(|v| !v.is_null()) else {
                    continue;
                };
                let ours = content
                    .as_str()
                    .is_some_and(|c| signing::verify_unbound(Kind::EncryptedContent, c));
                if !ours {
                    let id = str_at(item, "id").unwrap_or("None");
                    return Some(openai_envelope(
                        &format!(
                            "The encrypted content for item {id} could not be verified. Reason: \
                             Encrypted content could not be decrypted or parsed."
                        ),
                        "invalid_request_error",
                        None,
                        json!("invalid_encrypted_content"),
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

    fn output(call_id: &str) -> Value {
        json!({"type":"function_call_output","call_id":call_id,"output":"ok"})
    }

    #[test]
    fn outputs_need_their_calls_unless_the_history_is_server_side() {
        let call = json!({"type":"function_call","call_id":"c1","name":"f","arguments":"{}"});
        assert_eq!(check(&json!({"input":[call, output("c1")]})), None);
        let e = check(&json!({"input":[output("c9"), call]})).unwrap();
        assert_eq!(
            e["error"]["message"],
            "No tool call found for function call output with call_id c9."
        );
        assert_eq!(e["error"]["param"], "input");
        let stateful = json!({"previous_response_id":"resp_1","input":[output("c9")]});
        assert_eq!(check(&stateful), None);
        assert_eq!(check(&json!({"input":"hi"})), None);
        let custom =
            json!({"input":[{"type":"custom_tool_call_output","call_id":"x","output":"o"}]});
        assert!(check(&custom).is_some());
    }

    #[test]
    fn reasoning_must_be_the_mocks() {
        let ours = json!({"type":"reasoning","id":"rs_1","summary":[],
            "encrypted_content": signing::encrypted_content(3)});
        assert_eq!(check(&json!({"input":[ours]})), None);
        let plain = json!({"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":null});
        assert_eq!(check(&json!({"input":[plain]})), None);
        let forged =
            json!({"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"gAAAAB"});
        let e = check(&json!({"previous_response_id":"r","input":[forged]})).unwrap();
        assert_eq!(e["error"]["code"], "invalid_encrypted_content");
        assert_eq!(e["error"]["param"], Value::Null);
        assert!(e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("item rs_2 could"));
    }
}

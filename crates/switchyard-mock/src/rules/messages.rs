//! Anthropic Messages: thinking blocks carry the mock's signatures, and with thinking on
//! the final assistant message with `tool_use` blocks starts with its thinking.

use super::{array, str_at};
use crate::faults::anthropic_envelope;
use crate::signing::{self, Kind};
use serde_json::Value;

const THINKING_FIRST: &str = "When `thinking` is enabled, a final `assistant` message must \
start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` \
blocks). We recommend you include thinking blocks from previous turns. To avoid this \
requirement, disable `thinking`. Please consult our documentation at \
https://docs.claude.com/en/docs/build-with-claude/extended-thinking";

/// Anthropic's refusal of a thinking block the mock did not sign (checked whether or not
/// thinking is on), or of a final tool-using assistant message without its thinking.
pub(super) fn check(body: &Value, request_id: &str) -> Option<Value> {
    let refuse = |message: String| {
        Some(anthropic_envelope(
            "invalid_request_error",
            &message,
            request_id,
        ))
    };
    let messages = array(body, "messages");
    for (i, message) in messages.iter().enumerate() {
        if str_at(message, "role") != Some("assistant") {
            continue;
        }
        for (j, block) in array(message, "content").iter().enumerate() {
            match str_at(block, "type") {
                Some("thinking") => {
                    let text = str_at(block, "thinking").unwrap_or_default();
                    match str_at(block, "signature") {
                        None => {
                            return refuse(format!(
                                "messages.{i}.content.{j}.thinking.signature: Field required"
                            ))
                        }
                        Some(sig) if !signing::verify_thinking(text, sig) => {
                            return refuse(format!(
                                "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                            ))
                        }
                        Some(_) => {}
                    }
                }
                Some("redacted_thinking") => {
                    let data = str_at(block, "data").unwrap_or_default();
                    if !signing::verify_unbound(Kind::Redacted, data) {
                        return refuse(format!(
                            "messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"
                        ));
                    }
                }
                _ => {}
            }
        }
    }

    let thinking_on = body
        .get("thinking")
        .and_then(|t| str_at(t, "type"))
        .is_some_and(|t| matches!(t, "enabled" | "adaptive"));
    if !thinking_on {
        return None;
    }
    let (i, last) = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| str_at(m, "role") == Some("assistant"))?;
    let blocks = array(last, "content");
    let uses_tools = blocks.iter().any(|b| str_at(b, "type") == Some("tool_use"));
    let first = blocks.first().and_then(|b| str_at(b, "type"))?;
    if uses_tools && !matches!(first, "thinking" | "redacted_thinking") {
        return refuse(format!(
            "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found \
             `{first}`. {THINKING_FIRST}"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn history(assistant: Value, thinking: &str) -> Value {
        json!({"thinking": {"type": thinking, "budget_tokens": 1024}, "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}]},
        ]})
    }

    fn message(e: &Value) -> &str {
        e["error"]["message"].as_str().unwrap()
    }

    #[test]
    fn thinking_must_come_first_when_enabled() {
        let tool_use = json!({"type": "tool_use", "id": "t1", "name": "f", "input": {}});
        let e = check(&history(json!([tool_use]), "enabled"), "req_1").unwrap();
        assert!(message(&e).starts_with(
            "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When"
        ));
        assert_eq!(e["request_id"], "req_1");
        let text_first = json!([{"type": "text", "text": "hm"}, tool_use]);
        let e = check(&history(text_first, "adaptive"), "r").unwrap();
        assert!(message(&e).contains("but found `text`."));
        assert_eq!(check(&history(json!([tool_use]), "disabled"), "r"), None);
        let sig = signing::thinking_signature("plan", 1);
        let signed = json!([{"type": "thinking", "thinking": "plan", "signature": sig}, tool_use]);
        assert_eq!(check(&history(signed, "enabled"), "r"), None);
        assert_eq!(check(&history(json!("just text"), "enabled"), "r"), None);
    }

    #[test]
    fn signatures_and_redacted_data_must_be_the_mocks() {
        let sig = signing::thinking_signature("plan", 1);
        let changed = json!([{"type": "thinking", "thinking": "plan!", "signature": sig}]);
        let e = check(&history(changed, "disabled"), "r").unwrap();
        assert_eq!(
            message(&e),
            "messages.1.content.0: Invalid `signature` in `thinking` block"
        );
        let missing = json!([{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "p"}]);
        let e = check(&history(missing, "enabled"), "r").unwrap();
        assert_eq!(
            message(&e),
            "messages.1.content.1.thinking.signature: Field required"
        );
        let redacted = json!([{"type": "redacted_thinking", "data": "abc"}]);
        let e = check(&history(redacted, "enabled"), "r").unwrap();
        assert_eq!(
            message(&e),
            "messages.1.content.0: Invalid `data` in `redacted_thinking` block"
        );
        let ours = json!([{"type": "redacted_thinking", "data": signing::redacted_data(4)}]);
        assert_eq!(check(&history(ours, "enabled"), "r"), None);
        assert_eq!(check(&json!({"messages": {"no": "array"}}), "r"), None);
    }
}

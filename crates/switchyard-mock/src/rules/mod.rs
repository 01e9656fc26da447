//! The providers' multi-turn rules, checked on the raw JSON body of a request before the
//! mock answers it: a history a real provider would refuse gets that provider's 400 body.
//!
//! | dialect | rule (one file each) |
//! |---|---|
//! | chat | a `tool` message answers a `tool_calls` id of an earlier assistant message |
//! | responses | a `function_call_output` / `custom_tool_call_output` answers an earlier call in `input` (skipped with `previous_response_id`, which the mock's own route expands first: [`crate::stateful`]); a `reasoning` item's `encrypted_content` is the mock's |
//! | messages | thinking signatures and `redacted_thinking` data are the mock's; with thinking on, the final assistant message with `tool_use` starts with a thinking block |
//! | gemini | every `thoughtSignature` is the mock's; on Gemini 3 the first `functionCall` of each model step in the current turn is signed |
//!
//! Rules are on unless the model name says `lenient` or [`crate::MockConfig`]'s
//! `enforce_history` is false. A body that is not JSON, or not shaped as a rule expects,
//! is left to the codec (which answers 400 for what it cannot read): no rule panics.

mod chat;
mod gemini;
mod messages;
mod responses;

use crate::behaviour::Behaviour;
use crate::faults::ErrorResponse;
use serde_json::Value;
use switchyard_wire::Dialect;

/// The provider's refusal of this request's history, if it breaks a rule.
pub(crate) fn check(
    dialect: Dialect,
    body: &[u8],
    behaviour: &Behaviour,
    request_id: &str,
) -> Option<ErrorResponse> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let refusal = match dialect {
        Dialect::Chat => chat::check(&value),
        Dialect::Responses => responses::check(&value),
        Dialect::Messages => messages::check(&value, request_id),
        Dialect::Gemini => gemini::check(&value, behaviour.gemini3),
    }?;
    Some(ErrorResponse {
        status: 400,
        headers: Vec::new(),
        body: refusal.to_string().into_bytes(),
    })
}

/// `value[key]` as an array (empty when absent or not an array).
fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `value[key]` as a string.
fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn odd_bodies_are_left_alone_never_a_panic() {
        let odd = [
            json!(null),
            json!([1, 2]),
            json!("text"),
            json!({"messages": null, "input": 7, "contents": {"a": 1}}),
            json!({"messages": [null, 1, "x", {"role": 5}, {"role": "assistant", "content": [null, 3, {"type": 9}]},
                                {"role": "assistant", "tool_calls": [null, {"id": 4}]}],
                   "thinking": {"type": "enabled"}}),
            json!({"input": [null, [], {"type": "reasoning", "encrypted_content": 5}, {"type": "function_call_output"}],
                   "previous_response_id": null}),
            json!({"contents": [null, {"role": "model", "parts": [null, {"functionCall": 1}, {"thoughtSignature": 2}]}]}),
            json!({"messages": [{"role": "assistant", "content": [{"type": "thinking", "signature": null}]}]}),
        ];
        let behaviour = Behaviour {
            gemini3: true,
            ..Behaviour::default()
        };
        for body in &odd {
            let bytes = body.to_string();
            for d in Dialect::ALL {
                let _ = check(d, bytes.as_bytes(), &behaviour, "req");
            }
        }
        for d in Dialect::ALL {
            assert!(check(d, b"not json", &behaviour, "req").is_none());
        }
    }
}

//! Gemini: every `thoughtSignature` is the mock's, and on Gemini 3 the first
//! `functionCall` part of each model step in the current turn carries one.
//!
//! The current turn is every content after the last `user` content with a `text` part
//! (a user content of only `functionResponse` parts continues the turn). Parts are read
//! by either field name (`thoughtSignature` or `thought_signature`, `functionCall` or
//! `function_call`), as Google parses them.

use super::{array, str_at};
use crate::faults::gemini_envelope;
use crate::signing::{self, Kind};
use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use serde_json::{json, Value};

/// The values Google documents as skipping signature validation (for histories built
/// by hand or carried over from another model).
const DUMMY_SIGNATURES: &[&str] = &[
    "skip_thought_signature_validator",
    "context_engineering_is_the_way_to_go",
];

fn field<'a>(part: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    part.get(camel).or_else(|| part.get(snake))
}

/// Google reads `bytes` fields as base64 of either alphabet, padded or not (the
/// google-genai SDK sends back URL-safe what it received standard).
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let config =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    GeneralPurpose::new(&alphabet::STANDARD, config)
        .decode(text)
        .or_else(|_| GeneralPurpose::new(&alphabet::URL_SAFE, config).decode(text))
        .ok()
}

fn invalid_argument(message: &str, details: Vec<Value>) -> Value {
    gemini_envelope(400, message, "INVALID_ARGUMENT", details)
}

/// Gemini's refusal of a signature the mock did not issue, or (on Gemini 3) of a
/// current-turn function call without its signature.
pub(super) fn check(body: &Value, gemini3: bool) -> Option<Value> {
    let contents = array(body, "contents");
    for (i, content) in contents.iter().enumerate() {
        for (j, part) in array(content, "parts").iter().enumerate() {
            let Some(sig) = field(part, "thoughtSignature", "thought_signature") else {
                continue;
            };
            let Some(sig) = sig.as_str() else { continue };
            if DUMMY_SIGNATURES.contains(&sig) {
                continue;
            }
            let Some(bytes) = decode_base64(sig) else {
                let at = format!("contents[{i}].parts[{j}].thought_signature");
                let description = format!(
                    "Invalid value at '{at}' (TYPE_BYTES), Base64 decoding failed for \"{sig}\""
                );
                let violation = json!({
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [{"field": at, "description": description}],
                });
                return Some(invalid_argument(&description, vec![violation]));
            };
            if !signing::verify_bytes(Kind::ThoughtSignature, &bytes, b"") {
                return Some(invalid_argument("Corrupted thought signature.", Vec::new()));
            }
        }
    }
    if !gemini3 {
        return None;
    }
    let is_user = |c: &Value| str_at(c, "role").is_none_or(|r| r == "user");
    let start = contents
        .iter()
        .rposition(|c| is_user(c) && array(c, "parts").iter().any(|p| p.get("text").is_some()))
        .map_or(0, |i| i + 1);
    for (i, content) in contents.iter().enumerate().skip(start) {
        if str_at(content, "role") != Some("model") {
            continue;
        }
        let Some(first_call) = array(content, "parts")
            .iter()
            .find(|p| field(p, "functionCall", "function_call").is_some())
        else {
            continue;
        };
        let signed = field(first_call, "thoughtSignature", "thought_signature")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
        if !signed {
            let name = field(first_call, "functionCall", "function_call")
                .and_then(|c| str_at(c, "name"))
                .unwrap_or_default();
            let message = format!(
                "Function call is missing a thought_signature in functionCall parts. This is \
                 required for tools to work correctly, and missing thought_signature may lead to \
                 degraded model performance. Additional data, function call `default_api:{name}` \
                 , position {}. Please refer to \
                 https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
                i + 1
            );
            return Some(invalid_argument(&message, Vec::new()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, sig: Option<&str>) -> Value {
        let mut part = json!({"functionCall": {"name": name, "args": {}}});
        if let Some(s) = sig {
            part["thoughtSignature"] = json!(s);
        }
        part
    }

    fn body(model_parts: Vec<Value>) -> Value {
        json!({"contents": [
            {"role": "user", "parts": [{"text": "weather?"}]},
            {"role": "model", "parts": model_parts},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
        ]})
    }

    fn message(e: &Value) -> &str {
        e["error"]["message"].as_str().unwrap()
    }

    #[test]
    fn gemini_3_needs_the_first_call_of_each_step_signed() {
        let sig = signing::thought_signature(1);
        assert_eq!(
            check(&body(vec![call("f", Some(&sig)), call("g", None)]), true),
            None
        );
        let e = check(&body(vec![call("f", None)]), true).unwrap();
        assert!(message(&e).contains("function call `default_api:f` , position 2. Please"));
        assert_eq!(e["error"]["status"], "INVALID_ARGUMENT");
        assert_eq!(e["error"]["code"], 400);
        assert_eq!(check(&body(vec![call("f", None)]), false), None);
        // A call of an earlier turn need not be signed.
        let mut older = body(vec![call("f", None)]);
        older["contents"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "parts": [{"text": "thanks"}]}));
        assert_eq!(check(&older, true), None);
        let snake = json!({"contents": [{"role": "user", "parts": [{"text": "x"}]},
            {"role": "model", "parts": [{"function_call": {"name": "f"}, "thought_signature": sig}]}]});
        assert_eq!(check(&snake, true), None);
        let dummy = body(vec![call("f", Some("skip_thought_signature_validator"))]);
        assert_eq!(check(&dummy, true), None);
        // Sent back URL-safe and unpadded, as the google-genai SDK re-encodes bytes.
        let url_safe = sig.replace('+', "-").replace('/', "_").replace('=', "");
        assert_eq!(check(&body(vec![call("f", Some(&url_safe))]), true), None);
    }

    #[test]
    fn forged_signatures_are_refused_on_every_model() {
        let e = check(&body(vec![call("f", Some("c2lnbmF0dXJl"))]), false).unwrap();
        assert_eq!(message(&e), "Corrupted thought signature.");
        let e = check(&body(vec![call("f", Some("not base64!"))]), false).unwrap();
        assert_eq!(
            message(&e),
            "Invalid value at 'contents[1].parts[0].thought_signature' (TYPE_BYTES), Base64 decoding failed for \"not base64!\""
        );
        assert_eq!(
            e["error"]["details"][0]["fieldViolations"][0]["field"],
            "contents[1].parts[0].thought_signature"
        );
        assert_eq!(check(&json!({"contents": "x"}), true), None);
    }
}

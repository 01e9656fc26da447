//! Whether a whole reply body is a reply, and its usage, without decoding the reply.
//!
//! A reply passed through untouched (the gateway's same-dialect path) is relayed as bytes,
//! yet must be refused exactly where a decoded one would be: a body that is `null`, not
//! JSON, cut short, the provider's error object inside a 200, a reply with neither text
//! nor tool calls, a reply without usage. [`check_reply`] reads the body once at its top
//! level (and the few fields under it that say whether there is an answer), borrowing
//! every value as raw JSON: nothing is unescaped or built except the usage object. Only a
//! body that does not look plainly right is decoded whole, by the dialect's codec, so
//! that its error is the codec's own, word for word.

use crate::codec::DecodeError;
use crate::dialect::codec;
use crate::reply::{FinishReason, Reply, Usage};
use crate::{Dialect, Part};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Why a decoded reply is not an answer: neither text nor tool calls (unless the output
/// limit cut it short while it was still thinking), or no token usage. The rule every
/// path applies to a success, whole or streamed.
pub fn reply_problem(reply: &Reply) -> Option<&'static str> {
    if let Some(problem) = answer_problem(reply) {
        Some(problem)
    } else if reply.usage.is_none() {
        Some("the reply has no token usage")
    } else {
        None
    }
}

/// Why a decoded reply has no answer: neither text nor tool calls (unless the output
/// limit cut it short while it was still thinking). [`reply_problem`] without the usage
/// rule, for a backend that cannot know its usage (a Python function answering a str).
pub fn answer_problem(reply: &Reply) -> Option<&'static str> {
    let has_answer = reply.content.iter().any(|p| match p {
        Part::Text { text, .. } => !text.is_empty(),
        Part::ToolCall(_) => true,
        _ => false,
    });
    (!has_answer && reply.finish != FinishReason::Length)
        .then_some("the reply has neither text nor tool calls")
}

/// The usage of a whole reply body in `dialect`, once the body is known to be a reply
/// with an answer and usage; otherwise the error a full decode gives
/// ([`DecodeError::Provider`] for an error object, [`DecodeError::Malformed`] with the
/// codec's reason or [`reply_problem`]'s).
pub fn check_reply(dialect: Dialect, body: &[u8]) -> Result<Usage, DecodeError> {
    if let Some(usage) = plainly_a_reply(dialect, body) {
        // The usual case, without building a map of the usage object.
        if dialect == Dialect::Chat {
            if let Some(usage) = crate::dialect::chat::typed_usage(usage.get()) {
                return Ok(usage);
            }
        }
        if let Ok(map) = serde_json::from_str::<Map<String, Value>>(usage.get()) {
            return Ok(codec(dialect).decode_usage(&map));
        }
    }
    let reply = codec(dialect).decode_reply(body)?;
    match (reply_problem(&reply), reply.usage) {
        (None, Some(usage)) => Ok(usage),
        (Some(problem), _) => Err(DecodeError::Malformed(problem.to_string())),
        (None, None) => Err(DecodeError::Malformed(
            "the reply has no token usage".to_string(),
        )),
    }
}

/// The raw usage object when the body is plainly a reply: an object, no error, an answer
/// (non-empty text or a tool call) and a usage object. `None` says only "not plainly":
/// the full decode decides.
fn plainly_a_reply(dialect: Dialect, body: &[u8]) -> Option<&RawValue> {
    match dialect {
        Dialect::Chat => {
            let r: ChatReply = serde_json::from_slice(body).ok()?;
            let answered = r.choices.iter().any(|c| {
                c.message
                    .as_ref()
                    .is_some_and(|m| non_empty_text(m.content) || non_empty_list(m.tool_calls))
            });
            (no_error(r.error) && answered).then_some(r.usage).flatten()
        }
        Dialect::Responses => {
            let r: ResponsesReply = serde_json::from_slice(body).ok()?;
            let answered = r.output.iter().any(|item| match item.kind.as_ref() {
                "message" => item
                    .content
                    .iter()
                    .any(|c| c.kind == "output_text" && non_empty_text(c.text)),
                "function_call" | "custom_tool_call" => true,
                _ => false,
            });
            let failed = r.status.as_deref().is_some_and(|s| s != "completed");
            (no_error(r.error) && !failed && answered)
                .then_some(r.usage)
                .flatten()
        }
        Dialect::Messages => {
            let r: MessagesReply = serde_json::from_slice(body).ok()?;
            let answered = r.content.iter().any(|b| match b.kind.as_ref() {
                "text" => non_empty_text(b.text),
                "tool_use" => true,
                _ => false,
            });
            (r.kind.as_deref() == Some("message") && answered)
                .then_some(r.usage)
                .flatten()
        }
        Dialect::Gemini => {
            let r: GeminiReply = serde_json::from_slice(body).ok()?;
            let first = r.candidates.first()?;
            let answered = first.content.as_ref().is_some_and(|c| {
                c.parts
                    .iter()
                    .any(|p| p.function_call.is_some() || (!p.thought && non_empty_text(p.text)))
            });
            (no_error(r.error) && answered)
                .then_some(r.usage_metadata)
                .flatten()
        }
    }
}

fn no_error(error: Option<&RawValue>) -> bool {
    error.is_none_or(|e| e.get() == "null")
}

/// A JSON string value that is not `""` (a string's raw text is empty only as `""`).
fn non_empty_text(value: Option<&RawValue>) -> bool {
    value.is_some_and(|v| v.get().starts_with('"') && v.get() != "\"\"")
}

/// A JSON array with at least one element.
fn non_empty_list(value: Option<&RawValue>) -> bool {
    value.is_some_and(|v| v.get().starts_with('[') && !crate::json::is_empty_raw_array(v))
}

// Borrowed shapes: every field is optional, unknown fields are skipped (validated, not
// built), and values stay raw JSON.

#[derive(Deserialize)]
struct ChatReply<'a> {
    #[serde(borrow, default)]
    choices: Vec<ChatChoice<'a>>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ChatChoice<'a> {
    #[serde(borrow)]
    message: Option<ChatMessage<'a>>,
}

#[derive(Deserialize)]
struct ChatMessage<'a> {
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    tool_calls: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ResponsesReply<'a> {
    #[serde(borrow, default)]
    output: Vec<ResponsesItem<'a>>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ResponsesItem<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    content: Vec<ResponsesContent<'a>>,
}

#[derive(Deserialize)]
struct ResponsesContent<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct MessagesReply<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Vec<MessagesBlock<'a>>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct MessagesBlock<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GeminiReply<'a> {
    #[serde(borrow, default)]
    candidates: Vec<GeminiCandidate<'a>>,
    #[serde(borrow)]
    usage_metadata: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct GeminiCandidate<'a> {
    #[serde(borrow)]
    content: Option<GeminiContent<'a>>,
}

#[derive(Deserialize)]
struct GeminiContent<'a> {
    #[serde(borrow, default)]
    parts: Vec<GeminiPart<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GeminiPart<'a> {
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(default)]
    thought: bool,
    #[serde(borrow)]
    function_call: Option<&'a RawValue>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::ServerContext;
    use crate::part::ToolCall;

    fn reply(content: Vec<Part>, usage: Option<Usage>) -> Reply {
        Reply {
            content,
            finish: FinishReason::Stop,
            usage,
            ..Reply::default()
        }
    }

    fn usage() -> Usage {
        Usage {
            input: 12,
            cached_input: 2,
            cache_write: 0,
            output: 7,
            reasoning: 0,
        }
    }

    #[test]
    fn a_reply_with_an_answer_gives_the_usage_a_full_decode_gives() {
        let call = ToolCall {
            id: "c1".into(),
            name: "f".into(),
            arguments: "{}".into(),
            kind: Default::default(),
            namespace: None,
            state: None,
        };
        for content in [vec![Part::text("hi \"there\"")], vec![Part::ToolCall(call)]] {
            let r = reply(content, Some(usage()));
            for d in Dialect::ALL {
                let body = codec(d).encode_reply(&r, &ServerContext::default());
                let full = codec(d).decode_reply(&body).unwrap().usage.unwrap();
                assert_eq!(check_reply(d, &body), Ok(full), "{d}");
                assert!(plainly_a_reply(d, &body).is_some(), "{d}: the fast path");
            }
        }
    }

    #[test]
    fn what_is_not_a_reply_gets_the_codecs_own_error() {
        for d in Dialect::ALL {
            for body in [&b"null"[..], b"<html>502</html>", b"{\"id\": \"x\", \"cho"] {
                assert!(
                    matches!(check_reply(d, body), Err(DecodeError::Malformed(_))),
                    "{d}: {}",
                    String::from_utf8_lossy(body)
                );
            }
            let empty = codec(d).encode_reply(
                &reply(vec![Part::text("")], Some(usage())),
                &ServerContext::default(),
            );
            assert_eq!(
                check_reply(d, &empty),
                Err(DecodeError::Malformed(
                    "the reply has neither text nor tool calls".into()
                )),
                "{d}"
            );
            // As the mock's `no-usage` sends it: the usage key removed from the body.
            let mut body: Map<String, Value> = serde_json::from_slice(&codec(d).encode_reply(
                &reply(vec![Part::text("x")], Some(usage())),
                &ServerContext::default(),
            ))
            .unwrap();
            body.remove(crate::usage_scan::usage_key(d));
            let no_usage = serde_json::to_vec(&body).unwrap();
            assert_eq!(
                check_reply(d, &no_usage),
                Err(DecodeError::Malformed(
                    "the reply has no token usage".into()
                )),
                "{d}: {}",
                String::from_utf8_lossy(&no_usage)
            );
        }
    }

    #[test]
    fn an_error_object_in_a_200_is_the_providers_error() {
        let bodies = [
            (
                Dialect::Chat,
                r#"{"error":{"message":"busy","type":"server_error","code":null}}"#,
            ),
            (
                Dialect::Messages,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
            (
                Dialect::Gemini,
                r#"{"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}}"#,
            ),
        ];
        for (d, body) in bodies {
            assert!(
                matches!(
                    check_reply(d, body.as_bytes()),
                    Err(DecodeError::Provider(_))
                ),
                "{d}"
            );
        }
    }
}

//! Non-streamed replies: decoding a chat completion (client side) and encoding one
//! (server side).

use super::request::decode_tool_call;
use super::request::encode_tool_call;
use super::{
    decoded_finish, error_from_chat, finish_to_chat, reasoning_text, usage_from_chat,
    usage_to_chat, ChatUsage, PlainTexts, PlainTop, PlainUsage,
};
use crate::codec::{parse_object, DecodeError, ServerContext};
use crate::json::{as_obj, require_arr, require_obj, str_at};
use crate::part::{Part, Thinking};
use crate::reply::{FinishReason, Reply};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// A chat completion body as a canonical reply.
pub(super) fn decode(body: &[u8]) -> Result<Reply, DecodeError> {
    if let Ok(plain) = serde_json::from_slice::<PlainReply<'_>>(body) {
        if let Some(reply) = plain.reply(body) {
            return Ok(reply);
        }
    }
    decode_lenient(body)
}

/// The fields of a completion [`decode_lenient`] reads, parsed as borrowed typed values:
/// a reply of text (and reasoning) with its finish and usage, the common case, is read
/// without building a map of all its fields. A body this parse refuses (a field of an
/// unexpected type, a repeated key), or one with tool calls, an error, array content or
/// no choice, is read by [`decode_lenient`], which gives the same reply for every plain
/// body.
type PlainReply<'a> = PlainTop<'a, PlainChoice<'a>>;

#[derive(Deserialize)]
struct PlainChoice<'a> {
    #[serde(borrow, default)]
    message: Option<PlainTexts<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

impl PlainReply<'_> {
    /// The reply, unless the body is one only the lenient reader reads.
    fn reply(self, body: &[u8]) -> Option<Reply> {
        if self.has_error() {
            return None;
        }
        let choice = self.choices?.into_iter().next()?;
        let message = choice.message?;
        if message.has_tool_calls() {
            return None;
        }
        let mut content = Vec::new();
        if let Some(text) = message.reasoning() {
            content.push(Part::Thinking(Thinking {
                text: text.to_owned(),
                ..Thinking::default()
            }));
        }
        if let Some(text) = message.content.filter(|t| !t.is_empty()) {
            content.push(Part::text(text.into_owned()));
        }
        let finish_raw = choice.finish_reason.map(Cow::into_owned);
        Some(Reply {
            content,
            finish: finish_raw
                .as_deref()
                .map_or(FinishReason::Stop, |raw| decoded_finish(raw, false)),
            finish_raw,
            usage: self.usage.as_ref().map(PlainUsage::canonical),
            model: self.model.map(Cow::into_owned),
            id: self.id.map(Cow::into_owned),
            raw: Bytes::copy_from_slice(body),
        })
    }
}

/// A chat completion body as a canonical reply, read from a `Value`: any shape the
/// dialect allows, and the error that names what is wrong with one it does not.
fn decode_lenient(body: &[u8]) -> Result<Reply, DecodeError> {
    const WHERE: &str = "chat completion";
    let obj = parse_object(body, WHERE)?;
    if let Some(error) = obj.get("error").filter(|e| !e.is_null()) {
        return Err(DecodeError::Provider(error_from_chat(error)));
    }
    let choices = require_arr(&obj, "choices", WHERE)?;
    let choice = choices.first().ok_or_else(|| {
        DecodeError::Malformed(format!("{WHERE}: `choices` is empty, so there is no reply"))
    })?;
    let choice = as_obj(choice, "chat completion choices[0]")?;
    let message = require_obj(choice, "message", "chat completion choices[0]")?;
    let at = "chat completion choices[0].message";

    let mut content = Vec::new();
    if let Some(reasoning) = reasoning_text(message) {
        content.push(Part::Thinking(Thinking {
            text: reasoning.to_string(),
            ..Thinking::default()
        }));
    }
    let text = match message.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        // Some servers answer with an array of text parts.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        Some(other) => {
            return Err(crate::json::wrong_type(
                at,
                "content",
                "a string or null",
                other,
            ))
        }
    };
    if !text.is_empty() {
        content.push(Part::text(text));
    }
    let mut has_calls = false;
    match message.get("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(calls)) => {
            for (i, call) in calls.iter().enumerate() {
                let where_ = format!("{at}.tool_calls[{i}]");
                content.push(Part::ToolCall(decode_tool_call(call, i, &where_)?));
                has_calls = true;
            }
        }
        Some(other) => return Err(crate::json::wrong_type(at, "tool_calls", "an array", other)),
    }

    let finish_raw = str_at(choice, "finish_reason").map(str::to_string);
    let finish = match &finish_raw {
        Some(raw) => decoded_finish(raw, has_calls),
        None if has_calls => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    Ok(Reply {
        content,
        finish,
        finish_raw,
        usage: usage_from_chat(obj.get("usage")),
        model: str_at(&obj, "model").map(str::to_string),
        id: str_at(&obj, "id").map(str::to_string),
        raw: Bytes::copy_from_slice(body),
    })
}

/// A canonical reply as a chat completion body, written straight from typed fields in
/// OpenAI's order of keys (no map of values is built for a reply that has one shape).
pub(super) fn encode(reply: &Reply, context: &ServerContext) -> Vec<u8> {
    let has_text = reply.content.iter().any(|p| matches!(p, Part::Text { .. }));
    let thinking = reply.thinking();
    let body = Completion {
        id: reply.id.as_deref().unwrap_or(&context.fallback_id),
        object: "chat.completion",
        created: context.created,
        model: reply.model.as_deref().unwrap_or_default(),
        choices: [Choice {
            index: 0,
            message: Message {
                role: "assistant",
                content: has_text.then(|| reply.text()),
                reasoning_content: (!thinking.is_empty()).then_some(thinking),
                tool_calls: reply.tool_calls().map(encode_tool_call).collect(),
                refusal: (),
            },
            logprobs: (),
            finish_reason: finish_to_chat(reply.finish, reply.finish_raw.as_deref()),
        }],
        usage: reply.usage.as_ref().map(usage_to_chat),
    };
    // Serialising strings, numbers and `Value`s cannot fail.
    serde_json::to_vec(&body).unwrap_or_default()
}

/// A chat completion as written (`()` is written `null`).
#[derive(Serialize)]
struct Completion<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [Choice; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<ChatUsage>,
}

#[derive(Serialize)]
struct Choice {
    index: u32,
    message: Message,
    logprobs: (),
    finish_reason: String,
}

#[derive(Serialize)]
struct Message {
    role: &'static str,
    content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<Value>,
    refusal: (),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body is written in OpenAI's order of keys, byte for byte, with and without
    /// the optional fields.
    #[test]
    fn a_reply_is_written_in_openais_order() {
        let context = ServerContext {
            created: 7,
            fallback_id: "chatcmpl-x".into(),
        };
        let mut reply = Reply {
            content: vec![Part::text("Hi \"you\"")],
            finish: FinishReason::Stop,
            finish_raw: None,
            usage: None,
            model: Some("m".into()),
            id: None,
            raw: Bytes::new(),
        };
        assert_eq!(
            String::from_utf8(encode(&reply, &context)).unwrap(),
            r#"{"id":"chatcmpl-x","object":"chat.completion","created":7,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi \"you\"","refusal":null},"logprobs":null,"finish_reason":"stop"}]}"#
        );
        reply.content = vec![
            Part::Thinking(Thinking {
                text: "t".into(),
                ..Thinking::default()
            }),
            Part::ToolCall(crate::part::ToolCall {
                id: "c1".into(),
                name: "f".into(),
                arguments: "{}".into(),
                kind: crate::part::ToolKind::Function,
                namespace: None,
                state: None,
            }),
        ];
        reply.finish = FinishReason::ToolCalls;
        reply.id = Some("r".into());
        reply.model = None;
        reply.usage = Some(crate::Usage {
            input: 5,
            cached_input: 2,
            cache_write: 1,
            output: 3,
            reasoning: 1,
        });
        assert_eq!(
            String::from_utf8(encode(&reply, &context)).unwrap(),
            r#"{"id":"r","object":"chat.completion","created":7,"model":"","choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"t","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}],"refusal":null},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}"#
        );
    }

    /// The typed reading gives the lenient reading's reply (or its error) for the
    /// golden replies and for bodies made to sit at the edge between the two.
    #[test]
    fn the_typed_reading_agrees_with_the_lenient_one() {
        let mut bodies = crate::typed_agrees::golden("chat", "reply.json", 4);
        for body in [
            r#"{"id":"a","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi \"you\" \u00e9","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#,
            r#"{"choices":[{"message":{"content":null,"reasoning":"hmm"},"finish_reason":"length"}],"usage":null,"error":null}"#,
            r#"{"choices":[{"message":{"content":"","reasoning_content":"","reasoning":"r"}}]}"#,
            r#"{"choices":[{"message":{"content":"x","tool_calls":null}},{"message":{"content":"second"}}]}"#,
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#,
            r#"{"choices":[{"message":{"content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"message":{"content":"x"},"finish_reason":7}]}"#,
            r#"{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":1,"prompt_cache_hit_tokens":1,"prompt_tokens_details":null}}"#,
            r#"{"choices":[{"message":{"content":"x"}}],"choices":[]}"#,
            r#"{"choices":[],"error":null}"#,
            r#"{"choices":[{"message":null}]}"#,
            r#"{"error":{"message":"no","type":"invalid_request_error"}}"#,
            r#"{"choices":[{"message":{"content":"x"}}],"error":"rate limited"}"#,
            r#"[1]"#,
        ] {
            bodies.push(body.as_bytes().to_vec());
        }
        // The first four made bodies are plain: the typed reading answers them itself.
        let golden = bodies.len() - 14;
        for body in &bodies[golden..golden + 4] {
            let plain: PlainReply<'_> = serde_json::from_slice(body).unwrap();
            assert!(
                plain.reply(body).is_some(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        crate::typed_agrees::assert_agree(&bodies, decode, decode_lenient);
    }
}

//! Non-streamed replies: decoding a chat completion (client side) and encoding one
//! (server side).

use super::request::decode_tool_call;
use super::request::encode_tool_call;
use super::{
    decoded_finish, error_from_chat, finish_to_chat, reasoning_text, usage_from_chat, usage_to_chat,
};
use crate::codec::{parse_object, DecodeError, ServerContext};
use crate::json::{as_obj, require_arr, require_obj, str_at};
use crate::part::{Part, Thinking};
use crate::reply::{FinishReason, Reply};
use bytes::Bytes;
use serde_json::{json, Map, Value};

/// A chat completion body as a canonical reply.
pub(super) fn decode(body: &[u8]) -> Result<Reply, DecodeError> {
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

/// A canonical reply as a chat completion body.
pub(super) fn encode(reply: &Reply, context: &ServerContext) -> Vec<u8> {
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    let text = reply.text();
    let calls: Vec<Value> = reply.tool_calls().map(encode_tool_call).collect();
    let has_text = reply.content.iter().any(|p| matches!(p, Part::Text { .. }));
    message.insert(
        "content".into(),
        if has_text { text.into() } else { Value::Null },
    );
    let thinking = reply.thinking();
    if !thinking.is_empty() {
        message.insert("reasoning_content".into(), thinking.into());
    }
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    message.insert("refusal".into(), Value::Null);
    let mut body = json!({
        "id": reply.id.clone().unwrap_or_else(|| context.fallback_id.clone()),
        "object": "chat.completion",
        "created": context.created,
        "model": reply.model.clone().unwrap_or_default(),
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_to_chat(reply.finish, reply.finish_raw.as_deref()),
        }],
    });
    if let (Some(usage), Some(obj)) = (&reply.usage, body.as_object_mut()) {
        obj.insert("usage".into(), usage_to_chat(usage));
    }
    // Serialising a `Value` cannot fail.
    serde_json::to_vec(&body).unwrap_or_default()
}

//! The non-streamed reply body, both ways: a `response` object ⇄ canonical [`Reply`].

use super::items::{
    error_from, finish_from, finish_to, id_stem, reasoning_item, thinking_from_output,
    tool_call_from_item, tool_call_item, usage_from, usage_to,
};
use crate::codec::{parse_object, DecodeError, ServerContext};
use crate::event::StreamError;
use crate::json::{as_obj, obj_at, require_arr, str_at, Object};
use crate::part::Part;
use crate::reply::{Reply, Usage};
use bytes::Bytes;
use serde_json::{json, Map, Value};

/// Decodes a reply body.
pub fn decode(body: &[u8]) -> Result<Reply, DecodeError> {
    let obj = parse_object(body, "responses reply body")?;
    let mut reply = reply_from_response(&obj, "responses reply body")?;
    reply.raw = Bytes::copy_from_slice(body);
    Ok(reply)
}

/// A `response` object (a reply body, or the `response` of a terminal stream event) as a
/// reply; its `error` (or a `failed` status) as a provider error.
pub fn reply_from_response(obj: &Object, where_: &str) -> Result<Reply, DecodeError> {
    if let Some(error) = failure(obj) {
        return Err(DecodeError::Provider(error));
    }
    let output = require_arr(obj, "output", where_)?;
    let mut content = Vec::new();
    for (i, item) in output.iter().enumerate() {
        let item_where = format!("{where_}: output[{i}]");
        let item = as_obj(item, &item_where)?;
        match str_at(item, "type") {
            Some("reasoning") => content.extend(thinking_from_output(item).map(Part::Thinking)),
            Some("message") => content.extend(message_texts(item).into_iter().map(Part::text)),
            Some("function_call" | "custom_tool_call") => {
                content.push(Part::ToolCall(tool_call_from_item(item, &item_where)?))
            }
            // Hosted tool items (web_search_call…) have no canonical part.
            _ => {}
        }
    }
    let has_calls = content.iter().any(|p| matches!(p, Part::ToolCall(_)));
    let reason = obj_at(obj, "incomplete_details").and_then(|d| str_at(d, "reason"));
    let (finish, finish_raw) = finish_from(str_at(obj, "status"), reason, has_calls);
    Ok(Reply {
        content,
        finish,
        finish_raw,
        usage: obj_at(obj, "usage").map(usage_from),
        model: str_at(obj, "model").map(str::to_string),
        id: str_at(obj, "id").map(str::to_string),
        raw: Bytes::new(),
    })
}

/// The error a response object reports: a non-null `error`, a `failed` status, or an
/// HTTP-style `{"error": …}` body.
pub fn failure(obj: &Object) -> Option<StreamError> {
    match obj.get("error") {
        Some(Value::Object(error)) => Some(error_from(error, "the response failed")),
        _ if str_at(obj, "status") == Some("failed") => Some(StreamError::message(
            "the response failed without an error object",
        )),
        _ => None,
    }
}

/// The texts of a `message` output item: each `output_text` (and `refusal`) part.
pub fn message_texts(item: &Object) -> Vec<String> {
    let Some(Value::Array(parts)) = item.get("content") else {
        return Vec::new();
    };
    parts
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|p| match str_at(p, "type") {
            Some("refusal") => str_at(p, "refusal"),
            _ => str_at(p, "text"),
        })
        .map(str::to_string)
        .collect()
}

/// An assistant `message` output item of one text.
pub fn message_item(id: &str, text: &str, status: &str) -> Value {
    json!({
        "type": "message",
        "id": id,
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

/// The synthesised id of the output item at `index`.
pub fn item_id(prefix: &str, response_id: &str, index: usize) -> String {
    format!("{prefix}_{}_{index}", id_stem(response_id))
}

/// A reply's content as output items (one item per part).
pub fn output_items(content: &[Part], response_id: &str) -> Vec<Value> {
    content
        .iter()
        .enumerate()
        .filter_map(|(i, part)| match part {
            Part::Text { text, .. } => Some(message_item(
                &item_id("msg", response_id, i),
                text,
                "completed",
            )),
            Part::Thinking(t) => {
                let synth = item_id("rs", response_id, i);
                Some(reasoning_item(t, Some(t.id.as_deref().unwrap_or(&synth))))
            }
            Part::ToolCall(c) => Some(tool_call_item(
                c,
                Some(&item_id("fc", response_id, i)),
                Some("completed"),
            )),
            Part::Image(_) | Part::ToolResult(_) => None,
        })
        .collect()
}

/// A whole `response` object.
pub struct ResponseObject<'a> {
    /// Response id.
    pub id: &'a str,
    /// Model.
    pub model: Option<&'a str>,
    /// Unix seconds.
    pub created: u64,
    /// `in_progress`, `completed`, `incomplete` or `failed`.
    pub status: &'a str,
    /// The incomplete reason.
    pub incomplete: Option<&'a str>,
    /// The error of a failed response.
    pub error: Option<Value>,
    /// Output items.
    pub output: Vec<Value>,
    /// Usage.
    pub usage: Option<Usage>,
}

impl ResponseObject<'_> {
    /// The JSON object, with the fields the SDKs expect.
    pub fn to_value(self) -> Value {
        let mut obj = Map::new();
        obj.insert("id".into(), self.id.into());
        obj.insert("object".into(), "response".into());
        obj.insert("created_at".into(), self.created.into());
        obj.insert("status".into(), self.status.into());
        obj.insert("error".into(), self.error.unwrap_or(Value::Null));
        obj.insert(
            "incomplete_details".into(),
            self.incomplete
                .map(|r| json!({"reason": r}))
                .unwrap_or(Value::Null),
        );
        obj.insert("model".into(), self.model.unwrap_or_default().into());
        obj.insert("output".into(), Value::Array(self.output));
        obj.insert("parallel_tool_calls".into(), true.into());
        obj.insert("tool_choice".into(), "auto".into());
        obj.insert("tools".into(), json!([]));
        obj.insert(
            "usage".into(),
            self.usage.as_ref().map(usage_to).unwrap_or(Value::Null),
        );
        Value::Object(obj)
    }
}

/// Encodes a reply body.
pub fn encode(reply: &Reply, context: &ServerContext) -> Vec<u8> {
    let id = reply.id.as_deref().unwrap_or(&context.fallback_id);
    let (status, incomplete) = finish_to(reply.finish);
    let value = ResponseObject {
        id,
        model: reply.model.as_deref(),
        created: context.created,
        status,
        incomplete,
        error: None,
        output: output_items(&reply.content, id),
        usage: reply.usage,
    }
    .to_value();
    serde_json::to_vec(&value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::part::{Opaque, Thinking};
    use crate::reply::FinishReason;
    use crate::Dialect;

    #[test]
    fn an_error_object_in_a_200_body_is_a_provider_error() {
        let body = br#"{"id":"resp_1","object":"response","status":"failed","output":[],
            "error":{"code":"server_error","message":"boom"}}"#;
        match decode(body) {
            Err(DecodeError::Provider(e)) => {
                assert_eq!(e.code.as_deref(), Some("server_error"));
                assert_eq!(e.message, "boom");
            }
            other => panic!("{other:?}"),
        }
        let body = br#"{"error":{"message":"Rate limit","type":"requests","code":"rate_limit_exceeded","param":null}}"#;
        assert!(matches!(decode(body), Err(DecodeError::Provider(_))));
    }

    #[test]
    fn malformed_bodies_say_what() {
        for body in [&b"null"[..], b"not json", b"[]", br#"{"output":3}"#] {
            match decode(body) {
                Err(DecodeError::Malformed(m)) => assert!(!m.is_empty()),
                other => panic!("{other:?}"),
            }
        }
        let err = decode(br#"{"output":[{"type":"function_call","name":"f"}]}"#).unwrap_err();
        assert!(format!("{err}").contains("output[0]"), "{err}");
    }

    #[test]
    fn encode_then_decode_is_identity() {
        let reply = Reply {
            content: vec![
                Part::Thinking(Thinking {
                    text: "why".into(),
                    state: Some(Opaque::new(Dialect::Responses, "gAAA")),
                    redacted: false,
                    id: Some("rs_9".into()),
                }),
                Part::text("hi"),
            ],
            finish: FinishReason::Length,
            finish_raw: Some("max_output_tokens".into()),
            usage: Some(Usage {
                input: 10,
                cached_input: 4,
                cache_write: 0,
                output: 7,
                reasoning: 3,
            }),
            model: Some("gpt-5.4".into()),
            id: Some("resp_1".into()),
            raw: Bytes::new(),
        };
        let body = encode(&reply, &ServerContext::default());
        assert_eq!(decode(&body).unwrap().without_raw(), reply);
    }
}

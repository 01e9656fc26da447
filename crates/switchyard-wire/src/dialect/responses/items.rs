//! Item ⇄ part conversions shared by the request, reply and stream code: reasoning items,
//! tool-call items, usage, finish and error objects.

use crate::codec::DecodeError;
use crate::event::StreamError;
use crate::json::{arr_at, obj_at, require_str, str_at, u64_at, wrong_type, Object};
use crate::part::{Opaque, Thinking, ToolCall, ToolKind};
use crate::reply::{FinishReason, Usage};
use crate::Dialect;
use serde_json::{json, Map, Value};

/// The separator between the summary parts of one reasoning item in
/// [`Thinking::text`].
pub const SUMMARY_SEPARATOR: &str = "\n\n";

/// The `include` value that asks for reasoning state.
pub const INCLUDE_ENCRYPTED: &str = "reasoning.encrypted_content";

/// The readable text of a reasoning item: its summary parts joined with a blank line, or,
/// when it has no summary, its `content` of `reasoning_text` parts (open-weight models).
pub fn reasoning_text(item: &Object) -> String {
    let texts = |key: &str| -> Vec<&str> {
        arr_at(item, key)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_object)
                    .filter_map(|p| str_at(p, "text"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let summary = texts("summary");
    if !summary.is_empty() {
        return summary.join(SUMMARY_SEPARATOR);
    }
    texts("content").join(SUMMARY_SEPARATOR)
}

/// The encrypted content of a reasoning item as Responses state.
pub fn reasoning_state(item: &Object) -> Option<Opaque> {
    str_at(item, "encrypted_content").map(|v| Opaque::new(Dialect::Responses, v))
}

/// A reasoning item of a request as a thinking part (the id is always kept).
pub fn thinking_from_input(item: &Object) -> Thinking {
    Thinking {
        text: reasoning_text(item),
        state: reasoning_state(item),
        redacted: false,
        id: str_at(item, "id").map(str::to_string),
    }
}

/// A reasoning item of a reply as a thinking part, or `None` when it carries nothing (no
/// text, no encrypted content). The id is kept only beside encrypted content, as in a
/// stream.
pub fn thinking_from_output(item: &Object) -> Option<Thinking> {
    let text = reasoning_text(item);
    let state = reasoning_state(item);
    if text.is_empty() && state.is_none() {
        return None;
    }
    let id = state
        .as_ref()
        .and_then(|_| str_at(item, "id").map(str::to_string));
    Some(Thinking {
        text,
        state,
        redacted: false,
        id,
    })
}

/// A thinking part as a reasoning item. `id` overrides the part's own id (server side:
/// a synthesised one when the part has none). Other dialects' state is dropped.
pub fn reasoning_item(thinking: &Thinking, id: Option<&str>) -> Value {
    let mut item = Map::new();
    item.insert("type".into(), "reasoning".into());
    if let Some(id) = id.or(thinking.id.as_deref()) {
        item.insert("id".into(), id.into());
    }
    let summary = if thinking.text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "summary_text", "text": thinking.text})]
    };
    item.insert("summary".into(), Value::Array(summary));
    if let Some(enc) = Opaque::for_dialect(&thinking.state, Dialect::Responses) {
        item.insert("encrypted_content".into(), enc.into());
    }
    Value::Object(item)
}

/// Whether a thinking part can be sent back in a request: it has Responses state, or an
/// id naming reasoning the server stored.
pub fn thinking_is_sendable(thinking: &Thinking) -> bool {
    Opaque::for_dialect(&thinking.state, Dialect::Responses).is_some()
        || (thinking.state.is_none() && thinking.id.is_some())
}

/// A `function_call` or `custom_tool_call` item as a tool call.
pub fn tool_call_from_item(item: &Object, where_: &str) -> Result<ToolCall, DecodeError> {
    let custom = str_at(item, "type") == Some("custom_tool_call");
    let arguments = if custom {
        optional_str(item, "input", where_)?
    } else {
        optional_str(item, "arguments", where_)?
    };
    Ok(ToolCall {
        id: require_str(item, "call_id", where_)?.to_string(),
        name: require_str(item, "name", where_)?.to_string(),
        arguments: arguments.unwrap_or_default().to_string(),
        kind: if custom {
            ToolKind::Custom
        } else {
            ToolKind::Function
        },
        namespace: optional_str(item, "namespace", where_)?.map(str::to_string),
        state: None,
    })
}

/// A tool call as a `function_call` or `custom_tool_call` item. `id` and `status` are
/// for replies (requests carry neither). The call's own state (Gemini) is dropped.
pub fn tool_call_item(call: &ToolCall, id: Option<&str>, status: Option<&str>) -> Value {
    let mut item = Map::new();
    let custom = call.kind == ToolKind::Custom;
    item.insert(
        "type".into(),
        if custom {
            "custom_tool_call"
        } else {
            "function_call"
        }
        .into(),
    );
    if let Some(id) = id {
        item.insert("id".into(), id.into());
    }
    if let Some(status) = status {
        item.insert("status".into(), status.into());
    }
    item.insert("call_id".into(), call.id.clone().into());
    item.insert("name".into(), call.name.clone().into());
    if let Some(ns) = &call.namespace {
        item.insert("namespace".into(), ns.clone().into());
    }
    let key = if custom { "input" } else { "arguments" };
    item.insert(key.into(), call.arguments.clone().into());
    Value::Object(item)
}

/// A string field that may be absent or `null`, but not of another type.
pub fn optional_str<'a>(
    obj: &'a Object,
    key: &str,
    where_: &str,
) -> Result<Option<&'a str>, DecodeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(wrong_type(where_, key, "a string", other)),
    }
}

/// A Responses `usage` object in the canonical meaning (the same convention: cached ⊂
/// input, reasoning ⊂ output).
pub fn usage_from(usage: &Object) -> Usage {
    let detail = |key: &str, field: &str| obj_at(usage, key).and_then(|d| u64_at(d, field));
    Usage {
        input: u64_at(usage, "input_tokens").unwrap_or(0),
        cached_input: detail("input_tokens_details", "cached_tokens").unwrap_or(0),
        cache_write: 0,
        output: u64_at(usage, "output_tokens").unwrap_or(0),
        reasoning: detail("output_tokens_details", "reasoning_tokens").unwrap_or(0),
    }
}

/// A canonical usage as a Responses `usage` object (`cache_write` has no place).
pub fn usage_to(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input,
        "input_tokens_details": {"cached_tokens": usage.cached_input},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.total(),
    })
}

/// The finish of a response from its status and incomplete reason.
pub fn finish_from(
    status: Option<&str>,
    incomplete_reason: Option<&str>,
    has_tool_calls: bool,
) -> (FinishReason, Option<String>) {
    match (status, incomplete_reason) {
        (_, Some(reason)) => {
            let finish = match reason {
                "max_output_tokens" => FinishReason::Length,
                "content_filter" => FinishReason::ContentFilter,
                _ => FinishReason::Other,
            };
            (finish, Some(reason.to_string()))
        }
        (Some("completed") | None, None) => {
            let finish = if has_tool_calls {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            };
            (finish, status.map(str::to_string))
        }
        (Some(other), None) => (FinishReason::Other, Some(other.to_string())),
    }
}

/// The status and incomplete reason that say `finish`.
pub fn finish_to(finish: FinishReason) -> (&'static str, Option<&'static str>) {
    match finish {
        FinishReason::Length => ("incomplete", Some("max_output_tokens")),
        FinishReason::ContentFilter => ("incomplete", Some("content_filter")),
        FinishReason::Stop | FinishReason::ToolCalls | FinishReason::Other => ("completed", None),
    }
}

/// An OpenAI error object (`{code, message, type, param}`) as a stream error.
pub fn error_from(error: &Object, fallback: &str) -> StreamError {
    StreamError {
        kind: str_at(error, "type").map(str::to_string),
        code: error.get("code").and_then(|c| match c {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }),
        message: str_at(error, "message").unwrap_or(fallback).to_string(),
        status: None,
    }
}

/// A stream error as an OpenAI error object.
pub fn error_to(error: &StreamError) -> Value {
    let mut obj = Map::new();
    obj.insert(
        "code".into(),
        error
            .code
            .clone()
            .or_else(|| error.kind.clone())
            .unwrap_or_else(|| "server_error".into())
            .into(),
    );
    obj.insert("message".into(), error.message.clone().into());
    if let (Some(kind), Some(_)) = (&error.kind, &error.code) {
        obj.insert("type".into(), kind.clone().into());
    }
    Value::Object(obj)
}

/// `stem` of a response id for synthesised item ids (`resp_abc` → `abc`).
pub fn id_stem(response_id: &str) -> &str {
    response_id.strip_prefix("resp_").unwrap_or(response_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn summary_parts_join_with_a_blank_line_and_content_is_the_fallback() {
        let item = obj(json!({"type": "reasoning", "summary": [
            {"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}]}));
        assert_eq!(reasoning_text(&item), "a\n\nb");
        let item = obj(json!({"type": "reasoning", "summary": [],
            "content": [{"type": "reasoning_text", "text": "raw"}]}));
        assert_eq!(reasoning_text(&item), "raw");
    }

    #[test]
    fn an_output_reasoning_item_keeps_its_id_only_with_state() {
        let with = obj(json!({"type": "reasoning", "id": "rs_1", "summary": [],
            "encrypted_content": "gAAA"}));
        assert_eq!(
            thinking_from_output(&with).and_then(|t| t.id),
            Some("rs_1".into())
        );
        let without = obj(json!({"type": "reasoning", "id": "rs_1", "summary": [
            {"type": "summary_text", "text": "x"}]}));
        assert_eq!(thinking_from_output(&without).map(|t| t.id), Some(None));
        let empty = obj(json!({"type": "reasoning", "id": "rs_1", "summary": []}));
        assert_eq!(thinking_from_output(&empty), None);
    }

    #[test]
    fn foreign_thinking_is_not_sendable() {
        let foreign = Thinking {
            text: "t".into(),
            state: Some(Opaque::new(Dialect::Messages, "sig")),
            redacted: false,
            id: None,
        };
        assert!(!thinking_is_sendable(&foreign));
        assert!(!thinking_is_sendable(&Thinking::default()));
        let stored = Thinking {
            id: Some("rs_1".into()),
            ..Thinking::default()
        };
        assert!(thinking_is_sendable(&stored));
    }

    #[test]
    fn finish_mapping() {
        assert_eq!(
            finish_from(Some("completed"), None, true).0,
            FinishReason::ToolCalls
        );
        assert_eq!(
            finish_from(Some("incomplete"), Some("max_output_tokens"), true),
            (FinishReason::Length, Some("max_output_tokens".into()))
        );
        assert_eq!(
            finish_from(Some("cancelled"), None, false).0,
            FinishReason::Other
        );
        assert_eq!(
            finish_to(FinishReason::ContentFilter),
            ("incomplete", Some("content_filter"))
        );
    }
}

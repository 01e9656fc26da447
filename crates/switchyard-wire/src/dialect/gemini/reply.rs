//! Replies: a `GenerateContentResponse` body to a canonical [`Reply`] (client side) and
//! back (server side); usage and error objects, shared with the stream codecs.

use super::parts::{
    block_reason, candidate_content, content_parts, expect_obj, finish_reason, finish_string,
    fold_reply_parts, reply_part,
};
use crate::codec::{parse_object, DecodeError, ServerContext};
use crate::event::StreamError;
use crate::json::{str_at, u64_at, wrong_type, Object};
use crate::part::Part;
use crate::reply::{FinishReason, Reply, Usage};
use bytes::Bytes;
use serde_json::{json, Map, Value};

/// Decodes a non-streamed `generateContent` body.
pub(super) fn decode(body: &[u8]) -> Result<Reply, DecodeError> {
    let obj = match parse_object(body, "gemini reply") {
        Ok(obj) => obj,
        Err(e) => return Err(array_error(body).unwrap_or(e)),
    };
    if let Some(error) = provider_error(&obj) {
        return Err(DecodeError::Provider(error));
    }
    let mut reply = Reply {
        model: str_at(&obj, "modelVersion").map(str::to_string),
        id: str_at(&obj, "responseId").map(str::to_string),
        usage: read_usage(&obj, "gemini reply")?,
        raw: Bytes::copy_from_slice(body),
        ..Reply::default()
    };
    let candidate = first_candidate(&obj, "gemini reply")?;
    if let Some(candidate) = candidate {
        let where_ = "gemini reply candidates[0]";
        if let Some(content) = candidate_content(candidate, where_)? {
            let where_ = "gemini reply candidates[0].content";
            reply.content =
                fold_reply_parts(content_parts(content, where_)?, &format!("{where_}.parts"))?;
        }
    }
    let has_calls = reply.tool_calls().next().is_some();
    match (
        candidate.and_then(|c| str_at(c, "finishReason")),
        block_reason(&obj),
    ) {
        (Some(raw), _) => {
            reply.finish = finish_reason(raw, has_calls);
            reply.finish_raw = Some(raw.to_string());
        }
        // A blocked prompt: the reason in promptFeedback, usually with no candidates.
        (None, Some(reason)) => {
            reply.finish = FinishReason::ContentFilter;
            reply.finish_raw = Some(reason.to_string());
        }
        (None, None) if candidate.is_some() => {
            reply.finish = finish_reason("STOP", has_calls);
        }
        (None, None) => {
            return Err(DecodeError::Malformed(
                "gemini reply has no candidates and no promptFeedback.blockReason".into(),
            ))
        }
    }
    Ok(reply)
}

/// `candidates[0]`, if the reply has candidates.
pub(super) fn first_candidate<'a>(
    obj: &'a Object,
    where_: &str,
) -> Result<Option<&'a Object>, DecodeError> {
    match obj.get("candidates") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(list)) => match list.first() {
            None => Ok(None),
            Some(c) => expect_obj(c, &format!("{where_} candidates[0]")).map(Some),
        },
        Some(other) => Err(wrong_type(where_, "candidates", "an array", other)),
    }
}

/// `{"error":{code,message,status,details}}` as a stream error: `kind` is the status
/// (`RESOURCE_EXHAUSTED`), `status` the HTTP code.
pub(crate) fn provider_error(obj: &Object) -> Option<StreamError> {
    let error = obj.get("error")?;
    Some(match error {
        Value::Object(e) => StreamError {
            kind: str_at(e, "status").map(str::to_string),
            code: None,
            message: str_at(e, "message").unwrap_or_default().to_string(),
            status: u64_at(e, "code").and_then(|c| u16::try_from(c).ok()),
        },
        Value::String(s) => StreamError::message(s.clone()),
        other => StreamError::message(other.to_string()),
    })
}

/// The error of a body that is a JSON array of error objects (what `streamGenerateContent`
/// without `alt=sse` answers with).
fn array_error(body: &[u8]) -> Option<DecodeError> {
    let list: Vec<Value> = serde_json::from_slice(body).ok()?;
    let first = list.first()?.as_object()?;
    provider_error(first).map(DecodeError::Provider)
}

/// `usageMetadata` in canonical terms:
/// - `input` = `promptTokenCount` (which already includes `cachedContentTokenCount`) +
///   `toolUsePromptTokenCount` (tool results Gemini fed itself, billed as input);
/// - `cached_input` = `cachedContentTokenCount`;
/// - `output` = `candidatesTokenCount` + `thoughtsTokenCount`; `reasoning` =
///   `thoughtsTokenCount`. Gemini leaves zero counts out, so a missing count is 0.
pub(super) fn read_usage(obj: &Object, where_: &str) -> Result<Option<Usage>, DecodeError> {
    let usage = match obj.get("usageMetadata") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(u)) => u,
        Some(other) => return Err(wrong_type(where_, "usageMetadata", "an object", other)),
    };
    Ok(Some(usage_from_metadata(usage)))
}

/// A `usageMetadata` object in canonical terms (see [`read_usage`]).
pub(super) fn usage_from_metadata(usage: &Object) -> Usage {
    let count = |key: &str| u64_at(usage, key).unwrap_or(0);
    let thoughts = count("thoughtsTokenCount");
    Usage {
        input: count("promptTokenCount").saturating_add(count("toolUsePromptTokenCount")),
        cached_input: count("cachedContentTokenCount"),
        cache_write: 0,
        output: count("candidatesTokenCount").saturating_add(thoughts),
        reasoning: thoughts,
    }
}

/// Canonical usage as `usageMetadata` (the reverse of [`read_usage`]; a tool-use prompt
/// count is inside `promptTokenCount`, cache writes have no Gemini field). Zero counts
/// other than the prompt's are left out, as Gemini does.
pub(super) fn write_usage(usage: &Usage) -> Value {
    let mut m = Map::new();
    m.insert("promptTokenCount".into(), json!(usage.input));
    let candidates = usage.output.saturating_sub(usage.reasoning);
    if candidates > 0 {
        m.insert("candidatesTokenCount".into(), json!(candidates));
    }
    m.insert("totalTokenCount".into(), json!(usage.total()));
    if usage.cached_input > 0 {
        m.insert("cachedContentTokenCount".into(), json!(usage.cached_input));
    }
    if usage.reasoning > 0 {
        m.insert("thoughtsTokenCount".into(), json!(usage.reasoning));
    }
    Value::Object(m)
}

/// One `GenerateContentResponse` object: a candidate with `parts` (and a finish
/// reason); a blocked prompt's reason goes in `promptFeedback.blockReason`.
pub(super) fn response_object(
    parts: Vec<Value>,
    finish: Option<Finish<'_>>,
    usage: Option<&Usage>,
    model: Option<&str>,
    id: Option<&str>,
) -> Value {
    let mut obj = Map::new();
    let blocked = match &finish {
        Some(Finish::Blocked(reason)) => Some(*reason),
        _ => None,
    };
    if !parts.is_empty() || blocked.is_none() {
        let mut candidate = Map::new();
        if !parts.is_empty() {
            candidate.insert("content".into(), json!({ "role": "model", "parts": parts }));
        }
        if let Some(Finish::Reason(r)) = finish {
            candidate.insert("finishReason".into(), Value::String(r));
        }
        candidate.insert("index".into(), json!(0));
        obj.insert("candidates".into(), json!([candidate]));
    }
    if let Some(reason) = blocked {
        obj.insert("promptFeedback".into(), json!({ "blockReason": reason }));
    }
    if let Some(usage) = usage {
        obj.insert("usageMetadata".into(), write_usage(usage));
    }
    if let Some(model) = model {
        obj.insert("modelVersion".into(), Value::String(model.to_string()));
    }
    if let Some(id) = id {
        obj.insert("responseId".into(), Value::String(id.to_string()));
    }
    Value::Object(obj)
}

/// How a reply ends on the wire.
pub(super) enum Finish<'a> {
    /// A candidate `finishReason`.
    Reason(String),
    /// A blocked prompt: `promptFeedback.blockReason` when nothing was generated.
    Blocked(&'a str),
}

/// The wire finish for a canonical one. A content-filter finish whose raw string is not
/// a candidate finish reason (e.g. the blockReason `OTHER`) came from a blocked prompt.
pub(super) fn wire_finish<'a>(
    reason: FinishReason,
    raw: Option<&'a str>,
    has_calls: bool,
) -> Finish<'a> {
    if let (FinishReason::ContentFilter, Some(raw)) = (reason, raw) {
        if finish_reason(raw, has_calls) != FinishReason::ContentFilter && !raw.is_empty() {
            return Finish::Blocked(raw);
        }
    }
    Finish::Reason(finish_string(reason, raw, has_calls))
}

/// The body of a non-streamed reply.
pub(super) fn encode(reply: &Reply, context: &ServerContext) -> Vec<u8> {
    let parts: Vec<Value> = reply.content.iter().filter_map(reply_part).collect();
    let has_calls = reply.content.iter().any(|p| matches!(p, Part::ToolCall(_)));
    let finish = wire_finish(reply.finish, reply.finish_raw.as_deref(), has_calls);
    let id = reply
        .id
        .as_deref()
        .or((!context.fallback_id.is_empty()).then_some(context.fallback_id.as_str()));
    let obj = response_object(
        parts,
        Some(finish),
        reply.usage.as_ref(),
        reply.model.as_deref(),
        id,
    );
    serde_json::to_vec(&obj).unwrap_or_default()
}

/// An error object as Gemini writes it.
pub(super) fn error_object(error: &StreamError) -> Value {
    json!({
        "error": {
            "code": error.status.unwrap_or(500),
            "message": error.message,
            "status": error.kind.as_deref().unwrap_or("INTERNAL"),
        }
    })
}

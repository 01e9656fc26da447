//! Content blocks ↔ canonical parts, shared by requests and replies.

use super::common::{arguments_text, input_object};
use super::shape::Shape;
use crate::codec::DecodeError;
use crate::json::{as_obj, require_str, str_at, Object};
use crate::part::{Image, Opaque, Part, Thinking, ToolCall, ToolKind, ToolResult};
use crate::Dialect;
use serde_json::{json, Map, Value};

/// What to do with a thinking part that carries no Messages signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unsigned {
    /// Drop it (requests: Anthropic rejects thinking it did not sign).
    Drop,
    /// Send it with `signature: ""` (replies and streams to a client, which shows it).
    EmptySignature,
}

/// The block for a part, or `None` when this dialect does not carry it.
pub(super) fn part_to_block(part: &Part, unsigned: Unsigned) -> Option<Value> {
    match part {
        Part::Text { text, .. } => Some(json!({"type": "text", "text": text})),
        Part::Image(image) => Some(image_block(image)),
        Part::ToolCall(call) => Some(json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.flat_name(),
            "input": input_object(&call.arguments),
        })),
        Part::ToolResult(result) => Some(tool_result_block(result)),
        Part::Thinking(thinking) => thinking_block(thinking, unsigned),
    }
}

fn image_block(image: &Image) -> Value {
    let source = match image {
        Image::Base64 { media_type, data } => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        Image::Url { url } => json!({"type": "url", "url": url}),
    };
    json!({"type": "image", "source": source})
}

fn tool_result_block(result: &ToolResult) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), "tool_result".into());
    block.insert("tool_use_id".into(), result.call_id.clone().into());
    match result.content.as_slice() {
        [] => {}
        [Part::Text { text, .. }] => {
            block.insert("content".into(), text.clone().into());
        }
        parts => {
            // Only text and images may sit inside a tool result.
            let inner = parts
                .iter()
                .filter(|p| matches!(p, Part::Text { .. } | Part::Image(_)))
                .filter_map(|p| part_to_block(p, Unsigned::Drop))
                .collect();
            block.insert("content".into(), Value::Array(inner));
        }
    }
    if result.is_error {
        block.insert("is_error".into(), true.into());
    }
    Value::Object(block)
}

fn thinking_block(thinking: &Thinking, unsigned: Unsigned) -> Option<Value> {
    match (
        Opaque::for_dialect(&thinking.state, Dialect::Messages),
        unsigned,
    ) {
        (Some(data), _) if thinking.redacted => {
            Some(json!({"type": "redacted_thinking", "data": data}))
        }
        (_, _) if thinking.redacted => None,
        (Some(signature), _) => Some(json!({
            "type": "thinking", "thinking": thinking.text, "signature": signature,
        })),
        (None, Unsigned::EmptySignature) => Some(json!({
            "type": "thinking", "thinking": thinking.text, "signature": "",
        })),
        (None, Unsigned::Drop) => None,
    }
}

/// The fields this codec models, per block type; any other field goes to the shape.
fn known_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "text" => &["type", "text"],
        "image" => &["type", "source"],
        "tool_use" => &["type", "id", "name", "input"],
        "tool_result" => &["type", "tool_use_id", "content", "is_error"],
        "thinking" => &["type", "thinking", "signature"],
        "redacted_thinking" => &["type", "data"],
        _ => &[],
    }
}

/// Decodes the blocks of a `content` array at `pointer` into parts. Blocks the hub does
/// not model are recorded in `shape` (verbatim, by position) and skipped; so are fields
/// it does not model, such as `cache_control`.
pub(super) fn blocks_to_parts(
    blocks: &[Value],
    pointer: &str,
    shape: &mut Shape,
) -> Result<Vec<Part>, DecodeError> {
    let mut parts = Vec::with_capacity(blocks.len());
    for (j, block) in blocks.iter().enumerate() {
        let at = format!("{pointer}/{j}");
        match block_to_part(block, &at, shape)? {
            Some(part) => parts.push(part),
            None => shape.insert(pointer.to_string(), j, block.clone()),
        }
    }
    if let ([Part::Text { .. }], [_]) = (parts.as_slice(), blocks) {
        // One text block in an array: the encoder would write a plain string.
        shape.array(pointer.to_string());
    }
    Ok(parts)
}

/// Decodes one block; `None` for a block type the hub does not model.
pub(super) fn block_to_part(
    block: &Value,
    pointer: &str,
    shape: &mut Shape,
) -> Result<Option<Part>, DecodeError> {
    let obj = as_obj(block, &format!("content block {pointer}"))?;
    let where_ = || format!("content block {pointer}");
    let kind = require_str(obj, "type", &where_())?;
    let part = match kind {
        "text" => Part::text(require_str(obj, "text", &where_())?),
        "image" => match image_from_source(obj) {
            Some(image) => Part::Image(image),
            // Files-API or other sources: kept verbatim.
            None => return Ok(None),
        },
        "tool_use" => Part::ToolCall(ToolCall {
            id: require_str(obj, "id", &where_())?.to_string(),
            name: require_str(obj, "name", &where_())?.to_string(),
            arguments: arguments_text(obj.get("input")),
            kind: ToolKind::Function,
            namespace: None,
            state: None,
        }),
        "tool_result" => {
            let content = match obj.get("content") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::String(s)) => vec![Part::text(s.as_str())],
                Some(Value::Array(inner)) => {
                    blocks_to_parts(inner, &format!("{pointer}/content"), shape)?
                }
                Some(other) => {
                    return Err(crate::json::wrong_type(
                        &where_(),
                        "content",
                        "a string or an array of blocks",
                        other,
                    ))
                }
            };
            let is_error = obj.get("is_error").and_then(Value::as_bool);
            if is_error == Some(false) {
                // The encoder leaves out a false flag; keep the client's explicit one.
                let mut keep = Map::new();
                keep.insert("is_error".into(), false.into());
                shape.add(pointer.to_string(), obj, keep);
            }
            Part::ToolResult(ToolResult {
                call_id: require_str(obj, "tool_use_id", &where_())?.to_string(),
                name: None,
                content,
                is_error: is_error.unwrap_or(false),
                kind: ToolKind::Function,
            })
        }
        "thinking" => Part::Thinking(Thinking {
            text: str_at(obj, "thinking").unwrap_or_default().to_string(),
            state: signature_state(str_at(obj, "signature")),
            redacted: false,
            id: None,
        }),
        "redacted_thinking" => Part::Thinking(Thinking {
            text: String::new(),
            state: Some(Opaque::new(
                Dialect::Messages,
                require_str(obj, "data", &where_())?,
            )),
            redacted: true,
            id: None,
        }),
        _ => return Ok(None),
    };
    shape.extras(pointer.to_string(), obj, known_fields(kind));
    Ok(Some(part))
}

/// A thinking signature as opaque state; an empty or missing signature is no state
/// (what this codec's own server side sends for thinking it could not sign).
pub(super) fn signature_state(signature: Option<&str>) -> Option<Opaque> {
    signature
        .filter(|s| !s.is_empty())
        .map(|s| Opaque::new(Dialect::Messages, s))
}

fn image_from_source(block: &Object) -> Option<Image> {
    let source = block.get("source")?.as_object()?;
    match str_at(source, "type")? {
        "base64" => Some(Image::Base64 {
            media_type: str_at(source, "media_type")?.to_string(),
            data: str_at(source, "data")?.to_string(),
        }),
        "url" => Some(Image::Url {
            url: str_at(source, "url")?.to_string(),
        }),
        _ => None,
    }
}

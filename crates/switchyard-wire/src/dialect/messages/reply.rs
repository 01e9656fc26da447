//! Non-streamed replies: the message object → canonical (client side) and back (server
//! side).

use super::blocks::{block_to_part, part_to_block, Unsigned};
use super::common::{
    error_from_object, finish_from_wire, finish_to_wire, is_error_body, usage_to_wire, WireUsage,
};
use super::shape::Shape;
use crate::codec::{parse_object, DecodeError, ServerContext};
use crate::json::{obj_at, require_arr, str_at};
use crate::part::Part;
use crate::reply::{FinishReason, Reply};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;

/// A message body as a canonical reply.
pub(super) fn decode(body: &[u8]) -> Result<Reply, DecodeError> {
    if let Ok(plain) = serde_json::from_slice::<PlainMessage<'_>>(body) {
        if let Some(reply) = plain.reply(body) {
            return Ok(reply);
        }
    }
    decode_lenient(body)
}

/// The fields of a message [`decode_lenient`] reads, parsed as borrowed typed values: a
/// reply of text blocks with its stop reason and usage, the common case, is read without
/// building a map of all its fields. A body this parse refuses (a field of an unexpected
/// type, a repeated key), or one with another block type, an error or no content, is
/// read by [`decode_lenient`], which gives the same reply for every plain body.
#[derive(Deserialize)]
struct PlainMessage<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<Vec<PlainBlock<'a>>>,
    #[serde(borrow, default)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct PlainBlock<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

impl PlainMessage<'_> {
    /// The reply, unless the body is one only the lenient reader reads.
    fn reply(self, body: &[u8]) -> Option<Reply> {
        if self.kind.as_deref() == Some("error") {
            return None;
        }
        let mut content = Vec::new();
        for block in self.content? {
            if block.kind != "text" {
                return None;
            }
            content.push(Part::text(block.text?.into_owned()));
        }
        let usage = self.usage.map(|u| u.canonical());
        let finish_raw = self.stop_reason.map(Cow::into_owned);
        Some(Reply {
            content,
            finish: finish_raw
                .as_deref()
                .map_or(FinishReason::Stop, finish_from_wire),
            finish_raw,
            usage,
            model: self.model.map(Cow::into_owned),
            id: self.id.map(Cow::into_owned),
            raw: Bytes::copy_from_slice(body),
        })
    }
}

/// A message body as a canonical reply, read from a `Value`: any shape the dialect
/// allows, and the error that names what is wrong with one it does not.
fn decode_lenient(body: &[u8]) -> Result<Reply, DecodeError> {
    let obj = parse_object(body, "messages reply body")?;
    if is_error_body(&obj) {
        return Err(DecodeError::Provider(error_from_object(&obj)));
    }
    let blocks = require_arr(&obj, "content", "messages reply")?;
    let mut content = Vec::with_capacity(blocks.len());
    // Block fields the hub does not model (citations…) are dropped in a reply.
    let mut ignored = Shape::default();
    for (j, block) in blocks.iter().enumerate() {
        // Server-tool blocks (`server_tool_use`, `web_search_tool_result`) and other
        // unmodelled types are dropped: the caller has nothing to run for them.
        if let Some(part) = block_to_part(block, &format!("/content/{j}"), &mut ignored)? {
            content.push(part);
        }
    }
    let stop_reason = str_at(&obj, "stop_reason");
    let usage = obj_at(&obj, "usage").map(|u| {
        let mut w = WireUsage::default();
        w.merge(u);
        w.canonical()
    });
    Ok(Reply {
        content,
        finish: stop_reason.map_or(FinishReason::Stop, finish_from_wire),
        finish_raw: stop_reason.map(str::to_string),
        usage,
        model: str_at(&obj, "model").map(str::to_string),
        id: str_at(&obj, "id").map(str::to_string),
        raw: Bytes::copy_from_slice(body),
    })
}

pub(super) fn encode(reply: &Reply, context: &ServerContext) -> Vec<u8> {
    let content: Vec<Value> = reply
        .content
        .iter()
        .filter(|p| !matches!(p, Part::Image(_) | Part::ToolResult(_)))
        .filter_map(|p| part_to_block(p, Unsigned::EmptySignature))
        .collect();
    let body = json!({
        "id": reply.id.clone().unwrap_or_else(|| context.fallback_id.clone()),
        "type": "message",
        "role": "assistant",
        "model": reply.model.clone().unwrap_or_default(),
        "content": content,
        "stop_reason": finish_to_wire(reply.finish, reply.finish_raw.as_deref()),
        "stop_sequence": null,
        "usage": usage_to_wire(&reply.usage.unwrap_or_default()),
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed reading gives the lenient reading's reply (or its error) for the
    /// golden replies and for bodies made to sit at the edge between the two.
    #[test]
    fn the_typed_reading_agrees_with_the_lenient_one() {
        let mut bodies = crate::typed_agrees::golden("messages", "reply_", 4);
        let plain = [
            r#"{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"Hi \"you\" \u00e9"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}"#,
            r#"{"content":[{"type":"text","text":"a","citations":null},{"type":"text","text":""}],"stop_reason":null,"usage":{"input_tokens":1,"cache_read_input_tokens":4,"cache_creation_input_tokens":null,"output_tokens":2}}"#,
            r#"{"content":[],"usage":null,"error":{"type":"x","message":"y"}}"#,
            r#"{"content":[{"text":"x","type":"text"}],"stop_reason":"pause_turn"}"#,
        ];
        let edge = [
            r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"},"content":[]}"#,
            r#"{"error":{"type":"x","message":"y"}}"#,
            r#"{"content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"a"}]}"#,
            r#"{"content":[{"type":"text"}]}"#,
            r#"{"content":[{"type":"text","text":7}]}"#,
            r#"{"content":[{"text":"a"}]}"#,
            r#"{"content":[{"type":"text","text":"a"}],"content":[]}"#,
            r#"{"content":[{"type":"text","text":"a"}],"usage":{"input_tokens":1.5,"output_tokens":"2"}}"#,
            r#"{"content":[{"type":"text","text":"a"}],"stop_reason":3,"model":["m"]}"#,
            r#"{"content":[{"type":"text","text":"a"}],"type":7}"#,
            r#"{"content":null}"#,
            r#"{"content":"text"}"#,
            r#"[1]"#,
            r#"null"#,
        ];
        for body in &plain {
            let typed: PlainMessage<'_> = serde_json::from_slice(body.as_bytes()).unwrap();
            assert!(typed.reply(body.as_bytes()).is_some(), "{body}");
        }
        bodies.extend(plain.iter().chain(&edge).map(|b| b.as_bytes().to_vec()));
        crate::typed_agrees::assert_agree(&bodies, decode, decode_lenient);
    }
}

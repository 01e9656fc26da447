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
use serde_json::{json, Value};

pub(super) fn decode(body: &[u8]) -> Result<Reply, DecodeError> {
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

//! `POST /v1/responses` with OpenAI's server-side state: `previous_response_id` and
//! `item_reference` input items expanded from the responses this server stored, and the
//! response stored unless the request says `store: false`.
//!
//! Expansion is OpenAI's: the previous response's input items and output items come
//! before the new input, and an item reference stands for the stored item of that id. A
//! request with neither is served from its own bytes, exactly as before.

use super::{BuiltReply, StoredResponse};
use crate::call::{self, CallRoute};
use crate::faults::{openai_envelope, ErrorResponse};
use crate::state::Shared;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use switchyard_wire::{codec, kept, Dialect, Reply, ServerContext};

/// Serves a Responses call, expanding and storing state.
pub(crate) async fn serve(shared: &Shared, route: CallRoute, body: Bytes) -> Response {
    // A body that is no JSON object is the codec's to refuse, as before.
    let Ok(Value::Object(mut request)) = serde_json::from_slice::<Value>(&body) else {
        return call::serve_call(shared, route, body).await;
    };
    // `store` defaults to true, as OpenAI's does.
    let store = request
        .get("store")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let expansion = match expand(shared, &request) {
        Ok(e) => e,
        Err(refusal) => {
            let request_id = super::request_id(shared);
            return call::error_response(Dialect::Responses, &request_id, refusal);
        }
    };
    let forwarded = if expansion.changed {
        request.remove("previous_response_id");
        request.insert("input".into(), Value::Array(expansion.items.clone()));
        Bytes::from(Value::Object(request).to_string())
    } else {
        body
    };
    let response = call::serve_call(shared, route, forwarded).await;
    if store {
        if let Some(BuiltReply(reply)) = response.extensions().get::<BuiltReply>() {
            keep(shared, reply, expansion);
        }
    }
    response
}

/// The input a request stands for.
struct Expansion {
    /// Every item used to generate the reply: the previous response's, then the new ones.
    items: Vec<Value>,
    /// How many of `items` came from the previous response (they have ids already).
    earlier: usize,
    /// Whether anything was expanded (else the request's own bytes are served).
    changed: bool,
}

/// The request's input with its previous response and item references expanded, or the
/// 400/404 OpenAI answers for a reference it cannot follow.
fn expand(shared: &Shared, request: &Map<String, Value>) -> Result<Expansion, ErrorResponse> {
    let mut items = Vec::new();
    let mut changed = false;
    match request.get("previous_response_id") {
        None | Some(Value::Null) => {}
        Some(Value::String(id)) => {
            let Some(previous) = shared.state.response(id) else {
                return Err(refusal(
                    404,
                    &format!("Previous response with id '{id}' not found."),
                    Some("previous_response_id"),
                    json!("previous_response_not_found"),
                ));
            };
            items.extend(previous.input.iter().cloned());
            items.extend(previous.output.iter().cloned());
            changed = true;
        }
        Some(other) => {
            return Err(refusal(
                400,
                &format!(
                    "Invalid type for 'previous_response_id': expected a string, but got {}.",
                    kind(other)
                ),
                Some("previous_response_id"),
                json!("invalid_type"),
            ))
        }
    }
    let earlier = items.len();
    match request.get("input") {
        Some(Value::String(text)) => items.push(json!({
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        })),
        Some(Value::Array(input)) => {
            for (i, item) in input.iter().enumerate() {
                if item.get("type").and_then(Value::as_str) != Some("item_reference") {
                    items.push(kept::normalized(item));
                    continue;
                }
                changed = true;
                let Some(id) = item.get("id").and_then(Value::as_str) else {
                    return Err(refusal(
                        400,
                        &format!("Missing required parameter: 'input[{i}].id'."),
                        Some(&format!("input[{i}].id")),
                        json!("missing_required_parameter"),
                    ));
                };
                let Some(stored) = shared.state.item(id) else {
                    return Err(refusal(
                        404,
                        &format!(
                            "Item with id '{id}' not found. Items are not persisted when `store` \
                             is set to false. Try again with `store` set to true, or remove this \
                             item from your input."
                        ),
                        Some("input"),
                        Value::Null,
                    ));
                };
                items.push(stored);
            }
        }
        // No input, or one the codec will refuse: nothing to expand.
        _ => {}
    }
    Ok(Expansion {
        items,
        earlier,
        changed,
    })
}

/// Stores a reply with the items that made it, giving new input items their ids.
fn keep(shared: &Shared, reply: &Reply, expansion: Expansion) {
    let Some(id) = reply.id.clone() else { return };
    let context = ServerContext {
        created: shared.config.created,
        fallback_id: id.clone(),
    };
    let mut encoded = codec(Dialect::Responses).encode_reply(reply, &context);
    if reply.usage.is_none() {
        encoded = crate::body::strip_usage_json(&encoded).unwrap_or(encoded);
    }
    let Ok(object) = serde_json::from_slice::<Value>(&encoded) else {
        return;
    };
    let output = object
        .get("output")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut input = expansion.items;
    kept::assign_ids(&mut input[expansion.earlier..], &id);
    shared.state.keep_response(
        id,
        StoredResponse {
            object,
            input,
            output,
        },
    );
}

/// A refusal in OpenAI's envelope.
pub(super) fn refusal(
    status: u16,
    message: &str,
    param: Option<&str>,
    code: Value,
) -> ErrorResponse {
    ErrorResponse {
        status,
        headers: Vec::new(),
        body: openai_envelope(message, "invalid_request_error", param, code)
            .to_string()
            .into_bytes(),
    }
}

/// A JSON value's type, as OpenAI names it in its errors.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

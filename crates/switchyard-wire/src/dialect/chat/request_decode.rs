//! Requests, server side: a client's chat body as a canonical request.

use super::reasoning_text;
use crate::codec::{parse_object, DecodeError, DecodedRequest};
use crate::json::{arr_at, as_obj, obj_at, require_obj, require_str, str_at, wrong_type, Object};
use crate::part::{Image, Part, Thinking, ToolCall, ToolKind, ToolResult};
use crate::request::{
    Message, Passthrough, Reasoning, Request, ResponseFormat, Role, Tool, ToolChoice,
};
use crate::Dialect;
use serde_json::{Map, Value};

/// A client's chat body as a canonical request.
pub(super) fn decode(body: &[u8]) -> Result<DecodedRequest, DecodeError> {
    const WHERE: &str = "chat request body";
    let obj = parse_object(body, WHERE)?;
    let mut request = Request::default();
    let mut passthrough = Map::new();
    let mut model = None;
    let mut stream = false;
    let mut max_completion_tokens = None;
    let mut max_tokens = None;
    let mut saw_messages = false;
    for (key, value) in obj {
        if value.is_null() && key != "messages" {
            continue;
        }
        match key.as_str() {
            "model" => match value {
                Value::String(s) => model = Some(s),
                other => return Err(wrong_type(WHERE, "model", "a string", &other)),
            },
            "stream" => match value {
                Value::Bool(b) => stream = b,
                other => return Err(wrong_type(WHERE, "stream", "a boolean", &other)),
            },
            "messages" => {
                saw_messages = true;
                request.messages = decode_messages(&value)?;
            }
            "tools" => match &value {
                Value::Array(tools) => {
                    for (i, tool) in tools.iter().enumerate() {
                        request.tools.push(decode_tool(tool, i)?);
                    }
                }
                other => return Err(wrong_type(WHERE, "tools", "an array", other)),
            },
            "tool_choice" => match decode_tool_choice(&value) {
                Some(choice) => request.tool_choice = Some(choice),
                None => {
                    passthrough.insert(key, value);
                }
            },
            "parallel_tool_calls" => match value {
                Value::Bool(b) => request.parallel_tool_calls = Some(b),
                other => {
                    return Err(wrong_type(
                        WHERE,
                        "parallel_tool_calls",
                        "a boolean",
                        &other,
                    ))
                }
            },
            "max_completion_tokens" => max_completion_tokens = Some(count(&value, &key)?),
            "max_tokens" => max_tokens = Some(count(&value, &key)?),
            "temperature" => request.temperature = Some(number(&value, &key)?),
            "top_p" => request.top_p = Some(number(&value, &key)?),
            "stop" => request.stop = decode_stop(&value)?,
            "reasoning_effort" => match value {
                Value::String(effort) => {
                    request.reasoning = Some(Reasoning {
                        effort: Some(effort),
                        ..Reasoning::default()
                    })
                }
                other => return Err(wrong_type(WHERE, "reasoning_effort", "a string", &other)),
            },
            "response_format" => match decode_response_format(&value) {
                Some(format) => request.response_format = Some(format),
                None => {
                    passthrough.insert(key, value);
                }
            },
            _ => {
                passthrough.insert(key, value);
            }
        }
    }
    if !saw_messages {
        return Err(DecodeError::Malformed(format!(
            "{WHERE} has no `messages` field"
        )));
    }
    request.max_tokens = max_completion_tokens.or(max_tokens);
    if !passthrough.is_empty() {
        request.passthrough = Passthrough {
            dialect: Some(Dialect::Chat),
            fields: passthrough,
        };
    }
    Ok(DecodedRequest {
        model,
        stream,
        request,
    })
}

fn count(value: &Value, key: &str) -> Result<u64, DecodeError> {
    value
        .as_u64()
        .ok_or_else(|| wrong_type("chat request body", key, "a non-negative integer", value))
}

fn number(value: &Value, key: &str) -> Result<f64, DecodeError> {
    value
        .as_f64()
        .ok_or_else(|| wrong_type("chat request body", key, "a number", value))
}

fn decode_stop(value: &Value) -> Result<Vec<String>, DecodeError> {
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    wrong_type("chat request body", &format!("stop[{i}]"), "a string", v)
                })
            })
            .collect(),
        other => Err(wrong_type(
            "chat request body",
            "stop",
            "a string or an array of strings",
            other,
        )),
    }
}

fn decode_messages(value: &Value) -> Result<Vec<Message>, DecodeError> {
    let items = value
        .as_array()
        .ok_or_else(|| wrong_type("chat request body", "messages", "an array", value))?;
    items
        .iter()
        .enumerate()
        .map(|(i, m)| decode_message(m, &format!("messages[{i}]")))
        .collect()
}

fn decode_message(value: &Value, at: &str) -> Result<Message, DecodeError> {
    let msg = as_obj(value, at)?;
    let role = require_str(msg, "role", at)?;
    let message = |role, content| Ok(Message { role, content });
    match role {
        "system" => message(Role::System, decode_content(msg.get("content"), at)?),
        "developer" => message(Role::Developer, decode_content(msg.get("content"), at)?),
        "user" => message(Role::User, decode_content(msg.get("content"), at)?),
        "assistant" => message(Role::Assistant, decode_assistant(msg, at)?),
        "tool" => {
            let call_id = require_str(msg, "tool_call_id", at)?;
            let content = decode_content(msg.get("content"), at)?;
            message(Role::Tool, vec![tool_result(call_id, None, content)])
        }
        "function" => {
            let name = require_str(msg, "name", at)?;
            let content = decode_content(msg.get("content"), at)?;
            message(Role::Tool, vec![tool_result(name, Some(name), content)])
        }
        other => Err(DecodeError::Malformed(format!(
            "{at}: unknown role `{other}`; accepted: system, developer, user, assistant, tool, function"
        ))),
    }
}

fn tool_result(call_id: &str, name: Option<&str>, content: Vec<Part>) -> Part {
    Part::ToolResult(ToolResult {
        call_id: call_id.to_string(),
        name: name.map(str::to_string),
        content,
        is_error: false,
        kind: ToolKind::Function,
    })
}

/// Message content: a string (one text part), `null` or absent (nothing), or an array of
/// content parts.
fn decode_content(value: Option<&Value>, at: &str) -> Result<Vec<Part>, DecodeError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![Part::text(s.clone())]),
        Some(Value::Array(parts)) => {
            let mut out = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                let where_ = format!("{at}.content[{i}]");
                if let Some(p) = decode_content_part(part, &where_)? {
                    out.push(p);
                }
            }
            Ok(out)
        }
        Some(other) => Err(wrong_type(
            at,
            "content",
            "a string, an array or null",
            other,
        )),
    }
}

fn decode_content_part(value: &Value, at: &str) -> Result<Option<Part>, DecodeError> {
    let part = as_obj(value, at)?;
    match require_str(part, "type", at)? {
        "text" => Ok(Some(Part::text(require_str(part, "text", at)?))),
        "image_url" => {
            let url = match part.get("image_url") {
                Some(Value::String(url)) => url.as_str(),
                Some(Value::Object(image)) => {
                    require_str(image, "url", &format!("{at}.image_url"))?
                }
                Some(other) => return Err(wrong_type(at, "image_url", "an object", other)),
                None => return Err(crate::json::missing(at, "image_url")),
            };
            Ok(Some(Part::Image(Image::from_url(url))))
        }
        // An assistant's refusal text has no canonical part.
        "refusal" => Ok(None),
        other => Err(DecodeError::Malformed(format!(
            "{at}: content part type `{other}` is not supported; accepted: text, image_url"
        ))),
    }
}

/// An assistant message: thinking first, then text, then tool calls (the order chat
/// replies come in).
fn decode_assistant(msg: &Object, at: &str) -> Result<Vec<Part>, DecodeError> {
    let mut parts = Vec::new();
    if let Some(reasoning) = reasoning_text(msg) {
        parts.push(Part::Thinking(Thinking {
            text: reasoning.to_string(),
            ..Default::default()
        }));
    }
    parts.extend(
        decode_content(msg.get("content"), at)?
            .into_iter()
            .filter(|p| !matches!(p, Part::Text { text, .. } if text.is_empty())),
    );
    if let Some(calls) = arr_at(msg, "tool_calls") {
        for (i, call) in calls.iter().enumerate() {
            parts.push(Part::ToolCall(decode_tool_call(
                call,
                i,
                &format!("{at}.tool_calls[{i}]"),
            )?));
        }
    } else if let Some(call) = obj_at(msg, "function_call") {
        let where_ = format!("{at}.function_call");
        let name = require_str(call, "name", &where_)?;
        parts.push(Part::ToolCall(ToolCall {
            id: name.to_string(),
            name: name.to_string(),
            arguments: arguments_text(call.get("arguments")),
            kind: ToolKind::Function,
            namespace: None,
            state: None,
        }));
    }
    Ok(parts)
}

/// A whole tool call (`{id, type, function:{name, arguments}}` or OpenAI's
/// `{id, type:"custom", custom:{name, input}}`), shared with replies. A missing id is
/// synthesised as `call_<position>`.
pub(super) fn decode_tool_call(
    value: &Value,
    position: usize,
    at: &str,
) -> Result<ToolCall, DecodeError> {
    let call = as_obj(value, at)?;
    let id = str_at(call, "id")
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("call_{position}"));
    if str_at(call, "type") == Some("custom") {
        let custom = require_obj(call, "custom", at)?;
        let where_ = format!("{at}.custom");
        return Ok(ToolCall {
            id,
            name: require_str(custom, "name", &where_)?.to_string(),
            arguments: str_at(custom, "input").unwrap_or_default().to_string(),
            kind: ToolKind::Custom,
            namespace: None,
            state: None,
        });
    }
    let function = require_obj(call, "function", at)?;
    let where_ = format!("{at}.function");
    Ok(ToolCall {
        id,
        name: require_str(function, "name", &where_)?.to_string(),
        arguments: arguments_text(function.get("arguments")),
        kind: ToolKind::Function,
        namespace: None,
        state: None,
    })
}

/// Arguments as JSON text: a string as is, an object (some servers send one) serialised.
pub(super) fn arguments_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn decode_tool(value: &Value, i: usize) -> Result<Tool, DecodeError> {
    let at = format!("tools[{i}]");
    let tool = as_obj(value, &at)?;
    match str_at(tool, "type").unwrap_or("function") {
        "function" => {
            let function = require_obj(tool, "function", &at)?;
            let where_ = format!("{at}.function");
            Ok(Tool {
                name: require_str(function, "name", &where_)?.to_string(),
                description: str_at(function, "description").map(str::to_string),
                parameters: function.get("parameters").cloned().unwrap_or(Value::Null),
                kind: ToolKind::Function,
                strict: function.get("strict").and_then(Value::as_bool),
                namespace: None,
            })
        }
        "custom" => {
            let custom = require_obj(tool, "custom", &at)?;
            let where_ = format!("{at}.custom");
            Ok(Tool {
                name: require_str(custom, "name", &where_)?.to_string(),
                description: str_at(custom, "description").map(str::to_string),
                parameters: custom.get("format").cloned().unwrap_or(Value::Null),
                kind: ToolKind::Custom,
                strict: None,
                namespace: None,
            })
        }
        other => Err(DecodeError::Malformed(format!(
            "{at}: tool type `{other}` is not supported; accepted: function, custom"
        ))),
    }
}

/// The tool choice, or `None` for a shape the hub does not model (kept as passthrough).
fn decode_tool_choice(value: &Value) -> Option<ToolChoice> {
    match value {
        Value::String(s) => match s.as_str() {
            "auto" => Some(ToolChoice::Auto),
            "none" => Some(ToolChoice::None),
            "required" => Some(ToolChoice::Required),
            _ => None,
        },
        Value::Object(o) => {
            let inner = match str_at(o, "type")? {
                "function" => obj_at(o, "function")?,
                "custom" => obj_at(o, "custom")?,
                _ => return None,
            };
            str_at(inner, "name").map(|n| ToolChoice::Tool(n.to_string()))
        }
        _ => None,
    }
}

/// The response format, or `None` for a shape the hub does not model (`text`).
fn decode_response_format(value: &Value) -> Option<ResponseFormat> {
    let obj = value.as_object()?;
    match str_at(obj, "type")? {
        "json_object" => Some(ResponseFormat::JsonObject),
        "json_schema" => {
            let inner = obj_at(obj, "json_schema")?;
            Some(ResponseFormat::JsonSchema {
                name: str_at(inner, "name").unwrap_or_default().to_string(),
                schema: inner.get("schema").cloned().unwrap_or(Value::Null),
                strict: inner.get("strict").and_then(Value::as_bool),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_shapes_say_where() {
        let err = decode(
            br#"{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio"}]}]}"#,
        )
        .unwrap_err();
        assert!(format!("{err}").contains("messages[0].content[0]"), "{err}");
        let err = decode(br#"{"model":"m","messages":[{"role":"robot"}]}"#).unwrap_err();
        assert!(format!("{err}").contains("unknown role `robot`"), "{err}");
        let err = decode(br#"{"model":"m"}"#).unwrap_err();
        assert!(format!("{err}").contains("messages"), "{err}");
        let err = decode(br#"{"model":"m","messages":[],"temperature":"hot"}"#).unwrap_err();
        assert!(format!("{err}").contains("temperature"), "{err}");
    }
}

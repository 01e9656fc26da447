//! Requests: canonical → `POST /v1/messages` body (client side), and a client's body →
//! canonical (server side).

use super::blocks::{blocks_to_parts, part_to_block, Unsigned};
use super::common::number;
use super::shape::{Shape, SHAPE_KEY};
use crate::codec::{parse_object, DecodeError, DecodedRequest, EncodeError, EncodeOptions};
use crate::json::{as_obj, require_str, str_at, u64_at, wrong_type, Object};
use crate::part::Part;
use crate::request::{
    Message, Passthrough, Reasoning, Request, ResponseFormat, Role, Tool, ToolChoice,
};
use crate::Dialect;
use serde_json::{json, Map, Value};

/// `max_tokens` when the request sets none (the field is required). 4096 is accepted by
/// every Claude model and by the Messages servers of vLLM, SGLang and Ollama.
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The thinking budget sent for an effort level when the request gives no budget.
pub fn effort_budget(effort: &str) -> u64 {
    match effort {
        "minimal" => 1024,
        "low" => 2048,
        "medium" => 8192,
        "high" => 16384,
        "xhigh" | "max" => 24576,
        _ => 8192,
    }
}

/// The smallest budget Anthropic accepts.
const MIN_BUDGET: u64 = 1024;

/// The name given to a JSON schema read from `output_config.format` (the wire has none).
pub const SCHEMA_NAME: &str = "output";

/// Top-level fields this codec models; the rest of a client's body is passthrough.
const MODELLED: &[&str] = &[
    "model",
    "messages",
    "system",
    "max_tokens",
    "temperature",
    "top_p",
    "stop_sequences",
    "tools",
    "tool_choice",
    "thinking",
    "stream",
];

pub(super) fn encode(
    request: &Request,
    options: &EncodeOptions,
) -> Result<Map<String, Value>, EncodeError> {
    let passthrough = request.passthrough.fields_for(Dialect::Messages);
    let mut body = Map::new();
    body.insert("model".into(), options.model.into());

    let thinking = thinking_field(request, passthrough);
    let max_tokens = match (request.max_tokens, &thinking) {
        (Some(n), _) => n,
        (None, Some((_, budget))) => budget.unwrap_or(0).saturating_add(DEFAULT_MAX_TOKENS),
        (None, None) => DEFAULT_MAX_TOKENS,
    };
    body.insert("max_tokens".into(), max_tokens.into());

    if let Some(system) = system_field(&request.messages) {
        body.insert("system".into(), system);
    }
    body.insert(
        "messages".into(),
        Value::Array(messages_field(&request.messages)),
    );

    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool_to_wire).collect()),
        );
    }
    if let Some(choice) = tool_choice_field(request) {
        body.insert("tool_choice".into(), choice);
    }
    if let Some((thinking, _)) = thinking {
        body.insert("thinking".into(), thinking);
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), number(t));
    }
    if let Some(p) = request.top_p {
        body.insert("top_p".into(), number(p));
    }
    if !request.stop.is_empty() {
        body.insert("stop_sequences".into(), request.stop.clone().into());
    }
    if let Some(format) = &request.response_format {
        let schema = match format {
            ResponseFormat::JsonObject => json!({"type": "object"}),
            ResponseFormat::JsonSchema { schema, .. } => schema.clone(),
        };
        let mut config = Map::new();
        config.insert(
            "format".into(),
            json!({"type": "json_schema", "schema": schema}),
        );
        body.insert("output_config".into(), Value::Object(config));
    }
    if options.stream {
        body.insert("stream".into(), true.into());
    }
    if let Some(fields) = passthrough {
        for (key, value) in fields {
            if key == SHAPE_KEY {
                continue;
            }
            match (body.get_mut(key), value) {
                (Some(Value::Object(ours)), Value::Object(theirs)) if key == "output_config" => {
                    for (k, v) in theirs {
                        ours.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
                (Some(_), _) => {}
                (None, _) => {
                    body.insert(key.clone(), value.clone());
                }
            }
        }
        if let Some(shape) = fields.get(SHAPE_KEY) {
            Shape::from_value(shape).apply(&mut body);
        }
    }
    Ok(body)
}

/// System and developer messages, wherever they stand, become the top-level `system`:
/// a string for one plain text, else text blocks in order.
fn system_field(messages: &[Message]) -> Option<Value> {
    let texts: Vec<&str> = messages
        .iter()
        .filter(|m| matches!(m.role, Role::System | Role::Developer))
        .flat_map(|m| m.content.iter().filter_map(Part::as_text))
        .collect();
    match texts.as_slice() {
        [] => None,
        [one] => Some(Value::String((*one).to_string())),
        many => Some(Value::Array(
            many.iter()
                .map(|t| json!({"type": "text", "text": t}))
                .collect(),
        )),
    }
}

/// A wire message being built.
struct WireMessage {
    role: &'static str,
    blocks: Vec<Value>,
    /// Holds only tool results so far: more results, or one user message, may join it.
    open_for_results: bool,
}

/// User, assistant and tool messages in order. Tool messages become user messages of
/// `tool_result` blocks: consecutive ones share one message, and a user message right
/// after them joins it (results first), as Anthropic requires.
fn messages_field(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<WireMessage> = Vec::new();
    for message in messages {
        let blocks = || -> Vec<Value> {
            message
                .content
                .iter()
                .filter_map(|p| part_to_block(p, Unsigned::Drop))
                .collect()
        };
        match message.role {
            Role::System | Role::Developer => {}
            Role::Tool => match out.last_mut() {
                Some(last) if last.open_for_results => last.blocks.extend(blocks()),
                _ => out.push(WireMessage {
                    role: "user",
                    blocks: blocks(),
                    open_for_results: true,
                }),
            },
            Role::User => match out.last_mut() {
                Some(last) if last.open_for_results => {
                    last.blocks.extend(blocks());
                    last.open_for_results = false;
                }
                _ => out.push(WireMessage {
                    role: "user",
                    blocks: blocks(),
                    open_for_results: false,
                }),
            },
            Role::Assistant => out.push(WireMessage {
                role: "assistant",
                blocks: blocks(),
                open_for_results: false,
            }),
        }
    }
    out.into_iter()
        .map(|m| {
            let content = match m.blocks.as_slice() {
                [Value::Object(b)] if b.len() == 2 && b.get("type") == Some(&"text".into()) => {
                    b.get("text").cloned().unwrap_or_default()
                }
                _ => Value::Array(m.blocks),
            };
            json!({"role": m.role, "content": content})
        })
        .collect()
}

fn tool_to_wire(tool: &Tool) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), tool.flat_name().into());
    if let Some(d) = &tool.description {
        out.insert("description".into(), d.clone().into());
    }
    let schema = match &tool.parameters {
        Value::Object(_) => tool.parameters.clone(),
        _ => json!({"type": "object"}),
    };
    out.insert("input_schema".into(), schema);
    if let Some(strict) = tool.strict {
        out.insert("strict".into(), strict.into());
    }
    Value::Object(out)
}

fn tool_choice_field(request: &Request) -> Option<Value> {
    let mut choice = match &request.tool_choice {
        Some(ToolChoice::Auto) => json!({"type": "auto"}),
        Some(ToolChoice::None) => json!({"type": "none"}),
        Some(ToolChoice::Required) => json!({"type": "any"}),
        Some(ToolChoice::Tool(name)) => json!({"type": "tool", "name": name}),
        // Parallel calls can only be forbidden through a tool choice.
        None if request.parallel_tool_calls == Some(false) => json!({"type": "auto"}),
        None => return None,
    };
    if let (Some(parallel), Value::Object(map)) = (request.parallel_tool_calls, &mut choice) {
        if map.get("type") != Some(&"none".into()) {
            map.insert("disable_parallel_tool_use".into(), (!parallel).into());
        }
    }
    Some(choice)
}

/// The `thinking` field and the budget it carries. A budget wins; without one, effort
/// `none` is `disabled`, an effort that the client itself sent in `output_config.effort`
/// (passthrough) is `adaptive`, any other effort is `enabled` with [`effort_budget`],
/// and reasoning with neither is `adaptive`. A budget from the table is clamped below
/// the request's `max_tokens` (thinking is left out when less than 1024 remains); an
/// explicit budget is sent as given.
fn thinking_field(request: &Request, passthrough: Option<&Object>) -> Option<(Value, Option<u64>)> {
    let reasoning = request.reasoning.as_ref()?;
    if let Some(budget) = reasoning.budget_tokens {
        return Some((
            json!({"type": "enabled", "budget_tokens": budget}),
            Some(budget),
        ));
    }
    let Some(effort) = reasoning.effort.as_deref() else {
        return Some((json!({"type": "adaptive"}), None));
    };
    if effort == "none" {
        return Some((json!({"type": "disabled"}), None));
    }
    let client_effort = passthrough
        .and_then(|p| p.get("output_config"))
        .and_then(|c| c.get("effort"))
        .and_then(Value::as_str);
    if client_effort == Some(effort) {
        return Some((json!({"type": "adaptive"}), None));
    }
    let mut budget = effort_budget(effort);
    if let Some(max) = request.max_tokens {
        budget = budget.min(max.saturating_sub(1));
        if budget < MIN_BUDGET {
            return None;
        }
    }
    Some((
        json!({"type": "enabled", "budget_tokens": budget}),
        Some(budget),
    ))
}

// ---------------------------------------------------------------------------------
// Server side.

pub(super) fn decode(body: &[u8]) -> Result<DecodedRequest, DecodeError> {
    let obj = parse_object(body, "messages request body")?;
    let mut shape = Shape::default();
    let mut request = Request::default();
    let present = |key: &str| obj.get(key).filter(|v| !v.is_null());

    if let Some(system) = present("system") {
        let parts = match system {
            Value::String(s) => vec![Part::text(s.as_str())],
            Value::Array(blocks) => blocks_to_parts(blocks, "/system", &mut shape)?,
            other => {
                return Err(wrong_type(
                    "request",
                    "system",
                    "a string or an array",
                    other,
                ))
            }
        };
        request.messages.push(Message {
            role: Role::System,
            content: parts,
        });
    }
    let messages = crate::json::require_arr(&obj, "messages", "request")?;
    for (i, message) in messages.iter().enumerate() {
        decode_message(message, i, &mut shape, &mut request.messages)?;
    }

    request.max_tokens = present("max_tokens").and_then(Value::as_u64);
    request.temperature = present("temperature").and_then(Value::as_f64);
    request.top_p = present("top_p").and_then(Value::as_f64);
    if let Some(stops) = present("stop_sequences") {
        let list = stops
            .as_array()
            .ok_or_else(|| wrong_type("request", "stop_sequences", "an array", stops))?;
        request.stop = list
            .iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect();
    }
    if let Some(tools) = present("tools") {
        let list = tools
            .as_array()
            .ok_or_else(|| wrong_type("request", "tools", "an array", tools))?;
        for (k, tool) in list.iter().enumerate() {
            match decode_tool(tool, k, &mut shape)? {
                Some(t) => request.tools.push(t),
                None => shape.insert("/tools".into(), k, tool.clone()),
            }
        }
    }
    if let Some(choice) = present("tool_choice") {
        let choice = as_obj(choice, "request `tool_choice`")?;
        let kind = require_str(choice, "type", "request `tool_choice`")?;
        request.tool_choice = Some(match kind {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "any" => ToolChoice::Required,
            "tool" => {
                ToolChoice::Tool(require_str(choice, "name", "request `tool_choice`")?.to_string())
            }
            other => {
                return Err(DecodeError::Malformed(format!(
                    "request `tool_choice` has type `{other}`; accepted: auto, any, tool, none"
                )))
            }
        });
        request.parallel_tool_calls = choice
            .get("disable_parallel_tool_use")
            .and_then(Value::as_bool)
            .map(|d| !d);
        shape.extras(
            "/tool_choice".into(),
            choice,
            &["type", "name", "disable_parallel_tool_use"],
        );
    }

    let mut passthrough: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| !MODELLED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(Value::Object(config)) = passthrough.get_mut("output_config") {
        let is_schema = config
            .get("format")
            .and_then(|f| f.get("type"))
            .and_then(Value::as_str)
            == Some("json_schema");
        if is_schema {
            if let Some(format) = config.remove("format") {
                request.response_format = Some(ResponseFormat::JsonSchema {
                    name: SCHEMA_NAME.into(),
                    schema: format.get("schema").cloned().unwrap_or(Value::Null),
                    strict: None,
                });
            }
            if config.is_empty() {
                passthrough.remove("output_config");
            }
        }
    }
    if let Some(thinking) = present("thinking") {
        let thinking = as_obj(thinking, "request `thinking`")?;
        let effort = passthrough
            .get("output_config")
            .and_then(|c| c.get("effort"))
            .and_then(Value::as_str)
            .map(str::to_string);
        request.reasoning = Some(match require_str(thinking, "type", "request `thinking`")? {
            "enabled" => Reasoning {
                budget_tokens: u64_at(thinking, "budget_tokens"),
                effort,
                summary: None,
            },
            "disabled" => Reasoning {
                effort: Some("none".into()),
                ..Reasoning::default()
            },
            // `adaptive` and anything newer: the model decides how much to think.
            _ => Reasoning {
                effort,
                ..Reasoning::default()
            },
        });
        shape.extras("/thinking".into(), thinking, &["type", "budget_tokens"]);
    }
    if !shape.is_empty() {
        passthrough.insert(SHAPE_KEY.into(), shape.to_value());
    }
    if !passthrough.is_empty() {
        request.passthrough = Passthrough {
            dialect: Some(Dialect::Messages),
            fields: passthrough,
        };
    }
    Ok(DecodedRequest {
        model: str_at(&obj, "model").map(str::to_string),
        stream: present("stream").and_then(Value::as_bool).unwrap_or(false),
        request,
    })
}

/// One wire message into canonical messages: a user message's leading `tool_result`
/// blocks become one tool message each, the rest one user message.
fn decode_message(
    message: &Value,
    i: usize,
    shape: &mut Shape,
    out: &mut Vec<Message>,
) -> Result<(), DecodeError> {
    let where_ = format!("request message {i}");
    let obj = as_obj(message, &where_)?;
    let role = match require_str(obj, "role", &where_)? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => Role::System,
        other => {
            return Err(DecodeError::Malformed(format!(
                "{where_} has role `{other}`; accepted: user, assistant"
            )))
        }
    };
    let pointer = format!("/messages/{i}");
    shape.extras(pointer.clone(), obj, &["role", "content"]);
    let parts = match obj.get("content") {
        Some(Value::String(s)) => vec![Part::text(s.as_str())],
        Some(Value::Array(blocks)) => {
            blocks_to_parts(blocks, &format!("{pointer}/content"), shape)?
        }
        Some(other) => {
            return Err(wrong_type(
                &where_,
                "content",
                "a string or an array",
                other,
            ))
        }
        None => return Err(crate::json::missing(&where_, "content")),
    };
    if role != Role::User {
        out.push(Message {
            role,
            content: parts,
        });
        return Ok(());
    }
    let leading = parts
        .iter()
        .take_while(|p| matches!(p, Part::ToolResult(_)))
        .count();
    let mut parts = parts.into_iter();
    for part in parts.by_ref().take(leading) {
        out.push(Message {
            role: Role::Tool,
            content: vec![part],
        });
    }
    let rest: Vec<Part> = parts.collect();
    if !rest.is_empty() || leading == 0 {
        out.push(Message {
            role: Role::User,
            content: rest,
        });
    }
    Ok(())
}

/// A client tool; `None` for a server tool (no `input_schema`), kept verbatim.
fn decode_tool(tool: &Value, k: usize, shape: &mut Shape) -> Result<Option<Tool>, DecodeError> {
    let where_ = format!("request tool {k}");
    let obj = as_obj(tool, &where_)?;
    let is_client =
        matches!(str_at(obj, "type"), None | Some("custom")) && obj.get("input_schema").is_some();
    if !is_client {
        return Ok(None);
    }
    shape.extras_any_type(
        format!("/tools/{k}"),
        obj,
        &["name", "description", "input_schema", "strict"],
    );
    Ok(Some(Tool {
        name: require_str(obj, "name", &where_)?.to_string(),
        description: str_at(obj, "description").map(str::to_string),
        parameters: obj.get("input_schema").cloned().unwrap_or(Value::Null),
        kind: crate::part::ToolKind::Function,
        strict: obj.get("strict").and_then(Value::as_bool),
        namespace: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn split(content: Value) -> Vec<Role> {
        let mut shape = Shape::default();
        let mut out = Vec::new();
        decode_message(
            &json!({"role": "user", "content": content}),
            0,
            &mut shape,
            &mut out,
        )
        .unwrap();
        out.iter().map(|m| m.role).collect()
    }

    #[test]
    fn leading_tool_results_split_off_and_later_ones_stay_in_place() {
        let result = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "ok"});
        let text = json!({"type": "text", "text": "t"});
        assert_eq!(
            split(json!([result("a"), result("b")])),
            [Role::Tool, Role::Tool]
        );
        assert_eq!(
            split(json!([result("a"), text.clone()])),
            [Role::Tool, Role::User]
        );
        // Out of Anthropic's order: kept as one user message so it re-encodes the same.
        assert_eq!(split(json!([text, result("a")])), [Role::User]);
        assert_eq!(split(json!([])), [Role::User]);
    }

    #[test]
    fn a_user_message_after_results_joins_them_and_a_second_one_does_not() {
        let result = Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(crate::part::ToolResult {
                call_id: "a".into(),
                name: None,
                content: vec![],
                is_error: false,
                kind: crate::part::ToolKind::Function,
            })],
        };
        let wire = messages_field(&[
            result.clone(),
            result,
            Message::text(Role::User, "x"),
            Message::text(Role::User, "y"),
        ]);
        assert_eq!(
            wire,
            vec![
                json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "a"},
                    {"type": "tool_result", "tool_use_id": "a"},
                    {"type": "text", "text": "x"}]}),
                json!({"role": "user", "content": "y"}),
            ]
        );
    }
}

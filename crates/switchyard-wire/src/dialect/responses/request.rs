//! The request body, both ways: canonical [`Request`] ⇄ `POST /v1/responses` JSON.

use super::items::{
    optional_str, reasoning_item, thinking_from_input, thinking_is_sendable, tool_call_from_item,
    tool_call_item, INCLUDE_ENCRYPTED,
};
use crate::codec::{parse_object, DecodeError, DecodedRequest, EncodeError, EncodeOptions};
use crate::json::{as_obj, obj_at, require_str, str_at, wrong_type, Object};
use crate::part::{Image, Part, ToolKind, ToolResult};
use crate::request::{
    Message, Passthrough, Reasoning, Request, ResponseFormat, Role, Tool, ToolChoice,
};
use crate::Dialect;
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------------------------------
// Encode (client side)
// ---------------------------------------------------------------------------------------

/// The body for `request`.
pub fn encode(
    request: &Request,
    options: &EncodeOptions,
) -> Result<Map<String, Value>, EncodeError> {
    let passthrough = request.passthrough.fields_for(Dialect::Responses);
    let pass = |key: &str| passthrough.and_then(|p| p.get(key));
    let mut body = Map::new();
    body.insert("model".into(), options.model.into());

    let (instructions, rest) = match request.messages.split_first() {
        Some((first, rest)) if first.role == Role::System => match first.content.as_slice() {
            [Part::Text { text, state: None }] => (Some(text.as_str()), rest),
            _ => (None, request.messages.as_slice()),
        },
        _ => (None, request.messages.as_slice()),
    };
    if let Some(text) = instructions {
        body.insert("instructions".into(), text.into());
    }
    let mut input = Vec::new();
    for message in rest {
        encode_message(message, &mut input);
    }
    body.insert("input".into(), Value::Array(input));

    let tools = encode_tools(
        &request.tools,
        pass("tools").and_then(Value::as_array).map(Vec::as_slice),
    );
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &request.tool_choice {
        body.insert(
            "tool_choice".into(),
            encode_tool_choice(choice, &request.tools),
        );
    }
    if let Some(parallel) = request.parallel_tool_calls {
        body.insert("parallel_tool_calls".into(), parallel.into());
    }
    if let Some(max) = request.max_tokens {
        body.insert("max_output_tokens".into(), max.into());
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(p) = request.top_p {
        body.insert("top_p".into(), p.into());
    }
    if let Some(reasoning) = &request.reasoning {
        body.insert("reasoning".into(), encode_reasoning(reasoning));
    }
    let mut text = pass("text")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(format) = &request.response_format {
        text.insert("format".into(), encode_format(format));
    }
    if !text.is_empty() {
        body.insert("text".into(), Value::Object(text));
    }
    body.insert("stream".into(), options.stream.into());
    if request.reasoning.is_some() {
        // Stateless reasoning: ask for the state back so the next turn can carry it.
        body.insert("store".into(), false.into());
        body.insert("include".into(), json!([INCLUDE_ENCRYPTED]));
    }
    if let Some(fields) = passthrough {
        for (key, value) in fields {
            match key.as_str() {
                "tools" | "text" => {}
                // The client's own choice wins over the implied values above.
                "store" | "include" => {
                    body.insert(key.clone(), value.clone());
                }
                _ => {
                    if !body.contains_key(key) {
                        body.insert(key.clone(), value.clone());
                    }
                }
            }
        }
    }
    Ok(body)
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::Developer => "developer",
        Role::User | Role::Tool => "user",
        Role::Assistant => "assistant",
    }
}

/// Appends the items of one message: its text and images as one `message` item, every
/// other part as its own item, in order.
fn encode_message(message: &Message, input: &mut Vec<Value>) {
    let assistant = message.role == Role::Assistant;
    let mut content: Vec<Value> = Vec::new();
    let mut pending = false;
    let flush = |content: &mut Vec<Value>, pending: &mut bool, input: &mut Vec<Value>| {
        if *pending {
            input.push(json!({
                "type": "message",
                "role": role_name(message.role),
                "content": std::mem::take(content),
            }));
            *pending = false;
        }
    };
    if message.content.is_empty() && message.role != Role::Tool {
        // An empty message is still a turn.
        pending = true;
    }
    for part in &message.content {
        match part {
            Part::Text { text, .. } => {
                let kind = if assistant {
                    "output_text"
                } else {
                    "input_text"
                };
                content.push(json!({"type": kind, "text": text}));
                pending = true;
            }
            Part::Image(image) => {
                content.push(json!({"type": "input_image", "image_url": image.to_url()}));
                pending = true;
            }
            Part::ToolCall(call) => {
                flush(&mut content, &mut pending, input);
                input.push(tool_call_item(call, None, None));
            }
            Part::ToolResult(result) => {
                flush(&mut content, &mut pending, input);
                input.push(encode_tool_result(result));
            }
            Part::Thinking(thinking) => {
                if thinking_is_sendable(thinking) {
                    flush(&mut content, &mut pending, input);
                    input.push(reasoning_item(thinking, None));
                }
            }
        }
    }
    flush(&mut content, &mut pending, input);
}

fn encode_tool_result(result: &ToolResult) -> Value {
    let output = match result.content.as_slice() {
        [Part::Text { text, .. }] => Value::String(text.clone()),
        parts => Value::Array(
            parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text, .. } => Some(json!({"type": "input_text", "text": text})),
                    Part::Image(image) => {
                        Some(json!({"type": "input_image", "image_url": image.to_url()}))
                    }
                    _ => None,
                })
                .collect(),
        ),
    };
    let kind = match result.kind {
        ToolKind::Function => "function_call_output",
        ToolKind::Custom => "custom_tool_call_output",
    };
    json!({"type": kind, "call_id": result.call_id, "output": output})
}

fn encode_tool(tool: &Tool) -> Value {
    let mut obj = Map::new();
    let custom = tool.kind == ToolKind::Custom;
    obj.insert(
        "type".into(),
        if custom { "custom" } else { "function" }.into(),
    );
    obj.insert("name".into(), tool.name.clone().into());
    if let Some(d) = &tool.description {
        obj.insert("description".into(), d.clone().into());
    }
    if custom {
        if !tool.parameters.is_null() {
            obj.insert("format".into(), tool.parameters.clone());
        }
    } else {
        if let Some(strict) = tool.strict {
            obj.insert("strict".into(), strict.into());
        }
        if !tool.parameters.is_null() {
            obj.insert("parameters".into(), tool.parameters.clone());
        }
    }
    Value::Object(obj)
}

/// The `tools` array: modelled tools in order, members of a namespace grouped into one
/// `namespace` tool at the place of the first (with the namespace's own fields from the
/// passthrough), then the passthrough's other tools.
fn encode_tools(tools: &[Tool], passthrough: Option<&[Value]>) -> Vec<Value> {
    let passthrough = passthrough.unwrap_or_default();
    let shell = |ns: &str| {
        passthrough.iter().find_map(|t| {
            let obj = t.as_object()?;
            (str_at(obj, "type") == Some("namespace") && str_at(obj, "name") == Some(ns))
                .then(|| obj.clone())
        })
    };
    let mut out: Vec<Value> = Vec::new();
    let mut groups: Vec<(String, usize)> = Vec::new();
    for tool in tools {
        let member = encode_tool(tool);
        let Some(ns) = &tool.namespace else {
            out.push(member);
            continue;
        };
        let slot = groups.iter().find(|(n, _)| n == ns).map(|(_, i)| *i);
        let group = slot
            .and_then(|i| out.get_mut(i))
            .and_then(Value::as_object_mut);
        match group {
            Some(group) => {
                if let Some(Value::Array(members)) = group.get_mut("tools") {
                    members.push(member);
                }
            }
            None => {
                let mut group = shell(ns).unwrap_or_else(|| {
                    let mut m = Map::new();
                    m.insert("type".into(), "namespace".into());
                    m.insert("name".into(), ns.clone().into());
                    m
                });
                let mut members = match group.remove("tools") {
                    Some(Value::Array(kept)) => kept,
                    _ => Vec::new(),
                };
                members.push(member);
                group.insert("tools".into(), Value::Array(members));
                groups.push((ns.clone(), out.len()));
                out.push(Value::Object(group));
            }
        }
    }
    for tool in passthrough {
        let grouped = tool.as_object().is_some_and(|obj| {
            str_at(obj, "type") == Some("namespace")
                && groups
                    .iter()
                    .any(|(n, _)| Some(n.as_str()) == str_at(obj, "name"))
        });
        if !grouped {
            out.push(tool.clone());
        }
    }
    out
}

fn encode_tool_choice(choice: &ToolChoice, tools: &[Tool]) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::Tool(name) => {
            let custom = tools
                .iter()
                .any(|t| &t.name == name && t.kind == ToolKind::Custom);
            let kind = if custom { "custom" } else { "function" };
            json!({"type": kind, "name": name})
        }
    }
}

fn encode_reasoning(reasoning: &Reasoning) -> Value {
    let mut obj = Map::new();
    let effort = reasoning.effort.clone().or_else(|| {
        reasoning.budget_tokens.map(|b| {
            match b {
                0..=2048 => "low",
                2049..=16384 => "medium",
                _ => "high",
            }
            .to_string()
        })
    });
    if let Some(effort) = effort {
        obj.insert("effort".into(), effort.into());
    }
    if let Some(summary) = &reasoning.summary {
        obj.insert("summary".into(), summary.clone().into());
    }
    Value::Object(obj)
}

fn encode_format(format: &ResponseFormat) -> Value {
    match format {
        ResponseFormat::JsonObject => json!({"type": "json_object"}),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => {
            let mut obj = Map::new();
            obj.insert("type".into(), "json_schema".into());
            if let Some(strict) = strict {
                obj.insert("strict".into(), (*strict).into());
            }
            obj.insert("schema".into(), schema.clone());
            obj.insert("name".into(), name.clone().into());
            Value::Object(obj)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Decode (server side)
// ---------------------------------------------------------------------------------------

/// A client's request body.
pub fn decode(body: &[u8]) -> Result<DecodedRequest, DecodeError> {
    let obj = parse_object(body, "responses request body")?;
    let where_ = "responses request body";
    let mut request = Request::default();
    let mut fields = Map::new();
    let mut extra_tools: Vec<Value> = Vec::new();

    let reasoning = match obj.get("reasoning") {
        None | Some(Value::Null) => None,
        Some(Value::Object(r)) => Some(Reasoning {
            effort: optional_str(r, "effort", "`reasoning`")?.map(str::to_string),
            budget_tokens: None,
            summary: optional_str(r, "summary", "`reasoning`")?.map(str::to_string),
        }),
        Some(other) => return Err(wrong_type(where_, "reasoning", "an object", other)),
    };

    for (key, value) in &obj {
        match key.as_str() {
            "model" | "stream" | "reasoning" => {}
            "instructions" => match value {
                Value::Null => {}
                Value::String(s) => request.messages.insert(0, Message::text(Role::System, s)),
                other => return Err(wrong_type(where_, key, "a string", other)),
            },
            "input" => {
                let messages = decode_input(value)?;
                request.messages.extend(messages);
            }
            "tools" => match value {
                Value::Null => {}
                Value::Array(tools) => {
                    for (i, tool) in tools.iter().enumerate() {
                        decode_tool(tool, i, &mut request.tools, &mut extra_tools)?;
                    }
                }
                other => return Err(wrong_type(where_, key, "an array", other)),
            },
            "tool_choice" => match decode_tool_choice(value) {
                Some(choice) => request.tool_choice = Some(choice),
                None if value.is_null() => {}
                None => {
                    fields.insert(key.clone(), value.clone());
                }
            },
            "parallel_tool_calls" => match value {
                Value::Null => {}
                Value::Bool(b) => request.parallel_tool_calls = Some(*b),
                other => return Err(wrong_type(where_, key, "a boolean", other)),
            },
            "max_output_tokens" => match value {
                Value::Null => {}
                v => match v.as_u64() {
                    Some(n) => request.max_tokens = Some(n),
                    None => return Err(wrong_type(where_, key, "a whole number", v)),
                },
            },
            "temperature" | "top_p" => match value {
                Value::Null => {}
                v => match v.as_f64() {
                    Some(n) if key == "temperature" => request.temperature = Some(n),
                    Some(n) => request.top_p = Some(n),
                    None => return Err(wrong_type(where_, key, "a number", v)),
                },
            },
            "text" => match value {
                Value::Null => {}
                Value::Object(text) => {
                    let mut rest = text.clone();
                    if let Some(format) = text.get("format").and_then(decode_format) {
                        request.response_format = Some(format);
                        rest.remove("format");
                    }
                    if !rest.is_empty() {
                        fields.insert(key.clone(), Value::Object(rest));
                    }
                }
                other => return Err(wrong_type(where_, key, "an object", other)),
            },
            // Implied by reasoning: the encoder adds exactly these back.
            "store" if reasoning.is_some() && value == &Value::Bool(false) => {}
            "include" if reasoning.is_some() && value == &json!([INCLUDE_ENCRYPTED]) => {}
            _ => {
                fields.insert(key.clone(), value.clone());
            }
        }
    }
    request.reasoning = reasoning;
    if !extra_tools.is_empty() {
        // Namespace shells last, so that decoding a re-encoded body gives the same order.
        extra_tools.sort_by_key(|t| t.get("type").and_then(Value::as_str) == Some("namespace"));
        fields.insert("tools".into(), Value::Array(extra_tools));
    }
    if !fields.is_empty() {
        request.passthrough = Passthrough {
            dialect: Some(Dialect::Responses),
            fields,
        };
    }
    let stream = match obj.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(wrong_type(where_, "stream", "a boolean", other)),
    };
    Ok(DecodedRequest {
        model: optional_str(&obj, "model", where_)?.map(str::to_string),
        stream,
        request,
    })
}

/// Which merged message the last item went into.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Assistant,
    Tool,
}

/// The `input` field (a string, or an array of items) as messages.
pub fn decode_input(input: &Value) -> Result<Vec<Message>, DecodeError> {
    let items = match input {
        Value::Null => return Ok(Vec::new()),
        Value::String(s) => return Ok(vec![Message::text(Role::User, s)]),
        Value::Array(items) => items,
        other => {
            return Err(wrong_type(
                "responses request body",
                "input",
                "a string or an array",
                other,
            ))
        }
    };
    let mut messages: Vec<Message> = Vec::new();
    let mut open = Open::None;
    for (i, item) in items.iter().enumerate() {
        let where_ = format!("input[{i}]");
        let item = as_obj(item, &where_)?;
        let kind = match optional_str(item, "type", &where_)? {
            Some(kind) => kind,
            None if item.contains_key("role") => "message",
            None => return Err(DecodeError::Malformed(format!("{where_} has no `type`"))),
        };
        let (part, wants) = match kind {
            "message" => {
                let role = match require_str(item, "role", &where_)? {
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    "system" => Role::System,
                    "developer" => Role::Developer,
                    other => {
                        return Err(DecodeError::Malformed(format!(
                            "{where_}: unknown role `{other}`; accepted: user, assistant, \
                             system, developer"
                        )))
                    }
                };
                let content = decode_content(item.get("content"), &where_)?;
                if role == Role::Assistant {
                    if open == Open::Assistant {
                        if let Some(last) = messages.last_mut() {
                            last.content.extend(content);
                            continue;
                        }
                    }
                    messages.push(Message { role, content });
                    open = Open::Assistant;
                } else {
                    messages.push(Message { role, content });
                    open = Open::None;
                }
                continue;
            }
            "function_call" | "custom_tool_call" => (
                Part::ToolCall(tool_call_from_item(item, &where_)?),
                Open::Assistant,
            ),
            "reasoning" => (Part::Thinking(thinking_from_input(item)), Open::Assistant),
            "function_call_output" | "custom_tool_call_output" => {
                let result = ToolResult {
                    call_id: require_str(item, "call_id", &where_)?.to_string(),
                    name: None,
                    content: decode_output(item.get("output"), &where_)?,
                    is_error: false,
                    kind: if kind == "custom_tool_call_output" {
                        ToolKind::Custom
                    } else {
                        ToolKind::Function
                    },
                };
                (Part::ToolResult(result), Open::Tool)
            }
            // Items the hub does not model (local_shell_call, web_search_call, compaction,
            // item_reference…) are dropped.
            _ => continue,
        };
        match messages.last_mut() {
            Some(last) if open == wants => last.content.push(part),
            _ => {
                let role = if wants == Open::Tool {
                    Role::Tool
                } else {
                    Role::Assistant
                };
                messages.push(Message {
                    role,
                    content: vec![part],
                });
                open = wants;
            }
        }
    }
    Ok(messages)
}

/// A message item's `content`: a string or an array of content parts.
fn decode_content(content: Option<&Value>, where_: &str) -> Result<Vec<Part>, DecodeError> {
    match content {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![Part::text(s.clone())]),
        Some(Value::Array(parts)) => {
            let mut out = Vec::new();
            for (j, part) in parts.iter().enumerate() {
                let where_ = format!("{where_}.content[{j}]");
                if let Some(part) = decode_content_part(as_obj(part, &where_)?, &where_)? {
                    out.push(part);
                }
            }
            Ok(out)
        }
        Some(other) => Err(wrong_type(where_, "content", "a string or an array", other)),
    }
}

fn decode_content_part(part: &Object, where_: &str) -> Result<Option<Part>, DecodeError> {
    Ok(match str_at(part, "type") {
        Some("input_text" | "output_text" | "text") => {
            Some(Part::text(require_str(part, "text", where_)?))
        }
        Some("refusal") => Some(Part::text(require_str(part, "refusal", where_)?)),
        Some("input_image") => match part.get("image_url") {
            Some(Value::String(url)) => Some(Part::Image(Image::from_url(url))),
            // `{"url": …}` objects (chat style) are accepted too.
            Some(Value::Object(o)) => str_at(o, "url").map(|u| Part::Image(Image::from_url(u))),
            // A `file_id` image cannot be carried.
            _ => None,
        },
        // input_file, input_audio…: not modelled.
        _ => None,
    })
}

/// A tool output: a string, or an array of content parts.
fn decode_output(output: Option<&Value>, where_: &str) -> Result<Vec<Part>, DecodeError> {
    match output {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![Part::text(s.clone())]),
        Some(Value::Array(_)) => decode_content(output, where_),
        Some(other) => Err(wrong_type(where_, "output", "a string or an array", other)),
    }
}

fn decode_tool(
    tool: &Value,
    i: usize,
    tools: &mut Vec<Tool>,
    extra: &mut Vec<Value>,
) -> Result<(), DecodeError> {
    let where_ = format!("tools[{i}]");
    let obj = as_obj(tool, &where_)?;
    match str_at(obj, "type") {
        Some("function" | "custom") => tools.push(decode_modelled_tool(obj, &where_, None)?),
        Some("namespace") => {
            let ns = require_str(obj, "name", &where_)?;
            let mut shell = obj.clone();
            let mut kept = Vec::new();
            if let Some(Value::Array(members)) = obj.get("tools") {
                for (j, member) in members.iter().enumerate() {
                    let where_ = format!("{where_}.tools[{j}]");
                    let m = as_obj(member, &where_)?;
                    match str_at(m, "type") {
                        Some("function" | "custom") => {
                            tools.push(decode_modelled_tool(m, &where_, Some(ns))?)
                        }
                        _ => kept.push(member.clone()),
                    }
                }
            }
            // Keep the namespace's own fields (its description) and members the hub does
            // not model; a bare namespace is rebuilt from its members' `namespace`.
            let bare = kept.is_empty()
                && shell
                    .keys()
                    .all(|k| k == "type" || k == "name" || k == "tools");
            if !bare {
                shell.insert("tools".into(), Value::Array(kept));
                extra.push(Value::Object(shell));
            }
        }
        _ => extra.push(tool.clone()),
    }
    Ok(())
}

fn decode_modelled_tool(
    obj: &Object,
    where_: &str,
    namespace: Option<&str>,
) -> Result<Tool, DecodeError> {
    let custom = str_at(obj, "type") == Some("custom");
    let parameters = if custom {
        obj.get("format")
    } else {
        obj.get("parameters")
    };
    Ok(Tool {
        name: require_str(obj, "name", where_)?.to_string(),
        description: optional_str(obj, "description", where_)?.map(str::to_string),
        parameters: parameters.cloned().unwrap_or(Value::Null),
        kind: if custom {
            ToolKind::Custom
        } else {
            ToolKind::Function
        },
        strict: if custom {
            None
        } else {
            obj.get("strict").and_then(Value::as_bool)
        },
        namespace: namespace.map(str::to_string),
    })
}

/// A `tool_choice` the hub models, or `None` (the caller keeps the value in passthrough).
fn decode_tool_choice(value: &Value) -> Option<ToolChoice> {
    match value {
        Value::String(s) => match s.as_str() {
            "auto" => Some(ToolChoice::Auto),
            "none" => Some(ToolChoice::None),
            "required" => Some(ToolChoice::Required),
            _ => None,
        },
        Value::Object(obj) => match str_at(obj, "type") {
            Some("function" | "custom") if obj.len() == 2 => {
                str_at(obj, "name").map(|n| ToolChoice::Tool(n.to_string()))
            }
            Some("function") => obj_at(obj, "function")
                .and_then(|f| str_at(f, "name"))
                .map(|n| ToolChoice::Tool(n.to_string())),
            _ => None,
        },
        _ => None,
    }
}

fn decode_format(format: &Value) -> Option<ResponseFormat> {
    let obj = format.as_object()?;
    match str_at(obj, "type")? {
        "json_object" if obj.len() == 1 => Some(ResponseFormat::JsonObject),
        "json_schema" => {
            let known = ["type", "name", "schema", "strict"];
            if obj.keys().any(|k| !known.contains(&k.as_str())) {
                return None;
            }
            Some(ResponseFormat::JsonSchema {
                name: str_at(obj, "name")?.to_string(),
                schema: obj.get("schema").cloned().unwrap_or(Value::Null),
                strict: obj.get("strict").and_then(Value::as_bool),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::part::{Opaque, Thinking, ToolCall};

    fn roundtrip(request: &Request) -> Request {
        let body = encode(
            request,
            &EncodeOptions {
                model: "m",
                stream: true,
            },
        )
        .unwrap();
        let bytes = serde_json::to_vec(&body).unwrap();
        decode(&bytes).unwrap().request
    }

    #[test]
    fn an_assistant_turn_splits_into_items_and_merges_back() {
        let turn = Message {
            role: Role::Assistant,
            content: vec![
                Part::Thinking(Thinking {
                    text: "hm".into(),
                    state: Some(Opaque::new(Dialect::Responses, "enc")),
                    redacted: false,
                    id: Some("rs_1".into()),
                }),
                Part::text("calling"),
                Part::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "ls".into(),
                    arguments: "{}".into(),
                    kind: ToolKind::Function,
                    namespace: Some("mcp__fs__".into()),
                    state: None,
                }),
            ],
        };
        let request = Request {
            messages: vec![Message::text(Role::User, "hi"), turn],
            ..Request::default()
        };
        let body = encode(
            &request,
            &EncodeOptions {
                model: "m",
                stream: false,
            },
        )
        .unwrap();
        let types: Vec<_> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(types, ["message", "reasoning", "message", "function_call"]);
        assert_eq!(roundtrip(&request), request);
    }

    #[test]
    fn foreign_thinking_is_dropped_on_encode() {
        let request = Request {
            messages: vec![Message {
                role: Role::Assistant,
                content: vec![
                    Part::Thinking(Thinking {
                        text: "t".into(),
                        state: Some(Opaque::new(Dialect::Messages, "sig")),
                        redacted: false,
                        id: None,
                    }),
                    Part::text("a"),
                ],
            }],
            ..Request::default()
        };
        let decoded = roundtrip(&request);
        assert_eq!(decoded.messages[0].content, vec![Part::text("a")]);
    }

    #[test]
    fn namespace_members_group_at_the_first_and_flatten_back() {
        let tool = |name: &str, ns: Option<&str>| Tool {
            name: name.into(),
            description: None,
            parameters: json!({"type": "object"}),
            kind: ToolKind::Function,
            strict: None,
            namespace: ns.map(str::to_string),
        };
        let request = Request {
            tools: vec![
                tool("a", Some("mcp__x__")),
                tool("b", Some("mcp__x__")),
                tool("c", None),
            ],
            ..Request::default()
        };
        let body = encode(
            &request,
            &EncodeOptions {
                model: "m",
                stream: false,
            },
        )
        .unwrap();
        assert_eq!(body["tools"].as_array().unwrap().len(), 2);
        assert_eq!(body["tools"][0]["type"], "namespace");
        assert_eq!(body["tools"][0]["tools"][1]["name"], "b");
        assert_eq!(roundtrip(&request), request);
    }

    #[test]
    fn wrong_shapes_say_where() {
        let err = decode(br#"{"input":[{"type":"function_call","name":"x"}]}"#).unwrap_err();
        assert!(format!("{err}").contains("input[0]"), "{err}");
        let err =
            decode(br#"{"input":[{"type":"message","role":"user","content":7}]}"#).unwrap_err();
        assert!(format!("{err}").contains("content"), "{err}");
        assert!(decode(b"null").is_err());
        assert!(decode(b"[1]").is_err());
    }
}

//! Requests: a canonical request as a client's chat body (`encode`, client side) and a
//! client's chat body as a canonical request (`decode`, server side).

use super::{custom_arguments, reasoning_text, wire_tool_name};
use crate::codec::{parse_object, DecodeError, DecodedRequest, EncodeError, EncodeOptions};
use crate::json::{arr_at, as_obj, obj_at, require_obj, require_str, str_at, wrong_type, Object};
use crate::part::{Image, Part, Thinking, ToolCall, ToolKind, ToolResult};
use crate::request::{
    Message, Passthrough, Reasoning, Request, ResponseFormat, Role, Tool, ToolChoice,
};
use crate::Dialect;
use serde_json::{json, Map, Value};

/// Body keys the encoder always decides itself; passthrough never overrides them.
const OWN_KEYS: &[&str] = &["model", "messages", "stream", "stream_options"];

/// The chat body for `request`.
pub(super) fn encode(
    request: &Request,
    options: &EncodeOptions,
) -> Result<Map<String, Value>, EncodeError> {
    let mut body = Map::new();
    body.insert("model".into(), options.model.into());
    body.insert("messages".into(), Value::Array(encode_messages(request)));
    if !request.tools.is_empty() {
        let tools = request.tools.iter().map(encode_tool).collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &request.tool_choice {
        body.insert("tool_choice".into(), encode_tool_choice(choice, request));
    }
    if let Some(parallel) = request.parallel_tool_calls {
        body.insert("parallel_tool_calls".into(), parallel.into());
    }
    if let Some(max) = request.max_tokens {
        body.insert("max_completion_tokens".into(), max.into());
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(p) = request.top_p {
        body.insert("top_p".into(), p.into());
    }
    if !request.stop.is_empty() {
        body.insert("stop".into(), request.stop.clone().into());
    }
    if let Some(effort) = request.reasoning.as_ref().and_then(|r| r.effort.as_ref()) {
        body.insert("reasoning_effort".into(), effort.as_str().into());
    }
    if let Some(format) = &request.response_format {
        body.insert("response_format".into(), encode_response_format(format));
    }
    if options.stream {
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    if let Some(fields) = request.passthrough.fields_for(Dialect::Chat) {
        for (key, value) in fields {
            if !OWN_KEYS.contains(&key.as_str()) && !body.contains_key(key) {
                body.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(body)
}

/// The `messages` array. Tool results become `tool` messages; images found in tool
/// results follow the run of tool messages in one `user` message.
fn encode_messages(request: &Request) -> Vec<Value> {
    let mut out = Vec::new();
    let mut pending_images: Vec<Value> = Vec::new();
    for message in &request.messages {
        let results: Vec<&ToolResult> = message
            .content
            .iter()
            .filter_map(|p| match p {
                Part::ToolResult(r) => Some(r),
                _ => None,
            })
            .collect();
        // A message of tool results only continues the run of tool messages.
        let only_results = !results.is_empty() && results.len() == message.content.len();
        if !only_results {
            flush_images(&mut out, &mut pending_images);
        }
        match message.role {
            Role::System | Role::Developer => {
                let role = if message.role == Role::System {
                    "system"
                } else {
                    "developer"
                };
                out.push(json!({ "role": role, "content": text_content(&message.content) }));
            }
            Role::Assistant => out.push(encode_assistant(message)),
            Role::User | Role::Tool => {
                for result in &results {
                    out.push(encode_tool_result(result, &mut pending_images));
                }
                let rest: Vec<&Part> = message
                    .content
                    .iter()
                    .filter(|p| matches!(p, Part::Text { .. } | Part::Image(_)))
                    .collect();
                if !rest.is_empty() || results.is_empty() {
                    flush_images(&mut out, &mut pending_images);
                    out.push(json!({ "role": "user", "content": user_content(&rest) }));
                }
            }
        }
        if message.role == Role::Assistant {
            // Tool results inside an assistant message make no sense on the chat wire,
            // but losing them silently would be worse: they follow as tool messages.
            for result in &results {
                out.push(encode_tool_result(result, &mut pending_images));
            }
        }
    }
    flush_images(&mut out, &mut pending_images);
    out
}

fn flush_images(out: &mut Vec<Value>, images: &mut Vec<Value>) {
    if !images.is_empty() {
        out.push(json!({ "role": "user", "content": std::mem::take(images) }));
    }
}

/// Content of text parts only (system, developer): a string for one part, else an array.
fn text_content(parts: &[Part]) -> Value {
    let texts: Vec<&str> = parts.iter().filter_map(Part::as_text).collect();
    match texts.as_slice() {
        [one] => Value::String((*one).to_string()),
        [] => Value::String(String::new()),
        many => Value::Array(many.iter().map(|t| text_part(t)).collect()),
    }
}

fn text_part(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

fn image_part(image: &Image) -> Value {
    json!({ "type": "image_url", "image_url": { "url": image.to_url() } })
}

/// User content: a string for one text part, else an array of text and image parts.
fn user_content(parts: &[&Part]) -> Value {
    if let [Part::Text { text, .. }] = parts {
        return Value::String(text.clone());
    }
    Value::Array(
        parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text, .. } => Some(text_part(text)),
                Part::Image(image) => Some(image_part(image)),
                _ => None,
            })
            .collect(),
    )
}

fn encode_assistant(message: &Message) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), "assistant".into());
    let texts: Vec<&str> = message.content.iter().filter_map(Part::as_text).collect();
    let calls: Vec<Value> = message
        .content
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall(c) => Some(encode_tool_call(c)),
            _ => None,
        })
        .collect();
    let content = match texts.as_slice() {
        [one] => Value::String((*one).to_string()),
        [] if !calls.is_empty() => Value::Null,
        [] => Value::String(String::new()),
        many => Value::Array(many.iter().map(|t| text_part(t)).collect()),
    };
    out.insert("content".into(), content);
    let reasoning: String = message
        .content
        .iter()
        .filter_map(|p| match p {
            Part::Thinking(t) if !t.redacted => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    if !reasoning.is_empty() {
        out.insert("reasoning_content".into(), reasoning.into());
    }
    if !calls.is_empty() {
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(out)
}

/// A tool call in chat's shape (shared with replies).
pub(super) fn encode_tool_call(call: &ToolCall) -> Value {
    let arguments = match call.kind {
        ToolKind::Function => call.arguments.clone(),
        ToolKind::Custom => custom_arguments(&call.arguments),
    };
    json!({
        "id": call.id,
        "type": "function",
        "function": {
            "name": wire_tool_name(&call.name, call.namespace.as_deref()),
            "arguments": arguments,
        }
    })
}

fn encode_tool_result(result: &ToolResult, images: &mut Vec<Value>) -> Value {
    let texts: Vec<&str> = result.content.iter().filter_map(Part::as_text).collect();
    images.extend(result.content.iter().filter_map(|p| match p {
        Part::Image(image) => Some(image_part(image)),
        _ => None,
    }));
    let content = if result.is_error {
        Value::String(format!("Error: {}", texts.concat()))
    } else {
        match texts.as_slice() {
            [one] => Value::String((*one).to_string()),
            [] => Value::String(String::new()),
            many => Value::Array(many.iter().map(|t| text_part(t)).collect()),
        }
    };
    json!({ "role": "tool", "tool_call_id": result.call_id, "content": content })
}

fn encode_tool(tool: &Tool) -> Value {
    let mut function = Map::new();
    function.insert(
        "name".into(),
        wire_tool_name(&tool.name, tool.namespace.as_deref()).into(),
    );
    if let Some(d) = &tool.description {
        function.insert("description".into(), d.as_str().into());
    }
    match tool.kind {
        ToolKind::Function => {
            if !tool.parameters.is_null() {
                function.insert("parameters".into(), tool.parameters.clone());
            }
        }
        ToolKind::Custom => {
            function.insert("parameters".into(), custom_parameters(&tool.parameters));
        }
    }
    if let Some(strict) = tool.strict {
        function.insert("strict".into(), strict.into());
    }
    json!({ "type": "function", "function": function })
}

/// The schema of a custom tool declared as a function: one string argument `input`,
/// described by the tool's grammar when it has one.
fn custom_parameters(format: &Value) -> Value {
    let mut input = json!({ "type": "string" });
    let definition = format.get("definition").and_then(Value::as_str);
    let description = match definition {
        Some(def) => {
            let syntax = format.get("syntax").and_then(Value::as_str).unwrap_or("");
            format!("The raw input, following this {syntax} grammar:\n{def}")
        }
        None => "The raw, free-form input.".to_string(),
    };
    input["description"] = description.into();
    json!({
        "type": "object",
        "properties": { "input": input },
        "required": ["input"],
        "additionalProperties": false,
    })
}

fn encode_tool_choice(choice: &ToolChoice, request: &Request) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::Tool(name) => {
            let namespace = request
                .tools
                .iter()
                .find(|t| &t.name == name)
                .and_then(|t| t.namespace.as_deref());
            json!({ "type": "function", "function": { "name": wire_tool_name(name, namespace) } })
        }
    }
}

fn encode_response_format(format: &ResponseFormat) -> Value {
    match format {
        ResponseFormat::JsonObject => json!({ "type": "json_object" }),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => {
            let mut inner = Map::new();
            inner.insert("name".into(), name.as_str().into());
            inner.insert("schema".into(), schema.clone());
            if let Some(strict) = strict {
                inner.insert("strict".into(), (*strict).into());
            }
            json!({ "type": "json_schema", "json_schema": inner })
        }
    }
}

#[cfg(test)]
mod encode_tests {
    use super::*;
    use crate::request::Passthrough;

    fn opts() -> EncodeOptions<'static> {
        EncodeOptions {
            model: "m",
            stream: false,
        }
    }

    #[test]
    fn tool_result_images_follow_the_run_of_tool_messages() {
        let image = Image::Url {
            url: "https://x/y.png".into(),
        };
        let result = |id: &str, with_image: bool| Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(ToolResult {
                call_id: id.into(),
                name: None,
                content: if with_image {
                    vec![Part::text("see"), Part::Image(image.clone())]
                } else {
                    vec![Part::text("ok")]
                },
                is_error: !with_image,
                kind: ToolKind::Function,
            })],
        };
        let request = Request {
            messages: vec![
                Message::text(Role::User, "hi"),
                result("a", true),
                result("b", false),
                Message::text(Role::User, "next"),
            ],
            ..Request::default()
        };
        let body = encode(&request, &opts()).unwrap();
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "tool", "tool", "user", "user"]);
        assert_eq!(body["messages"][2]["content"], "Error: ok");
        assert_eq!(
            body["messages"][3]["content"][0]["image_url"]["url"],
            "https://x/y.png"
        );
    }

    #[test]
    fn custom_and_namespaced_tools_are_flattened_to_functions() {
        let request = Request {
            tools: vec![
                Tool {
                    name: "apply_patch".into(),
                    description: None,
                    parameters: json!({"type": "grammar", "syntax": "lark", "definition": "start: x"}),
                    kind: ToolKind::Custom,
                    strict: None,
                    namespace: None,
                },
                Tool {
                    name: "read".into(),
                    description: None,
                    parameters: json!({"type": "object"}),
                    kind: ToolKind::Function,
                    strict: None,
                    namespace: Some("mcp__fs__".into()),
                },
            ],
            tool_choice: Some(ToolChoice::Tool("read".into())),
            messages: vec![Message {
                role: Role::Assistant,
                content: vec![Part::ToolCall(ToolCall {
                    id: "c".into(),
                    name: "apply_patch".into(),
                    arguments: "*** Begin Patch\n".into(),
                    kind: ToolKind::Custom,
                    namespace: None,
                    state: None,
                })],
            }],
            ..Request::default()
        };
        let body = encode(&request, &opts()).unwrap();
        let patch = &body["tools"][0]["function"];
        assert_eq!(patch["parameters"]["required"][0], "input");
        assert!(patch["parameters"]["properties"]["input"]["description"]
            .as_str()
            .unwrap()
            .contains("start: x"));
        assert_eq!(body["tools"][1]["function"]["name"], "mcp__fs__read");
        assert_eq!(body["tool_choice"]["function"]["name"], "mcp__fs__read");
        let args = body["messages"][0]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(args).unwrap(),
            json!({"input": "*** Begin Patch\n"})
        );
        assert_eq!(body["messages"][0]["content"], Value::Null);
    }

    #[test]
    fn passthrough_never_overrides_what_the_encoder_decides() {
        let mut request = Request::user("hi").with_max_tokens(5);
        let mut fields = Map::new();
        fields.insert("seed".into(), 7.into());
        fields.insert("stream_options".into(), json!({"include_usage": false}));
        fields.insert("max_completion_tokens".into(), 99.into());
        request.passthrough = Passthrough {
            dialect: Some(Dialect::Chat),
            fields,
        };
        let body = encode(&request, &opts()).unwrap();
        assert_eq!(body["seed"], 7);
        assert_eq!(body["max_completion_tokens"], 5);
        assert!(!body.contains_key("stream_options"));
        request.passthrough.dialect = Some(Dialect::Messages);
        assert!(!encode(&request, &opts()).unwrap().contains_key("seed"));
    }
}

/// A client's chat body as a canonical request: the common plain body read as typed
/// fields ([`super::plain_request`]), any other by [`decode_lenient`].
pub(super) fn decode(body: &[u8]) -> Result<DecodedRequest, DecodeError> {
    match super::plain_request::decode(body) {
        Some(decoded) => Ok(decoded),
        None => decode_lenient(body),
    }
}

/// A client's chat body as a canonical request, read from a map of values: any shape
/// the dialect allows, and the error that names what is wrong with one it does not.
pub(super) fn decode_lenient(body: &[u8]) -> Result<DecodedRequest, DecodeError> {
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
mod decode_tests {
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

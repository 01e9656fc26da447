//! Requests, client side: a canonical request as a chat body.

use super::{custom_arguments, wire_tool_name};
use crate::codec::{EncodeError, EncodeOptions};
use crate::part::{Image, Part, ToolCall, ToolKind, ToolResult};
use crate::request::{Message, Request, ResponseFormat, Role, Tool, ToolChoice};
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
mod tests {
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

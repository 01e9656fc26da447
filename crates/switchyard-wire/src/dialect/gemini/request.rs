//! Requests: canonical [`Request`] to a `generateContent` body (client side) and back
//! (server side).

use super::parts::{
    call_args, content_parts, expect_obj, function_call_part, function_response_part, image_part,
    read_part, synthetic_call_id, text_part, WirePart,
};
use crate::codec::{json_type, parse_object, DecodeError, DecodedRequest, EncodeError};
use crate::json::{str_at, wrong_type, Object};
use crate::part::{Opaque, Part, Thinking, ToolCall, ToolKind};
use crate::request::{
    Message, Passthrough, Reasoning, Request, ResponseFormat, Role, Tool, ToolChoice,
};
use crate::Dialect;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The name given to a response schema decoded from Gemini, which has no schema names.
pub const RESPONSE_SCHEMA_NAME: &str = "response";

const JSON_MIME: &str = "application/json";

// ---------------------------------------------------------------------------------------
// Encoding (client side)
// ---------------------------------------------------------------------------------------

/// The `generateContent` body for `request` to `model`. The model and the streaming
/// choice are in the URL, so neither appears here.
pub(super) fn encode(request: &Request, model: &str) -> Result<Map<String, Value>, EncodeError> {
    let passthrough = request.passthrough.fields_for(Dialect::Gemini);
    let mut body = Map::new();

    let mut system = Vec::new();
    let mut contents: Vec<Value> = Vec::new();
    // Role of the last content written, so consecutive tool messages share one content.
    let mut last_was_tool = false;
    let names = call_names(request);
    for message in &request.messages {
        match message.role {
            Role::System | Role::Developer => {
                for part in &message.content {
                    match part {
                        Part::Text { text, .. } => system.push(text_part(text, false, None)),
                        Part::Image(image) => system.push(image_part(image)),
                        _ => {}
                    }
                }
                continue;
            }
            Role::User | Role::Tool | Role::Assistant => {}
        }
        let parts = encode_parts(message, &names)?;
        if parts.is_empty() {
            continue;
        }
        let is_tool = message.role == Role::Tool;
        if is_tool && last_was_tool {
            if let Some(Value::Array(prev)) = contents
                .last_mut()
                .and_then(|c| c.as_object_mut())
                .and_then(|c| c.get_mut("parts"))
            {
                prev.extend(parts);
                continue;
            }
        }
        let role = if message.role == Role::Assistant {
            "model"
        } else {
            "user"
        };
        contents.push(json!({ "role": role, "parts": parts }));
        last_was_tool = is_tool;
    }
    body.insert("contents".into(), Value::Array(contents));
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({ "parts": system }));
    }

    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request.tools.iter().map(encode_tool).collect();
        body.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
    }
    if let Some(choice) = &request.tool_choice {
        let config = match choice {
            ToolChoice::Auto => json!({ "mode": "AUTO" }),
            ToolChoice::None => json!({ "mode": "NONE" }),
            ToolChoice::Required => json!({ "mode": "ANY" }),
            ToolChoice::Tool(name) => json!({ "mode": "ANY", "allowedFunctionNames": [name] }),
        };
        body.insert(
            "toolConfig".into(),
            json!({ "functionCallingConfig": config }),
        );
    }

    let generation = generation_config(request, model, passthrough);
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }

    if let Some(fields) = passthrough {
        merge_passthrough(&mut body, fields);
    }
    Ok(body)
}

/// Tool-call id → tool name (flattened, as the call was written) over the whole
/// request, for results that carry no name.
fn call_names(request: &Request) -> HashMap<&str, String> {
    request
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|p| match p {
            Part::ToolCall(c) => Some((c.id.as_str(), c.flat_name())),
            _ => None,
        })
        .collect()
}

fn encode_parts(
    message: &Message,
    names: &HashMap<&str, String>,
) -> Result<Vec<Value>, EncodeError> {
    let mut parts = Vec::with_capacity(message.content.len());
    for part in &message.content {
        match part {
            Part::Text { text, state } => parts.push(text_part(
                text,
                false,
                Opaque::for_dialect(state, Dialect::Gemini),
            )),
            Part::Image(image) => parts.push(image_part(image)),
            Part::ToolCall(call) => {
                let args = call_args(call).map_err(EncodeError)?;
                parts.push(function_call_part(call, args));
            }
            Part::ToolResult(result) => {
                let name = result
                    .name
                    .as_deref()
                    .or_else(|| names.get(result.call_id.as_str()).map(String::as_str))
                    .ok_or_else(|| {
                        EncodeError(format!(
                            "tool result for call `{}` has no tool name and no earlier tool \
                             call has that id; Gemini's functionResponse needs the name",
                            result.call_id
                        ))
                    })?;
                parts.push(function_response_part(result, name));
            }
            // Only Gemini's own signed thoughts mean anything to Gemini; other dialects'
            // reasoning (and unsigned summaries) are dropped.
            Part::Thinking(t) => {
                if let Some(sig) = Opaque::for_dialect(&t.state, Dialect::Gemini) {
                    parts.push(text_part(&t.text, true, Some(sig)));
                }
            }
        }
    }
    Ok(parts)
}

fn encode_tool(tool: &Tool) -> Value {
    let mut decl = Map::new();
    decl.insert("name".into(), Value::String(tool.flat_name()));
    if let Some(d) = &tool.description {
        decl.insert("description".into(), Value::String(d.clone()));
    }
    let schema = match tool.kind {
        ToolKind::Custom => json!({
            "type": "object",
            "properties": { "input": { "type": "string" } },
            "required": ["input"]
        }),
        ToolKind::Function => tool.parameters.clone(),
    };
    if !schema.is_null() {
        decl.insert("parametersJsonSchema".into(), schema);
    }
    Value::Object(decl)
}

fn generation_config(
    request: &Request,
    model: &str,
    passthrough: Option<&Object>,
) -> Map<String, Value> {
    let mut config = Map::new();
    if let Some(n) = request.max_tokens {
        config.insert("maxOutputTokens".into(), json!(n));
    }
    if let Some(t) = request.temperature {
        config.insert("temperature".into(), json!(t));
    }
    if let Some(p) = request.top_p {
        config.insert("topP".into(), json!(p));
    }
    if !request.stop.is_empty() {
        config.insert("stopSequences".into(), json!(request.stop));
    }
    match &request.response_format {
        Some(ResponseFormat::JsonObject) => {
            config.insert("responseMimeType".into(), json!(JSON_MIME));
        }
        Some(ResponseFormat::JsonSchema { schema, .. }) => {
            config.insert("responseMimeType".into(), json!(JSON_MIME));
            config.insert("responseJsonSchema".into(), schema.clone());
        }
        None => {}
    }
    if let Some(reasoning) = &request.reasoning {
        let mut thinking = Map::new();
        if let Some(budget) = reasoning.budget_tokens {
            thinking.insert("thinkingBudget".into(), json!(budget));
        } else if let Some(effort) = &reasoning.effort {
            if takes_budgets_only(model) {
                thinking.insert("thinkingBudget".into(), json!(effort_budget(effort)));
            } else {
                match effort.to_ascii_lowercase().as_str() {
                    "none" => {
                        thinking.insert("thinkingBudget".into(), json!(0));
                    }
                    "xhigh" | "max" => {
                        thinking.insert("thinkingLevel".into(), json!("high"));
                    }
                    level => {
                        thinking.insert("thinkingLevel".into(), json!(level));
                    }
                }
            }
        }
        // A decoded request that did not ask for thoughts keeps `includeThoughts` in its
        // passthrough; the merge below puts it back.
        let kept = passthrough
            .and_then(|p| p.get("generationConfig"))
            .and_then(|g| g.get("thinkingConfig"))
            .and_then(|t| t.get("includeThoughts"))
            .is_some();
        if !kept {
            thinking.insert("includeThoughts".into(), Value::Bool(true));
        }
        config.insert("thinkingConfig".into(), Value::Object(thinking));
    }
    config
}

/// Gemini 2.x models take a thinking budget and refuse `thinkingLevel` (a Gemini 3
/// field); a model id names its generation (`gemini-2.5-flash`, `gemini-2.0-…`, with or
/// without a `models/` or publisher path before it).
fn takes_budgets_only(model: &str) -> bool {
    model
        .rsplit('/')
        .next()
        .is_some_and(|id| id.starts_with("gemini-2"))
}

/// An effort as a Gemini 2.x thinking budget: the budgets Google's own OpenAI-compatible
/// endpoint maps `low`/`medium`/`high` to (1,024 / 8,192 / 24,576), `none` off, `minimal`
/// the smallest budget every 2.5 model takes (512), anything else the model's own choice
/// (`-1`, dynamic).
fn effort_budget(effort: &str) -> i64 {
    match effort.to_ascii_lowercase().as_str() {
        "none" => 0,
        "minimal" => 512,
        "low" => 1024,
        "medium" => 8192,
        "high" | "xhigh" | "max" => 24576,
        _ => -1,
    }
}

/// Puts passthrough fields into `body`: missing keys are added, objects are merged key
/// by key (what the hub encoded wins), and passthrough `tools` entries (Google Search,
/// code execution…) follow the function declarations.
fn merge_passthrough(body: &mut Map<String, Value>, fields: &Object) {
    for (key, value) in fields {
        match (body.get_mut(key), value) {
            (Some(Value::Object(target)), Value::Object(extra)) => merge_objects(target, extra),
            (Some(Value::Array(target)), Value::Array(extra)) if key == "tools" => {
                target.extend(extra.iter().cloned())
            }
            (Some(_), _) => {}
            (None, _) => {
                body.insert(key.clone(), value.clone());
            }
        }
    }
}

fn merge_objects(target: &mut Map<String, Value>, extra: &Object) {
    for (key, value) in extra {
        match (target.get_mut(key), value) {
            (Some(Value::Object(t)), Value::Object(e)) => merge_objects(t, e),
            (Some(_), _) => {}
            (None, _) => {
                target.insert(key.clone(), value.clone());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Decoding (server side)
// ---------------------------------------------------------------------------------------

/// A client's `generateContent` body. The model and whether to stream are in the URL
/// (`…/models/{model}:streamGenerateContent?alt=sse`), so `model` is `None` and `stream`
/// is `false`: the gateway's route sets them.
pub(super) fn decode(body: &[u8]) -> Result<DecodedRequest, DecodeError> {
    let obj = super::field_names::json_names(parse_object(body, "gemini request body")?);
    let mut request = Request::default();
    let mut extra = Map::new();

    for (key, value) in &obj {
        match key.as_str() {
            "contents" | "systemInstruction" | "tools" | "toolConfig" | "generationConfig" => {}
            _ => {
                extra.insert(key.clone(), value.clone());
            }
        }
    }

    if let Some(system) = obj.get("systemInstruction") {
        decode_system(system, &mut request, &mut extra)?;
    }
    match obj.get("contents") {
        Some(Value::Array(contents)) => decode_contents(contents, &mut request)?,
        Some(other) => {
            return Err(wrong_type(
                "gemini request body",
                "contents",
                "an array",
                other,
            ))
        }
        None => {
            return Err(DecodeError::Malformed(
                "gemini request body has no `contents` field".into(),
            ))
        }
    }
    if let Some(tools) = obj.get("tools") {
        decode_tools(tools, &mut request, &mut extra)?;
    }
    if let Some(config) = obj.get("toolConfig") {
        decode_tool_config(config, &mut request, &mut extra)?;
    }
    if let Some(config) = obj.get("generationConfig") {
        decode_generation_config(config, &mut request, &mut extra)?;
    }
    if !extra.is_empty() {
        request.passthrough = Passthrough {
            dialect: Some(Dialect::Gemini),
            fields: extra,
        };
    }
    Ok(DecodedRequest {
        model: None,
        stream: false,
        request,
    })
}

fn decode_system(
    system: &Value,
    request: &mut Request,
    extra: &mut Map<String, Value>,
) -> Result<(), DecodeError> {
    let where_ = "gemini request systemInstruction";
    let content = match system {
        // Lenient: a bare string is what some hand-written clients send.
        Value::String(s) => {
            request
                .messages
                .push(Message::text(Role::System, s.clone()));
            return Ok(());
        }
        other => expect_obj(other, where_)?,
    };
    let mut parts = Vec::new();
    for (i, value) in content_parts(content, where_)?.iter().enumerate() {
        match read_part(value, &format!("{where_}.parts[{i}]"))? {
            WirePart::Text { text, .. } => parts.push(Part::text(text)),
            WirePart::Image(image) => parts.push(Part::Image(image)),
            _ => {}
        }
    }
    let rest: Map<String, Value> = content
        .iter()
        .filter(|(k, _)| k.as_str() != "parts")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !rest.is_empty() {
        extra.insert("systemInstruction".into(), Value::Object(rest));
    }
    if !parts.is_empty() {
        request.messages.push(Message {
            role: Role::System,
            content: parts,
        });
    }
    Ok(())
}

/// Contents to messages. Model function calls get synthesised ids (turn = the content's
/// index) unless the wire has ids; each `functionResponse` takes the id of the earliest
/// unanswered call of the same name (else a synthesised one of its own).
fn decode_contents(contents: &[Value], request: &mut Request) -> Result<(), DecodeError> {
    // Unanswered calls, oldest first: (name, id).
    let mut pending: Vec<(String, String)> = Vec::new();
    for (turn, value) in contents.iter().enumerate() {
        let where_ = format!("gemini request contents[{turn}]");
        let content = expect_obj(value, &where_)?;
        let role = match str_at(content, "role") {
            None | Some("user") => Role::User,
            Some("model") => Role::Assistant,
            Some("function") => Role::Tool,
            Some(other) => {
                return Err(DecodeError::Malformed(format!(
                    "{where_}: role `{other}` is not one of user, model"
                )))
            }
        };
        let mut parts = Vec::new();
        let mut calls = 0;
        for (i, value) in content_parts(content, &where_)?.iter().enumerate() {
            let where_ = format!("{where_}.parts[{i}]");
            match read_part(value, &where_)? {
                WirePart::Text {
                    text,
                    thought,
                    signature,
                } => {
                    let state = signature.map(|s| Opaque::new(Dialect::Gemini, s));
                    parts.push(if thought {
                        Part::Thinking(Thinking {
                            text,
                            state,
                            ..Default::default()
                        })
                    } else {
                        Part::Text { text, state }
                    });
                }
                WirePart::Call {
                    name,
                    args,
                    id,
                    signature,
                } => {
                    let id = id.unwrap_or_else(|| synthetic_call_id(turn, calls, &name, &args));
                    calls += 1;
                    pending.push((name.clone(), id.clone()));
                    parts.push(Part::ToolCall(ToolCall {
                        id,
                        name,
                        arguments: args,
                        kind: ToolKind::Function,
                        namespace: None,
                        state: signature.map(|s| Opaque::new(Dialect::Gemini, s)),
                    }));
                }
                WirePart::Response(mut result) => {
                    let name = result.name.clone().unwrap_or_default();
                    if result.call_id.is_empty() {
                        result.call_id = match pending.iter().position(|(n, _)| *n == name) {
                            Some(at) => pending.remove(at).1,
                            None => synthetic_call_id(turn, i, &name, "response"),
                        };
                    } else if let Some(at) =
                        pending.iter().position(|(_, id)| *id == result.call_id)
                    {
                        pending.remove(at);
                    }
                    parts.push(Part::ToolResult(result));
                }
                WirePart::Image(image) => parts.push(Part::Image(image)),
                WirePart::Other => {}
            }
        }
        let role = if role == Role::User
            && !parts.is_empty()
            && parts.iter().all(|p| matches!(p, Part::ToolResult(_)))
        {
            Role::Tool
        } else {
            role
        };
        request.messages.push(Message {
            role,
            content: parts,
        });
    }
    Ok(())
}

fn decode_tools(
    tools: &Value,
    request: &mut Request,
    extra: &mut Map<String, Value>,
) -> Result<(), DecodeError> {
    let tools = match tools {
        Value::Array(a) => a,
        other => {
            return Err(wrong_type(
                "gemini request body",
                "tools",
                "an array",
                other,
            ))
        }
    };
    let mut other_tools = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let where_ = format!("gemini request tools[{i}]");
        let tool = expect_obj(tool, &where_)?;
        let Some(decls) = tool.get("functionDeclarations") else {
            other_tools.push(Value::Object(tool.clone()));
            continue;
        };
        let decls = decls
            .as_array()
            .ok_or_else(|| wrong_type(&where_, "functionDeclarations", "an array", decls))?;
        for (j, decl) in decls.iter().enumerate() {
            let where_ = format!("{where_}.functionDeclarations[{j}]");
            let decl = expect_obj(decl, &where_)?;
            let name = super::parts::expect_str(decl, "name", &where_)?;
            let parameters = match (decl.get("parametersJsonSchema"), decl.get("parameters")) {
                (Some(schema), _) => schema.clone(),
                (None, Some(schema)) => openapi_to_json_schema(schema),
                (None, None) => Value::Null,
            };
            request.tools.push(Tool {
                name: name.to_string(),
                description: str_at(decl, "description").map(str::to_string),
                parameters,
                kind: ToolKind::Function,
                strict: None,
                namespace: None,
            });
        }
    }
    if !other_tools.is_empty() {
        extra.insert("tools".into(), Value::Array(other_tools));
    }
    Ok(())
}

/// Gemini's OpenAPI-subset `parameters`/`responseSchema` as JSON schema: the type
/// names (`OBJECT`, `STRING`…) are lower-cased; everything else is kept.
fn openapi_to_json_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("type", Value::String(t)) => Value::String(t.to_ascii_lowercase()),
                        _ => openapi_to_json_schema(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(openapi_to_json_schema).collect()),
        other => other.clone(),
    }
}

fn decode_tool_config(
    config: &Value,
    request: &mut Request,
    extra: &mut Map<String, Value>,
) -> Result<(), DecodeError> {
    let where_ = "gemini request toolConfig";
    let mut rest = expect_obj(config, where_)?.clone();
    if let Some(Value::Object(mut calling)) = rest.remove("functionCallingConfig") {
        let names: Option<Vec<String>> = calling
            .get("allowedFunctionNames")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            });
        let mode = str_at(&calling, "mode").map(str::to_ascii_uppercase);
        let choice = match (mode.as_deref(), names.as_deref()) {
            (Some("AUTO"), None) => Some(ToolChoice::Auto),
            (Some("NONE"), None) => Some(ToolChoice::None),
            (Some("ANY"), None) => Some(ToolChoice::Required),
            (Some("ANY"), Some([one])) => Some(ToolChoice::Tool(one.clone())),
            // Several allowed names: required, the names kept in passthrough.
            (Some("ANY"), Some(_)) => Some(ToolChoice::Required),
            // VALIDATED, unknown modes, names with AUTO: all kept in passthrough.
            _ => None,
        };
        if choice.is_some() {
            calling.remove("mode");
            if choice != Some(ToolChoice::Required) {
                calling.remove("allowedFunctionNames");
            }
        }
        request.tool_choice = choice;
        if !calling.is_empty() {
            rest.insert("functionCallingConfig".into(), Value::Object(calling));
        }
    } else if let Some(other) = config.get("functionCallingConfig") {
        rest.insert("functionCallingConfig".into(), other.clone());
    }
    if !rest.is_empty() {
        extra.insert("toolConfig".into(), Value::Object(rest));
    }
    Ok(())
}

fn decode_generation_config(
    config: &Value,
    request: &mut Request,
    extra: &mut Map<String, Value>,
) -> Result<(), DecodeError> {
    let where_ = "gemini request generationConfig";
    let mut rest = expect_obj(config, where_)?.clone();
    if let Some(n) = rest.get("maxOutputTokens").and_then(Value::as_u64) {
        request.max_tokens = Some(n);
        rest.remove("maxOutputTokens");
    }
    if let Some(t) = rest.get("temperature").and_then(Value::as_f64) {
        request.temperature = Some(t);
        rest.remove("temperature");
    }
    if let Some(p) = rest.get("topP").and_then(Value::as_f64) {
        request.top_p = Some(p);
        rest.remove("topP");
    }
    if let Some(Value::Array(stops)) = rest.get("stopSequences") {
        if stops.iter().all(Value::is_string) {
            request.stop = stops
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            rest.remove("stopSequences");
        }
    }
    if str_at(&rest, "responseMimeType") == Some(JSON_MIME) {
        rest.remove("responseMimeType");
        let schema = match rest.remove("responseJsonSchema") {
            Some(s) => Some(s),
            None => rest
                .remove("responseSchema")
                .map(|s| openapi_to_json_schema(&s)),
        };
        request.response_format = Some(match schema {
            Some(schema) => ResponseFormat::JsonSchema {
                name: RESPONSE_SCHEMA_NAME.to_string(),
                schema,
                strict: None,
            },
            None => ResponseFormat::JsonObject,
        });
    }
    match rest.remove("thinkingConfig") {
        Some(Value::Object(mut thinking)) => {
            let mut reasoning = Reasoning::default();
            if let Some(b) = thinking.get("thinkingBudget").and_then(Value::as_u64) {
                reasoning.budget_tokens = Some(b);
                thinking.remove("thinkingBudget");
            }
            if let Some(level) = str_at(&thinking, "thinkingLevel") {
                reasoning.effort = Some(level.to_ascii_lowercase());
                thinking.remove("thinkingLevel");
            }
            // The encoder asks for thoughts by default; keep a request's refusal of them.
            match thinking.get("includeThoughts") {
                Some(Value::Bool(true)) => {
                    thinking.remove("includeThoughts");
                }
                Some(_) => {}
                None => {
                    thinking.insert("includeThoughts".into(), Value::Bool(false));
                }
            }
            request.reasoning = Some(reasoning);
            if !thinking.is_empty() {
                rest.insert("thinkingConfig".into(), Value::Object(thinking));
            }
        }
        Some(other) => {
            return Err(DecodeError::Malformed(format!(
                "{where_}: `thinkingConfig` is a JSON {} where an object is required",
                json_type(&other)
            )))
        }
        None => {}
    }
    if !rest.is_empty() {
        extra.insert("generationConfig".into(), Value::Object(rest));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_take_the_ids_of_earlier_calls_by_name_in_order() {
        let body = br#"{"contents":[
            {"role":"user","parts":[{"text":"hi"}]},
            {"role":"model","parts":[{"functionCall":{"name":"a","args":{}}},
                                     {"functionCall":{"name":"b","args":{}}},
                                     {"functionCall":{"name":"a","args":{"n":2}}}]},
            {"role":"user","parts":[{"functionResponse":{"name":"a","response":{"content":"1"}}},
                                    {"functionResponse":{"name":"a","response":{"content":"2"}}},
                                    {"functionResponse":{"name":"b","response":{"content":"3"}}}]}]}"#;
        let req = decode(body).unwrap().request;
        let calls: Vec<&str> = req.messages[1]
            .content
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall(c) => Some(c.id.as_str()),
                _ => None,
            })
            .collect();
        let results: Vec<&str> = req.messages[2]
            .content
            .iter()
            .filter_map(|p| match p {
                Part::ToolResult(r) => Some(r.call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(req.messages[2].role, Role::Tool);
        assert_eq!(results, vec![calls[0], calls[2], calls[1]]);
        assert_eq!(calls[0], synthetic_call_id(1, 0, "a", "{}"));
    }

    #[test]
    fn a_result_without_a_name_borrows_it_from_its_call() {
        let mut req = Request::user("hi");
        req.messages.push(Message {
            role: Role::Assistant,
            content: vec![Part::ToolCall(ToolCall {
                id: "toolu_1".into(),
                name: "get".into(),
                arguments: String::new(),
                kind: ToolKind::Function,
                namespace: None,
                state: None,
            })],
        });
        req.messages.push(Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(crate::ToolResult {
                call_id: "toolu_1".into(),
                name: None,
                content: vec![Part::text("ok")],
                is_error: false,
                kind: ToolKind::Function,
            })],
        });
        let body = encode(&req, "gemini-3-pro-preview").unwrap();
        assert_eq!(
            body["contents"][2]["parts"][0]["functionResponse"],
            json!({"name": "get", "response": {"content": "ok"}})
        );
        assert_eq!(
            body["contents"][1]["parts"][0]["functionCall"]["args"],
            json!({})
        );
    }

    #[test]
    fn openapi_types_are_lower_cased() {
        let s = openapi_to_json_schema(
            &json!({"type":"OBJECT","properties":{"a":{"type":"STRING","enum":["X"]}}}),
        );
        assert_eq!(
            s,
            json!({"type":"object","properties":{"a":{"type":"string","enum":["X"]}}})
        );
    }
}

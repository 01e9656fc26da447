//! Gemini fields by either name. Google's JSON parsing accepts every field of its API by
//! its proto name (`snake_case`) beside its JSON name (`lowerCamelCase`), and the official
//! `google-genai` Python SDK sends some by the proto name (`parameters_json_schema`,
//! `thinking_config`). The decoders read the JSON names: [`json_names`] renames a request's
//! own fields to them first, at the places the API defines fields, and never inside what a
//! client wrote as data (a function call's `args`, a function's `response`, the
//! `parameters` and response schemas), whose keys are the client's.

use serde_json::{Map, Value};

/// A request body with its fields under their JSON names. A field given by both names
/// keeps the JSON name's value.
pub(super) fn json_names(mut request: Map<String, Value>) -> Map<String, Value> {
    rename(&mut request);
    for (key, value) in request.iter_mut() {
        match key.as_str() {
            "contents" => each(value, content),
            "systemInstruction" => content(value),
            "tools" => each(value, tool),
            "toolConfig" => nested(value, &["functionCallingConfig"]),
            "generationConfig" => nested(value, &["thinkingConfig", "speechConfig"]),
            "safetySettings" => each(value, |v| nested(v, &[])),
            _ => {}
        }
    }
    request
}

fn content(value: &mut Value) {
    if let Value::Object(map) = value {
        rename(map);
        if let Some(parts) = map.get_mut("parts") {
            each(parts, part);
        }
    }
}

fn part(value: &mut Value) {
    nested(
        value,
        &[
            "inlineData",
            "fileData",
            "functionCall",
            "functionResponse",
            "executableCode",
            "codeExecutionResult",
            "videoMetadata",
        ],
    );
}

fn tool(value: &mut Value) {
    if let Value::Object(map) = value {
        rename(map);
        if let Some(decls) = map.get_mut("functionDeclarations") {
            each(decls, |d| nested(d, &[]));
        }
    }
}

/// Renames `value`'s fields, and those of the objects under `children`.
fn nested(value: &mut Value, children: &[&str]) {
    if let Value::Object(map) = value {
        rename(map);
        for child in children {
            if let Some(v) = map.get_mut(*child) {
                nested(v, &[]);
            }
        }
    }
}

fn each(value: &mut Value, f: impl Fn(&mut Value)) {
    if let Value::Array(items) = value {
        items.iter_mut().for_each(f);
    }
}

/// Renames the `snake_case` keys of one object (not its data fields' contents) to their
/// `lowerCamelCase` names, in place and in order.
fn rename(map: &mut Map<String, Value>) {
    if !map.keys().any(|k| k.contains('_')) {
        return;
    }
    let fields = std::mem::take(map);
    let json_named: Vec<String> = fields
        .keys()
        .filter(|k| !k.contains('_'))
        .cloned()
        .collect();
    for (key, value) in fields {
        if !key.contains('_') {
            map.insert(key, value);
            continue;
        }
        let name = camel(&key);
        if !json_named.contains(&name) {
            map.insert(name, value);
        }
    }
}

/// `parameters_json_schema` → `parametersJsonSchema`.
fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = !out.is_empty();
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn snake_case_fields_take_their_json_names_and_data_keeps_its_keys() {
        let snake = json!({
            "system_instruction": {"parts": [{"text": "be brief"}]},
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"function_call": {"name": "f", "args": {"user_id": 1}}, "thought_signature": "c2ln"}]},
                {"role": "user", "parts": [{"function_response": {"name": "f", "response": {"result_text": "ok"}}}]}
            ],
            "tools": [{"function_declarations": [{"name": "f", "parameters_json_schema": {"type": "object", "properties": {"user_id": {"type": "integer"}}}}]}],
            "tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["f"]}},
            "generation_config": {"max_output_tokens": 5, "top_p": 0.5, "thinking_config": {"include_thoughts": true}, "response_json_schema": {"the_field": {}}}
        });
        let camel = json!({
            "systemInstruction": {"parts": [{"text": "be brief"}]},
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"user_id": 1}}, "thoughtSignature": "c2ln"}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"result_text": "ok"}}}]}
            ],
            "tools": [{"functionDeclarations": [{"name": "f", "parametersJsonSchema": {"type": "object", "properties": {"user_id": {"type": "integer"}}}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}},
            "generationConfig": {"maxOutputTokens": 5, "topP": 0.5, "thinkingConfig": {"includeThoughts": true}, "responseJsonSchema": {"the_field": {}}}
        });
        let Value::Object(snake) = snake else {
            unreachable!()
        };
        assert_eq!(Value::Object(json_names(snake)), camel);
    }

    #[test]
    fn a_field_named_both_ways_keeps_the_json_names_value() {
        let Value::Object(both) = json!({"topP": 0.9, "top_p": 0.1}) else {
            unreachable!()
        };
        let mut both = both;
        rename(&mut both);
        assert_eq!(Value::Object(both), json!({"topP": 0.9}));
    }
}

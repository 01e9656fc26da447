//! A Gemini request decodes the same whether its fields come by their JSON names
//! (`lowerCamelCase`) or their proto names (`snake_case`, as the `google-genai` Python SDK
//! sends some): system instruction, every kind of part, tools given either schema field,
//! the tool config and the generation config. The client's own data (call arguments,
//! function responses, schemas) keeps its keys whatever their case.

use serde_json::{json, Value};
use switchyard_wire::{codec, Dialect, Request};

fn decode(body: &Value) -> Request {
    codec(Dialect::Gemini)
        .decode_request(&serde_json::to_vec(body).unwrap())
        .unwrap_or_else(|e| panic!("{e}: {body}"))
        .request
}

/// The same request by both names, each kind of field present.
fn by_both_names() -> (Value, Value) {
    let camel = json!({
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [
            {"role": "user", "parts": [
                {"text": "what is in this image?"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
            ]},
            {"role": "model", "parts": [
                {"text": "checking", "thoughtSignature": "c2lnLXRleHQ="},
                {"functionCall": {"name": "lookup", "args": {"user_id": 7, "max_items": 2}}, "thoughtSignature": "c2lnLWNhbGw="}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "lookup", "response": {"result_text": "a cat", "item_count": 1}}}
            ]}
        ],
        "tools": [{"functionDeclarations": [
            {"name": "lookup", "description": "Look a user up",
             "parametersJsonSchema": {"type": "object", "properties": {"user_id": {"type": "integer"}, "max_items": {"type": "integer"}}, "required": ["user_id"]}},
            {"name": "legacy", "parameters": {"type": "OBJECT", "properties": {"the_name": {"type": "STRING"}}}}
        ]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}},
        "generationConfig": {
            "maxOutputTokens": 256, "temperature": 0.5, "topP": 0.9,
            "stopSequences": ["END"], "responseMimeType": "application/json",
            "responseJsonSchema": {"type": "object", "properties": {"the_answer": {"type": "string"}}},
            "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 1024}
        }
    });
    let snake = json!({
        "system_instruction": {"parts": [{"text": "be brief"}]},
        "contents": [
            {"role": "user", "parts": [
                {"text": "what is in this image?"},
                {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}
            ]},
            {"role": "model", "parts": [
                {"text": "checking", "thought_signature": "c2lnLXRleHQ="},
                {"function_call": {"name": "lookup", "args": {"user_id": 7, "max_items": 2}}, "thought_signature": "c2lnLWNhbGw="}
            ]},
            {"role": "user", "parts": [
                {"function_response": {"name": "lookup", "response": {"result_text": "a cat", "item_count": 1}}}
            ]}
        ],
        "tools": [{"function_declarations": [
            {"name": "lookup", "description": "Look a user up",
             "parameters_json_schema": {"type": "object", "properties": {"user_id": {"type": "integer"}, "max_items": {"type": "integer"}}, "required": ["user_id"]}},
            {"name": "legacy", "parameters": {"type": "OBJECT", "properties": {"the_name": {"type": "STRING"}}}}
        ]}],
        "tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["lookup"]}},
        "generation_config": {
            "max_output_tokens": 256, "temperature": 0.5, "top_p": 0.9,
            "stop_sequences": ["END"], "response_mime_type": "application/json",
            "response_json_schema": {"type": "object", "properties": {"the_answer": {"type": "string"}}},
            "thinking_config": {"include_thoughts": true, "thinking_budget": 1024}
        }
    });
    (camel, snake)
}

#[test]
fn a_request_decodes_the_same_by_either_name() {
    let (camel, snake) = by_both_names();
    let a = decode(&camel);
    assert_eq!(a, decode(&snake));
    // And what it decodes to is the request, not two equal empties.
    assert_eq!(a.max_tokens, Some(256));
    assert_eq!(a.stop, vec!["END".to_string()]);
    assert_eq!(a.tools.len(), 2);
    assert_eq!(
        a.tools[0].parameters["properties"]["user_id"]["type"],
        "integer"
    );
    assert!(a.tools[1].parameters["properties"]["the_name"].is_object());
    assert!(a
        .reasoning
        .as_ref()
        .is_some_and(|r| r.budget_tokens == Some(1024)));
    assert!(a.response_format.is_some());
    assert!(a.passthrough.fields.is_empty(), "{:?}", a.passthrough);
}

#[test]
fn each_field_decodes_the_same_by_either_name_alone() {
    // One snake_case field at a time in an otherwise camelCase request, so a field the
    // renaming missed is named by the failure.
    let (camel, snake) = by_both_names();
    let expected = decode(&camel);
    for path in [
        vec!["system_instruction"],
        vec!["tool_config"],
        vec!["generation_config"],
        vec!["tools"],
        vec!["contents"],
    ] {
        let mut mixed = camel.clone();
        let key = path[0];
        let camel_key = match key {
            "system_instruction" => "systemInstruction",
            "tool_config" => "toolConfig",
            "generation_config" => "generationConfig",
            other => other,
        };
        let obj = mixed.as_object_mut().unwrap();
        obj.remove(camel_key);
        obj.insert(key.to_string(), snake[key].clone());
        assert_eq!(decode(&mixed), expected, "snake_case `{key}`");
    }
}

#[test]
fn data_keeps_its_keys_whatever_their_case() {
    let (_, snake) = by_both_names();
    let r = decode(&snake);
    let call = r
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|p| match p {
            switchyard_wire::Part::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .unwrap();
    let args: Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(args, json!({"user_id": 7, "max_items": 2}));
    let schema = match &r.response_format {
        Some(switchyard_wire::ResponseFormat::JsonSchema { schema, .. }) => schema.clone(),
        other => panic!("{other:?}"),
    };
    assert!(schema["properties"]["the_answer"].is_object());
}

//! The providers' multi-turn rules, over real HTTP with hand-written bodies: each bad
//! history is refused with the provider's exact 400 body, and the history the mock itself
//! issued, sent back verbatim, is accepted.

mod common;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use common::client;
use serde_json::{json, Value};
use switchyard_mock::{MockConfig, MockServer};

async fn post(url: String, body: &Value) -> (u16, reqwest::header::HeaderMap, Value) {
    let r = client().post(url).json(body).send().await.unwrap();
    common::json_of(r).await
}

fn assert_base64(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"));
    let bytes = STANDARD
        .decode(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(bytes.len(), 44, "{text}");
    assert!(text.ends_with('='), "padded: {text}");
}

// --- Anthropic Messages -------------------------------------------------------------

fn weather_tool_anthropic() -> Value {
    json!({"name": "get_weather", "description": "Weather for a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

fn messages_body(model: &str, thinking: &str, messages: Value) -> Value {
    json!({"model": model, "max_tokens": 2048,
           "thinking": {"type": thinking, "budget_tokens": 1024},
           "tools": [weather_tool_anthropic()], "messages": messages})
}

/// Turn 1's assistant content, and turn 2's messages built from it.
async fn anthropic_turn_one(mock: &MockServer) -> Value {
    let url = format!("{}/v1/messages", mock.url());
    let body = messages_body(
        "think+tools",
        "enabled",
        json!([{"role": "user", "content": "weather in Paris?"}]),
    );
    let (status, _, reply) = post(url, &body).await;
    assert_eq!(status, 200, "{reply}");
    let content = reply["content"].clone();
    assert_eq!(content[0]["type"], "thinking", "{reply}");
    assert_eq!(content[1]["type"], "tool_use", "{reply}");
    assert_base64(&content[0]["signature"]);
    content
}

fn anthropic_turn_two(assistant: &Value) -> Value {
    let id = assistant
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .map(|b| b["id"].clone())
        .unwrap_or(json!("toolu_none"));
    json!([
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": assistant},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "sunny, 21C"}]},
    ])
}

async fn anthropic_refusal(mock: &MockServer, body: &Value, message: &str) {
    let (status, headers, got) = post(format!("{}/v1/messages", mock.url()), body).await;
    assert_eq!(status, 400, "{got}");
    let request_id = headers["request-id"].to_str().unwrap();
    let expected = json!({"type": "error",
        "error": {"type": "invalid_request_error", "message": message},
        "request_id": request_id});
    assert_eq!(got, expected);
}

#[tokio::test]
async fn anthropic_accepts_its_own_thinking_and_refuses_tampering() {
    let mock = MockServer::start().await;
    let url = format!("{}/v1/messages", mock.url());
    let content = anthropic_turn_one(&mock).await;

    let good = messages_body("think+tools", "enabled", anthropic_turn_two(&content));
    let (status, _, reply) = post(url.clone(), &good).await;
    assert_eq!(status, 200, "{reply}");
    assert!(
        reply["content"][1]["text"]
            .as_str()
            .unwrap()
            .contains("sunny, 21C"),
        "{reply}"
    );

    let invalid = "messages.1.content.0: Invalid `signature` in `thinking` block";
    let mut forged = content.clone();
    forged[0]["signature"] = json!(STANDARD.encode([7u8; 44]));
    let body = messages_body("think+tools", "enabled", anthropic_turn_two(&forged));
    anthropic_refusal(&mock, &body, invalid).await;

    let mut tampered = content.clone();
    let sig = tampered[0]["signature"].as_str().unwrap().to_string();
    let mut bytes = STANDARD.decode(&sig).unwrap();
    bytes[30] ^= 0x40;
    tampered[0]["signature"] = json!(STANDARD.encode(bytes));
    let body = messages_body("think+tools", "enabled", anthropic_turn_two(&tampered));
    anthropic_refusal(&mock, &body, invalid).await;

    let mut changed = content.clone();
    changed[0]["thinking"] = json!("A different thought.");
    let body = messages_body("think+tools", "disabled", anthropic_turn_two(&changed));
    anthropic_refusal(&mock, &body, invalid).await;

    let redacted = json!([{"type": "redacted_thinking", "data": "RW5jcnlwdGVk"}, content[1]]);
    let body = messages_body("think+tools", "enabled", anthropic_turn_two(&redacted));
    anthropic_refusal(
        &mock,
        &body,
        "messages.1.content.0: Invalid `data` in `redacted_thinking` block",
    )
    .await;
}

#[tokio::test]
async fn anthropic_needs_thinking_before_tool_use_only_when_thinking_is_on() {
    let mock = MockServer::start().await;
    let content = anthropic_turn_one(&mock).await;
    let without = json!([content[1]]);
    let body = messages_body("think+tools", "enabled", anthropic_turn_two(&without));
    anthropic_refusal(
        &mock,
        &body,
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found \
         `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a \
         thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). \
         We recommend you include thinking blocks from previous turns. To avoid this \
         requirement, disable `thinking`. Please consult our documentation at \
         https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
    )
    .await;
    let adaptive = json!({"model": "tools", "max_tokens": 100, "thinking": {"type": "adaptive"},
        "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "plain text"},
                     {"role": "user", "content": "y"},
                     {"role": "assistant", "content": [{"type": "text", "text": "let me look"}, content[1]]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": content[1]["id"], "content": "ok"}]}]});
    let (status, _, got) = post(format!("{}/v1/messages", mock.url()), &adaptive).await;
    assert_eq!(status, 400);
    assert!(got["error"]["message"].as_str().unwrap().starts_with(
        "messages.3.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`."
    ));

    let body = messages_body("think+tools", "disabled", anthropic_turn_two(&without));
    let (status, _, reply) = post(format!("{}/v1/messages", mock.url()), &body).await;
    assert_eq!(status, 200, "{reply}");
}

#[tokio::test]
async fn anthropic_streamed_signatures_verify_too() {
    let mock = MockServer::start().await;
    let mut body = messages_body(
        "think+tools",
        "enabled",
        json!([{"role": "user", "content": "weather in Paris?"}]),
    );
    body["stream"] = json!(true);
    let r = client()
        .post(format!("{}/v1/messages", mock.url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    let text = r.text().await.unwrap();
    let sig = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find_map(|e| {
            (e["delta"]["type"] == "signature_delta").then(|| e["delta"]["signature"].clone())
        })
        .unwrap_or_else(|| panic!("no signature_delta: {text}"));
    assert_base64(&sig);
}

// --- Gemini --------------------------------------------------------------------------

fn gemini_body(contents: Value) -> Value {
    json!({"contents": contents, "tools": [{"functionDeclarations": [
        {"name": "get_weather", "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
        {"name": "get_time", "parametersJsonSchema": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}]}]})
}

fn gemini_url(mock: &MockServer, model: &str) -> String {
    format!("{}/v1beta/models/{model}:generateContent", mock.url())
}

fn user_text(text: &str) -> Value {
    json!({"role": "user", "parts": [{"text": text}]})
}

fn responses_for(parts: &Value) -> Value {
    let answers: Vec<Value> = parts
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p.get("functionCall"))
        .map(|c| json!({"functionResponse": {"name": c["name"], "response": {"content": "fine"}}}))
        .collect();
    json!({"role": "user", "parts": answers})
}

async fn gemini_refusal(url: String, body: &Value, message: &str) {
    let (status, _, got) = post(url, body).await;
    assert_eq!(status, 400, "{got}");
    assert_eq!(
        got,
        json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}})
    );
}

#[tokio::test]
async fn gemini_3_parallel_calls_with_only_the_first_signed_are_accepted() {
    let mock = MockServer::start().await;
    let model = "gemini-3-pro+agent+think";
    let (status, _, reply) = post(
        gemini_url(&mock, model),
        &gemini_body(json!([user_text("plan")])),
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let parts = reply["candidates"][0]["content"]["parts"].clone();
    assert_eq!(parts[0]["thought"], true, "{parts}");
    assert_base64(&parts[0]["thoughtSignature"]);
    assert_eq!(parts[1]["functionCall"]["name"], "get_weather", "{parts}");
    assert_base64(&parts[1]["thoughtSignature"]);
    assert_eq!(parts[2]["functionCall"]["name"], "get_time", "{parts}");
    assert!(parts[2].get("thoughtSignature").is_none(), "{parts}");

    let mut contents = vec![
        user_text("plan"),
        json!({"role": "model", "parts": parts}),
        responses_for(&parts),
    ];
    let (status, _, reply) = post(gemini_url(&mock, model), &gemini_body(json!(contents))).await;
    assert_eq!(status, 200, "{reply}");
    let parts2 = reply["candidates"][0]["content"]["parts"].clone();
    assert_eq!(parts2[1]["functionCall"]["name"], "get_weather", "{parts2}");
    assert_base64(&parts2[1]["thoughtSignature"]);
    contents.push(json!({"role": "model", "parts": parts2}));
    contents.push(responses_for(&parts2));
    let (status, _, reply) = post(gemini_url(&mock, model), &gemini_body(json!(contents))).await;
    assert_eq!(status, 200, "{reply}");
    let last = reply["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["text"]
            .as_str()
            .unwrap()
            .contains("Done after 2 tool rounds"),
        "{reply}"
    );

    // The first call of the second step unsigned: refused at its content's position.
    let mut unsigned = contents.clone();
    unsigned[3]["parts"][1]
        .as_object_mut()
        .unwrap()
        .remove("thoughtSignature");
    gemini_refusal(
        gemini_url(&mock, model),
        &gemini_body(json!(unsigned)),
        "Function call is missing a thought_signature in functionCall parts. This is required \
         for tools to work correctly, and missing thought_signature may lead to degraded model \
         performance. Additional data, function call `default_api:get_weather` , position 4. \
         Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
    )
    .await;
    // A Gemini 2.5 model does not require them.
    let (status, _, reply) = post(
        gemini_url(&mock, "gemini-2.5-flash+agent+think"),
        &gemini_body(json!(unsigned)),
    )
    .await;
    assert_eq!(status, 200, "{reply}");
}

#[tokio::test]
async fn gemini_refuses_forged_signatures_on_every_model() {
    let mock = MockServer::start().await;
    let forged = json!([user_text("plan"),
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                                     "thoughtSignature": STANDARD.encode(b"a signature from somewhere else")}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"content": "sunny"}}}]}]);
    for model in ["gemini-3-pro+tools", "gemini-2.5-flash+tools", "tools"] {
        gemini_refusal(
            gemini_url(&mock, model),
            &gemini_body(forged.clone()),
            "Corrupted thought signature.",
        )
        .await;
    }
    let mut not_base64 = forged.clone();
    not_base64[1]["parts"][0]["thoughtSignature"] = json!("a signature!");
    let (status, _, got) = post(gemini_url(&mock, "tools"), &gemini_body(not_base64)).await;
    assert_eq!(status, 400);
    assert_eq!(
        got["error"]["message"],
        "Invalid value at 'contents[1].parts[0].thought_signature' (TYPE_BYTES), Base64 decoding failed for \"a signature!\""
    );
    // Google's documented dummy signature passes.
    let mut dummy = forged.clone();
    dummy[1]["parts"][0]["thoughtSignature"] = json!("skip_thought_signature_validator");
    let (status, _, got) = post(gemini_url(&mock, "gemini-3-pro+tools"), &gemini_body(dummy)).await;
    assert_eq!(status, 200, "{got}");
    // Missing on Gemini 3.
    let mut missing = forged;
    missing[1]["parts"][0]
        .as_object_mut()
        .unwrap()
        .remove("thoughtSignature");
    let (status, _, got) = post(
        gemini_url(&mock, "mock/gemini-3-flash-preview"),
        &gemini_body(missing),
    )
    .await;
    assert_eq!(status, 400);
    assert!(got["error"]["message"]
        .as_str()
        .unwrap()
        .contains("`default_api:get_weather` , position 2."));
}

#[tokio::test]
async fn gemini_streamed_calls_are_signed() {
    let mock = MockServer::start().await;
    let url = format!(
        "{}/v1beta/models/gemini-3-pro+tools:streamGenerateContent?alt=sse",
        mock.url()
    );
    let r = client()
        .post(url)
        .json(&gemini_body(json!([user_text("x")])))
        .send()
        .await
        .unwrap();
    let text = r.text().await.unwrap();
    let call = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .flat_map(|c| {
            c["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|p| p.get("functionCall").is_some())
        .unwrap_or_else(|| panic!("{text}"));
    assert_base64(&call["thoughtSignature"]);
}

// --- OpenAI Responses ----------------------------------------------------------------

fn responses_body(model: &str, input: Value) -> Value {
    json!({"model": model, "input": input, "tools": [{"type": "function", "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]})
}

async fn openai_refusal(url: String, body: &Value, expected: Value) {
    let (status, headers, got) = post(url, body).await;
    assert_eq!(status, 400, "{got}");
    assert!(headers.contains_key("x-request-id"));
    assert_eq!(got, expected);
}

#[tokio::test]
async fn responses_outputs_need_their_calls_and_reasoning_must_be_the_mocks() {
    let mock = MockServer::start().await;
    let url = format!("{}/responses", mock.base_url());
    let user = json!({"role": "user", "content": "weather in Paris?"});
    let (status, _, reply) = post(url.clone(), &responses_body("think+tools", json!([user]))).await;
    assert_eq!(status, 200, "{reply}");
    let output = reply["output"].as_array().unwrap().clone();
    assert_eq!(output[0]["type"], "reasoning", "{reply}");
    assert_base64(&output[0]["encrypted_content"]);
    let call_id = output[1]["call_id"].clone();

    let mut input = vec![user.clone()];
    input.extend(output.iter().cloned());
    input.push(
        json!({"type": "function_call_output", "call_id": call_id.clone(), "output": "sunny, 21C"}),
    );
    let (status, _, reply) = post(url.clone(), &responses_body("think+tools", json!(input))).await;
    assert_eq!(status, 200, "{reply}");

    let orphan =
        json!([user, {"type": "function_call_output", "call_id": "call_elsewhere", "output": "x"}]);
    openai_refusal(
        url.clone(),
        &responses_body("tools", orphan.clone()),
        json!({"error": {"message": "No tool call found for function call output with call_id call_elsewhere.",
                         "type": "invalid_request_error", "param": "input", "code": null}}),
    )
    .await;
    // With `previous_response_id` the server holds the earlier items: an output whose
    // call is in the previous response is accepted alone; one whose call is nowhere in
    // the history the id expands to is refused, as OpenAI does.
    let answer = json!({"type": "function_call_output", "call_id": call_id, "output": "sunny"});
    let mut stateful = responses_body("tools", json!([answer]));
    stateful["previous_response_id"] = json!("resp_mock_1");
    let (status, _, reply) = post(url.clone(), &stateful).await;
    assert_eq!(status, 200, "{reply}");
    let mut stateful_orphan = responses_body("tools", json!([orphan[1]]));
    stateful_orphan["previous_response_id"] = json!("resp_mock_1");
    openai_refusal(
        url.clone(),
        &stateful_orphan,
        json!({"error": {"message": "No tool call found for function call output with call_id call_elsewhere.",
                         "type": "invalid_request_error", "param": "input", "code": null}}),
    )
    .await;

    let mut forged = input.clone();
    forged[1]["encrypted_content"] = json!("gAAAAABo-forged");
    let id = forged[1]["id"].as_str().unwrap().to_string();
    openai_refusal(
        url,
        &responses_body("think+tools", json!(forged)),
        json!({"error": {"message": format!("The encrypted content for item {id} could not be verified. Reason: Encrypted content could not be decrypted or parsed."),
                         "type": "invalid_request_error", "param": null, "code": "invalid_encrypted_content"}}),
    )
    .await;
}

// --- OpenAI chat completions ---------------------------------------------------------

#[tokio::test]
async fn chat_tool_messages_must_answer_earlier_calls() {
    let mock = MockServer::start().await;
    let url = format!("{}/chat/completions", mock.base_url());
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    let user = json!({"role": "user", "content": "weather?"});
    let body = json!({"model": "tools", "tools": tools, "messages": [user]});
    let (status, _, reply) = post(url.clone(), &body).await;
    assert_eq!(status, 200);
    let assistant = reply["choices"][0]["message"].clone();
    let id = assistant["tool_calls"][0]["id"].clone();
    let good = json!({"model": "tools", "tools": tools, "messages": [user, assistant,
        {"role": "tool", "tool_call_id": id, "content": "sunny"}]});
    let (status, _, reply) = post(url.clone(), &good).await;
    assert_eq!(status, 200, "{reply}");

    let orphan = json!({"model": "tools", "tools": tools, "messages": [user,
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]});
    openai_refusal(
        url,
        &orphan,
        json!({"error": {"message": "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                         "type": "invalid_request_error", "param": "messages.[1].role", "code": null}}),
    )
    .await;
}

// --- Opting out -----------------------------------------------------------------------

#[tokio::test]
async fn lenient_and_enforce_history_false_accept_any_history() {
    let orphan = |model: &str| {
        json!({"model": model, "messages": [{"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "nowhere", "content": "x"}]})
    };
    let mock = MockServer::start().await;
    let url = format!("{}/chat/completions", mock.base_url());
    assert_eq!(post(url.clone(), &orphan("echo")).await.0, 400);
    assert_eq!(post(url, &orphan("lenient+echo")).await.0, 200);

    let relaxed = MockServer::start_with(MockConfig {
        enforce_history: false,
        ..MockConfig::default()
    })
    .await;
    let url = format!("{}/chat/completions", relaxed.base_url());
    assert_eq!(post(url, &orphan("echo")).await.0, 200);
    let config = MockConfig::from_yaml("enforce_history: false\n").unwrap();
    assert!(!config.enforce_history);
}

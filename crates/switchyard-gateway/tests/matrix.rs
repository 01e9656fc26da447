//! Every client dialect × every upstream dialect, whole and streamed, through the gateway
//! to the mock: text, usage, tool calls with a second turn carrying the result, and
//! thinking. Same-dialect pairs are passed through; the others are translated.

mod common;

use common::{client_body, gateway_for, path, upstream_dialect_of, Harness, DIALECTS};
use serde_json::{json, Value};
use switchyard_wire::{Dialect, Message, Opaque, Part, Request, Role, Tool, ToolKind, ToolResult};

fn weather_tool() -> Tool {
    Tool {
        name: "get_weather".into(),
        description: Some("Weather in a city".into()),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        kind: ToolKind::Function,
        strict: None,
        namespace: None,
    }
}

#[tokio::test]
async fn every_client_dialect_reaches_every_upstream_dialect() {
    let h = Harness::start().await;
    for client in DIALECTS {
        for upstream in DIALECTS {
            for stream in [false, true] {
                let case = format!("{client} → {upstream} (stream: {stream})");
                let model = format!("up-{upstream}/echo");
                h.mock.clear();

                // Text and usage.
                let request = Request::user("hello gateway").with_system("be brief");
                let reply = h.ask(client, &model, &request, stream).await;
                assert_eq!(reply.text(), "hello gateway", "{case}");
                let usage = reply.usage.unwrap_or_else(|| panic!("{case}: no usage"));
                assert!(usage.input > 0 && usage.output > 0, "{case}: {usage:?}");
                let seen = h.mock.requests();
                assert_eq!(seen.len(), 1, "{case}");
                assert_eq!(
                    upstream_dialect_of(&seen[0].path),
                    upstream,
                    "{case}: {}",
                    seen[0].path
                );
                if upstream == Dialect::Gemini {
                    assert!(
                        seen[0].path.contains("/models/echo:"),
                        "{case}: {}",
                        seen[0].path
                    );
                } else {
                    assert_eq!(seen[0].json.as_ref().unwrap()["model"], "echo", "{case}");
                }
                assert!(
                    seen[0].header("authorization").is_none()
                        && seen[0].header("x-api-key").is_none(),
                    "{case}: no client credential goes upstream"
                );

                // Thinking and a tool call, then the result in a second turn.
                let model = format!("up-{upstream}/think+tools");
                let mut request = Request::user("weather in Paris?");
                request.tools = vec![weather_tool()];
                let reply = h.ask(client, &model, &request, stream).await;
                assert!(
                    !reply.thinking().is_empty(),
                    "{case}: thinking lost: {reply:?}"
                );
                let call = reply
                    .tool_calls()
                    .next()
                    .unwrap_or_else(|| panic!("{case}: no call: {reply:?}"))
                    .clone();
                assert_eq!(call.name, "get_weather", "{case}");
                let args: Value = serde_json::from_str(&call.arguments).unwrap();
                assert_eq!(args, json!({"city": "Paris"}), "{case}");

                let mut second = request.clone();
                second.messages.push(Message {
                    role: Role::Assistant,
                    content: reply.content.clone(),
                });
                second.messages.push(Message {
                    role: Role::Tool,
                    content: vec![Part::ToolResult(ToolResult {
                        call_id: call.id.clone(),
                        name: Some(call.name.clone()),
                        content: vec![Part::text("18C and sunny")],
                        is_error: false,
                        kind: ToolKind::Function,
                    })],
                });
                let model = format!("up-{upstream}/tools");
                let reply = h.ask(client, &model, &second, stream).await;
                assert!(
                    reply.text().contains("18C and sunny"),
                    "{case}: {:?}",
                    reply.text()
                );
                if client == upstream && upstream == Dialect::Messages {
                    // Pass-through keeps the thinking signature byte for byte.
                    let last = h.mock.requests().pop().unwrap();
                    let signature = first_signature(&second);
                    assert!(
                        signature.is_some_and(|s| last.body_text().contains(s)),
                        "{case}"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn passthrough_forwards_the_body_byte_for_byte_but_the_model() {
    let h = Harness::start().await;
    let body = r#"{"model":"up-chat/echo","messages":[{"role":"user","content":"h\u00e9 \"there\""}],"seed":7,"x_vendor":{"a":[1,2]}}"#;
    let r = h
        .http
        .post(format!("{}/v1/chat/completions", h.url))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let seen = h.mock.requests().pop().unwrap();
    assert_eq!(seen.body_text(), body.replace("up-chat/echo", "echo"));
}

#[tokio::test]
async fn a_chat_stream_without_include_usage_is_metered_but_gets_no_usage_chunk() {
    let h = Harness::start().await;
    for model in ["up-chat/echo", "up-messages/echo"] {
        let body = json!({"model": model, "stream": true, "messages": [{"role": "user", "content": "hi"}]});
        let text = h
            .http
            .post(format!("{}/v1/chat/completions", h.url))
            .json(&body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(text.contains("data: [DONE]"), "{model}: {text}");
        assert!(
            !text.contains("\"usage\""),
            "{model}: a usage chunk was not asked for: {text}"
        );
    }
    let metrics = h.metrics().await;
    assert!(
        metrics.contains(
            "switchyard_gateway_input_tokens_total{backend=\"up-chat\",model=\"echo\",key=\"-\"}"
        ),
        "{metrics}"
    );
    assert!(
        !metrics.contains(
            "switchyard_gateway_input_tokens_total{backend=\"up-chat\",model=\"echo\",key=\"-\"} 0"
        ),
        "{metrics}"
    );
    assert!(!metrics.contains("switchyard_gateway_input_tokens_total{backend=\"up-messages\",model=\"echo\",key=\"-\"} 0"), "{metrics}");
}

#[tokio::test]
async fn a_backend_that_wants_max_tokens_and_no_developer_role_gets_them_through_both_paths() {
    let mock = switchyard_mock::MockServer::start().await;
    let config = switchyard_gateway::GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        ..switchyard_gateway::GatewayConfig::default()
    };
    let extra = [
        "backends.legacy.from=mock".to_string(),
        "backends.legacy.apis=[chat]".to_string(),
        "backends.legacy.max_tokens_field=max_tokens".to_string(),
        "backends.legacy.developer_role=system".to_string(),
    ];
    let gateway = gateway_for(
        &mock.base_url(),
        config,
        switchyard::env::MapEnv::default(),
        &extra,
    );
    let running = switchyard_gateway::start(gateway, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let mut request = Request::user("hi").with_max_tokens(40);
    request
        .messages
        .insert(0, Message::text(Role::Developer, "be brief"));
    // A chat client (passed through: its body carries `max_completion_tokens`) and a
    // Messages client (translated).
    for client in [Dialect::Chat, Dialect::Messages] {
        let r = http
            .post(format!(
                "{}{}",
                running.url(),
                path(client, "legacy/echo", false)
            ))
            .header("content-type", "application/json")
            .body(client_body(client, "legacy/echo", &request, false))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{client}");
        let sent = mock.requests().pop().unwrap();
        let body = sent.json.unwrap();
        assert_eq!(body["max_tokens"], 40, "{client}: {body}");
        assert!(
            body.get("max_completion_tokens").is_none(),
            "{client}: {body}"
        );
        // Both edits at once: the developer message went as a system one.
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["role"].as_str())
            .collect();
        assert_eq!(roles, ["system", "user"], "{client}: {body}");
    }
}

/// The Messages signature of the first thinking part of a request's messages.
fn first_signature(request: &Request) -> Option<&str> {
    request
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .find_map(|p| match p {
            Part::Thinking(t) => Opaque::for_dialect(&t.state, Dialect::Messages),
            _ => None,
        })
}

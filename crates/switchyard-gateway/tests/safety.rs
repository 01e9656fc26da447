//! Keys, limits, malformed and oversized bodies, upstream errors in the client's shape,
//! and a client that goes away: what a client and an operator see.

mod common;

use common::{gateway_for, Harness};
use serde_json::{json, Value};
use std::time::Duration;
use switchyard::env::MapEnv;
use switchyard_gateway::{start, GatewayConfig, KeySecret, KeySpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn key(name: &str, var: &str, models: &[&str], rpm: Option<u32>) -> KeySpec {
    KeySpec {
        models: models.iter().map(|m| m.to_string()).collect(),
        rpm,
        ..KeySpec::new(name, KeySecret::Env(var.into()))
    }
}

async fn keyed() -> Harness {
    let config = GatewayConfig {
        keys: vec![
            key("alice", "ALICE_KEY", &[], None),
            key("bob", "BOB_KEY", &["mock/say:*"], Some(2)),
        ],
        models: [("friendly", "mock/say:hello"), ("other", "mock/echo")]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        ..GatewayConfig::default()
    };
    Harness::start_with(
        config,
        MapEnv::new([("ALICE_KEY", "sk-alice"), ("BOB_KEY", "sk-bob")]),
    )
    .await
}

async fn post(
    h: &Harness,
    path: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut r = h.http.post(format!("{}{path}", h.url)).json(&body);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.unwrap();
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

fn messages(model: &str) -> Value {
    json!({"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn a_request_without_a_valid_key_gets_401_in_its_dialect() {
    let h = keyed().await;
    let (s, _, b) = post(&h, "/v1/chat/completions", &[], chat("mock/echo")).await;
    assert_eq!(s, 401);
    assert_eq!(b["error"]["code"], "invalid_api_key");
    assert!(b["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Authorization: Bearer"));
    let (s, _, b) = post(
        &h,
        "/v1/messages",
        &[("x-api-key", "sk-eve")],
        messages("mock/echo"),
    )
    .await;
    assert_eq!(s, 401);
    assert_eq!(b["type"], "error");
    assert_eq!(b["error"]["type"], "authentication_error");
    let (s, _, b) = post(
        &h,
        "/v1beta/models/mock/echo:generateContent",
        &[],
        json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
    )
    .await;
    assert_eq!(s, 401);
    assert_eq!(b["error"]["status"], "UNAUTHENTICATED");
    assert!(h.mock.requests().is_empty(), "nothing went upstream");

    for header in [
        ("authorization", "Bearer sk-alice"),
        ("x-api-key", "sk-alice"),
        ("x-goog-api-key", "sk-alice"),
    ] {
        let (s, _, b) = post(&h, "/v1/chat/completions", &[header], chat("mock/echo")).await;
        assert_eq!(s, 200, "{header:?}: {b}");
    }
    let seen = h.mock.requests();
    assert!(
        seen.iter().all(|r| r.body_text().find("sk-alice").is_none()
            && r.headers.iter().all(|(_, v)| !v.contains("sk-alice"))),
        "the client key never goes upstream"
    );
}

#[tokio::test]
async fn a_key_is_held_to_its_models_and_its_rate() {
    let h = keyed().await;
    let bob = [("authorization", "Bearer sk-bob")];
    let (s, _, b) = post(&h, "/v1/chat/completions", &bob, chat("mock/echo")).await;
    assert_eq!(s, 403, "{b}");
    assert!(b["error"]["message"]
        .as_str()
        .unwrap()
        .contains("may use: mock/say:*"));
    let (s, _, _) = post(&h, "/v1/messages", &bob, messages("mock/say:ok")).await;
    assert_eq!(s, 200);
    let (s, _, _) = post(&h, "/v1/messages", &bob, messages("mock/say:ok")).await;
    assert_eq!(s, 200);
    let (s, headers, b) = post(&h, "/v1/messages", &bob, messages("mock/say:ok")).await;
    assert_eq!(s, 429, "{b}");
    assert_eq!(b["error"]["type"], "rate_limit_error");
    let after: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((29..=31).contains(&after), "{after}");
    let (s, _, b) = post(&h, "/v1/chat/completions", &bob, chat("mock/say:ok")).await;
    assert_eq!(s, 429);
    assert_eq!(b["error"]["code"], "rate_limit_exceeded");
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap()
            .contains("try again in"),
        "{b}"
    );

    let list: Value = h
        .http
        .get(format!("{}/v1/models", h.url))
        .header("authorization", "Bearer sk-bob")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["friendly"], "bob sees the names he may use: {list}");
    let list: Value = h
        .http
        .get(format!("{}/v1/models", h.url))
        .header("x-api-key", "sk-alice")
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    // The models: names first, then what the backends know by name.
    assert_eq!(ids[..2], ["friendly", "other"], "{list}");
    assert!(
        ids.contains(&"mock/small") && ids.contains(&"anthropic/sonnet"),
        "{list}"
    );
    assert_eq!(
        list["data"][0]["type"], "model",
        "Anthropic's shape: {list}"
    );
    let gemini: Value = h
        .http
        .get(format!("{}/v1beta/models", h.url))
        .header("x-goog-api-key", "sk-alice")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(gemini["models"][0]["name"], "models/friendly", "{gemini}");
    assert!(gemini["models"][0]["supportedGenerationMethods"]
        .as_array()
        .unwrap()
        .contains(&json!("generateContent")));
    let metrics = h.metrics().await;
    assert!(
        metrics.contains(
            "switchyard_gateway_requests_total{backend=\"mock\",model=\"say:ok\",key=\"bob\"} 4"
        ),
        "{metrics}"
    );
    // `say:ok` has no price: its cost is unknown, not 0.
    assert!(
        metrics.contains(
            "switchyard_gateway_unpriced_requests_total{backend=\"mock\",model=\"say:ok\",key=\"bob\"} 2"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "switchyard_gateway_errors_total{backend=\"mock\",model=\"say:ok\",key=\"bob\"} 2"
        ),
        "{metrics}"
    );
    assert!(!metrics.contains("sk-bob"));
}

#[tokio::test]
async fn oversized_and_malformed_bodies_are_refused_in_the_dialects_shape() {
    let config = GatewayConfig {
        max_body_bytes: 1024,
        ..GatewayConfig::default()
    };
    let h = Harness::start_with(config, MapEnv::default()).await;
    let big = json!({"model": "mock/echo", "max_tokens": 5, "messages": [{"role": "user", "content": "x".repeat(2000)}]});
    let (s, _, b) = post(&h, "/v1/messages", &[], big.clone()).await;
    assert_eq!(s, 413);
    assert_eq!(b["error"]["type"], "request_too_large");
    assert!(b["error"]["message"]
        .as_str()
        .unwrap()
        .contains("1024 bytes"));
    let (s, _, b) = post(&h, "/v1/chat/completions", &[], big).await;
    assert_eq!(s, 413);
    assert_eq!(b["error"]["code"], "request_too_large");
    // Chunked (no Content-Length): refused as the count passes the limit. The client is
    // still sending when the 413 is written; it reads the 413 (not a reset) because the
    // gateway reads and throws away the rest before closing. Repeated: that was a race.
    for chunk in [100, 4096, 65536] {
        for _ in 0..5 {
            let chunks = futures::stream::iter(
                (0..40)
                    .map(move |_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; chunk]))),
            );
            let r = h
                .http
                .post(format!("{}/v1/responses", h.url))
                .header("content-type", "application/json")
                .body(reqwest::Body::wrap_stream(chunks))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{chunk}-byte chunks: {e:?}"));
            assert_eq!(r.status(), 413);
        }
    }
    // A declared length over the limit is refused before reading, and drained the same way.
    for _ in 0..5 {
        let r = h
            .http
            .post(format!("{}/v1/chat/completions", h.url))
            .header("content-type", "application/json")
            .body(vec![b' '; 1 << 20])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 413);
    }

    for (path, shape) in [
        ("/v1/chat/completions", "openai"),
        ("/v1/messages", "anthropic"),
        ("/v1beta/models/mock/echo:generateContent", "gemini"),
    ] {
        let r = h
            .http
            .post(format!("{}{path}", h.url))
            .header("content-type", "application/json")
            .body("{\"model\": \"mock/echo\",")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{path}");
        let b: Value = r.json().await.unwrap();
        let message = match shape {
            "openai" => &b["error"]["message"],
            "anthropic" => {
                assert_eq!(b["error"]["type"], "invalid_request_error");
                &b["error"]["message"]
            }
            _ => {
                assert_eq!(b["error"]["status"], "INVALID_ARGUMENT");
                &b["error"]["message"]
            }
        };
        assert!(
            message.as_str().unwrap().contains("not valid JSON"),
            "{path}: {b}"
        );
    }
    let (s, _, b) = post(&h, "/v1/chat/completions", &[], json!({"messages": []})).await;
    assert_eq!(s, 400);
    assert!(b["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no `model`"));
    let (s, _, b) = post(&h, "/v1/messages", &[], messages("claude-nonexistent")).await;
    assert_eq!(s, 404);
    assert_eq!(b["error"]["type"], "not_found_error");
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap()
            .contains("known backend"),
        "{b}"
    );
    assert!(h.mock.requests().is_empty());
}

#[tokio::test]
async fn upstream_errors_reach_each_client_with_the_strings_it_branches_on() {
    let h = Harness::start().await;
    // A chat backend's context overflow, to a Claude Code-style client.
    let (s, _, b) = post(
        &h,
        "/v1/messages",
        &[],
        messages("up-chat/context-overflow"),
    )
    .await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(b["error"]["type"], "invalid_request_error");
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("prompt is too long"),
        "{b}"
    );
    // An Anthropic backend's overflow, to a Codex-style client.
    let (s, _, b) = post(
        &h,
        "/v1/responses",
        &[],
        json!({"model": "up-messages/context-overflow", "input": "hi"}),
    )
    .await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(b["error"]["code"], "context_length_exceeded");
    // Rate limits and overload.
    let (s, headers, b) = post(
        &h,
        "/v1/messages",
        &[],
        messages("up-chat/fault-429-retry-3"),
    )
    .await;
    assert_eq!(s, 429, "{b}");
    assert_eq!(b["error"]["type"], "rate_limit_error");
    assert_eq!(headers["retry-after"], "3");
    let (s, _, b) = post(&h, "/v1/messages", &[], messages("up-gemini/fault-503")).await;
    assert_eq!(s, 529, "{b}");
    assert_eq!(b["error"]["type"], "overloaded_error");
    let (s, _, b) = post(
        &h,
        "/v1/chat/completions",
        &[],
        chat("up-messages/fault-529"),
    )
    .await;
    assert_eq!(s, 503, "{b}");
    assert_eq!(b["error"]["code"], "server_is_overloaded");
    // Same dialect: the provider's own error body goes back untouched.
    let (s, _, b) = post(
        &h,
        "/v1/messages",
        &[],
        messages("up-messages/context-overflow"),
    )
    .await;
    assert_eq!(s, 400);
    assert_eq!(
        b["error"]["message"],
        "prompt is too long: 219898 tokens > 200000 maximum"
    );
    // An error in the middle of a translated stream is an error event in the client's grammar.
    let mut body = messages("up-chat/error-mid-stream");
    body["stream"] = json!(true);
    let text = h
        .http
        .post(format!("{}/v1/messages", h.url))
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("event: error"), "{text}");
    assert!(
        text.contains("overloaded_error") || text.contains("api_error"),
        "{text}"
    );
}

#[tokio::test]
async fn codex_namespace_and_custom_tools_come_back_as_codex_sent_them() {
    let h = Harness::start().await;
    for upstream in ["up-chat", "up-messages", "up-gemini"] {
        for (tools, expect) in [
            (
                json!([{"type": "namespace", "name": "mcp__fs__", "description": "files",
                      "tools": [{"type": "function", "name": "read", "description": "read a file",
                                 "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]}]),
                "namespace",
            ),
            (
                json!([{"type": "custom", "name": "apply_patch", "description": "patch",
                      "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}}]),
                "custom",
            ),
        ] {
            for stream in [false, true] {
                let body = json!({"model": format!("{upstream}/tools"), "input": "go", "tools": tools, "stream": stream});
                let r = h
                    .http
                    .post(format!("{}/v1/responses", h.url))
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
                let bytes = r.bytes().await.unwrap();
                let reply = common::decode(switchyard_wire::Dialect::Responses, &bytes, stream);
                let call = reply
                    .tool_calls()
                    .next()
                    .unwrap_or_else(|| panic!("{upstream} {expect}: {reply:?}"));
                let case = format!("{upstream} {expect} stream {stream}");
                if expect == "namespace" {
                    assert_eq!(call.name, "read", "{case}");
                    assert_eq!(call.namespace.as_deref(), Some("mcp__fs__"), "{case}");
                    let text = String::from_utf8_lossy(&bytes);
                    assert!(
                        text.contains("\"namespace\":\"mcp__fs__\""),
                        "{case}: {text}"
                    );
                    let upstream_body = h.mock.requests().pop().unwrap().body_text();
                    assert!(
                        upstream_body.contains("mcp__fs__read"),
                        "{case}: flattened upstream"
                    );
                } else {
                    assert_eq!(call.kind, switchyard_wire::ToolKind::Custom, "{case}");
                    assert_eq!(call.name, "apply_patch");
                    assert_eq!(call.arguments, "mock", "{case}: the free-form input itself");
                    assert!(
                        String::from_utf8_lossy(&bytes).contains("custom_tool_call"),
                        "{case}"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn count_tokens_models_and_probes() {
    let h = Harness::start().await;
    let (s, _, b) = post(
        &h,
        "/v1/messages/count_tokens?beta=true",
        &[("anthropic-beta", "made-up-2099")],
        messages("up-messages/echo"),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(b["input_tokens"].as_u64().unwrap() > 0);
    let (s, _, b) = post(
        &h,
        "/v1/messages/count_tokens",
        &[],
        messages("up-chat/echo"),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(b["input_tokens"].as_u64().unwrap() > 0);
    let head = h.http.head(format!("{}/", h.url)).send().await.unwrap();
    assert_eq!(head.status(), 200);
    assert!(switchyard_gateway::probe(&h.url).await);
    // Unknown betas never reach a non-Anthropic backend and are never refused.
    let (s, _, _) = post(
        &h,
        "/v1/messages?beta=true",
        &[("anthropic-beta", "made-up-2099,claude-code-20250219")],
        messages("up-messages/echo"),
    )
    .await;
    assert_eq!(s, 200);
    assert!(h
        .mock
        .requests()
        .pop()
        .unwrap()
        .header("anthropic-beta")
        .is_none());
}

/// An upstream that answers with headers and one event (or nothing), then reports when
/// the gateway closes the connection.
async fn hanging_upstream(stream: bool) -> (String, tokio::sync::oneshot::Receiver<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        let mut seen = Vec::new();
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = sock.read(&mut buf).await.unwrap();
            seen.extend_from_slice(&buf[..n]);
        }
        if stream {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            let event = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hel\"},\"finish_reason\":null}]}\n\n";
            let _ = sock
                .write_all(format!("{head}{:x}\r\n{event}\r\n", event.len()).as_bytes())
                .await;
        }
        // Wait for the other side to close.
        loop {
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = tx.send(());
    });
    (format!("http://{addr}/v1"), rx)
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_its_upstream_call() {
    for (client_path, body, stream) in [
        (
            "/v1/chat/completions",
            json!({"model": "hang/m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
            true,
        ),
        (
            "/v1/messages",
            json!({"model": "hang/m", "stream": true, "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}),
            true,
        ),
        (
            "/v1/chat/completions",
            json!({"model": "hang/m", "messages": [{"role": "user", "content": "hi"}]}),
            false,
        ),
        (
            "/v1/messages",
            json!({"model": "hang/m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}),
            false,
        ),
    ] {
        let (upstream, closed) = hanging_upstream(stream).await;
        let mock = switchyard_mock::MockServer::start().await;
        let gateway = gateway_for(
            &mock.base_url(),
            GatewayConfig::default(),
            MapEnv::default(),
            &[
                "backends.hang.from=mock".into(),
                "backends.hang.apis=[chat]".into(),
                format!("backends.hang.base_url={upstream}"),
            ],
        );
        let running = start(gateway, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let client = reqwest::Client::new();
        let request = client
            .post(format!("{}{client_path}", running.url()))
            .json(&body)
            .send();
        if stream {
            let mut r = request.await.unwrap();
            assert_eq!(r.status(), 200);
            let first = r.chunk().await.unwrap().unwrap();
            assert!(!first.is_empty());
            drop(r);
        } else {
            assert!(tokio::time::timeout(Duration::from_millis(300), request)
                .await
                .is_err());
        }
        drop(client);
        tokio::time::timeout(Duration::from_secs(5), closed)
            .await
            .unwrap_or_else(|_| panic!("{client_path} stream {stream}: the upstream connection stayed open after the client left"))
            .unwrap();
    }
}

#[tokio::test]
async fn retryable_upstream_failures_are_retried_before_the_first_byte() {
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy {
            rate_limited: vec![Duration::from_millis(10)],
            overloaded: vec![Duration::from_millis(10)],
            ..switchyard::RetryPolicy::never()
        },
        ..GatewayConfig::default()
    };
    let h = Harness::start_with(config, MapEnv::default()).await;
    for (path, model, stream) in [
        ("/v1/chat/completions", "up-chat/fault-429-then-ok", false),
        ("/v1/chat/completions", "up-chat/fault-503-then-ok", true),
        ("/v1/messages", "up-chat/fault-429-then-ok", false),
        ("/v1/messages", "up-chat/fault-529-then-ok", true),
    ] {
        h.mock.clear();
        let mut body = if path == "/v1/messages" {
            messages(model)
        } else {
            chat(model)
        };
        body["stream"] = json!(stream);
        let r = h
            .http
            .post(format!("{}{path}", h.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path} {model} stream {stream}");
        let text = r.text().await.unwrap();
        assert!(text.contains("hi"), "{text}");
        assert_eq!(
            h.mock.requests().len(),
            2,
            "{path} {model}: one failure, one retry"
        );
    }
}

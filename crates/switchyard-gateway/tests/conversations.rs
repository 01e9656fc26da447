//! The state of the stateful APIs kept by the gateway for any backend (issue 36):
//! `previous_response_id` chains of five turns moving across every backend dialect,
//! whole and streamed; item references; `GET`, `input_items` and `DELETE`; `store:
//! false`; one key refused another's response; Anthropic threads served for backends that
//! keep none, and continued after the gateway restarts; and what reached the upstream at
//! each turn (the whole history, with the signed thinking the mock verifies).

mod common;

use common::gateway_for;
use common::recording::{env, key, ALICE, BOB};
use serde_json::{json, Value};
use std::path::Path;
use switchyard_gateway::{start, GatewayConfig, KeySpec, RunningGateway};
use switchyard_mock::MockServer;
use switchyard_wire::sse::SseParser;

const TOOLS: &str = r#"[{"type": "function", "name": "lookup", "description": "Looks a thing up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]"#;

async fn gateway(mock: &MockServer, dir: &Path, keys: Vec<KeySpec>) -> RunningGateway {
    gateway_with(mock, dir, keys, &[]).await
}

async fn gateway_with(
    mock: &MockServer,
    dir: &Path,
    keys: Vec<KeySpec>,
    extra: &[String],
) -> RunningGateway {
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        keys,
        store: Some(dir.to_path_buf()),
        ..GatewayConfig::default()
    };
    let g = gateway_for(&mock.base_url(), config, env(), extra);
    start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

/// POSTs `body` to `path` with `key`; the status and the body (a stream's terminal
/// document: Responses' `response.completed` response, or the assembled Messages one).
async fn post(gw: &RunningGateway, path: &str, key: Option<&str>, body: &Value) -> (u16, Value) {
    let mut r = reqwest::Client::new()
        .post(format!("{}{path}", gw.url()))
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .json(body);
    if let Some(k) = key {
        r = r.header("authorization", format!("Bearer {k}"));
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    let stream = r
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    let bytes = r.bytes().await.unwrap();
    if !stream {
        let v = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| panic!("{status}: {}", String::from_utf8_lossy(&bytes)));
        return (status, v);
    }
    (status, from_stream(&bytes))
}

/// A stream's reply as a whole one reads: Responses' terminal response, or a Messages
/// message with its tool uses and thinking.
fn from_stream(bytes: &[u8]) -> Value {
    let events = SseParser::new().push(bytes);
    let mut message = json!({"content": []});
    for e in events {
        let Ok(data) = serde_json::from_str::<Value>(&e.data) else {
            continue;
        };
        match data["type"].as_str().unwrap_or_default() {
            "response.completed" | "response.incomplete" | "response.failed" => {
                return data["response"].clone()
            }
            "message_start" => {
                message["id"] = data["message"]["id"].clone();
            }
            "content_block_start" => message["content"]
                .as_array_mut()
                .unwrap()
                .push(data["content_block"].clone()),
            "content_block_delta" if data["delta"]["type"] == "text_delta" => {
                let last = message["content"]
                    .as_array_mut()
                    .unwrap()
                    .last_mut()
                    .unwrap();
                let text = format!(
                    "{}{}",
                    last["text"].as_str().unwrap_or_default(),
                    data["delta"]["text"].as_str().unwrap()
                );
                last["text"] = json!(text);
            }
            "error" => return data,
            _ => {}
        }
    }
    message
}

/// The call ids of a Responses reply's function calls.
fn calls(response: &Value) -> Vec<String> {
    response["output"]
        .as_array()
        .unwrap_or_else(|| panic!("no output: {response}"))
        .iter()
        .filter(|i| i["type"] == "function_call")
        .map(|i| i["call_id"].as_str().unwrap().to_string())
        .collect()
}

fn outputs(ids: &[String], text: &str) -> Value {
    Value::Array(
        ids.iter()
            .map(|id| json!({"type": "function_call_output", "call_id": id, "output": text}))
            .collect(),
    )
}

/// The text of every message of what the upstream received last, as JSON text.
fn last_upstream(mock: &MockServer) -> String {
    let r = mock.requests().pop().unwrap();
    String::from_utf8_lossy(&r.body).into_owned()
}

#[tokio::test]
async fn a_chain_of_five_responses_moves_across_every_backend_whole_and_streamed() {
    for stream in [false, true] {
        let mock = MockServer::start().await;
        let dir = tempfile::tempdir().unwrap();
        let gw = gateway(&mock, dir.path(), Vec::new()).await;
        let tools: Value = serde_json::from_str(TOOLS).unwrap();
        let turn = |model: &str, previous: Option<&str>, input: Value| {
            let mut body = json!({"model": model, "input": input, "tools": tools, "stream": stream,
                "reasoning": {"effort": "low", "summary": "auto"}});
            if let Some(p) = previous {
                body["previous_response_id"] = json!(p);
            }
            body
        };
        // 1: passed through to a Responses backend; two calls asked.
        let (s, r1) = post(
            &gw,
            "/v1/responses",
            None,
            &turn("up-responses/agent+think", None, json!("find the answer")),
        )
        .await;
        assert_eq!(s, 200, "{r1}");
        let asked = calls(&r1);
        assert_eq!(asked.len(), 2, "{r1}");
        // 2: only the tool results, to a Messages backend: the upstream gets the question,
        // the calls and the results (the mock refuses results without their calls).
        let (s, r2) = post(
            &gw,
            "/v1/responses",
            None,
            &turn(
                "up-messages/agent+think",
                r1["id"].as_str(),
                outputs(&asked, "forty"),
            ),
        )
        .await;
        assert_eq!(s, 200, "stream {stream}: {r2}");
        let up = last_upstream(&mock);
        assert!(
            up.contains("find the answer") && up.contains("forty"),
            "{up}"
        );
        assert!(!up.contains("previous_response_id"), "{up}");
        let asked = calls(&r2);
        assert_eq!(asked.len(), 1, "{r2}");
        // 3: to a chat backend.
        let (s, r3) = post(
            &gw,
            "/v1/responses",
            None,
            &turn(
                "up-chat/agent+think",
                r2["id"].as_str(),
                outputs(&asked, "two"),
            ),
        )
        .await;
        assert_eq!(s, 200, "stream {stream}: {r3}");
        let up = last_upstream(&mock);
        assert!(
            up.contains("find the answer") && up.contains("forty") && up.contains("two"),
            "{up}"
        );
        let answer = r3["output"].to_string();
        assert!(
            answer.contains("forty") && answer.contains("two"),
            "the final answer quotes both results: {answer}"
        );
        // 4: a new question to Gemini: two calls again.
        let (s, r4) = post(
            &gw,
            "/v1/responses",
            None,
            &turn(
                "up-gemini/agent+think",
                r3["id"].as_str(),
                json!("and the other one?"),
            ),
        )
        .await;
        assert_eq!(s, 200, "stream {stream}: {r4}");
        let asked = calls(&r4);
        assert_eq!(asked.len(), 2, "{r4}");
        // 5: back to the Responses backend, which never saw turns 2 to 4.
        let (s, r5) = post(
            &gw,
            "/v1/responses",
            None,
            &turn(
                "up-responses/agent+think",
                r4["id"].as_str(),
                outputs(&asked, "seven"),
            ),
        )
        .await;
        assert_eq!(s, 200, "stream {stream}: {r5}");
        let up = last_upstream(&mock);
        for said in [
            "find the answer",
            "forty",
            "two",
            "and the other one?",
            "seven",
        ] {
            assert!(
                up.contains(said),
                "turn 5 reached the upstream without {said:?}: {up}"
            );
        }
        // The items used to generate turn 5, oldest first: the whole history.
        let items: Value = reqwest::get(format!(
            "{}/v1/responses/{}/input_items?order=asc&limit=100",
            gw.url(),
            r5["id"].as_str().unwrap()
        ))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        let data = items["data"].as_array().unwrap();
        assert_eq!(data[0]["content"][0]["text"], "find the answer", "{items}");
        assert!(data.iter().all(|i| i["id"].is_string()), "{items}");
        assert_eq!(data.last().unwrap()["type"], "function_call_output");
        let metrics = reqwest::get(format!("{}/metrics", gw.url()))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            metrics.contains("switchyard_gateway_conversations_kept_total{kind=\"response\"} 5"),
            "{metrics}"
        );
        assert!(
            metrics
                .contains("switchyard_gateway_conversations_expanded_total{kind=\"response\"} 4"),
            "{metrics}"
        );
        gw.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn signed_thinking_goes_back_to_a_messages_backend_from_kept_state() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path(), Vec::new()).await;
    let tools: Value = serde_json::from_str(TOOLS).unwrap();
    let (s, r1) = post(
        &gw,
        "/v1/responses",
        None,
        &json!({"model": "up-messages/agent+think", "input": "go", "tools": tools}),
    )
    .await;
    assert_eq!(s, 200, "{r1}");
    let (s, r2) = post(
        &gw,
        "/v1/responses",
        None,
        &json!({"model": "up-messages/agent+think", "input": outputs(&calls(&r1), "ok"),
        "tools": tools, "previous_response_id": r1["id"]}),
    )
    .await;
    assert_eq!(s, 200, "{r2}");
    let sent = mock.requests().pop().unwrap().json.unwrap();
    let thinking = sent["messages"][1]["content"][0].clone();
    assert_eq!(thinking["type"], "thinking", "{sent}");
    assert!(
        switchyard_mock::signing::verify_thinking(
            thinking["thinking"].as_str().unwrap(),
            thinking["signature"].as_str().unwrap()
        ),
        "the mock's own signature came back: {thinking}"
    );
}

#[tokio::test]
async fn stored_responses_are_read_listed_deleted_and_scoped_to_their_key() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let keys = vec![key("alice", "ALICE_KEY", None), key("bob", "BOB_KEY", None)];
    let gw = gateway(&mock, dir.path(), keys).await;
    let base = gw.url();
    let get = |path: String, k: &'static str| {
        let url = format!("{base}{path}");
        async move {
            let r = reqwest::Client::new()
                .get(url)
                .bearer_auth(k)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let (s, r1) = post(
        &gw,
        "/v1/responses",
        Some(ALICE),
        &json!({"model": "up-chat/echo", "input": "hello there"}),
    )
    .await;
    assert_eq!(s, 200, "{r1}");
    let id = r1["id"].as_str().unwrap().to_string();
    let (s, got) = get(format!("/v1/responses/{id}"), ALICE).await;
    assert_eq!(s, 200);
    // Without a key, or with one the gateway does not have: refused as a model call is.
    let r = reqwest::get(format!("{}/v1/responses/{id}", gw.url()))
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let e: Value = r.json().await.unwrap();
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("no API key"),
        "{e}"
    );
    let (s, _) = get(format!("/v1/responses/{id}"), "sk-nobody").await;
    assert_eq!(s, 401);
    assert_eq!(got["id"], r1["id"]);
    assert_eq!(got["output"], r1["output"]);
    // Bob cannot read, list, continue or delete it: to him it does not exist.
    for path in [
        format!("/v1/responses/{id}"),
        format!("/v1/responses/{id}/input_items"),
    ] {
        let (s, e) = get(path, BOB).await;
        assert_eq!(s, 404, "{e}");
        assert_eq!(e["error"]["code"], "response_not_found");
    }
    let (s, e) = post(
        &gw,
        "/v1/responses",
        Some(BOB),
        &json!({"model": "up-chat/echo", "input": "more", "previous_response_id": id}),
    )
    .await;
    assert_eq!(s, 404, "{e}");
    assert_eq!(e["error"]["code"], "previous_response_not_found");
    assert_eq!(e["error"]["param"], "previous_response_id");
    let bob_delete = reqwest::Client::new()
        .delete(format!("{}/v1/responses/{id}", gw.url()))
        .bearer_auth(BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(bob_delete.status().as_u16(), 404);
    // Alice continues it, and references its output item by id.
    let item = r1["output"][0]["id"].as_str().unwrap().to_string();
    let (s, r2) = post(
        &gw,
        "/v1/responses",
        Some(ALICE),
        &json!({"model": "up-messages/echo",
        "input": [{"type": "item_reference", "id": item}, {"role": "user", "content": "and?"}]}),
    )
    .await;
    assert_eq!(s, 200, "{r2}");
    let up = mock.requests().pop().unwrap().json.unwrap();
    assert_eq!(
        up["messages"][0]["role"], "assistant",
        "the referenced item went up: {up}"
    );
    let (s, e) = post(
        &gw,
        "/v1/responses",
        Some(ALICE),
        &json!({"model": "up-messages/echo",
        "input": [{"type": "item_reference", "id": "msg_nobody"}]}),
    )
    .await;
    assert_eq!(s, 404, "{e}");
    assert_eq!(e["error"]["code"], "item_not_found");
    // `store: false` keeps nothing.
    let (s, r3) = post(
        &gw,
        "/v1/responses",
        Some(ALICE),
        &json!({"model": "up-chat/echo", "input": "forget me", "store": false}),
    )
    .await;
    assert_eq!(s, 200);
    let (s, _) = get(
        format!("/v1/responses/{}", r3["id"].as_str().unwrap()),
        ALICE,
    )
    .await;
    assert_eq!(s, 404);
    // Deleted, it is gone for good.
    let deleted: Value = reqwest::Client::new()
        .delete(format!("{}/v1/responses/{id}", gw.url()))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        deleted,
        json!({"id": id, "object": "response", "deleted": true})
    );
    let (s, _) = get(format!("/v1/responses/{id}"), ALICE).await;
    assert_eq!(s, 404);
    // A previous response nobody holds, translated: OpenAI's 404, never a silent drop.
    let (s, e) = post(
        &gw,
        "/v1/responses",
        Some(ALICE),
        &json!({"model": "up-gemini/echo", "input": "x", "previous_response_id": "resp_nowhere"}),
    )
    .await;
    assert_eq!(s, 404, "{e}");
    // Passed through, the Responses backend answers for ids it may hold (the mock: its 404).
    let (s, e) = post(&gw, "/v1/responses", Some(ALICE), &json!({"model": "up-responses/echo", "input": "x", "previous_response_id": "resp_nowhere"})).await;
    assert_eq!(s, 404, "{e}");
    assert_eq!(
        mock.requests().pop().unwrap().json.unwrap()["previous_response_id"],
        "resp_nowhere"
    );
}

#[tokio::test]
async fn a_thread_is_served_for_backends_that_keep_none_and_goes_on_after_a_restart() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let tools = json!([{"name": "lookup", "description": "Looks a thing up.",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]);
    for stream in [false, true] {
        let gw = gateway(&mock, dir.path(), Vec::new()).await;
        let (s, m1) = post(
            &gw,
            "/v1/messages",
            None,
            &json!({"model": "up-chat/agent+think", "max_tokens": 512, "stream": stream,
            "system": "be brief", "tools": tools, "thread": {"type": "create"},
            "messages": [{"role": "user", "content": "look two things up"}]}),
        )
        .await;
        assert_eq!(s, 200, "{m1}");
        let uses: Vec<Value> = m1["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .cloned()
            .collect();
        assert_eq!(uses.len(), 2, "{m1}");
        let up = mock.requests().pop().unwrap().json.unwrap();
        assert!(up.get("thread").is_none(), "{up}");
        // Restarted: the thread is in the data directory.
        gw.shutdown().await.unwrap();
        let gw = gateway(&mock, dir.path(), Vec::new()).await;
        let results: Vec<Value> = uses
            .iter()
            .map(|u| json!({"type": "tool_result", "tool_use_id": u["id"], "content": "found"}))
            .collect();
        // Only the tool results, no system or tools: the kept ones go up, to a Messages
        // backend this time (passed through, the thread expanded by the gateway).
        let (s, m2) = post(
            &gw,
            "/v1/messages",
            None,
            &json!({"model": "up-messages/agent+think", "max_tokens": 512, "stream": stream,
            "thread": {"type": "continue", "previous_message_id": m1["id"]},
            "messages": [{"role": "user", "content": results}]}),
        )
        .await;
        assert_eq!(s, 200, "stream {stream}: {m2}");
        let up = mock.requests().pop().unwrap().json.unwrap();
        assert_eq!(up["messages"].as_array().unwrap().len(), 3, "{up}");
        assert_eq!(up["system"], "be brief");
        assert_eq!(up["tools"][0]["name"], "lookup");
        assert!(up.get("thread").is_none());
        let (s, e) = post(
            &gw,
            "/v1/messages",
            None,
            &json!({"model": "up-chat/echo", "max_tokens": 64,
            "thread": {"type": "continue", "previous_message_id": "msg_nobody"}, "messages": []}),
        )
        .await;
        assert_eq!(s, 404, "{e}");
        assert_eq!(e["error"]["details"]["error_code"], "thread_not_found");
        gw.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn without_a_store_threads_are_refused_with_the_fallback_signal_and_references_named() {
    let mock = MockServer::start().await;
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        ..GatewayConfig::default()
    };
    let gw = start(
        gateway_for(&mock.base_url(), config, env(), &[]),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let (s, e) = post(
        &gw,
        "/v1/messages",
        None,
        &json!({"model": "up-chat/echo", "max_tokens": 64,
        "thread": {"type": "create"}, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(s, 400, "{e}");
    assert_eq!(
        e["error"]["details"]["error_code"],
        "thread_unsupported_request"
    );
    let (s, e) = post(
        &gw,
        "/v1/responses",
        None,
        &json!({"model": "up-chat/echo", "input": "x", "previous_response_id": "resp_1"}),
    )
    .await;
    assert_eq!(s, 404, "{e}");
    assert_eq!(e["error"]["code"], "previous_response_not_found");
    let r = reqwest::get(format!("{}/v1/responses/resp_1", gw.url()))
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let e: Value = r.json().await.unwrap();
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("keeps no responses"),
        "{e}"
    );
}

#[tokio::test]
async fn a_kept_history_counts_toward_the_context_window_of_the_backend_it_goes_to() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    // Room for a few hundred bytes of prompt: the history below does not fit.
    let extra = ["backends.up-chat.context_window=300".to_string()];
    let gw = gateway_with(&mock, dir.path(), Vec::new(), &extra).await;
    let long = "a long first question ".repeat(100);
    let (s, r1) = post(
        &gw,
        "/v1/responses",
        None,
        &json!({"model": "up-messages/echo", "input": long}),
    )
    .await;
    assert_eq!(s, 200, "{r1}");
    let before = mock.requests().len();
    let (s, e) = post(
        &gw,
        "/v1/responses",
        None,
        &json!({"model": "up-chat/echo", "input": "short",
        "previous_response_id": r1["id"]}),
    )
    .await;
    assert_eq!(s, 400, "{e}");
    assert_eq!(e["error"]["code"], "context_length_exceeded", "{e}");
    assert_eq!(
        mock.requests().len(),
        before,
        "refused before any upstream call"
    );
}

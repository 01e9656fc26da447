//! The state the mock keeps between calls, over real HTTP: stored Responses responses
//! (`store`, `previous_response_id`, `item_reference`, `GET`/`DELETE /v1/responses/{id}`,
//! `input_items`) and Anthropic message threads (`thread: create/continue`), each
//! refused in the provider's shape when the server does not hold what is referenced.

mod common;

use common::*;
use serde_json::{json, Value};
use switchyard_mock::{MockConfig, MockServer};

const THREADS_BETA: &str = "message-threads-2026-08-12";

async fn post_responses(mock: &MockServer, body: &Value) -> (u16, Value) {
    let r = client()
        .post(format!("{}/responses", mock.base_url()))
        .json(body)
        .send()
        .await
        .expect("request reaches the mock");
    let (status, _, value) = json_of(r).await;
    (status, value)
}

async fn get(url: String) -> (u16, Value) {
    let (status, _, value) = json_of(client().get(url).send().await.unwrap()).await;
    (status, value)
}

async fn delete(url: String) -> (u16, Value) {
    let (status, _, value) = json_of(client().delete(url).send().await.unwrap()).await;
    (status, value)
}

/// The `response` object of a streamed call's `response.completed` event.
async fn streamed_response(mock: &MockServer, body: &Value) -> Value {
    let r = client()
        .post(format!("{}/responses", mock.base_url()))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let text = r.text().await.unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|e| e["type"] == "response.completed")
        .map(|e| e["response"].clone())
        .unwrap_or_else(|| panic!("no response.completed in {text}"))
}

fn function_tools() -> Value {
    let params =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    json!([{"type": "function", "name": "weather", "parameters": params},
           {"type": "function", "name": "time", "parameters": params}])
}

/// The `call_id`s of a reply's function calls.
fn call_ids(reply: &Value) -> Vec<String> {
    reply["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call")
        .map(|i| i["call_id"].as_str().unwrap().to_string())
        .collect()
}

fn output_text(reply: &Value) -> String {
    reply["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "message")
        .flat_map(|i| i["content"].as_array().unwrap().iter())
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect()
}

fn outputs(calls: &[String], results: &[&str]) -> Value {
    calls
        .iter()
        .zip(results)
        .map(|(c, r)| json!({"type": "function_call_output", "call_id": c, "output": r}))
        .collect()
}

#[tokio::test]
async fn a_stored_response_is_read_listed_and_deleted() {
    let mock = MockServer::start().await;
    let (status, reply) =
        post_responses(&mock, &json!({"model": "echo", "input": "hello there"})).await;
    assert_eq!(status, 200, "{reply}");
    let id = reply["id"].as_str().unwrap().to_string();
    let url = format!("{}/responses/{id}", mock.base_url());

    let (status, got) = get(url.clone()).await;
    assert_eq!((status, &got), (200, &reply), "GET returns what POST did");

    let (status, list) = get(format!("{url}/input_items")).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["object"], "list");
    assert_eq!(list["has_more"], false);
    let data = list["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{list}");
    assert_eq!(data[0]["type"], "message");
    assert_eq!(data[0]["role"], "user");
    assert_eq!(
        data[0]["content"][0],
        json!({"type": "input_text", "text": "hello there"})
    );
    let item_id = data[0]["id"].as_str().expect("stored items have ids");
    assert_eq!(
        (list["first_id"].as_str(), list["last_id"].as_str()),
        (Some(item_id), Some(item_id))
    );

    let (status, deleted) = delete(url.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(
        deleted,
        json!({"id": id, "object": "response", "deleted": true})
    );

    let not_found = json!({"error": {"message": format!("Response with id '{id}' not found."),
        "type": "invalid_request_error", "param": null, "code": null}});
    assert_eq!(get(url.clone()).await, (404, not_found.clone()));
    assert_eq!(
        get(format!("{url}/input_items")).await,
        (404, not_found.clone())
    );
    assert_eq!(delete(url).await, (404, not_found));
}

#[tokio::test]
async fn a_three_turn_chain_answers_from_the_whole_history() {
    let mock = MockServer::start().await;
    let model = "agent+think";
    // Turn 1: the agent calls both tools.
    let (status, first) = post_responses(
        &mock,
        &json!({"model": model, "input": "plan a trip", "tools": function_tools()}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let calls = call_ids(&first);
    assert_eq!(calls.len(), 2, "{first}");

    // Turn 2 (streamed): only the two outputs, the rest held by the server.
    let second = streamed_response(
        &mock,
        &json!({"model": model, "stream": true, "previous_response_id": first["id"],
                "input": outputs(&calls, &["sunny", "noon"]), "tools": function_tools()}),
    )
    .await;
    let calls = call_ids(&second);
    assert_eq!(calls.len(), 1, "round 1 of the agent: {second}");

    // Turn 3: one output; the answer quotes every result of the turn, from all three.
    let (status, third) = post_responses(
        &mock,
        &json!({"model": model, "previous_response_id": second["id"],
                "input": outputs(&calls, &["dry"]), "tools": function_tools()}),
    )
    .await;
    assert_eq!(status, 200, "{third}");
    assert_eq!(
        output_text(&third),
        "Done after 2 tool rounds. The tools returned: sunny; noon; dry"
    );
    let input_tokens = |r: &Value| r["usage"]["input_tokens"].as_u64().unwrap();
    assert!(
        input_tokens(&third) > input_tokens(&second)
            && input_tokens(&second) > input_tokens(&first)
    );

    // The request is recorded as it came: the id and one output, no history.
    let sent = mock.requests().pop().unwrap().json.unwrap();
    assert_eq!(sent["previous_response_id"], second["id"]);
    assert_eq!(sent["input"].as_array().unwrap().len(), 1);

    // The third response's input items are the whole conversation before it.
    let url = format!(
        "{}/responses/{}/input_items?order=asc&limit=100",
        mock.base_url(),
        third["id"].as_str().unwrap()
    );
    let (_, list) = get(url).await;
    let kinds: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
            "reasoning",
            "function_call",
            "function_call_output"
        ],
        "{list}"
    );
    let (_, newest) = get(format!(
        "{}/responses/{}/input_items?limit=2",
        mock.base_url(),
        third["id"].as_str().unwrap()
    ))
    .await;
    assert_eq!(
        newest["data"][0]["type"], "function_call_output",
        "desc by default: {newest}"
    );
    assert_eq!(newest["has_more"], true);
}

#[tokio::test]
async fn item_references_stand_for_the_stored_items() {
    let mock = MockServer::start().await;
    let (_, first) = post_responses(
        &mock,
        &json!({"model": "think+tools", "input": "weather in Paris?", "tools": function_tools()}),
    )
    .await;
    let output = first["output"].as_array().unwrap();
    let reasoning = output
        .iter()
        .find(|i| i["type"] == "reasoning")
        .expect("reasoning");
    let call = output
        .iter()
        .find(|i| i["type"] == "function_call")
        .expect("call");

    // The call only by reference: without it the output would answer no call (a 400).
    let body = json!({"model": "tools", "tools": function_tools(), "input": [
        {"role": "user", "content": "weather in Paris?"},
        {"type": "item_reference", "id": reasoning["id"]},
        {"type": "item_reference", "id": call["id"]},
        {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny, 21C"},
    ]});
    let (status, second) = post_responses(&mock, &body).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(output_text(&second), "The tool returned: sunny, 21C");

    let url = format!(
        "{}/responses/{}/input_items?order=asc",
        mock.base_url(),
        second["id"].as_str().unwrap()
    );
    let (_, list) = get(url).await;
    let data = list["data"].as_array().unwrap();
    assert_eq!(
        &data[1], reasoning,
        "the reference is stored as the item it named"
    );
    assert_eq!(&data[2], call);
}

#[tokio::test]
async fn references_not_held_are_refused_in_openai_shape() {
    let mock = MockServer::start().await;
    let (status, e) = post_responses(
        &mock,
        &json!({"model": "echo", "previous_response_id": "resp_nope", "input": "hi"}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(
        e,
        json!({"error": {"message": "Previous response with id 'resp_nope' not found.",
            "type": "invalid_request_error", "param": "previous_response_id",
            "code": "previous_response_not_found"}})
    );

    let (status, e) = post_responses(
        &mock,
        &json!({"model": "echo", "input": [{"type": "item_reference", "id": "rs_nope"}]}),
    )
    .await;
    assert_eq!(status, 404);
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Item with id 'rs_nope' not found."),
        "{e}"
    );
    assert_eq!(
        (&e["error"]["param"], &e["error"]["code"]),
        (&json!("input"), &Value::Null)
    );

    let (status, e) = post_responses(
        &mock,
        &json!({"model": "echo", "input": ["x", {"type": "item_reference"}]}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(e["error"]["param"], "input[1].id", "{e}");

    let (status, e) = post_responses(
        &mock,
        &json!({"model": "echo", "previous_response_id": 7, "input": "hi"}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(e["error"]["code"], "invalid_type", "{e}");
}

#[tokio::test]
async fn store_false_keeps_nothing() {
    let mock = MockServer::start().await;
    let (status, reply) = post_responses(
        &mock,
        &json!({"model": "think", "input": "hi", "store": false}),
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    let id = reply["id"].as_str().unwrap();
    assert_eq!(
        get(format!("{}/responses/{id}", mock.base_url())).await.0,
        404
    );
    let (status, _) = post_responses(
        &mock,
        &json!({"model": "echo", "previous_response_id": id, "input": "again"}),
    )
    .await;
    assert_eq!(status, 404);
    let reasoning = &reply["output"][0];
    assert_eq!(reasoning["type"], "reasoning");
    let (status, _) = post_responses(
        &mock,
        &json!({"model": "echo", "input": [{"type": "item_reference", "id": reasoning["id"]}]}),
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn the_oldest_response_is_forgotten_past_the_bound() {
    let mock = MockServer::start_with(MockConfig {
        keep_state: 2,
        ..MockConfig::default()
    })
    .await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let (_, reply) = post_responses(
            &mock,
            &json!({"model": "echo", "input": format!("turn {n}")}),
        )
        .await;
        ids.push(reply["id"].as_str().unwrap().to_string());
    }
    let status = |id: &String| get(format!("{}/responses/{id}", mock.base_url()));
    assert_eq!(status(&ids[0]).await.0, 404);
    assert_eq!(status(&ids[1]).await.0, 200);
    assert_eq!(status(&ids[2]).await.0, 200);
    let (code, _) = post_responses(
        &mock,
        &json!({"model": "echo", "previous_response_id": ids[0], "input": "more"}),
    )
    .await;
    assert_eq!(code, 404);
}

// Anthropic message threads.

async fn post_messages(
    mock: &MockServer,
    body: &Value,
    beta: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request = client()
        .post(format!("{}/v1/messages", mock.url()))
        .json(body);
    if let Some(beta) = beta {
        request = request.header("anthropic-beta", beta);
    }
    json_of(request.send().await.unwrap()).await
}

/// The `message` of a streamed call's `message_start`, with the content blocks its
/// `content_block_start` events open.
async fn streamed_message(mock: &MockServer, body: &Value) -> Value {
    let r = client()
        .post(format!("{}/v1/messages", mock.url()))
        .header("anthropic-beta", THREADS_BETA)
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let text = r.text().await.unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    let mut message = events
        .iter()
        .find(|e| e["type"] == "message_start")
        .unwrap()["message"]
        .clone();
    message["content"] = events
        .iter()
        .filter(|e| e["type"] == "content_block_start")
        .map(|e| e["content_block"].clone())
        .collect();
    message
}

fn anthropic_tools() -> Value {
    let schema =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    json!([{"name": "weather", "input_schema": schema}, {"name": "time", "input_schema": schema}])
}

fn tool_results(reply: &Value, results: &[&str]) -> Value {
    let uses: Vec<&Value> = reply["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .collect();
    assert_eq!(uses.len(), results.len(), "{reply}");
    let blocks: Vec<Value> = uses
        .iter()
        .zip(results)
        .map(|(u, r)| json!({"type": "tool_result", "tool_use_id": u["id"], "content": r}))
        .collect();
    json!([{"role": "user", "content": blocks}])
}

#[tokio::test]
async fn a_thread_is_created_and_continued_over_three_turns() {
    let mock = MockServer::start().await;
    let thinking = json!({"type": "enabled", "budget_tokens": 1024});
    let model = "agent+think";
    let (status, _, first) = post_messages(
        &mock,
        &json!({"model": model, "max_tokens": 1024, "thinking": thinking, "system": "be brief",
                "tools": anthropic_tools(), "thread": {"type": "create"},
                "messages": [{"role": "user", "content": "plan a trip"}]}),
        Some(THREADS_BETA),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert!(
        first.get("thread").is_none(),
        "the reply's shape is unchanged: {first}"
    );

    // Turn 2 (streamed): the tool results alone, no tools, no system, no history.
    let second = streamed_message(
        &mock,
        &json!({"model": model, "max_tokens": 1024, "thinking": thinking, "stream": true,
                "thread": {"type": "continue", "previous_message_id": first["id"]},
                "messages": tool_results(&first, &["sunny", "noon"])}),
    )
    .await;
    assert_eq!(second["content"][0]["type"], "thinking", "{second}");
    assert_eq!(
        second["content"][1]["name"], "weather",
        "tools kept from the thread: {second}"
    );

    let (status, _, third) = post_messages(
        &mock,
        &json!({"model": model, "max_tokens": 1024, "thinking": thinking,
                "thread": {"type": "continue", "previous_message_id": second["id"]},
                "messages": tool_results(&second, &["dry"])}),
        Some(THREADS_BETA),
    )
    .await;
    assert_eq!(status, 200, "{third}");
    let text = third["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "text")
        .unwrap();
    assert_eq!(
        text["text"],
        "Done after 2 tool rounds. The tools returned: sunny; noon; dry"
    );

    // Recorded as received: one message, no tools.
    let sent = mock.requests().pop().unwrap().json.unwrap();
    assert_eq!(sent["messages"].as_array().unwrap().len(), 1);
    assert!(sent.get("tools").is_none());
}

#[tokio::test]
async fn a_thread_not_held_is_a_404_in_anthropic_shape() {
    let mock = MockServer::start().await;
    let (status, headers, e) = post_messages(
        &mock,
        &json!({"model": "echo", "max_tokens": 64,
                "thread": {"type": "continue", "previous_message_id": "msg_nope"},
                "messages": [{"role": "user", "content": "hi"}]}),
        Some(THREADS_BETA),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(e["type"], "error");
    assert_eq!(e["error"]["type"], "not_found_error");
    assert_eq!(e["error"]["details"]["error_code"], "thread_not_found");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("msg_nope"),
        "{e}"
    );
    assert_eq!(
        headers["request-id"].to_str().unwrap(),
        e["request_id"].as_str().unwrap()
    );
}

#[tokio::test]
async fn no_threads_refuses_threads_as_a_stateless_server_does() {
    let mock = MockServer::start().await;
    let body = json!({"model": "echo+no-threads", "max_tokens": 64, "thread": {"type": "create"},
                      "messages": [{"role": "user", "content": "hi"}]});
    let (status, _, e) =
        post_messages(&mock, &body, Some(&format!("tools-1, {THREADS_BETA}"))).await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(e["error"]["type"], "invalid_request_error");
    assert_eq!(
        e["error"]["details"]["error_code"],
        "thread_unsupported_request"
    );

    // The client's fallback, the whole history without `thread`, is served.
    let mut whole = body.clone();
    whole.as_object_mut().unwrap().remove("thread");
    let (status, _, reply) = post_messages(&mock, &whole, Some(THREADS_BETA)).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["content"][0]["text"], "hi");
}

#[tokio::test]
async fn without_the_beta_a_thread_field_is_not_read() {
    let mock = MockServer::start().await;
    let body = json!({"model": "echo", "max_tokens": 64,
                      "thread": {"type": "continue", "previous_message_id": "msg_nope"},
                      "messages": [{"role": "user", "content": "as before"}]});
    let (status, _, reply) = post_messages(&mock, &body, None).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["content"][0]["text"], "as before");
}

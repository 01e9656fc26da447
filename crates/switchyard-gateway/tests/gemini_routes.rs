//! Gemini's routes beside generateContent: `:countTokens` (both body forms; the backend's
//! own count when it has one, the request translated when the dialects differ, else the
//! estimate), a Messages client's count against a Gemini backend, and the models routes
//! (`GET /v1beta/models/{model}`, `/v1/models` in Gemini's shape for a Gemini caller).

mod common;

use common::Harness;
use serde_json::{json, Value};

async fn post(h: &Harness, path: &str, headers: &[(&str, &str)], body: Value) -> (u16, Value) {
    let mut r = h.http.post(format!("{}{path}", h.url)).json(&body);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn get(h: &Harness, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut r = h.http.get(format!("{}{path}", h.url));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn contents() -> Value {
    json!([{"role": "user", "parts": [{"text": "count these words for me"}]}])
}

#[tokio::test]
async fn count_tokens_asks_the_backend_that_counts_and_estimates_otherwise() {
    let h = Harness::start().await;
    let wrapped = json!({"generateContentRequest": {
        "model": "models/whatever",
        "contents": contents(),
        "system_instruction": {"parts": [{"text": "be brief"}]},
        "tools": [{"function_declarations": [{"name": "f", "parameters_json_schema": {"type": "object"}}]}]
    }});
    for body in [json!({"contents": contents()}), wrapped] {
        for upstream in ["gemini", "messages", "chat", "responses"] {
            h.mock.clear();
            let path = format!("/v1beta/models/up-{upstream}/echo:countTokens");
            let (s, b) = post(&h, &path, &[], body.clone()).await;
            assert_eq!(s, 200, "{upstream}: {b}");
            assert!(b["totalTokens"].as_u64().unwrap() > 0, "{upstream}: {b}");
            assert_eq!(b.as_object().unwrap().len(), 1, "{b}");
            let sent = h.mock.requests();
            match upstream {
                "gemini" => {
                    assert_eq!(sent.len(), 1);
                    assert!(
                        sent[0].path.ends_with("/models/echo:countTokens"),
                        "{}",
                        sent[0].path
                    );
                    let j = sent[0].json.as_ref().unwrap();
                    assert_eq!(j["generateContentRequest"]["model"], "models/echo", "{j}");
                    assert!(j["generateContentRequest"]["contents"].is_array(), "{j}");
                }
                "messages" => {
                    assert_eq!(sent.len(), 1);
                    assert_eq!(sent[0].path, "/v1/messages/count_tokens");
                    let j = sent[0].json.as_ref().unwrap();
                    assert_eq!(j["model"], "echo", "{j}");
                    assert!(j.get("max_tokens").is_none(), "{j}");
                }
                _ => assert!(sent.is_empty(), "{upstream}: estimated, nobody asked"),
            }
        }
    }
    // A Messages client's count against a Gemini backend: the backend's count, in
    // Anthropic's shape.
    h.mock.clear();
    let (s, b) = post(
        &h,
        "/v1/messages/count_tokens",
        &[],
        json!({"model": "up-gemini/echo", "messages": [{"role": "user", "content": "hi there"}]}),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(b["input_tokens"].as_u64().unwrap() > 0, "{b}");
    assert!(h.mock.requests()[0].path.ends_with(":countTokens"));
    // A body that is no request is refused in Gemini's shape.
    let (s, b) = post(
        &h,
        "/v1beta/models/up-chat/echo:countTokens",
        &[],
        json!({"generateContentRequest": 3}),
    )
    .await;
    assert_eq!(
        (s, b["error"]["status"].as_str()),
        (400, Some("INVALID_ARGUMENT")),
        "{b}"
    );
}

#[tokio::test]
async fn one_model_and_the_lists_answer_in_the_callers_shape() {
    let h = Harness::start().await;
    let (s, b) = get(&h, "/v1beta/models/up-chat/echo", &[]).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["name"], "models/up-chat/echo");
    assert!(b["supportedGenerationMethods"]
        .as_array()
        .unwrap()
        .contains(&json!("countTokens")));
    let (s, b) = get(&h, "/v1beta/models/models/up-chat/echo", &[]).await;
    assert_eq!(
        (s, b["name"].as_str()),
        (200, Some("models/up-chat/echo")),
        "{b}"
    );
    let (s, b) = get(&h, "/v1beta/models/nobody/nothing", &[]).await;
    assert_eq!(
        (s, b["error"]["status"].as_str()),
        (404, Some("NOT_FOUND")),
        "{b}"
    );

    let (s, b) = get(&h, "/v1/models", &[("x-goog-api-key", "k")]).await;
    assert_eq!(s, 200, "{b}");
    assert!(b["models"].is_array(), "{b}");
    let (_, b) = get(&h, "/v1/models?key=k", &[]).await;
    assert!(b["models"].is_array(), "{b}");
    let (_, b) = get(&h, "/v1/models", &[]).await;
    assert_eq!(b["object"], "list", "{b}");

    let (s, b) = get(&h, "/v1/models/up-chat/echo", &[]).await;
    assert_eq!(
        (s, b["id"].as_str(), b["object"].as_str()),
        (200, Some("up-chat/echo"), Some("model")),
        "{b}"
    );
    let (_, b) = get(
        &h,
        "/v1/models/up-chat/echo",
        &[("anthropic-version", "2023-06-01")],
    )
    .await;
    assert_eq!(b["type"], "model", "{b}");
    let (_, b) = get(&h, "/v1/models/up-chat/echo", &[("x-goog-api-key", "k")]).await;
    assert_eq!(b["name"], "models/up-chat/echo", "{b}");
}

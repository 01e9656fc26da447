//! The mock's embeddings routes: deterministic vectors in both shapes, float and base64,
//! usage counted, faults from the model name.

use serde_json::{json, Value};
use switchyard_mock::embeddings::{vector, DEFAULT_DIMENSIONS};
use switchyard_mock::MockServer;
use switchyard_wire::embed::{gemini, openai, vector_to_base64};

async fn post(url: String, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .expect("reaches the mock");
    let status = r.status().as_u16();
    let bytes = r.bytes().await.expect("body");
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[test]
fn vectors_are_the_documented_bytes_of_sha256() {
    // Python: [int.from_bytes(hashlib.sha256(b"hello#0").digest()[i:i+1], "little", signed=True) / 128 for i in range(3)]
    let v = vector("hello", 40);
    assert_eq!(v[..3], [-0.7421875, -0.6484375, -0.0078125]);
    assert_eq!(v.len(), 40);
    assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
    assert_eq!(vector("hello", 40), v, "deterministic");
    assert_ne!(vector("hello!", 3), vector("hello", 3));
    // Component 32 starts the second block.
    assert_eq!(vector("hello", 33)[32], vector("hello", 40)[32]);
}

#[tokio::test]
async fn openai_route_answers_float_and_base64_with_usage() {
    let mock = MockServer::start().await;
    let url = format!("{}/embeddings", mock.base_url());
    let (status, body) = post(
        url.clone(),
        json!({"model": "text-embedding-3-small", "input": ["hello", "a longer text"]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let e = openai::decode_reply(body.to_string().as_bytes()).unwrap();
    assert_eq!(
        e.vectors,
        vec![
            vector("hello", DEFAULT_DIMENSIONS),
            vector("a longer text", DEFAULT_DIMENSIONS)
        ]
    );
    // ceil(5/4) + ceil(13/4)
    assert_eq!(e.input_tokens, Some(2 + 4));
    assert_eq!(body["model"], "text-embedding-3-small");

    let (_, body) = post(
        url.clone(),
        json!({"model": "m", "input": "hello", "encoding_format": "base64", "dimensions": 3}),
    )
    .await;
    assert_eq!(
        body["data"][0]["embedding"],
        vector_to_base64(&vector("hello", 3))
    );

    let (_, body) = post(url, json!({"model": "m", "input": [[1, 2, 3]]})).await;
    let e = openai::decode_reply(body.to_string().as_bytes()).unwrap();
    assert_eq!(e.vectors[0], vector("1 2 3", DEFAULT_DIMENSIONS));
    assert_eq!(e.input_tokens, Some(3));
}

#[tokio::test]
async fn gemini_routes_answer_batch_and_single() {
    let mock = MockServer::start().await;
    let batch = format!(
        "{}/v1beta/models/gemini-embedding-001:batchEmbedContents",
        mock.url()
    );
    let (status, body) = post(batch, json!({"requests": [
        {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "x"}]}, "outputDimensionality": 4},
        {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "y"}]}, "outputDimensionality": 4}
    ]})).await;
    assert_eq!(status, 200, "{body}");
    let e = gemini::decode_reply(body.to_string().as_bytes()).unwrap();
    assert_eq!(e.vectors, vec![vector("x", 4), vector("y", 4)]);
    assert_eq!(e.input_tokens, Some(2));

    let single = format!(
        "{}/v1beta/models/gemini-embedding-001:embedContent",
        mock.url()
    );
    let (_, body) = post(single, json!({"content": {"parts": [{"text": "x"}]}})).await;
    assert_eq!(
        gemini::decode_reply(body.to_string().as_bytes())
            .unwrap()
            .vectors,
        vec![vector("x", DEFAULT_DIMENSIONS)]
    );
}

#[tokio::test]
async fn faults_apply_in_each_shape() {
    let mock = MockServer::start().await;
    let url = format!("{}/embeddings", mock.base_url());
    let (status, body) = post(
        url.clone(),
        json!({"model": "fault-429-then-ok", "input": "q"}),
    )
    .await;
    assert_eq!(status, 429, "{body}");
    assert!(body["error"]["message"].is_string());
    let (status, _) = post(
        url.clone(),
        json!({"model": "fault-429-then-ok", "input": "q"}),
    )
    .await;
    assert_eq!(status, 200, "the second attempt of the same input succeeds");

    let (status, body) = post(url.clone(), json!({"model": "quota", "input": "q"})).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("insufficient_quota"))
    );

    let (status, body) = post(url.clone(), json!({"model": "no-usage", "input": "q"})).await;
    assert_eq!(status, 200);
    assert!(body.get("usage").is_none());

    let gemini = format!("{}/v1beta/models/fault-503:batchEmbedContents", mock.url());
    let (status, body) = post(
        gemini,
        json!({"requests": [{"content": {"parts": [{"text": "q"}]}}]}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["status"].as_str()),
        (503, Some("UNAVAILABLE"))
    );

    let (status, body) = post(url, json!({"model": "m", "input": []})).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("empty"),
        "{body}"
    );
}

//! `POST /v1/embeddings`: passed through to an OpenAI-shaped backend (the client's body
//! with the model id spliced, the provider's bytes back), translated to Gemini's
//! `batchEmbedContents` for a Gemini-family backend (float or base64 as asked), behind
//! the keys, metered and recorded with input tokens and cost; Gemini's `:embedContent` /
//! `:batchEmbedContents` to either shape; and the official SDKs: OpenAI's
//! `client.embeddings.create` and google-genai's `models.embed_content`
//! (tests/python/sdk_embeddings.py).

mod common;

use common::python::run_sdk_script;
use common::recording::{env, key, records, ALICE, BOB};
use serde_json::{json, Value};
use std::path::Path;
use switchyard::wire::embed::{vector_to_base64, EmbedRequest, EmbedShape};
use switchyard_gateway::BudgetPeriod;
use switchyard_gateway::{start, GatewayConfig, KeySpec, RunningGateway};
use switchyard_mock::embeddings::{vector, DEFAULT_DIMENSIONS};
use switchyard_mock::MockServer;

/// A gateway with `up-gemini` serving embeddings too (in Gemini's shape), `emb` priced
/// at $1 per million input tokens on the mock backends, recording into `dir` when given.
async fn gateway(mock: &MockServer, dir: Option<&Path>, keys: Vec<KeySpec>) -> RunningGateway {
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        keys,
        store: dir.map(Path::to_path_buf),
        ..GatewayConfig::default()
    };
    let extra = [
        "backends.up-gemini.apis=[gemini, embeddings]".to_string(),
        "backends.mock.prices.emb={input: 1, output: 0}".to_string(),
        "backends.up-gemini.prices.emb={input: 1, output: 0}".to_string(),
    ];
    let g = common::gateway_for(&mock.base_url(), config, env(), &extra);
    start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

async fn post(gw: &RunningGateway, key: Option<&str>, body: Value) -> (u16, Vec<u8>) {
    let mut r = reqwest::Client::new()
        .post(format!("{}/v1/embeddings", gw.url()))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(k) = key {
        r = r.header("authorization", format!("Bearer {k}"));
    }
    let r = r.send().await.unwrap();
    (r.status().as_u16(), r.bytes().await.unwrap().to_vec())
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))
}

#[tokio::test]
async fn passed_through_to_an_openai_backend_recorded_and_priced() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let gw = gateway(
        &mock,
        Some(tmp.path()),
        vec![key("alice", "ALICE_KEY", None)],
    )
    .await;

    let (status, body) = post(
        &gw,
        Some(ALICE),
        json!({"model": "mock/emb", "input": ["hello", "x"]}),
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    // The provider's bytes, as the mock wrote them for the model id it was sent.
    let upstream = mock.requests().pop().unwrap();
    assert_eq!(upstream.path, "/v1/embeddings");
    assert_eq!(
        upstream.body_text(),
        r#"{"model":"emb","input":["hello","x"]}"#
    );
    let v = json_of(&body);
    // The provider's bytes but for the model, named as the client named it.
    assert_eq!(v["model"], "mock/emb");
    let want: Vec<Value> = ["hello", "x"]
        .iter()
        .map(|t| json!(vector(t, DEFAULT_DIMENSIONS)))
        .collect();
    assert_eq!(v["data"][0]["embedding"], want[0]);
    assert_eq!(v["data"][1]["embedding"], want[1]);
    assert_eq!(v["usage"]["prompt_tokens"], 3);

    let (_, body) = post(
        &gw,
        Some(ALICE),
        json!({"model": "mock/emb", "input": "hello", "encoding_format": "base64"}),
    )
    .await;
    assert_eq!(
        json_of(&body)["data"][0]["embedding"],
        vector_to_base64(&vector("hello", DEFAULT_DIMENSIONS))
    );

    let (records, _) = records(tmp.path(), 2).await;
    let r = records
        .iter()
        .find(|r| r.usage.map(|u| u.input) == Some(3))
        .expect("the first call's record");
    assert_eq!(r.client_key.as_deref(), Some("alice"));
    assert_eq!((r.backend.as_str(), r.model.as_str()), ("mock", "emb"));
    let e = r.embedding.as_ref().expect("an embeddings record");
    assert_eq!(e.shape, EmbedShape::Openai);
    assert_eq!(e.request, EmbedRequest::texts(["hello", "x"]));
    assert_eq!(r.cost_usd, Some(3.0 / 1_000_000.0));
    // The record keeps the provider's bytes as they came, its model id included.
    let mut upstream_reply = v.clone();
    upstream_reply["model"] = json!("emb");
    assert_eq!(
        r.raw_bytes().unwrap().as_ref(),
        upstream_reply.to_string().as_bytes()
    );
    assert_eq!(
        r.body.as_ref().unwrap().get(),
        r#"{"model":"emb","input":["hello","x"]}"#
    );
    assert!(r.error.is_none());
    // No key anywhere in the data directory.
    for entry in walk(tmp.path()) {
        let text = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&text).contains(ALICE),
            "{}",
            entry.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test]
async fn translated_to_gemini_batch_embed_contents_float_and_base64() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, Some(tmp.path()), vec![]).await;

    let (status, body) = post(&gw, None, json!({"model": "up-gemini/emb", "input": ["hello", "x"], "dimensions": 4, "encoding_format": "base64"})).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let upstream = mock.requests().pop().unwrap();
    assert_eq!(upstream.path, "/v1beta/models/emb:batchEmbedContents");
    assert_eq!(
        upstream.json.unwrap(),
        json!({"requests": [
            {"model": "models/emb", "content": {"parts": [{"text": "hello"}]}, "outputDimensionality": 4},
            {"model": "models/emb", "content": {"parts": [{"text": "x"}]}, "outputDimensionality": 4}
        ]})
    );
    // The reply in OpenAI's shape, exact bytes, base64 of little-endian f32s as asked.
    assert_eq!(
        String::from_utf8(body).unwrap(),
        format!(
            r#"{{"object":"list","data":[{{"object":"embedding","index":0,"embedding":"{}"}},{{"object":"embedding","index":1,"embedding":"{}"}}],"model":"up-gemini/emb","usage":{{"prompt_tokens":3,"total_tokens":3}}}}"#,
            vector_to_base64(&vector("hello", 4)),
            vector_to_base64(&vector("x", 4))
        )
    );

    let (_, body) = post(
        &gw,
        None,
        json!({"model": "up-gemini/emb", "input": "hello"}),
    )
    .await;
    assert_eq!(
        json_of(&body)["data"][0]["embedding"],
        json!(vector("hello", DEFAULT_DIMENSIONS))
    );

    // Gemini's developer API reports no usage: billed an estimate, said so.
    let (_, body) = post(
        &gw,
        None,
        json!({"model": "up-gemini/no-usage", "input": "twelve chars"}),
    )
    .await;
    assert_eq!(json_of(&body)["usage"]["prompt_tokens"], 3);

    let (records, _) = records(tmp.path(), 3).await;
    let r = records
        .iter()
        .find(|r| r.model == "emb" && r.usage.map(|u| u.input) == Some(3))
        .unwrap();
    assert_eq!(r.embedding.as_ref().unwrap().shape, EmbedShape::Gemini);
    assert_eq!(r.cost_usd, Some(3.0 / 1_000_000.0));
    assert_eq!(r.backend, "up-gemini");
    assert!(r.usage_estimated.is_none());
    let estimated = records.iter().find(|r| r.model == "no-usage").unwrap();
    assert_eq!(estimated.usage.unwrap().input, 3);
    assert!(
        estimated
            .usage_estimated
            .as_deref()
            .unwrap()
            .contains("12 characters"),
        "{estimated:?}"
    );
}

#[tokio::test]
async fn refusals_and_upstream_errors_in_openai_shape() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let gw = gateway(
        &mock,
        Some(tmp.path()),
        vec![key("alice", "ALICE_KEY", None)],
    )
    .await;

    let (status, body) = post(&gw, None, json!({"model": "mock/emb", "input": "x"})).await;
    assert_eq!(status, 401);
    assert_eq!(json_of(&body)["error"]["type"], "invalid_request_error");

    let (status, body) = post(
        &gw,
        Some(ALICE),
        json!({"model": "up-chat/emb", "input": "x"}),
    )
    .await;
    assert_eq!(status, 400);
    let message = json_of(&body)["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("does not serve embeddings"), "{message}");

    let (status, body) = post(
        &gw,
        Some(ALICE),
        json!({"model": "mock/emb", "input": "x", "encoding_format": "int8"}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains("encoding_format"));

    // Translated refusals cannot carry token ids to Gemini.
    let (status, body) = post(
        &gw,
        Some(ALICE),
        json!({"model": "up-gemini/emb", "input": [[1, 2]]}),
    )
    .await;
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("text only"));

    let before = mock.received();
    let (status, body) = post(
        &gw,
        Some(ALICE),
        json!({"model": "mock/quota", "input": "x"}),
    )
    .await;
    assert_eq!(status, 429);
    assert_eq!(json_of(&body)["error"]["code"], "insufficient_quota");
    assert_eq!(mock.received(), before + 1);
    let (records, _) = records(tmp.path(), 1).await;
    let failed = records
        .iter()
        .find(|r| r.model == "quota")
        .expect("the failed call is recorded");
    assert_eq!(
        failed.error.as_ref().unwrap().kind,
        "ProviderQuotaExhausted"
    );
    assert!(failed.embedding.is_some());
}

#[tokio::test]
async fn a_key_budget_holds_embeddings_too() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    // bob's $0.00002 cannot cover the 32-byte body's worst case (a token a byte, $1/M).
    let keys = vec![
        key("alice", "ALICE_KEY", Some((1.0, BudgetPeriod::Total))),
        key("bob", "BOB_KEY", Some((0.00002, BudgetPeriod::Total))),
    ];
    let gw = gateway(&mock, Some(tmp.path()), keys).await;
    let body = json!({"model": "mock/emb", "input": "x"});
    let (status, out) = post(&gw, Some(BOB), body.clone()).await;
    assert_eq!(status, 429, "{}", String::from_utf8_lossy(&out));
    assert_eq!(json_of(&out)["error"]["code"], "insufficient_quota");
    assert_eq!(mock.received(), 0);
    let (status, _) = post(&gw, Some(ALICE), body).await;
    assert_eq!(status, 200);
    let (records, _) = records(tmp.path(), 1).await;
    assert_eq!(records[0].cost_usd, Some(1.0 / 1_000_000.0));
}

async fn post_gemini(gw: &RunningGateway, path: &str, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{}/v1beta/models/{path}", gw.url()))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, json_of(&r.bytes().await.unwrap()))
}

#[tokio::test]
async fn gemini_clients_embed_through_either_shape() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, Some(tmp.path()), vec![]).await;
    let batch = json!({"requests": [
        {"model": "models/mock/emb", "content": {"parts": [{"text": "x"}]}, "outputDimensionality": 4},
        {"model": "models/mock/emb", "content": {"parts": [{"text": "y"}]}, "outputDimensionality": 4}
    ]});
    // A Gemini client of an OpenAI-shaped backend: translated to /v1/embeddings.
    let (status, body) = post_gemini(&gw, "mock/emb:batchEmbedContents", batch).await;
    assert_eq!(status, 200, "{body}");
    let upstream = mock.requests().pop().unwrap();
    assert_eq!(upstream.path, "/v1/embeddings");
    assert_eq!(
        upstream.json.unwrap(),
        json!({"model": "emb", "input": ["x", "y"], "dimensions": 4})
    );
    assert_eq!(
        body,
        json!({"embeddings": [{"values": vector("x", 4)}, {"values": vector("y", 4)}], "usageMetadata": {"promptTokenCount": 2, "totalTokenCount": 2}})
    );
    // A Gemini client of a Gemini backend, one input: called as a batch of one.
    let (status, body) = post_gemini(
        &gw,
        "up-gemini/emb:embedContent",
        json!({"content": {"parts": [{"text": "x"}]}, "taskType": "SEMANTIC_SIMILARITY"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let upstream = mock.requests().pop().unwrap();
    assert_eq!(upstream.path, "/v1beta/models/emb:batchEmbedContents");
    assert_eq!(
        upstream.json.unwrap(),
        json!({"requests": [{"model": "models/emb", "content": {"parts": [{"text": "x"}]}, "taskType": "SEMANTIC_SIMILARITY"}]})
    );
    assert_eq!(
        body["embedding"]["values"],
        json!(vector("x", DEFAULT_DIMENSIONS))
    );
    // Refusals in Gemini's shape.
    let (status, body) = post_gemini(
        &gw,
        "up-chat/emb:embedContent",
        json!({"content": {"parts": [{"text": "x"}]}}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT", "{body}");
    let (records, _) = records(tmp.path(), 2).await;
    assert!(records
        .iter()
        .all(|r| r.client_dialect == Some(switchyard::Dialect::Gemini)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_embeds_through_the_gateway() {
    let mock = MockServer::start().await;
    let gw = gateway(&mock, None, vec![]).await;
    let test = "the_openai_sdk_embeds_through_the_gateway";
    let Some(out) = run_sdk_script(test, "sdk_embeddings.py", &gw.url()).await else {
        return;
    };
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        9,
        "{out}"
    );
}

#[tokio::test]
async fn embeddings_are_answered_from_the_cache_passed_through_and_translated() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        store: Some(tmp.path().to_path_buf()),
        cache: switchyard_gateway::cache::CacheConfig {
            mode: switchyard_gateway::cache::CacheMode::ReadWrite,
            ..Default::default()
        },
        ..GatewayConfig::default()
    };
    config.store_options.durability = switchyard_gateway::StoreDurability::Answered;
    let extra = [
        "backends.up-gemini.apis=[gemini, embeddings]".to_string(),
        "backends.mock.prices.emb={input: 1, output: 0}".to_string(),
        "backends.up-gemini.prices.emb={input: 1, output: 0}".to_string(),
    ];
    let g = common::gateway_for(&mock.base_url(), config, env(), &extra);
    let gw = start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    for (model, upstream) in [("mock/emb", 1), ("up-gemini/emb", 2)] {
        let ask = json!({"model": model, "input": ["cache me", "x"], "encoding_format": "float"});
        let (status, first) = post(&gw, None, ask.clone()).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&first));
        assert_eq!(mock.received(), upstream, "{model}: a miss");
        let (status, again) = post(&gw, None, ask).await;
        assert_eq!(status, 200);
        assert_eq!(again, first, "{model}: the same bytes");
        assert_eq!(mock.received(), upstream, "{model}: a hit");
    }
    // Another encoding is another call.
    let (_, base64) = post(
        &gw,
        None,
        json!({"model": "mock/emb", "input": ["cache me", "x"], "encoding_format": "base64"}),
    )
    .await;
    assert_eq!(mock.received(), 3);
    assert!(json_of(&base64)["data"][0]["embedding"].is_string());
    gw.shutdown().await.unwrap();
    let records = switchyard::record::read_records(tmp.path()).unwrap();
    let hits: Vec<_> = records.iter().map(|r| r.cache_hit).collect();
    assert_eq!(hits, [None, Some(1), None, Some(3), None]);
    assert_eq!(records[1].cost_usd, Some(0.0));
    assert!(records[0].cost_usd.is_some_and(|c| c > 0.0));
    assert!(records[1].embedding.is_some());
}

#[tokio::test]
async fn a_route_falls_back_over_embedding_members_and_names_each_attempt() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        store: Some(tmp.path().to_path_buf()),
        ..GatewayConfig::default()
    };
    let extra = [
        "backends.up-gemini.apis=[gemini, embeddings]".to_string(),
        "backends.mock.prices.emb={input: 1, output: 0}".to_string(),
        "backends.up-gemini.prices.emb={input: 2, output: 0}".to_string(),
        "routes.vectors.try=[mock/fault-503, up-gemini/emb]".to_string(),
        "routes.strict.try=[mock/fault-503, up-gemini/emb]".to_string(),
        "routes.strict.on=[quota]".to_string(),
    ];
    let g = common::gateway_for(&mock.base_url(), config, env(), &extra);
    let gw = start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap();

    // The first member's 503 is a listed kind: the call goes on to the Gemini member,
    // translated, and the client sees an OpenAI reply from it.
    for _ in 0..2 {
        let (status, body) = post(
            &gw,
            None,
            json!({"model": "vectors", "input": ["hello", "x"]}),
        )
        .await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let v = json_of(&body);
        assert_eq!(
            v["data"][0]["embedding"],
            json!(vector("hello", DEFAULT_DIMENSIONS))
        );
    }
    // A kind the route does not list is answered as the member gave it.
    let (status, body) = post(&gw, None, json!({"model": "strict", "input": "hello"})).await;
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&body));

    let (mut recs, _) = records(tmp.path(), 3).await;
    recs.sort_by_key(|r| r.number);
    let (first, second, strict) = (&recs[0], &recs[1], &recs[2]);
    for r in [first, second] {
        assert_eq!(r.route.as_deref(), Some("vectors"));
        assert_eq!(r.reference, "up-gemini/emb");
        assert!(r.error.is_none());
        let input = r.usage.expect("usage").input as f64;
        // At the member's price that served ($2 per million), not the first one's.
        assert_eq!(r.cost_usd, Some(input * 2.0 / 1e6));
    }
    let refs = |r: &switchyard::record::CallRecord| -> Vec<Option<String>> {
        r.attempts.iter().map(|a| a.reference.clone()).collect()
    };
    assert_eq!(
        refs(first),
        [
            Some("mock/fault-503".to_string()),
            Some("up-gemini/emb".to_string())
        ]
    );
    assert_eq!(first.attempts[0].status, Some(503));
    assert_eq!(first.attempts[1].number, 2);
    // The second found the first member cooling (503 without Retry-After: the route's
    // default cooldown) and went straight to the next.
    assert_eq!(refs(second), [Some("up-gemini/emb".to_string())]);
    assert_eq!(strict.route.as_deref(), Some("strict"));
    assert_eq!(strict.reference, "mock/fault-503");
    assert_eq!(
        strict.error.as_ref().map(|e| e.kind.as_str()),
        Some("Overloaded")
    );
    gw.shutdown().await.unwrap();
}

//! Gemini's routes beside generateContent: `:countTokens` (both body forms; the backend's
//! own count when it has one, the request translated when the dialects differ, else the
//! estimate), a Messages client's count against a Gemini backend, and the models routes
//! (`GET /v1beta/models/{model}`, `/v1/models` in Gemini's shape for a Gemini caller);
//! and every one of them with the model as the resource, `/v1beta/{backend}/{model}:…`
//! (what the AI SDK's Google provider sends for `mock/echo`), under `/v1/` too: the same
//! call as the `models/` form, behind the same keys, with Google's collections and names
//! that are no backend answered 404 in Gemini's shape.

mod common;

use common::{gateway_for, Harness};
use serde_json::{json, Value};
use switchyard::env::MapEnv;
use switchyard_gateway::{start, GatewayConfig, KeySecret, KeySpec};

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

/// A POST's status, content type and body text.
async fn post_text(
    h: &Harness,
    path: &str,
    key: Option<&str>,
    body: &Value,
) -> (u16, String, String) {
    let mut r = h
        .http
        .post(format!("{}{path}", h.url))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(key) = key {
        r = r.header("x-goog-api-key", key);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    let kind = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, kind, r.text().await.unwrap())
}

/// What a reply says, without what differs between two calls (ids, timestamps): a
/// whole reply's text, a stream's text, a count, embeddings.
fn gist(method: &str, body: &str) -> Value {
    let text_of = |v: &Value| {
        v["candidates"][0]["content"]["parts"]
            .as_array()
            .map(|parts| {
                parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<String>()
            })
            .unwrap_or_default()
    };
    match method {
        "generateContent" => json!(text_of(&serde_json::from_str(body).unwrap())),
        "streamGenerateContent?alt=sse" => json!(body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| text_of(&serde_json::from_str(d).unwrap()))
            .collect::<String>()),
        _ => serde_json::from_str(body).unwrap(),
    }
}

fn body_for(method: &str) -> Value {
    match method {
        "embedContent" => json!({"content": {"parts": [{"text": "embed me"}]}}),
        "batchEmbedContents" => json!({"requests": [
            {"model": "models/mock/emb", "content": {"parts": [{"text": "x"}]}},
            {"model": "models/mock/emb", "content": {"parts": [{"text": "y"}]}}
        ]}),
        _ => json!({"contents": [{"role": "user", "parts": [{"text": "say the same twice"}]}]}),
    }
}

const METHODS: [&str; 5] = [
    "generateContent",
    "streamGenerateContent?alt=sse",
    "countTokens",
    "embedContent",
    "batchEmbedContents",
];

#[tokio::test]
async fn every_method_takes_the_backend_first_as_it_takes_models_slash() {
    let h = Harness::start().await;
    for upstream in ["mock", "up-gemini", "up-chat", "up-messages"] {
        for method in METHODS {
            let model = match method.contains("mbed") {
                true => format!("{upstream}/emb"),
                false => format!("{upstream}/echo"),
            };
            if method.contains("mbed") && upstream != "mock" {
                continue; // the `up-` backends serve no embeddings (refused either way)
            }
            let body = body_for(method);
            h.mock.clear();
            let (status, kind, reply) =
                post_text(&h, &format!("/v1beta/models/{model}:{method}"), None, &body).await;
            assert_eq!(status, 200, "models/{model}:{method}: {reply}");
            assert_eq!(
                kind.starts_with("text/event-stream"),
                method.starts_with("stream"),
                "{kind}"
            );
            let expected = gist(method, &reply);
            let upstream_of = |h: &Harness| {
                h.mock
                    .requests()
                    .into_iter()
                    .map(|r| (r.path, r.query, r.json))
                    .collect::<Vec<_>>()
            };
            let sent = upstream_of(&h);
            // As written, `/` escaped, and under `/v1/`: the same call.
            let escaped = model.replace('/', "%2F");
            for path in [
                format!("/v1beta/{model}:{method}"),
                format!("/v1beta/{escaped}:{method}"),
                format!("/v1/{model}:{method}"),
            ] {
                h.mock.clear();
                let (s, k, r) = post_text(&h, &path, None, &body).await;
                assert_eq!((s, &k), (200, &kind), "{path}: {r}");
                assert_eq!(gist(method, &r), expected, "{path}");
                assert_eq!(upstream_of(&h), sent, "{path}: what went upstream");
            }
        }
    }
    // The upstream of the form the report names: the mock, as a Gemini backend.
    h.mock.clear();
    let (s, _, r) = post_text(
        &h,
        "/v1beta/up-gemini/echo:generateContent",
        None,
        &body_for(""),
    )
    .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(gist("generateContent", &r), json!("say the same twice"));
    assert_eq!(
        h.mock.requests()[0].path,
        "/v1beta/models/echo:generateContent"
    );

    // One model, GET: Gemini's shape on /v1beta, the caller's on /v1.
    let (s, b) = get(&h, "/v1beta/mock/echo", &[]).await;
    assert_eq!(
        (s, b["name"].as_str()),
        (200, Some("models/mock/echo")),
        "{b}"
    );
    let (s, b) = get(&h, "/v1/mock/echo", &[]).await;
    assert_eq!((s, b["id"].as_str()), (200, Some("mock/echo")), "{b}");
    let (s, b) = get(&h, "/v1/mock/echo", &[("x-goog-api-key", "k")]).await;
    assert_eq!(
        (s, b["name"].as_str()),
        (200, Some("models/mock/echo")),
        "{b}"
    );
    // A method path asked with GET: 405, naming POST.
    let (s, b) = get(&h, "/v1beta/mock/echo:generateContent", &[]).await;
    assert_eq!((s, b["error"]["code"].as_u64()), (405, Some(405)), "{b}");
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap()
            .contains("this route takes POST"),
        "{b}"
    );
    // A keyless gateway takes model calls as JSON only, on this form as on the others.
    let r = h
        .http
        .post(format!("{}/v1beta/mock/echo:generateContent", h.url))
        .header("content-type", "text/plain")
        .body(body_for("").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 415);
}

#[tokio::test]
async fn a_key_held_to_one_model_is_refused_another_on_the_backend_first_form() {
    let echo_only = KeySpec {
        models: vec!["mock/echo".to_string()],
        ..KeySpec::new("echo-only", KeySecret::Env("ECHO_KEY".into()))
    };
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        keys: vec![echo_only],
        ..GatewayConfig::default()
    };
    let h = Harness::start_with(config, MapEnv::new([("ECHO_KEY", "sk-echo")])).await;
    let body = body_for("generateContent");
    for root in ["/v1beta", "/v1"] {
        h.mock.clear();
        let path = format!("{root}/mock/echo:generateContent");
        let (s, _, r) = post_text(&h, &path, Some("sk-echo"), &body).await;
        assert_eq!(s, 200, "{path}: {r}");
        for method in [
            "generateContent",
            "streamGenerateContent?alt=sse",
            "countTokens",
        ] {
            let path = format!("{root}/mock/other:{method}");
            let (s, _, r) = post_text(&h, &path, Some("sk-echo"), &body).await;
            let b: Value = serde_json::from_str(&r).unwrap();
            assert_eq!(
                (s, b["error"]["status"].as_str()),
                (403, Some("PERMISSION_DENIED")),
                "{path}: {b}"
            );
            assert!(
                b["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("may not use model `mock/other`"),
                "{b}"
            );
        }
        // Without a key: 401, before any backend is asked.
        let (s, _, r) = post_text(&h, &path, None, &body).await;
        assert_eq!(s, 401, "{r}");
        assert_eq!(
            h.mock.requests().len(),
            1,
            "only the allowed call went upstream"
        );
    }
    // Listing one model the key may not use: 404, as on the `models/` form.
    let (s, b) = get(&h, "/v1beta/mock/other", &[("x-goog-api-key", "sk-echo")]).await;
    assert_eq!(
        (s, b["error"]["status"].as_str()),
        (404, Some("NOT_FOUND")),
        "{b}"
    );
    let (s, b) = get(&h, "/v1beta/mock/echo", &[("x-goog-api-key", "sk-echo")]).await;
    assert_eq!(
        (s, b["name"].as_str()),
        (200, Some("models/mock/echo")),
        "{b}"
    );
}

#[tokio::test]
async fn google_collections_and_names_of_no_backend_are_no_route() {
    // A backend named like a Google collection, and a `models:` entry holding a `/`
    // whose first segment is no backend.
    let mock = switchyard_mock::MockServer::start().await;
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        models: [("acme/flash".to_string(), "mock/echo".to_string())]
            .into_iter()
            .collect(),
        ..GatewayConfig::default()
    };
    let extra = ["backends.files.from=mock".to_string()];
    let g = gateway_for(&mock.base_url(), config, MapEnv::default(), &extra);
    let running = start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    let h = Harness {
        url: running.url(),
        mock,
        gateway: Some(running),
        http: reqwest::Client::new(),
    };
    let body = body_for("generateContent");
    for path in [
        "/v1beta/tunedModels/echo:generateContent",
        "/v1beta/cachedContents/x/y:generateContent",
        "/v1beta/files/echo:generateContent",
        "/v1beta/operations/echo:countTokens",
        "/v1beta/nobody/echo:generateContent",
        "/v1/nobody/echo:countTokens",
        "/v1/nobody/echo:embedContent",
        "/v1beta/v1beta/models/mock/echo:generateContent",
        "/v1beta/mock/echo:noSuchMethod",
        "/v1beta/mock:generateContent",
        // `models` escaped is still Google's collection, never a backend.
        "/v1beta/model%73/mock/echo:generateContent",
    ] {
        let (s, _, r) = post_text(&h, path, None, &body).await;
        let b: Value = serde_json::from_str(&r).unwrap_or(Value::Null);
        assert_eq!(
            (s, b["error"]["status"].as_str()),
            (404, Some("NOT_FOUND")),
            "{path}: {r}"
        );
        let m = b["error"]["message"].as_str().unwrap();
        assert!(
            m.contains("no route `POST") && m.contains("POST /v1beta/{backend}/{model}:{method}"),
            "{path}: {m}"
        );
        // GET of the model is no route either (in OpenAI's shape under `/v1/`), but for
        // the one that names a model.
        let model = path.split(':').next().unwrap();
        if model == "/v1beta/mock/echo" {
            continue;
        }
        let (s, b) = get(&h, model, &[]).await;
        let status = b["error"]["status"].as_str();
        assert_eq!(s, 404, "GET {path}: {b}");
        assert_eq!(
            status.is_some(),
            path.starts_with("/v1beta/"),
            "GET {path}: {b}"
        );
    }
    assert!(h.mock.requests().is_empty(), "{:?}", h.mock.requests());
    // The backend named `files` is reached by the `models/` form; the entry `acme/flash`
    // by either.
    for path in [
        "/v1beta/models/files/echo:generateContent",
        "/v1beta/models/acme/flash:generateContent",
        "/v1beta/acme/flash:generateContent",
        "/v1/acme/flash:generateContent",
    ] {
        let (s, _, r) = post_text(&h, path, None, &body).await;
        assert_eq!(s, 200, "{path}: {r}");
        assert_eq!(
            gist("generateContent", &r),
            json!("say the same twice"),
            "{path}"
        );
    }
    // Other clients' paths under `/v1/` keep their answers.
    let (s, _, r) = post_text(&h, "/v1/messages/nowhere", None, &json!({})).await;
    let b: Value = serde_json::from_str(&r).unwrap();
    assert_eq!(
        (s, b["error"]["type"].as_str()),
        (404, Some("not_found_error")),
        "{b}"
    );
    let (s, _, r) = post_text(&h, "/v1/chat/nowhere", None, &json!({})).await;
    let b: Value = serde_json::from_str(&r).unwrap();
    assert_eq!(
        (s, b["error"]["type"].as_str()),
        (404, Some("invalid_request_error")),
        "{b}"
    );
    let (s, b) = get(&h, "/v1/chat/completions", &[]).await;
    assert_eq!(s, 405, "{b}");
}

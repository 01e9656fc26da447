//! Faults over real HTTP: statuses, bodies in each dialect's shape, retry headers,
//! `-then-ok` counting, malformed bodies, delays.

mod common;

use common::*;
use std::time::{Duration, Instant};
use switchyard_mock::MockServer;
use switchyard_wire::Dialect;

#[tokio::test]
async fn rate_limits_in_every_dialect() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let (status, headers, body) =
            json_of(post_raw(&mock, d, "fault-429-retry-2", "hi", false).await).await;
        assert_eq!(status, 429, "{d}");
        match d {
            Dialect::Chat | Dialect::Responses => {
                assert_eq!(headers["retry-after"], "2");
                assert_eq!(body["error"]["code"], "rate_limit_exceeded");
                assert_eq!(body["error"]["type"], "requests");
                assert!(headers.contains_key("x-ratelimit-remaining-requests"));
                assert!(headers["x-request-id"]
                    .to_str()
                    .unwrap()
                    .starts_with("req_mock_"));
            }
            Dialect::Messages => {
                assert_eq!(headers["retry-after"], "2");
                assert_eq!(body["type"], "error");
                assert_eq!(body["error"]["type"], "rate_limit_error");
                assert_eq!(body["request_id"], headers["request-id"].to_str().unwrap());
            }
            Dialect::Gemini => {
                assert!(headers.get("retry-after").is_none());
                assert_eq!(body["error"]["code"], 429);
                assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED");
                let details = body["error"]["details"].as_array().unwrap();
                let retry = details
                    .iter()
                    .find(|d| d["@type"] == "type.googleapis.com/google.rpc.RetryInfo")
                    .unwrap();
                assert_eq!(retry["retryDelay"], "2s");
            }
        }
    }
}

#[tokio::test]
async fn retry_after_ms_and_no_retry() {
    let mock = MockServer::start().await;
    let (_, headers, _) =
        json_of(post_raw(&mock, Dialect::Chat, "fault-429-retry-ms-1500", "a", false).await).await;
    assert_eq!(headers["retry-after-ms"], "1500");
    assert!(headers.get("retry-after").is_none());
    let (_, headers, _) =
        json_of(post_raw(&mock, Dialect::Messages, "fault-429", "a", false).await).await;
    assert!(headers.get("retry-after").is_none());
}

#[tokio::test]
async fn statuses_map_to_each_dialects_error_type() {
    let mock = MockServer::start().await;
    let cases = [
        (529, Dialect::Messages, "overloaded_error"),
        (500, Dialect::Messages, "api_error"),
        (401, Dialect::Messages, "authentication_error"),
        (403, Dialect::Messages, "permission_error"),
        (400, Dialect::Messages, "invalid_request_error"),
        (503, Dialect::Gemini, "UNAVAILABLE"),
        (500, Dialect::Gemini, "INTERNAL"),
        (403, Dialect::Gemini, "PERMISSION_DENIED"),
        (500, Dialect::Chat, "server_error"),
        (503, Dialect::Responses, "server_error"),
        (401, Dialect::Chat, "invalid_request_error"),
        (418, Dialect::Chat, "invalid_request_error"),
    ];
    for (code, d, kind) in cases {
        let (status, _, body) =
            json_of(post_raw(&mock, d, &format!("mock/fault-{code}"), "x", false).await).await;
        assert_eq!(status, code, "{d} {code}");
        let found = match d {
            Dialect::Gemini => &body["error"]["status"],
            _ => &body["error"]["type"],
        };
        assert_eq!(found, kind, "{d} {code}: {body}");
    }
}

#[tokio::test]
async fn quota_bodies() {
    let mock = MockServer::start().await;
    let (s, _, b) = json_of(post_raw(&mock, Dialect::Chat, "quota", "q", false).await).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (429, Some("insufficient_quota"))
    );
    let (s, _, b) = json_of(post_raw(&mock, Dialect::Chat, "quota-402", "q", false).await).await;
    assert_eq!((s, b["error"]["code"].as_u64()), (402, Some(402)));
    let (s, _, b) = json_of(post_raw(&mock, Dialect::Messages, "quota", "q", false).await).await;
    assert_eq!(s, 400);
    assert_eq!(b["error"]["type"], "billing_error");
    assert!(b["error"]["message"]
        .as_str()
        .unwrap()
        .contains("credit balance is too low"));
    let (s, _, b) =
        json_of(post_raw(&mock, Dialect::Messages, "quota-spend-limit", "q", false).await).await;
    assert_eq!(s, 429);
    assert_eq!(
        b["error"]["details"]["error_code"],
        "enforced_spend_limit_reached"
    );
    let (s, _, b) = json_of(post_raw(&mock, Dialect::Gemini, "quota", "q", false).await).await;
    assert_eq!(
        (s, b["error"]["status"].as_str()),
        (429, Some("RESOURCE_EXHAUSTED"))
    );
    assert!(b["error"]["details"][0]["violations"][0]["quotaId"]
        .as_str()
        .unwrap()
        .contains("PerDay"));
}

#[tokio::test]
async fn context_overflow_texts() {
    let mock = MockServer::start().await;
    let msg = |b: &serde_json::Value| b["error"]["message"].as_str().unwrap().to_string();
    let (s, _, b) =
        json_of(post_raw(&mock, Dialect::Chat, "context-overflow", "c", false).await).await;
    assert_eq!(s, 400);
    assert_eq!(b["error"]["code"], "context_length_exceeded");
    assert!(msg(&b).starts_with("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens"));
    let (_, _, b) =
        json_of(post_raw(&mock, Dialect::Chat, "context-overflow-vllm", "c", false).await).await;
    assert!(msg(&b).contains("maximum context length is 4096 tokens"));
    let (_, _, b) =
        json_of(post_raw(&mock, Dialect::Messages, "context-overflow", "c", false).await).await;
    assert_eq!(
        msg(&b),
        "prompt is too long: 219898 tokens > 200000 maximum"
    );
    let (_, _, b) = json_of(
        post_raw(
            &mock,
            Dialect::Messages,
            "context-overflow-max-tokens",
            "c",
            false,
        )
        .await,
    )
    .await;
    assert!(msg(&b)
        .starts_with("input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000"));
    let (_, _, b) =
        json_of(post_raw(&mock, Dialect::Gemini, "context-overflow", "c", false).await).await;
    assert_eq!(b["error"]["status"], "INVALID_ARGUMENT");
    assert!(msg(&b).contains(
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)"
    ));
}

#[tokio::test]
async fn then_ok_counts_per_model_and_prompt() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let model = "fault-503-2-then-ok";
        for attempt in 0..2 {
            let r = post_raw(&mock, d, model, "first prompt", false).await;
            assert_eq!(r.status().as_u16(), 503, "{d} attempt {attempt}");
        }
        // Another prompt has its own count.
        let r = post_raw(&mock, d, model, "second prompt", false).await;
        assert_eq!(r.status().as_u16(), 503, "{d} other prompt");
        let r = post_raw(&mock, d, model, "first prompt", false).await;
        assert_eq!(r.status().as_u16(), 200, "{d} third attempt");
        let r = post_raw(&mock, d, model, "first prompt", false).await;
        assert_eq!(r.status().as_u16(), 200, "{d} stays ok");
    }
    mock.clear();
    let r = post_raw(
        &mock,
        Dialect::Chat,
        "fault-503-2-then-ok",
        "first prompt",
        false,
    )
    .await;
    assert_eq!(r.status().as_u16(), 503, "clear resets the counters");
}

#[tokio::test]
async fn malformed_success_bodies() {
    let mock = MockServer::start().await;
    let r = post_raw(&mock, Dialect::Chat, "null-body", "n", false).await;
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.text().await.unwrap(), "null");
    let r = post_raw(&mock, Dialect::Chat, "null-body-blank", "n", false).await;
    assert_eq!(r.text().await.unwrap(), "\n\n\n\nnull");
    let r = post_raw(&mock, Dialect::Messages, "not-json", "n", false).await;
    assert_eq!(r.status().as_u16(), 200);
    let text = r.text().await.unwrap();
    assert!(
        serde_json::from_str::<serde_json::Value>(&text).is_err(),
        "{text}"
    );
    let r = post_raw(&mock, Dialect::Chat, "not-json", "n", true).await;
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    assert_eq!(r.text().await.unwrap(), "data: this is not json\n\n");
    // Malformed faults take -then-ok too.
    let r = post_raw(&mock, Dialect::Chat, "null-body-then-ok", "m", false).await;
    assert_eq!(r.text().await.unwrap(), "null");
    let r = post_raw(&mock, Dialect::Chat, "null-body-then-ok", "m", false).await;
    assert_eq!(r.status().as_u16(), 200);
    assert_ne!(r.text().await.unwrap(), "null");
}

#[tokio::test]
async fn slow_first_byte_is_really_delayed() {
    let mock = MockServer::start().await;
    let start = Instant::now();
    let r = post_raw(
        &mock,
        Dialect::Chat,
        "fault-500+slow-first-byte-150ms",
        "s",
        false,
    )
    .await;
    let waited = start.elapsed();
    assert_eq!(r.status().as_u16(), 500);
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
}

#[tokio::test]
async fn hang_never_answers_until_shutdown() {
    let mock = MockServer::start().await;
    let url = endpoint(&mock, Dialect::Chat, "hang", false);
    let send = client()
        .post(url)
        .json(&raw_body(Dialect::Chat, "hang", "h", false))
        .timeout(Duration::from_millis(150))
        .send();
    let err = send.await.expect_err("a hang times out");
    assert!(err.is_timeout(), "{err}");
    assert_eq!(mock.requests().len(), 1, "recorded before it hangs");
}

#[tokio::test]
async fn unknown_models_and_bad_bodies_get_dialect_errors() {
    let mock = MockServer::start().await;
    let (s, _, b) = json_of(post_raw(&mock, Dialect::Messages, "nonsense", "x", false).await).await;
    assert_eq!(s, 404);
    assert_eq!(b["error"]["type"], "not_found_error");
    assert!(b["error"]["message"]
        .as_str()
        .unwrap()
        .contains("say:<text>"));
    let r = client()
        .post(endpoint(&mock, Dialect::Chat, "echo", false))
        .body("{not json")
        .send()
        .await
        .unwrap();
    let (s, _, b) = json_of(r).await;
    assert_eq!(s, 400);
    assert!(b["error"]["message"].as_str().unwrap().contains("not JSON"));
    let r = client()
        .post(format!("{}/v1beta/models/echo:predict", mock.url()))
        .body("{}")
        .send()
        .await
        .unwrap();
    let (s, _, b) = json_of(r).await;
    assert_eq!((s, b["error"]["status"].as_str()), (404, Some("NOT_FOUND")));
}

#[tokio::test]
async fn echo_key_repeats_the_credential_in_headers_and_body() {
    let mock = MockServer::start().await;
    let key = "sk-mock-echo-0123456789abcdef";
    let client = reqwest::Client::new();
    for d in Dialect::ALL {
        // Each dialect's own credential header, and Gemini's `key=` parameter.
        let sends: Vec<(&str, String)> = match d {
            Dialect::Chat | Dialect::Responses => vec![("authorization", format!("Bearer {key}"))],
            Dialect::Messages => vec![("x-api-key", key.to_string())],
            Dialect::Gemini => vec![("x-goog-api-key", key.to_string()), ("", String::new())],
        };
        for (header, value) in sends {
            for (model, status, stream) in [
                ("echo-key", 401, false),
                ("echo-key-500", 500, false),
                ("echo-key-200", 200, false),
                ("echo-key-200", 200, true),
            ] {
                let mut url = endpoint(&mock, d, model, stream);
                let mut request = client.post(&url);
                if header.is_empty() {
                    url.push_str(if url.contains('?') { "&key=" } else { "?key=" });
                    url.push_str(key);
                    request = client.post(&url);
                } else {
                    request = request.header(header, &value);
                }
                let response = request
                    .json(&raw_body(d, model, "hi", stream))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status().as_u16(), status, "{d} {model}");
                let auth = response.headers()["www-authenticate"].to_str().unwrap();
                assert!(auth.contains(key), "{d} {model}: {auth}");
                let body = response.text().await.unwrap();
                assert!(body.contains(key), "{d} {model} stream={stream}: {body}");
            }
        }
    }
    // Without a credential the message says so.
    let response = client
        .post(endpoint(&mock, Dialect::Chat, "echo-key", false))
        .json(&raw_body(Dialect::Chat, "echo-key", "hi", false))
        .send()
        .await
        .unwrap();
    assert!(response.text().await.unwrap().contains("no key was sent"));
}

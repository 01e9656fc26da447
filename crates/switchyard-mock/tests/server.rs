//! Routes, request recording, models list, token counting.

mod common;

use common::*;
use serde_json::json;
use switchyard_mock::{MockConfig, MockServer};
use switchyard_wire::Dialect;

#[tokio::test]
async fn records_method_path_query_headers_and_body() {
    let mock = MockServer::start().await;
    let body = json!({"model": "fault-500", "messages": [{"role": "user", "content": "hi"}]});
    client()
        .post(format!("{}/v1/messages?beta=true", mock.url()))
        .header("x-api-key", "sk-test")
        .header("Anthropic-Version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap();
    client()
        .post(endpoint(&mock, Dialect::Chat, "fault-500", false))
        .bearer_auth("sk-chat")
        .json(&body)
        .send()
        .await
        .unwrap();
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let r = &requests[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(r.query.as_deref(), Some("beta=true"));
    assert_eq!(r.header("x-api-key"), Some("sk-test"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert!(
        r.headers.iter().any(|(k, _)| k == "anthropic-version"),
        "lowercased names"
    );
    assert_eq!(r.json.as_ref(), Some(&body));
    assert_eq!(r.body, serde_json::to_vec(&body).unwrap());
    assert_eq!(requests[1].header("authorization"), Some("Bearer sk-chat"));
    assert_eq!(requests[1].path, "/v1/chat/completions");
    mock.clear();
    assert!(mock.requests().is_empty());
}

/// Before, the mock kept every request forever (+27 KB per 10 KB request): a `serve` left
/// running grew without end. It keeps the latest ones and counts them all.
#[tokio::test]
async fn the_mock_keeps_a_bounded_ring_of_requests_and_counts_them_all() {
    let mock = MockServer::start_with(MockConfig {
        keep_requests: 5,
        ..MockConfig::default()
    })
    .await;
    let padding = "x".repeat(10_000);
    for n in 0..40 {
        let body = json!({"model": "echo", "messages": [{"role": "user", "content": format!("{n} {padding}")}]});
        let status = client()
            .post(endpoint(&mock, Dialect::Chat, "echo", false))
            .json(&body)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200);
    }
    let kept = mock.requests();
    assert_eq!(kept.len(), 5);
    assert!(
        kept[0].body_text().contains("\"35 x"),
        "oldest kept is the 36th"
    );
    assert!(
        kept[4].body_text().contains("\"39 x"),
        "newest kept is the last"
    );
    assert_eq!(mock.received(), 40);
    assert_eq!(MockConfig::default().keep_requests, 1_000);
}

#[tokio::test]
async fn small_endpoints() {
    let mock = MockServer::start().await;
    let r = client()
        .get(format!("{}/healthz", mock.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (r.status().as_u16(), r.text().await.unwrap().as_str()),
        (200, "ok")
    );
    let r = client().head(mock.url()).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let (s, _, list) = json_of(
        client()
            .get(format!("{}/models", mock.base_url()))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(list["object"], "list");
    let first = &list["data"][0];
    assert_eq!(
        (
            first["id"].as_str(),
            first["object"].as_str(),
            first["owned_by"].as_str()
        ),
        (Some("echo"), Some("model"), Some("switchyard-mock"))
    );
    let r = client()
        .get(format!("{}/nowhere", mock.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
}

#[tokio::test]
async fn count_tokens_estimates_the_prompt() {
    let mock = MockServer::start().await;
    let body = json!({"model": "echo", "system": "be brief",
        "messages": [{"role": "user", "content": "0123456789abcdef"}]});
    let (s, _, v) = json_of(
        client()
            .post(format!("{}/v1/messages/count_tokens", mock.url()))
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, 200);
    // "be brief" (8) + 16 characters = 24 characters = 6 tokens.
    assert_eq!(v, json!({"input_tokens": 6}));
}

#[tokio::test]
async fn vertex_and_gemini_paths_split_on_the_last_colon() {
    let mock = MockServer::start().await;
    let body = raw_body(Dialect::Gemini, "", "x", false);
    for path in [
        "/v1beta/models/fault-429-retry-1:generateContent",
        "/v1beta/models/mock/fault-429-retry-1:generateContent",
        "/v1/projects/p/locations/global/publishers/google/models/fault-429-retry-1:streamGenerateContent?alt=sse",
    ] {
        let r = client().post(format!("{}{path}", mock.url())).json(&body).send().await.unwrap();
        let (s, _, v) = json_of(r).await;
        assert_eq!(s, 429, "{path}");
        assert_eq!(v["error"]["details"][2]["retryDelay"], "1s", "{path}");
    }
}

#[tokio::test]
async fn start_on_a_given_address_and_stop() {
    let mock = MockServer::start_on("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = format!("{}/healthz", mock.url());
    assert!(client()
        .get(&url)
        .send()
        .await
        .unwrap()
        .status()
        .is_success());
    drop(mock);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(
        reqwest::Client::new().get(&url).send().await.is_err(),
        "stopped on drop"
    );
}

#[test]
fn a_server_in_its_own_thread_serves_synchronous_callers() {
    use std::io::{Read, Write};
    let mock = MockServer::start_in_thread(
        "127.0.0.1:0".parse().unwrap(),
        switchyard_mock::MockConfig::default(),
    )
    .unwrap();
    let mut tcp = std::net::TcpStream::connect(mock.addr()).unwrap();
    tcp.write_all(
        b"GET /healthz HTTP/1.1\r\nHost: mock\r\nX-Probe: 1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("ok"), "{answer}");
    assert_eq!(mock.requests()[0].header("x-probe"), Some("1"));
    let addr = mock.addr();
    drop(mock);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "stopped and joined on drop"
    );
}

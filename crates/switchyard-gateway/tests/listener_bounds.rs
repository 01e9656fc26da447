//! The listener's bounds over real sockets: calls in flight over h2c connections of many
//! streams, the stream limit each connection advertises, idle kept-alive connections
//! giving way at the connection cap, and request heads past their bounds (431, 414) or
//! malformed (400) answered with a body in the path's dialect, not hyper's empty one.
//!
//! Caps are small here (a few connections and calls) so that every test is quick.

mod common;

use common::{client_body, path, Harness};
use serde_json::Value;
use std::time::{Duration, Instant};
use switchyard::env::MapEnv;
use switchyard_gateway::GatewayConfig;
use switchyard_wire::{Dialect, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn config() -> GatewayConfig {
    GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        ..GatewayConfig::default()
    }
}

async fn gateway(config: GatewayConfig) -> (Harness, String) {
    let h = Harness::start_with(config, MapEnv::default()).await;
    let addr = h.url.trim_start_matches("http://").to_string();
    (h, addr)
}

/// Reads until the gateway closes the connection or `limit` passes: what it sent, and
/// whether it closed.
async fn until_closed(s: &mut TcpStream, limit: Duration) -> (String, bool) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    let until = Instant::now() + limit;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&seen).into_owned(), true),
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&seen).into_owned(), false),
        }
    }
}

/// Reads one response of known length from a kept-alive connection.
async fn one_response(s: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .expect("a response within 5 s")
            .unwrap();
        assert!(
            n > 0,
            "closed before a whole response: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
        if common::raw_http::whole_response_len(&seen).is_some() {
            return String::from_utf8_lossy(&seen).into_owned();
        }
    }
}

/// The status and JSON body of a response's text.
fn status_and_body(reply: &str) -> (u16, String, Value) {
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((reply, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = serde_json::from_str(body).unwrap_or(Value::String(body.into()));
    (status, head.to_ascii_lowercase(), body)
}

/// Asserts `body` is `dialect`'s error shape for `status`, and returns its message.
fn error_message(dialect: Dialect, status: u16, body: &Value) -> String {
    match dialect {
        Dialect::Chat | Dialect::Responses => {
            assert!(body["error"]["type"].is_string(), "{dialect}: {body}");
        }
        Dialect::Messages => {
            assert_eq!(body["type"], "error", "{dialect}: {body}");
            assert!(body["error"]["type"].is_string(), "{dialect}: {body}");
        }
        Dialect::Gemini => {
            assert_eq!(body["error"]["code"], status, "{dialect}: {body}");
            assert!(body["error"]["status"].is_string(), "{dialect}: {body}");
        }
    }
    body["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{dialect}: no message in {body}"))
        .to_string()
}

const DIALECT_PATHS: [(Dialect, &str); 5] = [
    (Dialect::Chat, "/v1/chat/completions"),
    (Dialect::Responses, "/v1/responses"),
    (Dialect::Messages, "/v1/messages"),
    (Dialect::Gemini, "/v1beta/models/mock/echo:generateContent"),
    // A path of no dialect: JSON, in OpenAI's shape.
    (Dialect::Chat, "/nowhere"),
];

/// The SETTINGS the gateway sends first on an h2c connection: (identifier, value) pairs.
async fn server_settings(addr: &str) -> Vec<(u16, u32)> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap();
    loop {
        let mut head = [0u8; 9];
        tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut head))
            .await
            .expect("a frame within 5 s")
            .unwrap();
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0u8; len];
        s.read_exact(&mut payload).await.unwrap();
        // A SETTINGS frame (type 4) that is not an acknowledgement (flag 1).
        if head[3] == 4 && head[4] & 1 == 0 {
            return payload
                .chunks(6)
                .map(|e| {
                    (
                        u16::from_be_bytes([e[0], e[1]]),
                        u32::from_be_bytes([e[2], e[3], e[4], e[5]]),
                    )
                })
                .collect();
        }
    }
}

/// Before, 50 h2c connections × 200 streams put 10,000 calls in flight: the cap counted
/// connections. Now 4 connections × 6 streams, each a call that never ends, against a
/// cap of 10 calls: 10 reach the upstream, the other 14 are answered 503 (529 for
/// Anthropic's dialect) with `retry-after`, in their dialect's shape, at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_streams_count_against_the_calls_in_flight_and_the_stream_limit_is_advertised() {
    let (h, addr) = gateway(GatewayConfig {
        max_calls_in_flight: 10,
        max_streams_per_connection: 6,
        ..config()
    })
    .await;
    let settings = server_settings(&addr).await;
    // SETTINGS_MAX_CONCURRENT_STREAMS (3) and SETTINGS_MAX_HEADER_LIST_SIZE (6).
    assert!(settings.contains(&(3, 6)), "{settings:?}");
    // The header-list bound is h2's backstop, above the gateway's own (64 KiB + 16 KiB).
    assert!(settings.contains(&(6, 80 * 1024)), "{settings:?}");

    let dialects = [
        Dialect::Chat,
        Dialect::Messages,
        Dialect::Gemini,
        Dialect::Responses,
    ];
    let clients: Vec<reqwest::Client> = (0..4)
        .map(|_| {
            reqwest::Client::builder()
                .http2_prior_knowledge()
                .build()
                .unwrap()
        })
        .collect();
    let calls = clients.iter().enumerate().flat_map(|(i, client)| {
        let dialect = dialects[i];
        let url = format!("{}{}", h.url, path(dialect, "mock/hang", true));
        (0..6).map(move |_| {
            let body = client_body(dialect, "mock/hang", &Request::user("hi"), true);
            let sent = client
                .post(url.clone())
                .header("content-type", "application/json")
                .body(body)
                .send();
            async move { (dialect, sent.await.unwrap()) }
        })
    });
    let replies = tokio::time::timeout(Duration::from_secs(10), futures::future::join_all(calls))
        .await
        .expect("every stream answered (its head) within 10 s");
    let mut hanging = Vec::new();
    let mut refused = 0;
    for (dialect, r) in replies {
        assert_eq!(r.version(), reqwest::Version::HTTP_2);
        if r.status() == 200 {
            hanging.push(r);
            continue;
        }
        refused += 1;
        let status = r.status().as_u16();
        let expected = if dialect == Dialect::Messages {
            529
        } else {
            503
        };
        assert_eq!(status, expected, "{dialect}");
        assert_eq!(r.headers()["retry-after"], "1", "{dialect}");
        let body: Value = r.json().await.unwrap();
        let message = error_message(dialect, status, &body);
        assert!(
            message.contains("(10, listen.max_calls_in_flight)"),
            "{message}"
        );
    }
    assert_eq!((hanging.len(), refused), (10, 14));
    assert_eq!(
        h.mock.requests().len(),
        10,
        "calls past the cap reached the upstream"
    );

    // The calls end (their clients leave): their places come back.
    drop(hanging);
    // `/metrics` takes a place too: a poll made before the places came back is itself
    // refused, and counted with the others.
    let until = Instant::now() + Duration::from_secs(5);
    let mut polls_refused = 0;
    let metrics = loop {
        let r = h
            .http
            .get(format!("{}/metrics", h.url))
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            break r.text().await.unwrap();
        }
        polls_refused += 1;
        assert!(Instant::now() < until, "the calls' places never came back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        metrics.contains(&format!(
            "switchyard_gateway_listener_refusals_total{{reason=\"calls_in_flight\"}} {}\n",
            14 + polls_refused
        )),
        "{metrics}"
    );
    let r = clients[0]
        .post(format!("{}/v1/chat/completions", h.url))
        .header("content-type", "application/json")
        .body(client_body(
            Dialect::Chat,
            "mock/echo",
            &Request::user("hi"),
            false,
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// Before, ~1,088 idle kept-alive connections held every place and new callers got 503
/// for the idle deadline (60 s). At the cap the connection idle the longest is closed
/// and the new caller served; the others stay open.
#[tokio::test]
async fn at_the_connection_cap_the_connection_idle_longest_gives_way() {
    let (h, addr) = gateway(GatewayConfig {
        max_connections: 3,
        idle_timeout: Duration::from_secs(30),
        ..config()
    })
    .await;
    let healthz = b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n";
    let mut open = Vec::new();
    for _ in 0..3 {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(healthz).await.unwrap();
        assert!(one_response(&mut s).await.starts_with("HTTP/1.1 200"));
        open.push(s);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The first idles longest; the second is used again, so the third is next in line.
    open[1].write_all(healthz).await.unwrap();
    assert!(one_response(&mut open[1]).await.starts_with("HTTP/1.1 200"));
    for expected_closed in [0, 2] {
        let started = Instant::now();
        let mut new = TcpStream::connect(&addr).await.unwrap();
        new.write_all(healthz).await.unwrap();
        let reply = one_response(&mut new).await;
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        let (_, closed) = until_closed(&mut open[expected_closed], Duration::from_secs(2)).await;
        assert!(
            closed,
            "connection {expected_closed}, idle the longest, was not closed"
        );
        open[expected_closed] = new;
    }
    // The one used again is still served.
    open[1].write_all(healthz).await.unwrap();
    assert!(one_response(&mut open[1]).await.starts_with("HTTP/1.1 200"));
    let metrics = {
        open[0]
            .write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\n\r\n")
            .await
            .unwrap();
        one_response(&mut open[0]).await
    };
    assert!(
        metrics.contains("{reason=\"idle_evicted\"} 2\n")
            && metrics.contains("{reason=\"connection_cap\"} 0\n"),
        "{metrics}"
    );
    drop(h);
}

/// Sends `head` (on a kept-alive connection, after a first request with a body, when
/// `after_one` is set) and returns the refusal's text and whether the connection then
/// closed.
async fn refused_head(addr: &str, head: &[u8], after_one: bool) -> (String, bool) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    if after_one {
        // A sound request with a body first: the guard follows the body to the next head.
        s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}")
            .await
            .unwrap();
        let reply = one_response(&mut s).await;
        assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    }
    s.write_all(head).await.unwrap();
    until_closed(&mut s, Duration::from_secs(5)).await
}

/// Before, hyper answered these heads itself with an empty body (and h2 reset the stream
/// of an oversized one). Each is now answered in its path's dialect (JSON in OpenAI's
/// shape on a path of none), with the setting that bounds it, and an HTTP/1 connection
/// closed; nothing reaches the upstream.
#[tokio::test]
async fn heads_past_their_bounds_or_malformed_are_answered_in_the_paths_dialect() {
    let (h, addr) = gateway(GatewayConfig {
        max_header_bytes: 4096,
        max_uri_bytes: 1024,
        max_headers: 20,
        ..config()
    })
    .await;
    let many: String = (0..21).map(|i| format!("x-h{i}: v\r\n")).collect();
    let cases: [(&str, u16, &str); 4] = [
        ("big header", 431, "listen.max_header_bytes"),
        ("long target", 414, "listen.max_uri_bytes"),
        ("many headers", 431, "listen.max_headers"),
        ("malformed", 400, "the request head is malformed"),
    ];
    let mut answered = 0;
    for (dialect, route) in DIALECT_PATHS {
        for (case, status, says) in cases {
            let head = match case {
                "big header" => format!(
                    "POST {route} HTTP/1.1\r\nhost: localhost\r\nx-big: {}\r\n\r\n",
                    "a".repeat(5000)
                ),
                "long target" => format!(
                    "GET {route}?q={} HTTP/1.1\r\nhost: localhost\r\n\r\n",
                    "a".repeat(2000)
                ),
                "many headers" => format!("POST {route} HTTP/1.1\r\nhost: localhost\r\n{many}\r\n"),
                _ => format!("POST {route} HTTP/1.1\r\nhost: localhost\r\nno colon here\r\n\r\n"),
            };
            for after_one in [false, true] {
                let (reply, closed) = refused_head(&addr, head.as_bytes(), after_one).await;
                let what = format!("{case} on {route} (after a request: {after_one})");
                let (got, head, body) = status_and_body(&reply);
                assert_eq!(got, status, "{what}: {reply}");
                assert!(
                    head.contains("content-type: application/json"),
                    "{what}: {head}"
                );
                assert!(head.contains("connection: close"), "{what}: {head}");
                let message = error_message(dialect, status, &body);
                assert!(message.contains(says), "{what}: {message}");
                assert!(closed, "{what}: the connection stayed open");
                answered += 1;
            }
        }
    }
    // The same bounds over h2c, where heads arrive decoded (no malformed ones to send).
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    for (dialect, route) in DIALECT_PATHS {
        for (case, status, says) in &cases[..3] {
            let mut r = h2.post(format!("{}{route}", h.url));
            match *case {
                "big header" => r = r.header("x-big", "a".repeat(5000)),
                "long target" => r = h2.post(format!("{}{route}?q={}", h.url, "a".repeat(2000))),
                _ => {
                    for i in 0..21 {
                        r = r.header(format!("x-h{i}"), "v");
                    }
                }
            }
            let r = r
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .unwrap();
            let what = format!("h2c: {case} on {route}");
            assert_eq!(r.version(), reqwest::Version::HTTP_2);
            assert_eq!(r.status().as_u16(), *status, "{what}");
            let body: Value = r.json().await.unwrap();
            let message = error_message(dialect, *status, &body);
            assert!(message.contains(says), "{what}: {message}");
            answered += 1;
        }
    }
    assert!(
        h.mock.requests().is_empty(),
        "a refused head reached the upstream"
    );
    let metrics = h.metrics().await;
    for (reason, n) in [
        ("header_too_large", 30),
        ("uri_too_long", 15),
        ("malformed_head", 10),
    ] {
        assert!(
            metrics.contains(&format!("{{reason=\"{reason}\"}} {n}\n")),
            "{reason}: {metrics}"
        );
    }
    assert_eq!(answered, 55);
}

/// A head far past hyper's own buffer (400 KiB), sent whole by a client that reads only
/// once it has written everything, and pipelined heads behind a sound request: the
/// refusal arrives whole (the gateway reads what follows rather than resetting the
/// connection), and in order after the answers before it.
#[tokio::test]
async fn a_huge_head_and_pipelined_heads_get_their_refusal_whole_and_in_order() {
    let (_h, addr) = gateway(config()).await;
    let huge = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: localhost\r\nx-big: {}\r\n\r\n",
        "a".repeat(1024 * 1024)
    );
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(huge.as_bytes()).await.unwrap();
    let (reply, closed) = until_closed(&mut s, Duration::from_secs(5)).await;
    let (status, _, body) = status_and_body(&reply);
    assert_eq!(status, 431, "{reply}");
    let message = error_message(Dialect::Messages, 431, &body);
    assert!(message.contains("longer than 65536 bytes"), "{message}");
    assert!(closed);

    // Two sound requests and a malformed one, in one write.
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(
        b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\nGET /v1/models HTTP/1.1\r\nhost: localhost\r\n\r\nGET /v1beta/models/x:generateContent HTTP/1.1\r\nhost localhost\r\n\r\n",
    )
    .await
    .unwrap();
    let (reply, closed) = until_closed(&mut s, Duration::from_secs(5)).await;
    let statuses: Vec<&str> = reply
        .match_indices("HTTP/1.1 ")
        .map(|(i, _)| &reply[i + 9..i + 12])
        .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    assert_eq!(statuses, ["200", "200", "400"], "{reply}");
    let last = &reply[reply.rfind("HTTP/1.1 400").unwrap()..];
    let (_, _, body) = status_and_body(last);
    error_message(Dialect::Gemini, 400, &body);
    assert!(closed);
}

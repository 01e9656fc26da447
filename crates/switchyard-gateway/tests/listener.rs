//! The listener over real sockets: the three deadlines against six kinds of slow client,
//! the connection cap, the request guard of a gateway without keys (Host, Origin, content
//! type, CORS), 404/405 and the depth limit in each dialect's shape, the refusal counters,
//! h2c, and the drain deadline recording what it cut as cancelled.
//!
//! Deadlines are a few hundred milliseconds here; each test checks both sides: not cut
//! before its deadline, cut by the deadline plus a margin for a shared machine.

mod common;

use common::Harness;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use switchyard::env::MapEnv;
use switchyard_gateway::{GatewayConfig, KeySecret, KeySpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const HEADER: Duration = Duration::from_millis(300);
const BODY: Duration = Duration::from_millis(500);
const IDLE: Duration = Duration::from_millis(900);
/// Room for a busy two-core machine.
const MARGIN: Duration = Duration::from_millis(500);
/// Timers may fire a hair early relative to the client's clock.
const EARLY: Duration = Duration::from_millis(30);

fn config() -> GatewayConfig {
    GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        header_timeout: HEADER,
        body_timeout: BODY,
        idle_timeout: IDLE,
        ..GatewayConfig::default()
    }
}

async fn gateway(config: GatewayConfig) -> (Harness, String) {
    let h = Harness::start_with(config, MapEnv::default()).await;
    let addr = h.url.trim_start_matches("http://").to_string();
    (h, addr)
}

/// Reads until the gateway closes the connection (or `limit` passes): the bytes it sent
/// and how long after `since` it closed.
async fn until_closed(
    s: &mut TcpStream,
    since: Instant,
    limit: Duration,
) -> (String, Option<Duration>) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = (since + limit).saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                return (
                    String::from_utf8_lossy(&seen).into_owned(),
                    Some(since.elapsed()),
                )
            }
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&seen).into_owned(), None),
        }
    }
}

/// Reads one response of known length from a kept-alive connection.
async fn one_response(s: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).await.unwrap();
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

fn assert_cut_at(after: Option<Duration>, deadline: Duration, what: &str) {
    let after =
        after.unwrap_or_else(|| panic!("{what}: still open {:?} past its deadline", MARGIN));
    assert!(
        after + EARLY >= deadline,
        "{what}: cut after {after:?}, before its deadline {deadline:?}"
    );
    assert!(
        after <= deadline + MARGIN,
        "{what}: cut after {after:?}, deadline {deadline:?}"
    );
}

fn healthz() -> &'static [u8] {
    b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n"
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_at_the_header_deadline() {
    let (h, addr) = gateway(config()).await;
    let start = Instant::now();
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let (seen, after) = until_closed(&mut s, start, HEADER + MARGIN).await;
    assert_cut_at(after, HEADER, "a silent connection");
    assert_eq!(seen, "");
    assert!(h
        .metrics()
        .await
        .contains("switchyard_gateway_listener_refusals_total{reason=\"header_timeout\"} 1\n"));
}

#[tokio::test]
async fn a_head_never_finished_is_closed_at_the_header_deadline() {
    let (_h, addr) = gateway(config()).await;
    let start = Instant::now();
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-type: appl")
        .await
        .unwrap();
    let (_, after) = until_closed(&mut s, start, HEADER + MARGIN).await;
    assert_cut_at(after, HEADER, "an unfinished head");
}

#[tokio::test]
async fn a_trickled_head_is_closed_at_the_header_deadline_counted_from_the_connection() {
    let (_h, addr) = gateway(config()).await;
    let start = Instant::now();
    let s = TcpStream::connect(&addr).await.unwrap();
    let (mut read, mut write) = s.into_split();
    // A byte every 20 ms: each arrives well within any per-read timeout.
    tokio::spawn(async move {
        for b in b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nx-slow: "
            .iter()
            .chain([b'a'; 200].iter())
        {
            if write.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let mut buf = [0u8; 256];
    let after = match tokio::time::timeout(HEADER + MARGIN, read.read(&mut buf)).await {
        Ok(Ok(0)) | Ok(Err(_)) => Some(start.elapsed()),
        Ok(Ok(_)) => panic!("the trickled head was answered"),
        Err(_) => None,
    };
    assert_cut_at(after, HEADER, "a trickled head");
}

#[tokio::test]
async fn a_stalled_body_is_answered_408_at_the_body_deadline_then_closed() {
    let (h, addr) = gateway(config()).await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"model\":",
    )
    .await
    .unwrap();
    let start = Instant::now();
    let (reply, after) = until_closed(&mut s, start, BODY + MARGIN).await;
    assert_cut_at(after, BODY, "a stalled body");
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(
        reply.to_ascii_lowercase().contains("connection: close"),
        "{reply}"
    );
    let body: Value = serde_json::from_str(reply.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("body deadline of 0.5 s"),
        "{body}"
    );
    assert!(h.mock.requests().is_empty());
    assert!(h.metrics().await.contains("{reason=\"body_timeout\"} 1\n"));
}

#[tokio::test]
async fn a_trickled_body_is_answered_408_at_the_body_deadline() {
    let (h, addr) = gateway(config()).await;
    let body = json!({"model": "mock/echo", "max_tokens": 5, "messages": [{"role": "user", "content": "x".repeat(400)}]}).to_string();
    let s = TcpStream::connect(&addr).await.unwrap();
    let (mut read, mut write) = s.into_split();
    write
        .write_all(
            format!(
                "POST /v1/messages HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let start = Instant::now();
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = answered.clone();
    tokio::spawn(async move {
        for b in body.bytes() {
            if stop.load(std::sync::atomic::Ordering::Relaxed)
                || write.write_all(&[b]).await.is_err()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let first = match tokio::time::timeout(BODY + MARGIN, read.read(&mut buf)).await {
        Ok(Ok(n)) if n > 0 => {
            answered.store(true, std::sync::atomic::Ordering::Relaxed);
            seen.extend_from_slice(&buf[..n]);
            Some(start.elapsed())
        }
        _ => None,
    };
    assert_cut_at(first, BODY, "a trickled body");
    while let Ok(Ok(n)) = tokio::time::timeout(MARGIN, read.read(&mut buf)).await {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    let reply = String::from_utf8_lossy(&seen);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    // Anthropic's shape, for /v1/messages.
    assert!(reply.contains("\"type\":\"error\""), "{reply}");
    assert!(h.mock.requests().is_empty());
}

#[tokio::test]
async fn a_request_answered_without_reading_its_body_does_not_hold_the_connection() {
    let (_h, addr) = gateway(config()).await;
    for head in [
        // Refused by the guard (no content type), by the router (no such route).
        "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-length: 1000\r\n\r\n{",
        "POST /v1/nowhere HTTP/1.1\r\nhost: localhost\r\ncontent-length: 1000\r\n\r\n{",
    ] {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        let start = Instant::now();
        let (reply, after) = until_closed(&mut s, start, BODY + MARGIN).await;
        assert!(reply.starts_with("HTTP/1.1 4"), "{reply}");
        let after = after.expect("the connection stayed open behind an unread body");
        assert!(after < BODY, "closed only by a deadline: {after:?}");
    }
}

#[tokio::test]
async fn an_idle_keep_alive_connection_outlives_the_header_deadline_and_is_closed_at_the_idle_one()
{
    let (h, addr) = gateway(config()).await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(healthz()).await.unwrap();
    assert!(one_response(&mut s).await.starts_with("HTTP/1.1 200"));
    // Idle past the header deadline: still served.
    tokio::time::sleep(HEADER + Duration::from_millis(150)).await;
    s.write_all(healthz()).await.unwrap();
    assert!(one_response(&mut s).await.starts_with("HTTP/1.1 200"));
    let answered = Instant::now();
    let (seen, after) = until_closed(&mut s, answered, IDLE + MARGIN).await;
    assert_cut_at(after, IDLE, "an idle keep-alive connection");
    assert_eq!(seen, "");
    assert!(h.metrics().await.contains("{reason=\"idle_timeout\"} 1\n"));
}

#[tokio::test]
async fn on_a_kept_alive_connection_the_next_head_has_the_header_deadline_from_its_first_byte() {
    let (_h, addr) = gateway(config()).await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(healthz()).await.unwrap();
    one_response(&mut s).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: loc")
        .await
        .unwrap();
    let first_byte = Instant::now();
    let (_, after) = until_closed(&mut s, first_byte, HEADER + MARGIN).await;
    assert_cut_at(after, HEADER, "a second head never finished");
}

#[tokio::test]
async fn the_connection_cap_holds_and_says_why() {
    let (h, addr) = gateway(GatewayConfig {
        max_connections: 2,
        header_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        ..config()
    })
    .await;
    // Two connections busy with a call each (a stream that never ends): none idle.
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(busy_connection(&addr).await);
    }
    for path in ["/v1/chat/completions", "/v1/messages"] {
        let mut third = TcpStream::connect(&addr).await.unwrap();
        third
            .write_all(format!("POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{{}}").as_bytes())
            .await
            .unwrap();
        let (reply, closed) =
            until_closed(&mut third, Instant::now(), Duration::from_secs(2)).await;
        assert!(closed.is_some(), "the connection over the cap stayed open");
        let status = if path == "/v1/messages" { "529" } else { "503" };
        assert!(reply.starts_with(&format!("HTTP/1.1 {status}")), "{reply}");
        assert!(reply.contains("retry-after: 1"), "{reply}");
        assert!(
            reply.contains("as many connections as it takes (2, listen.max_connections)"),
            "{reply}"
        );
    }
    assert_eq!(
        h.mock.requests().len(),
        2,
        "only the held calls reached the mock"
    );
    // A slot freed is a connection served again.
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(2);
    let metrics = loop {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let (reply, _) = until_closed(&mut s, Instant::now(), Duration::from_secs(2)).await;
        if reply.starts_with("HTTP/1.1 200") {
            break reply;
        }
        assert!(
            Instant::now() < deadline,
            "no connection served after one closed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        metrics.contains("{reason=\"connection_cap\"} "),
        "{metrics}"
    );
    assert!(
        !metrics.contains("{reason=\"connection_cap\"} 0\n"),
        "{metrics}"
    );
}

/// A connection busy with a call that never ends (a stream of `mock/hang`), its reply's
/// head read.
async fn busy_connection(addr: &str) -> TcpStream {
    let body = json!({"model": "mock/hang", "stream": true, "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("\r\n\r\n") {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(
        seen.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&seen)
    );
    s
}

/// One request on its own connection; the status, the head and the body as JSON.
async fn exchange(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, Value) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut text = format!(
        "{method} {path} HTTP/1.1\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    s.write_all(text.as_bytes()).await.unwrap();
    let (reply, _) = until_closed(&mut s, Instant::now(), Duration::from_secs(5)).await;
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (
        status,
        head.to_ascii_lowercase(),
        serde_json::from_str(body).unwrap_or(Value::String(body.into())),
    )
}

fn chat() -> String {
    json!({"model": "mock/echo", "messages": [{"role": "user", "content": "hi"}]}).to_string()
}

const JSON: (&str, &str) = ("content-type", "application/json");

#[tokio::test]
async fn without_keys_foreign_hosts_origins_and_body_types_are_refused_before_any_call() {
    let (h, addr) = gateway(GatewayConfig {
        allowed_hosts: vec!["gw.internal".into()],
        ..config()
    })
    .await;
    let refused = [
        (vec![("host", "attacker.example"), JSON], 403, "the Host header `attacker.example` is not a loopback name; a gateway without client keys answers only loopback names"),
        (vec![("host", "attacker.example:8080"), JSON], 403, "listen.allowed_hosts (gw.internal)"),
        (vec![("host", "localhost"), JSON, ("origin", "https://evil.example")], 403, "requests from the web origin `https://evil.example` are refused"),
        (vec![("host", "localhost"), ("content-type", "text/plain")], 415, "found `text/plain`"),
        (vec![("host", "localhost")], 415, "found no Content-Type"),
    ];
    for (headers, status, message) in &refused {
        let (s, _, b) = exchange(&addr, "POST", "/v1/chat/completions", headers, &chat()).await;
        assert_eq!(s, *status, "{headers:?}: {b}");
        assert_eq!(b["error"]["type"], "invalid_request_error", "{b}");
        assert!(
            b["error"]["message"].as_str().unwrap().contains(message),
            "{headers:?}: {b}"
        );
    }
    // In the path's dialect: Anthropic's and Gemini's permission errors.
    let (s, _, b) = exchange(
        &addr,
        "POST",
        "/v1/messages",
        &[("host", "attacker.example"), JSON],
        "{}",
    )
    .await;
    assert_eq!(
        (s, b["error"]["type"].as_str()),
        (403, Some("permission_error")),
        "{b}"
    );
    let (s, _, b) = exchange(
        &addr,
        "POST",
        "/v1beta/models/mock/echo:generateContent",
        &[("host", "localhost"), ("content-type", "text/plain")],
        "{}",
    )
    .await;
    assert_eq!(
        (s, b["error"]["status"].as_str()),
        (415, Some("INVALID_ARGUMENT")),
        "{b}"
    );
    // Other routes are guarded by Host too (a rebinding page could read /metrics).
    let (s, _, _) = exchange(
        &addr,
        "GET",
        "/metrics",
        &[("host", "attacker.example")],
        "",
    )
    .await;
    assert_eq!(s, 403);
    assert!(
        h.mock.requests().is_empty(),
        "a refused request reached the upstream"
    );

    let port = addr.rsplit(':').next().unwrap();
    for host in [
        "localhost".to_string(),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "127.1.2.3".into(),
        "gw.internal".into(),
        format!("GW.Internal:{port}"),
    ] {
        let (s, _, b) = exchange(
            &addr,
            "POST",
            "/v1/chat/completions",
            &[
                ("host", &host),
                ("content-type", "application/json; charset=utf-8"),
            ],
            &chat(),
        )
        .await;
        assert_eq!(s, 200, "{host}: {b}");
    }
    for origin in [
        "http://localhost:5173",
        "http://127.0.0.1:3000",
        "http://gw.internal",
    ] {
        let (s, _, b) = exchange(
            &addr,
            "POST",
            "/v1/chat/completions",
            &[("host", "localhost"), JSON, ("origin", origin)],
            &chat(),
        )
        .await;
        assert_eq!(s, 200, "{origin}: {b}");
    }
    let metrics = h.metrics().await;
    for (reason, n) in [("host", 4), ("origin", 1), ("content_type", 3)] {
        assert!(
            metrics.contains(&format!("{{reason=\"{reason}\"}} {n}\n")),
            "{reason}: {metrics}"
        );
    }
}

#[tokio::test]
async fn with_keys_the_key_protects_and_host_and_content_type_are_not_judged() {
    let config = GatewayConfig {
        keys: vec![KeySpec::new("alice", KeySecret::Env("ALICE_KEY".into()))],
        ..config()
    };
    let h = Harness::start_with(config, MapEnv::new([("ALICE_KEY", "sk-alice")])).await;
    let addr = h.url.trim_start_matches("http://").to_string();
    let headers = [
        ("host", "gw.example.com"),
        ("content-type", "text/plain"),
        ("origin", "https://tool.example"),
        ("authorization", "Bearer sk-alice"),
    ];
    let (s, head, b) = exchange(&addr, "POST", "/v1/chat/completions", &headers, &chat()).await;
    assert_eq!(s, 200, "{b}");
    assert!(!head.contains("access-control-allow-origin"), "{head}");
    let (s, _, _) = exchange(
        &addr,
        "POST",
        "/v1/chat/completions",
        &headers[..3],
        &chat(),
    )
    .await;
    assert_eq!(s, 401);
}

#[tokio::test]
async fn cors_preflights_are_refused_unless_the_origin_is_configured() {
    let preflight = [
        ("host", "localhost"),
        ("origin", "https://app.example.com"),
        ("access-control-request-method", "POST"),
        ("access-control-request-headers", "content-type, x-api-key"),
    ];
    let (h, addr) = gateway(config()).await;
    let (s, head, b) = exchange(&addr, "OPTIONS", "/v1/messages", &preflight, "").await;
    assert_eq!(s, 403, "{b}");
    assert!(!head.contains("access-control-allow-origin"), "{head}");
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap()
            .contains("listen.cors_origins (none configured)"),
        "{b}"
    );
    assert!(h.metrics().await.contains("{reason=\"preflight\"} 1\n"));

    let (_h, addr) = gateway(GatewayConfig {
        cors_origins: vec!["https://app.example.com".into()],
        ..config()
    })
    .await;
    let (s, head, _) = exchange(&addr, "OPTIONS", "/v1/messages", &preflight, "").await;
    assert_eq!(s, 204, "{head}");
    assert!(
        head.contains("access-control-allow-origin: https://app.example.com"),
        "{head}"
    );
    assert!(
        head.contains("access-control-allow-headers: content-type, x-api-key"),
        "{head}"
    );
    assert!(
        head.contains("access-control-allow-methods: get, head, post"),
        "{head}"
    );
    let (s, head, _) = exchange(
        &addr,
        "POST",
        "/v1/chat/completions",
        &[
            ("host", "localhost"),
            JSON,
            ("origin", "https://app.example.com"),
        ],
        &chat(),
    )
    .await;
    assert_eq!(s, 200);
    assert!(
        head.contains("access-control-allow-origin: https://app.example.com"),
        "{head}"
    );
    let (s, _, _) = exchange(
        &addr,
        "OPTIONS",
        "/v1/messages",
        &[
            ("host", "localhost"),
            ("origin", "https://other.example"),
            ("access-control-request-method", "POST"),
        ],
        "",
    )
    .await;
    assert_eq!(s, 403);
}

#[tokio::test]
async fn unknown_routes_and_wrong_methods_answer_in_the_paths_dialect() {
    let (h, addr) = gateway(config()).await;
    let host = [("host", "localhost")];
    let (s, _, b) = exchange(&addr, "GET", "/v1/nowhere", &host, "").await;
    assert_eq!(s, 404);
    assert_eq!(b["error"]["type"], "invalid_request_error", "{b}");
    assert_eq!(b["error"]["code"], Value::Null, "{b}");
    let m = b["error"]["message"].as_str().unwrap();
    assert!(
        m.contains("no route `GET /v1/nowhere`") && m.contains("POST /v1/chat/completions"),
        "{m}"
    );
    let (s, _, b) = exchange(
        &addr,
        "POST",
        "/v1/messages/nowhere",
        &[host[0], JSON],
        "{}",
    )
    .await;
    assert_eq!(
        (s, b["type"].as_str(), b["error"]["type"].as_str()),
        (404, Some("error"), Some("not_found_error")),
        "{b}"
    );
    let (s, _, b) = exchange(&addr, "GET", "/v1beta/nowhere", &host, "").await;
    assert_eq!(
        (
            s,
            b["error"]["status"].as_str(),
            b["error"]["code"].as_u64()
        ),
        (404, Some("NOT_FOUND"), Some(404)),
        "{b}"
    );

    let (s, head, b) = exchange(&addr, "GET", "/v1/chat/completions", &host, "").await;
    assert_eq!(s, 405, "{b}");
    assert!(head.contains("allow: post"), "{head}");
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap()
            .contains("this route takes POST"),
        "{b}"
    );
    let (s, _, b) = exchange(&addr, "GET", "/v1/messages", &host, "").await;
    assert_eq!(
        (s, b["error"]["type"].as_str()),
        (405, Some("invalid_request_error")),
        "{b}"
    );
    assert_eq!(b["type"], "error");
    let (s, _, b) = exchange(
        &addr,
        "GET",
        "/v1beta/models/mock/echo:generateContent",
        &host,
        "",
    )
    .await;
    assert_eq!((s, b["error"]["code"].as_u64()), (405, Some(405)), "{b}");
    let (s, _, b) = exchange(&addr, "DELETE", "/healthz", &host, "").await;
    assert_eq!(s, 405, "{b}");
    let metrics = h.metrics().await;
    assert!(metrics.contains("{reason=\"not_found\"} 3\n"), "{metrics}");
    assert!(metrics.contains("{reason=\"method\"} 4\n"), "{metrics}");
}

#[tokio::test]
async fn a_body_nested_too_deep_is_refused_before_it_is_forwarded() {
    let (h, addr) = gateway(config()).await;
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let chat = format!(
        r#"{{"model":"mock/echo","messages":[{{"role":"user","content":"hi"}}],"metadata":{deep}}}"#
    );
    let (s, _, b) = exchange(
        &addr,
        "POST",
        "/v1/chat/completions",
        &[("host", "localhost"), JSON],
        &chat,
    )
    .await;
    assert_eq!(s, 400, "{b}");
    let m = b["error"]["message"].as_str().unwrap();
    assert!(
        m.contains("more than 127 levels deep") && m.contains("listen.max_json_depth"),
        "{m}"
    );
    let messages = format!(
        r#"{{"model":"mock/echo","max_tokens":5,"messages":[{{"role":"user","content":{deep}}}]}}"#
    );
    let (s, _, b) = exchange(
        &addr,
        "POST",
        "/v1/messages",
        &[("host", "localhost"), JSON],
        &messages,
    )
    .await;
    assert_eq!(
        (s, b["error"]["type"].as_str()),
        (400, Some("invalid_request_error")),
        "{b}"
    );
    assert!(
        h.mock.requests().is_empty(),
        "a too-deep body was forwarded"
    );
    // Brackets inside strings are text, not depth.
    let text =
        json!({"model": "mock/echo", "messages": [{"role": "user", "content": "[".repeat(500)}]})
            .to_string();
    let (s, _, b) = exchange(
        &addr,
        "POST",
        "/v1/chat/completions",
        &[("host", "localhost"), JSON],
        &text,
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(h.metrics().await.contains("{reason=\"json_depth\"} 2\n"));
}

#[tokio::test]
async fn h2c_is_served_as_before() {
    let (_h, addr) = gateway(config()).await;
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let r = client
        .post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(chat())
        .send()
        .await
        .unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    assert_eq!(r.status(), 200);
    // An h2c connection idles past the header deadline and keeps being served.
    tokio::time::sleep(HEADER + Duration::from_millis(100)).await;
    let r = client
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn calls_in_flight_when_the_drain_deadline_passes_are_recorded_as_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let (mut h, _) = gateway(GatewayConfig {
        store: Some(dir.path().to_path_buf()),
        drain_timeout: Duration::from_millis(300),
        ..config()
    })
    .await;
    let mut r = h
        .http
        .post(format!("{}/v1/chat/completions", h.url))
        .header("content-type", "application/json")
        .body(json!({"model": "mock/hang", "stream": true, "messages": [{"role": "user", "content": "hi"}]}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(!r.chunk().await.unwrap().unwrap().is_empty());
    let stopping = Instant::now();
    h.gateway.take().unwrap().shutdown().await.unwrap();
    let took = stopping.elapsed();
    assert!(
        took >= Duration::from_millis(300) - EARLY && took < Duration::from_secs(3),
        "{took:?}"
    );
    // The stream was cut.
    assert!(tokio::time::timeout(Duration::from_secs(2), async {
        while let Ok(Some(_)) = r.chunk().await {}
    })
    .await
    .is_ok());
    let records = switchyard::record::read_records(dir.path()).unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    let error = records[0]
        .error
        .as_ref()
        .expect("the cut call has an error");
    assert_eq!(error.kind, "cancelled");
    assert_eq!(
        error.message,
        "the gateway stopped before the reply ended (drain deadline passed)"
    );
    assert!(records[0].raw.is_some(), "what it had received is kept");
}

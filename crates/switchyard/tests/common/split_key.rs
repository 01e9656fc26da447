//! A chat provider on a raw socket whose reply's text holds a key cut in two: the first
//! half in one network write, the rest 30 ms later in another, whole (`application/json`)
//! or streamed (SSE), as the request asks. What the redaction of a body read chunk by chunk
//! must still find (shared by the library's and the gateway's `tests/redaction.rs`).

#![allow(dead_code)]

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The text of the reply: `The key is <key>.`
pub(crate) fn text(key: &str) -> String {
    format!("The key is {key}.")
}

/// Starts the provider; gives its base URL (`http://127.0.0.1:<port>/v1`).
pub(crate) async fn start(key: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(answer(socket, key));
        }
    });
    format!("http://{addr}/v1")
}

async fn answer(mut socket: tokio::net::TcpStream, key: &str) {
    let Some(body) = read_request(&mut socket).await else {
        return;
    };
    let stream = String::from_utf8_lossy(&body).contains("\"stream\":true");
    let usage = r#"{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}"#;
    let (content_type, whole) = if stream {
        let chunk = |delta: &str, finish: &str, usage: &str| {
            format!(
                "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]{usage}}}\n\n"
            )
        };
        let content = serde_json::json!({"content": text(key)}).to_string();
        let events = chunk(&content, "null", "")
            + &chunk("{}", "\"stop\"", &format!(",\"usage\":{usage}"))
            + "data: [DONE]\n\n";
        ("text/event-stream", events)
    } else {
        let reply = serde_json::json!({
            "id": "c1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text(key)},
                         "finish_reason": "stop"}],
        });
        let mut reply = reply.to_string();
        reply.pop();
        ("application/json", format!("{reply},\"usage\":{usage}}}"))
    };
    let cut = whole.find(key).unwrap() + key.len() / 2;
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    );
    let chunked = |part: &str| format!("{:x}\r\n{part}\r\n", part.len());
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(chunked(&whole[..cut]).as_bytes()).await;
    let _ = socket.flush().await;
    tokio::time::sleep(Duration::from_millis(30)).await;
    let _ = socket.write_all(chunked(&whole[cut..]).as_bytes()).await;
    let _ = socket.write_all(b"0\r\n\r\n").await;
    let _ = socket.shutdown().await;
}

/// The request's body, read by its `content-length`.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut part = [0u8; 8192];
    loop {
        let n = socket.read(&mut part).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&part[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let len = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if buf.len() >= end + 4 + len {
            return Some(buf[end + 4..end + 4 + len].to_vec());
        }
    }
}

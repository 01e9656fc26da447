//! Helpers for talking to the mock over real HTTP.
#![allow(dead_code)]

use serde_json::{json, Value};
use switchyard_mock::MockServer;
use switchyard_wire::{codec, ByteStreamDecoder, Dialect, Event, Reply};

pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::new()
}

/// The URL of a dialect's endpoint for `model`.
pub(crate) fn endpoint(mock: &MockServer, dialect: Dialect, model: &str, stream: bool) -> String {
    match dialect {
        Dialect::Chat => format!("{}/chat/completions", mock.base_url()),
        Dialect::Responses => format!("{}/responses", mock.base_url()),
        Dialect::Messages => format!("{}/v1/messages", mock.url()),
        Dialect::Gemini if stream => format!(
            "{}/v1beta/models/{model}:streamGenerateContent?alt=sse",
            mock.url()
        ),
        Dialect::Gemini => format!("{}/v1beta/models/{model}:generateContent", mock.url()),
    }
}

/// A hand-written request body saying `prompt`, in the dialect's own shape.
pub(crate) fn raw_body(dialect: Dialect, model: &str, prompt: &str, stream: bool) -> Value {
    match dialect {
        Dialect::Chat => json!({"model": model, "stream": stream,
            "messages": [{"role": "user", "content": prompt}]}),
        Dialect::Responses => json!({"model": model, "stream": stream, "input": prompt}),
        Dialect::Messages => json!({"model": model, "stream": stream, "max_tokens": 64,
            "messages": [{"role": "user", "content": prompt}]}),
        Dialect::Gemini => json!({"contents": [{"role": "user", "parts": [{"text": prompt}]}]}),
    }
}

/// Posts a hand-written body.
pub(crate) async fn post_raw(
    mock: &MockServer,
    dialect: Dialect,
    model: &str,
    prompt: &str,
    stream: bool,
) -> reqwest::Response {
    client()
        .post(endpoint(mock, dialect, model, stream))
        .json(&raw_body(dialect, model, prompt, stream))
        .send()
        .await
        .expect("request reaches the mock")
}

/// A response's status, headers we care about and JSON body.
pub(crate) async fn json_of(
    response: reqwest::Response,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.expect("body");
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
    (status, headers, value)
}

/// Decodes a non-streamed reply with the dialect's codec.
pub(crate) async fn decode_reply(dialect: Dialect, response: reqwest::Response) -> Reply {
    assert_eq!(response.status().as_u16(), 200, "status");
    let bytes = response.bytes().await.expect("body");
    codec(dialect)
        .decode_reply(&bytes)
        .unwrap_or_else(|e| panic!("{dialect} reply: {e}: {}", String::from_utf8_lossy(&bytes)))
}

/// Reads a stream chunk by chunk, decoding with the dialect's codec. Returns the
/// events, the network chunks seen, and the decoder's finish result.
pub(crate) async fn read_stream(
    dialect: Dialect,
    mut response: reqwest::Response,
) -> (Vec<Event>, usize, Result<Vec<Event>, String>) {
    let mut decoder = ByteStreamDecoder::new(codec(dialect));
    let mut events = Vec::new();
    let mut chunks = 0;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                chunks += 1;
                events.extend(decoder.push(&chunk).expect("decodable chunk"));
            }
            Ok(None) => break,
            Err(e) => return (events, chunks, Err(format!("transport: {e}"))),
        }
    }
    let end = decoder.finish().map_err(|e| e.to_string());
    (events, chunks, end)
}

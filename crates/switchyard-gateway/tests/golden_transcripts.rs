//! The codecs checked against transcripts they did not produce: a stub upstream answers
//! with a real-provider-shaped reply or stream from `switchyard-wire/tests/fixtures/`,
//! byte for byte, and every OTHER client dialect asks the gateway for it (streamed for a
//! stream, whole for a whole reply). What the client gets is compared with an expected
//! output written out by hand in `tests/golden/<dialect>__<fixture>__to_<client>.txt`.
//!
//! Masked in the comparison: what the gateway generates afresh on each call (`created`
//! times, `created_at`), and the VALUE of every opaque-state field (`signature`,
//! `encrypted_content`, `thoughtSignature`/`thought_signature`), which becomes
//! `"<opaque>"` with its key kept (an empty one stays empty), so whether it is present is
//! still checked.
//!
//! `SWITCHYARD_BLESS=1 cargo test -p switchyard-gateway --test golden_transcripts`
//! rewrites the expected files from the gateway's output. Blessed output must be read by
//! hand against the input transcript and the client dialect's documented format
//! (`wire-formats.md`) before it is committed: an expected file is a claim that the
//! translation is right, not a record of what the code happens to do.

mod common;

use common::{client_body, gateway_for, path, stub, DIALECTS};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use switchyard_gateway::start;
use switchyard_wire::{Dialect, Request, Tool, ToolKind};

/// The transcripts: the upstream dialect and the file under `fixtures/<dialect>/`.
const TRANSCRIPTS: &[(Dialect, &str)] = &[
    (Dialect::Chat, "openai_tool_call_reply.json"),
    (Dialect::Chat, "openai_tool_call_stream.sse"),
    (Dialect::Chat, "deepseek_reasoning_stream.sse"),
    (Dialect::Responses, "reply_reasoning.json"),
    (Dialect::Responses, "stream_function_call.sse"),
    (Dialect::Messages, "reply_thinking_cache.json"),
    (Dialect::Messages, "stream_tool_use.sse"),
    (Dialect::Messages, "stream_thinking.sse"),
    (Dialect::Gemini, "thinking_reply.json"),
    (Dialect::Gemini, "stream_thinking_tool.sse"),
];

/// Keys whose values are opaque provider state.
const OPAQUE: &[&str] = &[
    "signature",
    "encrypted_content",
    "thoughtSignature",
    "thought_signature",
];

/// Keys whose values the gateway makes afresh per call.
const VOLATILE: &[&str] = &["created", "created_at"];

fn tool(name: &str) -> Tool {
    Tool {
        name: name.into(),
        description: None,
        parameters: json!({"type": "object", "properties": {}}),
        kind: ToolKind::Function,
        strict: None,
        namespace: None,
    }
}

/// What every client asks: a question and the tools the transcripts call.
fn request() -> Request {
    let mut r = Request::user("What is the weather in Paris?").with_system("Be brief.");
    r.tools = vec![tool("get_weather"), tool("get_time")];
    r
}

fn fixture(dialect: Dialect, file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../switchyard-wire/tests/fixtures")
        .join(dialect.to_string())
        .join(file)
}

fn expected_file(dialect: Dialect, file: &str, client: Dialect) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{dialect}__{file}__to_{client}.txt"))
}

fn mask(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if OPAQUE.contains(&k.as_str()) && v.as_str() != Some("") {
                    *v = Value::String("<opaque>".into());
                } else if VOLATILE.contains(&k.as_str()) && v.is_number() {
                    *v = Value::String("<time>".into());
                } else {
                    mask(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask),
        _ => {}
    }
}

/// A whole body pretty-printed, or a stream one line per SSE field with each `data:`
/// JSON masked; either way masked.
fn normalise(body: &[u8], stream: bool) -> String {
    let text = String::from_utf8(body.to_vec()).expect("UTF-8 output");
    if !stream {
        let mut v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        mask(&mut v);
        return serde_json::to_string_pretty(&v).unwrap() + "\n";
    }
    let mut out = String::new();
    for line in text.replace("\r\n", "\n").lines() {
        match line.strip_prefix("data:") {
            Some(data) => match serde_json::from_str::<Value>(data.trim_start()) {
                Ok(mut v) => {
                    mask(&mut v);
                    out.push_str(&format!("data: {v}\n"));
                }
                Err(_) => out.push_str(&format!("{line}\n")),
            },
            None => out.push_str(&format!("{line}\n")),
        }
    }
    out
}

#[tokio::test]
async fn foreign_transcripts_translate_to_every_client_dialect() {
    let bless = std::env::var_os("SWITCHYARD_BLESS").is_some();
    let mut failures = Vec::new();
    for &(upstream, file) in TRANSCRIPTS {
        let stream = file.ends_with(".sse");
        let origin = stub::serve_file(&fixture(upstream, file)).await;
        let config = switchyard_gateway::GatewayConfig {
            retry: switchyard::RetryPolicy::never(),
            ..Default::default()
        };
        let gateway = gateway_for(&format!("{origin}/v1"), config, Default::default(), &[]);
        let running = start(gateway, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let model = format!("up-{upstream}/golden-model");
        let http = reqwest::Client::new();
        for client in DIALECTS.into_iter().filter(|c| *c != upstream) {
            let case = format!("{upstream}/{file} → {client}");
            let response = http
                .post(format!("{}{}", running.url(), path(client, &model, stream)))
                .header("content-type", "application/json")
                .body(client_body(client, &model, &request(), stream))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body = response.bytes().await.unwrap();
            assert_eq!(status, 200, "{case}: {}", String::from_utf8_lossy(&body));
            let got = normalise(&body, stream);
            let expected_path = expected_file(upstream, file, client);
            if bless {
                std::fs::create_dir_all(expected_path.parent().unwrap()).unwrap();
                std::fs::write(&expected_path, &got).unwrap();
                continue;
            }
            let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
            if got != expected {
                failures.push(format!(
                    "{case}: differs from {}\n--- expected\n{expected}\n--- got\n{got}",
                    expected_path.display()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of the translations differ (SWITCHYARD_BLESS=1 rewrites them; review by hand):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

//! Every dialect × {plain text, tool round trip, thinking, cache usage, streaming},
//! encoded and decoded with the dialect's own codec, over real HTTP.

mod common;

use common::*;
use serde_json::json;
use std::time::{Duration, Instant};
use switchyard_mock::signing::{self, Kind};
use switchyard_mock::MockServer;
use switchyard_wire::{
    assemble, codec, Dialect, EncodeOptions, Event, FinishReason, Message, Part, Reply, Request,
    Role, Tool, ToolKind, ToolResult,
};

async fn call(mock: &MockServer, d: Dialect, model: &str, request: &Request) -> Reply {
    let body = codec(d)
        .encode_request(
            request,
            &EncodeOptions {
                model,
                stream: false,
            },
        )
        .unwrap_or_else(|e| panic!("{d} encode: {e}"));
    let r = client()
        .post(endpoint(mock, d, model, false))
        .json(&body)
        .send()
        .await
        .unwrap();
    decode_reply(d, r).await
}

async fn call_stream(
    mock: &MockServer,
    d: Dialect,
    model: &str,
    request: &Request,
) -> (Vec<Event>, usize, Result<Vec<Event>, String>) {
    let body = codec(d)
        .encode_request(
            request,
            &EncodeOptions {
                model,
                stream: true,
            },
        )
        .unwrap_or_else(|e| panic!("{d} encode: {e}"));
    let r = client()
        .post(endpoint(mock, d, model, true))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "{d} stream status");
    read_stream(d, r).await
}

fn weather_tool() -> Tool {
    Tool {
        name: "get_weather".into(),
        description: Some("Weather for a city".into()),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        kind: ToolKind::Function,
        strict: None,
        namespace: None,
    }
}

#[tokio::test]
async fn plain_text_in_every_dialect() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let reply = call(&mock, d, "echo", &Request::user("hello there")).await;
        assert_eq!(reply.text(), "hello there", "{d}");
        assert_eq!(reply.finish, FinishReason::Stop, "{d}");
        let usage = reply.usage.expect("usage");
        assert_eq!((usage.input, usage.output), (3, 3), "{d}");
        let sent = mock.requests().pop().unwrap();
        assert!(
            sent.body_text().contains("hello there"),
            "{d}: the request reached the mock"
        );

        let reply = call(&mock, d, "mock/say:fixed words", &Request::user("x")).await;
        assert_eq!(reply.text(), "fixed words", "{d}");
    }
}

#[tokio::test]
async fn tool_round_trip_in_every_dialect() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let mut request = Request::user("weather in Paris?");
        request.tools.push(weather_tool());
        let reply = call(&mock, d, "tools", &request).await;
        let call_part = reply
            .tool_calls()
            .next()
            .cloned()
            .unwrap_or_else(|| panic!("{d}: no call"));
        assert_eq!(call_part.name, "get_weather", "{d}");
        let args: serde_json::Value = serde_json::from_str(&call_part.arguments).unwrap();
        assert_eq!(args, json!({"city": "Paris"}), "{d}");
        assert_eq!(reply.finish, FinishReason::ToolCalls, "{d}");
        let sent = mock.requests().pop().unwrap();
        assert!(
            sent.body_text().contains("get_weather"),
            "{d}: tools reached the mock"
        );

        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![Part::ToolCall(call_part.clone())],
        });
        request.messages.push(Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(ToolResult {
                call_id: call_part.id.clone(),
                name: Some("get_weather".into()),
                content: vec![Part::text("sunny, 21C")],
                is_error: false,
                kind: ToolKind::Function,
            })],
        });
        let reply = call(&mock, d, "tools", &request).await;
        assert!(reply.text().contains("sunny, 21C"), "{d}: {}", reply.text());
        assert_eq!(reply.finish, FinishReason::Stop, "{d}");
    }
}

#[tokio::test]
async fn thinking_in_every_dialect() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let reply = call(&mock, d, "think+say:done", &Request::user("ponder")).await;
        assert!(!reply.thinking().is_empty(), "{d}: {reply:?}");
        assert_eq!(reply.text(), "done", "{d}");
        if d != Dialect::Messages {
            // Anthropic's usage has no reasoning count.
            assert!(reply.usage.unwrap().reasoning > 0, "{d}");
        }
        if d != Dialect::Chat {
            let Some(Part::Thinking(t)) = reply.content.first() else {
                panic!("{d}")
            };
            let state = t
                .state
                .as_ref()
                .unwrap_or_else(|| panic!("{d}: state kept"));
            assert_eq!(state.dialect, d);
            // Standard base64 the mock can verify (docs/mock.md, "Signatures").
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD.decode(&state.value);
            assert!(bytes.is_ok(), "{d}: {}", state.value);
            let ours = match d {
                Dialect::Messages => signing::verify_thinking(&t.text, &state.value),
                Dialect::Responses => signing::verify_unbound(Kind::EncryptedContent, &state.value),
                _ => signing::verify_unbound(Kind::ThoughtSignature, &state.value),
            };
            assert!(ours, "{d}: {}", state.value);
        }
    }
}

#[tokio::test]
async fn cache_usage_in_every_dialect() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let reply = call(&mock, d, "echo+cache", &Request::user("hello there")).await;
        let u = reply.usage.unwrap();
        assert_eq!(u.cached_input, 1024, "{d}: {u:?}");
        if d == Dialect::Messages {
            assert_eq!(u.cache_write, 256, "{d}: {u:?}");
            assert_eq!(u.input, 3 + 1024 + 256, "{d}: {u:?}");
        }
    }
}

#[tokio::test]
async fn streams_assemble_to_the_non_streamed_reply() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        for model in ["echo+think+cache", "tools"] {
            let mut request = Request::user("stream me a reply, please");
            request.tools.push(weather_tool());
            let whole = call(&mock, d, model, &request).await;
            let (events, chunks, end) = call_stream(&mock, d, model, &request).await;
            let mut all = events;
            all.extend(end.unwrap_or_else(|e| panic!("{d} {model}: {e}")));
            let streamed = assemble(&all).unwrap_or_else(|e| panic!("{d} {model}: {e}"));
            let least = if model == "tools" { 1 } else { 3 };
            assert!(chunks >= least, "{d} {model}: {chunks} network chunks");
            assert_eq!(streamed.text(), whole.text(), "{d} {model}");
            assert_eq!(streamed.thinking(), whole.thinking(), "{d} {model}");
            assert_eq!(
                streamed
                    .tool_calls()
                    .map(|c| (&c.name, &c.arguments))
                    .collect::<Vec<_>>(),
                whole
                    .tool_calls()
                    .map(|c| (&c.name, &c.arguments))
                    .collect::<Vec<_>>(),
                "{d} {model}"
            );
            assert_eq!(streamed.finish, whole.finish, "{d} {model}");
        }
    }
}

#[tokio::test]
async fn streams_really_stream_with_per_token_delays() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let model = "chunk-5+delay-30ms+say:abcdefghijklmnopqrst";
        let body = codec(d)
            .encode_request(
                &Request::user("x"),
                &EncodeOptions {
                    model,
                    stream: true,
                },
            )
            .unwrap();
        let start = Instant::now();
        let mut r = client()
            .post(endpoint(&mock, d, model, true))
            .json(&body)
            .send()
            .await
            .unwrap();
        let mut arrivals = Vec::new();
        while let Some(chunk) = r.chunk().await.unwrap() {
            if !chunk.is_empty() {
                arrivals.push(start.elapsed());
            }
        }
        let total = start.elapsed();
        assert!(
            total >= Duration::from_millis(120),
            "{d}: 4 deltas x 30 ms, took {total:?}"
        );
        // Really streamed: the chunks arrive spread over the deltas' delays.
        let spread = arrivals[arrivals.len() - 1] - arrivals[0];
        assert!(
            spread >= Duration::from_millis(55),
            "{d}: arrivals {arrivals:?}"
        );
        assert!(arrivals.len() >= 4, "{d}: {arrivals:?}");
    }
}

#[tokio::test]
async fn cut_streams_are_cut() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let (events, _, end) = call_stream(
            &mock,
            d,
            "cut-stream+say:one two three four five six",
            &Request::user("x"),
        )
        .await;
        assert!(
            end.is_err(),
            "{d}: a cut stream must not decode as complete"
        );
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(
            !text.is_empty() && text.len() < "one two three four five six".len(),
            "{d}: {text:?}"
        );
        assert!(
            !events.iter().any(|e| matches!(e, Event::Finish { .. })),
            "{d}"
        );
    }
    // The reset variant breaks the connection.
    let body = codec(Dialect::Chat)
        .encode_request(
            &Request::user("x"),
            &EncodeOptions {
                model: "cut-stream-reset",
                stream: true,
            },
        )
        .unwrap();
    let r = client()
        .post(endpoint(
            &mock,
            Dialect::Chat,
            "cut-stream-reset+say:a b c d e f g h",
            true,
        ))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (_, _, end) = read_stream(Dialect::Chat, r).await;
    assert!(end.unwrap_err().starts_with("transport"));
}

#[tokio::test]
async fn errors_mid_stream_after_some_text() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let (events, _, _) = call_stream(
            &mock,
            d,
            "error-mid-stream+say:one two three four",
            &Request::user("x"),
        )
        .await;
        assert!(
            events.iter().any(|e| matches!(e, Event::TextDelta { .. })),
            "{d}: text first"
        );
        let error = events.iter().find_map(|e| match e {
            Event::Error(e) => Some(e.clone()),
            _ => None,
        });
        let error = error.unwrap_or_else(|| panic!("{d}: no error event in {events:?}"));
        assert!(!error.message.is_empty(), "{d}");
    }
}

#[tokio::test]
async fn a_hanging_stream_stalls_after_its_first_event() {
    let mock = MockServer::start().await;
    let d = Dialect::Messages;
    let body = codec(d)
        .encode_request(
            &Request::user("x"),
            &EncodeOptions {
                model: "hang",
                stream: true,
            },
        )
        .unwrap();
    let mut r = client()
        .post(endpoint(&mock, d, "hang", true))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let first = r.chunk().await.unwrap();
    assert!(first.is_some_and(|c| !c.is_empty()));
    let next = tokio::time::timeout(Duration::from_millis(150), async {
        let mut more = Vec::new();
        while let Ok(Some(c)) = r.chunk().await {
            more.push(c);
        }
        more
    })
    .await;
    // Either nothing more ever arrives, or only the events before the first delta did.
    if let Ok(more) = next {
        panic!("the stream ended instead of hanging: {more:?}");
    }
}

#[tokio::test]
async fn no_text_and_no_usage_replies() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let body = codec(d)
            .encode_request(
                &Request::user("x"),
                &EncodeOptions {
                    model: "no-text",
                    stream: false,
                },
            )
            .unwrap();
        let r = client()
            .post(endpoint(&mock, d, "no-text", false))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let bytes = r.bytes().await.unwrap();
        if let Ok(reply) = codec(d).decode_reply(&bytes) {
            assert!(
                reply.text().is_empty() && reply.tool_calls().next().is_none(),
                "{d}"
            );
        }
        let body = codec(d)
            .encode_request(
                &Request::user("x"),
                &EncodeOptions {
                    model: "no-usage",
                    stream: false,
                },
            )
            .unwrap();
        let r = client()
            .post(endpoint(&mock, d, "no-usage", false))
            .json(&body)
            .send()
            .await
            .unwrap();
        let bytes = r.bytes().await.unwrap();
        if let Ok(reply) = codec(d).decode_reply(&bytes) {
            assert_eq!(
                reply.usage,
                None,
                "{d}: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
}

#[tokio::test]
async fn replies_are_reproducible_byte_for_byte() {
    let a = MockServer::start().await;
    let b = MockServer::start().await;
    for d in Dialect::ALL {
        let body = codec(d)
            .encode_request(
                &Request::user("same"),
                &EncodeOptions {
                    model: "think+cache",
                    stream: false,
                },
            )
            .unwrap();
        let ra = client()
            .post(endpoint(&a, d, "think+cache", false))
            .json(&body)
            .send()
            .await
            .unwrap();
        let rb = client()
            .post(endpoint(&b, d, "think+cache", false))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(ra.bytes().await.unwrap(), rb.bytes().await.unwrap(), "{d}");
    }
}

#[tokio::test]
async fn gemini_stream_without_alt_sse_is_a_json_array() {
    let mock = MockServer::start().await;
    let body = codec(Dialect::Gemini)
        .encode_request(
            &Request::user("array"),
            &EncodeOptions {
                model: "echo",
                stream: true,
            },
        )
        .unwrap();
    let r = client()
        .post(format!(
            "{}/v1beta/models/echo:streamGenerateContent",
            mock.url()
        ))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (s, _, v) = json_of(r).await;
    assert_eq!(s, 200);
    assert!(v.as_array().is_some_and(|a| !a.is_empty()), "{v}");
}

#[tokio::test]
async fn a_non_streamed_reply_takes_as_long_as_its_stream() {
    let mock = MockServer::start().await;
    let model = "chunk-5+delay-30ms+say:abcdefghijklmnopqrst";
    let start = Instant::now();
    let reply = call(&mock, Dialect::Chat, model, &Request::user("x")).await;
    assert_eq!(reply.text(), "abcdefghijklmnopqrst");
    assert!(
        start.elapsed() >= Duration::from_millis(120),
        "{:?}",
        start.elapsed()
    );
}

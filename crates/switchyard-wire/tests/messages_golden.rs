//! Golden tests of the messages codec on fixtures shaped like Anthropic's documented
//! replies and streams and like the requests Claude Code and the SDKs send.

use serde_json::{json, Value};
use switchyard_wire::dialect::messages::shape::SHAPE_KEY;
use switchyard_wire::{
    assemble, codec, ByteStreamDecoder, DecodeError, Dialect, EncodeOptions, Event, FinishReason,
    Image, Message, Opaque, Part, Reasoning, Reply, Request, ResponseFormat, Role, ServerContext,
    Thinking, Tool, ToolCall, ToolChoice, ToolKind, ToolResult, Usage,
};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/messages/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn messages() -> &'static dyn switchyard_wire::Codec {
    codec(Dialect::Messages)
}

/// Decodes a stream fed in chunks of `chunk` bytes; returns the events and the result of
/// `finish`.
fn decode_stream(bytes: &[u8], chunk: usize) -> (Vec<Event>, Result<Vec<Event>, DecodeError>) {
    let mut decoder = ByteStreamDecoder::new(messages());
    let mut events = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        events.extend(decoder.push(piece).expect("stream decodes"));
    }
    let end = decoder.finish();
    (events, end)
}

fn stream_reply(name: &str) -> Reply {
    let bytes = fixture(name);
    let mut first: Option<Reply> = None;
    for chunk in [1, 5, 64, bytes.len()] {
        let (mut events, end) = decode_stream(&bytes, chunk);
        events.extend(end.expect("stream ends with message_stop"));
        let reply = assemble(&events).expect("events assemble");
        match &first {
            Some(f) => assert_eq!(&reply, f, "chunk size {chunk} decodes the same"),
            None => first = Some(reply),
        }
    }
    first.unwrap_or_default()
}

fn usage(input: u64, cached_input: u64, cache_write: u64, output: u64) -> Option<Usage> {
    Some(Usage {
        input,
        cached_input,
        cache_write,
        output,
        reasoning: 0,
    })
}

fn sig(value: &str) -> Option<Opaque> {
    Some(Opaque::new(Dialect::Messages, value))
}

fn call(id: &str, name: &str, arguments: &str) -> Part {
    Part::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
        kind: ToolKind::Function,
        namespace: None,
        state: None,
    })
}

// ---------------------------------------------------------------- replies

#[test]
fn a_text_reply_decodes() {
    let body = fixture("reply_text.json");
    let reply = messages().decode_reply(&body).unwrap();
    assert_eq!(reply.content, vec![Part::text("Hi! My name is Claude.")]);
    assert_eq!(reply.finish, FinishReason::Stop);
    assert_eq!(reply.finish_raw.as_deref(), Some("end_turn"));
    assert_eq!(reply.usage, usage(2095, 0, 0, 503));
    assert_eq!(reply.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    assert_eq!(reply.id.as_deref(), Some("msg_013Zva2CMHLNnXjNJJKqJ2EF"));
    assert_eq!(&reply.raw[..], &body[..]);
}

#[test]
fn a_tool_use_reply_decodes_with_compact_arguments() {
    let reply = messages()
        .decode_reply(&fixture("reply_tool_use.json"))
        .unwrap();
    assert_eq!(
        reply.content,
        vec![
            Part::text("I'll check the current weather in San Francisco for you."),
            call(
                "toolu_01A09q90qw90lq917835lq9",
                "get_weather",
                r#"{"location":"San Francisco, CA","unit":"celsius"}"#
            ),
        ]
    );
    assert_eq!(reply.finish, FinishReason::ToolCalls);
    assert_eq!(reply.finish_raw.as_deref(), Some("tool_use"));
}

#[test]
fn thinking_redacted_thinking_and_cache_usage_decode() {
    let reply = messages()
        .decode_reply(&fixture("reply_thinking_cache.json"))
        .unwrap();
    assert_eq!(
        reply.content,
        vec![
            Part::Thinking(Thinking {
                text: "Let me analyze this step by step...".into(),
                state: sig("WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEBLLqIOMfFG/UvLEczmEsUjavL...."),
                redacted: false,
                id: None,
            }),
            Part::Thinking(Thinking {
                text: String::new(),
                state: sig("EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pLmN3kK7ZfHUK7ZfH"),
                redacted: true,
                id: None,
            }),
            Part::text("Based on my analysis, the answer is 42."),
        ]
    );
    // input = input_tokens + cache read + cache creation.
    assert_eq!(reply.usage, usage(12 + 100_500 + 248, 100_500, 248, 1024));
    assert_eq!(reply.finish, FinishReason::Length);
}

#[test]
fn an_error_object_in_a_200_is_a_provider_error() {
    match messages().decode_reply(&fixture("reply_error.json")) {
        Err(DecodeError::Provider(e)) => {
            assert_eq!(e.kind.as_deref(), Some("overloaded_error"));
            assert_eq!(e.message, "Overloaded");
        }
        other => panic!("expected a provider error, got {other:?}"),
    }
}

#[test]
fn malformed_replies_say_what_and_where() {
    let cases: &[(&[u8], &str)] = &[
        (b"null", "null"),
        (b"<html>502 Bad Gateway</html>", "not JSON"),
        (b"[1,2]", "array"),
        (
            br#"{"id":"m","type":"message","role":"assistant"}"#,
            "content",
        ),
        (br#"{"type":"message","content":"hi"}"#, "content"),
        (br#"{"type":"message","content":[7]}"#, "/content/0"),
        (
            br#"{"type":"message","content":[{"type":"tool_use","name":"f","input":{}}]}"#,
            "`id`",
        ),
        (br#"{"type":"message","content":[{"text":"x"}]}"#, "`type`"),
    ];
    for (body, needle) in cases {
        match messages().decode_reply(body) {
            Err(DecodeError::Malformed(m)) => assert!(m.contains(needle), "{m:?} lacks {needle:?}"),
            other => panic!(
                "{}: expected Malformed, got {other:?}",
                String::from_utf8_lossy(body)
            ),
        }
    }
}

#[test]
fn every_stop_reason_maps() {
    let table = [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("max_tokens", FinishReason::Length),
        ("tool_use", FinishReason::ToolCalls),
        ("refusal", FinishReason::ContentFilter),
        ("pause_turn", FinishReason::Other),
        ("model_context_window_exceeded", FinishReason::Other),
        ("some_future_reason", FinishReason::Other),
    ];
    for (raw, finish) in table {
        let body = json!({"id": "m", "type": "message", "role": "assistant", "model": "c",
            "content": [], "stop_reason": raw, "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}});
        let reply = messages()
            .decode_reply(body.to_string().as_bytes())
            .unwrap();
        assert_eq!(
            (reply.finish, reply.finish_raw.as_deref()),
            (finish, Some(raw))
        );
        // And the same string goes back out.
        let out: Value =
            serde_json::from_slice(&messages().encode_reply(&reply, &ServerContext::default()))
                .unwrap();
        assert_eq!(out["stop_reason"], raw);
        // The stream says the same.
        let mut bytes = Vec::new();
        let mut enc = messages().stream_encoder(&ServerContext::default());
        for e in switchyard_wire::reply_events(&reply, 0) {
            enc.event(&e, &mut bytes);
        }
        enc.finish(&mut bytes);
        let (mut events, end) = decode_stream(&bytes, 9);
        events.extend(end.unwrap());
        let streamed = assemble(&events).unwrap();
        assert_eq!(
            (streamed.finish, streamed.finish_raw.as_deref()),
            (finish, Some(raw))
        );
    }
}

#[test]
fn reply_encoding_is_the_message_object_clients_read() {
    let reply = Reply {
        content: vec![
            Part::Thinking(Thinking {
                text: "hmm".into(),
                state: None, // e.g. DeepSeek reasoning: shown with an empty signature
                redacted: false,
                id: None,
            }),
            Part::text("hi"),
            call("toolu_9", "f", r#"{"a":1}"#),
        ],
        finish: FinishReason::ToolCalls,
        finish_raw: Some("tool_calls".into()), // a chat string: not leaked
        usage: usage(150, 100, 20, 7),
        model: Some("m".into()),
        id: None,
        raw: Default::default(),
    };
    let context = ServerContext {
        created: 0,
        fallback_id: "msg_fallback".into(),
    };
    let out: Value = serde_json::from_slice(&messages().encode_reply(&reply, &context)).unwrap();
    assert_eq!(
        out,
        json!({
            "id": "msg_fallback", "type": "message", "role": "assistant", "model": "m",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": ""},
                {"type": "text", "text": "hi"},
                {"type": "tool_use", "id": "toolu_9", "name": "f", "input": {"a": 1}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 30, "cache_creation_input_tokens": 20,
                "cache_read_input_tokens": 100, "output_tokens": 7}
        })
    );
}

// ---------------------------------------------------------------- streams

#[test]
fn the_documented_text_stream_with_ping_decodes() {
    let reply = stream_reply("stream_text.sse");
    assert_eq!(reply.content, vec![Part::text("Hello!")]);
    assert_eq!(reply.usage, usage(25, 0, 0, 15));
    assert_eq!(reply.finish_raw.as_deref(), Some("end_turn"));
    assert_eq!(
        reply.id.as_deref(),
        Some("msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY")
    );
    assert_eq!(reply.model.as_deref(), Some("claude-opus-4-6"));
}

#[test]
fn input_json_delta_fragments_join_and_an_empty_input_is_an_object() {
    let reply = stream_reply("stream_tool_use.sse");
    assert_eq!(
        reply.content,
        vec![
            Part::text("Okay, let's check the weather for San Francisco, CA:"),
            call(
                "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                "get_weather",
                r#"{"location": "San Francisco, CA", "unit": "fahrenheit"}"#
            ),
            call("toolu_02NoArgs", "get_time", "{}"),
        ]
    );
    assert_eq!(reply.finish, FinishReason::ToolCalls);
    assert_eq!(reply.usage, usage(472, 0, 0, 89));
}

#[test]
fn thinking_and_signature_deltas_and_redacted_thinking_stream() {
    let reply = stream_reply("stream_thinking.sse");
    assert_eq!(
        reply.content,
        vec![
            Part::Thinking(Thinking {
                text: "I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147\n462 = 3 × 147 + 21\n147 = 7 × 21 + 0".into(),
                state: sig("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..."),
                redacted: false,
                id: None,
            }),
            Part::Thinking(Thinking {
                text: String::new(),
                state: sig("EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"),
                redacted: true,
                id: None,
            }),
            Part::text("The greatest common divisor of 1071 and 462 is **21**."),
        ]
    );
    // Cache counts from message_start, repeated in message_delta; output is cumulative.
    assert_eq!(reply.usage, usage(3 + 1200 + 48_000, 48_000, 1200, 312));
}

#[test]
fn an_overloaded_error_mid_stream_is_an_error_event() {
    let (events, end) = decode_stream(&fixture("stream_error.sse"), 3);
    let last = events.last().cloned();
    match last {
        Some(Event::Error(e)) => {
            assert_eq!(e.kind.as_deref(), Some("overloaded_error"));
            assert_eq!(e.message, "Overloaded");
        }
        other => panic!("expected an error event last, got {other:?}"),
    }
    // The error already says the stream failed; finishing adds no second error.
    assert_eq!(end, Ok(vec![]));
    let mut assembler = switchyard_wire::Assembler::new();
    for e in &events {
        assembler.push(e).unwrap();
    }
    assert_eq!(assembler.reply().text(), "Partial");
    assert!(!assembler.is_finished());
}

#[test]
fn a_stream_cut_before_message_stop_is_detected() {
    let full = String::from_utf8(fixture("stream_text.sse")).unwrap();
    for cut_at in [
        "event: message_stop",
        "event: message_delta",
        "event: content_block_stop",
    ] {
        let cut = &full[..full.find(cut_at).unwrap()];
        let (_, end) = decode_stream(cut.as_bytes(), 16);
        match end {
            Err(DecodeError::Malformed(m)) => assert!(m.contains("message_stop"), "{m}"),
            other => panic!("cut at {cut_at}: expected an error, got {other:?}"),
        }
    }
}

#[test]
fn stream_block_indices_are_mapped_not_trusted() {
    // Indices that start at 5 and skip, a server-tool block that takes no part, and
    // events named only by their `type` (no `event:` line).
    let sse = [
        r#"{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":0}}}"#,
        r#"{"type":"content_block_start","index":5,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
        r#"{"type":"content_block_delta","index":5,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"x\"}"}}"#,
        r#"{"type":"content_block_stop","index":5}"#,
        r#"{"type":"content_block_start","index":9,"content_block":{"type":"text","text":"a"}}"#,
        r#"{"type":"content_block_delta","index":9,"delta":{"type":"text_delta","text":"b"}}"#,
        r#"{"type":"content_block_stop","index":9}"#,
        r#"{"type":"content_block_start","index":11,"content_block":{"type":"tool_use","id":"t","name":"f","input":{"whole":true}}}"#,
        r#"{"type":"content_block_stop","index":11}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":4}}"#,
        r#"{"type":"message_stop"}"#,
    ]
    .iter()
    .map(|d| format!("data: {d}\r\n\r\n"))
    .collect::<String>();
    let reply = stream_reply_from(sse.as_bytes());
    assert_eq!(
        reply.content,
        vec![Part::text("ab"), call("t", "f", r#"{"whole":true}"#)]
    );
    // A delta for a block that never started is an error, not a panic.
    let mut decoder = ByteStreamDecoder::new(messages());
    let bad = decoder.push(
        b"data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
    );
    assert!(matches!(bad, Err(DecodeError::Malformed(m)) if m.contains("never started")));
}

fn stream_reply_from(bytes: &[u8]) -> Reply {
    let (mut events, end) = decode_stream(bytes, 7);
    events.extend(end.unwrap());
    assemble(&events).unwrap()
}

fn encode_events(events: &[Event]) -> String {
    let mut out = Vec::new();
    let mut enc = messages().stream_encoder(&ServerContext {
        created: 0,
        fallback_id: "msg_gw".into(),
    });
    for e in events {
        enc.event(e, &mut out);
    }
    enc.finish(&mut out);
    String::from_utf8(out).unwrap()
}

/// The `(event name, data)` pairs of an SSE text.
fn sse_pairs(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let mut name = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.into();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            (name, serde_json::from_str(&data).unwrap())
        })
        .collect()
}

#[test]
fn the_stream_encoder_writes_the_grammar_claude_code_reads() {
    let reply = Reply {
        content: vec![
            Part::Thinking(Thinking {
                text: "think".into(),
                state: sig("SIG"),
                redacted: false,
                id: None,
            }),
            Part::Thinking(Thinking {
                text: String::new(),
                state: sig("REDACTED"),
                redacted: true,
                id: None,
            }),
            Part::text("hello"),
            call("toolu_1", "Bash", r#"{"command":"ls"}"#),
        ],
        finish: FinishReason::ToolCalls,
        finish_raw: Some("tool_use".into()),
        usage: usage(1000, 800, 100, 42),
        model: Some("claude-x".into()),
        id: Some("msg_1".into()),
        raw: Default::default(),
    };
    let text = encode_events(&switchyard_wire::reply_events(&reply, 3));
    let pairs = sse_pairs(&text);
    let names: Vec<&str> = pairs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);
    for (name, data) in &pairs {
        assert_eq!(
            data["type"],
            name.as_str(),
            "data.type matches the event name"
        );
    }
    // message_start: the full shape, usage zero because it came after the content.
    assert_eq!(
        pairs[0].1["message"],
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 0, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "output_tokens": 0}})
    );
    let starts: Vec<&Value> = pairs
        .iter()
        .filter(|(n, _)| n == "content_block_start")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(
        starts
            .iter()
            .map(|d| d["content_block"].clone())
            .collect::<Vec<_>>(),
        vec![
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            json!({"type": "redacted_thinking", "data": "REDACTED"}),
            json!({"type": "text", "text": ""}),
            json!({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}),
        ]
    );
    assert_eq!(
        starts
            .iter()
            .map(|d| d["index"].clone())
            .collect::<Vec<_>>(),
        vec![json!(0), json!(1), json!(2), json!(3)]
    );
    let deltas: Vec<&str> = pairs
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| d["delta"]["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        deltas,
        [
            "thinking_delta",
            "thinking_delta",
            "signature_delta",
            "text_delta",
            "text_delta",
            "input_json_delta",
            "input_json_delta",
            "input_json_delta",
            "input_json_delta",
            "input_json_delta",
            "input_json_delta"
        ]
    );
    assert_eq!(
        pairs
            .iter()
            .filter(|(n, _)| n == "content_block_stop")
            .count(),
        4
    );
    // message_delta: stop reason and the full usage, input and cache counts included.
    let delta = &pairs[pairs.len() - 2].1;
    assert_eq!(
        delta,
        &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
            "usage": {"input_tokens": 100, "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 800, "output_tokens": 42}})
    );
    assert!(text.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
}

#[test]
fn a_usage_known_before_the_content_rides_in_message_start() {
    let events = [
        Event::Start {
            id: Some("msg_2".into()),
            model: Some("m".into()),
        },
        Event::Usage(Usage {
            input: 50,
            cached_input: 40,
            cache_write: 0,
            output: 0,
            reasoning: 0,
        }),
        Event::TextDelta {
            part: 0,
            text: "x".into(),
        },
        Event::Usage(Usage {
            input: 50,
            cached_input: 40,
            cache_write: 0,
            output: 3,
            reasoning: 0,
        }),
        Event::Finish {
            reason: FinishReason::Stop,
            raw: None,
        },
    ];
    let pairs = sse_pairs(&encode_events(&events));
    assert_eq!(pairs[0].1["message"]["usage"]["input_tokens"], 10);
    assert_eq!(
        pairs[0].1["message"]["usage"]["cache_read_input_tokens"],
        40
    );
    let delta = &pairs[pairs.len() - 2].1;
    assert_eq!(delta["usage"]["output_tokens"], 3);
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
}

#[test]
fn interleaved_tool_calls_are_sent_one_after_another() {
    // A chat upstream streaming two calls with interleaved argument deltas.
    let start = |part: usize, id: &str| Event::ToolCallStart {
        part,
        id: id.into(),
        name: "f".into(),
        kind: ToolKind::Function,
        namespace: None,
        state: None,
    };
    let delta = |part: usize, a: &str| Event::ToolCallDelta {
        part,
        arguments: a.into(),
    };
    let events = [
        start(0, "a"),
        delta(0, "{\"x\":"),
        start(1, "b"),
        delta(1, "{\"y\":"),
        delta(0, "1}"),
        delta(1, "2}"),
        Event::ToolCallEnd { part: 0 },
        Event::ToolCallEnd { part: 1 },
        Event::Finish {
            reason: FinishReason::ToolCalls,
            raw: None,
        },
    ];
    let reply = stream_reply_from(encode_events(&events).as_bytes());
    assert_eq!(
        reply.content,
        vec![call("a", "f", "{\"x\":1}"), call("b", "f", "{\"y\":2}")]
    );
}

#[test]
fn an_error_event_is_written_in_anthropic_form() {
    let events = [
        Event::Start {
            id: None,
            model: None,
        },
        Event::TextDelta {
            part: 0,
            text: "a".into(),
        },
        Event::Error(switchyard_wire::StreamError {
            kind: Some("overloaded_error".into()),
            code: None,
            message: "Overloaded".into(),
            status: Some(529),
        }),
    ];
    let text = encode_events(&events);
    assert!(
        text.ends_with("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"),
        "{text}"
    );
    assert!(
        !text.contains("message_stop"),
        "a failed stream does not claim to stop"
    );
}

// ---------------------------------------------------------------- requests

fn reencode(body: &[u8]) -> (switchyard_wire::DecodedRequest, Value) {
    let decoded = messages().decode_request(body).unwrap();
    let model = decoded.model.clone().unwrap_or_default();
    let out = messages()
        .encode_request(
            &decoded.request,
            &EncodeOptions {
                model: &model,
                stream: decoded.stream,
            },
        )
        .unwrap();
    (decoded, Value::Object(out))
}

#[test]
fn a_claude_code_request_decodes_and_re_encodes_with_every_field_kept() {
    let body = fixture("request_claude_code.json");
    let (decoded, out) = reencode(&body);
    let original: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(out, original);
    assert!(
        !out.to_string().contains(SHAPE_KEY),
        "the shape record is never sent"
    );

    assert_eq!(decoded.model.as_deref(), Some("claude-opus-4-6"));
    assert!(decoded.stream);
    let r = &decoded.request;
    let roles: Vec<Role> = r.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::User
        ]
    );
    let system = &r.messages[0];
    assert_eq!(system.content.len(), 3);
    assert!(system
        .joined_text()
        .starts_with("x-anthropic-billing-header: cc_version="));
    assert_eq!(
        r.messages[3].content,
        vec![Part::ToolResult(ToolResult {
            call_id: "toolu_01KmPLzPXqV8rJkF7uVwR3hY".into(),
            name: None,
            content: vec![Part::text("total 16\ndrwxr-xr-x  4 dev staff  128 Jan 10 09:12 .\n-rw-r--r--  1 dev staff  412 Jan 10 09:12 README.md\n-rw-r--r--  1 dev staff 1024 Jan 10 09:12 main.rs")],
            is_error: false,
            kind: ToolKind::Function,
        })]
    );
    match &r.messages[2].content[..] {
        [Part::Thinking(t), Part::ToolCall(c)] => {
            assert!(t
                .state
                .as_ref()
                .is_some_and(|s| s.dialect == Dialect::Messages));
            assert_eq!(c.name, "Bash");
            assert_eq!(
                c.arguments,
                r#"{"command":"ls -la","description":"List files in the current directory"}"#
            );
        }
        other => panic!("assistant turn decoded as {other:?}"),
    }
    assert_eq!(r.tools.len(), 2);
    assert_eq!(r.max_tokens, Some(32000));
    assert_eq!(r.temperature, Some(1.0));
    assert_eq!(
        r.reasoning,
        Some(Reasoning {
            effort: Some("high".into()),
            budget_tokens: None,
            summary: None,
        })
    );
    assert_eq!(r.passthrough.dialect, Some(Dialect::Messages));
    for key in ["metadata", "context_management", "output_config"] {
        assert!(r.passthrough.fields.contains_key(key), "{key} kept");
    }
}

#[test]
fn an_sdk_request_with_images_documents_server_tools_and_results_round_trips() {
    let body = fixture("request_sdk.json");
    let (decoded, out) = reencode(&body);
    assert_eq!(out, serde_json::from_slice::<Value>(&body).unwrap());
    let r = &decoded.request;
    assert_eq!(
        r.messages[0],
        Message::text(Role::System, "You are a careful assistant.")
    );
    assert_eq!(
        r.messages[3].content[..2],
        [
            Part::Image(Image::Base64 {
                media_type: "image/png".into(),
                data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==".into(),
            }),
            Part::Image(Image::Url {
                url: "https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg".into(),
            }),
        ]
    );
    // Two results in one user message: two tool messages.
    let tools: Vec<&Message> = r.messages.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(tools.len(), 2);
    match &tools[1].content[..] {
        [Part::ToolResult(t)] => {
            assert!(t.is_error);
            assert_eq!(t.content.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    // The server tool is not a canonical tool; it is kept for re-encoding.
    assert_eq!(
        r.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["get_weather", "get_time"]
    );
    assert_eq!(r.tools[1].strict, Some(true));
    assert_eq!(r.tool_choice, Some(ToolChoice::Required));
    assert_eq!(r.parallel_tool_calls, Some(false));
    assert_eq!(
        r.reasoning.as_ref().and_then(|x| x.budget_tokens),
        Some(1024)
    );
    assert_eq!(r.stop, ["\n\nHuman:"]);
    assert!(r.passthrough.fields.contains_key("top_k"));
    assert!(!decoded.stream);
}

#[test]
fn malformed_requests_say_what_and_where() {
    let cases: &[(&str, &str)] = &[
        ("null", "null"),
        (r#"{"model":"m"}"#, "`messages`"),
        (
            r#"{"messages":[{"content":"x"}]}"#,
            "message 0 has no `role`",
        ),
        (r#"{"messages":[{"role":"robot","content":"x"}]}"#, "robot"),
        (r#"{"messages":[{"role":"user","content":5}]}"#, "content"),
        (
            r#"{"messages":[{"role":"user","content":[{"type":"tool_result"}]}]}"#,
            "tool_use_id",
        ),
        (
            r#"{"messages":[],"tool_choice":{"type":"sometimes"}}"#,
            "sometimes",
        ),
        (r#"{"messages":[],"system":7}"#, "system"),
    ];
    for (body, needle) in cases {
        match messages().decode_request(body.as_bytes()) {
            Err(DecodeError::Malformed(m)) => assert!(m.contains(needle), "{m:?} lacks {needle:?}"),
            other => panic!("{body}: expected Malformed, got {other:?}"),
        }
    }
}

#[test]
fn a_canonical_request_encodes_as_anthropic_expects() {
    let request = Request {
        messages: vec![
            Message::text(Role::Developer, "dev rules"),
            Message::text(Role::System, "be brief"),
            Message::text(Role::User, "weather?"),
            Message {
                role: Role::Assistant,
                content: vec![
                    // From a Responses backend: not sent to Anthropic.
                    Part::Thinking(Thinking {
                        text: "r".into(),
                        state: Some(Opaque::new(Dialect::Responses, "enc")),
                        redacted: false,
                        id: Some("rs_1".into()),
                    }),
                    call("call_1", "w", r#"{"city":"Paris"}"#),
                    call("call_2", "w", r#"{"city":"Par"#), // truncated
                    call("call_3", "t", ""),
                ],
            },
            Message {
                role: Role::Tool,
                content: vec![Part::ToolResult(ToolResult {
                    call_id: "call_1".into(),
                    name: Some("w".into()),
                    content: vec![Part::text("sunny")],
                    is_error: false,
                    kind: ToolKind::Function,
                })],
            },
            Message {
                role: Role::Tool,
                content: vec![Part::ToolResult(ToolResult {
                    call_id: "call_2".into(),
                    name: None,
                    content: vec![Part::text("bad args")],
                    is_error: true,
                    kind: ToolKind::Function,
                })],
            },
            Message::text(Role::User, "thanks"),
        ],
        tools: vec![Tool {
            name: "w".into(),
            description: Some("weather".into()),
            parameters: json!({"type": "object"}),
            kind: ToolKind::Function,
            strict: None,
            namespace: None,
        }],
        parallel_tool_calls: Some(false),
        temperature: Some(0.5),
        reasoning: Some(Reasoning {
            effort: Some("high".into()),
            budget_tokens: None,
            summary: Some("auto".into()),
        }),
        response_format: Some(ResponseFormat::JsonSchema {
            name: "answer".into(),
            schema: json!({"type": "object"}),
            strict: Some(true),
        }),
        stop: vec!["END".into()],
        ..Request::default()
    };
    let out = messages()
        .encode_request(
            &request,
            &EncodeOptions {
                model: "claude-sonnet-4-5",
                stream: true,
            },
        )
        .unwrap();
    assert_eq!(
        Value::Object(out),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 16384 + 4096,
            "system": [{"type": "text", "text": "dev rules"}, {"type": "text", "text": "be brief"}],
            "messages": [
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_1", "name": "w", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "call_2", "name": "w",
                        "input": {"_raw_arguments": "{\"city\":\"Par"}},
                    {"type": "tool_use", "id": "call_3", "name": "t", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
                    {"type": "tool_result", "tool_use_id": "call_2", "content": "bad args", "is_error": true},
                    {"type": "text", "text": "thanks"}
                ]}
            ],
            "tools": [{"name": "w", "description": "weather", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
            "thinking": {"type": "enabled", "budget_tokens": 16384},
            "temperature": 0.5,
            "stop_sequences": ["END"],
            "output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}},
            "stream": true
        })
    );
}

#[test]
fn max_tokens_defaults_and_effort_budgets_fit_under_it() {
    let encode = |request: &Request| {
        Value::Object(
            messages()
                .encode_request(
                    request,
                    &EncodeOptions {
                        model: "m",
                        stream: false,
                    },
                )
                .unwrap(),
        )
    };
    let plain = encode(&Request::user("hi"));
    assert_eq!(plain["max_tokens"], 4096);
    assert!(plain.get("stream").is_none());
    let mut low = Request::user("hi").with_max_tokens(3000);
    low.reasoning = Some(Reasoning {
        effort: Some("high".into()),
        ..Reasoning::default()
    });
    assert_eq!(
        encode(&low)["thinking"],
        json!({"type": "enabled", "budget_tokens": 2999})
    );
    low.max_tokens = Some(800);
    assert!(encode(&low).get("thinking").is_none(), "no room to think");
    low.reasoning = Some(Reasoning {
        effort: Some("none".into()),
        ..Reasoning::default()
    });
    assert_eq!(encode(&low)["thinking"], json!({"type": "disabled"}));
    low.reasoning = Some(Reasoning::default());
    assert_eq!(encode(&low)["thinking"], json!({"type": "adaptive"}));
}

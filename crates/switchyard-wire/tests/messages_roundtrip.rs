//! Property tests of the messages codec.
//!
//! Replies: `reply_events` → the stream encoder → bytes cut into random network chunks →
//! `ByteStreamDecoder` → `assemble` gives the reply back, and `encode_reply` →
//! `decode_reply` too. Generated replies hold only what Messages carries: thinking
//! state tagged `messages` (or none, sent with an empty signature), no text-part or
//! tool-call state, no thinking ids, function tools only, tool arguments as compact
//! JSON objects (what a decoded `input` is written as), a usage always present with
//! `reasoning` 0 (Anthropic reports none), and a finish with its Messages string.
//!
//! Requests: `encode_request` → JSON text → `decode_request` gives the request back.
//! Excluded, because Messages cannot tell them apart: developer messages and system
//! messages after the first (all become the one top-level `system`), tool messages with
//! more or fewer than one result (each `tool_result` decodes to its own message), a
//! user message with no parts right after tool results (nothing to merge), thinking
//! without Messages state (dropped), `parallel_tool_calls` without a tool choice, a
//! missing `max_tokens` (a default is sent), effort-only reasoning (sent as a budget),
//! `reasoning.summary`, response formats (the schema name is not on the wire), and
//! tool kinds, namespaces and part states the dialect has no field for.

use proptest::prelude::*;
use serde_json::{json, Value};
use switchyard_wire::{
    assemble, codec, reply_events, ByteStreamDecoder, Dialect, EncodeOptions, FinishReason, Image,
    Message, Opaque, Part, Passthrough, Reasoning, Reply, Request, Role, ServerContext, Thinking,
    Tool, ToolCall, ToolChoice, ToolKind, ToolResult, Usage,
};

fn text() -> impl Strategy<Value = String> {
    // Unicode, quotes, newlines and backslashes: whatever JSON and SSE must survive.
    "[a-zA-Z0-9 é日\"\\\\\n{}:,.-]{0,24}"
}

fn id() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_-]{1,16}"
}

fn arguments() -> impl Strategy<Value = String> {
    prop::collection::btree_map(
        "[a-z]{1,6}",
        prop_oneof![
            any::<i32>().prop_map(Value::from),
            text().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
        ],
        0..4,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()).to_string())
}

fn opaque() -> impl Strategy<Value = Opaque> {
    "[A-Za-z0-9+/=]{1,40}".prop_map(|v| Opaque::new(Dialect::Messages, v))
}

fn thinking() -> impl Strategy<Value = Thinking> {
    prop_oneof![
        (text(), prop::option::of(opaque())).prop_map(|(text, state)| Thinking {
            text,
            state,
            redacted: false,
            id: None,
        }),
        opaque().prop_map(|state| Thinking {
            text: String::new(),
            state: Some(state),
            redacted: true,
            id: None,
        }),
    ]
}

fn tool_call() -> impl Strategy<Value = ToolCall> {
    (id(), "[a-zA-Z_]{1,12}", arguments()).prop_map(|(id, name, arguments)| ToolCall {
        id,
        name,
        arguments,
        kind: ToolKind::Function,
        namespace: None,
        state: None,
    })
}

fn reply_part() -> impl Strategy<Value = Part> {
    prop_oneof![
        text().prop_map(Part::text),
        thinking().prop_map(Part::Thinking),
        tool_call().prop_map(Part::ToolCall),
    ]
}

fn finish() -> impl Strategy<Value = (FinishReason, String)> {
    prop::sample::select(vec![
        (FinishReason::Stop, "end_turn"),
        (FinishReason::Stop, "stop_sequence"),
        (FinishReason::Length, "max_tokens"),
        (FinishReason::ToolCalls, "tool_use"),
        (FinishReason::ContentFilter, "refusal"),
        (FinishReason::Other, "pause_turn"),
        (FinishReason::Other, "model_context_window_exceeded"),
    ])
    .prop_map(|(f, s)| (f, s.to_string()))
}

fn usage() -> impl Strategy<Value = Usage> {
    (0u64..100_000, 0u64..100_000, 0u64..10_000, 0u64..50_000).prop_map(
        |(uncached, cached_input, cache_write, output)| Usage {
            input: uncached + cached_input + cache_write,
            cached_input,
            cache_write,
            output,
            reasoning: 0,
        },
    )
}

fn reply() -> impl Strategy<Value = Reply> {
    (
        prop::collection::vec(reply_part(), 0..6),
        finish(),
        usage(),
        "[a-z0-9.-]{1,20}",
        "msg_[a-zA-Z0-9]{1,20}",
    )
        .prop_map(|(content, (finish, raw), usage, model, id)| Reply {
            content,
            finish,
            finish_raw: Some(raw),
            usage: Some(usage),
            model: Some(model),
            id: Some(id),
            raw: Default::default(),
        })
}

/// Cuts `bytes` at the given (sorted, deduplicated) positions.
fn cut<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for p in points {
        pieces.push(&bytes[start..p]);
        start = p;
    }
    pieces.push(&bytes[start..]);
    pieces
}

fn user_part() -> impl Strategy<Value = Part> {
    prop_oneof![
        3 => text().prop_map(Part::text),
        1 => ("image/(png|jpeg)", "[A-Za-z0-9+/]{4,20}").prop_map(|(media_type, data)| {
            Part::Image(Image::Base64 { media_type, data })
        }),
        1 => "https://[a-z]{3,8}\\.example/[a-z]{1,8}\\.png"
            .prop_map(|url| Part::Image(Image::Url { url })),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        prop::collection::vec(user_part(), 1..4).prop_map(|content| Message {
            role: Role::User,
            content,
        }),
        prop::collection::vec(reply_part(), 0..4).prop_map(|content| {
            // Unsigned thinking is never sent upstream.
            let content = content
                .into_iter()
                .filter(|p| !matches!(p, Part::Thinking(t) if t.state.is_none()))
                .collect();
            Message {
                role: Role::Assistant,
                content,
            }
        }),
        (
            id(),
            prop::collection::vec(user_part(), 0..3),
            any::<bool>()
        )
            .prop_map(|(call_id, content, is_error)| Message {
                role: Role::Tool,
                content: vec![Part::ToolResult(ToolResult {
                    call_id,
                    name: None,
                    content,
                    is_error,
                    kind: ToolKind::Function,
                })],
            }),
    ]
}

fn tool() -> impl Strategy<Value = Tool> {
    (
        "[a-zA-Z_]{1,12}",
        prop::option::of(text()),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(name, description, strict)| Tool {
            name: name.clone(),
            description,
            parameters: json!({"type": "object", "properties": {name: {"type": "string"}}}),
            kind: ToolKind::Function,
            strict,
            namespace: None,
        })
}

fn tool_choice() -> impl Strategy<Value = (Option<ToolChoice>, Option<bool>)> {
    let choice = prop_oneof![
        Just(ToolChoice::Auto),
        Just(ToolChoice::None),
        Just(ToolChoice::Required),
        "[a-z]{1,8}".prop_map(ToolChoice::Tool),
    ];
    prop_oneof![
        Just((None, None)),
        (choice, prop::option::of(any::<bool>())).prop_map(|(c, p)| {
            // `none` takes no parallel flag.
            let p = if c == ToolChoice::None { None } else { p };
            (Some(c), p)
        }),
    ]
}

fn reasoning() -> impl Strategy<Value = Option<Reasoning>> {
    prop_oneof![
        Just(None),
        (1024u64..4000).prop_map(|b| Some(Reasoning {
            budget_tokens: Some(b),
            ..Reasoning::default()
        })),
        Just(Some(Reasoning::default())),
        Just(Some(Reasoning {
            effort: Some("none".into()),
            ..Reasoning::default()
        })),
    ]
}

fn sampling() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        Just(None),
        Just(Some(1.0)),
        (0u32..=100).prop_map(|n| Some(f64::from(n) / 100.0)),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    (
        prop::option::of(prop::collection::vec(text(), 1..3)),
        prop::collection::vec(message(), 0..8),
        prop::collection::vec(tool(), 0..3),
        tool_choice(),
        (4000u64..64_000, sampling(), sampling()),
        prop::collection::vec(text(), 0..3),
        reasoning(),
        prop::option::of(("[a-z]{1,8}", 1u64..100)),
    )
        .prop_map(
            |(
                system,
                messages,
                tools,
                (tool_choice, parallel),
                (max, t, p),
                stop,
                reasoning,
                extra,
            )| {
                let mut all = Vec::new();
                if let Some(texts) = system {
                    all.push(Message {
                        role: Role::System,
                        content: texts.into_iter().map(Part::text).collect(),
                    });
                }
                all.extend(messages);
                let passthrough = match extra {
                    Some((user, top_k)) => Passthrough {
                        dialect: Some(Dialect::Messages),
                        fields: [
                            ("metadata".to_string(), json!({"user_id": user})),
                            ("top_k".to_string(), json!(top_k)),
                        ]
                        .into_iter()
                        .collect(),
                    },
                    None => Passthrough::default(),
                };
                Request {
                    messages: all,
                    tools,
                    tool_choice,
                    parallel_tool_calls: parallel,
                    max_tokens: Some(max),
                    temperature: t,
                    top_p: p,
                    stop,
                    reasoning,
                    response_format: None,
                    passthrough,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_streamed_reply_decodes_back_whatever_the_chunking(
        reply in reply(),
        delta_chars in 0usize..8,
        cuts in prop::collection::vec(any::<usize>(), 0..40),
    ) {
        let messages = codec(Dialect::Messages);
        let mut encoder = messages.stream_encoder(&ServerContext::default());
        let mut bytes = Vec::new();
        for event in reply_events(&reply, delta_chars) {
            encoder.event(&event, &mut bytes);
        }
        encoder.finish(&mut bytes);

        let mut decoder = ByteStreamDecoder::new(messages);
        let mut events = Vec::new();
        for piece in cut(&bytes, &cuts) {
            events.extend(decoder.push(piece).map_err(|e| TestCaseError::fail(e.to_string()))?);
        }
        events.extend(decoder.finish().map_err(|e| TestCaseError::fail(e.to_string()))?);
        let assembled = assemble(&events).map_err(TestCaseError::fail)?;
        prop_assert_eq!(assembled.without_raw(), reply.clone());
    }

    #[test]
    fn an_encoded_reply_decodes_back(reply in reply()) {
        let messages = codec(Dialect::Messages);
        let body = messages.encode_reply(&reply, &ServerContext::default());
        let decoded = messages.decode_reply(&body).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&decoded.raw[..], &body[..]);
        // The metering shortcut reads the same usage as the whole decode.
        prop_assert_eq!(switchyard_wire::usage_scan::reply_usage(messages, &body), reply.usage);
        prop_assert_eq!(decoded.without_raw(), reply);
    }

    #[test]
    fn an_encoded_request_decodes_back(request in request(), stream in any::<bool>()) {
        let messages = codec(Dialect::Messages);
        let body = messages
            .encode_request(&request, &EncodeOptions { model: "claude-test", stream })
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let bytes = serde_json::to_vec(&body).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let decoded = messages.decode_request(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(decoded.model.as_deref(), Some("claude-test"));
        prop_assert_eq!(decoded.stream, stream);
        prop_assert_eq!(decoded.request, request);
    }

    #[test]
    fn decoding_any_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let messages = codec(Dialect::Messages);
        let _ = messages.decode_reply(&bytes);
        let _ = messages.decode_request(&bytes);
        let mut decoder = ByteStreamDecoder::new(messages);
        let _ = decoder.push(&bytes);
        let _ = decoder.finish();
    }
}

/// Plausible Messages stream events with random indices, types and fields.
fn wire_event() -> impl Strategy<Value = String> {
    let index = 0u64..4;
    prop_oneof![
        Just(r#"{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1}}}"#.to_string()),
        (index.clone(), prop::sample::select(vec!["text", "thinking", "tool_use", "redacted_thinking", "server_tool_use", "bogus"]))
            .prop_map(|(i, t)| format!(r#"{{"type":"content_block_start","index":{i},"content_block":{{"type":"{t}","id":"i","name":"n","data":"d","text":"","thinking":"","input":{{}}}}}}"#)),
        (index.clone(), prop::sample::select(vec!["text_delta", "thinking_delta", "signature_delta", "input_json_delta", "citations_delta"]))
            .prop_map(|(i, t)| format!(r#"{{"type":"content_block_delta","index":{i},"delta":{{"type":"{t}","text":"a","thinking":"b","signature":"s","partial_json":"{{"}}}}"#)),
        index.prop_map(|i| format!(r#"{{"type":"content_block_stop","index":{i}}}"#)),
        Just(r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#.to_string()),
        Just(r#"{"type":"message_stop"}"#.to_string()),
        Just(r#"{"type":"ping"}"#.to_string()),
        Just(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.to_string()),
        Just(r#"{"type":"content_block_delta","index":"x"}"#.to_string()),
        Just("null".to_string()),
    ]
}

proptest! {
    #[test]
    fn any_sequence_of_plausible_events_decodes_or_errors_without_panicking(
        events in prop::collection::vec(wire_event(), 0..20),
    ) {
        let mut decoder = ByteStreamDecoder::new(codec(Dialect::Messages));
        let mut out = Vec::new();
        for e in &events {
            match decoder.push(format!("data: {e}\n\n").as_bytes()) {
                Ok(evs) => out.extend(evs),
                Err(_) => return Ok(()),
            }
        }
        let _ = decoder.finish();
        let _ = assemble(&out);
    }
}

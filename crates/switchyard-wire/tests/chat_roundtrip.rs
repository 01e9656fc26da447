//! Property tests of the chat codec.
//!
//! - Replies the dialect can carry go through `reply_events` → the chat stream encoder →
//!   bytes cut into random network chunks → `ByteStreamDecoder` → `assemble`, and through
//!   `encode_reply` → `decode_reply`, and come back equal.
//! - Requests the dialect can carry go through `encode_request` → bytes →
//!   `decode_request` and come back equal.
//!
//! What the generators leave out, because chat cannot carry it (see the module doc of
//! `dialect::chat`):
//! - opaque state of any kind (thinking signatures, text and tool-call state), redacted
//!   thinking, several thinking parts or thinking after text: chat has one
//!   `reasoning_content` string, placed before the text;
//! - several text parts in a reply (one `content` string), and empty text or reasoning
//!   strings (chat servers send `""` for "nothing", so the decoder drops them);
//! - custom tools and calls (sent as one-string-argument functions) and namespaces
//!   (flattened into the name): restoring them needs the request's tool list;
//! - tool results' error flag, images, tool name and kind, results inside user messages,
//!   several results in one message (each result is its own `tool` message);
//! - a reasoning budget or summary mode (only `reasoning_effort` exists), usage
//!   `cache_write`, a finish reason whose raw string disagrees with it (the encoder writes
//!   chat's own string);
//! - streamed requests (`stream_options` is the encoder's to decide and is kept as
//!   passthrough on decode).

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use switchyard_wire::{
    assemble, codec, reply_events, ByteStreamDecoder, Dialect, EncodeOptions, FinishReason, Image,
    Message, Part, Passthrough, Reasoning, Reply, Request, ResponseFormat, Role, ServerContext,
    Thinking, Tool, ToolCall, ToolChoice, ToolKind, ToolResult, Usage,
};

fn text() -> impl Strategy<Value = String> {
    "(?s).{0,24}"
}

fn nonempty_text() -> impl Strategy<Value = String> {
    "(?s).{1,24}"
}

fn tool_call() -> impl Strategy<Value = ToolCall> {
    ("[A-Za-z0-9_-]{1,16}", "[a-z_]{1,12}", text()).prop_map(|(id, name, arguments)| ToolCall {
        id,
        name,
        arguments,
        kind: ToolKind::Function,
        namespace: None,
        state: None,
    })
}

fn usage() -> impl Strategy<Value = Usage> {
    (0u64..1 << 32, 0u64..1 << 32, 0u64..1 << 32, 0u64..1 << 32).prop_map(|(i, c, o, r)| Usage {
        input: i.max(c),
        cached_input: c.min(i),
        cache_write: 0,
        output: o.max(r),
        reasoning: r.min(o),
    })
}

fn finish(has_calls: bool) -> BoxedStrategy<(FinishReason, String)> {
    let fixed = |r: FinishReason, s: &str| Just((r, s.to_string()));
    if has_calls {
        prop_oneof![
            fixed(FinishReason::ToolCalls, "tool_calls"),
            fixed(FinishReason::ToolCalls, "function_call"),
            fixed(FinishReason::Length, "length"),
        ]
        .boxed()
    } else {
        prop_oneof![
            fixed(FinishReason::Stop, "stop"),
            fixed(FinishReason::Length, "length"),
            fixed(FinishReason::ContentFilter, "content_filter"),
            "[a-z_]{1,12}"
                .prop_filter("not a chat string", |s| !matches!(
                    s.as_str(),
                    "stop" | "length" | "tool_calls" | "function_call" | "content_filter"
                ))
                .prop_map(|s| (FinishReason::Other, s)),
        ]
        .boxed()
    }
}

fn reply() -> impl Strategy<Value = Reply> {
    (
        proptest::option::of(nonempty_text()),
        proptest::option::of(nonempty_text()),
        proptest::collection::vec(tool_call(), 0..4),
        proptest::option::of(usage()),
        "[a-z0-9./-]{1,20}",
        "[A-Za-z0-9-]{1,24}",
    )
        .prop_flat_map(|(thinking, text, calls, usage, model, id)| {
            let has_calls = !calls.is_empty();
            finish(has_calls).prop_map(move |(finish, raw)| {
                let mut content = Vec::new();
                if let Some(t) = &thinking {
                    content.push(Part::Thinking(Thinking {
                        text: t.clone(),
                        ..Thinking::default()
                    }));
                }
                if let Some(t) = &text {
                    content.push(Part::text(t.clone()));
                }
                content.extend(calls.iter().cloned().map(Part::ToolCall));
                Reply {
                    content,
                    finish,
                    finish_raw: Some(raw),
                    usage,
                    model: Some(model.clone()),
                    id: Some(id.clone()),
                    raw: Default::default(),
                }
            })
        })
}

fn image() -> impl Strategy<Value = Image> {
    prop_oneof![
        ("image/(png|jpeg|webp)", "[A-Za-z0-9+/]{4,16}={0,2}")
            .prop_map(|(media_type, data)| Image::Base64 { media_type, data }),
        "https://[a-z]{1,10}\\.example/[a-z0-9]{1,8}\\.png".prop_map(|url| Image::Url { url }),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    let texts = |n| proptest::collection::vec(text().prop_map(Part::text), n);
    prop_oneof![
        texts(1..3).prop_map(|content| Message {
            role: Role::System,
            content
        }),
        text().prop_map(|t| Message::text(Role::Developer, t)),
        proptest::collection::vec(
            prop_oneof![text().prop_map(Part::text), image().prop_map(Part::Image)],
            1..4
        )
        .prop_map(|content| Message {
            role: Role::User,
            content
        }),
        (
            proptest::option::of(nonempty_text()),
            proptest::collection::vec(nonempty_text(), 0..3),
            proptest::collection::vec(tool_call(), 0..3),
        )
            .prop_map(|(thinking, texts, calls)| {
                let mut content = Vec::new();
                if let Some(text) = thinking {
                    content.push(Part::Thinking(Thinking {
                        text,
                        ..Thinking::default()
                    }));
                }
                content.extend(texts.into_iter().map(Part::text));
                content.extend(calls.into_iter().map(Part::ToolCall));
                Message {
                    role: Role::Assistant,
                    content,
                }
            }),
        ("[A-Za-z0-9_-]{1,16}", texts(1..3)).prop_map(|(call_id, content)| Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(ToolResult {
                call_id,
                name: None,
                content,
                is_error: false,
                kind: ToolKind::Function,
            })],
        }),
    ]
}

fn tool() -> impl Strategy<Value = Tool> {
    (
        "[a-z_]{1,12}",
        proptest::option::of(text()),
        prop_oneof![
            Just(Value::Null),
            "[a-z]{1,8}"
                .prop_map(|p| json!({"type": "object", "properties": {p: {"type": "string"}}})),
        ],
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(name, description, parameters, strict)| Tool {
            name,
            description,
            parameters,
            kind: ToolKind::Function,
            strict,
            namespace: None,
        })
}

fn request() -> impl Strategy<Value = Request> {
    (
        proptest::collection::vec(message(), 0..6),
        proptest::collection::vec(tool(), 0..3),
        proptest::option::of(prop_oneof![
            Just(ToolChoice::Auto),
            Just(ToolChoice::None),
            Just(ToolChoice::Required),
            "[a-z_]{1,12}".prop_map(ToolChoice::Tool),
        ]),
        proptest::option::of(any::<bool>()),
        proptest::option::of(0u64..1 << 20),
        proptest::option::of((0u32..200).prop_map(|k| f64::from(k) / 100.0)),
        proptest::option::of((0u32..=100).prop_map(|k| f64::from(k) / 100.0)),
        proptest::collection::vec(nonempty_text(), 0..3),
        (
            proptest::option::of("minimal|low|medium|high|xhigh"),
            proptest::option::of(prop_oneof![
                Just(ResponseFormat::JsonObject),
                ("[a-z_]{1,10}", proptest::option::of(any::<bool>())).prop_map(|(name, strict)| {
                    ResponseFormat::JsonSchema {
                        name,
                        schema: json!({"type": "object"}),
                        strict,
                    }
                }),
            ]),
            proptest::option::of((any::<u32>(), "[a-z0-9-]{1,10}")),
        ),
    )
        .prop_map(
            |(messages, tools, tool_choice, parallel, max, temperature, top_p, stop, rest)| {
                let (effort, response_format, extra) = rest;
                let passthrough = match extra {
                    Some((seed, user)) => {
                        let mut fields = Map::new();
                        fields.insert("seed".into(), seed.into());
                        fields.insert("user".into(), user.into());
                        Passthrough {
                            dialect: Some(Dialect::Chat),
                            fields,
                        }
                    }
                    None => Passthrough::default(),
                };
                Request {
                    messages,
                    tools,
                    tool_choice,
                    parallel_tool_calls: parallel,
                    max_tokens: max,
                    temperature,
                    top_p,
                    stop,
                    reasoning: effort.map(|e| Reasoning {
                        effort: Some(e),
                        ..Reasoning::default()
                    }),
                    response_format,
                    passthrough,
                }
            },
        )
}

fn context() -> ServerContext {
    ServerContext {
        created: 1,
        fallback_id: "fallback".into(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn streamed_replies_survive_the_wire(
        reply in reply(),
        delta_chars in 0usize..6,
        cuts in proptest::collection::vec(1usize..40, 1..16),
    ) {
        let chat = codec(Dialect::Chat);
        let mut encoder = chat.stream_encoder(&context());
        let mut bytes = Vec::new();
        for event in reply_events(&reply, delta_chars) {
            encoder.event(&event, &mut bytes);
        }
        encoder.finish(&mut bytes);

        let mut decoder = ByteStreamDecoder::new(chat);
        let mut events = Vec::new();
        let mut rest: &[u8] = &bytes;
        for size in cuts.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, tail) = rest.split_at((*size).min(rest.len()));
            events.extend(decoder.push(chunk).unwrap());
            rest = tail;
        }
        events.extend(decoder.finish().unwrap());
        prop_assert_eq!(assemble(&events).unwrap(), reply.without_raw());
    }

    #[test]
    fn replies_survive_encode_and_decode(reply in reply()) {
        let chat = codec(Dialect::Chat);
        let body = chat.encode_reply(&reply, &context());
        let decoded = chat.decode_reply(&body).unwrap();
        prop_assert_eq!(decoded.raw.as_ref(), body.as_slice());
        // The metering shortcut reads the same usage as the whole decode.
        prop_assert_eq!(switchyard_wire::usage_scan::reply_usage(chat, &body), reply.usage);
        prop_assert_eq!(decoded.without_raw(), reply);
    }

    #[test]
    fn requests_survive_encode_and_decode(request in request(), model in "[a-z0-9./-]{1,20}") {
        let chat = codec(Dialect::Chat);
        let body = chat
            .encode_request(&request, &EncodeOptions { model: &model, stream: false })
            .unwrap();
        let bytes = serde_json::to_vec(&body).unwrap();
        let decoded = chat.decode_request(&bytes).unwrap();
        prop_assert_eq!(decoded.model.as_deref(), Some(model.as_str()));
        prop_assert!(!decoded.stream);
        prop_assert_eq!(decoded.request, request);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let chat = codec(Dialect::Chat);
        let _ = chat.decode_reply(&bytes);
        let _ = chat.decode_request(&bytes);
        let mut decoder = ByteStreamDecoder::new(chat);
        let _ = decoder.push(&bytes);
        let _ = decoder.finish();
    }
}

/// Any JSON value, small.
fn junk() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z\"{}]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("index|id|name|function|arguments|type", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Chunks shaped like chat's, with any values where the fields go.
fn junk_chunk() -> impl Strategy<Value = String> {
    (junk(), junk(), junk(), junk(), junk(), junk()).prop_map(|(index, content, calls, reasoning, finish, usage)| {
        json!({
            "id": "x",
            "choices": [{"index": index, "delta": {"content": content, "tool_calls": calls, "reasoning": reasoning}, "finish_reason": finish}],
            "usage": usage,
        })
        .to_string()
    })
}

proptest! {
    #[test]
    fn chunks_of_any_shape_never_panic(chunks in proptest::collection::vec(junk_chunk(), 0..6)) {
        let chat = codec(Dialect::Chat);
        let mut decoder = ByteStreamDecoder::new(chat);
        for chunk in &chunks {
            let _ = decoder.push(format!("data: {chunk}\n\n").as_bytes());
        }
        let _ = decoder.finish();
        for chunk in &chunks {
            let _ = chat.decode_reply(chunk.replace("delta", "message").as_bytes());
        }
    }
}

//! Property tests of the `responses` codec: replies survive stream encoding, network
//! chunking, decoding and assembly, and body encoding; requests survive encode → decode.
//!
//! What the generators leave out, because the Responses wire cannot carry it (see the
//! module doc of `switchyard_wire::dialect::responses`):
//! - replies: `FinishReason::Other` (sent as `completed`), a finish that contradicts the
//!   content (`Stop` with tool calls), `cache_write` (no such count), thinking without
//!   Responses state (its id rides with the state in a stream), opaque state on text or
//!   calls (other dialects'), a namespace on a custom call, a missing id or model (the
//!   server fills them in);
//! - requests: `stop` (no such field), a thinking budget (becomes an effort), thinking of
//!   other dialects or with neither state nor id (dropped), tool-result `is_error` and
//!   `name`, adjacent assistant messages or adjacent tool messages (merged into one),
//!   tool results outside tool messages, tools of one namespace not next to each other
//!   (grouped), `strict` on custom tools, opaque state on text or calls.

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use switchyard_wire::{
    assemble, codec, reply_events, ByteStreamDecoder, Dialect, EncodeOptions, FinishReason, Image,
    Message, Opaque, Part, Passthrough, Reasoning, Reply, Request, ResponseFormat, Role,
    ServerContext, Thinking, Tool, ToolCall, ToolChoice, ToolKind, ToolResult, Usage,
};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 .,!?\n]{0,24}",
        ".{0,12}",
        Just(String::new()),
        Just("日本語 ✓ \"quoted\" \\ back\r\nslash".to_string()),
    ]
}

fn thinking_with_state() -> impl Strategy<Value = Thinking> {
    (text(), "[A-Za-z0-9+/]{1,24}={0,2}", "rs_[a-z0-9]{1,10}").prop_map(|(text, enc, id)| {
        Thinking {
            text,
            state: Some(Opaque::new(Dialect::Responses, enc)),
            redacted: false,
            id: Some(id),
        }
    })
}

fn tool_call() -> impl Strategy<Value = ToolCall> {
    (
        "call_[a-zA-Z0-9]{1,10}",
        "[a-z_]{1,12}",
        text(),
        any::<bool>(),
        prop::option::of(prop_oneof![Just("mcp__fs__"), Just("mcp__git__")]),
    )
        .prop_map(|(id, name, arguments, custom, namespace)| ToolCall {
            id,
            name,
            arguments,
            kind: if custom {
                ToolKind::Custom
            } else {
                ToolKind::Function
            },
            namespace: if custom {
                None
            } else {
                namespace.map(str::to_string)
            },
            state: None,
        })
}

fn reply_part() -> impl Strategy<Value = Part> {
    prop_oneof![
        thinking_with_state().prop_map(Part::Thinking),
        text().prop_map(Part::text),
        tool_call().prop_map(Part::ToolCall),
    ]
}

fn usage() -> impl Strategy<Value = Usage> {
    (0u64..100_000, 0u64..100_000, 0u64..100_000, 0u64..100_000).prop_map(|(a, b, c, d)| Usage {
        input: a.max(b),
        cached_input: a.min(b),
        cache_write: 0,
        output: c.max(d),
        reasoning: c.min(d),
    })
}

fn reply() -> impl Strategy<Value = Reply> {
    (
        prop::collection::vec(reply_part(), 0..5),
        0usize..3,
        prop::option::of(usage()),
        "[a-z0-9.-]{1,16}",
        "resp_[a-z0-9]{1,12}",
    )
        .prop_map(|(content, finish, usage, model, id)| {
            let calls = content.iter().any(|p| matches!(p, Part::ToolCall(_)));
            let (finish, raw) = match (finish, calls) {
                (0, false) => (FinishReason::Stop, "completed"),
                (0, true) => (FinishReason::ToolCalls, "completed"),
                (1, _) => (FinishReason::Length, "max_output_tokens"),
                _ => (FinishReason::ContentFilter, "content_filter"),
            };
            Reply {
                content,
                finish,
                finish_raw: Some(raw.into()),
                usage,
                model: Some(model),
                id: Some(id),
                raw: Default::default(),
            }
        })
}

fn image() -> impl Strategy<Value = Image> {
    prop_oneof![
        "[A-Za-z0-9+/]{4,16}".prop_map(|data| Image::Base64 {
            media_type: "image/png".into(),
            data
        }),
        "[a-z]{1,8}".prop_map(|n| Image::Url {
            url: format!("https://example.com/{n}.png")
        }),
    ]
}

fn user_part() -> impl Strategy<Value = Part> {
    prop_oneof![text().prop_map(Part::text), image().prop_map(Part::Image)]
}

fn assistant_part() -> impl Strategy<Value = Part> {
    prop_oneof![
        thinking_with_state().prop_map(Part::Thinking),
        // Reasoning the server stored, referenced by id alone.
        "rs_[a-z0-9]{1,8}".prop_map(|id| Part::Thinking(Thinking {
            id: Some(id),
            ..Thinking::default()
        })),
        text().prop_map(Part::text),
        tool_call().prop_map(Part::ToolCall),
    ]
}

fn tool_result() -> impl Strategy<Value = Part> {
    (
        "call_[a-zA-Z0-9]{1,10}",
        prop::collection::vec(user_part(), 0..3),
        any::<bool>(),
    )
        .prop_map(|(call_id, content, custom)| {
            Part::ToolResult(ToolResult {
                call_id,
                name: None,
                content,
                is_error: false,
                kind: if custom {
                    ToolKind::Custom
                } else {
                    ToolKind::Function
                },
            })
        })
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        prop::collection::vec(user_part(), 0..3).prop_map(|content| Message {
            role: Role::User,
            content
        }),
        prop::collection::vec(text().prop_map(Part::text), 1..3).prop_map(|content| Message {
            role: Role::Developer,
            content
        }),
        prop::collection::vec(text().prop_map(Part::text), 1..3).prop_map(|content| Message {
            role: Role::System,
            content
        }),
        prop::collection::vec(assistant_part(), 1..4).prop_map(|content| Message {
            role: Role::Assistant,
            content
        }),
        prop::collection::vec(tool_result(), 1..3).prop_map(|content| Message {
            role: Role::Tool,
            content
        }),
    ]
}

fn tool() -> impl Strategy<Value = Tool> {
    (
        "[a-z_]{1,12}",
        prop::option::of(text()),
        any::<bool>(),
        prop::option::of(any::<bool>()),
        prop::option::of(prop_oneof![Just("mcp__a__"), Just("mcp__b__")]),
        any::<bool>(),
    )
        .prop_map(|(name, description, custom, strict, namespace, params)| {
            let parameters = match (params, custom) {
                (false, _) => Value::Null,
                (true, false) => json!({"type": "object", "properties": {"x": {"type": "string"}}}),
                (true, true) => {
                    json!({"type": "grammar", "syntax": "lark", "definition": "start: /.+/"})
                }
            };
            Tool {
                name,
                description,
                parameters,
                kind: if custom {
                    ToolKind::Custom
                } else {
                    ToolKind::Function
                },
                strict: if custom { None } else { strict },
                namespace: namespace.map(str::to_string),
            }
        })
}

fn half_steps() -> impl Strategy<Value = Option<f64>> {
    prop::option::of((0u8..8).prop_map(|n| f64::from(n) / 4.0))
}

fn request() -> impl Strategy<Value = Request> {
    let shape = (
        prop::option::of(text()),
        prop::collection::vec(message(), 0..7),
        prop::collection::vec(tool(), 0..5),
        prop::option::of(prop_oneof![
            Just(ToolChoice::Auto),
            Just(ToolChoice::None),
            Just(ToolChoice::Required),
            "[a-z_]{1,8}".prop_map(ToolChoice::Tool),
        ]),
        prop::option::of(any::<bool>()),
        prop::option::of(1u64..200_000),
        half_steps(),
        half_steps(),
    );
    let settings = (
        prop::option::of((
            prop::option::of(prop_oneof![Just("low"), Just("medium"), Just("high")]),
            prop::option::of(prop_oneof![Just("auto"), Just("detailed")]),
        )),
        prop::option::of(prop_oneof![
            Just(ResponseFormat::JsonObject),
            ("[a-z_]{1,10}", prop::option::of(any::<bool>())).prop_map(|(name, strict)| {
                ResponseFormat::JsonSchema {
                    name,
                    schema: json!({"type": "object"}),
                    strict,
                }
            }),
        ]),
        prop::option::of("[a-f0-9-]{8,36}"),
    );
    (shape, settings).prop_map(
        |(
            (system, messages, mut tools, tool_choice, parallel, max_tokens, temperature, top_p),
            (reasoning, response_format, cache_key),
        )| {
            let mut all = Vec::new();
            if let Some(system) = system {
                all.push(Message::text(Role::System, system));
            }
            for m in messages {
                let merges = matches!(m.role, Role::Assistant | Role::Tool)
                    && all.last().is_some_and(|l: &Message| l.role == m.role);
                if !merges {
                    all.push(m);
                }
            }
            // Members of one namespace side by side.
            tools.sort_by(|a, b| a.namespace.cmp(&b.namespace));
            let passthrough = match cache_key {
                Some(key) => {
                    let mut fields = Map::new();
                    fields.insert("prompt_cache_key".into(), key.into());
                    fields.insert("service_tier".into(), "flex".into());
                    Passthrough {
                        dialect: Some(Dialect::Responses),
                        fields,
                    }
                }
                None => Passthrough::default(),
            };
            Request {
                messages: all,
                tools,
                tool_choice,
                parallel_tool_calls: parallel,
                max_tokens,
                temperature,
                top_p,
                stop: Vec::new(),
                reasoning: reasoning.map(|(effort, summary)| Reasoning {
                    effort: effort.map(str::to_string),
                    budget_tokens: None,
                    summary: summary.map(str::to_string),
                }),
                response_format,
                passthrough,
            }
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_streamed_reply_assembles_back(
        reply in reply(),
        chunk_chars in 0usize..6,
        sizes in prop::collection::vec(1usize..80, 1..8),
    ) {
        let responses = codec(Dialect::Responses);
        let mut encoder = responses.stream_encoder(&ServerContext {
            created: 1,
            fallback_id: "resp_fallback".into(),
        });
        let mut bytes = Vec::new();
        for event in reply_events(&reply, chunk_chars) {
            encoder.event(&event, &mut bytes);
        }
        encoder.finish(&mut bytes);

        let mut decoder = ByteStreamDecoder::new(responses);
        let mut events = Vec::new();
        let mut rest = bytes.as_slice();
        let mut i = 0;
        while !rest.is_empty() {
            let n = sizes[i % sizes.len()].min(rest.len());
            let (chunk, tail) = rest.split_at(n);
            events.extend(decoder.push(chunk).unwrap());
            rest = tail;
            i += 1;
        }
        events.extend(decoder.finish().unwrap());
        prop_assert_eq!(assemble(&events).unwrap(), reply.without_raw());
    }

    #[test]
    fn an_encoded_reply_decodes_back(reply in reply()) {
        let responses = codec(Dialect::Responses);
        let body = responses.encode_reply(&reply, &ServerContext::default());
        // The metering shortcut reads the same usage as the whole decode.
        prop_assert_eq!(switchyard_wire::usage_scan::reply_usage(responses, &body), reply.usage);
        prop_assert_eq!(responses.decode_reply(&body).unwrap().without_raw(), reply);
    }

    #[test]
    fn an_encoded_request_decodes_back(request in request(), stream in any::<bool>()) {
        let responses = codec(Dialect::Responses);
        let body = responses
            .encode_request(&request, &EncodeOptions { model: "gpt-5.4", stream })
            .unwrap();
        let bytes = serde_json::to_vec(&body).unwrap();
        let decoded = responses.decode_request(&bytes).unwrap();
        prop_assert_eq!(decoded.model.as_deref(), Some("gpt-5.4"));
        prop_assert_eq!(decoded.stream, stream);
        prop_assert_eq!(decoded.request, request);
    }
}

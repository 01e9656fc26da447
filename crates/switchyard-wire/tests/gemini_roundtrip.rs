//! Property tests of the gemini codec.
//!
//! Replies: `reply_events` → stream encoder → bytes in random network chunks →
//! `ByteStreamDecoder` → assemble gives the reply back, and `encode_reply` →
//! `decode_reply` too. Requests: `encode_request` → bytes → `decode_request` gives the
//! request back.
//!
//! What the generators leave out, and why (see the codec's module doc):
//! - Reply tool-call ids are the synthesised ones ([`synthetic_call_id`]): Gemini sends no
//!   ids, so any other id cannot survive. Request ids are compared after relabelling
//!   (first appearance order), since decoding synthesises new ones; the test checks that
//!   every result still points at its call.
//! - Replies are generated in folded form: an unsigned text part is never followed by
//!   another text part, nor unsigned thinking by thinking (the wire cannot tell them
//!   apart from one part, streamed or not); thinking without text has a signature.
//!   Finish reasons come from Gemini's own strings; cache writes are 0 (no Gemini field).
//! - Requests: no developer messages (they come back as system), at most one system
//!   message and only first (Gemini hoists them), no unsigned or foreign thinking (not
//!   sent), tool results always named with one non-empty text part, function tools only
//!   without `strict` or namespace, no `parallel_tool_calls`, no reasoning `summary`,
//!   an effort Gemini has as a level, schemas named `response`, temperatures that are
//!   exact binary fractions (JSON text round trip), and no user message made only of
//!   tool results (it decodes as a tool message).

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use switchyard_wire::dialect::gemini::{synthetic_call_id, GeminiCodec, RESPONSE_SCHEMA_NAME};
use switchyard_wire::{
    assemble, reply_events, ByteStreamDecoder, Codec, Dialect, EncodeOptions, FinishReason, Image,
    Message, Opaque, Part, Passthrough, Reasoning, Reply, Request, ResponseFormat, Role,
    ServerContext, Thinking, Tool, ToolCall, ToolChoice, ToolKind, ToolResult, Usage,
};

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 é日✓\"{}\\n]{1,16}"
}

fn signature() -> impl Strategy<Value = Option<Opaque>> {
    proptest::option::of("[A-Za-z0-9+/]{8,24}")
        .prop_map(|s| s.map(|s| Opaque::new(Dialect::Gemini, s)))
}

fn args() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        (
            "[a-z_]{1,6}",
            prop_oneof![
                any::<i32>().prop_map(|n| json!(n)),
                "[a-z é]{0,6}".prop_map(|s| json!(s)),
                any::<bool>().prop_map(|b| json!(b)),
                Just(json!({"nested": [1, "two", null]})),
            ],
        ),
        0..4,
    )
    .prop_map(|pairs| {
        let map: Map<String, Value> = pairs.into_iter().collect();
        Value::Object(map).to_string()
    })
}

#[derive(Debug, Clone)]
enum Gen {
    Text(String, Option<Opaque>),
    Thinking(String, Option<Opaque>),
    Call(String, String, Option<Opaque>),
}

fn gen_part() -> impl Strategy<Value = Gen> {
    prop_oneof![
        (text(), signature()).prop_map(|(t, s)| Gen::Text(t, s)),
        (proptest::option::of(text()), signature())
            .prop_map(|(t, s)| Gen::Thinking(t.unwrap_or_default(), s)),
        ("[a-z_]{1,10}", args(), signature()).prop_map(|(n, a, s)| Gen::Call(n, a, s)),
    ]
}

const FINISHES: [&str; 7] = [
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "RECITATION",
    "PROHIBITED_CONTENT",
    "MALFORMED_FUNCTION_CALL",
    "OTHER",
];

fn expected_finish(raw: &str, has_calls: bool) -> FinishReason {
    match raw {
        "STOP" if has_calls => FinishReason::ToolCalls,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "PROHIBITED_CONTENT" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

fn usage() -> impl Strategy<Value = Usage> {
    (0u64..2_000_000, 0u64..=100, 0u64..100_000, 0u64..=100).prop_map(
        |(input, cached_pct, output, reasoning_pct)| Usage {
            input,
            cached_input: input * cached_pct / 100,
            cache_write: 0,
            output,
            reasoning: output * reasoning_pct / 100,
        },
    )
}

fn reply() -> impl Strategy<Value = Reply> {
    (
        proptest::collection::vec(gen_part(), 0..7),
        0..FINISHES.len(),
        proptest::option::of(usage()),
        "gemini-[0-9.]{1,4}-(pro|flash)",
        "[A-Za-z0-9_-]{10,24}",
    )
        .prop_map(|(parts, finish, usage, model, id)| {
            let mut content: Vec<Part> = Vec::new();
            let mut calls = 0;
            for part in parts {
                let part = match part {
                    Gen::Text(text, state) => Part::Text { text, state },
                    Gen::Thinking(text, state) => {
                        let state = match (&state, text.is_empty()) {
                            (None, true) => Some(Opaque::new(Dialect::Gemini, "c2ln")),
                            _ => state,
                        };
                        Part::Thinking(Thinking {
                            text,
                            state,
                            ..Thinking::default()
                        })
                    }
                    Gen::Call(name, arguments, state) => {
                        calls += 1;
                        Part::ToolCall(ToolCall {
                            id: synthetic_call_id(0, calls - 1, &name, &arguments),
                            name,
                            arguments,
                            kind: ToolKind::Function,
                            namespace: None,
                            state,
                        })
                    }
                };
                // Folded form: sign an unsigned part that the next one would extend.
                match (content.last_mut(), &part) {
                    (
                        Some(Part::Text {
                            state: s @ None, ..
                        }),
                        Part::Text { .. },
                    ) => *s = Some(Opaque::new(Dialect::Gemini, "Zm9sZA")),
                    (Some(Part::Thinking(t)), Part::Thinking(_)) if t.state.is_none() => {
                        t.state = Some(Opaque::new(Dialect::Gemini, "Zm9sZA"))
                    }
                    _ => {}
                }
                content.push(part);
            }
            let raw = FINISHES[finish];
            Reply {
                finish: expected_finish(raw, calls > 0),
                finish_raw: Some(raw.to_string()),
                content,
                usage,
                model: Some(model),
                id: Some(id),
                raw: Default::default(),
            }
        })
}

fn stream_round_trip(reply: &Reply, delta_chars: usize, cuts: &[usize]) -> Reply {
    let mut encoder = GeminiCodec.stream_encoder(&ServerContext::default());
    let mut bytes = Vec::new();
    for event in reply_events(reply, delta_chars) {
        encoder.event(&event, &mut bytes);
    }
    encoder.finish(&mut bytes);
    let mut decoder = ByteStreamDecoder::new(&GeminiCodec);
    let mut events = Vec::new();
    let mut rest = bytes.as_slice();
    for &cut in cuts {
        if rest.is_empty() {
            break;
        }
        let (head, tail) = rest.split_at(cut.min(rest.len()));
        events.extend(decoder.push(head).unwrap());
        rest = tail;
    }
    events.extend(decoder.push(rest).unwrap());
    events.extend(decoder.finish().unwrap());
    assemble(&events).unwrap()
}

// ---------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------

fn image() -> impl Strategy<Value = Image> {
    prop_oneof![
        ("image/(png|jpeg|webp)", "[A-Za-z0-9+/]{4,20}={0,2}")
            .prop_map(|(media_type, data)| Image::Base64 { media_type, data }),
        "https://example\\.com/[a-z]{1,8}(\\.png|\\.jpg|)".prop_map(|url| Image::Url { url }),
    ]
}

fn user_message() -> impl Strategy<Value = Message> {
    proptest::collection::vec(
        prop_oneof![
            (text(), signature()).prop_map(|(text, state)| Part::Text { text, state }),
            image().prop_map(Part::Image),
        ],
        1..3,
    )
    .prop_map(|content| Message {
        role: Role::User,
        content,
    })
}

fn result_text() -> impl Strategy<Value = String> {
    prop_oneof![text(), args().prop_filter("non-empty", |a| a != "{}")]
}

/// One turn: a user message, and maybe a model answer with calls and their results.
fn turn() -> impl Strategy<Value = Vec<Message>> {
    (
        user_message(),
        proptest::option::of((
            proptest::collection::vec(
                prop_oneof![
                    (text(), signature()).prop_map(|(text, state)| Part::Text { text, state }),
                    (text(), "[A-Za-z0-9]{6,12}").prop_map(|(text, sig)| Part::Thinking(
                        Thinking {
                            text,
                            state: Some(Opaque::new(Dialect::Gemini, sig)),
                            ..Thinking::default()
                        }
                    )),
                ],
                0..3,
            ),
            proptest::collection::vec(
                (
                    "[a-z_]{1,8}",
                    args(),
                    signature(),
                    result_text(),
                    any::<bool>(),
                    proptest::option::of(image()),
                ),
                0..3,
            ),
        )),
    )
        .prop_filter("a model turn has content", |(_, model)| match model {
            Some((parts, calls)) => !parts.is_empty() || !calls.is_empty(),
            None => true,
        })
        .prop_map(|(user, model)| {
            let mut messages = vec![user];
            if let Some((mut parts, calls)) = model {
                let mut results = Vec::new();
                for (i, (name, arguments, state, text, is_error, image)) in
                    calls.into_iter().enumerate()
                {
                    let id = format!("tmp{i}");
                    parts.push(Part::ToolCall(ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments,
                        kind: ToolKind::Function,
                        namespace: None,
                        state,
                    }));
                    let mut content = vec![Part::text(text)];
                    content.extend(image.map(Part::Image));
                    results.push(Part::ToolResult(ToolResult {
                        call_id: id,
                        name: Some(name),
                        content,
                        is_error,
                        kind: ToolKind::Function,
                    }));
                }
                messages.push(Message {
                    role: Role::Assistant,
                    content: parts,
                });
                if !results.is_empty() {
                    messages.push(Message {
                        role: Role::Tool,
                        content: results,
                    });
                }
            }
            messages
        })
}

fn tool() -> impl Strategy<Value = Tool> {
    (
        "[a-z_]{1,10}",
        proptest::option::of(text()),
        prop_oneof![
            Just(Value::Null),
            Just(
                json!({"type": "object", "properties": {"q": {"type": "string"}},
                        "required": ["q"], "additionalProperties": false})
            ),
        ],
    )
        .prop_map(|(name, description, parameters)| Tool {
            name,
            description,
            parameters,
            kind: ToolKind::Function,
            strict: None,
            namespace: None,
        })
}

fn request() -> impl Strategy<Value = Request> {
    let messages = (
        proptest::option::of(proptest::collection::vec(text(), 1..3)),
        proptest::collection::vec(turn(), 1..4),
    )
        .prop_map(|(system, turns)| {
            let mut messages = Vec::new();
            if let Some(texts) = system {
                messages.push(Message {
                    role: Role::System,
                    content: texts.into_iter().map(Part::text).collect(),
                });
            }
            // Unique ids across the whole request.
            for (t, turn) in turns.into_iter().enumerate() {
                for mut m in turn {
                    for p in &mut m.content {
                        match p {
                            Part::ToolCall(c) => c.id = format!("t{t}{}", c.id),
                            Part::ToolResult(r) => r.call_id = format!("t{t}{}", r.call_id),
                            _ => {}
                        }
                    }
                    messages.push(m);
                }
            }
            messages
        });
    let settings = (
        proptest::collection::vec(tool(), 0..3),
        proptest::option::of(prop_oneof![
            Just(ToolChoice::Auto),
            Just(ToolChoice::None),
            Just(ToolChoice::Required),
            "[a-z_]{1,8}".prop_map(ToolChoice::Tool),
        ]),
        proptest::option::of(1u64..100_000),
        proptest::option::of((0u32..9).prop_map(|n| f64::from(n) * 0.25)),
        proptest::option::of((0u32..5).prop_map(|n| f64::from(n) * 0.25)),
        proptest::collection::vec("[A-Z<>]{1,5}", 0..3),
    );
    let extras = (
        proptest::option::of(prop_oneof![
            Just(Reasoning::default()),
            "(minimal|low|medium|high)".prop_map(|e| Reasoning {
                effort: Some(e),
                ..Reasoning::default()
            }),
            (0u64..40_000).prop_map(|b| Reasoning {
                budget_tokens: Some(b),
                ..Reasoning::default()
            }),
        ]),
        proptest::option::of(prop_oneof![
            Just(ResponseFormat::JsonObject),
            Just(ResponseFormat::JsonSchema {
                name: RESPONSE_SCHEMA_NAME.into(),
                schema: json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
                strict: None,
            }),
        ]),
        prop_oneof![
            Just(Passthrough::default()),
            Just(Passthrough {
                dialect: Some(Dialect::Gemini),
                fields: json!({
                    "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT",
                                        "threshold": "BLOCK_NONE"}],
                    "cachedContent": "cachedContents/abc123",
                    "generationConfig": {"topK": 40, "seed": 7}
                })
                .as_object()
                .cloned()
                .unwrap_or_default(),
            }),
        ],
    );
    (messages, settings, extras).prop_map(
        |(
            messages,
            (tools, tool_choice, max_tokens, temperature, top_p, stop),
            (reasoning, response_format, passthrough),
        )| Request {
            messages,
            tools,
            tool_choice,
            parallel_tool_calls: None,
            max_tokens,
            temperature,
            top_p,
            stop,
            reasoning,
            response_format,
            passthrough,
        },
    )
}

/// Call ids renamed `id0`, `id1`… in order of first appearance, so that two requests
/// compare equal when their calls and results pair up the same way.
fn relabel(request: &Request) -> Request {
    let mut request = request.clone();
    let mut names: HashMap<String, String> = HashMap::new();
    let mut label = |id: &mut String| {
        let n = names.len();
        *id = names
            .entry(id.clone())
            .or_insert_with(|| format!("id{n}"))
            .clone();
    };
    for m in &mut request.messages {
        for p in &mut m.content {
            match p {
                Part::ToolCall(c) => label(&mut c.id),
                Part::ToolResult(r) => label(&mut r.call_id),
                _ => {}
            }
        }
    }
    request
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "(text|thought|STOP|ANY|AUTO|model|user|[a-z]{0,4})".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(
                (
                    "(text|thought|thoughtSignature|functionCall|functionResponse|name|args|response|inlineData|fileData|mimeType|data|fileUri|parts|mode|allowedFunctionNames|thinkingConfig|thinkingBudget|error|code|status)",
                    inner
                ),
                0..4
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn streamed_replies_assemble_back(
        reply in reply(),
        delta_chars in 0usize..6,
        cuts in proptest::collection::vec(1usize..40, 0..64),
    ) {
        prop_assert_eq!(stream_round_trip(&reply, delta_chars, &cuts), reply);
    }

    #[test]
    fn encoded_replies_decode_back(reply in reply()) {
        let body = GeminiCodec.encode_reply(&reply, &ServerContext::default());
        let back = GeminiCodec.decode_reply(&body).unwrap();
        prop_assert_eq!(back.raw.as_ref(), body.as_slice());
        // The metering shortcut reads the same usage as the whole decode.
        prop_assert_eq!(switchyard_wire::usage_scan::reply_usage(&GeminiCodec, &body), reply.usage);
        prop_assert_eq!(back.without_raw(), reply);
    }

    #[test]
    fn encoded_requests_decode_back(request in request()) {
        let body = GeminiCodec
            .encode_request(&request, &EncodeOptions { model: "gemini-3-pro-preview", stream: false })
            .unwrap();
        let bytes = serde_json::to_vec(&Value::Object(body)).unwrap();
        let decoded = GeminiCodec.decode_request(&bytes).unwrap();
        prop_assert_eq!(decoded.model, None);
        prop_assert_eq!(relabel(&decoded.request), relabel(&request));
    }

    #[test]
    fn decoding_never_panics(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = GeminiCodec.decode_reply(&body);
        let _ = GeminiCodec.decode_request(&body);
        let mut d = ByteStreamDecoder::new(&GeminiCodec);
        let _ = d.push(&body);
        let _ = d.finish();
    }

    #[test]
    fn json_shaped_input_never_panics(
        part in any_json(),
        finish in any_json(),
        usage in any_json(),
        config in any_json(),
    ) {
        let reply = json!({"candidates": [{"content": {"parts": [part.clone()]},
                                          "finishReason": finish}],
                           "usageMetadata": usage, "promptFeedback": finish});
        let body = serde_json::to_vec(&reply).unwrap();
        let _ = GeminiCodec.decode_reply(&body);
        let mut d = ByteStreamDecoder::new(&GeminiCodec);
        let mut sse = b"data: ".to_vec();
        sse.extend_from_slice(&body);
        sse.extend_from_slice(b"\n\n");
        let _ = d.push(&sse);
        let _ = d.finish();
        let request = json!({"contents": [{"role": "model", "parts": [part.clone()]},
                                         {"role": "user", "parts": [part]}],
                             "systemInstruction": finish, "generationConfig": config,
                             "toolConfig": config, "tools": [config, usage]});
        if let Ok(decoded) = GeminiCodec.decode_request(&serde_json::to_vec(&request).unwrap()) {
            let _ = GeminiCodec.encode_request(
                &decoded.request,
                &EncodeOptions { model: "m", stream: true },
            );
        }
    }
}

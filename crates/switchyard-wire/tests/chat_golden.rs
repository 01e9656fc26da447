//! Golden tests of the chat dialect: replies and streams shaped like OpenAI's, DeepSeek's,
//! vLLM's and OpenRouter's documented examples, requests as the official SDKs send them,
//! and the exact shapes the server side writes.

use serde_json::{json, Value};
use switchyard_wire::{
    codec, ByteStreamDecoder, DecodeError, Dialect, EncodeOptions, Event, FinishReason, Image,
    Message, Part, Passthrough, Reasoning, Reply, Request, ResponseFormat, Role, ServerContext,
    StreamError, Thinking, Tool, ToolCall, ToolChoice, ToolKind, ToolResult, Usage,
};

fn chat() -> &'static dyn switchyard_wire::Codec {
    codec(Dialect::Chat)
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/chat/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every event of a stream fed in chunks of `size` bytes, and the result of `finish`.
fn stream_events(bytes: &[u8], size: usize) -> (Vec<Event>, Result<Vec<Event>, DecodeError>) {
    let mut decoder = ByteStreamDecoder::new(chat());
    let mut events = Vec::new();
    for chunk in bytes.chunks(size) {
        events.extend(decoder.push(chunk).expect("chunk decodes"));
    }
    (events, decoder.finish())
}

/// The reply a whole stream assembles to, checked to be the same whatever the chunking.
fn stream_reply(name: &str) -> Reply {
    let bytes = fixture(name);
    let mut replies = Vec::new();
    for size in [1, 7, bytes.len()] {
        let (mut events, rest) = stream_events(&bytes, size);
        events.extend(rest.expect("stream ends properly"));
        let usage_at = events.iter().position(|e| matches!(e, Event::Usage(_)));
        let finish_at = events
            .iter()
            .position(|e| matches!(e, Event::Finish { .. }));
        assert_eq!(
            finish_at,
            Some(events.len() - 1),
            "{name}: finish comes last"
        );
        if let Some(u) = usage_at {
            assert!(u < events.len() - 1, "{name}: usage precedes finish");
        }
        replies.push(switchyard_wire::assemble(&events).expect("assembles"));
    }
    assert!(
        replies.windows(2).all(|w| w[0] == w[1]),
        "{name}: chunking changed the reply"
    );
    replies.remove(0)
}

fn thinking(text: &str) -> Part {
    Part::Thinking(Thinking {
        text: text.into(),
        ..Thinking::default()
    })
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

fn usage(input: u64, cached_input: u64, output: u64, reasoning: u64) -> Option<Usage> {
    Some(Usage {
        input,
        cached_input,
        cache_write: 0,
        output,
        reasoning,
    })
}

// --- replies -----------------------------------------------------------------------------

#[test]
fn openai_text_reply() {
    let body = fixture("openai_text_reply.json");
    let reply = chat().decode_reply(&body).unwrap();
    assert_eq!(reply.raw.as_ref(), body.as_slice());
    assert_eq!(
        reply.without_raw(),
        Reply {
            content: vec![Part::text("Hello! How can I help you today?")],
            finish: FinishReason::Stop,
            finish_raw: Some("stop".into()),
            usage: usage(2061, 1920, 10, 0),
            model: Some("gpt-4.1-2025-04-14".into()),
            id: Some("chatcmpl-BzX4q1t0Lh9kQm2v7r8s".into()),
            raw: Default::default(),
        }
    );
}

#[test]
fn openai_tool_call_reply() {
    let reply = chat()
        .decode_reply(&fixture("openai_tool_call_reply.json"))
        .unwrap();
    assert_eq!(
        reply.content,
        vec![
            call(
                "call_Xq1lV3s8a0Jc2b4N",
                "get_weather",
                r#"{"location":"Paris, France","unit":"celsius"}"#
            ),
            call(
                "call_R7d2K9p0m5Tz8w1E",
                "get_weather",
                r#"{"location":"Bogotá, Colombia","unit":"celsius"}"#
            ),
        ]
    );
    assert_eq!(reply.finish, FinishReason::ToolCalls);
    assert_eq!(reply.usage, usage(82, 0, 217, 192));
}

#[test]
fn deepseek_reasoning_content_reply_puts_thinking_first() {
    let reply = chat()
        .decode_reply(&fixture("deepseek_reasoning_reply.json"))
        .unwrap();
    assert_eq!(
        reply.content,
        vec![
            thinking("Compare the tenths: 9.11 has 1, 9.8 has 8. So 9.8 is larger."),
            Part::text("9.11 is smaller than 9.8."),
        ]
    );
    assert_eq!(reply.usage, usage(30, 0, 245, 229));
    assert_eq!(reply.model.as_deref(), Some("deepseek-reasoner"));
}

#[test]
fn deepseek_prompt_cache_hit_tokens_are_cached_input() {
    let reply = chat()
        .decode_reply(&fixture("deepseek_cache_hit_reply.json"))
        .unwrap();
    assert_eq!(reply.usage, usage(1200, 1152, 2, 0));
}

#[test]
fn an_error_object_in_a_200_body_is_a_provider_error() {
    let err = chat()
        .decode_reply(&fixture("error_reply.json"))
        .unwrap_err();
    let DecodeError::Provider(e) = err else {
        panic!("expected a provider error, got {err:?}");
    };
    assert_eq!(e.kind.as_deref(), Some("invalid_request_error"));
    assert_eq!(e.code.as_deref(), Some("context_length_exceeded"));
    assert!(e
        .message
        .starts_with("This model's maximum context length is 128000 tokens."));
}

#[test]
fn every_finish_reason() {
    let cases = [
        (json!("stop"), false, FinishReason::Stop),
        (json!("length"), false, FinishReason::Length),
        (json!("content_filter"), false, FinishReason::ContentFilter),
        (json!("tool_calls"), true, FinishReason::ToolCalls),
        (json!("function_call"), true, FinishReason::ToolCalls),
        // vLLM and Ollama say `stop` after tool calls: the calls decide.
        (json!("stop"), true, FinishReason::ToolCalls),
        (json!("length"), true, FinishReason::Length),
        (json!("eos"), false, FinishReason::Other),
        (json!(null), false, FinishReason::Stop),
        (json!(null), true, FinishReason::ToolCalls),
    ];
    for (raw, with_call, expected) in cases {
        let mut message = json!({"role": "assistant", "content": "x"});
        if with_call {
            message["tool_calls"] = json!([{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]);
        }
        let body = json!({"id": "i", "model": "m", "choices": [{"index": 0, "message": message, "finish_reason": raw}]});
        let reply = chat().decode_reply(body.to_string().as_bytes()).unwrap();
        assert_eq!(reply.finish, expected, "{raw} with calls: {with_call}");
        assert_eq!(reply.finish_raw.as_deref(), raw.as_str());
        assert_eq!(reply.usage, None);
    }
}

#[test]
fn malformed_bodies_say_what_and_where() {
    let cases: [(&[u8], &str); 8] = [
        (b"null", "`null`"),
        (b"<html>502 Bad Gateway</html>", "not JSON"),
        (b"[]", "array"),
        (br#"{"id":"x"}"#, "no `choices`"),
        (br#"{"choices":{}}"#, "`choices` is a JSON object"),
        (br#"{"choices":[]}"#, "`choices` is empty"),
        (br#"{"choices":[{"index":0,"finish_reason":"stop"}]}"#, "no `message`"),
        (
            br#"{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"arguments":"{}"}}]}}]}"#,
            "tool_calls[0].function has no `name`",
        ),
    ];
    for (body, needle) in cases {
        match chat().decode_reply(body) {
            Err(DecodeError::Malformed(m)) => assert!(m.contains(needle), "{m:?} lacks {needle:?}"),
            other => panic!(
                "{:?}: expected Malformed, got {other:?}",
                String::from_utf8_lossy(body)
            ),
        }
    }
}

// --- streams -----------------------------------------------------------------------------

#[test]
fn openai_tool_call_stream() {
    let reply = stream_reply("openai_tool_call_stream.sse");
    assert_eq!(
        reply,
        Reply {
            content: vec![
                call(
                    "call_DdmO9pD3xa9XTPNJ32zg2hcA",
                    "get_weather",
                    r#"{"location":"Paris, France"}"#
                ),
                call(
                    "call_9sAhQ2vLw0Y3bXnR4tKe7fJm",
                    "get_time",
                    r#"{"tz":"Europe/Paris"}"#
                ),
            ],
            finish: FinishReason::ToolCalls,
            finish_raw: Some("tool_calls".into()),
            usage: usage(124, 0, 41, 0),
            model: Some("gpt-4.1-2025-04-14".into()),
            id: Some("chatcmpl-C1toolstream".into()),
            raw: Default::default(),
        }
    );
}

#[test]
fn openai_usage_only_final_chunk_with_crlf_and_split_characters() {
    let reply = stream_reply("openai_text_stream_usage_chunk.sse");
    assert_eq!(reply.content, vec![Part::text("Bonjour à tous !")]);
    assert_eq!(reply.finish, FinishReason::Length);
    assert_eq!(reply.finish_raw.as_deref(), Some("length"));
    assert_eq!(reply.usage, usage(1408, 1280, 4, 0));
}

#[test]
fn the_events_of_a_text_stream_in_order() {
    let (events, rest) = stream_events(&fixture("openai_text_stream_usage_chunk.sse"), 64);
    let mut all = events;
    all.extend(rest.unwrap());
    let text = |t: &str| Event::TextDelta {
        part: 0,
        text: t.into(),
    };
    assert_eq!(
        all,
        vec![
            Event::Start {
                id: Some("chatcmpl-C1usagechunk".into()),
                model: Some("gpt-4o-mini-2024-07-18".into()),
            },
            text("Bonjour"),
            text(" à tous"),
            text(" !"),
            Event::Usage(usage(1408, 1280, 4, 0).unwrap()),
            Event::Finish {
                reason: FinishReason::Length,
                raw: Some("length".into()),
            },
        ]
    );
}

#[test]
fn deepseek_reasoning_content_stream_with_usage_on_the_last_choice_chunk() {
    let reply = stream_reply("deepseek_reasoning_stream.sse");
    assert_eq!(
        reply.content,
        vec![
            thinking("Okay, the user greets me."),
            Part::text("Hi there!")
        ]
    );
    assert_eq!(reply.finish, FinishReason::Stop);
    assert_eq!(reply.usage, usage(13, 0, 62, 58));
}

#[test]
fn vllm_reasoning_stream_then_a_tool_call() {
    let reply = stream_reply("vllm_reasoning_stream.sse");
    assert_eq!(
        reply.content,
        vec![
            thinking("The user wants the weather."),
            Part::text("\n\n"),
            call(
                "chatcmpl-tool-8c1f0e2d4b6a",
                "get_weather",
                r#"{"city": "Oslo"}"#
            ),
        ]
    );
    assert_eq!(reply.finish, FinishReason::ToolCalls);
    assert_eq!(reply.usage, usage(310, 0, 42, 0));
}

#[test]
fn openrouter_stream_with_comments_reasoning_and_usage_after_the_finish() {
    let reply = stream_reply("openrouter_stream.sse");
    assert_eq!(
        reply.content,
        vec![thinking("I should count."), Part::text("1, 2, 3.")]
    );
    assert_eq!(reply.finish_raw.as_deref(), Some("stop"));
    assert_eq!(reply.usage, usage(1500, 1024, 40, 12));
    assert_eq!(reply.model.as_deref(), Some("anthropic/claude-sonnet-4"));
}

#[test]
fn a_server_repeating_the_tool_name_on_every_delta() {
    let reply = stream_reply("repeated_tool_name_stream.sse");
    assert_eq!(
        reply.content,
        vec![
            call("call_a1", "read_file", r#"{"path":"src/main.rs"}"#),
            call("call_b2", "list_dir", r#"{"path":"src"}"#),
        ]
    );
    assert_eq!(reply.usage, usage(900, 0, 35, 0));
}

#[test]
fn an_error_object_inside_a_200_stream() {
    let (events, rest) = stream_events(&fixture("error_in_stream.sse"), 13);
    assert_eq!(
        rest.unwrap(),
        vec![],
        "the error was reported; the end is not a cut"
    );
    assert_eq!(
        events.last(),
        Some(&Event::Error(StreamError {
            kind: Some("server_error".into()),
            code: None,
            message: "The server had an error while processing your request. Sorry about that!"
                .into(),
            status: None,
        }))
    );
    let mut assembler = switchyard_wire::Assembler::new();
    for e in &events {
        assembler.push(e).unwrap();
    }
    assert_eq!(assembler.reply().text(), "Once upon");
    assert!(!assembler.is_finished());
}

#[test]
fn openrouter_error_chunk_with_finish_reason_error_gives_no_finish() {
    let (events, rest) = stream_events(&fixture("openrouter_error_stream.sse"), 100);
    let rest = rest.unwrap();
    assert!(rest
        .iter()
        .chain(&events)
        .all(|e| !matches!(e, Event::Finish { .. })));
    let error = events.iter().find_map(|e| match e {
        Event::Error(e) => Some(e),
        _ => None,
    });
    assert_eq!(error.and_then(|e| e.code.as_deref()), Some("server_error"));
}

#[test]
fn a_stream_cut_before_done_and_finish_is_an_error() {
    let (events, rest) = stream_events(&fixture("cut_stream.sse"), 32);
    assert!(events.iter().any(|e| matches!(e, Event::TextDelta { .. })));
    match rest {
        Err(DecodeError::Malformed(m)) => assert!(m.contains("[DONE]"), "{m}"),
        other => panic!("expected the cut to be detected, got {other:?}"),
    }
    // Nothing at all is cut too.
    assert!(stream_events(b"", 1).1.is_err());
    // Keep-alives, comments and empty data lines are ignored.
    let (events, rest) = stream_events(b": ping\n\ndata:\n\ndata: \n\ndata: [DONE]\n\n", 3);
    assert!(events.iter().all(|e| matches!(e, Event::Finish { .. })));
    assert!(rest.is_ok());
}

// --- requests ----------------------------------------------------------------------------

fn weather_tool() -> Tool {
    Tool {
        name: "get_weather".into(),
        description: Some("Current weather for a location.".into()),
        parameters: json!({
            "type": "object",
            "properties": { "location": { "type": "string" } },
            "required": ["location"],
            "additionalProperties": false
        }),
        kind: ToolKind::Function,
        strict: Some(true),
        namespace: None,
    }
}

#[test]
fn decodes_what_the_openai_sdk_sends() {
    let decoded = chat()
        .decode_request(&fixture("sdk_agent_request.json"))
        .unwrap();
    assert_eq!(decoded.model.as_deref(), Some("gpt-4.1"));
    assert!(decoded.stream);
    let mut passthrough = serde_json::Map::new();
    passthrough.insert("seed".into(), json!(42));
    passthrough.insert("stream_options".into(), json!({"include_usage": true}));
    passthrough.insert("user".into(), json!("user-1234"));
    let expected = Request {
        messages: vec![
            Message::text(
                Role::Developer,
                "You are a terse assistant. Use tools when useful.",
            ),
            Message {
                role: Role::User,
                content: vec![
                    Part::text("What is in this picture, and what's the weather there?"),
                    Part::Image(Image::Base64 {
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    }),
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![call(
                    "call_Xq1lV3s8a0Jc2b4N",
                    "get_weather",
                    r#"{"location":"Paris, France"}"#,
                )],
            },
            Message {
                role: Role::Tool,
                content: vec![Part::ToolResult(ToolResult {
                    call_id: "call_Xq1lV3s8a0Jc2b4N".into(),
                    name: None,
                    content: vec![Part::text("18°C, light rain")],
                    is_error: false,
                    kind: ToolKind::Function,
                })],
            },
            Message::text(Role::User, "Thanks. Answer in JSON."),
        ],
        tools: vec![weather_tool()],
        tool_choice: Some(ToolChoice::Auto),
        parallel_tool_calls: Some(false),
        max_tokens: Some(1024),
        temperature: Some(0.2),
        top_p: Some(0.9),
        stop: vec!["\n\n\n".into()],
        reasoning: Some(Reasoning {
            effort: Some("low".into()),
            ..Reasoning::default()
        }),
        response_format: Some(ResponseFormat::JsonSchema {
            name: "weather_answer".into(),
            schema: json!({
                "type": "object",
                "properties": { "picture": { "type": "string" }, "weather": { "type": "string" } },
                "required": ["picture", "weather"],
                "additionalProperties": false
            }),
            strict: Some(true),
        }),
        passthrough: Passthrough {
            dialect: Some(Dialect::Chat),
            fields: passthrough,
        },
    };
    assert_eq!(decoded.request, expected);

    // Re-encoded for a chat backend, the unmodelled fields travel along.
    let body = chat()
        .encode_request(
            &decoded.request,
            &EncodeOptions {
                model: "gpt-4.1",
                stream: true,
            },
        )
        .unwrap();
    assert_eq!(body["seed"], 42);
    assert_eq!(body["user"], "user-1234");
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["messages"][0]["role"], "developer");
    assert_eq!(
        body["messages"][1]["content"][1]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );
}

#[test]
fn decodes_deepseek_history_with_reasoning_and_legacy_fields() {
    let decoded = chat()
        .decode_request(&fixture("deepseek_history_request.json"))
        .unwrap();
    let request = &decoded.request;
    assert!(!decoded.stream);
    assert_eq!(request.max_tokens, Some(4096));
    assert_eq!(
        request.messages[2].content,
        vec![
            thinking("Compare the tenths: 1 < 8."),
            Part::text("9.8 is greater.")
        ]
    );
    // Shapes the hub does not model stay in the passthrough, for chat only.
    let fields = request.passthrough.fields_for(Dialect::Chat).unwrap();
    assert_eq!(fields["response_format"], json!({"type": "text"}));
    assert_eq!(fields["tool_choice"]["type"], "allowed_tools");
    assert_eq!(fields["frequency_penalty"], 0);
    assert_eq!(request.tool_choice, None);
    let body = chat()
        .encode_request(
            request,
            &EncodeOptions {
                model: "deepseek-reasoner",
                stream: false,
            },
        )
        .unwrap();
    assert_eq!(body["max_completion_tokens"], 4096);
    assert_eq!(
        body["messages"][2]["reasoning_content"],
        "Compare the tenths: 1 < 8."
    );
    assert_eq!(body["response_format"], json!({"type": "text"}));
    assert_eq!(body["tool_choice"]["type"], "allowed_tools");
}

#[test]
fn encodes_a_request_exactly() {
    let request = Request {
        messages: vec![
            Message::text(Role::System, "Be brief."),
            Message::text(Role::User, "Weather in Paris?"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Part::Thinking(Thinking {
                        text: "Use the tool.".into(),
                        state: Some(switchyard_wire::Opaque::new(Dialect::Messages, "sig")),
                        redacted: false,
                        id: None,
                    }),
                    Part::Thinking(Thinking {
                        text: String::new(),
                        state: Some(switchyard_wire::Opaque::new(Dialect::Messages, "data")),
                        redacted: true,
                        id: None,
                    }),
                    Part::text("Checking."),
                    call("toolu_01", "get_weather", r#"{"location":"Paris"}"#),
                ],
            },
            // Anthropic style: the result rides in a user message, flagged as an error.
            Message {
                role: Role::User,
                content: vec![
                    Part::ToolResult(ToolResult {
                        call_id: "toolu_01".into(),
                        name: Some("get_weather".into()),
                        content: vec![Part::text("service down")],
                        is_error: true,
                        kind: ToolKind::Function,
                    }),
                    Part::text("Try again?"),
                ],
            },
        ],
        tools: vec![weather_tool()],
        tool_choice: Some(ToolChoice::Tool("get_weather".into())),
        parallel_tool_calls: Some(true),
        max_tokens: Some(256),
        temperature: Some(0.5),
        top_p: None,
        stop: vec!["END".into()],
        reasoning: Some(Reasoning {
            effort: Some("high".into()),
            budget_tokens: Some(2048),
            summary: Some("auto".into()),
        }),
        response_format: Some(ResponseFormat::JsonObject),
        passthrough: Passthrough::default(),
    };
    let body = chat()
        .encode_request(
            &request,
            &EncodeOptions {
                model: "deepseek-chat",
                stream: true,
            },
        )
        .unwrap();
    let expected = json!({
        "model": "deepseek-chat",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "reasoning_content": "Use the tool.",
                "tool_calls": [{"id": "toolu_01", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}}]
            },
            {"role": "tool", "tool_call_id": "toolu_01", "content": "Error: service down"},
            {"role": "user", "content": "Try again?"}
        ],
        "tools": [{"type": "function", "function": {
            "name": "get_weather",
            "description": "Current weather for a location.",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"],
                "additionalProperties": false
            },
            "strict": true
        }}],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "parallel_tool_calls": true,
        "max_completion_tokens": 256,
        "temperature": 0.5,
        "stop": ["END"],
        "reasoning_effort": "high",
        "response_format": {"type": "json_object"},
        "stream": true,
        "stream_options": {"include_usage": true}
    });
    assert_eq!(Value::Object(body), expected);
}

// --- server side -------------------------------------------------------------------------

fn server_reply() -> Reply {
    Reply {
        content: vec![
            thinking("Think."),
            Part::text("Calling."),
            call("call_1", "get_weather", r#"{"location":"Oslo"}"#),
        ],
        finish: FinishReason::ToolCalls,
        finish_raw: Some("tool_use".into()),
        usage: Some(Usage {
            input: 100,
            cached_input: 60,
            cache_write: 0,
            output: 20,
            reasoning: 5,
        }),
        model: Some("claude-sonnet-4-5".into()),
        id: None,
        raw: Default::default(),
    }
}

fn context() -> ServerContext {
    ServerContext {
        created: 1754000000,
        fallback_id: "chatcmpl-gw1".into(),
    }
}

#[test]
fn encodes_a_reply_as_openai_does() {
    let body: Value =
        serde_json::from_slice(&chat().encode_reply(&server_reply(), &context())).unwrap();
    assert_eq!(
        body,
        json!({
            "id": "chatcmpl-gw1",
            "object": "chat.completion",
            "created": 1754000000,
            "model": "claude-sonnet-4-5",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Calling.",
                    "reasoning_content": "Think.",
                    "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "get_weather", "arguments": "{\"location\":\"Oslo\"}"}}],
                    "refusal": null
                },
                "logprobs": null,
                "finish_reason": "tool_calls"
            }],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": 20,
                "total_tokens": 120,
                "prompt_tokens_details": {"cached_tokens": 60},
                "completion_tokens_details": {"reasoning_tokens": 5}
            }
        })
    );
}

#[test]
fn encodes_a_stream_as_openai_does() {
    let mut encoder = chat().stream_encoder(&context());
    let mut out = Vec::new();
    for event in switchyard_wire::reply_events(&server_reply(), 0) {
        encoder.event(&event, &mut out);
    }
    encoder.finish(&mut out);
    let text = String::from_utf8(out).unwrap();
    let head = r#"{"id":"chatcmpl-gw1","object":"chat.completion.chunk","created":1754000000,"model":"claude-sonnet-4-5","choices":[{"index":0,"delta":"#;
    let chunk = |delta: &str, finish: &str| {
        format!("data: {head}{delta},\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n")
    };
    let expected = [
        chunk(r#"{"role":"assistant","content":""}"#, "null"),
        chunk(r#"{"reasoning_content":"Think."}"#, "null"),
        chunk(r#"{"content":"Calling."}"#, "null"),
        chunk(
            r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}"#,
            "null",
        ),
        chunk(
            r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\":\"Oslo\"}"}}]}"#,
            "null",
        ),
        chunk("{}", "\"tool_calls\""),
        "data: {\"id\":\"chatcmpl-gw1\",\"object\":\"chat.completion.chunk\",\"created\":1754000000,\"model\":\"claude-sonnet-4-5\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":20,\"total_tokens\":120,\"prompt_tokens_details\":{\"cached_tokens\":60},\"completion_tokens_details\":{\"reasoning_tokens\":5}}}\n\n".to_string(),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    assert_eq!(text, expected);

    // And it decodes back to the reply (the finish string becomes chat's own).
    let (mut events, rest) = stream_events(text.as_bytes(), 5);
    events.extend(rest.unwrap());
    let mut want = server_reply();
    want.id = Some("chatcmpl-gw1".into());
    want.finish_raw = Some("tool_calls".into());
    assert_eq!(switchyard_wire::assemble(&events).unwrap(), want);
}

#[test]
fn a_stream_error_is_written_as_an_error_chunk_and_ends_the_stream() {
    let mut encoder = chat().stream_encoder(&context());
    let mut out = Vec::new();
    encoder.event(
        &Event::Start {
            id: None,
            model: None,
        },
        &mut out,
    );
    encoder.event(
        &Event::Error(StreamError {
            kind: Some("overloaded_error".into()),
            code: None,
            message: "Overloaded".into(),
            status: Some(529),
        }),
        &mut out,
    );
    encoder.event(&Event::Usage(Usage::default()), &mut out);
    encoder.finish(&mut out);
    let text = String::from_utf8(out).unwrap();
    assert!(text.ends_with(
        "data: {\"error\":{\"message\":\"Overloaded\",\"type\":\"overloaded_error\",\"param\":null,\"code\":null}}\n\n"
    ), "{text}");
    assert!(!text.contains("[DONE]"));
}

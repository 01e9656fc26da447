//! Golden tests of the `responses` codec against fixtures shaped like OpenAI's documented
//! replies and streams and like what Codex sends.

use serde_json::{json, Value};
use switchyard_wire::sse::SseParser;
use switchyard_wire::{
    assemble, codec, reply_events, ByteStreamDecoder, DecodeError, Dialect, EncodeOptions, Event,
    FinishReason, Image, Message, Opaque, Part, Reasoning, Reply, Request, ResponseFormat, Role,
    ServerContext, Thinking, Tool, ToolCall, ToolChoice, ToolKind, Usage,
};

const ENC: &str =
    "gAAAAABo9X2kQ8m1Zc3Tq0Vb7XrL9y0wq1sN6pM4lKd2YtU8fHcR5eJ3aG7iB0oW9vS1xZ4nE6uC2mF8hT5jP3rA==";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/responses/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn responses() -> &'static dyn switchyard_wire::Codec {
    codec(Dialect::Responses)
}

/// Decodes a stream fed in chunks of `size` bytes; returns the events and the result of
/// `finish`.
fn decode_stream(bytes: &[u8], size: usize) -> (Vec<Event>, Result<Vec<Event>, DecodeError>) {
    let mut decoder = ByteStreamDecoder::new(responses());
    let mut events = Vec::new();
    for chunk in bytes.chunks(size.max(1)) {
        events.extend(decoder.push(chunk).expect("stream decodes"));
    }
    let end = decoder.finish();
    if let Ok(more) = &end {
        events.extend(more.iter().cloned());
    }
    (events, end)
}

/// The reply assembled from a whole stream, checked the same for several chunk sizes.
fn stream_reply(name: &str) -> Reply {
    let bytes = fixture(name);
    let (events, end) = decode_stream(&bytes, bytes.len());
    end.expect("stream ends with its terminal event");
    let reply = assemble(&events).expect("assembles");
    for size in [1, 7, 64] {
        let (events, end) = decode_stream(&bytes, size);
        end.unwrap();
        assert_eq!(
            assemble(&events).unwrap(),
            reply,
            "{name} in chunks of {size}"
        );
    }
    reply
}

/// The reply the terminal event's `response` object decodes to (what the non-streamed call
/// would have returned).
fn terminal_reply(name: &str) -> Reply {
    let bytes = fixture(name);
    let mut parser = SseParser::new();
    let events = parser.push(&bytes);
    let last = events.last().expect("events");
    let data: Value = serde_json::from_str(&last.data).unwrap();
    let body = serde_json::to_vec(&data["response"]).unwrap();
    responses().decode_reply(&body).unwrap().without_raw()
}

#[test]
fn a_reply_with_reasoning_and_a_message() {
    let body = fixture("reply_reasoning.json");
    let reply = responses().decode_reply(&body).unwrap();
    assert_eq!(reply.raw, body);
    assert_eq!(
        reply.id.as_deref(),
        Some("resp_68f1c29f8a6c8190b7e1a2b3c4d5e6f7")
    );
    assert_eq!(reply.model.as_deref(), Some("gpt-5.4-2026-03-05"));
    assert_eq!(
        reply.content,
        vec![
            Part::Thinking(Thinking {
                text: "**Checking the arithmetic**\n\nThe user wants 17 × 23; 17 × 20 = 340 and \
                       17 × 3 = 51.\n\n**Answering**\n\n340 + 51 = 391."
                    .into(),
                state: Some(Opaque::new(Dialect::Responses, ENC)),
                redacted: false,
                id: Some("rs_68f1c2a0b3d48190a1e5f6c7d8e9f0a1".into()),
            }),
            Part::text("17 × 23 = 391."),
        ]
    );
    assert_eq!(reply.finish, FinishReason::Stop);
    assert_eq!(reply.finish_raw.as_deref(), Some("completed"));
    // OpenAI's convention is the canonical one: cached ⊂ input, reasoning ⊂ output.
    assert_eq!(
        reply.usage,
        Some(Usage {
            input: 2048,
            cached_input: 1536,
            cache_write: 0,
            output: 412,
            reasoning: 384,
        })
    );
}

#[test]
fn a_reply_with_function_namespaced_and_custom_calls() {
    let reply = responses()
        .decode_reply(&fixture("reply_function_call.json"))
        .unwrap();
    let calls: Vec<&ToolCall> = reply.tool_calls().collect();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0].id, "call_Xq3mZ8kP2vT9wR1s");
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(
        calls[0].arguments,
        r#"{"location":"Paris, France","unit":"celsius"}"#
    );
    assert_eq!(calls[0].namespace, None);
    assert_eq!(calls[1].name, "read_file");
    assert_eq!(calls[1].namespace.as_deref(), Some("mcp__filesystem__"));
    assert_eq!(calls[2].kind, ToolKind::Custom);
    assert_eq!(calls[2].name, "apply_patch");
    assert!(calls[2].arguments.starts_with("*** Begin Patch\n"));
    assert_eq!(reply.finish, FinishReason::ToolCalls);
    assert_eq!(reply.finish_raw.as_deref(), Some("completed"));
}

#[test]
fn incomplete_replies_map_to_length_and_content_filter() {
    for (reason, finish) in [
        ("max_output_tokens", FinishReason::Length),
        ("content_filter", FinishReason::ContentFilter),
    ] {
        let body = json!({"id": "resp_1", "object": "response", "status": "incomplete",
            "incomplete_details": {"reason": reason}, "model": "gpt-5.4", "error": null,
            "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                "status": "incomplete",
                "content": [{"type": "output_text", "text": "Once", "annotations": []}]}],
            "usage": {"input_tokens": 5, "output_tokens": 1}});
        let reply = responses()
            .decode_reply(&serde_json::to_vec(&body).unwrap())
            .unwrap();
        assert_eq!(reply.finish, finish);
        assert_eq!(reply.finish_raw.as_deref(), Some(reason));
        assert_eq!(reply.text(), "Once");
    }
}

#[test]
fn errors_in_a_200_body_are_provider_errors_and_bad_bodies_malformed() {
    let failed = br#"{"id":"resp_1","object":"response","status":"failed","output":[],
        "error":{"code":"server_error","message":"The server had an error while processing your request."}}"#;
    match responses().decode_reply(failed) {
        Err(DecodeError::Provider(e)) => assert_eq!(e.code.as_deref(), Some("server_error")),
        other => panic!("{other:?}"),
    }
    let http = br#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    match responses().decode_reply(http) {
        Err(DecodeError::Provider(e)) => {
            assert_eq!(e.code.as_deref(), Some("insufficient_quota"));
            assert!(e.message.starts_with("You exceeded"));
        }
        other => panic!("{other:?}"),
    }
    for (body, says) in [
        (&b"null"[..], "null"),
        (b"<html>502 Bad Gateway</html>", "not JSON"),
        (br#"{"id":"resp_1","status":"completed"}"#, "output"),
        (
            br#"{"output":[{"type":"function_call","call_id":7}]}"#,
            "output[0]",
        ),
    ] {
        match responses().decode_reply(body) {
            Err(DecodeError::Malformed(m)) => assert!(m.contains(says), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_streamed_text_reply_equals_its_terminal_response() {
    let reply = stream_reply("stream_text.sse");
    assert_eq!(reply.text(), "Hello! How can I help — today? ✓");
    assert_eq!(
        reply.id.as_deref(),
        Some("resp_68f1d0a1b2c38190a4b5c6d7e8f9a0b1")
    );
    assert_eq!(reply.model.as_deref(), Some("gpt-5.4-mini-2026-03-05"));
    assert_eq!(reply.finish, FinishReason::Stop);
    assert_eq!(reply.usage.map(|u| u.total()), Some(48));
    assert_eq!(reply, terminal_reply("stream_text.sse"));
}

#[test]
fn a_streamed_function_call_including_a_namespaced_one() {
    let reply = stream_reply("stream_function_call.sse");
    let calls: Vec<&ToolCall> = reply.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0].arguments,
        r#"{"location":"Paris, France","unit":"celsius"}"#
    );
    assert_eq!(calls[1].namespace.as_deref(), Some("mcp__filesystem__"));
    assert_eq!(reply.finish, FinishReason::ToolCalls);
    assert_eq!(reply.usage.map(|u| u.cached_input), Some(256));
    assert_eq!(reply, terminal_reply("stream_function_call.sse"));
}

#[test]
fn a_streamed_custom_tool_call() {
    let reply = stream_reply("stream_custom_tool.sse");
    let call = reply.tool_calls().next().unwrap();
    assert_eq!(call.kind, ToolKind::Custom);
    assert_eq!(
        call.arguments,
        "*** Begin Patch\n*** Add File: hello.txt\n+Hello, world!\n*** End Patch\n"
    );
    assert_eq!(reply, terminal_reply("stream_custom_tool.sse"));
}

#[test]
fn a_streamed_reasoning_summary_with_encrypted_content() {
    let reply = stream_reply("stream_reasoning.sse");
    match &reply.content[0] {
        Part::Thinking(t) => {
            assert_eq!(
                t.text,
                "**Checking the arithmetic**\n\n17 × 20 = 340 and 17 × 3 = 51.\n\n\
                 **Answering**\n\n340 + 51 = 391."
            );
            assert_eq!(t.state, Some(Opaque::new(Dialect::Responses, ENC)));
            assert_eq!(t.id.as_deref(), Some("rs_68f1d3d5f6a78190b8c9d0e1f2a3b4c5"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(reply.text(), "17 × 23 = 391.");
    assert_eq!(reply.usage.map(|u| u.reasoning), Some(384));
    assert_eq!(reply, terminal_reply("stream_reasoning.sse"));
}

#[test]
fn missed_deltas_are_recovered_from_the_done_events_without_duplication() {
    for name in [
        "stream_text.sse",
        "stream_function_call.sse",
        "stream_reasoning.sse",
        "stream_custom_tool.sse",
    ] {
        let full = stream_reply(name);
        let bytes = fixture(name);
        let kept: Vec<_> = SseParser::new()
            .push(&bytes)
            .into_iter()
            .filter(|e| !e.event.as_deref().unwrap_or_default().ends_with(".delta"))
            .collect();
        let mut out = Vec::new();
        for e in &kept {
            switchyard_wire::sse::write_event(&mut out, e.event.as_deref(), &e.data);
        }
        let (events, end) = decode_stream(&out, 33);
        end.unwrap();
        assert_eq!(assemble(&events).unwrap(), full, "{name} without deltas");
    }
}

#[test]
fn response_incomplete_is_a_length_finish() {
    let reply = stream_reply("stream_incomplete.sse");
    assert_eq!(reply.text(), "Once upon a time, in");
    assert_eq!(reply.finish, FinishReason::Length);
    assert_eq!(reply.finish_raw.as_deref(), Some("max_output_tokens"));
    assert_eq!(reply, terminal_reply("stream_incomplete.sse"));
}

#[test]
fn response_failed_is_an_error_event_with_code_and_message() {
    let (events, end) = decode_stream(&fixture("stream_failed.sse"), 50);
    assert!(end.is_ok(), "response.failed is a terminal event");
    let error = events
        .iter()
        .find_map(|e| match e {
            Event::Error(e) => Some(e.clone()),
            _ => None,
        })
        .expect("an error event");
    assert_eq!(error.code.as_deref(), Some("context_length_exceeded"));
    assert!(error.message.contains("context window"));
    assert!(assemble(&events).is_err());
}

#[test]
fn a_standalone_error_event() {
    let (events, end) = decode_stream(&fixture("stream_error.sse"), 50);
    assert!(end.is_ok());
    match events.last() {
        Some(Event::Error(e)) => {
            assert_eq!(e.code.as_deref(), Some("rate_limit_exceeded"));
            assert!(e.message.contains("try again in 1.5s"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_stream_cut_before_its_terminal_event_is_an_error() {
    let bytes = fixture("stream_text.sse");
    let text = String::from_utf8(bytes).unwrap();
    let cut = text.find("event: response.completed").unwrap();
    let (_, end) = decode_stream(&text.as_bytes()[..cut], 100);
    match end {
        Err(DecodeError::Malformed(m)) => assert!(m.contains("cut off"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn crlf_framing_and_keep_alive_comments_are_accepted() {
    let bytes = fixture("stream_function_call.sse");
    let text = String::from_utf8(bytes).unwrap();
    let crlf = format!(": keep-alive\r\n\r\n{}", text.replace('\n', "\r\n"));
    let (events, end) = decode_stream(crlf.as_bytes(), 13);
    end.unwrap();
    assert_eq!(
        assemble(&events).unwrap(),
        stream_reply("stream_function_call.sse")
    );
}

// ---------------------------------------------------------------------------------------
// Server side: what Codex sends, and what it consumes.
// ---------------------------------------------------------------------------------------

#[test]
fn a_codex_request_decodes_and_re_encodes_with_every_field_kept() {
    let body = fixture("codex_request.json");
    let original: Value = serde_json::from_slice(&body).unwrap();
    let decoded = responses().decode_request(&body).unwrap();
    assert_eq!(decoded.model.as_deref(), Some("gpt-5.4-codex"));
    assert!(decoded.stream);
    let request = &decoded.request;

    let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,    // instructions
            Role::Developer, // permissions
            Role::User,      // AGENTS.md + environment context
            Role::User,      // the task, with an image
            Role::Assistant, // reasoning + exec_command call
            Role::Tool,
            Role::Assistant, // namespaced read_file call
            Role::Tool,
            Role::Assistant, // reasoning + apply_patch
            Role::Tool,
            Role::Assistant, // the answer
            Role::User,
        ]
    );
    assert!(request.messages[0]
        .joined_text()
        .starts_with("You are Codex"));
    assert!(matches!(
        &request.messages[3].content[1],
        Part::Image(Image::Base64 { media_type, .. }) if media_type == "image/png"
    ));
    match &request.messages[4].content[..] {
        [Part::Thinking(t), Part::ToolCall(c)] => {
            assert_eq!(t.id.as_deref(), Some("rs_0a1b2c3d4e5f60718293a4b5c6d7e8f9"));
            assert_eq!(
                t.state.as_ref().map(|s| s.dialect),
                Some(Dialect::Responses)
            );
            assert_eq!(c.name, "exec_command");
        }
        other => panic!("{other:?}"),
    }
    match &request.messages[6].content[..] {
        [Part::ToolCall(c)] => assert_eq!(c.namespace.as_deref(), Some("mcp__filesystem__")),
        other => panic!("{other:?}"),
    }
    match &request.messages[9].content[..] {
        [Part::ToolResult(r)] => {
            assert_eq!(r.kind, ToolKind::Custom);
            assert!(r.text().starts_with("Success."));
        }
        other => panic!("{other:?}"),
    }

    // Tools: functions, the custom apply_patch (format kept in parameters), the namespace
    // flattened into members that carry it.
    let names: Vec<(&str, Option<&str>, ToolKind)> = request
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.namespace.as_deref(), t.kind))
        .collect();
    assert_eq!(
        names,
        [
            ("exec_command", None, ToolKind::Function),
            ("update_plan", None, ToolKind::Function),
            ("apply_patch", None, ToolKind::Custom),
            ("read_file", Some("mcp__filesystem__"), ToolKind::Function),
            (
                "list_directory",
                Some("mcp__filesystem__"),
                ToolKind::Function
            ),
        ]
    );
    assert_eq!(request.tools[2].parameters["syntax"], "lark");
    assert_eq!(request.tool_choice, Some(ToolChoice::Auto));
    assert_eq!(request.parallel_tool_calls, Some(true));
    assert_eq!(
        request.reasoning,
        Some(Reasoning {
            effort: Some("high".into()),
            budget_tokens: None,
            summary: Some("auto".into()),
        })
    );
    assert!(matches!(
        &request.response_format,
        Some(ResponseFormat::JsonSchema { name, strict: Some(true), .. }) if name == "codex_output_schema"
    ));

    // What the hub lacks rides in the passthrough.
    assert_eq!(request.passthrough.dialect, Some(Dialect::Responses));
    let fields = &request.passthrough.fields;
    for key in [
        "prompt_cache_key",
        "service_tier",
        "client_metadata",
        "text",
        "tools",
    ] {
        assert!(fields.contains_key(key), "passthrough lacks {key}");
    }
    assert_eq!(fields["text"], json!({"verbosity": "low"}));

    // Re-encoding gives the same body, except that tools the hub does not model move after
    // the modelled ones (the documented loss of their position).
    let encoded = responses()
        .encode_request(
            request,
            &EncodeOptions {
                model: "gpt-5.4-codex",
                stream: true,
            },
        )
        .unwrap();
    let mut expected = original.clone();
    let tools = expected["tools"].as_array().cloned().unwrap();
    let modelled = |t: &Value| {
        matches!(
            t["type"].as_str(),
            Some("function" | "custom" | "namespace")
        )
    };
    let mut reordered: Vec<Value> = tools.iter().filter(|t| modelled(t)).cloned().collect();
    reordered.extend(tools.iter().filter(|t| !modelled(t)).cloned());
    expected["tools"] = Value::Array(reordered);
    assert_eq!(Value::Object(encoded.clone()), expected);

    // And once more: a fixed point.
    let again = responses()
        .decode_request(&serde_json::to_vec(&encoded).unwrap())
        .unwrap();
    assert_eq!(&again.request, request);
}

#[test]
fn encoding_a_canonical_request() {
    let request = Request {
        messages: vec![
            Message::text(Role::System, "be brief"),
            Message::text(Role::Developer, "use metric units"),
            Message::text(Role::User, "weather in Paris?"),
            Message {
                role: Role::Assistant,
                content: vec![
                    // Another dialect's thinking cannot be sent: dropped.
                    Part::Thinking(Thinking {
                        text: "let me check".into(),
                        state: Some(Opaque::new(Dialect::Messages, "EqQBCkYIBxgC")),
                        redacted: false,
                        id: None,
                    }),
                    Part::ToolCall(ToolCall {
                        id: "toolu_01A".into(),
                        name: "get_weather".into(),
                        arguments: r#"{"city":"Paris"}"#.into(),
                        kind: ToolKind::Function,
                        namespace: None,
                        state: None,
                    }),
                ],
            },
            Message {
                role: Role::Tool,
                content: vec![Part::ToolResult(switchyard_wire::ToolResult {
                    call_id: "toolu_01A".into(),
                    name: Some("get_weather".into()),
                    content: vec![Part::text("18°C")],
                    is_error: false,
                    kind: ToolKind::Function,
                })],
            },
        ],
        tools: vec![Tool {
            name: "get_weather".into(),
            description: Some("Current weather".into()),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
            kind: ToolKind::Function,
            strict: Some(true),
            namespace: None,
        }],
        tool_choice: Some(ToolChoice::Tool("get_weather".into())),
        max_tokens: Some(256),
        stop: vec!["\n\n".into()],
        reasoning: Some(Reasoning {
            effort: None,
            budget_tokens: Some(8000),
            summary: None,
        }),
        ..Request::default()
    };
    let body = responses()
        .encode_request(
            &request,
            &EncodeOptions {
                model: "gpt-5.4",
                stream: true,
            },
        )
        .unwrap();
    let expected = json!({
        "model": "gpt-5.4",
        "instructions": "be brief",
        "input": [
            {"type": "message", "role": "developer",
                "content": [{"type": "input_text", "text": "use metric units"}]},
            {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "weather in Paris?"}]},
            {"type": "function_call", "call_id": "toolu_01A", "name": "get_weather",
                "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call_output", "call_id": "toolu_01A", "output": "18°C"},
        ],
        "tools": [{"type": "function", "name": "get_weather", "description": "Current weather",
            "strict": true,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "max_output_tokens": 256,
        "reasoning": {"effort": "medium"},
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    });
    assert_eq!(Value::Object(body), expected);
}

fn sample_reply() -> Reply {
    Reply {
        content: vec![
            Part::Thinking(Thinking {
                text: "Plan: call the tool.".into(),
                state: Some(Opaque::new(Dialect::Responses, ENC)),
                redacted: false,
                id: Some("rs_abc".into()),
            }),
            Part::text("Checking."),
            Part::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a"}"#.into(),
                kind: ToolKind::Function,
                namespace: Some("mcp__fs__".into()),
                state: None,
            }),
        ],
        finish: FinishReason::ToolCalls,
        finish_raw: Some("completed".into()),
        usage: Some(Usage {
            input: 100,
            cached_input: 64,
            cache_write: 0,
            output: 30,
            reasoning: 12,
        }),
        model: Some("gpt-5.4".into()),
        id: Some("resp_abc".into()),
        raw: Default::default(),
    }
}

fn encode_stream(events: &[Event]) -> Vec<u8> {
    let mut encoder = responses().stream_encoder(&ServerContext {
        created: 1767225600,
        fallback_id: "resp_fallback".into(),
    });
    let mut out = Vec::new();
    for e in events {
        encoder.event(e, &mut out);
    }
    encoder.finish(&mut out);
    out
}

#[test]
fn the_stream_encoder_writes_what_codex_consumes() {
    let reply = sample_reply();
    let bytes = encode_stream(&reply_events(&reply, 4));
    let events = SseParser::new().push(&bytes);
    let mut names: Vec<String> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let data: Value = serde_json::from_str(&e.data).unwrap();
        assert_eq!(
            data["type"].as_str(),
            e.event.as_deref(),
            "event: matches type"
        );
        assert_eq!(data["sequence_number"], i as u64);
        let name = e.event.clone().unwrap();
        if names.last() != Some(&name) {
            names.push(name);
        }
    }
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let data = |i: usize| -> Value { serde_json::from_str(&events[i].data).unwrap() };
    let created = data(0);
    assert_eq!(created["response"]["id"], "resp_abc");
    assert_eq!(created["response"]["status"], "in_progress");
    let done: Vec<Value> = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("response.output_item.done"))
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    assert_eq!(done[0]["item"]["encrypted_content"], ENC);
    assert_eq!(done[0]["item"]["id"], "rs_abc");
    assert_eq!(done[1]["item"]["content"][0]["text"], "Checking.");
    assert_eq!(done[2]["item"]["namespace"], "mcp__fs__");
    assert_eq!(done[2]["item"]["call_id"], "call_1");
    assert_eq!(done[2]["item"]["arguments"], r#"{"path":"a"}"#);
    let completed = data(events.len() - 1);
    let response = &completed["response"];
    assert_eq!(response["status"], "completed");
    assert_eq!(response["output"].as_array().unwrap().len(), 3);
    assert_eq!(
        response["usage"],
        json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 64},
            "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 12},
            "total_tokens": 130})
    );
    // And our own decoder reads it back.
    let (decoded, end) = decode_stream(&bytes, 17);
    end.unwrap();
    assert_eq!(assemble(&decoded).unwrap(), reply);
}

#[test]
fn length_and_content_filter_end_with_response_incomplete() {
    for (finish, reason) in [
        (FinishReason::Length, "max_output_tokens"),
        (FinishReason::ContentFilter, "content_filter"),
    ] {
        let reply = Reply {
            content: vec![Part::text("partial")],
            finish,
            finish_raw: Some(reason.into()),
            id: Some("resp_i".into()),
            model: Some("m".into()),
            ..Reply::default()
        };
        let bytes = encode_stream(&reply_events(&reply, 0));
        let events = SseParser::new().push(&bytes);
        let last = events.last().unwrap();
        assert_eq!(last.event.as_deref(), Some("response.incomplete"));
        let data: Value = serde_json::from_str(&last.data).unwrap();
        assert_eq!(data["response"]["incomplete_details"]["reason"], reason);
        let (decoded, end) = decode_stream(&bytes, 9);
        end.unwrap();
        assert_eq!(assemble(&decoded).unwrap(), reply);
        // The non-streamed body says the same.
        let body = responses().encode_reply(&reply, &ServerContext::default());
        assert_eq!(
            responses().decode_reply(&body).unwrap().without_raw(),
            reply
        );
    }
}

#[test]
fn an_error_event_becomes_response_failed() {
    let events = vec![
        Event::Start {
            id: Some("resp_e".into()),
            model: None,
        },
        Event::TextDelta {
            part: 0,
            text: "half".into(),
        },
        Event::Error(switchyard_wire::StreamError {
            kind: None,
            code: Some("server_is_overloaded".into()),
            message: "Our servers are currently overloaded.".into(),
            status: None,
        }),
    ];
    let bytes = encode_stream(&events);
    let parsed = SseParser::new().push(&bytes);
    let last = parsed.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("response.failed"));
    let data: Value = serde_json::from_str(&last.data).unwrap();
    assert_eq!(data["response"]["error"]["code"], "server_is_overloaded");
    assert_eq!(data["response"]["status"], "failed");
    let (decoded, end) = decode_stream(&bytes, 11);
    end.unwrap();
    assert!(
        matches!(decoded.last(), Some(Event::Error(e)) if e.code.as_deref() == Some("server_is_overloaded"))
    );
}

#[test]
fn a_reply_body_sdks_accept() {
    let reply = sample_reply();
    let body = responses().encode_reply(&reply, &ServerContext::default());
    let value: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(value["object"], "response");
    assert_eq!(value["status"], "completed");
    assert_eq!(value["output"][1]["type"], "message");
    assert_eq!(value["output"][1]["role"], "assistant");
    assert!(value["output"][1]["id"]
        .as_str()
        .unwrap()
        .starts_with("msg_"));
    assert_eq!(value["output"][2]["type"], "function_call");
    assert_eq!(value["usage"]["total_tokens"], 130);
    assert_eq!(
        responses().decode_reply(&body).unwrap().without_raw(),
        reply
    );
}

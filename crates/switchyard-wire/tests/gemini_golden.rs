//! Golden tests of the gemini codec against bodies and streams shaped like Google's
//! documented examples (`tests/fixtures/gemini/`).

use serde_json::{json, Value};
use switchyard_wire::dialect::gemini::{synthetic_call_id, GeminiCodec, RESPONSE_SCHEMA_NAME};
use switchyard_wire::{
    assemble, reply_events, ByteStreamDecoder, Codec, DecodeError, EncodeOptions, Event,
    FinishReason, Image, Message, Opaque, Part, Reasoning, Reply, Request, ResponseFormat, Role,
    ServerContext, Thinking, Tool, ToolCall, ToolChoice, ToolKind, ToolResult, Usage,
};
use switchyard_wire::{Dialect, StreamError};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/gemini/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn decode(name: &str) -> Reply {
    let body = fixture(name);
    let reply = GeminiCodec.decode_reply(&body).unwrap();
    assert_eq!(reply.raw.as_ref(), body.as_slice(), "raw keeps the body");
    reply
}

fn gemini(value: &str) -> Option<Opaque> {
    Some(Opaque::new(Dialect::Gemini, value))
}

/// Decodes a stream in pieces of `piece` bytes; returns the events and the result of
/// `finish`.
fn decode_stream(bytes: &[u8], piece: usize) -> (Vec<Event>, Result<Vec<Event>, DecodeError>) {
    let mut decoder = ByteStreamDecoder::new(&GeminiCodec);
    let mut events = Vec::new();
    for chunk in bytes.chunks(piece.max(1)) {
        events.extend(decoder.push(chunk).unwrap());
    }
    let end = decoder.finish();
    (events, end)
}

/// Assembles a whole stream fixture, checking that every piece size gives the same.
fn stream_reply(name: &str) -> Reply {
    let bytes = fixture(name);
    let mut replies = Vec::new();
    for piece in [1, 3, 17, 64, bytes.len()] {
        let (mut events, end) = decode_stream(&bytes, piece);
        events.extend(end.unwrap());
        replies.push(assemble(&events).unwrap());
    }
    for r in &replies[1..] {
        assert_eq!(r, &replies[0]);
    }
    replies.remove(0)
}

// ---------------------------------------------------------------------------------------
// Replies
// ---------------------------------------------------------------------------------------

#[test]
fn documented_text_reply() {
    let reply = decode("text_reply.json");
    assert_eq!(
        reply.content,
        vec![Part::text(
            "AI learns patterns from data and uses them to make predictions on new inputs."
        )]
    );
    assert_eq!(reply.finish, FinishReason::Stop);
    assert_eq!(reply.finish_raw.as_deref(), Some("STOP"));
    assert_eq!(
        reply.usage,
        Some(Usage {
            input: 8,
            output: 16,
            ..Usage::default()
        })
    );
    assert_eq!(reply.model.as_deref(), Some("gemini-2.0-flash"));
    assert_eq!(reply.id.as_deref(), Some("gP9XaJ6oLMKCxs0P2Zi0sA4"));
}

#[test]
fn function_calls_get_stable_ids_and_keep_their_signature() {
    let reply = decode("function_call_reply.json");
    let paris = r#"{"location":"Paris"}"#;
    let london = r#"{"location":"London"}"#;
    assert_eq!(
        reply.content,
        vec![
            Part::ToolCall(ToolCall {
                id: synthetic_call_id(0, 0, "get_current_temperature", paris),
                name: "get_current_temperature".into(),
                arguments: paris.into(),
                kind: ToolKind::Function,
                namespace: None,
                state: gemini("CiQB0e2Kb7ZJkq1vQ0a2yX9xH0xv2bY3c1QWmPq8Vt4rK5Ld8aMSiQEB0e2Kb2mX"),
            }),
            Part::ToolCall(ToolCall {
                id: synthetic_call_id(0, 1, "get_current_temperature", london),
                name: "get_current_temperature".into(),
                arguments: london.into(),
                kind: ToolKind::Function,
                namespace: None,
                state: None,
            }),
        ]
    );
    assert_eq!(reply.finish, FinishReason::ToolCalls);
    assert_eq!(reply.finish_raw.as_deref(), Some("STOP"));
    // Thoughts count as output: 30 candidates + 96 thoughts.
    assert_eq!(
        reply.usage,
        Some(Usage {
            input: 72,
            output: 126,
            reasoning: 96,
            ..Usage::default()
        })
    );
    // Identical replies give identical ids.
    assert_eq!(decode("function_call_reply.json").content, reply.content);
}

#[test]
fn thinking_reply_with_a_signed_answer() {
    let reply = decode("thinking_reply.json");
    assert_eq!(reply.content.len(), 2);
    assert_eq!(
        reply.content[0],
        Part::Thinking(Thinking {
            text:
                "**Counting the primes**\n\nI need the primes below 20: 2, 3, 5, 7, 11, 13, 17, 19."
                    .into(),
            ..Thinking::default()
        })
    );
    assert_eq!(
        reply.content[1],
        Part::Text {
            text: "There are 8 prime numbers below 20: 2, 3, 5, 7, 11, 13, 17 and 19.".into(),
            state: gemini("EqYCCqMCAdHtim9ITWmw0dOe3sYzZmZ8Qv2QkF1i3yYg6H2oJtP5cA8xN"),
        }
    );
    assert_eq!(
        reply.usage,
        Some(Usage {
            input: 12,
            output: 36 + 265,
            reasoning: 265,
            ..Usage::default()
        })
    );
}

#[test]
fn cached_content_tokens_are_inside_input() {
    let usage = decode("cached_reply.json").usage.unwrap();
    assert_eq!(usage.input, 696_224);
    assert_eq!(usage.cached_input, 696_190);
    assert_eq!(usage.uncached_input(), 34);
    assert_eq!(usage.output, 14);
}

#[test]
fn every_finish_reason() {
    let cases = [
        ("max_tokens_reply.json", FinishReason::Length, "MAX_TOKENS"),
        (
            "max_tokens_thinking_only.json",
            FinishReason::Length,
            "MAX_TOKENS",
        ),
        ("safety_reply.json", FinishReason::ContentFilter, "SAFETY"),
        (
            "prompt_blocked.json",
            FinishReason::ContentFilter,
            "PROHIBITED_CONTENT",
        ),
        (
            "malformed_function_call.json",
            FinishReason::Other,
            "MALFORMED_FUNCTION_CALL",
        ),
    ];
    for (name, reason, raw) in cases {
        let reply = decode(name);
        assert_eq!(reply.finish, reason, "{name}");
        assert_eq!(reply.finish_raw.as_deref(), Some(raw), "{name}");
    }
    assert_eq!(
        decode("max_tokens_reply.json").text(),
        "Once upon a time, in a land far"
    );
    let thinking_only = decode("max_tokens_thinking_only.json");
    assert!(thinking_only.content.is_empty());
    assert_eq!(thinking_only.usage.unwrap().output, 99);
    assert_eq!(thinking_only.usage.unwrap().reasoning, 99);
    assert!(decode("safety_reply.json").content.is_empty());
    assert_eq!(decode("prompt_blocked.json").usage.unwrap().input, 14);
}

#[test]
fn blocked_and_filtered_replies_encode_back() {
    for name in [
        "prompt_blocked.json",
        "safety_reply.json",
        "malformed_function_call.json",
    ] {
        let reply = decode(name);
        let body = GeminiCodec.encode_reply(&reply, &ServerContext::default());
        let back = GeminiCodec.decode_reply(&body).unwrap();
        assert_eq!(back.without_raw(), reply.without_raw(), "{name}");
    }
    // PROHIBITED_CONTENT is also a candidate finish reason; a block reason that is not
    // (OTHER) can only be written as promptFeedback.
    let blocked =
        br#"{"promptFeedback":{"blockReason":"OTHER"},"usageMetadata":{"promptTokenCount":3}}"#;
    let reply = GeminiCodec.decode_reply(blocked).unwrap();
    assert_eq!(reply.finish, FinishReason::ContentFilter);
    let body = GeminiCodec.encode_reply(&reply, &ServerContext::default());
    let value: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(value["promptFeedback"]["blockReason"], "OTHER");
    assert!(value.get("candidates").is_none());
    assert_eq!(
        GeminiCodec.decode_reply(&body).unwrap().without_raw(),
        reply.without_raw()
    );
}

#[test]
fn error_bodies_are_provider_errors() {
    let err = GeminiCodec
        .decode_reply(&fixture("error_429.json"))
        .unwrap_err();
    let DecodeError::Provider(e) = err else {
        panic!("{err:?}")
    };
    assert_eq!(e.kind.as_deref(), Some("RESOURCE_EXHAUSTED"));
    assert_eq!(e.status, Some(429));
    assert!(
        e.message.starts_with("You exceeded your current quota"),
        "{}",
        e.message
    );

    let err = GeminiCodec
        .decode_reply(&fixture("error_400_context.json"))
        .unwrap_err();
    assert_eq!(
        err,
        DecodeError::Provider(StreamError {
            kind: Some("INVALID_ARGUMENT".into()),
            code: None,
            message: "The input token count (1198372) exceeds the maximum number of tokens \
                      allowed (1048576)."
                .into(),
            status: Some(400),
        })
    );

    // `streamGenerateContent` without `alt=sse` answers errors as an array.
    let body =
        br#"[{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]"#;
    let Err(DecodeError::Provider(e)) = GeminiCodec.decode_reply(body) else {
        panic!("array error body")
    };
    assert_eq!(e.kind.as_deref(), Some("UNAVAILABLE"));
}

#[test]
fn error_objects_encode_as_gemini_writes_them() {
    let mut enc = GeminiCodec.stream_encoder(&ServerContext::default());
    let mut out = Vec::new();
    enc.event(
        &Event::Error(StreamError {
            kind: Some("RESOURCE_EXHAUSTED".into()),
            code: None,
            message: "Resource has been exhausted (e.g. check quota).".into(),
            status: Some(429),
        }),
        &mut out,
    );
    let text = String::from_utf8(out).unwrap();
    let data: Value = serde_json::from_str(text.trim().strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(
        data,
        json!({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                         "status": "RESOURCE_EXHAUSTED"}})
    );
}

#[test]
fn malformed_bodies_say_what_and_where() {
    let cases: [(&[u8], &str); 7] = [
        (b"null", "`null`"),
        (b"<html>502 Bad Gateway</html>", "not JSON"),
        (b"[1,2]", "array"),
        (br#"{"candidates":5}"#, "`candidates`"),
        (
            br#"{"candidates":[{"content":{"parts":[{"text":5}]}}]}"#,
            "candidates[0].content.parts[0]",
        ),
        (
            br#"{"candidates":[{"content":{"parts":[{"functionCall":{"args":{}}}]}}]}"#,
            "`name`",
        ),
        (br#"{"usageMetadata":{}}"#, "no candidates"),
    ];
    for (body, needle) in cases {
        match GeminiCodec.decode_reply(body) {
            Err(DecodeError::Malformed(m)) => assert!(m.contains(needle), "{m}"),
            other => panic!("{}: {other:?}", String::from_utf8_lossy(body)),
        }
    }
}

#[test]
fn encode_reply_writes_the_documented_shape() {
    let reply = decode("function_call_reply.json");
    let body: Value =
        serde_json::from_slice(&GeminiCodec.encode_reply(&reply, &ServerContext::default()))
            .unwrap();
    let original: Value = serde_json::from_slice(&fixture("function_call_reply.json")).unwrap();
    assert_eq!(
        body["candidates"][0]["content"],
        original["candidates"][0]["content"]
    );
    assert_eq!(body["candidates"][0]["finishReason"], "STOP");
    assert_eq!(body["candidates"][0]["index"], 0);
    assert_eq!(
        body["usageMetadata"],
        json!({"promptTokenCount": 72, "candidatesTokenCount": 30, "totalTokenCount": 198,
               "thoughtsTokenCount": 96})
    );
    assert_eq!(body["modelVersion"], "gemini-3-pro-preview");
    assert_eq!(body["responseId"], "3ZdXaNf4Cp-pxs0PqI_A-QE");
}

// ---------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------

#[test]
fn documented_text_stream_with_cumulative_usage() {
    let bytes = fixture("stream_text.sse");
    let (events, end) = decode_stream(&bytes, 5);
    assert!(end.unwrap().is_empty());
    let usages: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            Event::Usage(u) => Some(u.output),
            _ => None,
        })
        .collect();
    assert_eq!(usages, vec![0, 13, 22], "usage emitted as it grows");
    assert!(events.iter().all(|e| match e {
        Event::TextDelta { part, .. } => *part == 0,
        _ => true,
    }));
    let reply = stream_reply("stream_text.sse");
    assert_eq!(
        reply.text(),
        "The quick brown fox jumps over the lazy dog. It is a pangram: it uses every letter \
         of the alphabet.\n"
    );
    assert_eq!(reply.content.len(), 1);
    assert_eq!(reply.finish, FinishReason::Stop);
    assert_eq!(
        reply.usage,
        Some(Usage {
            input: 9,
            output: 22,
            ..Usage::default()
        })
    );
    assert_eq!(reply.id.as_deref(), Some("rqZYaP2xN-mIxs0P7_3B2Qg"));
    assert_eq!(reply.model.as_deref(), Some("gemini-2.0-flash"));
}

#[test]
fn thinking_then_text_then_a_signed_call_stream_crlf() {
    let reply = stream_reply("stream_thinking_tool.sse");
    let args = r#"{"city":"Paris","unit":"celsius"}"#;
    assert_eq!(
        reply.content,
        vec![
            Part::Thinking(Thinking {
                text: "**Weighing the request**\n\nThe user wants the weather in Paris; I will \
                       call the tool."
                    .into(),
                ..Thinking::default()
            }),
            Part::text("Let me check."),
            Part::ToolCall(ToolCall {
                id: synthetic_call_id(0, 0, "get_weather", args),
                name: "get_weather".into(),
                arguments: args.into(),
                kind: ToolKind::Function,
                namespace: None,
                state: gemini("CvMBAdHtim8xQ2lqK0k9d3dC1p8wWbq3Yx0aXoQ8m1T9n2Vr"),
            }),
        ]
    );
    assert_eq!(reply.finish, FinishReason::ToolCalls);
    assert_eq!(
        reply.usage,
        Some(Usage {
            input: 40,
            output: 145,
            reasoning: 120,
            ..Usage::default()
        })
    );
}

#[test]
fn stream_finish_reasons() {
    let r = stream_reply("stream_max_tokens.sse");
    assert_eq!(
        (r.finish, r.finish_raw.as_deref()),
        (FinishReason::Length, Some("MAX_TOKENS"))
    );
    assert_eq!(r.text(), "Once upon a time, in a land far");
    let r = stream_reply("stream_safety.sse");
    assert_eq!(
        (r.finish, r.finish_raw.as_deref()),
        (FinishReason::ContentFilter, Some("SAFETY"))
    );
    assert_eq!(r.text(), "Sure, here is how");
}

#[test]
fn a_mid_stream_error_is_an_error_event() {
    let (events, end) = decode_stream(&fixture("stream_error.sse"), 11);
    assert!(end.unwrap().is_empty(), "an error ends the stream");
    let error = events.iter().find_map(|e| match e {
        Event::Error(e) => Some(e.clone()),
        _ => None,
    });
    assert_eq!(
        error,
        Some(StreamError {
            kind: Some("UNAVAILABLE".into()),
            code: None,
            message: "The model is overloaded. Please try again later.".into(),
            status: Some(503),
        })
    );
    assert!(assemble(&events).unwrap_err().contains("overloaded"));
}

#[test]
fn a_cut_stream_is_detected() {
    let (events, end) = decode_stream(&fixture("stream_cut.sse"), 9);
    assert!(!events.is_empty());
    let err = end.unwrap_err();
    assert!(err.to_string().contains("finishReason"), "{err}");
    // An empty body is cut too.
    assert!(decode_stream(b"", 1).1.is_err());
}

#[test]
fn the_stream_encoder_writes_full_chunks_and_no_done() {
    let reply = decode("thinking_reply.json");
    let context = ServerContext::default();
    let mut enc = GeminiCodec.stream_encoder(&context);
    let mut out = Vec::new();
    for event in reply_events(&reply, 10) {
        enc.event(&event, &mut out);
    }
    enc.finish(&mut out);
    let text = String::from_utf8(out.clone()).unwrap();
    assert!(!text.contains("[DONE]"));
    let chunks: Vec<Value> = text
        .split("\n\n")
        .filter(|c| !c.is_empty())
        .map(|c| serde_json::from_str(c.strip_prefix("data: ").unwrap()).unwrap())
        .collect();
    for chunk in &chunks {
        assert_eq!(chunk["modelVersion"], "gemini-2.5-pro");
        assert_eq!(chunk["responseId"], "Ym9YaIuPGNiBxs0PyfWQuAc");
        assert_eq!(chunk["candidates"][0]["content"]["role"], "model");
        assert_eq!(chunk["candidates"][0]["index"], 0);
    }
    let (last, rest) = chunks.split_last().unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(last["usageMetadata"]["thoughtsTokenCount"], 265);
    assert_eq!(
        last["candidates"][0]["content"]["parts"][0]["thoughtSignature"],
        "EqYCCqMCAdHtim9ITWmw0dOe3sYzZmZ8Qv2QkF1i3yYg6H2oJtP5cA8xN"
    );
    assert!(rest
        .iter()
        .all(|c| c.get("usageMetadata").is_none()
            && c["candidates"][0].get("finishReason").is_none()));
    assert!(rest[0]["candidates"][0]["content"]["parts"][0]["thought"] == true);

    let (mut events, end) = decode_stream(&out, 7);
    events.extend(end.unwrap());
    assert_eq!(assemble(&events).unwrap(), reply.without_raw());
}

// ---------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------

#[test]
fn a_multi_turn_request_decodes_and_re_encodes_with_every_field_kept() {
    let body = fixture("request_multi_turn.json");
    let decoded = GeminiCodec.decode_request(&body).unwrap();
    assert_eq!(decoded.model, None, "the model is in the URL");
    assert!(!decoded.stream, "the route tells streaming");
    let request = &decoded.request;

    let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User
        ]
    );
    let model = &request.messages[2].content;
    assert!(
        matches!(&model[0], Part::Thinking(t) if t.state == gemini("EpcDCpQDAdHtim9nE4m0vTn1Qh0h3F2c0Vq3oZ4j6k2"))
    );
    let (Part::ToolCall(paris), Part::ToolCall(london)) = (&model[1], &model[2]) else {
        panic!("{model:?}")
    };
    // The turn is the content's index in `contents` (the system instruction is not one).
    assert_eq!(
        paris.id,
        synthetic_call_id(1, 0, "get_current_temperature", r#"{"location":"Paris"}"#)
    );
    assert_ne!(paris.id, london.id);
    assert!(paris.state.is_some() && london.state.is_none());
    let results = &request.messages[3].content;
    assert_eq!(
        results[0],
        Part::ToolResult(ToolResult {
            call_id: paris.id.clone(),
            name: Some("get_current_temperature".into()),
            content: vec![Part::text(r#"{"temperature":18,"unit":"celsius"}"#)],
            is_error: false,
            kind: ToolKind::Function,
        })
    );
    assert!(
        matches!(&results[1], Part::ToolResult(r) if r.call_id == london.id
        && r.text() == "14 degrees and raining")
    );
    assert!(matches!(
        &request.messages[4].content[0],
        Part::Text { state: Some(_), .. }
    ));
    assert!(
        matches!(&request.messages[5].content[1], Part::Image(Image::Base64 { media_type, .. }) if media_type == "image/jpeg")
    );
    assert_eq!(request.tool_choice, Some(ToolChoice::Auto));
    assert_eq!(request.max_tokens, Some(8192));
    assert_eq!(request.temperature, Some(0.7));
    assert_eq!(request.stop, vec!["<END>".to_string()]);
    assert_eq!(
        request.reasoning,
        Some(Reasoning {
            effort: Some("high".into()),
            ..Reasoning::default()
        })
    );
    assert_eq!(request.tools.len(), 1);
    assert_eq!(request.tools[0].parameters["additionalProperties"], false);
    assert_eq!(request.passthrough.dialect, Some(Dialect::Gemini));
    let kept: Vec<&str> = request
        .passthrough
        .fields
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        kept,
        vec![
            "safetySettings",
            "systemInstruction",
            "tools",
            "generationConfig"
        ]
    );

    let encoded = GeminiCodec
        .encode_request(
            request,
            &EncodeOptions {
                model: "gemini-3-pro-preview",
                stream: true,
            },
        )
        .unwrap();
    let original: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(Value::Object(encoded), original);
}

#[test]
fn an_openapi_schema_request_from_a_cli_agent() {
    let body = fixture("request_openapi_schema.json");
    let request = GeminiCodec.decode_request(&body).unwrap().request;
    assert_eq!(
        request.messages[0],
        Message {
            role: Role::System,
            content: vec![
                Part::text("You are an interactive CLI agent."),
                Part::text("Be careful with the user's files."),
            ],
        }
    );
    assert_eq!(
        request.tools[0].parameters,
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "The absolute path to the directory to list"},
            "ignore": {"type": "array", "items": {"type": "string"}}}, "required": ["path"]})
    );
    assert_eq!(
        request.tool_choice,
        Some(ToolChoice::Tool("list_directory".into()))
    );
    assert_eq!(request.reasoning, Some(Reasoning::default()));
    assert_eq!(
        request.response_format,
        Some(ResponseFormat::JsonSchema {
            name: RESPONSE_SCHEMA_NAME.into(),
            schema: json!({"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}}}}),
            strict: None,
        })
    );
    let encoded = GeminiCodec
        .encode_request(
            &request,
            &EncodeOptions {
                model: "gemini-2.5-pro",
                stream: false,
            },
        )
        .unwrap();
    // A dynamic budget (-1) rides in passthrough; thoughts stay requested.
    assert_eq!(
        encoded["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingBudget": -1})
    );
    assert_eq!(
        encoded["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["list_directory"]}})
    );
    assert!(encoded["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"].is_object());
}

#[test]
fn a_request_that_did_not_ask_for_thoughts_still_does_not() {
    let body = br#"{"contents":[{"parts":[{"text":"hi"}]}],
                    "generationConfig":{"thinkingConfig":{"thinkingBudget":1024}}}"#;
    let request = GeminiCodec.decode_request(body).unwrap().request;
    assert_eq!(
        request.reasoning.as_ref().unwrap().budget_tokens,
        Some(1024)
    );
    assert_eq!(
        request.messages[0].role,
        Role::User,
        "a content without role is the user's"
    );
    let encoded = GeminiCodec
        .encode_request(
            &request,
            &EncodeOptions {
                model: "m",
                stream: false,
            },
        )
        .unwrap();
    assert_eq!(
        encoded["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 1024, "includeThoughts": false})
    );
}

#[test]
fn an_effort_is_a_level_for_gemini_3_and_a_budget_for_gemini_2() {
    let with_effort = |effort: &str| Request {
        reasoning: Some(Reasoning {
            effort: Some(effort.into()),
            ..Reasoning::default()
        }),
        ..Request::user("think")
    };
    let thinking = |model: &str, effort: &str| {
        let body = GeminiCodec
            .encode_request(
                &with_effort(effort),
                &EncodeOptions {
                    model,
                    stream: false,
                },
            )
            .unwrap();
        body["generationConfig"]["thinkingConfig"].clone()
    };
    assert_eq!(
        thinking("gemini-3-pro-preview", "low"),
        json!({"thinkingLevel": "low", "includeThoughts": true})
    );
    // Gemini 2.x refuses `thinkingLevel`: the budgets Google's OpenAI endpoint uses.
    for (effort, budget) in [
        ("none", 0),
        ("minimal", 512),
        ("low", 1024),
        ("medium", 8192),
        ("high", 24576),
        ("xhigh", 24576),
        ("whatever-comes-next", -1),
    ] {
        for model in [
            "gemini-2.5-flash",
            "models/gemini-2.5-pro",
            "publishers/google/models/gemini-2.0-flash",
        ] {
            assert_eq!(
                thinking(model, effort),
                json!({"thinkingBudget": budget, "includeThoughts": true}),
                "{model} {effort}"
            );
        }
    }
}

#[test]
fn a_canonical_request_from_another_dialect_encodes() {
    let call = ToolCall {
        id: "toolu_01".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"a.txt"}"#.into(),
        kind: ToolKind::Function,
        namespace: None,
        state: None,
    };
    let request = Request {
        messages: vec![
            Message::text(Role::System, "Be brief."),
            Message::text(Role::Developer, "Answer in English."),
            Message {
                role: Role::User,
                content: vec![
                    Part::text("Read a.txt; see the image."),
                    Part::Image(Image::Url {
                        url: "https://example.com/cat.PNG?size=2".into(),
                    }),
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    Part::Thinking(Thinking {
                        text: "Anthropic reasoning".into(),
                        state: Some(Opaque::new(Dialect::Messages, "sig")),
                        ..Thinking::default()
                    }),
                    Part::ToolCall(call.clone()),
                    Part::ToolCall(ToolCall {
                        id: "toolu_02".into(),
                        name: "apply_patch".into(),
                        arguments: "*** Begin Patch".into(),
                        kind: ToolKind::Custom,
                        ..call.clone()
                    }),
                ],
            },
            Message {
                role: Role::Tool,
                content: vec![Part::ToolResult(ToolResult {
                    call_id: "toolu_01".into(),
                    name: None,
                    content: vec![Part::text("no such file")],
                    is_error: true,
                    kind: ToolKind::Function,
                })],
            },
            Message {
                role: Role::Tool,
                content: vec![Part::ToolResult(ToolResult {
                    call_id: "toolu_02".into(),
                    name: None,
                    content: vec![Part::text("Done!")],
                    is_error: false,
                    kind: ToolKind::Custom,
                })],
            },
        ],
        tools: vec![
            Tool {
                name: "read_file".into(),
                description: Some("Reads a file.".into()),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
                kind: ToolKind::Function,
                strict: Some(true),
                namespace: None,
            },
            Tool {
                name: "apply_patch".into(),
                description: None,
                parameters: Value::Null,
                kind: ToolKind::Custom,
                strict: None,
                namespace: None,
            },
        ],
        tool_choice: Some(ToolChoice::Required),
        parallel_tool_calls: Some(false),
        max_tokens: Some(1000),
        reasoning: Some(Reasoning {
            effort: Some("xhigh".into()),
            budget_tokens: None,
            summary: Some("auto".into()),
        }),
        response_format: Some(ResponseFormat::JsonObject),
        ..Request::default()
    };
    let body = GeminiCodec
        .encode_request(
            &request,
            &EncodeOptions {
                model: "gemini-3-pro-preview",
                stream: true,
            },
        )
        .unwrap();
    assert_eq!(
        Value::Object(body),
        json!({
            "contents": [
                {"role": "user", "parts": [
                    {"text": "Read a.txt; see the image."},
                    {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/cat.PNG?size=2"}}]},
                {"role": "model", "parts": [
                    {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}},
                    {"functionCall": {"name": "apply_patch", "args": {"input": "*** Begin Patch"}}}]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"error": "no such file"}}},
                    {"functionResponse": {"name": "apply_patch", "response": {"content": "Done!"}}}]}
            ],
            "systemInstruction": {"parts": [{"text": "Be brief."}, {"text": "Answer in English."}]},
            "tools": [{"functionDeclarations": [
                {"name": "read_file", "description": "Reads a file.",
                 "parametersJsonSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
                {"name": "apply_patch", "parametersJsonSchema": {"type": "object",
                    "properties": {"input": {"type": "string"}}, "required": ["input"]}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            "generationConfig": {
                "maxOutputTokens": 1000,
                "responseMimeType": "application/json",
                "thinkingConfig": {"thinkingLevel": "high", "includeThoughts": true}
            }
        })
    );
}

#[test]
fn requests_gemini_cannot_express_are_refused_with_a_reason() {
    let mut request = Request::user("hi");
    request.messages.push(Message {
        role: Role::Assistant,
        content: vec![Part::ToolCall(ToolCall {
            id: "c1".into(),
            name: "f".into(),
            arguments: "[1,2]".into(),
            kind: ToolKind::Function,
            namespace: None,
            state: None,
        })],
    });
    let err = GeminiCodec
        .encode_request(
            &request,
            &EncodeOptions {
                model: "m",
                stream: false,
            },
        )
        .unwrap_err();
    assert!(err.0.contains("`f`") && err.0.contains("array"), "{err}");

    let mut request = Request::user("hi");
    request.messages.push(Message {
        role: Role::Tool,
        content: vec![Part::ToolResult(ToolResult {
            call_id: "nowhere".into(),
            name: None,
            content: vec![],
            is_error: false,
            kind: ToolKind::Function,
        })],
    });
    let err = GeminiCodec
        .encode_request(
            &request,
            &EncodeOptions {
                model: "m",
                stream: false,
            },
        )
        .unwrap_err();
    assert!(err.0.contains("nowhere"), "{err}");
}

#[test]
fn malformed_requests_say_what_and_where() {
    let cases: [(&[u8], &str); 4] = [
        (b"null", "`null`"),
        (br#"{"generationConfig":{}}"#, "`contents`"),
        (
            br#"{"contents":[{"role":"system","parts":[]}]}"#,
            "role `system`",
        ),
        (
            br#"{"contents":[{"parts":[{"inlineData":{"data":"x"}}]}]}"#,
            "contents[0].parts[0].inlineData",
        ),
    ];
    for (body, needle) in cases {
        match GeminiCodec.decode_request(body) {
            Err(DecodeError::Malformed(m)) => assert!(m.contains(needle), "{m}"),
            other => panic!("{}: {other:?}", String::from_utf8_lossy(body)),
        }
    }
}

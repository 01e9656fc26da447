//! Benches of the responses codec on a ~10 KB request (encode, decode), a ~10 KB reply
//! (decode, encode) and a ~10 KB stream (decode).

use criterion::{black_box, Criterion};
use serde_json::json;
use switchyard_wire::{
    codec, reply_events, ByteStreamDecoder, Dialect, EncodeOptions, FinishReason, Message, Opaque,
    Part, Reply, Request, Role, ServerContext, Thinking, Tool, ToolCall, ToolKind, ToolResult,
    Usage,
};

const PARAGRAPH: &str = "The quick brown fox jumps over the lazy dog while the codec turns \
    canonical parts into Responses items and back again, one field at a time. ";

fn request() -> Request {
    let mut messages = vec![
        Message::text(Role::System, PARAGRAPH.repeat(4)),
        Message::text(Role::Developer, PARAGRAPH.repeat(2)),
    ];
    for i in 0..8 {
        messages.push(Message::text(Role::User, PARAGRAPH.repeat(2)));
        messages.push(Message {
            role: Role::Assistant,
            content: vec![
                Part::Thinking(Thinking {
                    text: PARAGRAPH.into(),
                    state: Some(Opaque::new(Dialect::Responses, "gAAAAAB".repeat(20))),
                    redacted: false,
                    id: Some(format!("rs_{i}")),
                }),
                Part::ToolCall(ToolCall {
                    id: format!("call_{i}"),
                    name: "exec_command".into(),
                    arguments: r#"{"cmd":"cargo test --workspace","workdir":"/home/dev"}"#.into(),
                    kind: ToolKind::Function,
                    namespace: None,
                    state: None,
                }),
            ],
        });
        messages.push(Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(ToolResult {
                call_id: format!("call_{i}"),
                name: None,
                content: vec![Part::text(PARAGRAPH)],
                is_error: false,
                kind: ToolKind::Function,
            })],
        });
    }
    let tools = (0..6)
        .map(|i| Tool {
            name: format!("tool_{i}"),
            description: Some("Does a thing with a path.".into()),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                "required": ["path"], "additionalProperties": false}),
            kind: ToolKind::Function,
            strict: Some(false),
            namespace: (i >= 3).then(|| "mcp__fs__".to_string()),
        })
        .collect();
    Request {
        messages,
        tools,
        ..Request::default()
    }
}

fn reply() -> Reply {
    Reply {
        content: vec![
            Part::Thinking(Thinking {
                text: PARAGRAPH.repeat(20),
                state: Some(Opaque::new(Dialect::Responses, "gAAAAAB".repeat(100))),
                redacted: false,
                id: Some("rs_1".into()),
            }),
            Part::text(PARAGRAPH.repeat(40)),
            Part::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "apply_patch".into(),
                arguments: PARAGRAPH.repeat(10),
                kind: ToolKind::Custom,
                namespace: None,
                state: None,
            }),
        ],
        finish: FinishReason::ToolCalls,
        finish_raw: Some("completed".into()),
        usage: Some(Usage {
            input: 9000,
            cached_input: 8000,
            cache_write: 0,
            output: 900,
            reasoning: 300,
        }),
        model: Some("gpt-5.4".into()),
        id: Some("resp_bench".into()),
        raw: Default::default(),
    }
}

pub(crate) fn bench(c: &mut Criterion) {
    let responses = codec(Dialect::Responses);
    let options = EncodeOptions {
        model: "gpt-5.4",
        stream: true,
    };
    let context = ServerContext {
        created: 1,
        fallback_id: "resp_bench".into(),
    };

    let request = request();
    let request_body =
        serde_json::to_vec(&responses.encode_request(&request, &options).unwrap()).unwrap();
    c.bench_function("responses/encode_request", |b| {
        b.iter(|| {
            let body = responses
                .encode_request(black_box(&request), &options)
                .unwrap();
            serde_json::to_vec(&body).unwrap()
        })
    });
    c.bench_function("responses/decode_request", |b| {
        b.iter(|| responses.decode_request(black_box(&request_body)).unwrap())
    });

    let reply = reply();
    let reply_body = responses.encode_reply(&reply, &context);
    c.bench_function("responses/decode_reply", |b| {
        b.iter(|| responses.decode_reply(black_box(&reply_body)).unwrap())
    });
    c.bench_function("responses/encode_reply", |b| {
        b.iter(|| responses.encode_reply(black_box(&reply), &context))
    });

    // ~10 KB of stream: text in deltas of 40 characters, like a real one.
    let stream_reply = Reply {
        content: vec![Part::text(PARAGRAPH.repeat(10))],
        finish: FinishReason::Stop,
        finish_raw: Some("completed".into()),
        ..reply.clone()
    };
    let mut encoder = responses.stream_encoder(&context);
    let mut stream = Vec::new();
    for event in reply_events(&stream_reply, 40) {
        encoder.event(&event, &mut stream);
    }
    encoder.finish(&mut stream);
    c.bench_function("responses/decode_stream", |b| {
        b.iter(|| {
            let mut decoder = ByteStreamDecoder::new(responses);
            let mut n = 0;
            for chunk in black_box(&stream).chunks(1400) {
                n += decoder.push(chunk).unwrap().len();
            }
            n + decoder.finish().unwrap().len()
        })
    });
}

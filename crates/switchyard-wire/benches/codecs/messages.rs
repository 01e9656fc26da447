//! Benches of the messages codec: a ~10 KB request (encode, decode), a ~10 KB reply
//! (decode, encode) and a ~10 KB stream (decode).

use criterion::{black_box, Criterion};
use serde_json::json;
use switchyard_wire::{
    codec, reply_events, ByteStreamDecoder, Dialect, EncodeOptions, FinishReason, Message, Opaque,
    Part, Reply, Request, Role, ServerContext, Thinking, Tool, ToolCall, ToolKind, ToolResult,
    Usage,
};

const PROSE: &str = "The quick brown fox jumps over the lazy dog, and then considers \
    what it has done in the light of everything it knows about dogs. ";

fn prose(bytes: usize) -> String {
    PROSE.repeat(bytes / PROSE.len() + 1)[..bytes].to_string()
}

fn request() -> Request {
    let mut messages = vec![Message::text(Role::System, prose(1500))];
    for turn in 0..6 {
        messages.push(Message::text(Role::User, prose(400)));
        messages.push(Message {
            role: Role::Assistant,
            content: vec![
                Part::text(prose(200)),
                Part::ToolCall(ToolCall {
                    id: format!("toolu_{turn:02}"),
                    name: "Bash".into(),
                    arguments: json!({"command": "ls -la", "description": "List files"})
                        .to_string(),
                    kind: ToolKind::Function,
                    namespace: None,
                    state: None,
                }),
            ],
        });
        messages.push(Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(ToolResult {
                call_id: format!("toolu_{turn:02}"),
                name: None,
                content: vec![Part::text(prose(400))],
                is_error: false,
                kind: ToolKind::Function,
            })],
        });
    }
    let tools = (0..4)
        .map(|i| Tool {
            name: format!("tool_{i}"),
            description: Some(prose(150)),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                "required": ["path"]}),
            kind: ToolKind::Function,
            strict: None,
            namespace: None,
        })
        .collect();
    Request {
        messages,
        tools,
        max_tokens: Some(8192),
        ..Request::default()
    }
}

fn reply() -> Reply {
    Reply {
        content: vec![
            Part::Thinking(Thinking {
                text: prose(3000),
                state: Some(Opaque::new(
                    Dialect::Messages,
                    "EqQBCgIYAhIM1gbcDa9GJwZA2b3h",
                )),
                redacted: false,
                id: None,
            }),
            Part::text(prose(6000)),
            Part::ToolCall(ToolCall {
                id: "toolu_01".into(),
                name: "Write".into(),
                arguments: json!({"file_path": "/tmp/x", "content": prose(800)}).to_string(),
                kind: ToolKind::Function,
                namespace: None,
                state: None,
            }),
        ],
        finish: FinishReason::ToolCalls,
        finish_raw: Some("tool_use".into()),
        usage: Some(Usage {
            input: 12000,
            cached_input: 10000,
            cache_write: 500,
            output: 2500,
            reasoning: 0,
        }),
        model: Some("claude-opus-4-6".into()),
        id: Some("msg_bench".into()),
        raw: Default::default(),
    }
}

pub(crate) fn bench(c: &mut Criterion) {
    let messages = codec(Dialect::Messages);
    let options = EncodeOptions {
        model: "claude-opus-4-6",
        stream: true,
    };
    let request = request();
    let request_body =
        serde_json::to_vec(&messages.encode_request(&request, &options).unwrap()).unwrap();
    let reply = reply();
    let context = ServerContext::default();
    let reply_body = messages.encode_reply(&reply, &context);
    // A ~10 KB stream: thinking, text and a tool call in deltas of 40 characters.
    let streamed = Reply {
        content: vec![
            Part::Thinking(Thinking {
                text: prose(800),
                state: Some(Opaque::new(
                    Dialect::Messages,
                    "EqQBCgIYAhIM1gbcDa9GJwZA2b3h",
                )),
                redacted: false,
                id: None,
            }),
            Part::text(prose(1800)),
            Part::ToolCall(ToolCall {
                id: "toolu_01".into(),
                name: "Write".into(),
                arguments: json!({"file_path": "/tmp/x", "content": prose(300)}).to_string(),
                kind: ToolKind::Function,
                namespace: None,
                state: None,
            }),
        ],
        ..reply.clone()
    };
    let mut stream = Vec::new();
    let mut encoder = messages.stream_encoder(&context);
    for event in reply_events(&streamed, 40) {
        encoder.event(&event, &mut stream);
    }
    encoder.finish(&mut stream);

    let mut group = c.benchmark_group("messages");
    group.bench_function(format!("encode_request_{}b", request_body.len()), |b| {
        b.iter(|| {
            let body = messages
                .encode_request(black_box(&request), &options)
                .unwrap();
            black_box(serde_json::to_vec(&body).unwrap())
        })
    });
    group.bench_function(format!("decode_request_{}b", request_body.len()), |b| {
        b.iter(|| black_box(messages.decode_request(black_box(&request_body)).unwrap()))
    });
    group.bench_function(format!("decode_reply_{}b", reply_body.len()), |b| {
        b.iter(|| black_box(messages.decode_reply(black_box(&reply_body)).unwrap()))
    });
    group.bench_function(format!("encode_reply_{}b", reply_body.len()), |b| {
        b.iter(|| black_box(messages.encode_reply(black_box(&reply), &context)))
    });
    group.bench_function(format!("decode_stream_{}b", stream.len()), |b| {
        b.iter(|| {
            let mut decoder = ByteStreamDecoder::new(messages);
            let mut n = 0;
            for chunk in black_box(&stream).chunks(1400) {
                n += decoder.push(chunk).unwrap().len();
            }
            n += decoder.finish().unwrap().len();
            black_box(n)
        })
    });
    group.finish();
}

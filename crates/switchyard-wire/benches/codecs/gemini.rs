//! Benches of the gemini codec on a ~10 KB request, reply and stream.

use criterion::{black_box, Criterion, Throughput};
use serde_json::json;
use switchyard_wire::{
    codec, reply_events, ByteStreamDecoder, Dialect, EncodeOptions, FinishReason, Message, Opaque,
    Part, Reply, Request, Role, ServerContext, Thinking, Tool, ToolCall, ToolKind, ToolResult,
    Usage,
};

const PARAGRAPH: &str = "The gateway translates between wire dialects, meters every call and \
records it in full so that a whole run can be replayed byte for byte without calling anyone. ";

const SIGNATURE: &str = "CiQB0e2Kb7ZJkq1vQ0a2yX9xH0xv2bY3c1QWmPq8Vt4rK5Ld8aMSiQEB0e2Kb2mX";

/// About 10 KB of conversation: a system instruction, tools, turns with signed function
/// calls and their responses.
fn request() -> Request {
    let mut messages = vec![Message::text(Role::System, PARAGRAPH.repeat(8))];
    for turn in 0..8 {
        messages.push(Message::text(Role::User, PARAGRAPH.repeat(2)));
        messages.push(Message {
            role: Role::Assistant,
            content: vec![
                Part::text(PARAGRAPH),
                Part::ToolCall(ToolCall {
                    id: format!("call_{turn}"),
                    name: "read_file".into(),
                    arguments: json!({"path": format!("src/file_{turn}.rs")}).to_string(),
                    kind: ToolKind::Function,
                    namespace: None,
                    state: Some(Opaque::new(Dialect::Gemini, SIGNATURE)),
                }),
            ],
        });
        messages.push(Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(ToolResult {
                call_id: format!("call_{turn}"),
                name: Some("read_file".into()),
                content: vec![Part::text(PARAGRAPH)],
                is_error: false,
                kind: ToolKind::Function,
            })],
        });
    }
    Request {
        messages,
        tools: (0..4)
            .map(|i| Tool {
                name: format!("tool_{i}"),
                description: Some("Reads or writes a file of the workspace.".into()),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                                   "required": ["path"]}),
                kind: ToolKind::Function,
                strict: None,
                namespace: None,
            })
            .collect(),
        max_tokens: Some(4096),
        ..Request::default()
    }
}

/// About 10 KB of reply: signed thinking, long text and a signed call.
fn reply() -> Reply {
    Reply {
        content: vec![
            Part::Thinking(Thinking {
                text: PARAGRAPH.repeat(20),
                state: Some(Opaque::new(Dialect::Gemini, SIGNATURE)),
                ..Thinking::default()
            }),
            Part::text(PARAGRAPH.repeat(40)),
            Part::ToolCall(ToolCall {
                id: switchyard_wire::dialect::gemini::synthetic_call_id(
                    0,
                    0,
                    "read_file",
                    r#"{"path":"src/main.rs"}"#,
                ),
                name: "read_file".into(),
                arguments: r#"{"path":"src/main.rs"}"#.into(),
                kind: ToolKind::Function,
                namespace: None,
                state: Some(Opaque::new(Dialect::Gemini, SIGNATURE)),
            }),
        ],
        finish: FinishReason::ToolCalls,
        finish_raw: Some("STOP".into()),
        usage: Some(Usage {
            input: 2500,
            cached_input: 2048,
            output: 900,
            reasoning: 300,
            ..Usage::default()
        }),
        model: Some("gemini-2.5-pro".into()),
        id: Some("gP9XaJ6oLMKCxs0P2Zi0sA4".into()),
        raw: Default::default(),
    }
}

pub(crate) fn bench(c: &mut Criterion) {
    let codec = codec(Dialect::Gemini);
    let options = EncodeOptions {
        model: "gemini-2.5-pro",
        stream: false,
    };
    let context = ServerContext::default();
    let request = request();
    let request_body =
        serde_json::to_vec(&codec.encode_request(&request, &options).unwrap()).unwrap();
    let reply = reply();
    let reply_body = codec.encode_reply(&reply, &context);
    let mut stream = Vec::new();
    let mut encoder = codec.stream_encoder(&context);
    for event in reply_events(&reply, 40) {
        encoder.event(&event, &mut stream);
    }
    encoder.finish(&mut stream);

    let mut group = c.benchmark_group("gemini");
    group.throughput(Throughput::Bytes(request_body.len() as u64));
    group.bench_function("encode_request", |b| {
        b.iter(|| serde_json::to_vec(&codec.encode_request(black_box(&request), &options).unwrap()))
    });
    group.bench_function("decode_request", |b| {
        b.iter(|| codec.decode_request(black_box(&request_body)).unwrap())
    });
    group.throughput(Throughput::Bytes(reply_body.len() as u64));
    group.bench_function("decode_reply", |b| {
        b.iter(|| codec.decode_reply(black_box(&reply_body)).unwrap())
    });
    group.bench_function("encode_reply", |b| {
        b.iter(|| codec.encode_reply(black_box(&reply), &context))
    });
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("decode_stream", |b| {
        b.iter(|| {
            let mut decoder = ByteStreamDecoder::new(codec);
            let mut events = decoder.push(black_box(&stream)).unwrap();
            events.extend(decoder.finish().unwrap());
            events
        })
    });
    group.finish();
}

//! Benches of the chat codec on a ~10 KB request, reply and stream.

use criterion::{black_box, Criterion, Throughput};
use serde_json::json;
use switchyard_wire::{
    codec, reply_events, ByteStreamDecoder, Dialect, EncodeOptions, FinishReason, Message, Part,
    Reply, Request, Role, ServerContext, Thinking, Tool, ToolCall, ToolKind, ToolResult, Usage,
};

const PARAGRAPH: &str = "The gateway translates between wire dialects, meters every call and \
records it in full so that a whole run can be replayed byte for byte without calling anyone. ";

/// About 10 KB of conversation: a system prompt, tools, turns with tool calls and results.
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
                    state: None,
                }),
            ],
        });
        messages.push(Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(ToolResult {
                call_id: format!("call_{turn}"),
                name: None,
                content: vec![Part::text(PARAGRAPH)],
                is_error: false,
                kind: ToolKind::Function,
            })],
        });
    }
    let tools = (0..4)
        .map(|i| Tool {
            name: format!("tool_{i}"),
            description: Some("Reads a file of the project and returns its text.".into()),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            kind: ToolKind::Function,
            strict: Some(true),
            namespace: None,
        })
        .collect();
    Request {
        messages,
        tools,
        max_tokens: Some(4096),
        ..Request::default()
    }
}

/// About 10 KB of reply: reasoning, text and two tool calls.
fn reply() -> Reply {
    Reply {
        content: vec![
            Part::Thinking(Thinking {
                text: PARAGRAPH.repeat(15),
                ..Thinking::default()
            }),
            Part::text(PARAGRAPH.repeat(30)),
            Part::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "write_file".into(),
                arguments: json!({"path": "notes.md", "text": PARAGRAPH.repeat(7)}).to_string(),
                kind: ToolKind::Function,
                namespace: None,
                state: None,
            }),
        ],
        finish: FinishReason::ToolCalls,
        finish_raw: Some("tool_calls".into()),
        usage: Some(Usage {
            input: 12000,
            cached_input: 8000,
            cache_write: 0,
            output: 2500,
            reasoning: 600,
        }),
        model: Some("gpt-4.1".into()),
        id: Some("chatcmpl-bench".into()),
        raw: Default::default(),
    }
}

/// About 10 KB of stream: text in deltas of 4 characters, as tokens come.
fn stream(reply: &Reply, context: &ServerContext) -> Vec<u8> {
    let chat = codec(Dialect::Chat);
    let mut chars = 0;
    loop {
        chars += 16;
        let text: String = PARAGRAPH.chars().cycle().take(chars).collect();
        let stream_reply = Reply {
            content: vec![Part::text(text)],
            finish: FinishReason::Stop,
            ..reply.clone()
        };
        let mut bytes = Vec::new();
        let mut encoder = chat.stream_encoder(context);
        for event in reply_events(&stream_reply, 4) {
            encoder.event(&event, &mut bytes);
        }
        encoder.finish(&mut bytes);
        if bytes.len() >= 10_000 {
            return bytes;
        }
    }
}

/// Registers the chat group.
pub(crate) fn bench(c: &mut Criterion) {
    let chat = codec(Dialect::Chat);
    let options = EncodeOptions {
        model: "gpt-4.1",
        stream: false,
    };
    let context = ServerContext {
        created: 1,
        fallback_id: "chatcmpl-bench".into(),
    };
    let request = request();
    let request_bytes =
        serde_json::to_vec(&chat.encode_request(&request, &options).unwrap()).unwrap();
    let reply = reply();
    let reply_bytes = chat.encode_reply(&reply, &context);
    let stream_bytes = stream(&reply, &context);
    let mut group = c.benchmark_group("chat");
    group.throughput(Throughput::Bytes(request_bytes.len() as u64));
    group.bench_function("encode_request", |b| {
        b.iter(|| serde_json::to_vec(&chat.encode_request(black_box(&request), &options).unwrap()))
    });
    group.bench_function("decode_request", |b| {
        b.iter(|| chat.decode_request(black_box(&request_bytes)).unwrap())
    });
    group.throughput(Throughput::Bytes(reply_bytes.len() as u64));
    group.bench_function("decode_reply", |b| {
        b.iter(|| chat.decode_reply(black_box(&reply_bytes)).unwrap())
    });
    group.bench_function("encode_reply", |b| {
        b.iter(|| chat.encode_reply(black_box(&reply), &context))
    });
    group.throughput(Throughput::Bytes(stream_bytes.len() as u64));
    group.bench_function("decode_stream", |b| {
        b.iter(|| {
            let mut decoder = ByteStreamDecoder::new(chat);
            let mut n = 0;
            for chunk in black_box(&stream_bytes).chunks(1400) {
                n += decoder.push(chunk).unwrap().len();
            }
            n + decoder.finish().unwrap().len()
        })
    });
    group.finish();
}

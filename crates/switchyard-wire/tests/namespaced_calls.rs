//! A namespaced call (a Responses `function_call` with `namespace`, what Codex's MCP tools
//! give) keeps its namespace in the name on every wire that has no namespaces: chat,
//! Messages and Gemini all name it `<namespace><name>`, in whole replies, streams and
//! requests (the gateway's golden transcripts found Messages and Gemini dropping it).

use serde_json::{json, Value};
use switchyard_wire::{
    codec, reply_events, Dialect, EncodeOptions, FinishReason, Message, Part, Reply, Request, Role,
    ServerContext, Tool, ToolCall, ToolKind,
};

fn call() -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"README.md"}"#.into(),
        kind: ToolKind::Function,
        namespace: Some("mcp__filesystem__".into()),
        state: None,
    }
}

fn reply() -> Reply {
    Reply {
        content: vec![Part::ToolCall(call())],
        finish: FinishReason::ToolCalls,
        ..Reply::default()
    }
}

fn context() -> ServerContext {
    ServerContext {
        created: 0,
        fallback_id: "r".into(),
    }
}

const FLAT: &str = "mcp__filesystem__read_file";

#[test]
fn whole_replies_name_the_call_with_its_namespace() {
    for dialect in [Dialect::Chat, Dialect::Messages, Dialect::Gemini] {
        let body = codec(dialect).encode_reply(&reply(), &context());
        let text = String::from_utf8(body).unwrap();
        assert!(text.contains(FLAT), "{dialect}: {text}");
    }
}

#[test]
fn streams_name_the_call_with_its_namespace() {
    for dialect in [Dialect::Chat, Dialect::Messages, Dialect::Gemini] {
        let mut encoder = codec(dialect).stream_encoder(&context());
        let mut out = Vec::new();
        for event in reply_events(&reply(), 4) {
            encoder.event(&event, &mut out);
        }
        encoder.finish(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(FLAT), "{dialect}: {text}");
    }
}

#[test]
fn requests_name_namespaced_tools_and_calls_flat() {
    let mut request = Request::user("read it");
    request.messages.push(Message {
        role: Role::Assistant,
        content: vec![Part::ToolCall(call())],
    });
    request.tools = vec![Tool {
        name: "read_file".into(),
        description: None,
        parameters: json!({"type": "object"}),
        kind: ToolKind::Function,
        strict: None,
        namespace: Some("mcp__filesystem__".into()),
    }];
    for dialect in [Dialect::Chat, Dialect::Messages, Dialect::Gemini] {
        let options = EncodeOptions {
            model: "m",
            stream: false,
        };
        let body = codec(dialect).encode_request(&request, &options).unwrap();
        let text = Value::Object(body).to_string();
        assert_eq!(text.matches(FLAT).count(), 2, "{dialect}: {text}");
    }
}

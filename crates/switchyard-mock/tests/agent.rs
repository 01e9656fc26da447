//! The `agent` behaviour on every route, streamed and not: two tool calls, then one, then
//! a final answer quoting the results, each reply starting with signed thinking under
//! `think`; the `cli-agent` behaviour likewise with Claude Code's and Codex's tools.
//! Every turn's history is the mock's own replies sent back through the
//! dialect's codec, so the history rules accept it.

mod common;

use common::*;
use serde_json::json;
use switchyard_mock::signing::{self, Kind};
use switchyard_mock::MockServer;
use switchyard_wire::{
    assemble, codec, Dialect, EncodeOptions, FinishReason, Message, Part, Reasoning, Reply,
    Request, Role, Tool, ToolKind, ToolResult,
};

fn tool(name: &str, property: &str) -> Tool {
    Tool {
        name: name.into(),
        description: None,
        parameters: json!({"type": "object", "properties": {property: {"type": "string"}}, "required": [property]}),
        kind: ToolKind::Function,
        strict: None,
        namespace: None,
    }
}

async fn turn(
    mock: &MockServer,
    d: Dialect,
    model: &str,
    request: &Request,
    stream: bool,
) -> Reply {
    let body = codec(d)
        .encode_request(request, &EncodeOptions { model, stream })
        .unwrap_or_else(|e| panic!("{d} encode: {e}"));
    let r = client()
        .post(endpoint(mock, d, model, stream))
        .json(&body)
        .send()
        .await
        .unwrap();
    if !stream {
        let status = r.status().as_u16();
        if status != 200 {
            panic!("{d}: {status} {}", r.text().await.unwrap());
        }
        return decode_reply(d, r).await;
    }
    assert_eq!(r.status().as_u16(), 200, "{d} stream");
    let (events, _, end) = read_stream(d, r).await;
    let mut all = events;
    all.extend(end.unwrap_or_else(|e| panic!("{d}: {e}")));
    assemble(&all).unwrap_or_else(|e| panic!("{d}: {e}"))
}

fn signed_thinking_first(d: Dialect, reply: &Reply) {
    let Some(Part::Thinking(t)) = reply.content.first() else {
        panic!("{d}: thinking first: {reply:?}")
    };
    if d == Dialect::Chat {
        return; // chat carries no opaque state
    }
    let state = t.state.as_ref().unwrap_or_else(|| panic!("{d}: signed"));
    let ok = match d {
        Dialect::Messages => signing::verify_thinking(&t.text, &state.value),
        Dialect::Responses => signing::verify_unbound(Kind::EncryptedContent, &state.value),
        _ => signing::verify_unbound(Kind::ThoughtSignature, &state.value),
    };
    assert!(ok, "{d}: {}", state.value);
}

/// The reply as the next assistant message, then a result per call.
fn answer_calls(request: &mut Request, reply: &Reply) {
    request.messages.push(Message {
        role: Role::Assistant,
        content: reply.content.clone(),
    });
    for call in reply.tool_calls() {
        request.messages.push(Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(ToolResult {
                call_id: call.id.clone(),
                name: Some(call.name.clone()),
                content: vec![Part::text(format!("{} said fine", call.name))],
                is_error: false,
                kind: ToolKind::Function,
            })],
        });
    }
}

#[tokio::test]
async fn the_agent_loop_on_every_route() {
    let mock = MockServer::start().await;
    for stream in [false, true] {
        for d in Dialect::ALL {
            let model = match d {
                Dialect::Gemini => "gemini-3-pro+agent+think",
                _ => "agent+think",
            };
            let mut request = Request::user("plan a trip");
            request.tools = vec![tool("get_weather", "city"), tool("get_time", "zone")];
            request.max_tokens = Some(4096);
            request.reasoning = Some(Reasoning {
                budget_tokens: Some(1024),
                ..Reasoning::default()
            });
            let at = format!("{d} stream={stream}");

            let first = turn(&mock, d, model, &request, stream).await;
            signed_thinking_first(d, &first);
            let calls: Vec<_> = first.tool_calls().cloned().collect();
            assert_eq!(calls.len(), 2, "{at}: {first:?}");
            assert_eq!(
                (calls[0].name.as_str(), calls[1].name.as_str()),
                ("get_weather", "get_time"),
                "{at}"
            );
            assert_ne!(calls[0].id, calls[1].id, "{at}");
            assert_eq!(calls[0].arguments, r#"{"city":"Paris"}"#, "{at}");
            assert_eq!(calls[1].arguments, r#"{"zone":"mock"}"#, "{at}");
            assert_eq!(first.finish, FinishReason::ToolCalls, "{at}");
            answer_calls(&mut request, &first);

            let second = turn(&mock, d, model, &request, stream).await;
            signed_thinking_first(d, &second);
            assert_eq!(second.tool_calls().count(), 1, "{at}: {second:?}");
            answer_calls(&mut request, &second);

            let last = turn(&mock, d, model, &request, stream).await;
            signed_thinking_first(d, &last);
            assert_eq!(last.tool_calls().count(), 0, "{at}");
            let text = last.text();
            assert!(
                text.starts_with("Done after 2 tool rounds."),
                "{at}: {text}"
            );
            assert!(text.contains("get_time said fine"), "{at}: {text}");
            assert_eq!(last.finish, FinishReason::Stop, "{at}");
        }
    }
}

/// Claude Code's two tools (`Write`, `Bash`) and Codex's (`exec_command`, a free-form
/// `apply_patch`), as their CLIs declare them.
fn cli_tools(cli: &str) -> Vec<Tool> {
    match cli {
        "claude" => vec![tool("Bash", "command"), {
            let mut write = tool("Write", "file_path");
            write.parameters["properties"]["content"] = json!({"type": "string"});
            write
        }],
        _ => vec![
            tool("exec_command", "cmd"),
            Tool {
                name: "apply_patch".into(),
                description: None,
                parameters: json!({"type": "grammar", "syntax": "lark", "definition": "start: x"}),
                kind: ToolKind::Custom,
                strict: None,
                namespace: None,
            },
        ],
    }
}

#[tokio::test]
async fn the_cli_agent_on_every_route() {
    use switchyard_mock::cli_agent::{ANSWER_PREFIX, FILE_CONTENT};
    let mock = MockServer::start().await;
    for stream in [false, true] {
        for d in Dialect::ALL {
            for cli in ["claude", "codex"] {
                let model = "cli-agent+think";
                let mut request = Request::user("Write /srv/project/note.txt, then show it.");
                request.tools = cli_tools(cli);
                request.max_tokens = Some(4096);
                request.reasoning = Some(Reasoning {
                    budget_tokens: Some(1024),
                    ..Reasoning::default()
                });
                let at = format!("{d} {cli} stream={stream}");

                let first = turn(&mock, d, model, &request, stream).await;
                signed_thinking_first(d, &first);
                let calls: Vec<_> = first.tool_calls().cloned().collect();
                assert_eq!(calls.len(), 1, "{at}: {first:?}");
                let (name, input) = (calls[0].name.as_str(), calls[0].arguments.as_str());
                match cli {
                    "claude" => {
                        assert_eq!(name, "Write", "{at}");
                        let args: serde_json::Value = serde_json::from_str(input).unwrap();
                        assert_eq!(args["file_path"], "/srv/project/note.txt", "{at}");
                        assert_eq!(args["content"], FILE_CONTENT, "{at}");
                    }
                    _ => {
                        assert_eq!(name, "apply_patch", "{at}");
                        // Chat declares a custom tool as a function of one `input`.
                        let patch = match serde_json::from_str::<serde_json::Value>(input) {
                            Ok(args) => args["input"].as_str().unwrap_or_default().to_string(),
                            Err(_) => input.to_string(),
                        };
                        assert!(
                            patch.starts_with(
                                "*** Begin Patch\n*** Add File: /srv/project/note.txt\n"
                            ),
                            "{at}: {input}"
                        );
                    }
                }
                assert_eq!(first.finish, FinishReason::ToolCalls, "{at}");
                answer_calls(&mut request, &first);

                let second = turn(&mock, d, model, &request, stream).await;
                signed_thinking_first(d, &second);
                let calls: Vec<_> = second.tool_calls().cloned().collect();
                assert_eq!(calls.len(), 1, "{at}: {second:?}");
                assert!(
                    calls[0].arguments.contains("cat '/srv/project/note.txt'"),
                    "{at}: {:?}",
                    calls[0]
                );
                request.messages.push(Message {
                    role: Role::Assistant,
                    content: second.content.clone(),
                });
                request.messages.push(Message {
                    role: Role::Tool,
                    content: vec![Part::ToolResult(ToolResult {
                        call_id: calls[0].id.clone(),
                        name: Some(calls[0].name.clone()),
                        content: vec![Part::text(FILE_CONTENT)],
                        is_error: false,
                        kind: ToolKind::Function,
                    })],
                });

                let last = turn(&mock, d, model, &request, stream).await;
                signed_thinking_first(d, &last);
                assert_eq!(last.tool_calls().count(), 0, "{at}");
                assert_eq!(
                    last.text(),
                    format!("{ANSWER_PREFIX}{FILE_CONTENT}"),
                    "{at}"
                );
                assert_eq!(last.finish, FinishReason::Stop, "{at}");
            }
        }
    }
}

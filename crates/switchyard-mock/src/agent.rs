//! The `agent` behaviour: a deterministic tool loop for multi-turn agent tests.
//!
//! The round is the number of assistant messages carrying tool calls in the current turn:
//! the messages after the last user message with text (a user text that directly follows
//! tool results, as Claude Code adds beside them, rides along and does not start a turn).
//! Round 0 answers with two tool calls in one reply (the first two tools offered, or the
//! first tool twice), round 1 with one call of the first tool, round 2 and later with a
//! final text quoting every tool result of the turn. Ids are distinct and derived from
//! the prompt digest; arguments fit each tool's schema ([`crate::answer::value_for`]).

use crate::answer;
use switchyard_wire::{Message, Part, Request, Role, Tool, ToolCall, ToolKind};

/// What the agent does this round.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Call these tools.
    Call(Vec<ToolCall>),
    /// Answer with this text.
    Answer(String),
}

/// The messages of the current turn (after its opening user text).
fn current_turn(request: &Request) -> &[Message] {
    &request.messages[current_turn_start(request)..]
}

/// Where the current turn starts: just after its opening user text (0 when there is none).
pub(crate) fn current_turn_start(request: &Request) -> usize {
    let messages = &request.messages;
    (0..messages.len())
        .rev()
        .find(|&i| {
            let m = &messages[i];
            let opens = m.role == Role::User
                && m.content.iter().any(|p| matches!(p, Part::Text { .. }))
                && !m.content.iter().any(|p| matches!(p, Part::ToolResult(_)));
            opens && (i == 0 || messages[i - 1].role != Role::Tool)
        })
        .map_or(0, |i| i + 1)
}

/// The tool rounds already taken in the current turn.
pub fn round(request: &Request) -> usize {
    current_turn(request)
        .iter()
        .filter(|m| {
            m.role == Role::Assistant && m.content.iter().any(|p| matches!(p, Part::ToolCall(_)))
        })
        .count()
}

/// This round's step; `digest` makes the call ids.
pub fn step(request: &Request, digest: u64) -> Step {
    let round = round(request);
    let first = request.tools.first();
    let id = |i: usize| format!("call_mock_{:012x}_{i}", digest & 0xffff_ffff_ffff);
    match round {
        0 => {
            let second = request.tools.get(1).or(first);
            Step::Call(vec![call(first, id(1)), call(second, id(2))])
        }
        1 => Step::Call(vec![call(first, id(1))]),
        n => {
            let results: Vec<String> = current_turn(request)
                .iter()
                .flat_map(|m| m.content.iter())
                .filter_map(|p| match p {
                    Part::ToolResult(r) => Some(r.text()),
                    _ => None,
                })
                .collect();
            Step::Answer(format!(
                "Done after {n} tool rounds. The tools returned: {}",
                results.join("; ")
            ))
        }
    }
}

/// The thinking text for this round's step.
pub fn thinking(step: &Step) -> String {
    match step {
        Step::Call(calls) => {
            let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
            format!(
                "I need more information; I will call {}.",
                names.join(" and ")
            )
        }
        Step::Answer(_) => "I have what the tools returned; I will answer.".to_string(),
    }
}

/// A call of `tool` (or `get_weather {"city":"Paris"}` when none is offered).
pub(crate) fn call(tool: Option<&Tool>, id: String) -> ToolCall {
    match tool {
        None => ToolCall {
            id,
            name: "get_weather".into(),
            arguments: r#"{"city":"Paris"}"#.into(),
            kind: ToolKind::Function,
            namespace: None,
            state: None,
        },
        Some(tool) => ToolCall {
            id,
            name: tool.name.clone(),
            arguments: match tool.kind {
                ToolKind::Custom => "mock input".into(),
                ToolKind::Function => answer::value_for(&tool.parameters, "").to_string(),
            },
            kind: tool.kind,
            namespace: tool.namespace.clone(),
            state: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchyard_wire::ToolResult;

    fn tool(name: &str) -> Tool {
        Tool {
            name: name.into(),
            description: None,
            parameters: json!({"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"}},"required":["city","n"]}),
            kind: ToolKind::Function,
            strict: None,
            namespace: None,
        }
    }

    fn assistant_calls(req: &mut Request, calls: Vec<ToolCall>) {
        let results: Vec<Message> = calls
            .iter()
            .map(|c| Message {
                role: Role::Tool,
                content: vec![Part::ToolResult(ToolResult {
                    call_id: c.id.clone(),
                    name: Some(c.name.clone()),
                    content: vec![Part::text(format!("result of {}", c.id))],
                    is_error: false,
                    kind: ToolKind::Function,
                })],
            })
            .collect();
        req.messages.push(Message {
            role: Role::Assistant,
            content: calls.into_iter().map(Part::ToolCall).collect(),
        });
        req.messages.extend(results);
    }

    #[test]
    fn two_calls_then_one_then_an_answer() {
        let mut req = Request::user("plan");
        req.tools = vec![tool("a"), tool("b")];
        let Step::Call(calls) = step(&req, 5) else {
            panic!()
        };
        assert_eq!(calls.len(), 2);
        assert_eq!((calls[0].name.as_str(), calls[1].name.as_str()), ("a", "b"));
        assert_ne!(calls[0].id, calls[1].id);
        assert_eq!(calls[0].arguments, r#"{"city":"Paris","n":1}"#);
        assert_eq!(step(&req, 5), step(&req, 5));
        assert_eq!(
            thinking(&step(&req, 5)),
            "I need more information; I will call a and b."
        );

        assistant_calls(&mut req, calls);
        assert_eq!(round(&req), 1);
        let Step::Call(calls) = step(&req, 6) else {
            panic!()
        };
        assert_eq!(calls.len(), 1);
        assistant_calls(&mut req, calls);
        // A user text beside tool results does not start a new turn.
        req.messages.push(Message::text(Role::User, "<reminder>"));
        assert_eq!(round(&req), 2);
        let Step::Answer(text) = step(&req, 7) else {
            panic!()
        };
        assert!(text.starts_with("Done after 2 tool rounds."), "{text}");
        assert!(
            text.contains("result of call_mock_000000000005_1"),
            "{text}"
        );
        assert!(
            text.contains("result of call_mock_000000000006_1"),
            "{text}"
        );

        req.messages.push(Message::text(Role::Assistant, "done"));
        req.messages.push(Message::text(Role::User, "again"));
        assert_eq!(round(&req), 0);
    }

    #[test]
    fn one_tool_is_called_twice_and_none_gives_get_weather() {
        let mut req = Request::user("x");
        req.tools = vec![tool("only")];
        let Step::Call(calls) = step(&req, 1) else {
            panic!()
        };
        assert_eq!(
            (calls[0].name.as_str(), calls[1].name.as_str()),
            ("only", "only")
        );
        let Step::Call(calls) = step(&Request::user("x"), 1) else {
            panic!()
        };
        assert_eq!(calls[0].name, "get_weather");
        assert_eq!(round(&Request::default()), 0);
    }
}

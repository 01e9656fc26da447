//! Building the canonical [`Reply`] a behaviour gives for a request: echo, fixed text,
//! tool calls with arguments fitting the tool's schema, the agent loops, thinking signed
//! with verifiable opaque state, and deterministic usage.

use crate::agent;
use crate::behaviour::{Behaviour, Content};
use crate::cli_agent;
use crate::scenario::ScriptedReply;
use crate::signing;
use serde_json::{json, Map, Value};
use switchyard_wire::{
    Dialect, FinishReason, Message, Opaque, Part, Reply, Request, Role, Thinking, ToolCall,
    ToolKind, Usage,
};

/// Tokens for `chars` characters: chars / 4 rounded up, at least 1.
pub fn tokens(chars: usize) -> u64 {
    (chars.div_ceil(4)).max(1) as u64
}

/// Characters of everything a prompt carries (messages and tool declarations).
pub fn prompt_chars(request: &Request) -> usize {
    let parts: usize = request
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .map(part_chars)
        .sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|t| {
            t.name.chars().count()
                + t.description.as_deref().map_or(0, |d| d.chars().count())
                + if t.parameters.is_null() {
                    0
                } else {
                    t.parameters.to_string().chars().count()
                }
        })
        .sum();
    parts + tools
}

fn part_chars(part: &Part) -> usize {
    match part {
        Part::Text { text, .. } => text.chars().count(),
        Part::Thinking(t) => t.text.chars().count(),
        Part::ToolCall(c) => c.name.chars().count() + c.arguments.chars().count(),
        Part::ToolResult(r) => r.content.iter().map(part_chars).sum(),
        Part::Image(_) => 0,
    }
}

/// The input tokens the mock reports for a request (also `count_tokens`' answer).
pub fn input_tokens(request: &Request) -> u64 {
    tokens(prompt_chars(request))
}

/// The text of the last user turn: its text, or the text of the tool results it carries.
pub fn last_user_text(request: &Request) -> String {
    let Some(m) = request
        .messages
        .iter()
        .rev()
        .find(|m| matches!(m.role, Role::User | Role::Tool))
    else {
        return String::new();
    };
    let text = m.joined_text();
    if !text.is_empty() {
        return text;
    }
    tool_results_text(m)
}

fn tool_results_text(m: &Message) -> String {
    m.content
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.text()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tool results in the last message, if it holds any.
fn last_tool_results(request: &Request) -> Option<String> {
    let last = request.messages.last()?;
    last.content
        .iter()
        .any(|p| matches!(p, Part::ToolResult(_)))
        .then(|| tool_results_text(last))
}

const LOREM: &[&str] = &[
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
];

fn lorem(words: usize) -> String {
    (0..words)
        .map(|i| LOREM[i % LOREM.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Identity of the reply being built.
#[derive(Debug, Clone)]
pub struct ReplyIds {
    /// The dialect the client speaks.
    pub dialect: Dialect,
    /// The model the client named.
    pub model: String,
    /// The response id.
    pub response_id: String,
    /// A digest of the prompt, for deterministic call ids and signatures.
    pub digest: u64,
}

/// The reply for `behaviour` (or a scripted step) to `request`.
pub fn build_reply(
    behaviour: &Behaviour,
    script: Option<&ScriptedReply>,
    request: &Request,
    ids: &ReplyIds,
) -> Reply {
    let mut content = Vec::new();
    let mut finish = if behaviour.length {
        FinishReason::Length
    } else {
        FinishReason::Stop
    };
    let prompt = last_user_text(request);

    let agent_step = match script {
        Some(_) => None,
        None if behaviour.cli_agent => Some(cli_agent::step(request, ids.digest)),
        None if behaviour.agent => Some(agent::step(request, ids.digest)),
        None => None,
    };
    let thinking_text = match script.and_then(|s| s.thinking.clone()) {
        Some(t) => Some(t),
        None if behaviour.think => Some(match &agent_step {
            Some(step) if behaviour.cli_agent => cli_agent::thinking(step),
            Some(step) => agent::thinking(step),
            None => format!(
                "The user wrote {} characters; I will answer plainly.",
                prompt.chars().count()
            ),
        }),
        None => None,
    };
    if let Some(text) = &thinking_text {
        content.push(Part::Thinking(Thinking {
            text: text.clone(),
            state: Some(thinking_state(ids, text)),
            redacted: false,
            id: (ids.dialect == Dialect::Responses).then(|| format!("rs_mock_{:016x}", ids.digest)),
        }));
    }

    if let Some(script) = script {
        if let Some(text) = &script.text {
            content.push(Part::text(text.clone()));
        }
        for (i, call) in script.tool_calls.iter().enumerate() {
            content.push(Part::ToolCall(ToolCall {
                id: call.id.clone().unwrap_or_else(|| {
                    format!("call_mock_{:012x}_{i}", ids.digest & 0xffff_ffff_ffff)
                }),
                name: call.name.clone(),
                arguments: match &call.arguments {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
                kind: ToolKind::Function,
                namespace: None,
                state: None,
            }));
        }
        if !script.tool_calls.is_empty() {
            finish = FinishReason::ToolCalls;
        }
        if let Some(f) = script.finish {
            finish = f;
        }
    } else if let Some(step) = agent_step {
        match step {
            agent::Step::Call(calls) => {
                content.extend(calls.into_iter().map(Part::ToolCall));
                finish = FinishReason::ToolCalls;
            }
            agent::Step::Answer(text) => content.push(Part::text(text)),
        }
    } else if behaviour.tools {
        match last_tool_results(request) {
            Some(result) => content.push(Part::text(format!("The tool returned: {result}"))),
            None => {
                content.push(Part::ToolCall(tool_call(request, ids)));
                finish = FinishReason::ToolCalls;
            }
        }
    } else {
        let text = match &behaviour.content {
            Content::Echo if prompt.is_empty() => "(no user message)".to_string(),
            Content::Echo => prompt.clone(),
            Content::Say(t) => t.clone(),
            Content::Lorem(n) => lorem(*n),
        };
        content.push(Part::text(text));
    }

    if ids.dialect == Dialect::Gemini {
        sign_first_call(&mut content, ids.digest);
    }

    let output_chars: usize = content.iter().map(part_chars).sum();
    let mut usage = Usage {
        input: input_tokens(request),
        output: tokens(output_chars),
        reasoning: thinking_text
            .as_deref()
            .map_or(0, |t| tokens(t.chars().count())),
        ..Usage::default()
    };
    if let Some((read, write)) = behaviour.cache {
        usage.input = usage.input.saturating_add(read).saturating_add(write);
        usage.cached_input = read;
        usage.cache_write = write;
    }
    if let Some(n) = behaviour.usage {
        usage.input = n;
        usage.output = n;
    }
    if let Some(u) = script.and_then(|s| s.usage) {
        usage = u;
    }
    Reply {
        content,
        finish,
        finish_raw: None,
        usage: Some(usage),
        model: Some(ids.model.clone()),
        id: Some(ids.response_id.clone()),
        raw: Default::default(),
    }
}

/// A call of the first tool offered, with arguments valid for its schema; or
/// `get_weather {"city":"Paris"}` when none is offered.
fn tool_call(request: &Request, ids: &ReplyIds) -> ToolCall {
    let id = format!("call_mock_{:012x}", ids.digest & 0xffff_ffff_ffff);
    agent::call(request.tools.first(), id)
}

/// The opaque state of a thinking part, verifiable later ([`signing`]): an Anthropic
/// signature binding the text, a Responses `encrypted_content`, a Gemini
/// `thoughtSignature` (chat carries none; it gets a value the chat codec drops).
fn thinking_state(ids: &ReplyIds, text: &str) -> Opaque {
    let value = match ids.dialect {
        Dialect::Messages => signing::thinking_signature(text, ids.digest),
        Dialect::Responses | Dialect::Chat => signing::encrypted_content(ids.digest),
        Dialect::Gemini => signing::thought_signature(ids.digest),
    };
    Opaque::new(ids.dialect, value)
}

/// Gemini 3 signs the first function call of each step (parallel calls after it carry
/// none), as the mock's Gemini 3 rule then expects back.
fn sign_first_call(content: &mut [Part], digest: u64) {
    if let Some(call) = content.iter_mut().find_map(|p| match p {
        Part::ToolCall(c) => Some(c),
        _ => None,
    }) {
        call.state = Some(Opaque::new(
            Dialect::Gemini,
            signing::thought_signature(digest.rotate_left(17) ^ 1),
        ));
    }
}

/// A simple value valid for a JSON schema: required properties (all of them when none
/// are listed) with a value per type; enums give their first value.
pub fn value_for(schema: &Value, name: &str) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ if name.is_empty() => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let props = schema.get("properties").and_then(Value::as_object);
            let required: Option<Vec<&str>> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect());
            let mut out = Map::new();
            if let Some(props) = props {
                for (key, sub) in props {
                    if required.as_ref().is_none_or(|r| r.contains(&key.as_str())) {
                        out.insert(key.clone(), value_for(sub, key));
                    }
                }
            }
            Value::Object(out)
        }
        "string" => {
            let lower = name.to_lowercase();
            if lower.contains("city") || lower.contains("location") {
                json!("Paris")
            } else {
                json!("mock")
            }
        }
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        "array" => json!([]),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_wire::{Tool, ToolResult};

    fn ids() -> ReplyIds {
        ReplyIds {
            dialect: Dialect::Messages,
            model: "echo".into(),
            response_id: "msg_1".into(),
            digest: 7,
        }
    }

    #[test]
    fn token_estimate() {
        assert_eq!(tokens(0), 1);
        assert_eq!(tokens(4), 1);
        assert_eq!(tokens(5), 2);
    }

    #[test]
    fn echo_with_usage() {
        let r = build_reply(
            &Behaviour::default(),
            None,
            &Request::user("hello world"),
            &ids(),
        );
        assert_eq!(r.text(), "hello world");
        assert_eq!(r.usage.unwrap().input, 3);
        assert_eq!(r.usage.unwrap().output, 3);
    }

    #[test]
    fn think_and_cache() {
        let b = crate::behaviour::parse("think+cache+say:ok").unwrap();
        let r = build_reply(&b, None, &Request::user("hi"), &ids());
        let Part::Thinking(t) = &r.content[0] else {
            panic!()
        };
        assert_eq!(t.state.as_ref().unwrap().dialect, Dialect::Messages);
        assert_eq!(r.text(), "ok");
        let u = r.usage.unwrap();
        assert_eq!((u.cached_input, u.cache_write, u.input), (1024, 256, 1281));
        assert!(u.reasoning > 0);
    }

    #[test]
    fn tools_fit_the_schema_and_answer_results() {
        let mut req = Request::user("weather?");
        req.tools.push(Tool {
            name: "lookup".into(),
            description: None,
            parameters: json!({"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"unit":{"enum":["c","f"]},"x":{"type":"boolean"}},"required":["city","days","unit"]}),
            kind: ToolKind::Function,
            strict: None,
            namespace: None,
        });
        let b = crate::behaviour::parse("tools").unwrap();
        let r = build_reply(&b, None, &req, &ids());
        let call = r.tool_calls().next().unwrap();
        assert_eq!(call.name, "lookup");
        assert_eq!(call.arguments, r#"{"city":"Paris","days":1,"unit":"c"}"#);
        assert_eq!(r.finish, FinishReason::ToolCalls);

        let r = build_reply(&b, None, &Request::user("x"), &ids());
        assert_eq!(
            r.tool_calls().next().unwrap().arguments,
            r#"{"city":"Paris"}"#
        );

        req.messages.push(Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(ToolResult {
                call_id: "c".into(),
                name: None,
                content: vec![Part::text("sunny, 21C")],
                is_error: false,
                kind: ToolKind::Function,
            })],
        });
        let r = build_reply(&b, None, &req, &ids());
        assert_eq!(r.text(), "The tool returned: sunny, 21C");
        assert_eq!(r.finish, FinishReason::Stop);
    }
}

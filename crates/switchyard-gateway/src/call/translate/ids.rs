//! What a translated request loses on the way up and the gateway puts back on the way
//! down: tool-call ids the target refuses, Codex `namespace` tools, and `custom`
//! (free-form) tools.
//!
//! - **Ids.** Anthropic accepts tool ids matching `^[a-zA-Z0-9_-]+$` only. Other ids are
//!   rewritten deterministically (bad characters become `_`, and a digest of the original
//!   is appended so two ids never collide), on calls and on the results that answer them
//!   alike; ids the reply carries are mapped back.
//! - **Namespaces.** Every target but Responses gets a namespace's members as plain
//!   functions named `<namespace><name>` (`mcp__fs__` + `read` → `mcp__fs__read`); a call
//!   of such a name comes back as `{name: "read", namespace: "mcp__fs__"}`, because Codex
//!   refuses a flattened name.
//! - **Custom tools** become functions taking one string, `input`; a call comes back as a
//!   custom call whose input is that string.

use serde_json::{json, Value};
use std::collections::HashMap;
use switchyard_wire::{Dialect, Event, Part, Reply, Request, ToolKind};

/// How to turn the target's answer back into what the client declared.
#[derive(Debug, Default, Clone)]
pub struct Restore {
    /// Sanitised id → the client's id.
    ids: HashMap<String, String>,
    /// Flat name the target sees → (namespace, name).
    namespaced: HashMap<String, (String, String)>,
    /// Names (as the target sees them) of custom tools.
    custom: HashMap<String, ()>,
    /// Custom calls being streamed: part index → arguments so far.
    pending_custom: HashMap<usize, String>,
}

/// Rewrites `request` for `target`, returning how to restore the answer.
pub fn prepare(request: &mut Request, target: Dialect) -> Restore {
    let mut restore = Restore::default();
    if target == Dialect::Responses {
        // Responses carries namespaces, custom tools and any id natively.
        return restore;
    }
    for tool in &mut request.tools {
        if tool.namespace.is_some() {
            let flat = tool.flat_name();
            let ns = tool.namespace.take().unwrap_or_default();
            restore
                .namespaced
                .insert(flat.clone(), (ns, std::mem::take(&mut tool.name)));
            tool.name = flat;
        }
        if tool.kind == ToolKind::Custom {
            restore.custom.insert(tool.name.clone(), ());
            tool.kind = ToolKind::Function;
            let mut description = tool.description.clone().unwrap_or_default();
            if let Some(def) = tool.parameters.get("definition").and_then(Value::as_str) {
                // The grammar is the only description of the free-form input.
                description.push_str("\n\nThe input must follow this grammar:\n");
                description.push_str(def);
            }
            tool.description = (!description.is_empty()).then_some(description);
            tool.parameters = json!({
                "type": "object",
                "properties": {"input": {"type": "string", "description": "the tool's free-form input"}},
                "required": ["input"],
            });
        }
    }
    if let Some(switchyard_wire::ToolChoice::Tool(name)) = &mut request.tool_choice {
        if let Some((flat, _)) = restore
            .namespaced
            .iter()
            .find(|(_, (_, child))| child == name)
        {
            *name = flat.clone();
        }
    }
    let sanitise = target == Dialect::Messages;
    for message in &mut request.messages {
        for part in &mut message.content {
            match part {
                Part::ToolCall(call) => {
                    if call.namespace.is_some() {
                        call.name = call.flat_name();
                        call.namespace = None;
                    }
                    if call.kind == ToolKind::Custom {
                        call.kind = ToolKind::Function;
                        call.arguments = json!({"input": call.arguments}).to_string();
                    }
                    if sanitise {
                        call.id = restore.sanitise(&call.id);
                    }
                }
                Part::ToolResult(result) => {
                    result.kind = ToolKind::Function;
                    if sanitise {
                        result.call_id = restore.sanitise(&result.call_id);
                    }
                }
                _ => {}
            }
        }
    }
    restore
}

impl Restore {
    fn sanitise(&mut self, id: &str) -> String {
        let clean = sanitise_id(id);
        if clean != id {
            self.ids.insert(clean.clone(), id.to_string());
        }
        clean
    }

    /// True when nothing needs restoring (the common case: no work per event).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.namespaced.is_empty() && self.custom.is_empty()
    }

    /// Restores a whole reply.
    pub fn reply(&self, reply: &mut Reply) {
        if self.is_empty() {
            return;
        }
        for part in &mut reply.content {
            if let Part::ToolCall(call) = part {
                if let Some(orig) = self.ids.get(&call.id) {
                    call.id = orig.clone();
                }
                if self.custom.contains_key(&call.name) {
                    call.kind = ToolKind::Custom;
                    call.arguments = custom_input(&call.arguments);
                }
                if let Some((ns, name)) = self.namespaced.get(&call.name) {
                    call.namespace = Some(ns.clone());
                    call.name = name.clone();
                }
            }
        }
    }

    /// Restores one stream event; a custom call's arguments are held until it ends, then
    /// sent as one fragment (the input string cannot be cut out of partial JSON).
    pub fn event(&mut self, event: Event) -> Vec<Event> {
        if self.is_empty() {
            return vec![event];
        }
        match event {
            Event::ToolCallStart {
                part,
                mut id,
                mut name,
                mut kind,
                mut namespace,
                state,
            } => {
                if let Some(orig) = self.ids.get(&id) {
                    id = orig.clone();
                }
                if self.custom.contains_key(&name) {
                    kind = ToolKind::Custom;
                    self.pending_custom.insert(part, String::new());
                }
                if let Some((ns, child)) = self.namespaced.get(&name) {
                    namespace = Some(ns.clone());
                    name = child.clone();
                }
                vec![Event::ToolCallStart {
                    part,
                    id,
                    name,
                    kind,
                    namespace,
                    state,
                }]
            }
            Event::ToolCallDelta { part, arguments } => match self.pending_custom.get_mut(&part) {
                Some(buffer) => {
                    buffer.push_str(&arguments);
                    Vec::new()
                }
                None => vec![Event::ToolCallDelta { part, arguments }],
            },
            Event::ToolCallEnd { part } => match self.pending_custom.remove(&part) {
                Some(buffer) => vec![
                    Event::ToolCallDelta {
                        part,
                        arguments: custom_input(&buffer),
                    },
                    Event::ToolCallEnd { part },
                ],
                None => vec![Event::ToolCallEnd { part }],
            },
            other => vec![other],
        }
    }
}

/// The free-form input out of `{"input": "..."}`; anything else is kept as written.
fn custom_input(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => match map.get("input") {
            Some(Value::String(s)) => s.clone(),
            Some(other) if map.len() == 1 => other.to_string(),
            _ => arguments.to_string(),
        },
        _ => arguments.to_string(),
    }
}

/// An id matching `^[a-zA-Z0-9_-]+$`: unchanged when it already does; else bad characters
/// become `_` and 8 hex digits of a digest of the original are appended.
pub fn sanitise_id(id: &str) -> String {
    if !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return id.to_string();
    }
    let mut out: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        out.push_str("toolu");
    }
    out.push_str(&format!("_{:08x}", fnv1a(id.as_bytes()) as u32));
    out
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_wire::{Message, Role, Tool, ToolCall, ToolResult};

    #[test]
    fn ids_are_sanitised_deterministically_without_collisions() {
        assert_eq!(sanitise_id("toolu_01AbC-9"), "toolu_01AbC-9");
        let a = sanitise_id("call:1");
        let b = sanitise_id("call.1");
        assert_ne!(a, b);
        assert_eq!(a, sanitise_id("call:1"));
        assert!(a.starts_with("call_1_"));
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-'));
        assert!(sanitise_id("").starts_with("toolu_"));
    }

    fn codex_request() -> Request {
        Request {
            messages: vec![
                Message::text(Role::User, "go"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        Part::ToolCall(ToolCall {
                            id: "fc:1".into(),
                            name: "read".into(),
                            arguments: "{}".into(),
                            kind: ToolKind::Function,
                            namespace: Some("mcp__fs__".into()),
                            state: None,
                        }),
                        Part::ToolCall(ToolCall {
                            id: "fc:2".into(),
                            name: "apply_patch".into(),
                            arguments: "*** Begin Patch".into(),
                            kind: ToolKind::Custom,
                            namespace: None,
                            state: None,
                        }),
                    ],
                },
                Message {
                    role: Role::Tool,
                    content: vec![Part::ToolResult(ToolResult {
                        call_id: "fc:1".into(),
                        name: None,
                        content: vec![Part::text("ok")],
                        is_error: false,
                        kind: ToolKind::Function,
                    })],
                },
            ],
            tools: vec![
                Tool {
                    name: "read".into(),
                    description: None,
                    parameters: json!({"type": "object"}),
                    kind: ToolKind::Function,
                    strict: None,
                    namespace: Some("mcp__fs__".into()),
                },
                Tool {
                    name: "apply_patch".into(),
                    description: Some("patch files".into()),
                    parameters: json!({"type": "grammar", "syntax": "lark", "definition": "start: x"}),
                    kind: ToolKind::Custom,
                    strict: None,
                    namespace: None,
                },
            ],
            ..Request::default()
        }
    }

    #[test]
    fn namespaces_and_custom_tools_are_flattened_and_restored() {
        let mut r = codex_request();
        let restore = prepare(&mut r, Dialect::Messages);
        assert_eq!(r.tools[0].name, "mcp__fs__read");
        assert_eq!(r.tools[0].namespace, None);
        assert_eq!(r.tools[1].kind, ToolKind::Function);
        assert_eq!(r.tools[1].parameters["required"], json!(["input"]));
        assert!(r.tools[1]
            .description
            .as_deref()
            .unwrap()
            .contains("start: x"));
        let Part::ToolCall(c) = &r.messages[1].content[1] else {
            panic!()
        };
        assert_eq!(c.arguments, r#"{"input":"*** Begin Patch"}"#);
        let Part::ToolCall(c0) = &r.messages[1].content[0] else {
            panic!()
        };
        let Part::ToolResult(res) = &r.messages[2].content[0] else {
            panic!()
        };
        assert_eq!(
            c0.id, res.call_id,
            "a call and its result keep matching ids"
        );
        assert!(!c0.id.contains(':'));

        let mut reply = Reply {
            content: vec![
                Part::ToolCall(ToolCall {
                    id: c0.id.clone(),
                    name: "mcp__fs__read".into(),
                    arguments: "{}".into(),
                    kind: ToolKind::Function,
                    namespace: None,
                    state: None,
                }),
                Part::ToolCall(ToolCall {
                    id: "toolu_2".into(),
                    name: "apply_patch".into(),
                    arguments: r#"{"input":"*** Begin Patch\n"}"#.into(),
                    kind: ToolKind::Function,
                    namespace: None,
                    state: None,
                }),
            ],
            ..Reply::default()
        };
        restore.reply(&mut reply);
        let calls: Vec<_> = reply.tool_calls().collect();
        assert_eq!(calls[0].id, "fc:1");
        assert_eq!(calls[0].name, "read");
        assert_eq!(calls[0].namespace.as_deref(), Some("mcp__fs__"));
        assert_eq!(calls[1].kind, ToolKind::Custom);
        assert_eq!(calls[1].arguments, "*** Begin Patch\n");
    }

    #[test]
    fn a_streamed_custom_call_is_released_whole_at_its_end() {
        let mut r = codex_request();
        let mut restore = prepare(&mut r, Dialect::Chat);
        let mut out = Vec::new();
        for e in [
            Event::ToolCallStart {
                part: 0,
                id: "c1".into(),
                name: "apply_patch".into(),
                kind: ToolKind::Function,
                namespace: None,
                state: None,
            },
            Event::ToolCallDelta {
                part: 0,
                arguments: r#"{"inp"#.into(),
            },
            Event::ToolCallDelta {
                part: 0,
                arguments: r#"ut":"a\nb"}"#.into(),
            },
            Event::ToolCallEnd { part: 0 },
        ] {
            out.extend(restore.event(e));
        }
        assert!(matches!(
            &out[0],
            Event::ToolCallStart {
                kind: ToolKind::Custom,
                ..
            }
        ));
        assert_eq!(
            out[1],
            Event::ToolCallDelta {
                part: 0,
                arguments: "a\nb".into()
            }
        );
        assert_eq!(out[2], Event::ToolCallEnd { part: 0 });
    }
}

//! Which backend opaque provider state belongs to.
//!
//! A signature or encrypted reasoning item is valid only at the backend that issued it:
//! another provider refuses it, and even the same dialect on another backend (Gemini on
//! Vertex and on the Gemini API) cannot verify it. Replies are tagged with the backend
//! they came from ([`Reply::tag_state`], [`Event::tag_state`]), and a request drops the
//! state of every other backend before it is encoded ([`Request::drop_state_not_from`]).
//! State with no backend tag (history a caller wrote by hand, older records) is kept: the
//! dialect check of each encoder still applies to it.

use crate::{Event, Opaque, Part, Reply, Request};

fn tag(state: &mut Option<Opaque>, backend: &str) {
    if let Some(s) = state {
        if s.backend.is_none() {
            s.backend = Some(backend.to_string());
        }
    }
}

fn tag_part(part: &mut Part, backend: &str) {
    match part {
        Part::Text { state, .. } => tag(state, backend),
        Part::ToolCall(call) => tag(&mut call.state, backend),
        Part::Thinking(t) => tag(&mut t.state, backend),
        Part::ToolResult(r) => r.content.iter_mut().for_each(|p| tag_part(p, backend)),
        Part::Image(_) => {}
    }
}

/// Whether `state` belongs to a backend other than `backend`.
fn foreign(state: &Option<Opaque>, backend: &str) -> bool {
    state
        .as_ref()
        .and_then(|s| s.backend.as_deref())
        .is_some_and(|b| b != backend)
}

/// Drops `part`'s state when it is another backend's; `false` when the part itself should
/// go (a thinking part that was only that state: a redacted block, or one with no text).
fn keep_part(part: &mut Part, backend: &str) -> bool {
    match part {
        Part::Text { state, .. } => {
            if foreign(state, backend) {
                *state = None;
            }
        }
        Part::ToolCall(call) => {
            if foreign(&call.state, backend) {
                call.state = None;
            }
        }
        Part::Thinking(t) => {
            if foreign(&t.state, backend) {
                t.state = None;
                if t.redacted || t.text.is_empty() {
                    return false;
                }
            }
        }
        Part::ToolResult(r) => r.content.retain_mut(|p| keep_part(p, backend)),
        Part::Image(_) => {}
    }
    true
}

impl Reply {
    /// Tags every piece of opaque state in the reply as issued by `backend`.
    pub fn tag_state(&mut self, backend: &str) {
        self.content.iter_mut().for_each(|p| tag_part(p, backend));
    }
}

impl Event {
    /// Tags the event's opaque state, if it carries any, as issued by `backend`.
    pub fn tag_state(&mut self, backend: &str) {
        match self {
            Event::TextState { state, .. } | Event::ThinkingState { state, .. }
                if state.backend.is_none() =>
            {
                state.backend = Some(backend.to_string());
            }
            Event::ToolCallStart { state, .. } => tag(state, backend),
            _ => {}
        }
    }
}

impl Request {
    /// Removes every piece of state another backend issued: it would be refused here.
    pub fn drop_state_not_from(&mut self, backend: &str) {
        for message in &mut self.messages {
            message.content.retain_mut(|p| keep_part(p, backend));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, Message, Role, Thinking, ToolCall, ToolKind};

    fn signed(backend: &str) -> Option<Opaque> {
        Some(Opaque::new(Dialect::Gemini, "c2ln").from_backend(backend))
    }

    #[test]
    fn state_goes_back_only_to_its_backend() {
        let mut request = Request::user("hi");
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![
                Part::Thinking(Thinking {
                    text: String::new(),
                    state: signed("vertex"),
                    redacted: false,
                    id: None,
                }),
                Part::Thinking(Thinking {
                    text: "kept text".into(),
                    state: signed("vertex"),
                    redacted: false,
                    id: None,
                }),
                Part::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "f".into(),
                    arguments: "{}".into(),
                    kind: ToolKind::Function,
                    namespace: None,
                    state: signed("gemini"),
                }),
                Part::Text {
                    text: "untagged".into(),
                    state: Some(Opaque::new(Dialect::Gemini, "dW50YWdnZWQ=")),
                },
            ],
        });
        let mut for_gemini = request.clone();
        for_gemini.drop_state_not_from("gemini");
        let parts = &for_gemini.messages[1].content;
        assert_eq!(parts.len(), 3, "{parts:?}");
        assert!(
            matches!(&parts[0], Part::Thinking(t) if t.text == "kept text" && t.state.is_none())
        );
        assert!(matches!(&parts[1], Part::ToolCall(c) if c.state == signed("gemini")));
        assert!(matches!(&parts[2], Part::Text { state: Some(_), .. }));
        // Dropping is idempotent: nothing foreign is left to drop.
        let mut again = for_gemini.clone();
        again.drop_state_not_from("gemini");
        assert_eq!(again, for_gemini);
    }

    #[test]
    fn tags_do_not_overwrite() {
        let mut event = Event::ThinkingState {
            part: 0,
            state: Opaque::new(Dialect::Messages, "sig").from_backend("first"),
            redacted: false,
            id: None,
        };
        event.tag_state("second");
        let Event::ThinkingState { state, .. } = event else {
            unreachable!()
        };
        assert_eq!(state.backend.as_deref(), Some("first"));
    }
}

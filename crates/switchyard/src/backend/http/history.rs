//! A history fitted to the rules of the backend it goes to, when it carries less state
//! than that backend demands (history from a chat client, from another provider, or
//! written by hand): the turn goes up in the form the provider documents for that case
//! rather than being refused.
//!
//! - **Gemini 3** refuses a `functionCall` without its `thoughtSignature`; for a call that
//!   has none (it was not made by this backend), Google documents the placeholder
//!   signature [`GEMINI_SKIP_SIGNATURE`], which skips the check.
//! - **Anthropic**, with thinking on, refuses a last assistant turn holding tool calls that
//!   does not start with a signed thinking block, and says to turn thinking off to avoid
//!   the requirement: such a request goes up without thinking.

use switchyard_wire::{Dialect, Opaque, Part, Request, Role};

/// The signature Google documents for function calls it did not sign (history from other
/// models, or edited): "skip_thought_signature_validator".
pub(crate) const GEMINI_SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// Fits `request` for `model` on a backend speaking `dialect`.
pub(crate) fn fit(request: &mut Request, dialect: Dialect, model: &str) {
    match dialect {
        Dialect::Gemini if checks_signatures(model) => sign_unsigned_calls(request),
        Dialect::Messages if request.reasoning.is_some() && !last_tool_turn_is_signed(request) => {
            tracing::debug!(
                "the last assistant turn's tool calls have no signed thinking block before them: thinking is off for this request, as Anthropic requires"
            );
            request.reasoning = None;
        }
        _ => {}
    }
}

/// Models before Gemini 3 do not check signatures (and have no use for the placeholder).
fn checks_signatures(model: &str) -> bool {
    let model = model.rsplit('/').next().unwrap_or(model);
    !(model.starts_with("gemini-1") || model.starts_with("gemini-2"))
}

/// The first call of each model turn carries a signature; Gemini asks no more.
fn sign_unsigned_calls(request: &mut Request) {
    for message in request
        .messages
        .iter_mut()
        .filter(|m| m.role == Role::Assistant)
    {
        let first_call = message.content.iter_mut().find_map(|p| match p {
            Part::ToolCall(call) => Some(call),
            _ => None,
        });
        if let Some(call) = first_call {
            if Opaque::for_dialect(&call.state, Dialect::Gemini).is_none() {
                call.state = Some(Opaque::new(Dialect::Gemini, GEMINI_SKIP_SIGNATURE));
            }
        }
    }
}

/// Whether the last assistant turn, when it calls tools, starts with a thinking block
/// Anthropic signed (unsigned thinking is not sent, so it does not count).
fn last_tool_turn_is_signed(request: &Request) -> bool {
    let Some(last) = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
    else {
        return true;
    };
    if !last.content.iter().any(|p| matches!(p, Part::ToolCall(_))) {
        return true;
    }
    let first_sent = last.content.iter().find(|p| match p {
        Part::Thinking(t) => Opaque::for_dialect(&t.state, Dialect::Messages).is_some(),
        _ => true,
    });
    matches!(first_sent, Some(Part::Thinking(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_wire::{Message, Reasoning, Thinking, ToolCall, ToolKind};

    fn call(state: Option<Opaque>) -> Part {
        Part::ToolCall(ToolCall {
            id: "c".into(),
            name: "f".into(),
            arguments: "{}".into(),
            kind: ToolKind::Function,
            namespace: None,
            state,
        })
    }

    fn history(parts: Vec<Part>) -> Request {
        let mut request = Request::user("q");
        request.reasoning = Some(Reasoning {
            effort: Some("high".into()),
            ..Reasoning::default()
        });
        request.messages.push(Message {
            role: Role::Assistant,
            content: parts,
        });
        request
    }

    #[test]
    fn gemini_3_gets_the_placeholder_only_where_a_signature_is_missing() {
        let signed = Some(Opaque::new(Dialect::Gemini, "c2ln"));
        let mut request = history(vec![call(None), call(None)]);
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![call(signed.clone())],
        });
        fit(&mut request, Dialect::Gemini, "gemini-3-pro-preview");
        let states: Vec<_> = request
            .messages
            .iter()
            .flat_map(|m| m.content.iter())
            .filter_map(|p| match p {
                Part::ToolCall(c) => Some(c.state.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            states,
            vec![
                Some(Opaque::new(Dialect::Gemini, GEMINI_SKIP_SIGNATURE)),
                None,
                signed
            ]
        );
        let mut old = history(vec![call(None)]);
        fit(&mut old, Dialect::Gemini, "gemini-2.5-flash");
        assert!(matches!(&old.messages[1].content[0], Part::ToolCall(c) if c.state.is_none()));
    }

    #[test]
    fn anthropic_thinking_goes_off_only_for_an_unsigned_tool_turn() {
        let signed = Part::Thinking(Thinking {
            text: "t".into(),
            state: Some(Opaque::new(Dialect::Messages, "sig")),
            redacted: false,
            id: None,
        });
        let unsigned = Part::Thinking(Thinking {
            text: "t".into(),
            state: None,
            redacted: false,
            id: None,
        });
        let mut ok = history(vec![unsigned.clone(), signed, call(None)]);
        fit(&mut ok, Dialect::Messages, "claude");
        assert!(ok.reasoning.is_some());
        let mut bad = history(vec![unsigned, call(None)]);
        fit(&mut bad, Dialect::Messages, "claude");
        assert!(bad.reasoning.is_none());
        let mut no_tools = history(vec![Part::text("hi")]);
        fit(&mut no_tools, Dialect::Messages, "claude");
        assert!(no_tools.reasoning.is_some());
    }
}

//! The rule every success is held to before it is handed over as a reply, whole or at a
//! stream's end: apart from the handle (`llm.rs`) and the stream (`reply_stream.rs`),
//! which both apply it, so neither calls back into the other.

use crate::error::{Error, Result};
use switchyard_wire::Reply;

/// A success that is not a reply: no text and no tool calls (unless the output limit cut
/// it short while thinking), or no token usage ([`switchyard_wire::shape::reply_problem`],
/// the rule the gateway's pass-through applies to the bytes it relays).
pub fn check_reply(backend: &str, reply: &Reply) -> Result<()> {
    check(backend, reply, true)
}

/// [`check_reply`], or when `usage_required` is false (the backend does not always know
/// its usage: [`Backend::reports_usage`](crate::Backend::reports_usage)) the answer rule
/// alone: a reply without usage is then one whose usage is unknown.
pub(crate) fn check(backend: &str, reply: &Reply, usage_required: bool) -> Result<()> {
    let problem = if usage_required {
        switchyard_wire::shape::reply_problem(reply)
    } else {
        switchyard_wire::shape::answer_problem(reply)
    };
    match problem {
        None => Ok(()),
        Some(reason) => Err(Error::ProviderReplyMalformed {
            backend: backend.to_string(),
            reason: reason.to_string(),
            attempts: 1,
            body: reply.raw.clone(),
        }),
    }
}

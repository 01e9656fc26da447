//! The rule every success is held to before it is handed over as a reply, whole or at a
//! stream's end: apart from the handle (`llm.rs`) and the stream (`reply_stream.rs`),
//! which both apply it, so neither calls back into the other.

use crate::error::{Error, Result};
use switchyard_wire::Reply;

/// A success that is not a reply: no text and no tool calls (unless the output limit cut
/// it short while thinking), or no token usage ([`switchyard_wire::shape::reply_problem`],
/// the rule the gateway's pass-through applies to the bytes it relays).
pub fn check_reply(backend: &str, reply: &Reply) -> Result<()> {
    match switchyard_wire::shape::reply_problem(reply) {
        None => Ok(()),
        Some(reason) => Err(Error::ProviderReplyMalformed {
            backend: backend.to_string(),
            reason: reason.to_string(),
            attempts: 1,
            body: reply.raw.clone(),
        }),
    }
}

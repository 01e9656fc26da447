//! What a member tried is sent and what is kept of the call: the plan a request's prior
//! state makes for one member ([`Plan`]), and the turn kept once the reply is whole
//! ([`Keeping`]).

use super::capture::Capture;
use super::own;
use super::turn::{Kept, Kind};
use bytes::Bytes;

/// What the member tried is sent, and what is kept of the call.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// The body to send instead of the client's (its history expanded); `None`: the
    /// client's, as it came.
    pub body: Option<Bytes>,
    /// The turn to keep once the reply is whole.
    pub keeping: Option<Keeping>,
}

/// Where the call goes: what the plan depends on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Aim<'a> {
    /// The member's backend.
    pub backend: &'a str,
    /// The call passes through (the member speaks the client's dialect).
    pub passes: bool,
    /// The member keeps this dialect's state itself (the first-party OpenAI or Anthropic
    /// API), so a request passed through to it may name its own ids.
    pub keeps_state: bool,
}

/// A turn to keep once its reply is whole.
#[derive(Debug)]
pub(crate) struct Keeping {
    pub kind: Kind,
    pub owner: String,
    /// The turn before it.
    pub previous: Option<String>,
    /// The backend that keeps it too (see [`super::Turn::upstream`]).
    pub upstream: Option<String>,
    /// The reply, read from the bytes that go out.
    pub capture: Capture,
    /// What the request added.
    pub made: Made,
}

/// What a request added to its conversation, read from its body when it is kept.
#[derive(Debug)]
pub(crate) enum Made {
    /// A Responses request: its input, with the item references the gateway held.
    Responses(own::Response),
    /// A thread's request: its messages, with the `system` and `tools` it inherits.
    Thread(own::Thread),
}

impl Keeping {
    /// The turn to keep, when the reply arrived whole and names its id.
    pub(crate) fn into_kept(self) -> Option<Kept> {
        let reply = self.capture.into_reply()?;
        let id = reply.get("id")?.as_str()?.to_string();
        let mut turn = match self.made {
            Made::Responses(own) => own.turn(&id, reply)?,
            Made::Thread(own) => own.turn(reply)?,
        };
        turn.previous = self.previous;
        turn.upstream = self.upstream;
        Some(Kept {
            kind: self.kind,
            owner: self.owner,
            id,
            turn,
        })
    }
}

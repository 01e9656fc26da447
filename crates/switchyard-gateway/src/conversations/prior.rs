//! What a request asks of kept state, loaded once before failover ([`Prior::load`]),
//! and for each member tried, the body to send it and the turn to keep
//! ([`Prior::plan`]).

use super::capture::Capture;
use super::{responses, threads, Conversations, Kept, Kind};
use crate::errors::ApiError;
use crate::raw::RawBody;
use bytes::Bytes;
use switchyard::Dialect;

/// What a request asks of kept state.
#[derive(Debug, Default)]
pub(crate) enum Prior {
    /// Nothing: no stateful field, nothing to keep.
    #[default]
    None,
    /// A Responses request that names kept state or asks to be kept.
    Responses(responses::Asked),
    /// A Messages request with `thread`.
    Thread(threads::Asked),
}

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

impl Prior {
    /// Reads the request's stateful fields and loads what they name (`conversations`:
    /// `None` when the gateway keeps none). Malformed fields are refused here.
    pub(crate) async fn load(
        conversations: Option<&Conversations>,
        owner: &str,
        dialect: Dialect,
        raw: &RawBody<'_>,
        bytes: &Bytes,
        max_bytes: usize,
    ) -> Result<Prior, ApiError> {
        Ok(match dialect {
            Dialect::Responses => {
                match responses::Asked::load(conversations, owner, raw, bytes, max_bytes).await? {
                    Some(asked) => Prior::Responses(asked),
                    None => Prior::None,
                }
            }
            Dialect::Messages => {
                match threads::Asked::load(conversations, owner, raw, max_bytes).await? {
                    Some(asked) => Prior::Thread(asked),
                    None => Prior::None,
                }
            }
            _ => Prior::None,
        })
    }

    /// The kind of state asked (a request with none counts as a response's).
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Prior::Thread(_) => Kind::Thread,
            _ => Kind::Response,
        }
    }

    /// The body for the member `aim` names, and the turn to keep; or the refusal of a
    /// reference that neither the gateway nor that member holds.
    pub(crate) fn plan(&self, bytes: &Bytes, aim: Aim<'_>) -> Result<Plan, ApiError> {
        match self {
            Prior::None => Ok(Plan::default()),
            Prior::Responses(asked) => asked.plan(bytes, aim),
            Prior::Thread(asked) => asked.plan(bytes, aim),
        }
    }
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
    Responses(responses::Own),
    /// A thread's request: its messages, with the `system` and `tools` it inherits.
    Thread(threads::Own),
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

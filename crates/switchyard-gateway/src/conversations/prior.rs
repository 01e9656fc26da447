//! What a request asks of kept state, loaded once before failover ([`Prior::load`]),
//! and for each member tried, the body to send it and the turn to keep
//! ([`Prior::plan`]).

use super::plan::{Aim, Plan};
use super::turn::Kind;
use super::{responses, threads, Conversations};
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

    /// The bytes of the history the gateway holds for the request: a request naming it
    /// goes up that much larger (what its budget hold and the context check count).
    pub(crate) fn history_bytes(&self) -> usize {
        match self {
            Prior::None => 0,
            Prior::Responses(asked) => asked.history_bytes(),
            Prior::Thread(asked) => asked.history_bytes(),
        }
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

//! A history as the chain of its kept turns: from the turn a request names back through
//! each turn's `previous`, returned oldest first.

use super::turn::{Kind, Turn};
use super::Conversations;
use crate::errors::{ApiError, Category};

/// The most turns one history may chain: far past any agent session's, and a bound on
/// the lookups one request may cause.
pub(crate) const MOST_TURNS: usize = 10_000;

/// What was found under an id.
#[derive(Debug)]
pub(crate) enum Chain {
    /// Its turns, oldest first (the one named last), and the bytes of their kept JSON.
    Held(Vec<Turn>, usize),
    /// Not held (never kept, expired, deleted, or another key's).
    NotHeld,
}

/// The chain ending at `id`, its kept JSON at most `max_bytes` in all (the bound on a
/// request body: the history is sent as one). A turn before it that is no longer held
/// (expired or deleted) cuts the history there, which is refused rather than sent short.
pub(crate) async fn load(
    conversations: &Conversations,
    kind: Kind,
    owner: &str,
    id: &str,
    max_bytes: usize,
) -> Result<Chain, ApiError> {
    let mut turns = Vec::new();
    let mut bytes = 0usize;
    let mut next = Some(id.to_string());
    while let Some(at) = next {
        if turns.len() == MOST_TURNS {
            return Err(ApiError::new(
                Category::BadRequest,
                format!(
                    "the conversation ending at `{id}` chains more than {MOST_TURNS} turns, the most the gateway expands; start a new one"
                ),
            ));
        }
        let Some((turn, size)) = conversations.get_sized(kind, owner, &at).await? else {
            if turns.is_empty() {
                return Ok(Chain::NotHeld);
            }
            return Err(ApiError::new(
                Category::NotFound,
                format!(
                    "the conversation ending at `{id}` goes back to `{at}`, which the gateway no longer keeps (expired or deleted): its history cannot be sent whole"
                ),
            ));
        };
        bytes = bytes.saturating_add(size);
        if bytes > max_bytes {
            return Err(ApiError::new(
                Category::TooLarge,
                format!(
                    "the conversation ending at `{id}` is more than {max_bytes} bytes kept (listen.max_body_bytes), more than one request may carry; start a new one"
                ),
            ));
        }
        next = turn.previous.clone();
        if next.as_deref() == Some(at.as_str()) {
            // A turn naming itself would loop: its history ends with it.
            next = None;
        }
        turns.push(turn);
    }
    turns.reverse();
    Ok(Chain::Held(turns, bytes))
}

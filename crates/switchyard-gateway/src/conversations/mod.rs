//! Kept conversations: the server-side state of the stateful APIs, kept by the gateway
//! for any backend (docs/gateway.md, *State the gateway keeps*).
//!
//! - OpenAI Responses: a response (`store` unless `false`) is kept with its own input
//!   items and its output items as the client received them; `previous_response_id`
//!   and `{"type": "item_reference"}` items are expanded from what is kept before the
//!   call is translated or forwarded ([`responses`]); `GET`, `…/input_items` and
//!   `DELETE` read and remove it (`endpoints/responses.rs`).
//! - Anthropic message threads (`thread: create | continue`): each reply is kept with
//!   the messages that led to it, and a `continue` expanded to the whole history
//!   ([`threads`]).
//!
//! Each kept turn holds only what its own request added and its reply ([`Turn`]), with
//! the id of the turn before it: a history is the chain of its turns ([`chain`]), so a
//! long agent session costs its size once, not once per turn. Turns are scoped to the
//! client key that made them (another key's id is a 404, as if it did not exist), expire
//! after `conversations.ttl`, and live in the gateway's store: `conversations.sqlite`
//! in the data directory ([`local`]), or with a PostgreSQL store the database replicas
//! share (`store/pg/conversations.rs`). A turn is written before the last byte of its
//! reply goes out ([`capture`], the meter's close), so the client's next request finds
//! it on any replica.

pub(crate) mod capture;
pub(crate) mod chain;
pub(crate) mod config;
pub(crate) mod local;
pub(crate) mod own;
pub(crate) mod plan;
pub(crate) mod prior;
pub(crate) mod responses;
pub(crate) mod threads;
pub(crate) mod turn;

pub(crate) use turn::{Kept, Kind, Row, Turn};

use crate::errors::{ApiError, Category};
use crate::store::pg::SharedStore;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where turns are kept.
enum Backing {
    /// `conversations.sqlite` in the data directory.
    Local(Arc<local::Local>),
    /// The PostgreSQL store replicas share.
    Shared(Arc<SharedStore>),
}

/// The gateway's kept conversations.
pub(crate) struct Conversations {
    backing: Backing,
    ttl: Duration,
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Conversations {
    /// Turns kept in the data directory's `conversations.sqlite`.
    pub(crate) fn local(local: local::Local, ttl: Duration) -> Self {
        Conversations {
            backing: Backing::Local(Arc::new(local)),
            ttl,
        }
    }

    /// Turns kept in the PostgreSQL store replicas share.
    pub(crate) fn shared(pg: Arc<SharedStore>, ttl: Duration) -> Self {
        Conversations {
            backing: Backing::Shared(pg),
            ttl,
        }
    }

    /// The turn of `id`, when `owner` kept it and it has not expired.
    pub(crate) async fn get(
        &self,
        kind: Kind,
        owner: &str,
        id: &str,
    ) -> Result<Option<Turn>, ApiError> {
        Ok(self.get_sized(kind, owner, id).await?.map(|(turn, _)| turn))
    }

    /// The turn of `id` and the bytes of its JSON, when `owner` kept it and it has not
    /// expired.
    pub(crate) async fn get_sized(
        &self,
        kind: Kind,
        owner: &str,
        id: &str,
    ) -> Result<Option<(Turn, usize)>, ApiError> {
        let now = now_secs();
        let text = match &self.backing {
            Backing::Local(local) => {
                let (local, owner, id) = (local.clone(), owner.to_string(), id.to_string());
                blocking(move || local.get(kind, &owner, &id, now)).await?
            }
            Backing::Shared(pg) => pg.conversation_get(kind.as_str(), owner, id, now).await?,
        };
        text.map(|t| Ok((read_turn(&t)?, t.len()))).transpose()
    }

    /// The item of `item_id` (Responses) in a turn `owner` kept, with the backend that
    /// keeps that turn too (see [`Turn::upstream`]).
    pub(crate) async fn item(
        &self,
        owner: &str,
        item_id: &str,
    ) -> Result<Option<(Value, Option<String>)>, ApiError> {
        let now = now_secs();
        let text = match &self.backing {
            Backing::Local(local) => {
                let (local, owner, id) = (local.clone(), owner.to_string(), item_id.to_string());
                blocking(move || local.item(&owner, &id, now)).await?
            }
            Backing::Shared(pg) => pg.conversation_item(owner, item_id, now).await?,
        };
        let Some(text) = text else { return Ok(None) };
        let turn = read_turn(&text)?;
        Ok(turn
            .item(item_id)
            .cloned()
            .map(|item| (item, turn.upstream)))
    }

    /// Keeps a turn until the ttl passes.
    pub(crate) async fn put(&self, kept: Kept) -> Result<(), String> {
        let now = now_secs();
        let expires = now.saturating_add(self.ttl.as_secs().min(i64::MAX as u64) as i64);
        let mut text = serde_json::to_string(&kept.turn).map_err(|e| e.to_string())?;
        // A key a client sent, or a provider echoed back, is kept no more than recorded.
        switchyard::internal::redact::redact_string(&mut text);
        let items: Vec<String> = match kept.kind {
            Kind::Response => kept.turn.item_ids().map(str::to_string).collect(),
            Kind::Thread => Vec::new(),
        };
        let row = Row {
            kind: kept.kind.as_str(),
            owner: kept.owner,
            id: kept.id,
            created: now,
            expires,
            turn: text,
            items,
        };
        match &self.backing {
            Backing::Local(local) => {
                let local = local.clone();
                tokio::task::spawn_blocking(move || local.put(&row))
                    .await
                    .map_err(|e| e.to_string())?
            }
            Backing::Shared(pg) => pg.conversation_put(&row).await,
        }
    }

    /// Forgets the turn of `id` that `owner` kept; whether there was one.
    pub(crate) async fn delete(&self, kind: Kind, owner: &str, id: &str) -> Result<bool, ApiError> {
        let now = now_secs();
        match &self.backing {
            Backing::Local(local) => {
                let (local, owner, id) = (local.clone(), owner.to_string(), id.to_string());
                blocking(move || local.delete(kind, &owner, &id, now)).await
            }
            Backing::Shared(pg) => pg.conversation_delete(kind.as_str(), owner, id, now).await,
        }
    }
}

fn read_turn(text: &str) -> Result<Turn, ApiError> {
    serde_json::from_str(text).map_err(|e| {
        ApiError::new(
            Category::Internal,
            format!("a kept conversation turn could not be read: {e}"),
        )
    })
}

/// Runs a SQLite step off the runtime's threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(store_error(&e)),
        Err(e) => Err(store_error(&e.to_string())),
    }
}

/// The store of kept conversations failed: the call cannot be served as asked.
pub(crate) fn store_error(e: &str) -> ApiError {
    ApiError::new(
        Category::Internal,
        format!("the gateway's kept conversations could not be read or written: {e}"),
    )
}

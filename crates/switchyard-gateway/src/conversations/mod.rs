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
pub(crate) mod prior;
pub(crate) mod responses;
pub(crate) mod threads;

pub use config::ConversationsConfig;

use crate::errors::{ApiError, Category};
use crate::store::pg::SharedStore;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What kind of state a turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An OpenAI Responses response, under its `resp_…` id.
    Response,
    /// An Anthropic thread's reply, under its `msg_…` id.
    Thread,
}

impl Kind {
    /// The name stored and shown in `/metrics`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Response => "response",
            Kind::Thread => "thread",
        }
    }
}

/// One kept turn: what its request added to the conversation and its reply.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct Turn {
    /// The turn before it (`previous_response_id`, `thread.previous_message_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// The backend that keeps this turn itself (the request passed through to it with
    /// its state fields): a later turn passed through to the same backend sends the id
    /// as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// The items (Responses, each with an `id`) or messages (threads) its request added.
    pub input: Vec<Value>,
    /// Its output items (Responses) or its assistant message (threads).
    pub output: Vec<Value>,
    /// The response object as a non-streamed call returns it (Responses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// The request's `system` (threads; a `continue` may leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Value>,
    /// The request's `tools` (threads; a `continue` may leave them out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
}

impl Turn {
    /// The ids of its items (Responses), which `item_reference` may name.
    pub(crate) fn item_ids(&self) -> impl Iterator<Item = &str> {
        self.input
            .iter()
            .chain(&self.output)
            .filter_map(|item| item.get("id").and_then(Value::as_str))
    }

    /// The item of this id among its items.
    pub(crate) fn item(&self, id: &str) -> Option<&Value> {
        self.input
            .iter()
            .chain(&self.output)
            .find(|item| item.get("id").and_then(Value::as_str) == Some(id))
    }
}

/// A turn to keep, under its id and its owner's name.
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    pub kind: Kind,
    /// The client key's name (`""` without keys).
    pub owner: String,
    pub id: String,
    pub turn: Turn,
}

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

/// The owner of what a client keeps: its key's name, or `""` when the gateway asks no key.
pub(crate) fn owner(key: Option<&crate::account::keys::Key>) -> &str {
    key.map_or("", |k| k.name.as_str())
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
        let text = serde_json::to_string(&kept.turn).map_err(|e| e.to_string())?;
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

/// A turn as a backing stores it: its columns, and the ids of its items.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// `response` or `thread`.
    pub kind: &'static str,
    /// The client key's name.
    pub owner: String,
    /// The response's or the reply's id.
    pub id: String,
    /// When it was kept, in seconds since the epoch.
    pub created: i64,
    /// When it expires, in seconds since the epoch.
    pub expires: i64,
    /// The turn as JSON.
    pub turn: String,
    /// The ids of its items.
    pub items: Vec<String>,
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

//! The data of a kept conversation: what kind of state a turn is, the turn itself, a turn
//! to keep under its id and owner, and a turn as a backing stores it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

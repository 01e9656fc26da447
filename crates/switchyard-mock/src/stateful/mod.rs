//! The state real providers keep between calls, kept per mock server so pass-through tests
//! meet a server that behaves like the real one:
//!
//! - OpenAI Responses ([`responses`], [`responses_api`]): `store` (default true) keeps a
//!   response, its input items and its output items; `previous_response_id` and
//!   `{"type": "item_reference"}` input items are expanded from what is kept;
//!   `GET /v1/responses/{id}`, `GET …/input_items` and `DELETE …` read and remove it.
//! - Anthropic message threads ([`threads`], beta `message-threads-2026-08-12`):
//!   `thread: {"type": "create"}` keeps the conversation under the reply's id, and
//!   `thread: {"type": "continue", "previous_message_id": …}` resumes it.
//!
//! A reference the server does not hold is refused in the provider's own 404 shape. The
//! request is recorded as it arrived ([`crate::recorder`]); the expanded one is what the
//! behaviour answers, so an `echo` or `agent` reply shows the whole history. Both kinds are
//! bounded by [`crate::MockConfig::keep_state`], the oldest forgotten first.

mod bounded;
pub(crate) mod responses;
pub(crate) mod responses_api;
pub(crate) mod threads;

use bounded::Bounded;
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard};
use switchyard_wire::Reply;

/// How many responses, and how many thread replies, a server keeps unless configured.
pub const DEFAULT_KEEP_STATE: usize = 1_000;

/// The reply a call built, attached to its HTTP response when the client receives it
/// whole (no cut, no error mid-stream), for a stateful route to store.
#[derive(Debug, Clone)]
pub(crate) struct BuiltReply(pub Arc<Reply>);

/// One stored Responses response.
#[derive(Debug)]
pub(crate) struct StoredResponse {
    /// The response object as a non-streamed `POST /v1/responses` returns it.
    pub object: Value,
    /// The items used to generate it, oldest first: a previous response's input and
    /// output items, then its own input (item references resolved), each with an `id`.
    pub input: Vec<Value>,
    /// Its output items.
    pub output: Vec<Value>,
}

impl StoredResponse {
    /// The item with this id among its input and output items.
    fn item(&self, id: &str) -> Option<&Value> {
        self.input
            .iter()
            .chain(&self.output)
            .find(|item| item.get("id").and_then(Value::as_str) == Some(id))
    }
}

/// One Anthropic thread, as it stands after one reply.
#[derive(Debug)]
pub(crate) struct StoredThread {
    /// The `system` of the request that made it (a `continue` may leave it out).
    pub system: Option<Value>,
    /// The `tools` of the request that made it (a `continue` may leave them out).
    pub tools: Option<Value>,
    /// The whole conversation, the reply last.
    pub messages: Vec<Value>,
}

/// The stored responses and threads of one server.
#[derive(Debug)]
pub(crate) struct StateStore {
    responses: Mutex<Bounded<Arc<StoredResponse>>>,
    threads: Mutex<Bounded<Arc<StoredThread>>>,
}

impl StateStore {
    /// A store keeping at most `keep` responses and `keep` thread replies.
    pub(crate) fn keeping(keep: usize) -> Self {
        StateStore {
            responses: Mutex::new(Bounded::keeping(keep)),
            threads: Mutex::new(Bounded::keeping(keep)),
        }
    }

    /// The response with this id.
    pub(crate) fn response(&self, id: &str) -> Option<Arc<StoredResponse>> {
        lock(&self.responses).get(id).cloned()
    }

    /// Keeps a response under its id (forgetting the oldest past the bound).
    pub(crate) fn keep_response(&self, id: String, response: StoredResponse) {
        lock(&self.responses).insert(id, Arc::new(response));
    }

    /// Forgets a response; whether it was held.
    pub(crate) fn delete_response(&self, id: &str) -> bool {
        lock(&self.responses).remove(id)
    }

    /// The stored item with this id, in any response held.
    pub(crate) fn item(&self, id: &str) -> Option<Value> {
        lock(&self.responses)
            .values()
            .find_map(|r| r.item(id).cloned())
    }

    /// The thread as it stood after the reply with this id.
    pub(crate) fn thread(&self, message_id: &str) -> Option<Arc<StoredThread>> {
        lock(&self.threads).get(message_id).cloned()
    }

    /// Keeps a thread under the id of its latest reply.
    pub(crate) fn keep_thread(&self, message_id: String, thread: StoredThread) {
        lock(&self.threads).insert(message_id, Arc::new(thread));
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves the store usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The mock's request id for an answer given before a call is served (`req_mock_<n>`).
pub(crate) fn request_id(shared: &crate::state::Shared) -> String {
    format!("req_mock_{}", shared.next_number())
}

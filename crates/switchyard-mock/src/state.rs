//! State shared by every request: configuration, recorded requests, stored responses and
//! threads, attempt counters, the response-id counter and the shutdown signal.

use crate::recorder::Recorder;
use crate::scenario::MockConfig;
use crate::stateful::StateStore;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use switchyard_wire::{Request, Role};
use tokio::sync::watch;

/// The most attempt counters kept (one per model name and conversation seen).
pub(crate) const MAX_COUNTERS: usize = 100_000;

/// Shared server state.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Scenarios and settings.
    pub config: MockConfig,
    /// Requests received.
    pub recorder: Recorder,
    /// Stored Responses responses and Anthropic message threads.
    pub state: StateStore,
    /// Attempts per (model name, digest).
    counters: Mutex<HashMap<(String, u64), u64>>,
    /// The next response number.
    next_id: AtomicU64,
    /// Becomes `true` when the server stops.
    pub shutdown: watch::Receiver<bool>,
}

impl Shared {
    /// New state.
    pub(crate) fn new(config: MockConfig, shutdown: watch::Receiver<bool>) -> Self {
        Shared {
            recorder: Recorder::keeping(config.keep_requests),
            state: StateStore::keeping(config.keep_state),
            config,
            counters: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            shutdown,
        }
    }

    /// Counts one attempt for `(name, digest)` and returns how many came before it.
    /// At most [`MAX_COUNTERS`] are kept: a new one past that forgets an arbitrary old one
    /// (a `-then-ok` conversation that old starts over; a mock flooded with distinct
    /// prompts stays bounded).
    pub(crate) fn bump(&self, name: &str, digest: u64) -> u64 {
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        if counters.len() >= MAX_COUNTERS && !counters.contains_key(&(name.to_string(), digest)) {
            if let Some(old) = counters.keys().next().cloned() {
                counters.remove(&old);
            }
        }
        let n = counters.entry((name.to_string(), digest)).or_insert(0);
        *n += 1;
        *n - 1
    }

    /// Forgets every counter.
    pub(crate) fn reset_counters(&self) {
        self.counters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// The next response number (1, 2, 3…).
    pub(crate) fn next_number(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// A stable 64-bit digest (FNV-1a; the same in every process and version).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The digest of some bytes.
pub(crate) fn digest_bytes(bytes: &[u8]) -> u64 {
    let mut h = Fnv::default();
    h.write(bytes);
    h.finish()
}

/// The digest of a whole prompt: its messages and tools.
pub(crate) fn prompt_digest(request: &Request) -> u64 {
    let mut h = Fnv::default();
    for m in &request.messages {
        format!("{:?}", m.role).hash(&mut h);
        h.write(
            serde_json::to_string(&m.content)
                .unwrap_or_default()
                .as_bytes(),
        );
    }
    for t in &request.tools {
        h.write(t.name.as_bytes());
    }
    h.finish()
}

/// The digest of a conversation's identity: its system prompt and first user message,
/// which stay the same as an agent's turns add messages.
pub(crate) fn conversation_digest(request: &Request) -> u64 {
    let mut h = Fnv::default();
    for m in &request.messages {
        match m.role {
            Role::System | Role::Developer => h.write(m.joined_text().as_bytes()),
            Role::User => {
                h.write(b"\0user\0");
                h.write(m.joined_text().as_bytes());
                break;
            }
            _ => {}
        }
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_wire::{Message, Role};

    #[test]
    fn conversation_digest_survives_new_turns() {
        let a = Request::user("plan a trip");
        let mut b = a.clone();
        b.messages.push(Message::text(Role::Assistant, "ok"));
        b.messages.push(Message::text(Role::User, "more"));
        assert_eq!(conversation_digest(&a), conversation_digest(&b));
        assert_ne!(prompt_digest(&a), prompt_digest(&b));
        assert_ne!(
            conversation_digest(&a),
            conversation_digest(&Request::user("other"))
        );
    }

    #[test]
    fn counters_count_per_key() {
        let (_tx, rx) = watch::channel(false);
        let s = Shared::new(MockConfig::default(), rx);
        assert_eq!(s.bump("a", 1), 0);
        assert_eq!(s.bump("a", 1), 1);
        assert_eq!(s.bump("a", 2), 0);
        s.reset_counters();
        assert_eq!(s.bump("a", 1), 0);
    }
}

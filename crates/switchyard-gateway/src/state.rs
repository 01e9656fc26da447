//! What every request handler shares: the upstreams, keys, meters, store and limits. Its
//! own file so the handlers depend on it and not on the server that builds it.

use crate::keys::Keys;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::upstream::Upstreams;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// What every request handler shares.
pub struct State {
    /// Backends, the `models:` table and the pooled clients.
    pub upstreams: Upstreams,
    /// Client keys (empty: none asked).
    pub keys: Keys,
    /// Counters and the recorder hook.
    pub metrics: Metrics,
    /// The largest request body accepted.
    pub max_body_bytes: usize,
    /// When the gateway started.
    pub started: Instant,
    /// Where every call is recorded (`None`: no data directory).
    pub store: Option<Store>,
    /// The PostgreSQL store replicas share: records shipped, budgets and rates held
    /// across them (`None`: this gateway keeps everything to itself).
    pub pg: Option<std::sync::Arc<crate::pg::SharedStore>>,
    /// The counts and sampled trace of calls refused before any upstream call.
    pub refusals: crate::refusals::Refusals,
    /// How long a request body may take to arrive (`listen.body_timeout_seconds`).
    pub body_timeout: Duration,
    /// How deep a request body may nest arrays and objects (`listen.max_json_depth`).
    pub max_json_depth: usize,
    /// How many bytes of a reply a call's record keeps (`limits.max_recorded_reply_bytes`).
    pub max_recorded_reply_bytes: usize,
    /// Set once the drain deadline passed, before the calls still in flight are aborted:
    /// their meters record them as `cancelled` rather than as clients that left.
    pub drain_expired: AtomicBool,
    /// What envelopes of opaque state are signed with.
    pub state_key: crate::envelope::StateKey,
    /// The response cache's settings (`cache:`).
    pub cache: crate::cache::CacheConfig,
}

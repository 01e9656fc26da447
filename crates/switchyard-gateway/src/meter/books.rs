//! What every call's meter closes into: the metrics, the trace of refusals, the store
//! (and the PostgreSQL store replicas share), and the upstreams whose targets a call
//! that succeeded confirms. Shared by every call; the meter holds nothing else of the
//! gateway's.

use crate::call::upstream::Upstreams;
use crate::meter::metrics::Metrics;
use crate::meter::refused_calls::Refusals;
use crate::store::pg::SharedStore;
use crate::store::Store;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// What every call's meter closes into.
pub(crate) struct Books {
    /// Counters and the recorder hook.
    pub metrics: Metrics,
    /// The counts and sampled trace of calls refused before any upstream call.
    pub refusals: Refusals,
    /// Where every call is recorded (`None`: no data directory).
    pub store: Option<Store>,
    /// The PostgreSQL store replicas share: records shipped, budgets and rates held
    /// across them (`None`: this gateway keeps everything to itself).
    pub pg: Option<Arc<SharedStore>>,
    /// The stateful APIs' state kept for clients (`None`: no store, or
    /// `conversations: off`): a call that asked to be kept is, as it closes.
    pub conversations: Option<Arc<crate::conversations::Conversations>>,
    /// The upstreams: a call that succeeded keeps its target for the next calls.
    pub upstreams: Arc<Upstreams>,
    /// How many bytes of a reply a call's record keeps (`limits.max_recorded_reply_bytes`).
    pub max_recorded_reply_bytes: usize,
    /// Set once the drain deadline passed, before the calls still in flight are aborted:
    /// their meters record them as `cancelled` rather than as clients that left.
    pub drain_expired: AtomicBool,
}

//! What every request handler shares: the upstreams, the client keys, what calls are
//! metered into, and the bounds of a request body. Its own file so the handlers depend
//! on it and not on the server that builds it; each part of a call takes only the piece
//! it needs (the meter its [`Books`], a body read its [`BodyLimits`]).

use crate::account::keys::Keys;
use crate::call::request_body::BodyLimits;
use crate::call::translate::envelope::StateKey;
use crate::call::upstream::Upstreams;
use crate::meter::Books;
use std::sync::Arc;
use std::time::Instant;

/// What every request handler shares.
pub(crate) struct Shared {
    /// Backends, the `models:` table, the routes and the pooled clients.
    pub upstreams: Arc<Upstreams>,
    /// Client keys (empty: none asked).
    pub keys: Keys,
    /// What every call is metered into: metrics, store, the shared store.
    pub books: Arc<Books>,
    /// How large, slow and deep a request body may be.
    pub body: BodyLimits,
    /// When the gateway started.
    pub started: Instant,
    /// What envelopes of a backend's opaque state are signed with.
    pub state_key: StateKey,
}

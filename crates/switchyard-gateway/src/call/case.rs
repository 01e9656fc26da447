//! What differs between the kinds of call the pipeline serves — a model call (passed
//! through or translated) and an embedding — as one trait: how a member's target is
//! built, what it may cost, how the cache answers it, and the upstream call itself.
//! Admission (`admission.rs`) and failover (`failover.rs`) are written once over it.

use crate::account::budgets::CallBound;
use crate::call::failure::Failure;
use crate::call::translate::envelope::StateKey;
use crate::call::upstream::Upstreams;
use crate::errors::ApiError;
use crate::meter::{Books, Meter};
use axum::response::Response;
use std::sync::Arc;
use switchyard::Reference;

/// One kind of call.
pub(crate) trait Case {
    /// Where one member's call goes.
    type Target;

    /// The target of `reference` for this call; `retries: false` for a route member
    /// that goes straight to the next member at its first listed failure.
    fn target(
        &self,
        upstreams: &Upstreams,
        reference: &Reference,
        retries: bool,
    ) -> Result<Arc<Self::Target>, ApiError>;

    /// The target's `<backend>/<model id>`.
    fn reference_of(target: &Self::Target) -> &str;

    /// Notes on the meter that the call goes to `target` now.
    fn aim(&self, target: &Arc<Self::Target>, meter: &mut Meter);

    /// The most a call to `target` can cost (`None`: the model has no price).
    fn bound(&self, target: &Self::Target) -> Option<CallBound>;

    /// The prompt's estimated tokens and `target`'s window, when the prompt is larger
    /// than the window: a route skips that member.
    fn too_large_for(&self, _target: &Self::Target) -> Option<(u64, u64)> {
        None
    }

    /// Whether the answer is a stream (a route member stays busy until it is done).
    fn streams(&self) -> bool;

    /// The answer when the call is served without going upstream for a reply (a token
    /// count, asked of `target`), its meter closed.
    async fn answer_aside(
        &self,
        _target: &Arc<Self::Target>,
        _meter: &mut Meter,
    ) -> Option<Result<Response, ApiError>> {
        None
    }

    /// The answer from the cache under `name`, its meter closed; on a miss, the key to
    /// enter the call under is set on the meter.
    async fn cached(
        &self,
        books: &Books,
        state_key: &StateKey,
        name: &str,
        meter: &mut Meter,
    ) -> Option<Response>;

    /// The call made on `target`.
    async fn on(&self, target: &Arc<Self::Target>, meter: &mut Meter) -> Result<Response, Failure>;
}

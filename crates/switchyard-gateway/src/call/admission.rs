//! Admission: the checks every call passes before it goes upstream, defined once for
//! every door and every case (a model call, an embedding, a route of several members):
//! who is calling, what the model names, whether this key may use it, whether the key's
//! rates and the shared store let it in now, its place among the key's calls in flight,
//! and its budget hold. Each takes only what it reads.

use crate::account::budgets::{self, CallBound};
use crate::account::keys::{Key, KeyRefusal, Keys};
use crate::call::upstream::Upstreams;
use crate::errors::{ApiError, Category};
use crate::meter::Meter;
use crate::store::pg::SharedStore;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use std::sync::Arc;
use switchyard::router::Router;
use switchyard::Reference;

/// The client's key, when the gateway has keys (none asked otherwise); noted on the meter.
pub(crate) fn authenticate(
    keys: &Keys,
    parts: &Parts,
    meter: &mut Meter,
) -> Result<Option<Arc<Key>>, ApiError> {
    let key = caller(keys, &parts.headers, parts.uri.query())?;
    if let Some(key) = &key {
        meter.set_key(key);
    }
    Ok(key)
}

/// The key a request carries (`None` when the gateway asks none), or the refusal of a
/// missing or unknown one: what every endpoint that answers a client key asks.
pub(crate) fn caller(
    keys: &Keys,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<Option<Arc<Key>>, ApiError> {
    if keys.is_empty() {
        return Ok(None);
    }
    keys.authenticate(headers, query).map(Some).map_err(|r| {
        ApiError::new(
            Category::Unauthenticated,
            match r {
                KeyRefusal::Missing => "no API key: send the gateway key as `Authorization: Bearer <key>`, `x-api-key: <key>` or `x-goog-api-key: <key>`",
                KeyRefusal::Unknown => "invalid API key: the key sent is not one of the gateway's keys",
            },
        )
    })
}

/// What a client's model name means, resolved to its final id (aliases, the `models:`
/// table, the model id judged): a route of two members or more, or one reference.
pub(crate) enum Named {
    /// A route: its members are tried in the order its router plans.
    Route(Arc<Router>),
    /// One reference.
    Reference(Reference),
}

impl Named {
    /// What keys' model lists, the cache and budgets know the call by: the route's name,
    /// or the reference as `<backend>/<model id>`.
    pub(crate) fn name(&self) -> String {
        match self {
            Named::Route(router) => router.route().name.clone(),
            Named::Reference(reference) => reference.to_string(),
        }
    }
}

/// What `requested` names.
pub(crate) fn resolve(upstreams: &Upstreams, requested: &str) -> Result<Named, ApiError> {
    match upstreams.router(requested) {
        Some(router) => Ok(Named::Route(router.clone())),
        None => upstreams.resolve(requested).map(Named::Reference),
    }
}

/// Refused unless `key` may use the model asked for (by its name or what it means).
pub(crate) fn check_model(key: &Key, requested: &str, full: &str) -> Result<(), ApiError> {
    if key.allows(requested, full) {
        return Ok(());
    }
    Err(ApiError::new(
        Category::Forbidden,
        format!(
            "key `{}` may not use model `{requested}`; it may use: {}",
            key.name,
            key.models.join(", ")
        ),
    ))
}

/// Whether the call may go on now: the shared store's state (a replica that cannot
/// reach its database refuses, or serves only what needs no database), then the key's
/// rate limits, in this process and, with a shared store, across replicas.
pub(crate) async fn admit(pg: Option<&SharedStore>, key: Option<&Key>) -> Result<(), ApiError> {
    if let Some(pg) = pg {
        pg.check_serving(key)?;
    }
    let Some(key) = key else {
        return Ok(());
    };
    key.limiter.admit().map_err(|l| {
        ApiError::new(
            Category::RateLimited,
            format!(
                "Rate limit reached for key `{}`: {} {} per minute.",
                key.name, l.per_minute, l.what
            ),
        )
        .with_retry_after(l.retry_after)
    })?;
    if let Some(pg) = pg {
        // Boxed, as `budgets::hold`'s: kept out of every call's future.
        Box::pin(pg.admit(key)).await?;
    }
    Ok(())
}

/// The key's place among its calls in flight, then its budget hold for the most the
/// call can cost (`bound`: the dearest member that may serve; `None` when a member has
/// no price, which makes the cost unknown), both kept on the meter until the call ends.
pub(crate) async fn enter(
    pg: Option<&SharedStore>,
    key: &Key,
    name: &str,
    bound: impl FnOnce() -> Option<CallBound>,
    meter: &mut Meter,
) -> Result<(), ApiError> {
    let place = key.concurrency.enter().map_err(|max| {
        ApiError::new(
            Category::RateLimited,
            format!(
                "key `{}` has {max} calls in flight, its max_in_flight; try again when one ends",
                key.name
            ),
        )
        .with_retry_after(std::time::Duration::from_secs(1))
    })?;
    meter.set_in_flight(place);
    if let Some(budget) = &key.budget {
        let bound = bound();
        meter.set_reservation(budgets::hold(pg, key, budget, name, bound).await?, bound);
    }
    Ok(())
}

/// The dearest of the members' bounds; `None` when any member has no price.
pub(crate) fn dearest(bounds: impl Iterator<Item = Option<CallBound>>) -> Option<CallBound> {
    let bounds: Option<Vec<_>> = bounds.collect();
    bounds.and_then(|b| b.into_iter().max_by(|x, y| x.usd.total_cmp(&y.usd)))
}

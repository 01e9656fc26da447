//! The path every model call takes through the gateway, whatever the client's dialect:
//! key → bounded body → model → target → rate limit → pass through or translate. A model
//! naming a route of two members or more goes on in `route_call.rs`, through these same
//! steps.

pub(crate) mod cache_hit;
pub(crate) mod count_tokens;
pub(crate) mod embeddings;
pub(crate) mod failover;
pub(crate) mod passthrough;
pub(crate) mod request_body;
pub(crate) mod respond;
pub(crate) mod translate;
pub(crate) mod upstream;

use crate::call::upstream::Target;
use crate::errors::{ApiError, Category};
use crate::meter::Meter;
use crate::raw::RawBody;
use crate::state::State;

use axum::extract::Request;
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;
use switchyard::Dialect;

/// What the route knows about a call before reading its body.
#[derive(Debug, Clone)]
pub(crate) struct Inbound {
    /// The client's dialect.
    pub dialect: Dialect,
    /// For Gemini, the model and the streaming choice come from the URL.
    pub gemini: Option<(String, bool)>,
    /// `POST /v1/messages/count_tokens` or Gemini's `:countTokens`.
    pub count_tokens: bool,
}

impl Inbound {
    /// A call in `dialect` whose model and stream flag are in the body.
    pub(crate) fn body(dialect: Dialect) -> Self {
        Inbound {
            dialect,
            gemini: None,
            count_tokens: false,
        }
    }
}

/// Serves one call; every failure is answered in the client's dialect.
pub(crate) async fn handle(state: Arc<State>, inbound: Inbound, request: Request) -> Response {
    let arrived = Instant::now();
    let dialect = inbound.dialect;
    let mut meter = Meter::new(state.clone(), dialect, arrived);
    meter.set_headers(request.headers());
    match run(&state, &inbound, request, &mut meter).await {
        Ok(response) => response,
        Err(e) => refused(e, dialect, &mut meter),
    }
}

/// The client's key, when the gateway has keys (none asked otherwise); noted on the meter.
pub(crate) fn authenticate(
    state: &State,
    parts: &axum::http::request::Parts,
    meter: &mut Meter,
) -> Result<Option<std::sync::Arc<crate::account::keys::Key>>, ApiError> {
    if state.keys.is_empty() {
        return Ok(None);
    }
    let key = state
        .keys
        .authenticate(&parts.headers, parts.uri.query())
        .map_err(|r| {
            ApiError::new(
                Category::Unauthenticated,
                match r {
                    crate::account::keys::KeyRefusal::Missing => "no API key: send the gateway key as `Authorization: Bearer <key>`, `x-api-key: <key>` or `x-goog-api-key: <key>`",
                    crate::account::keys::KeyRefusal::Unknown => "invalid API key: the key sent is not one of the gateway's keys",
                },
            )
        })?;
    meter.set_key(&key);
    Ok(Some(key))
}

/// A call the gateway refused or could not serve: recorded with its error (unless the
/// meter already holds the provider's), answered in the client's dialect.
pub(crate) fn refused(e: ApiError, dialect: Dialect, meter: &mut Meter) -> Response {
    meter.outcome(e.status.as_u16(), Some(format!("gateway:{:?}", e.category)));
    let draft = meter.draft();
    if draft.error.is_none() {
        draft.error = Some(switchyard::record::ErrorRecord {
            kind: format!("gateway:{:?}", e.category),
            message: e.message.clone(),
            provider: None,
            fields: serde_json::Map::new(),
        });
    }
    meter.complete();
    let (status, headers, body) = e.parts_for(dialect);
    crate::call::respond::whole(status, headers, body, meter)
}

async fn run(
    state: &Arc<State>,
    inbound: &Inbound,
    request: Request,
    meter: &mut Meter,
) -> Result<Response, ApiError> {
    let dialect = inbound.dialect;
    let (parts, body) = request.into_parts();
    let key = authenticate(state, &parts, meter)?;
    let bytes = crate::call::request_body::read(body, &parts.headers, state).await?;
    meter.set_client_body(&bytes);
    let raw = RawBody::parse(&bytes).map_err(|m| ApiError::new(Category::BadRequest, m))?;
    let (requested, stream) = match &inbound.gemini {
        Some((model, stream)) => (model.clone(), *stream),
        None => {
            let model = raw.string("model").ok_or_else(|| {
                ApiError::new(
                    Category::BadRequest,
                    "the request has no `model` (a string): name a model from the gateway's models table or a reference `<backend>/<model id>`",
                )
            })?;
            (model, raw.bool("stream").unwrap_or(false))
        }
    };
    meter.set_requested(&requested);
    if let Some(router) = state.upstreams.router(&requested) {
        let call = Prepared {
            key,
            raw: &raw,
            bytes: &bytes,
            headers: &parts.headers,
            requested: &requested,
            stream,
        };
        return crate::call::failover::run(state, inbound, router, call, meter).await;
    }
    let reference = state.upstreams.resolve(&requested)?;
    if let Some(key) = &key {
        let full = reference.to_string();
        check_model(key, &requested, &full)?;
    }
    let target = state.upstreams.target(&reference, dialect)?;
    // A body carrying envelopes is opened by translation, even to its own dialect.
    let passthrough =
        target.dialect == dialect && !crate::call::translate::envelope::may_carry(&bytes);
    meter.set_target(&target, stream && !inbound.count_tokens, passthrough);
    admit(state, key.as_deref()).await?;
    if inbound.count_tokens {
        meter.not_recorded();
        return count_tokens::answer(&target, &raw, &bytes, &parts.headers, dialect, meter).await;
    }
    if !inbound.count_tokens {
        let name = reference.to_string();
        match crate::call::cache_hit::lookup(state, &name, dialect, &bytes, stream, meter).await {
            crate::call::cache_hit::Lookup::Hit(response) => return Ok(response),
            crate::call::cache_hit::Lookup::Miss(Some(k)) => meter.set_cache_key(k),
            crate::call::cache_hit::Lookup::Miss(_) => {}
        }
    }
    if let Some(key) = &key {
        enter(key, meter)?;
        if let Some(budget) = &key.budget {
            let bound = bound(&target, dialect, &raw, bytes.len());
            meter.set_reservation(
                crate::account::budgets::hold(state, key, budget, &target.reference, bound).await?,
                bound,
            );
        }
    }
    let call = Prepared {
        key,
        raw: &raw,
        bytes: &bytes,
        headers: &parts.headers,
        requested: &requested,
        stream,
    };
    dispatch(state, &target, passthrough, &call, dialect, meter).await
}

/// A call read and checked, ready to go upstream.
pub(crate) struct Prepared<'a> {
    pub key: Option<Arc<crate::account::keys::Key>>,
    pub raw: &'a RawBody<'a>,
    pub bytes: &'a bytes::Bytes,
    pub headers: &'a axum::http::HeaderMap,
    pub requested: &'a str,
    pub stream: bool,
}

/// Refused unless `key` may use the model asked for (by its name or what it means).
pub(crate) fn check_model(
    key: &crate::account::keys::Key,
    requested: &str,
    full: &str,
) -> Result<(), ApiError> {
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
pub(crate) async fn admit(
    state: &State,
    key: Option<&crate::account::keys::Key>,
) -> Result<(), ApiError> {
    if let Some(pg) = &state.pg {
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
    if let Some(pg) = &state.pg {
        // Boxed, as `budgets::hold`'s: kept out of every call's future.
        Box::pin(pg.admit(key)).await?;
    }
    Ok(())
}

/// The key's place among its calls in flight.
pub(crate) fn enter(key: &crate::account::keys::Key, meter: &mut Meter) -> Result<(), ApiError> {
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
    Ok(())
}

/// The most a call through `target` can cost (`None`: the model has no price).
pub(crate) fn bound(
    target: &Target,
    dialect: Dialect,
    raw: &RawBody<'_>,
    body_bytes: usize,
) -> Option<crate::account::budgets::CallBound> {
    target.price.as_ref().map(|price| {
        crate::account::budgets::CallBound::new(
            price,
            body_bytes,
            crate::account::budgets::stated_output_limit(dialect, raw),
            target.output_limit,
        )
    })
}

/// Sends the call to `target`: passed through in the client's dialect, or translated.
pub(crate) async fn dispatch(
    state: &Arc<State>,
    target: &Target,
    passthrough: bool,
    call: &Prepared<'_>,
    dialect: Dialect,
    meter: &mut Meter,
) -> Result<Response, ApiError> {
    if passthrough {
        passthrough::forward(
            target,
            call.raw,
            call.bytes,
            call.stream,
            dialect,
            call.headers,
            meter,
        )
        .await
    } else {
        translate::forward(
            target,
            call.bytes,
            call.stream,
            dialect,
            &state.state_key,
            meter,
        )
        .await
    }
}

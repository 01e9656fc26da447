//! A call answered from the cache: looked up by its key, and answered with the recorded
//! reply's raw bytes, byte for byte.

use super::{cache_key, cacheable};
use crate::meter::Meter;
use crate::state::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use std::sync::Arc;
use std::time::SystemTime;
use switchyard::Dialect;
use switchyard_wire::codec;

/// What the cache made of a call.
pub(crate) enum Lookup {
    /// Answered: the response, its call closed.
    Hit(Response),
    /// Not answered; the key to enter the call under when it goes through (`None`: the
    /// call is not to be entered).
    Miss(Option<String>),
}

/// Looks the call up: `name` is what the model resolves to (the reference or the
/// route), `body` what the client sent in `dialect`. A hit is closed on `meter` (its
/// target already set) as a call answered by the recorded one, at no cost.
pub(crate) fn lookup(
    state: &Arc<State>,
    name: &str,
    dialect: Dialect,
    body: &[u8],
    stream: bool,
    meter: &mut Meter,
) -> Lookup {
    let config = state.cache;
    let Some(store) = state.store.as_ref().filter(|_| config.reads()) else {
        return Lookup::Miss(None);
    };
    let Ok(decoded) = codec(dialect).decode_request(body) else {
        return Lookup::Miss(None);
    };
    if !cacheable(&decoded.request, config.temperature_above_zero) {
        return Lookup::Miss(None);
    }
    let key = cache_key(name, &decoded.request);
    let found = store
        .cache()
        .find(&key, dialect, stream, config.ttl, SystemTime::now())
        .and_then(|(n, at)| {
            let dir = store.dir();
            let at = match at {
                Some(at) => at,
                None => {
                    let at = switchyard::record::record_location(dir, n).ok()?;
                    store.cache().locate(&key, n, at);
                    at
                }
            };
            let record = switchyard::record::read_record_at(dir, at).ok()?;
            // The line must still be that record, and one that may answer.
            if record.number != n || record.error.is_some() || record.cut {
                return None;
            }
            let raw = record.raw.as_ref()?.to_bytes().ok()?;
            Some((n, raw))
        });
    let Some((number, raw)) = found else {
        state.metrics.cache_lookup(false);
        return Lookup::Miss(config.writes().then_some(key));
    };
    state.metrics.cache_lookup(true);
    meter.cache_hit(number);
    meter.draft().keep(&raw);
    meter.head();
    meter.first_byte();
    meter.complete();
    let mut headers = HeaderMap::new();
    let kind = if stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    headers.insert("content-type", HeaderValue::from_static(kind));
    headers.insert(
        "x-switchyard-cache",
        HeaderValue::from_str(&format!("hit; call={number}"))
            .unwrap_or(HeaderValue::from_static("hit")),
    );
    Lookup::Hit(crate::respond::whole(StatusCode::OK, headers, raw, meter))
}

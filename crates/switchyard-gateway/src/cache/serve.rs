//! A call answered from the cache: looked up by its key, and answered with the recorded
//! reply — its raw bytes, byte for byte, when the entry was recorded in the client's
//! dialect with the client's stream flag; else the recorded reply translated to the
//! client's dialect and form, as a translated call would have been answered.

use super::{cache_key, cacheable};
use crate::meter::Meter;
use crate::state::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use std::sync::Arc;
use switchyard::cache::Lookup as CacheLookup;
use switchyard::record::CallRecord;
use switchyard::{Dialect, Event};
use switchyard_wire::{codec, Reply};

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
    let Some(cache) = state.store.as_ref().map(|s| s.cache()) else {
        return Lookup::Miss(None);
    };
    if !cache.config().reads() {
        return Lookup::Miss(None);
    }
    let Ok(decoded) = codec(dialect).decode_request(body) else {
        return Lookup::Miss(None);
    };
    let found = match cache.lookup(name, &decoded.request, Some(dialect), stream) {
        CacheLookup::Hit(hit) => hit,
        CacheLookup::Miss(key) => {
            if key.is_some() || cacheable(&decoded.request, cache.config().temperature_above_zero) {
                state.metrics.cache_lookup(false);
            }
            return Lookup::Miss(key);
        }
    };
    let record = &found.record;
    let number = record.number;
    let answer = if found.exact {
        record.raw.as_ref().and_then(|r| r.to_bytes().ok())
    } else {
        translated(state, record, &decoded.request, dialect, stream)
    };
    let Some(answer) = answer else {
        // The record no longer gives a reply: the call goes upstream, and is entered.
        state.metrics.cache_lookup(false);
        let key = cache_key(name, &decoded.request);
        return Lookup::Miss(cache.config().writes().then_some(key));
    };
    state.metrics.cache_lookup(true);
    meter.cache_hit(number);
    // The record of a hit keeps the bytes the original call received and its reply.
    if let Some(raw) = record.raw.as_ref().and_then(|r| r.to_bytes().ok()) {
        meter.draft().keep(&raw);
    }
    meter.draft().reply = record.reply.clone();
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
    let how = if found.exact { "" } else { "; translated" };
    headers.insert(
        "x-switchyard-cache",
        HeaderValue::from_str(&format!("hit; call={number}{how}"))
            .unwrap_or(HeaderValue::from_static("hit")),
    );
    Lookup::Hit(crate::respond::whole(
        StatusCode::OK,
        headers,
        answer,
        meter,
    ))
}

/// What the cache made of an embeddings call.
pub(crate) enum EmbedLookup {
    /// The recorded call that answers it.
    Hit(Box<CallRecord>),
    /// None; the key to enter it under.
    Miss(Option<String>),
}

/// Looks an embeddings call of `name` up (`None`: no cache). Counted in `/metrics` as
/// a chat call's lookup is.
pub(crate) fn embedding(
    state: &Arc<State>,
    name: &str,
    request: &switchyard_wire::embed::EmbedRequest,
) -> Option<EmbedLookup> {
    let cache = state.store.as_ref()?.cache();
    if !cache.config().reads() {
        return None;
    }
    Some(match cache.lookup_embedding(name, request) {
        CacheLookup::Hit(hit) if hit.record.embedding.is_some() && hit.record.raw.is_some() => {
            state.metrics.cache_lookup(true);
            EmbedLookup::Hit(Box::new(hit.record))
        }
        CacheLookup::Hit(_) => {
            state.metrics.cache_lookup(false);
            EmbedLookup::Miss(None)
        }
        CacheLookup::Miss(key) => {
            state.metrics.cache_lookup(false);
            EmbedLookup::Miss(key)
        }
    })
}

/// The recorded reply as `client` asks it (whole or streamed), encoded as a translated
/// call encodes an upstream reply: tool names and ids restored to the client's, opaque
/// state from another dialect sealed.
fn translated(
    state: &State,
    record: &CallRecord,
    request: &switchyard::Request,
    client: Dialect,
    stream: bool,
) -> Option<Bytes> {
    let mut reply: Reply = match &record.reply {
        Some(r) => r.clone(),
        None => {
            let dialect = record.dialect?;
            let raw = record.raw.as_ref()?.to_bytes().ok()?;
            crate::store::decode_reply(dialect, &raw, record.stream)?
        }
    };
    let mut request = request.clone();
    let restore = crate::ids::prepare(&mut request, record.dialect.unwrap_or(client));
    restore.reply(&mut reply);
    crate::envelope::seal_reply(&mut reply, client, &state.state_key);
    let context = crate::translate::server_context(client);
    let encoder = codec(client);
    if !stream {
        return Some(Bytes::from(encoder.encode_reply(&reply, &context)));
    }
    let usage_asked = crate::translate::wants_usage(client, &request);
    let mut out = Vec::new();
    let mut stream = encoder.stream_encoder(&context);
    for event in switchyard_wire::reply_events(&reply, 0) {
        if matches!(event, Event::Usage(_)) && !usage_asked {
            continue;
        }
        stream.event(&event, &mut out);
    }
    stream.finish(&mut out);
    Some(Bytes::from(out))
}

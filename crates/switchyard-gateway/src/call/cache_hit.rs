//! A call answered from the cache: looked up by its key, and answered with the recorded
//! reply — its raw bytes, byte for byte, when the entry was recorded in the client's
//! dialect with the client's stream flag; else the recorded reply translated to the
//! client's dialect and form, as a translated call would have been answered.

use crate::call::client_model::{self, InStream};
use crate::call::translate::envelope::StateKey;
use crate::meter::Books;
use crate::meter::Meter;
use crate::store::cache::{cache_key, cacheable, CacheScope};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;

use switchyard::cache::embed_cache_key;
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
/// target already set) as a call answered by the recorded one, at no cost. With a
/// PostgreSQL store and `scope: store`, a key this replica has not recorded is looked
/// for among every replica's records.
pub(crate) async fn lookup(
    books: &Books,
    state_key: &StateKey,
    name: &str,
    dialect: Dialect,
    body: &[u8],
    stream: bool,
    meter: &mut Meter,
) -> Lookup {
    let Some(cache) = books.store.as_ref().map(|s| s.cache()) else {
        return Lookup::Miss(None);
    };
    if !cache.config().reads() {
        return Lookup::Miss(None);
    }
    let Ok(decoded) = codec(dialect).decode_request(body) else {
        return Lookup::Miss(None);
    };
    let found = match cache.lookup(name, &decoded.request, Some(dialect), stream) {
        CacheLookup::Hit(hit) => Found {
            record: hit.record,
            exact: hit.exact,
            shared: None,
        },
        CacheLookup::Miss(key) => {
            let asked =
                key.is_some() || cacheable(&decoded.request, cache.config().temperature_above_zero);
            // The key is digested again only when a shared store will be asked with it.
            let shares = books.pg.is_some() && cache.scope() == CacheScope::Store;
            let shared = if asked && shares {
                let key = key
                    .clone()
                    .unwrap_or_else(|| cache_key(name, &decoded.request));
                shared(books, cache, &key, Some(dialect), stream).await
            } else {
                None
            };
            match shared {
                Some(found) => found,
                None => {
                    if asked {
                        books.metrics.cache_lookup(false);
                    }
                    return Lookup::Miss(key);
                }
            }
        }
    };
    let record = &found.record;
    let number = record.number;
    // Named as the client names the model, as a call that went upstream is answered.
    let requested = meter.requested().to_string();
    let answer = if found.exact {
        let raw = record.raw.as_ref().and_then(|r| r.to_bytes().ok());
        raw.map(|raw| match stream {
            true => InStream::new(dialect, &requested).events(raw),
            false => client_model::whole(dialect, raw, &requested),
        })
    } else {
        translated(
            state_key,
            record,
            &decoded.request,
            dialect,
            stream,
            &requested,
        )
    };
    let Some(answer) = answer else {
        // The record no longer gives a reply: the call goes upstream, and is entered.
        books.metrics.cache_lookup(false);
        let key = cache_key(name, &decoded.request);
        return Lookup::Miss(cache.config().writes().then_some(key));
    };
    books.metrics.cache_lookup(true);
    meter.cache_hit(number);
    meter.draft().cache_hit_call = found.shared.clone();
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
    let call = found.shared.clone().unwrap_or_else(|| number.to_string());
    headers.insert(
        "x-switchyard-cache",
        HeaderValue::from_str(&format!("hit; call={call}{how}"))
            .unwrap_or(HeaderValue::from_static("hit")),
    );
    // The reference that answered the recorded call.
    client_model::name_reference(
        &mut headers,
        &format!("{}/{}", record.backend, record.model),
    );
    Lookup::Hit(crate::call::respond::whole(
        StatusCode::OK,
        headers,
        answer,
        meter,
    ))
}

/// A recorded call found for a key.
struct Found {
    record: CallRecord,
    /// Whether its raw bytes answer the client as they are.
    exact: bool,
    /// Its call id, when found in the shared store (recorded by any replica).
    shared: Option<String>,
}

/// The call recorded under `key` by any replica, when the store is shared and the
/// cache's scope takes in more than this run.
async fn shared(
    books: &Books,
    cache: &switchyard::cache::Cache,
    key: &str,
    dialect: Option<Dialect>,
    stream: bool,
) -> Option<Found> {
    let pg = books.pg.as_ref()?;
    if cache.scope() != CacheScope::Store {
        return None;
    }
    // Boxed, as `budgets::hold`'s: kept out of every call's future.
    let hit = Box::pin(pg.cached(key, dialect, stream, cache.config().ttl)).await?;
    Some(Found {
        record: hit.record,
        exact: hit.exact,
        shared: Some(hit.call_id),
    })
}

/// What the cache made of an embeddings call.
pub(crate) enum EmbedLookup {
    /// The recorded call that answers it, and its call id when the shared store gave it.
    Hit(Box<CallRecord>, Option<String>),
    /// None; the key to enter it under.
    Miss(Option<String>),
}

/// Looks an embeddings call of `name` up (`None`: no cache), in the shared store too as
/// [`lookup`] does. Counted in `/metrics` as a chat call's lookup is.
pub(crate) async fn embedding(
    books: &Books,
    name: &str,
    request: &switchyard_wire::embed::EmbedRequest,
) -> Option<EmbedLookup> {
    let cache = books.store.as_ref()?.cache();
    if !cache.config().reads() {
        return None;
    }
    let answers = |r: &CallRecord| r.embedding.is_some() && r.raw.is_some();
    let found = match cache.lookup_embedding(name, request) {
        CacheLookup::Hit(hit) if answers(&hit.record) => Some((hit.record, None)),
        CacheLookup::Hit(_) => {
            books.metrics.cache_lookup(false);
            return Some(EmbedLookup::Miss(None));
        }
        CacheLookup::Miss(key) => {
            let asked = key
                .clone()
                .unwrap_or_else(|| embed_cache_key(name, request));
            match shared(books, cache, &asked, None, false).await {
                Some(f) if answers(&f.record) => Some((f.record, f.shared)),
                _ => {
                    books.metrics.cache_lookup(false);
                    return Some(EmbedLookup::Miss(key));
                }
            }
        }
    };
    let (record, call) = found?;
    books.metrics.cache_lookup(true);
    Some(EmbedLookup::Hit(Box::new(record), call))
}

/// The recorded reply as `client` asks it (whole or streamed), encoded as a translated
/// call encodes an upstream reply: tool names and ids restored to the client's, opaque
/// state from another dialect sealed.
fn translated(
    state_key: &StateKey,
    record: &CallRecord,
    request: &switchyard::Request,
    client: Dialect,
    stream: bool,
    requested: &str,
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
    let restore =
        crate::call::translate::ids::prepare(&mut request, record.dialect.unwrap_or(client));
    restore.reply(&mut reply);
    crate::call::translate::envelope::seal_reply(&mut reply, client, state_key);
    reply.model = Some(client_model::written(requested));
    let context = crate::call::translate::server_context(client);
    let encoder = codec(client);
    if !stream {
        return Some(Bytes::from(encoder.encode_reply(&reply, &context)));
    }
    let usage_asked = crate::call::translate::wants_usage(client, &request);
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

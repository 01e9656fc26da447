//! A finished call's [`CallRecord`], built on the store's thread from the bytes its meter
//! kept: the canonical request decoded from the body as sent, the reply decoded from the
//! bytes as received (a stream cut short gives what it carried), the usage, the cost and
//! the error.

use super::Finished;
use bytes::{Bytes, BytesMut};
use std::time::Duration;
use switchyard::record::{self, AttemptRecord, CallRecord, ErrorRecord, RawBytes, Timings};
use switchyard::Dialect;
use switchyard_wire::{codec, ByteStreamDecoder, Event, Reply, Request};

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

pub(crate) fn concat(chunks: &[Bytes]) -> Bytes {
    match chunks {
        [] => Bytes::new(),
        [one] => one.clone(),
        many => {
            let mut out = BytesMut::with_capacity(many.iter().map(Bytes::len).sum());
            for c in many {
                out.extend_from_slice(c);
            }
            out.freeze()
        }
    }
}

/// The canonical reply in `raw` (a whole body or a stream, possibly cut short): what
/// the stream carried up to where it stopped.
pub(crate) fn decode_reply(dialect: Dialect, raw: &[u8], stream: bool) -> Option<Reply> {
    if raw.is_empty() {
        return None;
    }
    if !stream {
        return codec(dialect).decode_reply(raw).ok();
    }
    let mut decoder = ByteStreamDecoder::new(codec(dialect));
    let mut events = decoder.push(raw).ok()?;
    if let Ok(rest) = decoder.finish() {
        events.extend(rest);
    }
    Some(assemble(&events))
}

/// The reply a stream's events build, up to the first that does not fit.
pub(crate) fn assemble(events: &[Event]) -> Reply {
    let mut assembler = switchyard_wire::Assembler::new();
    for e in events {
        if assembler.push(e).is_err() {
            break;
        }
    }
    assembler.into_reply()
}

/// The record of a finished call; runs on the store's thread.
pub(super) fn build_record(call: Finished) -> CallRecord {
    let Finished {
        summary: s,
        reference,
        client_body,
        started_at,
        price,
        draft,
    } = call;
    let mut draft = draft;
    let embedding = draft.embedding.take();
    let is_embedding = embedding.is_some();
    let upstream = s.upstream_dialect.unwrap_or(s.client_dialect);
    let body = draft.sent_body.clone().or(client_body);
    let request: Request = body
        .as_ref()
        .filter(|_| !is_embedding)
        .and_then(|b| codec(upstream).decode_request(b).ok())
        .map(|d| d.request)
        .unwrap_or_default();
    let raw = concat(&draft.raw);
    let succeeded = s.error.is_none() && s.status < 400;
    let mut reply = draft
        .reply
        .map(|r| r.without_raw())
        .or_else(|| draft.events.take().map(|e| assemble(&e)))
        .or_else(|| decode_reply(upstream, &raw, s.stream).map(|r| r.without_raw()));
    if !succeeded && reply.as_ref().is_some_and(|r| r.content.is_empty()) {
        reply = None;
    }
    let usage = s.usage.or_else(|| reply.as_ref().and_then(|r| r.usage));
    let error = draft.error.or_else(|| {
        s.error.as_ref().map(|kind| ErrorRecord {
            kind: kind.clone(),
            message: match kind.as_str() {
                "client_disconnected" => "the client went away before the reply ended; the upstream request was cancelled".to_string(),
                "cancelled" => "the gateway stopped before the reply ended (drain deadline passed)".to_string(),
                _ => format!("the call ended with status {}", s.status),
            },
            provider: None,
            fields: serde_json::Map::new(),
        })
    });
    let ended_at = started_at + s.latency;
    let raw_truncated = draft.kept.truncated().filter(|_| !raw.is_empty());

    CallRecord {
        format: record::FORMAT,
        number: 0,
        role: None,
        reference,
        backend: s.backend,
        model: s.model,
        dialect: s.upstream_dialect,
        stream: s.stream,
        // Filled by the recorder's writer (an embeddings call's: from its inputs).
        prompt_digest: embedding
            .as_ref()
            .map(|e| record::embed_digest(&e.request))
            .unwrap_or_default(),
        parameters: serde_json::Map::new(),
        request,
        body: draft.sent_body.and_then(|b| {
            String::from_utf8(b.to_vec())
                .ok()
                .and_then(|t| serde_json::value::RawValue::from_string(t).ok())
        }),
        usage_reported: if (reply.is_some() || is_embedding) && !raw.is_empty() {
            record::reported_usage(&raw, s.stream, s.upstream_dialect)
        } else {
            None
        },
        reply,
        raw: (!raw.is_empty()).then(|| RawBytes::new(&raw)),
        usage,
        attempts: draft.attempts,
        timings: Timings {
            started_at: record::timestamp(started_at),
            ended_at: record::timestamp(ended_at),
            first_byte_ms: s.time_to_first_byte.map(ms),
            duration_ms: ms(s.latency),
        },
        // A cache hit costs nothing: no provider was called.
        cost_usd: if draft.cache_hit.is_some() {
            Some(0.0)
        } else {
            // The library's one rule (`Llm::cost`): the gateway's upstreams are HTTP
            // backends, which report no cost of their own.
            switchyard::internal::cost::priced_or_reported(price.as_ref(), usage.as_ref(), None)
        },
        provider_cost_usd: None,
        error,
        usage_estimated: draft.usage_estimated,
        client_key: (s.key != "-").then_some(s.key),
        client_dialect: Some(s.client_dialect),
        embedding,
        route: draft.route,
        cut: draft.cut,
        // A record that kept only part of its reply answers no later call from the cache.
        cache_key: draft.cache_key.filter(|_| raw_truncated.is_none()),
        raw_truncated,
        cache_hit: draft.cache_hit,
        cache_hit_call: draft.cache_hit_call,
        cache_run: None,
        depth_capped: false,
        usage_suspect: usage.and_then(|u| u.suspect()),
        over_reservation: draft.over_reservation,
    }
}

/// The attempts of a library call, as records keep them.
pub(crate) fn attempt_records(attempts: &[switchyard::Attempt]) -> Vec<AttemptRecord> {
    attempts
        .iter()
        // The gateway calls over HTTP only: a success was a 200, as the library records it.
        .map(|a| AttemptRecord::of(a, true))
        .collect()
}

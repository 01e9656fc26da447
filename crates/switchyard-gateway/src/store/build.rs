//! A finished call's [`CallRecord`], built on the store's thread from the bytes its meter
//! kept. In record format 3 (the usual case) the record holds what was exchanged — the
//! body as sent, the bytes as received — with what the meter knows (usage, cost,
//! timings, the error), and its readers derive the canonical request and reply (the
//! bytes received are given apart, for the recorder to write after the line: format 4);
//! in format 2 (a call whose forms would not derive the same) they are decoded here: the
//! request from the body as sent, the reply from the bytes as received (a stream cut
//! short gives what it carried).

use super::Finished;
use bytes::{Bytes, BytesMut};
use std::time::Duration;
use switchyard::record::{
    self, AttemptRecord, CallRecord, ErrorRecord, RawBytes, RawReply, Timings,
};
use switchyard::Dialect;
use switchyard_wire::{Reply, Request};

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

/// The canonical reply in `raw` (the library's rule, which readers of record format 3
/// derive it by).
pub(crate) fn decode_reply(dialect: Dialect, raw: &[u8], stream: bool) -> Option<Reply> {
    record::decode_reply(dialect, raw, stream)
}

/// The record of a finished call, and the reply's raw bytes when the record is to have
/// them written after its line; runs where the record is prepared.
///
/// Written in record format 3 ([`record::DERIVED_FORMAT`]) when every canonical form left
/// out is what a reader derives from the line: the canonical request from the body as
/// sent, the reply from the raw bytes, the prompt digest and the provider's usage object
/// from those. Nothing is decoded here then, and the raw bytes come back apart, for the
/// recorder to write after the line as they are (record format 4) without their being
/// checked as text and copied into the record. A call whose forms would derive otherwise
/// (a request decoded from the client's body because none was sent, a reply kept in part,
/// a usage the meter did not find, a failure the meter and the record tell apart) is
/// built in format 2, decoded here as before, its raw bytes in it.
pub(super) fn build_record_and_raw(call: Finished) -> (CallRecord, Option<RawReply>) {
    let redacted = call.draft.raw_redacted.under();
    let (record, raw) = build(call, true);
    if record::leaves_out(record.format) {
        return (record, raw.map(|bytes| RawReply { bytes, redacted }));
    }
    (raw_inside(record, raw), None)
}

/// [`build_record_and_raw`] with the raw bytes in the record, as the tests compare it.
#[cfg(test)]
pub(super) fn build_record(call: Finished) -> CallRecord {
    let (record, raw) = build(call, true);
    raw_inside(record, raw)
}

/// `record` with the raw bytes `raw` in it, as a record of format 2 keeps them.
fn raw_inside(mut record: CallRecord, raw: Option<Bytes>) -> CallRecord {
    record.raw = raw.map(|raw| RawBytes::new(&raw));
    record
}

/// [`build_record_and_raw`]; in format 2 whatever the call with `derive` false (as before
/// format 3, which the tests compare with).
fn build(call: Finished, derive: bool) -> (CallRecord, Option<Bytes>) {
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
    let raw = concat(&draft.raw);
    let succeeded = s.error.is_none() && s.status < 400;
    let error = draft.error.take().or_else(|| {
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
    let raw_truncated = draft.kept.truncated().filter(|_| !raw.is_empty());
    let body = draft.sent_body.as_ref().and_then(|b| {
        String::from_utf8(b.to_vec())
            .ok()
            .and_then(|t| serde_json::value::RawValue::from_string(t).ok())
    });
    // A reply the call already has (a translated call's), as the record keeps it.
    let had_reply = draft.reply.is_some();
    let in_hand = draft
        .reply
        .take()
        .map(|r| r.without_raw())
        .filter(|r| succeeded || !r.content.is_empty());
    let derivable = derive
        && (is_embedding
            || (s.upstream_dialect.is_some()
                && body.is_some()
                && raw_truncated.is_none()
                && succeeded == error.is_none()
                && (s.usage.is_some() || in_hand.as_ref().is_some_and(|r| r.usage.is_some()))
                && (in_hand.is_some() || !had_reply)));
    let (format, request, reply, usage_reported) = if derivable {
        (record::DERIVED_FORMAT, Request::default(), in_hand, None)
    } else {
        let upstream = s.upstream_dialect.unwrap_or(s.client_dialect);
        let request = draft
            .sent_body
            .as_ref()
            .or(client_body.as_ref())
            .filter(|_| !is_embedding)
            .map(|b| record::decode_request(upstream, b))
            .unwrap_or_default();
        let mut reply =
            in_hand.or_else(|| decode_reply(upstream, &raw, s.stream).map(|r| r.without_raw()));
        if !succeeded && reply.as_ref().is_some_and(|r| r.content.is_empty()) {
            reply = None;
        }
        let usage_reported = if (reply.is_some() || is_embedding) && !raw.is_empty() {
            record::reported_usage(&raw, s.stream, s.upstream_dialect)
        } else {
            None
        };
        (record::FORMAT, request, reply, usage_reported)
    };
    let usage = s.usage.or_else(|| reply.as_ref().and_then(|r| r.usage));
    let ended_at = started_at + s.latency;

    let record = CallRecord {
        format,
        number: 0,
        role: None,
        reference,
        backend: s.backend,
        model: s.model,
        dialect: s.upstream_dialect,
        stream: s.stream,
        // Filled by the recorder's writer in format 2 (an embeddings call's: from its
        // inputs), derived on read in format 3.
        prompt_digest: match (&embedding, format) {
            (Some(e), record::FORMAT) => record::embed_digest(&e.request),
            _ => String::new(),
        },
        parameters: serde_json::Map::new(),
        request,
        body,
        usage_reported,
        reply,
        raw: None,
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
    };
    (record, (!raw.is_empty()).then_some(raw))
}

/// The attempts of a library call, as records keep them.
pub(crate) fn attempt_records(attempts: &[switchyard::Attempt]) -> Vec<AttemptRecord> {
    attempts
        .iter()
        // The gateway calls over HTTP only: a success was a 200, as the library records it.
        .map(|a| AttemptRecord::of(a, true))
        .collect()
}

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;

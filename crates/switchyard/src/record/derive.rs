//! Record format 3: what was exchanged is written, the canonical forms are derived when
//! the record is read.
//!
//! A line of format 3 may leave out `request`, `parameters`, `prompt_digest`, `reply`
//! and `usage_reported`. Each is a function of fields the line keeps — the body as sent,
//! the raw reply, the dialect spoken upstream, `stream`, `error` and `embedding` — so a
//! writer with the call's bytes in hand (the gateway's store) need not decode them on
//! its recording threads: every reader ([`super::parse_record_line`], so `read_record`,
//! `read_log`, replay, the cache, the console, PostgreSQL's readers) derives them here,
//! by the rule the gateway used to build them with (`docs/recording.md`, *Record format
//! 3*). A field the line holds is kept as it is.
//!
//! The writer leaves a field out only while it is empty in the record it was handed
//! (see [`super::line`]): the gateway hands a format-3 record with a canonical form it
//! already has (a translated call's reply) and that form is written.

use super::CallRecord;
use bytes::Bytes;
use std::cell::Cell;
use switchyard_wire::{codec, ByteStreamDecoder, Dialect, Event, Reply, Request};

/// The record format whose canonical forms a writer may leave out and every reader
/// derives.
pub const DERIVED_FORMAT: u32 = 3;

/// Record format 4: format 3 whose raw bytes follow its line as they were received
/// (`segment.rs`), where format 3 keeps them in the line as a JSON string. Escaping them
/// into the line was the largest single cost of a recorded stream, whose bytes are dense
/// with quotes; after the line they are copied as they are. In a record read back they
/// are `raw` as in any other format, and a record of format 4 written whole by serde
/// (`log export`) keeps them there.
pub const RAW_AFTER_FORMAT: u32 = 4;

/// Whether a record of `format` may leave its canonical forms out for readers to derive.
pub fn leaves_out(format: u32) -> bool {
    format == DERIVED_FORMAT || format == RAW_AFTER_FORMAT
}

thread_local! {
    /// Set while serde writes a record as the writer does ([`to_line_by_serde`], which
    /// tests hold the writer's own [`super::line`] to): the derivable fields that are
    /// empty are then left out. A flag of the thread, not of the record, because serde's
    /// `skip_serializing_if` sees one field alone, and every other serialisation of a
    /// record (`log export`, the console's API) writes every field.
    static LEAVING_OUT: Cell<bool> = const { Cell::new(false) };
}

/// Serialises `record` into `buf` as a line of its format: for [`DERIVED_FORMAT`], with
/// the empty derivable fields left out.
pub(super) fn to_line(buf: &mut Vec<u8>, record: &CallRecord) -> serde_json::Result<()> {
    super::line::write_record(buf, record)
}

/// [`to_line`] by serde's derive: the same bytes, tests say.
#[cfg(test)]
pub(super) fn to_line_by_serde(buf: &mut Vec<u8>, record: &CallRecord) -> serde_json::Result<()> {
    let derived = leaves_out(record.format);
    LEAVING_OUT.with(|f| f.set(derived));
    let written = serde_json::to_writer(&mut *buf, record);
    LEAVING_OUT.with(|f| f.set(false));
    written
}

/// Whether the writer is leaving the empty derivable fields out.
fn leaving_out() -> bool {
    LEAVING_OUT.with(Cell::get)
}

// What serde's `skip_serializing_if` asks of each derivable field: left out of the line
// while the writer leaves out and the field is empty.

pub(super) fn skip_request(r: &Request) -> bool {
    leaving_out() && is_empty(r)
}

pub(super) fn skip_map(m: &serde_json::Map<String, serde_json::Value>) -> bool {
    leaving_out() && m.is_empty()
}

pub(super) fn skip_string(s: &str) -> bool {
    leaving_out() && s.is_empty()
}

pub(super) fn skip_none<T>(v: &Option<T>) -> bool {
    leaving_out() && v.is_none()
}

/// The canonical reply in `raw` (a whole body or a stream, possibly cut short): what
/// the stream carried up to where it stopped; `None` when there are no bytes or a whole
/// body does not decode.
pub fn decode_reply(dialect: Dialect, raw: &[u8], stream: bool) -> Option<Reply> {
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
pub fn assemble(events: &[Event]) -> Reply {
    let mut assembler = switchyard_wire::Assembler::new();
    for e in events {
        if assembler.push(e).is_err() {
            break;
        }
    }
    assembler.into_reply()
}

/// The canonical request a body sent in `dialect` carries (empty when it does not
/// decode).
pub fn decode_request(dialect: Dialect, body: &[u8]) -> Request {
    codec(dialect)
        .decode_request(body)
        .map(|d| d.request)
        .unwrap_or_default()
}

/// The reply a record keeps, from its raw bytes: a failed call keeps none when they
/// carry no content (an error body).
pub fn reply_of(dialect: Dialect, raw: &[u8], stream: bool, failed: bool) -> Option<Reply> {
    let mut reply = decode_reply(dialect, raw, stream)?;
    if failed && reply.content.is_empty() {
        return None;
    }
    reply.raw = Bytes::new();
    Some(reply)
}

/// Whether a request is the empty one a record holds when it keeps none
/// (`Request::default()`), field by field: the writer asks twice per record, and building
/// a default request to compare with cost more than the questions.
pub(super) fn is_empty(r: &Request) -> bool {
    // Destructured whole: a field added to `Request` does not compile until asked here.
    let Request {
        messages,
        tools,
        tool_choice,
        parallel_tool_calls,
        max_tokens,
        temperature,
        top_p,
        stop,
        reasoning,
        response_format,
        passthrough: switchyard_wire::Passthrough { dialect, fields },
    } = r;
    messages.is_empty()
        && tools.is_empty()
        && tool_choice.is_none()
        && parallel_tool_calls.is_none()
        && max_tokens.is_none()
        && temperature.is_none()
        && top_p.is_none()
        && stop.is_empty()
        && reasoning.is_none()
        && response_format.is_none()
        && dialect.is_none()
        && fields.is_empty()
}

/// Fills the fields a line of format 3 left out, from those it keeps.
pub(super) fn fill(record: &mut CallRecord) {
    let raw = record.raw_bytes().unwrap_or_default();
    let embedding = record.embedding.is_some();
    // An embeddings call has neither (its canonical request is `embedding.request`).
    if let (false, Some(dialect)) = (embedding, record.dialect) {
        if let Some(body) = record.body.as_ref().filter(|_| is_empty(&record.request)) {
            record.request = decode_request(dialect, body.get().as_bytes());
        }
        // A line whose `raw` was kept in part holds its reply as the writer had it (not
        // what the bytes kept carry): a reply is derived from whole bytes only.
        if record.reply.is_none() && record.raw_truncated.is_none() {
            record.reply = reply_of(dialect, &raw, record.stream, record.failed());
        }
    }
    if record.parameters.is_empty() {
        record.parameters = super::parameters(&record.request);
    }
    if record.prompt_digest.is_empty() {
        record.prompt_digest = match &record.embedding {
            Some(e) => super::embed_digest(&e.request),
            None => super::prompt_digest(&record.request),
        };
    }
    if record.usage_reported.is_none() && (record.reply.is_some() || embedding) && !raw.is_empty() {
        record.usage_reported = super::reported_usage(&raw, record.stream, record.dialect);
    }
}

#[cfg(test)]
#[path = "derive_tests.rs"]
mod tests;

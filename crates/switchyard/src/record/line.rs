//! A record written as its log line, field by field.
//!
//! The line is what serde's derive of [`CallRecord`]'s `Serialize` writes (the fields in
//! their order, under their names, left out by the same rules; tests hold the two to the
//! same bytes), but each field's name is copied as the literal it is and each string is
//! escaped by [`super::escape`]: serde_json escapes every name byte by byte and walks its
//! field states per field, which was most of the writer's serialisation (about 9,000
//! instructions a record, docs/performance.md). Nested values (the attempts, the timings,
//! the usage, the error, the canonical forms) are still serde's.

use super::escape::push_json_str;
use super::{derive, CallRecord};
use serde::Serialize;

/// Appends `record` as one JSON object (no newline): for [`derive::DERIVED_FORMAT`], with
/// its empty derivable fields left out (see `derive.rs`).
pub(super) fn write_record(buf: &mut Vec<u8>, record: &CallRecord) -> serde_json::Result<()> {
    // Destructured whole: a field added to `CallRecord` does not compile until written here.
    let CallRecord {
        format,
        number,
        role,
        reference,
        backend,
        model,
        dialect,
        stream,
        prompt_digest,
        request,
        parameters,
        body,
        reply,
        raw,
        usage,
        usage_reported,
        attempts,
        timings,
        cost_usd,
        provider_cost_usd,
        error,
        usage_estimated,
        client_key,
        client_dialect,
        embedding,
        route,
        cut,
        raw_truncated,
        cache_key,
        cache_hit,
        cache_hit_call,
        cache_run,
        depth_capped,
        usage_suspect,
        over_reservation,
    } = record;
    // What `derive::skip_*` answer while the writer leaves the derivable fields out.
    let leaving_out = *format == derive::DERIVED_FORMAT;
    let mut line = Line { buf, first: true };
    line.value("format", format)?;
    line.value("number", number)?;
    line.opt_string("role", role.as_deref());
    line.string("reference", reference);
    line.string("backend", backend);
    line.string("model", model);
    line.value("dialect", dialect)?;
    line.value("stream", stream)?;
    if !(leaving_out && prompt_digest.is_empty()) {
        line.string("prompt_digest", prompt_digest);
    }
    if !(leaving_out && derive::is_empty(request)) {
        line.value("request", request)?;
    }
    if !(leaving_out && parameters.is_empty()) {
        line.value("parameters", parameters)?;
    }
    line.value("body", body)?;
    if !(leaving_out && reply.is_none()) {
        line.value("reply", reply)?;
    }
    line.some("raw", raw)?;
    line.value("usage", usage)?;
    if !(leaving_out && usage_reported.is_none()) {
        line.value("usage_reported", usage_reported)?;
    }
    line.value("attempts", attempts)?;
    line.value("timings", timings)?;
    line.value("cost_usd", cost_usd)?;
    line.value("provider_cost_usd", provider_cost_usd)?;
    line.value("error", error)?;
    line.some_string("usage_estimated", usage_estimated);
    line.some_string("client_key", client_key);
    line.some("client_dialect", client_dialect)?;
    line.some("embedding", embedding)?;
    line.some_string("route", route);
    if *cut {
        line.value("cut", cut)?;
    }
    line.some("raw_truncated", raw_truncated)?;
    line.some_string("cache_key", cache_key);
    line.some("cache_hit", cache_hit)?;
    line.some_string("cache_hit_call", cache_hit_call);
    line.some_string("cache_run", cache_run);
    if *depth_capped {
        line.value("depth_capped", depth_capped)?;
    }
    line.some_string("usage_suspect", usage_suspect);
    line.some("over_reservation", over_reservation)?;
    line.buf.push(b'}');
    Ok(())
}

/// An object being written: its buffer, and whether a field is still to come first.
struct Line<'a> {
    buf: &'a mut Vec<u8>,
    first: bool,
}

impl Line<'_> {
    /// Opens field `name` (a plain identifier: nothing in it to escape).
    fn name(&mut self, name: &str) {
        self.buf.push(if self.first { b'{' } else { b',' });
        self.first = false;
        self.buf.push(b'"');
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    fn value<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> serde_json::Result<()> {
        self.name(name);
        serde_json::to_writer(&mut *self.buf, value)
    }

    fn string(&mut self, name: &str, text: &str) {
        self.name(name);
        push_json_str(self.buf, text);
    }

    fn opt_string(&mut self, name: &str, text: Option<&str>) {
        match text {
            Some(text) => self.string(name, text),
            None => {
                self.name(name);
                self.buf.extend_from_slice(b"null");
            }
        }
    }

    /// A field written only when it holds a value (`skip_serializing_if = "Option::is_none"`).
    fn some<T: Serialize>(&mut self, name: &str, value: &Option<T>) -> serde_json::Result<()> {
        match value {
            Some(v) => self.value(name, v),
            None => Ok(()),
        }
    }

    fn some_string(&mut self, name: &str, text: &Option<String>) {
        if let Some(text) = text {
            self.string(name, text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{writer::tests::sample, RawBytes, DERIVED_FORMAT};

    /// A record with every optional field set, in `format`.
    fn full(format: u32) -> CallRecord {
        let mut r = sample();
        r.format = format;
        r.role = Some("plan\"ner\u{1}é".into());
        r.raw = Some(RawBytes::new(b"{\"a\":1}"));
        r.usage_reported = Some(serde_json::json!({"prompt_tokens": 3}));
        r.usage_estimated = Some("from the prompt".into());
        r.client_key = Some("alice".into());
        r.client_dialect = Some(switchyard_wire::Dialect::Messages);
        r.embedding = Some(
            serde_json::from_value(serde_json::json!({
                "shape": "openai",
                "request": {"input": {"texts": ["a river"]}}
            }))
            .unwrap(),
        );
        r.route = Some("one".into());
        r.cut = true;
        r.raw_truncated = Some(crate::record::RawTruncated {
            kept: 7,
            received: Some(9),
            setting: "limits.max_recorded_reply_bytes".into(),
        });
        r.cache_key = Some("k".into());
        r.cache_hit = Some(3);
        r.cache_hit_call = Some("r1-3".into());
        r.cache_run = Some("runs/a".into());
        r.depth_capped = true;
        r.usage_suspect = Some("past the most".into());
        r.over_reservation = Some(crate::record::OverReservation {
            reserved_usd: 0.5,
            cost_usd: 0.75,
            stopped: false,
        });
        r.error = Some(crate::record::ErrorRecord {
            kind: "RateLimited".into(),
            message: "slow \\ down".into(),
            provider: None,
            fields: Default::default(),
        });
        r
    }

    /// A record of format 3 with nothing derived: what the gateway's store writes.
    fn exchanged() -> CallRecord {
        let mut r = sample();
        r.format = DERIVED_FORMAT;
        r.request = Default::default();
        r.parameters = Default::default();
        r.prompt_digest = String::new();
        r.reply = None;
        r.usage_reported = None;
        r.role = None;
        r
    }

    #[test]
    fn a_line_is_what_serde_writes_for_the_record() {
        for record in [
            sample(),
            exchanged(),
            full(crate::record::FORMAT),
            full(DERIVED_FORMAT),
        ] {
            let mut by_hand = Vec::new();
            write_record(&mut by_hand, &record).unwrap();
            let mut by_serde = Vec::new();
            derive::to_line_by_serde(&mut by_serde, &record).unwrap();
            assert_eq!(
                String::from_utf8(by_hand).unwrap(),
                String::from_utf8(by_serde).unwrap()
            );
        }
    }
}

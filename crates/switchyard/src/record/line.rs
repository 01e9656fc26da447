//! A record written as its log line, field by field.
//!
//! The line is what serde's derive of [`CallRecord`]'s `Serialize` writes (the fields in
//! their order, under their names, left out by the same rules; tests hold the two to the
//! same bytes), but each field's name is copied as the literal it is and each string is
//! escaped by [`super::escape`]: serde_json escapes every name byte by byte and walks its
//! field states per field, which was most of the 9,300 instructions serde took to write a
//! gateway's record (docs/performance.md, *What the store costs per call*). The attempts, the timings and the usage
//! are written the same way; the other nested values (the error, the canonical forms) are
//! still serde's.

use super::escape::push_json_str;
use super::{derive, AttemptRecord, CallRecord, Timings};
use serde::Serialize;
use switchyard_wire::Usage;

/// A field's name as the line writes it after the field before: `,"name":`.
macro_rules! name {
    ($name:literal) => {
        concat!(",\"", $name, "\":")
    };
}

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
    let leaving_out = derive::leaves_out(*format);
    let mut line = Line { buf, first: true };
    line.value(name!("format"), format)?;
    line.value(name!("number"), number)?;
    line.opt_string(name!("role"), role.as_deref());
    line.string(name!("reference"), reference);
    line.string(name!("backend"), backend);
    line.string(name!("model"), model);
    line.value(name!("dialect"), dialect)?;
    line.value(name!("stream"), stream)?;
    if !(leaving_out && prompt_digest.is_empty()) {
        line.string(name!("prompt_digest"), prompt_digest);
    }
    if !(leaving_out && derive::is_empty(request)) {
        line.value(name!("request"), request)?;
    }
    if !(leaving_out && parameters.is_empty()) {
        line.value(name!("parameters"), parameters)?;
    }
    line.name(name!("body"));
    match body {
        // What serde_json writes for a raw value: its text as it is.
        Some(raw) => line.buf.extend_from_slice(raw.get().as_bytes()),
        None => line.buf.extend_from_slice(b"null"),
    }
    if !(leaving_out && reply.is_none()) {
        line.value(name!("reply"), reply)?;
    }
    line.some(name!("raw"), raw)?;
    line.name(name!("usage"));
    match usage {
        Some(usage) => write_usage(line.buf, usage)?,
        None => line.buf.extend_from_slice(b"null"),
    }
    if !(leaving_out && usage_reported.is_none()) {
        line.value(name!("usage_reported"), usage_reported)?;
    }
    line.name(name!("attempts"));
    line.buf.push(b'[');
    for (i, attempt) in attempts.iter().enumerate() {
        if i > 0 {
            line.buf.push(b',');
        }
        write_attempt(line.buf, attempt)?;
    }
    line.buf.push(b']');
    line.name(name!("timings"));
    write_timings(line.buf, timings)?;
    line.value(name!("cost_usd"), cost_usd)?;
    line.value(name!("provider_cost_usd"), provider_cost_usd)?;
    line.value(name!("error"), error)?;
    line.some_string(name!("usage_estimated"), usage_estimated);
    line.some_string(name!("client_key"), client_key);
    line.some(name!("client_dialect"), client_dialect)?;
    line.some(name!("embedding"), embedding)?;
    line.some_string(name!("route"), route);
    if *cut {
        line.value(name!("cut"), cut)?;
    }
    line.some(name!("raw_truncated"), raw_truncated)?;
    line.some_string(name!("cache_key"), cache_key);
    line.some(name!("cache_hit"), cache_hit)?;
    line.some_string(name!("cache_hit_call"), cache_hit_call);
    line.some_string(name!("cache_run"), cache_run);
    if *depth_capped {
        line.value(name!("depth_capped"), depth_capped)?;
    }
    line.some_string(name!("usage_suspect"), usage_suspect);
    line.some(name!("over_reservation"), over_reservation)?;
    line.buf.push(b'}');
    Ok(())
}

/// Appends an attempt as serde's derive writes it.
fn write_attempt(buf: &mut Vec<u8>, attempt: &AttemptRecord) -> serde_json::Result<()> {
    let AttemptRecord {
        number,
        wait_before_ms,
        started_at,
        duration_ms,
        status,
        error_kind,
        error,
        reference,
    } = attempt;
    let mut line = Line { buf, first: true };
    line.value(name!("number"), number)?;
    line.value(name!("wait_before_ms"), wait_before_ms)?;
    line.string(name!("started_at"), started_at);
    line.value(name!("duration_ms"), duration_ms)?;
    line.value(name!("status"), status)?;
    line.opt_string(name!("error_kind"), error_kind.as_deref());
    line.opt_string(name!("error"), error.as_deref());
    line.some_string(name!("reference"), reference);
    line.buf.push(b'}');
    Ok(())
}

/// Appends a usage as serde's derive writes it.
fn write_usage(buf: &mut Vec<u8>, usage: &Usage) -> serde_json::Result<()> {
    let Usage {
        input,
        cached_input,
        cache_write,
        output,
        reasoning,
    } = usage;
    let mut line = Line { buf, first: true };
    line.value(name!("input"), input)?;
    line.value(name!("cached_input"), cached_input)?;
    line.value(name!("cache_write"), cache_write)?;
    line.value(name!("output"), output)?;
    line.value(name!("reasoning"), reasoning)?;
    line.buf.push(b'}');
    Ok(())
}

/// Appends a call's timings as serde's derive writes them.
fn write_timings(buf: &mut Vec<u8>, timings: &Timings) -> serde_json::Result<()> {
    let Timings {
        started_at,
        ended_at,
        first_byte_ms,
        duration_ms,
    } = timings;
    let mut line = Line { buf, first: true };
    line.string(name!("started_at"), started_at);
    line.string(name!("ended_at"), ended_at);
    line.value(name!("first_byte_ms"), first_byte_ms)?;
    line.value(name!("duration_ms"), duration_ms)?;
    line.buf.push(b'}');
    Ok(())
}

/// An object being written: its buffer, and whether a field is still to come first.
struct Line<'a> {
    buf: &'a mut Vec<u8>,
    first: bool,
}

impl Line<'_> {
    /// Opens a field: `name` is its name as [`name!`] writes it (a plain identifier,
    /// nothing in it to escape), whose comma opens the object instead for the first.
    fn name(&mut self, name: &str) {
        let name = name.as_bytes();
        if self.first {
            self.first = false;
            self.buf.push(b'{');
            self.buf.extend_from_slice(&name[1..]);
        } else {
            self.buf.extend_from_slice(name);
        }
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
        let mut retried = r.attempts[0].clone();
        retried.number = 2;
        retried.wait_before_ms = 0.1 + 0.2;
        retried.duration_ms = f64::NAN;
        retried.status = Some(429);
        retried.error_kind = Some("RateLimited".into());
        retried.error = Some("too \"many\"\n".into());
        retried.reference = Some("b/m".into());
        r.attempts.push(retried);
        r.timings.first_byte_ms = Some(1e-7);
        r.timings.duration_ms = 12345.678;
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
        let mut no_attempts = exchanged();
        no_attempts.attempts.clear();
        no_attempts.body = None;
        no_attempts.usage = None;
        for record in [
            sample(),
            exchanged(),
            no_attempts,
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
    proptest::proptest! {
        /// Any text in the strings the line writes itself, any float in the timings and
        /// attempts: the same bytes as serde's.
        #[test]
        fn any_strings_and_times_are_written_as_serde_writes_them(
            texts in proptest::collection::vec(proptest::prelude::any::<String>(), 6),
            times in proptest::collection::vec(proptest::prelude::any::<f64>(), 4),
            counts in proptest::collection::vec(proptest::prelude::any::<u64>(), 5),
            derived in proptest::prelude::any::<bool>(),
        ) {
            let mut r = full(if derived { DERIVED_FORMAT } else { crate::record::FORMAT });
            r.role = Some(texts[0].clone());
            r.reference = texts[1].clone();
            r.model = texts[2].clone();
            r.timings.started_at = texts[3].clone();
            r.attempts[1].error = Some(texts[4].clone());
            r.cache_key = Some(texts[5].clone());
            r.timings.first_byte_ms = Some(times[0]);
            r.timings.duration_ms = times[1];
            r.attempts[0].wait_before_ms = times[2];
            r.attempts[1].duration_ms = times[3];
            r.usage = Some(Usage {
                input: counts[0],
                cached_input: counts[1],
                cache_write: counts[2],
                output: counts[3],
                reasoning: counts[4],
            });
            let mut by_hand = Vec::new();
            write_record(&mut by_hand, &r).unwrap();
            let mut by_serde = Vec::new();
            derive::to_line_by_serde(&mut by_serde, &r).unwrap();
            proptest::prop_assert_eq!(by_hand, by_serde);
        }
    }
}

//! A record made ready for the call log where its call ended: completed, serialised as its
//! line, redacted, its index row and cache entry taken. What is left, its number and its
//! place in the log, the recorder's writer gives in the order it writes, so the log stays a
//! gap-free sequence whoever prepared its lines.
//!
//! Why a record may be prepared off the writer's thread: in the gateway, a thread that
//! wakes for a batch of records takes a core from the lanes serving calls for the whole
//! batch's work, and the calls that waited for that core made the tail of the latency
//! (`docs/performance.md`, *What stalls the lanes*). Prepared by the lane once its call's
//! reply has gone out, the same work is spread evenly over the calls, and the writer's
//! share of a batch is copying its lines into one `write`.

use super::depth::{cap_depth, first_too_deep, openers_at_most, MAX_RECORD_DEPTH};
use super::index_row::IndexRow;
use super::segment::Location;
use super::CallRecord;
use crate::internal::redact::{redact_json, redact_shared_since, Redacted};
use std::cell::RefCell;
use std::io::Write;

/// A record serialised with its number still to write.
#[derive(Debug)]
pub struct PreparedRecord {
    /// The line (no newline), numbered [`PLACEHOLDER`].
    line: Vec<u8>,
    /// Where the placeholder's digit is in `line`.
    number_at: usize,
    /// The raw bytes written after the line (record format 4), redacted.
    after: Option<bytes::Bytes>,
    /// The record's row in the calls index, its number and place still to set.
    row: IndexRow,
    /// The response cache's entry, when the recorder feeds a cache and the record makes one.
    cache_entry: Option<(String, crate::cache::Entry)>,
}

/// A reply's bytes as received, given apart from its record to be written after its line
/// (format 4), with the keys they were redacted under where they entered, when known: the
/// writer searches them again only when a key was added since.
#[derive(Debug, Clone)]
pub struct RawReply {
    /// The bytes.
    pub bytes: bytes::Bytes,
    /// The keys they were redacted under ([`RawResponse::redacted`]), when known.
    ///
    /// [`RawResponse::redacted`]: crate::backend::http::RawResponse::redacted
    pub redacted: Option<Redacted>,
}

impl From<bytes::Bytes> for RawReply {
    /// Bytes of unknown provenance: searched for keys as they are written.
    fn from(bytes: bytes::Bytes) -> Self {
        RawReply {
            bytes,
            redacted: None,
        }
    }
}

/// The number a line is serialised with until the writer numbers it: one digit, which
/// the writer replaces with the record's number.
const PLACEHOLDER: u64 = 0;

/// A scratch line kept by each thread that prepares records, and the most of its
/// capacity it keeps between two records (a record of 64 MiB does not pin 64 MiB to a
/// lane for good).
const SCRATCH_KEPT: usize = 1 << 20;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl PreparedRecord {
    /// Completes `record` with the fields derived from its call and the reply's raw bytes
    /// `raw` (see [`finish_record`]) and serialises it; takes the cache's entry too when
    /// `cache_entry`. The error says why the record cannot be written.
    pub(crate) fn new(
        mut record: CallRecord,
        raw: Option<RawReply>,
        cache_entry: bool,
    ) -> Result<PreparedRecord, String> {
        // Bytes the record held itself are not known to be redacted.
        let redacted = raw.as_ref().and_then(|r| r.redacted);
        let after = finish_record(&mut record, raw.map(|r| r.bytes));
        let has_raw = record.raw.is_some() || after.is_some();
        record.number = PLACEHOLDER;
        // Serialised into a scratch buffer, then copied at its size: one allocation per
        // record, none wasted while the record waits for the writer.
        let serialised = SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            scratch.clear();
            let (clean, after) = write_line(&mut scratch, &mut record, after, redacted)?;
            let number_at = number_at(&scratch)
                .ok_or_else(|| "its line does not begin with its format and number".to_string())?;
            let line = scratch.as_slice().to_vec();
            if scratch.capacity() > SCRATCH_KEPT {
                *scratch = Vec::new();
            }
            Ok::<_, String>((line, number_at, clean, after))
        });
        let (line, number_at, clean, after) = serialised?;
        // The cache's entry first: the row takes the record's strings.
        let cache_entry = cache_entry
            .then(|| crate::cache::Entry::of_with_raw(&record, has_raw, None))
            .flatten();
        let nowhere = Location {
            segment: 0,
            offset: 0,
            len: 0,
        };
        let row = IndexRow::taking(&mut record, nowhere, clean, has_raw);
        Ok(PreparedRecord {
            line,
            number_at,
            after,
            row,
            cache_entry,
        })
    }

    /// Appends the line numbered `number` to `buf`, with the raw bytes after it in format 4
    /// (no final newline); gives the record's row and cache entry, numbered too (their
    /// place is the writer's to set).
    pub(crate) fn place(
        self,
        buf: &mut Vec<u8>,
        number: u64,
    ) -> (IndexRow, Option<(String, crate::cache::Entry)>) {
        // The placeholder's one digit becomes at most 20 (`u64::MAX`).
        let after_len = self.after.as_ref().map_or(0, |a| a.len() + 1);
        buf.reserve(self.line.len() + 19 + after_len);
        buf.extend_from_slice(&self.line[..self.number_at]);
        // Writing into a `Vec` cannot fail.
        let _ = write!(buf, "{number}");
        buf.extend_from_slice(&self.line[self.number_at + 1..]);
        if let Some(after) = &self.after {
            buf.push(b'\n');
            buf.extend_from_slice(after);
        }
        let mut row = self.row;
        row.number = number;
        let cache_entry = self.cache_entry.map(|(key, mut entry)| {
            entry.number = number;
            (key, entry)
        });
        (row, cache_entry)
    }
}

/// Where the placeholder's digit is in a line: every line begins with its format, then
/// its number (`{"format":3,"number":0,…`).
fn number_at(line: &[u8]) -> Option<usize> {
    const FORMAT: &[u8] = b"{\"format\":";
    const NUMBER: &[u8] = b",\"number\":";
    let after_format = line.strip_prefix(FORMAT)?;
    let format_digits = after_format
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let after_number = after_format[format_digits..].strip_prefix(NUMBER)?;
    let at = line.len() - after_number.len();
    let placeholder = b'0' + PLACEHOLDER as u8;
    (format_digits > 0
        && after_number.first() == Some(&placeholder)
        && matches!(after_number.get(1), Some(b',' | b'}')))
    .then_some(at)
}

/// Fills the fields derived from the call: the prompt digest, the parameters, the raw
/// bytes and the usage as the provider reported it.
/// A record of format 3 ([`super::DERIVED_FORMAT`]) leaves the derived ones out, and its
/// raw bytes, given apart or in the record, come back to be written after its line.
fn finish_record(record: &mut CallRecord, raw: Option<bytes::Bytes>) -> Option<bytes::Bytes> {
    if super::leaves_out(record.format) {
        return raw.or_else(|| {
            let bytes = record.raw.as_ref()?.to_bytes().ok()?;
            record.raw = None;
            Some(bytes)
        });
    }
    if record.prompt_digest.is_empty() {
        record.prompt_digest = super::prompt_digest(&record.request);
    }
    if record.parameters.is_empty() {
        record.parameters = super::parameters(&record.request);
    }
    if let Some(raw) = raw {
        let encoded = super::RawBytes::new(&raw);
        if record.reply.is_some() || record.embedding.is_some() {
            // A stream is read from the text the encoding already checked as UTF-8.
            record.usage_reported = match (&encoded, record.stream) {
                (super::RawBytes::Utf8(text), true) => super::usage_in_stream(text),
                _ => super::reported_usage(&raw, record.stream, record.dialect),
            };
        }
        record.raw = Some(encoded);
    }
    None
}

/// Appends `record` as JSON (without its newline). Raw bytes in the record, most of it
/// and dense with quotes, are escaped by [`super::escape`] and written as the line's last
/// field; raw bytes given apart (`after`) are written after the line (format 4), and the
/// line's last field says how many. Every key the process holds is redacted from the
/// line (the request, the reply, the attempts' errors, the headers kept), whatever field
/// it came in by, and from the bytes after it. Gives whether the strings the line holds
/// are known to hold no key ([`redact_json`]'s answer), and the bytes to write after the
/// line, redacted (none when they went into the line; not searched again when they were
/// `redacted` under the keys held now).
fn write_line(
    buf: &mut Vec<u8>,
    record: &mut CallRecord,
    after: Option<bytes::Bytes>,
    redacted: Option<Redacted>,
) -> std::result::Result<(bool, Option<bytes::Bytes>), String> {
    // Redacted before the line says their length.
    let after = after.map(|bytes| redact_shared_since(bytes, redacted));
    let start = buf.len();
    let after = write_fields(buf, record, after)?;
    let (clean, strings_clean) = redact_json(&buf[start..]);
    if let std::borrow::Cow::Owned(clean) = clean {
        buf.truncate(start);
        buf.extend_from_slice(&clean);
    }
    Ok((strings_clean, after))
}

/// The record's fields, then its raw bytes, as one line; or, with bytes `after` it, the
/// fields in format 4 ([`super::RAW_AFTER_FORMAT`]) ending with their length. Gives the
/// bytes still to write after the line.
///
/// The line never nests deeper than a reader reads ([`MAX_RECORD_DEPTH`]): the rest is
/// scanned (the raw bytes are a string, they add no depth), and a record that would pass
/// the bound is written again marked `depth_capped`, its values past the bound as strings
/// of their JSON text ([`cap_depth`]), and read back before it is kept; one that still
/// does not read is not written (an error, as a record that does not serialise).
fn write_fields(
    buf: &mut Vec<u8>,
    record: &mut CallRecord,
    mut after: Option<bytes::Bytes>,
) -> std::result::Result<Option<bytes::Bytes>, String> {
    let start = buf.len();
    let mut raw = record.raw.take();
    if after.is_some() {
        record.format = super::RAW_AFTER_FORMAT;
    }
    let mut written = super::derive::to_line(buf, record).map_err(|e| e.to_string());
    let deep = |line: &[u8]| {
        !openers_at_most(line, MAX_RECORD_DEPTH) && first_too_deep(line, MAX_RECORD_DEPTH).is_some()
    };
    if written.is_ok() && deep(&buf[start..]) {
        buf.truncate(start);
        if super::leaves_out(record.format) {
            // Its canonical forms are derived here, from the body and bytes as they came,
            // and written in format 2: derived on read from a body kept in part as text,
            // they would not be those a capped line of format 2 keeps. Its raw bytes go
            // into the line, as format 2 keeps them.
            record.raw = raw.or_else(|| after.take().map(|a| super::RawBytes::new(&a)));
            super::derive::fill(record);
            raw = record.raw.take();
            record.format = super::FORMAT;
        }
        record.depth_capped = true;
        written = super::derive::to_line(buf, record)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                let capped = cap_depth(&buf[start..], MAX_RECORD_DEPTH);
                buf.truncate(start);
                buf.extend_from_slice(&capped);
                super::read::parse_record_line(&capped).map(|_| ()).map_err(|e| {
                    format!("it nests deeper than a record may ({MAX_RECORD_DEPTH} levels) and does not read once its deepest values are kept as text: {e}")
                })
            });
    }
    if written.is_ok() {
        // A record serialises as an object: its closing brace is the last byte.
        debug_assert_eq!(buf.last(), Some(&b'}'));
        if let Some(raw) = &raw {
            buf.pop();
            buf.extend_from_slice(b",\"raw\":");
            super::escape::push_raw(buf, raw);
            buf.push(b'}');
        } else if let Some(after) = &after {
            buf.pop();
            super::segment::push_raw_after(buf, after.len());
        }
    }
    record.raw = raw;
    written.map(|()| after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::writer::tests::sample;
    use serde_json::Value;

    /// The line as the writer wrote it before records were prepared: serialised with its
    /// number.
    fn serialised_with(mut record: CallRecord, number: u64) -> Vec<u8> {
        let after = finish_record(&mut record, None);
        record.number = number;
        let mut line = Vec::new();
        let (_, after) = write_line(&mut line, &mut record, after, None).unwrap();
        if let Some(after) = after {
            line.push(b'\n');
            line.extend_from_slice(&after);
        }
        line
    }

    fn nested(levels: usize) -> Value {
        (0..levels).fold(Value::from(7), |v, _| Value::Array(vec![v]))
    }

    /// Numbered when placed, a prepared line is byte for byte the line serialised with
    /// its number, at every width of number, for a plain record, one nested past the
    /// bound (written again, capped) and one holding a key (redacted); its row and cache
    /// entry carry the number too.
    #[test]
    fn a_prepared_line_numbered_is_the_line_serialised_with_its_number() {
        let key = "sk-prepare-test-0123456789abcdef";
        crate::internal::redact::register(key, "a test key");
        let mut deep = sample();
        deep.usage_reported = Some(serde_json::json!({"n": nested(300)}));
        let mut keyed = sample();
        keyed.model = format!("m-{key}");
        let mut cached = sample();
        cached.cache_key = Some("k1".to_string());
        // Format 3 with raw bytes: written in format 4, the bytes after the line.
        let mut after = sample();
        after.format = crate::record::DERIVED_FORMAT;
        after.raw = Some(crate::record::RawBytes::new(
            format!("data: {{\"k\":\"{key}\"}}\n\n").as_bytes(),
        ));
        for record in [sample(), deep, keyed, cached, after] {
            for number in [1, 9, 10, 99, 100, 65_536, 123_456_789, u64::MAX] {
                let expected = serialised_with(record.clone(), number);
                let prepared = PreparedRecord::new(record.clone(), None, true).unwrap();
                let mut buf = b"previous line\n".to_vec();
                let (row, entry) = prepared.place(&mut buf, number);
                assert_eq!(
                    String::from_utf8_lossy(&buf[14..]),
                    String::from_utf8_lossy(&expected),
                    "number {number}"
                );
                assert_eq!(row.number, number);
                if let Some((_, entry)) = entry {
                    assert_eq!(entry.number, number);
                }
                assert!(!buf.windows(key.len()).any(|w| w == key.as_bytes()));
            }
        }
    }

    /// Raw bytes given apart are written after the line as they are when they were
    /// redacted under the keys held now, and searched again when a key was added since.
    #[test]
    fn raw_bytes_redacted_under_older_keys_are_searched_again() {
        use crate::internal::redact::{register, StreamRedactor};
        register("sk-prepare-first-0123456789abcd", "a test key");
        let later = "sk-prepare-later-0123456789abcd";
        let stale = StreamRedactor::new().redacted();
        register(later, "a test key");
        let mut record = sample();
        record.format = crate::record::DERIVED_FORMAT;
        let raw = bytes::Bytes::from(format!("data: {{\"k\":\"{later}\"}}\n\n"));
        for redacted in [Some(stale), None] {
            let prepared = PreparedRecord::new(
                record.clone(),
                Some(RawReply {
                    bytes: raw.clone(),
                    redacted,
                }),
                false,
            )
            .unwrap();
            let mut buf = Vec::new();
            prepared.place(&mut buf, 1);
            let text = String::from_utf8_lossy(&buf);
            assert!(!text.contains(later), "{redacted:?}: {text}");
            assert!(text.contains("data: {\"k\":\"[redacted]\"}"), "{text}");
        }
    }

    #[test]
    fn a_line_that_does_not_begin_with_its_format_and_number_has_no_place_for_one() {
        assert_eq!(
            number_at(br#"{"format":3,"number":0,"role":"a"}"#),
            Some(21)
        );
        assert_eq!(number_at(br#"{"format":3,"number":0}"#), Some(21));
        for line in [
            &br#"{"number":0,"format":3}"#[..],
            br#"{"format":3,"number":7,"role":"a"}"#,
            br#"{"format":3,"number":01}"#,
            br#"{"format":3,"role":"a","number":0}"#,
            br#"{"format":3,"number":"#,
            br#"{"format":,"number":0}"#,
            b"",
        ] {
            assert_eq!(number_at(line), None, "{}", String::from_utf8_lossy(line));
        }
    }
}

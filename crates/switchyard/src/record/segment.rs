//! The call log's files: append-only segments `llm_log/segment-000001.jsonl`, one record
//! per line, and where a record lies in them.
//!
//! A record is its line, or, in record format 4, its line followed by its raw bytes as
//! they were received: the line then ends with `,"raw_after":<their length>}`, and a
//! `\n` and the bytes follow it (a line holds no `\n` of its own, so the line's end is
//! found by a scan and the bytes' end by the length). A record ends with `\n`: the
//! writer appends whole records, so an unterminated last one can only be a write cut
//! short (a process killed in the middle of a large write, a power cut, a full disk).
//! Readers drop it; `--resume` truncates it before appending.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The file name prefix of a segment.
pub(super) const SEGMENT_PREFIX: &str = "segment-";
/// The file name extension of a segment.
pub(super) const SEGMENT_EXT: &str = ".jsonl";
/// A segment is closed and the next one started once it holds this many bytes (checked
/// between batches of records, so a segment can be a batch longer).
pub const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;

/// Where a record lies: its segment, the offset of its line, and its length without its
/// final `\n` (its line's; in format 4, the line's, a `\n` and the raw bytes').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// The segment's number (`segment-000001.jsonl` is 1).
    pub segment: u32,
    /// The byte offset of the record's line in the segment.
    pub offset: u64,
    /// The record's length in bytes, without its final `\n`.
    pub len: u32,
}

impl Location {
    /// The offset just past the record's final `\n`.
    pub fn end(&self) -> u64 {
        self.offset + self.len as u64 + 1
    }
}

/// A segment's file name.
pub fn segment_name(segment: u32) -> String {
    format!("{SEGMENT_PREFIX}{segment:06}{SEGMENT_EXT}")
}

/// The path of a segment in a log folder.
pub fn segment_path(log: &Path, segment: u32) -> PathBuf {
    log.join(segment_name(segment))
}

/// The segments of a log folder, sorted. An absent folder holds none.
pub fn segment_ids(log: &Path) -> Result<Vec<u32>> {
    let entries = match std::fs::read_dir(log) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::Config(format!("cannot read {}: {e}", log.display()))),
    };
    let mut ids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let name = name.to_str()?;
            name.strip_prefix(SEGMENT_PREFIX)?
                .strip_suffix(SEGMENT_EXT)?
                .parse()
                .ok()
        })
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// True when a log folder holds records of format 1 (one `<number>.json` file per call),
/// which this version does not read.
pub(super) fn holds_format_1(log: &Path) -> bool {
    std::fs::read_dir(log).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.len() == 13
                && name.ends_with(".json")
                && name[..8].bytes().all(|b| b.is_ascii_digit())
        })
    })
}

/// The last field of a line whose raw bytes follow it, before their length and `}`.
const RAW_AFTER: &[u8] = b",\"raw_after\":";

/// How many raw bytes follow `line` (its record's first line), when its last field says
/// some do.
pub(super) fn raw_after(line: &[u8]) -> Option<usize> {
    let body = line.strip_suffix(b"}")?;
    let digits = body.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let (head, number) = body.split_at(body.len() - digits);
    if !head.ends_with(RAW_AFTER) || digits == 0 || digits > 19 {
        return None;
    }
    std::str::from_utf8(number).ok()?.parse().ok()
}

/// Writes the field [`raw_after`] reads, for `len` raw bytes, and closes the object.
pub(super) fn push_raw_after(buf: &mut Vec<u8>, len: usize) {
    buf.extend_from_slice(RAW_AFTER);
    buf.extend_from_slice(len.to_string().as_bytes());
    buf.push(b'}');
}

/// A record's line: its bytes without the raw bytes after the line, if any.
pub fn line_of(record: &[u8]) -> &[u8] {
    split_record(record).0
}

/// A record's bytes (without its final `\n`) as its line and the bytes after the line,
/// if any.
pub(super) fn split_record(record: &[u8]) -> (&[u8], Option<&[u8]>) {
    match memchr::memchr(b'\n', record) {
        Some(end) => (&record[..end], Some(&record[end + 1..])),
        None => (record, None),
    }
}

/// Where the record that starts at `at` of a segment's bytes ends: the offset of its
/// final `\n`, or `None` when it is cut short.
///
/// A line that says more raw bytes follow it than the segment holds is cut short, or
/// still being written when the segment is `growing` (the last segment of a log being
/// written, read by a reader that comes back for the rest). In a segment at rest it is
/// cut short when nothing after it begins another record; when something does, its length
/// is damaged, and the record is taken as its line alone (which then does not read, and is
/// set aside) so that the records after it are read, not dropped with it. Raw bytes that
/// look like a record's beginning (a reply can hold any text) can make a cut-short record
/// read as damaged: its line and its bytes are then set aside, and nothing is lost.
fn record_end(bytes: &[u8], at: usize, growing: bool) -> Option<usize> {
    let line_end = at + memchr::memchr(b'\n', &bytes[at..])?;
    let Some(len) = raw_after(&bytes[at..line_end]) else {
        return Some(line_end);
    };
    let end = (line_end + 1).checked_add(len);
    match end.and_then(|end| Some((end, *bytes.get(end)?))) {
        Some((end, b'\n')) => Some(end),
        // Not a record's end where the bytes should end: a damaged length.
        Some(_) => Some(line_end),
        None if !growing && begins_a_record_after(&bytes[line_end..]) => Some(line_end),
        None => None,
    }
}

/// Whether another record's line begins in `rest` (after a newline).
fn begins_a_record_after(rest: &[u8]) -> bool {
    memchr::memmem::find(rest, b"\n{\"format\":").is_some()
}

/// The complete records of a segment's bytes from `from` (a record's start), with their
/// offsets and bytes without the final `\n` (an unterminated last one is left out).
pub(super) fn lines(bytes: &[u8], from: u64) -> impl Iterator<Item = (u64, &[u8])> {
    lines_in(bytes, from, false)
}

/// [`lines`] of a segment at rest, or `growing` (see [`record_end`]).
pub(super) fn lines_in(
    bytes: &[u8],
    from: u64,
    growing: bool,
) -> impl Iterator<Item = (u64, &[u8])> {
    let mut at = (from as usize).min(bytes.len());
    std::iter::from_fn(move || {
        let end = record_end(bytes, at, growing)?;
        let line = (at as u64, &bytes[at..end]);
        at = end + 1;
        Some(line)
    })
}

/// The complete records of a segment's bytes, as every reader of the log takes them
/// (each without its final `\n`): for a reader of a segment's bytes that are not in a
/// log folder.
pub fn segment_records(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    lines(bytes, 0).map(|(_, record)| record)
}

/// The length of the complete records of a segment's bytes (what is kept of it when an
/// unterminated last one is dropped).
pub(super) fn complete_len(bytes: &[u8]) -> u64 {
    complete_len_in(bytes, false)
}

/// [`complete_len`] of a segment at rest, or `growing` (see [`record_end`]).
pub(super) fn complete_len_in(bytes: &[u8], growing: bool) -> u64 {
    lines_in(bytes, 0, growing)
        .last()
        .map_or(0, |(offset, line)| offset + line.len() as u64 + 1)
}

/// The number of the record on a line, read from its start (`{"format":2,"number":N,`
/// as the writer lays it out) or, for a line laid out otherwise, by parsing it.
pub(super) fn line_number(line: &[u8]) -> Option<u64> {
    fn digits(s: &[u8]) -> Option<(u64, &[u8])> {
        let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
        let v = std::str::from_utf8(&s[..n]).ok()?.parse().ok()?;
        Some((v, &s[n..]))
    }
    let fast = line
        .strip_prefix(b"{\"format\":")
        .and_then(digits)
        .and_then(|(_, rest)| rest.strip_prefix(b",\"number\":"))
        .and_then(digits)
        .map(|(n, _)| n);
    if fast.is_some() {
        return fast;
    }
    #[derive(serde::Deserialize)]
    struct Number {
        number: u64,
    }
    super::depth::from_slice_bounded::<Number>(line, super::depth::MAX_RECORD_DEPTH)
        .ok()
        .map(|n| n.number)
}

/// Reads a segment whole (segments are bounded by [`SEGMENT_BYTES`] and a batch).
pub(super) fn read_segment(log: &Path, segment: u32) -> Result<Vec<u8>> {
    let path = segment_path(log, segment);
    std::fs::read(&path).map_err(|e| Error::Config(format!("cannot read {}: {e}", path.display())))
}

/// Every record line of a log folder, in order, from `from` (a segment and an offset in
/// it) on: calls `f` with each line's location and bytes; stops at `f`'s first error.
pub(super) fn for_each_line(
    log: &Path,
    from: Option<(u32, u64)>,
    mut f: impl FnMut(Location, &[u8]) -> Result<()>,
) -> Result<()> {
    let (first, offset) = from.unwrap_or((0, 0));
    for segment in segment_ids(log)? {
        if segment < first {
            continue;
        }
        let bytes = read_segment(log, segment)?;
        let start = if segment == first { offset } else { 0 };
        for (offset, line) in lines(&bytes, start) {
            f(
                Location {
                    segment,
                    offset,
                    len: line.len() as u32,
                },
                line,
            )?;
        }
    }
    Ok(())
}

/// Reads the line at `at`, checking that it is whole.
pub(super) fn read_line(log: &Path, at: Location) -> Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let path = segment_path(log, at.segment);
    let fail = |e: std::io::Error| {
        Error::Config(format!(
            "cannot read {} at offset {}: {e}",
            path.display(),
            at.offset
        ))
    };
    let mut file = std::fs::File::open(&path).map_err(fail)?;
    file.seek(SeekFrom::Start(at.offset)).map_err(fail)?;
    let mut buf = vec![0; at.len as usize + 1];
    file.read_exact(&mut buf).map_err(fail)?;
    if buf.pop() != Some(b'\n') {
        return Err(Error::Config(format!(
            "{} at offset {}: not the start of a whole record line",
            path.display(),
            at.offset
        )));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unterminated_last_line_is_not_a_line() {
        let bytes =
            b"{\"format\":2,\"number\":1,\"a\":1}\n{\"format\":2,\"number\":2}\n{\"format\":2,\"nu";
        let found: Vec<_> = lines(bytes, 0).collect();
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].0, 30);
        assert_eq!(line_number(found[1].1), Some(2));
        assert_eq!(complete_len(bytes), 54);
        assert_eq!(complete_len(b"{\"format\""), 0);
    }

    /// A record of format 4: its line, then its raw bytes (newlines among them).
    fn with_raw_after(number: u64, raw: &[u8]) -> Vec<u8> {
        let mut r = format!("{{\"format\":4,\"number\":{number},\"a\":1").into_bytes();
        push_raw_after(&mut r, raw.len());
        r.push(b'\n');
        r.extend_from_slice(raw);
        r.push(b'\n');
        r
    }

    #[test]
    fn raw_bytes_after_a_line_are_part_of_its_record_whatever_they_hold() {
        let raw: &[u8] = b"data: {\"a\":1}\n\ndata: [DONE]\n\n\xff\n{\"format\":2}";
        let mut bytes = b"{\"format\":2,\"number\":1}\n".to_vec();
        let second = bytes.len() as u64;
        bytes.extend(with_raw_after(2, raw));
        let third = bytes.len() as u64;
        bytes.extend(with_raw_after(3, b""));
        bytes.extend(b"{\"format\":2,\"number\":4}\n");
        let found: Vec<_> = lines(&bytes, 0).collect();
        let numbers: Vec<_> = found.iter().map(|(_, l)| line_number(l)).collect();
        assert_eq!(numbers, [Some(1), Some(2), Some(3), Some(4)]);
        assert_eq!(found[1].0, second);
        assert_eq!(found[2].0, third);
        let (line, after) = split_record(found[1].1);
        assert_eq!(raw_after(line), Some(raw.len()));
        assert_eq!(after, Some(raw));
        assert_eq!(line_of(found[1].1), line);
        assert_eq!(split_record(found[2].1).1, Some(&b""[..]));
        assert_eq!(split_record(found[0].1), (found[0].1, None));
        assert_eq!(complete_len(&bytes), bytes.len() as u64);
        // Read from the second record's start, as a reader that tails the log does.
        assert_eq!(lines(&bytes, second).count(), 3);
    }

    #[test]
    fn a_record_cut_short_anywhere_in_its_raw_bytes_is_not_a_record() {
        let first = b"{\"format\":2,\"number\":1}\n".to_vec();
        let whole = [first.clone(), with_raw_after(2, b"a\nb\n\nc")].concat();
        for cut in first.len()..whole.len() {
            let bytes = &whole[..cut];
            assert_eq!(lines(bytes, 0).count(), 1, "cut at {cut}");
            assert_eq!(complete_len(bytes), first.len() as u64, "cut at {cut}");
        }
        assert_eq!(lines(&whole, 0).count(), 2);
    }

    #[test]
    fn a_damaged_length_sets_its_line_apart_and_the_records_after_it_read() {
        let second = with_raw_after(2, b"x\ny");
        let third = b"{\"format\":2,\"number\":3}\n";
        for (from, to) in [
            ("\"raw_after\":3}", "\"raw_after\":2}"),
            ("\"raw_after\":3}", "\"raw_after\":900}"),
        ] {
            let damaged = String::from_utf8(second.clone()).unwrap().replace(from, to);
            let bytes = [damaged.as_bytes(), third].concat();
            let found: Vec<_> = lines(&bytes, 0).collect();
            // Its line alone (which does not read: its bytes are not after it), then the
            // bytes that were after it as lines of their own, then the next record.
            assert_eq!(line_number(found[0].1), Some(2), "{to}");
            assert_eq!(split_record(found[0].1).1, None, "{to}");
            assert_eq!(line_number(found.last().unwrap().1), Some(3), "{to}");
            assert_eq!(complete_len(&bytes), bytes.len() as u64, "{to}");
        }
    }

    /// Raw bytes that look like a record's beginning, cut short: in a segment at rest the
    /// line is set apart with what follows it (nothing dropped); in a growing one the
    /// record is not there yet.
    #[test]
    fn a_growing_segment_waits_for_a_record_whose_bytes_look_like_another() {
        let first = b"{\"format\":2,\"number\":1}\n".to_vec();
        let whole = [
            first.clone(),
            with_raw_after(2, b"data: x\n{\"format\":2,\"number\":9}\nmore"),
        ]
        .concat();
        let cut = &whole[..whole.len() - 3];
        assert_eq!(lines_in(cut, 0, true).count(), 1);
        assert_eq!(complete_len_in(cut, true), first.len() as u64);
        let at_rest: Vec<_> = lines(cut, 0).map(|(_, l)| line_number(l)).collect();
        assert_eq!(at_rest, [Some(1), Some(2), None, Some(9)]);
        assert_eq!(lines_in(&whole, 0, true).count(), 2);
    }

    #[test]
    fn only_a_last_field_of_digits_says_raw_bytes_follow() {
        assert_eq!(raw_after(br#"{"format":4,"raw_after":12}"#), Some(12));
        for line in [
            &br#"{"format":4,"raw_after":}"#[..],
            br#"{"format":4,"raw_after":"12"}"#,
            br#"{"format":4,"x":{"raw_after":12}}"#,
            br#"{"format":4,"raw_after":12,"b":1}"#,
            br#"{"format":4,"raw_after":99999999999999999999}"#,
            br#"{"format":4,"raw_after":12"#,
            b"",
        ] {
            assert_eq!(raw_after(line), None, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn a_number_is_read_from_the_start_or_by_parsing() {
        assert_eq!(
            line_number(b"{\"format\":2,\"number\":42,\"role\":null}"),
            Some(42)
        );
        assert_eq!(line_number(b"{\"number\": 7, \"format\": 2}"), Some(7));
        assert_eq!(line_number(b"{\"format\":2,\"numb"), None);
    }

    #[test]
    fn segment_names_sort_and_parse() {
        assert_eq!(segment_name(1), "segment-000001.jsonl");
        let dir = tempfile::tempdir().unwrap();
        for name in ["segment-000002.jsonl", "segment-000001.jsonl", "notes.txt"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        assert_eq!(segment_ids(dir.path()).unwrap(), vec![1, 2]);
        assert!(!holds_format_1(dir.path()));
        std::fs::write(dir.path().join("00000001.json"), "{}").unwrap();
        assert!(holds_format_1(dir.path()));
    }
}

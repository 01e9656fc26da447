//! The call log's files: append-only segments `llm_log/segment-000001.jsonl`, one record
//! per line, and where a record lies in them.
//!
//! A line is a record only when it ends with `\n`: the writer appends whole lines, so
//! an unterminated last line can only be a write cut short (a process killed in the
//! middle of a large write, a power cut, a full disk). Readers drop it; `--resume`
//! truncates it before appending.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The file name prefix of a segment.
pub(super) const SEGMENT_PREFIX: &str = "segment-";
/// The file name extension of a segment.
pub(super) const SEGMENT_EXT: &str = ".jsonl";
/// A segment is closed and the next one started once it holds this many bytes (checked
/// between batches of records, so a segment can be a batch longer).
pub const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;

/// Where a record lies: its segment, the offset of its line, and the line's length
/// without its `\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// The segment's number (`segment-000001.jsonl` is 1).
    pub segment: u32,
    /// The byte offset of the record's line in the segment.
    pub offset: u64,
    /// The line's length in bytes, without the `\n`.
    pub len: u32,
}

impl Location {
    /// The offset just past the line's `\n`.
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

/// The complete lines of a segment's bytes from `from`, with their offsets and lengths
/// (an unterminated last line is left out).
pub(super) fn lines(bytes: &[u8], from: u64) -> impl Iterator<Item = (u64, &[u8])> {
    let mut at = (from as usize).min(bytes.len());
    std::iter::from_fn(move || {
        let rest = &bytes[at..];
        let end = memchr(b'\n', rest)?;
        let line = (at as u64, &rest[..end]);
        at += end + 1;
        Some(line)
    })
}

/// The length of the complete lines of a segment's bytes (what is kept of it when an
/// unterminated last line is dropped).
pub(super) fn complete_len(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i as u64 + 1)
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
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

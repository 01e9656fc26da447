//! Reading a run's records back from its segments.

use super::depth::{from_slice_bounded, MAX_RECORD_DEPTH};
use super::run_dir::LOG_DIR;
use super::segment::{self, Location};
use super::CallRecord;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// A line of a log that is not a record this version reads (cut short and followed by
/// another, not UTF-8, not JSON, nested deeper than [`MAX_RECORD_DEPTH`], a field of the
/// wrong type…): readers set it aside, say so, and read the rest of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    /// The segment file holding it.
    pub path: PathBuf,
    /// Where it lies.
    pub at: Location,
    /// The record number it starts with, when one can be read.
    pub number: Option<u64>,
    /// Why it does not read.
    pub reason: String,
}

impl std::fmt::Display for SetAside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at offset {} ({} bytes",
            self.path.display(),
            self.at.offset,
            self.at.len
        )?;
        if let Some(n) = self.number {
            write!(f, ", call {n}")?;
        }
        write!(f, "): {}", self.reason)
    }
}

impl SetAside {
    fn new(log: &Path, at: Location, line: &[u8], reason: String) -> SetAside {
        SetAside {
            path: segment::segment_path(log, at.segment),
            at,
            number: segment::line_number(line),
            reason,
        }
    }

    /// Logs it as a warning (the rest of the log is read).
    pub fn warn(&self) {
        tracing::warn!("set aside a line of the call log that does not read: {self}; the rest of the log is read");
    }
}

/// What a log holds: its records in order, and the lines set aside.
#[derive(Debug, Default)]
pub struct LogRead {
    /// The records, in the log's order.
    pub records: Vec<CallRecord>,
    /// The lines that are not records this version reads.
    pub set_aside: Vec<SetAside>,
}

/// The call log folder of a run directory.
pub fn log_dir(run_dir: &Path) -> PathBuf {
    run_dir.join(LOG_DIR)
}

/// Refuses a log of record format 1 (one file per call), which this version does not
/// read, when it holds no segments.
fn check_format(log: &Path) -> Result<()> {
    if segment::holds_format_1(log) && segment::segment_ids(log)?.is_empty() {
        return Err(Error::Config(format!(
            "{} holds records of format 1 (one <number>.json file per call); this version reads format {} (segment-NNNNNN.jsonl files): read it with the Switchyard version that wrote it",
            log.display(),
            super::FORMAT
        )));
    }
    Ok(())
}

const NO_NUMBER: &str = "a line that is not a call record (no number)";

/// Every record line of a run, in order: calls `f` with its location and bytes (whole
/// lines only; a line cut short at the end of the log is not one). Stops at `f`'s first
/// error.
pub fn for_each_record_line(
    run_dir: &Path,
    f: impl FnMut(Location, &[u8]) -> Result<()>,
) -> Result<()> {
    let log = log_dir(run_dir);
    check_format(&log)?;
    segment::for_each_line(&log, None, f)
}

/// Every record of a run with where it lies, in order. An absent `llm_log/` holds none.
/// A line without a number is set aside (logged as a warning).
pub fn record_locations(run_dir: &Path) -> Result<Vec<(u64, Location)>> {
    let log = log_dir(run_dir);
    let mut found = Vec::new();
    for_each_record_line(run_dir, |at, line| {
        match segment::line_number(line) {
            Some(n) => found.push((n, at)),
            None => SetAside::new(&log, at, line, NO_NUMBER.into()).warn(),
        }
        Ok(())
    })?;
    Ok(found)
}

/// The numbers of the records in a run directory, in order.
pub fn record_numbers(run_dir: &Path) -> Result<Vec<u64>> {
    Ok(record_locations(run_dir)?
        .into_iter()
        .map(|(n, _)| n)
        .collect())
}

/// A record's number and where its line lies.
pub(crate) type NumberedAt = (u64, Location);

/// The last numbered line of a log folder and where it lies, read from its last segment
/// holding one; the lines without a number after it are given too, to be set aside (a
/// writer numbers new calls from it).
pub(crate) fn last_record(log: &Path) -> Result<(Option<NumberedAt>, Vec<SetAside>)> {
    let mut unnumbered = Vec::new();
    for segment in segment::segment_ids(log)?.into_iter().rev() {
        let bytes = segment::read_segment(log, segment)?;
        let lines: Vec<_> = segment::lines(&bytes, 0).collect();
        for (offset, line) in lines.into_iter().rev() {
            let at = Location {
                segment,
                offset,
                len: line.len() as u32,
            };
            match segment::line_number(line) {
                Some(n) => {
                    unnumbered.reverse();
                    return Ok((Some((n, at)), unnumbered));
                }
                None => unnumbered.push(SetAside::new(log, at, line, NO_NUMBER.into())),
            }
        }
    }
    unnumbered.reverse();
    Ok((None, unnumbered))
}

/// Parses a record line: its depth checked against [`MAX_RECORD_DEPTH`] before anything
/// else, then the record and its format. The error says why it does not read (not where:
/// see `parse_record`). For lines that come from elsewhere than a log folder (the
/// PostgreSQL store keeps them too). A record of format 4 is its line and the raw bytes
/// after it, as the log holds them (`segment.rs`).
///
/// A line of format 3 or 4 ([`super::DERIVED_FORMAT`], [`super::RAW_AFTER_FORMAT`]) has
/// the canonical forms it leaves out derived from the bytes it keeps (`derive.rs`); a
/// line of format 2 is read as written.
pub fn parse_record_line(line: &[u8]) -> std::result::Result<CallRecord, String> {
    let mut record = parse_record_fields(line)?;
    if super::leaves_out(record.format) {
        super::derive::fill(&mut record);
    }
    Ok(record)
}

/// Parses a record line as [`parse_record_line`] does, without deriving what a line of
/// format 3 or 4 leaves out (those fields are then empty): for a reader that needs only
/// the fields every line holds — the numbers, usage, cost, timings — such as the shipping
/// of records to a shared store, which copies the line itself.
pub fn parse_record_fields(bytes: &[u8]) -> std::result::Result<CallRecord, String> {
    let (line, after) = segment::split_record(bytes);
    // Said as before format 3 came (the quarantine's listing keeps its reasons' words).
    let mut record: CallRecord = from_slice_bounded(line, MAX_RECORD_DEPTH)
        .map_err(|e| format!("not a call record of format {}: {e}", super::FORMAT))?;
    match record.format {
        super::FORMAT | super::DERIVED_FORMAT | super::RAW_AFTER_FORMAT => {}
        other => {
            return Err(format!(
                "record format {other} is not one this version reads (it reads {}, {} and {})",
                super::FORMAT,
                super::DERIVED_FORMAT,
                super::RAW_AFTER_FORMAT
            ))
        }
    }
    match (segment::raw_after(line), after) {
        (None, None) => {}
        (Some(len), Some(raw))
            if len == raw.len()
                && record.format == super::RAW_AFTER_FORMAT
                && record.raw.is_none() =>
        {
            record.raw = Some(super::RawBytes::new(raw));
        }
        (Some(len), Some(raw)) => {
            return Err(format!(
                "its line (format {}) says {len} raw bytes follow it, and {} do{}",
                record.format,
                raw.len(),
                if record.raw.is_some() {
                    " where the line holds its raw bytes too"
                } else {
                    ""
                }
            ))
        }
        (Some(len), None) => {
            return Err(format!(
                "its line says {len} raw bytes follow it, and none do (a line alone, without the bytes after it)"
            ))
        }
        (None, Some(raw)) => {
            return Err(format!(
                "{} bytes follow its line, which says none do (a record is one line, or a line of format {} and its raw bytes)",
                raw.len(),
                super::RAW_AFTER_FORMAT
            ))
        }
    }
    Ok(record)
}

/// Parses a record line of a log folder; the error names where it lies.
pub(crate) fn parse_record(line: &[u8], log: &Path, at: Location) -> Result<CallRecord> {
    parse_record_line(line).map_err(|e| {
        Error::Config(format!(
            "{} at offset {}: {e}",
            segment::segment_path(log, at.segment).display(),
            at.offset
        ))
    })
}

/// Parses a record line of a log folder, or says why it is set aside (the index's
/// catch-up).
#[cfg(feature = "sqlite")]
pub(crate) fn parse_or_set_aside(
    line: &[u8],
    log: &Path,
    at: Location,
) -> std::result::Result<CallRecord, SetAside> {
    parse_record_line(line).map_err(|reason| SetAside::new(log, at, line, reason))
}

/// Reads the record at `at` in a run directory.
pub fn read_record_at(run_dir: &Path, at: Location) -> Result<CallRecord> {
    let log = log_dir(run_dir);
    let line = segment::read_line(&log, at)?;
    parse_record(&line, &log, at)
}

/// Where record `number` lies: looked up in `calls.sqlite`, else found by reading the
/// segments.
pub fn record_location(run_dir: &Path, number: u64) -> Result<Location> {
    let log = log_dir(run_dir);
    if let Some(at) = super::index::location(run_dir, number) {
        // The index is a cache: the line must be there and be that record.
        if segment::read_line(&log, at)
            .ok()
            .and_then(|l| segment::line_number(&l))
            == Some(number)
        {
            return Ok(at);
        }
    }
    let all = record_locations(run_dir)?;
    if let Some((_, at)) = all.iter().find(|(n, _)| *n == number) {
        return Ok(*at);
    }
    let holds = match (all.first(), all.last()) {
        (Some((first, _)), Some((last, _))) => format!("it holds calls {first} to {last}"),
        _ => "it holds no calls".to_string(),
    };
    Err(Error::Config(format!(
        "cannot read call {number}: {} has no such record ({holds})",
        log.display()
    )))
}

/// Reads record `number`.
pub fn read_record(run_dir: &Path, number: u64) -> Result<CallRecord> {
    read_record_at(run_dir, record_location(run_dir, number)?)
}

/// Reads every record of a run, in number order; a line that does not read is set aside
/// (logged as a warning) and the others are read. [`read_log`] gives the lines set aside.
pub fn read_records(run_dir: &Path) -> Result<Vec<CallRecord>> {
    let read = read_log(run_dir)?;
    read.set_aside.iter().for_each(SetAside::warn);
    Ok(read.records)
}

/// Reads every record of a run, in number order, and the lines set aside: one line that
/// does not read never keeps the others from being read. Fails only when the log folder
/// cannot be read at all.
pub fn read_log(run_dir: &Path) -> Result<LogRead> {
    read_log_with(run_dir, parse_record_line)
}

/// [`read_log`] without deriving what lines of format 3 leave out
/// ([`parse_record_fields`]): for a reader of the fields every line holds (`log stats`:
/// calls, errors, usage, cost), which then pays no decoding.
pub fn read_log_fields(run_dir: &Path) -> Result<LogRead> {
    read_log_with(run_dir, parse_record_fields)
}

fn read_log_with(
    run_dir: &Path,
    parse: fn(&[u8]) -> std::result::Result<CallRecord, String>,
) -> Result<LogRead> {
    let log = log_dir(run_dir);
    check_format(&log)?;
    let mut read = LogRead::default();
    segment::for_each_line(&log, None, |at, line| {
        match parse(line) {
            Ok(record) => read.records.push(record),
            Err(reason) => read.set_aside.push(SetAside::new(&log, at, line, reason)),
        }
        Ok(())
    })?;
    Ok(read)
}

/// Where to go on reading a log: a segment and an offset in it (see [`read_lines_from`]).
pub type LogPosition = (u32, u64);

/// Record lines, each with its number.
pub type NumberedLines = Vec<(u64, Vec<u8>)>;

/// Up to `limit` whole record lines from `from` on, each with its number, and the
/// position after the last one read (what a reader that tails a log being written
/// passes next; an unterminated line at the end is left for the next read). For the
/// gateway's shipping of its records to a shared store: it reads only what is new. A
/// line without a number is set aside (logged as a warning) and passed over.
pub fn read_lines_from(
    run_dir: &Path,
    from: LogPosition,
    limit: usize,
) -> Result<(NumberedLines, LogPosition)> {
    use std::io::{Read, Seek, SeekFrom};
    let log = log_dir(run_dir);
    let mut out = Vec::new();
    let mut at = from;
    let segments = segment::segment_ids(&log)?;
    let last = segments.last().copied();
    for segment in segments {
        if segment < at.0 {
            continue;
        }
        if segment > at.0 {
            at = (segment, 0);
        }
        let path = segment::segment_path(&log, segment);
        let fail =
            |e: std::io::Error| Error::Config(format!("cannot read {}: {e}", path.display()));
        let mut file = std::fs::File::open(&path).map_err(fail)?;
        file.seek(SeekFrom::Start(at.1)).map_err(fail)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(fail)?;
        // The last segment may be being written: a record whose bytes are not all there
        // yet is read the next time, never taken for a damaged one.
        let growing = Some(segment) == last;
        for (offset, line) in segment::lines_in(&bytes, 0, growing) {
            let place = Location {
                segment,
                offset: at.1 + offset,
                len: line.len() as u32,
            };
            let Some(n) = segment::line_number(line) else {
                SetAside::new(&log, place, line, NO_NUMBER.into()).warn();
                continue;
            };
            out.push((n, line.to_vec()));
            if out.len() >= limit {
                return Ok((out, (segment, place.offset + line.len() as u64 + 1)));
            }
        }
        at.1 += segment::complete_len_in(&bytes, growing);
    }
    Ok((out, at))
}

/// The position just after record `number`'s line (looked up as [`record_location`]).
pub fn position_after(run_dir: &Path, number: u64) -> Result<LogPosition> {
    let at = record_location(run_dir, number)?;
    Ok((at.segment, at.offset + u64::from(at.len) + 1))
}

//! Reading a run's records back from its segments.

use super::run_dir::LOG_DIR;
use super::segment::{self, Location};
use super::CallRecord;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

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

fn no_number(log: &Path, at: Location) -> Error {
    Error::Config(format!(
        "{} at offset {}: a line that is not a call record (no number)",
        segment::segment_path(log, at.segment).display(),
        at.offset
    ))
}

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
pub fn record_locations(run_dir: &Path) -> Result<Vec<(u64, Location)>> {
    let log = log_dir(run_dir);
    let mut found = Vec::new();
    for_each_record_line(run_dir, |at, line| {
        let n = segment::line_number(line).ok_or_else(|| no_number(&log, at))?;
        found.push((n, at));
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

/// The last record of a log folder and where it lies, read from its last non-empty
/// segment alone.
pub(crate) fn last_record(log: &Path) -> Result<Option<(u64, Location)>> {
    for segment in segment::segment_ids(log)?.into_iter().rev() {
        let bytes = segment::read_segment(log, segment)?;
        if let Some((offset, line)) = segment::lines(&bytes, 0).last() {
            let at = Location {
                segment,
                offset,
                len: line.len() as u32,
            };
            let n = segment::line_number(line).ok_or_else(|| no_number(log, at))?;
            return Ok(Some((n, at)));
        }
    }
    Ok(None)
}

/// Parses a record line, checking its format.
pub(crate) fn parse_record(line: &[u8], log: &Path, at: Location) -> Result<CallRecord> {
    let place = || {
        format!(
            "{} at offset {}",
            segment::segment_path(log, at.segment).display(),
            at.offset
        )
    };
    let record: CallRecord = serde_json::from_slice(line).map_err(|e| {
        Error::Config(format!(
            "{}: not a call record of format {}: {e}",
            place(),
            super::FORMAT
        ))
    })?;
    if record.format != super::FORMAT {
        return Err(Error::Config(format!(
            "{}: record format {} is not one this version reads (it reads {})",
            place(),
            record.format,
            super::FORMAT
        )));
    }
    Ok(record)
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

/// Reads every record of a run, in number order.
pub fn read_records(run_dir: &Path) -> Result<Vec<CallRecord>> {
    let log = log_dir(run_dir);
    check_format(&log)?;
    let mut records = Vec::new();
    segment::for_each_line(&log, None, |at, line| {
        records.push(parse_record(line, &log, at)?);
        Ok(())
    })?;
    Ok(records)
}

/// Where to go on reading a log: a segment and an offset in it (see [`read_lines_from`]).
pub type LogPosition = (u32, u64);

/// Record lines, each with its number.
pub type NumberedLines = Vec<(u64, Vec<u8>)>;

/// Up to `limit` whole record lines from `from` on, each with its number, and the
/// position after the last one read (what a reader that tails a log being written
/// passes next; an unterminated line at the end is left for the next read). For the
/// gateway's shipping of its records to a shared store: it reads only what is new.
pub fn read_lines_from(
    run_dir: &Path,
    from: LogPosition,
    limit: usize,
) -> Result<(NumberedLines, LogPosition)> {
    use std::io::{Read, Seek, SeekFrom};
    let log = log_dir(run_dir);
    let mut out = Vec::new();
    let mut at = from;
    for segment in segment::segment_ids(&log)? {
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
        for (offset, line) in segment::lines(&bytes, 0) {
            let place = Location {
                segment,
                offset: at.1 + offset,
                len: line.len() as u32,
            };
            let n = segment::line_number(line).ok_or_else(|| no_number(&log, place))?;
            out.push((n, line.to_vec()));
            if out.len() >= limit {
                return Ok((out, (segment, place.offset + line.len() as u64 + 1)));
            }
        }
        at.1 += segment::complete_len(&bytes);
    }
    Ok((out, at))
}

/// The position just after record `number`'s line (looked up as [`record_location`]).
pub fn position_after(run_dir: &Path, number: u64) -> Result<LogPosition> {
    let at = record_location(run_dir, number)?;
    Ok((at.segment, at.offset + u64::from(at.len) + 1))
}

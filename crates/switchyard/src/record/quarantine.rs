//! The quarantine: the lines of a call log that a recorder opening it found unreadable.
//!
//! A log is append-only and its lines are addressed by offset (the calls index, the
//! cache, the PostgreSQL shipper), so a line that does not read (a disk's damage, a write
//! cut short and followed by another, a hand edit, a line written by a build without the
//! depth bound) is not removed: it is set aside. Every reader passes over it and reads the
//! rest; a recorder opening the log (the gateway's store at start, `--resume`) also lists
//! it, once, in `<run dir>/quarantine/set-aside.jsonl` with a copy of its bytes, where it
//! lies and why, and logs it as a warning. The gateway shows the count in `/healthz`.

use super::read::SetAside;
use super::segment;
use super::RawBytes;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// The folder of a run directory holding the quarantine list.
pub const QUARANTINE_DIR: &str = "quarantine";

/// The quarantine list's file in [`QUARANTINE_DIR`]: one JSON object per line set aside.
pub const QUARANTINE_FILE: &str = "set-aside.jsonl";

/// One line set aside, as listed.
#[derive(Serialize, Deserialize)]
struct Listed {
    /// The segment file, relative to the run directory.
    file: String,
    segment: u32,
    offset: u64,
    length: u32,
    /// The number the line starts with, when one reads.
    number: Option<u64>,
    reason: String,
    /// When it was set aside.
    set_aside_at: String,
    /// A copy of its bytes (`null` when they could not be read again).
    line: Option<RawBytes>,
}

/// The place of a listed line (what a listing is known by).
#[derive(Deserialize, PartialEq)]
struct Place {
    segment: u32,
    offset: u64,
    length: u32,
}

/// Lists the lines in `found` not listed yet, each logged as a warning, and gives how
/// many lines the list holds. A list that cannot be written is logged, never fatal: the
/// log stays open and its other records served.
pub(crate) fn keep(dir: &Path, found: &[SetAside]) -> u64 {
    let path = dir.join(QUARANTINE_DIR).join(QUARANTINE_FILE);
    let text = std::fs::read(&path).unwrap_or_default();
    let listed: Vec<&[u8]> = segment::lines(&text, 0).map(|(_, l)| l).collect();
    let mut places: Vec<Place> = listed
        .iter()
        .filter_map(|l| super::depth::from_slice_bounded(l, 4).ok())
        .collect();
    let log = super::read::log_dir(dir);
    let mut new = Vec::new();
    let mut added = 0u64;
    for aside in found {
        let place = Place {
            segment: aside.at.segment,
            offset: aside.at.offset,
            length: aside.at.len,
        };
        if places.contains(&place) {
            continue;
        }
        aside.warn();
        let entry = Listed {
            file: format!(
                "{}/{}",
                super::LOG_DIR,
                segment::segment_name(aside.at.segment)
            ),
            segment: place.segment,
            offset: place.offset,
            length: place.length,
            number: aside.number,
            reason: aside.reason.clone(),
            set_aside_at: super::timestamp(std::time::SystemTime::now()),
            line: segment::read_line(&log, aside.at)
                .ok()
                .map(|b| RawBytes::new(&b)),
        };
        places.push(place);
        if let Ok(mut json) = serde_json::to_vec(&entry) {
            json.push(b'\n');
            new.extend_from_slice(&json);
            added += 1;
        }
    }
    let held = listed.len() as u64 + added;
    if !new.is_empty() {
        let appended = std::fs::create_dir_all(dir.join(QUARANTINE_DIR)).and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?
                .write_all(&new)
        });
        if let Err(e) = appended {
            tracing::warn!(
                "cannot list the call log's unreadable lines in {}: {e}; they are still passed over",
                path.display()
            );
        }
    }
    if held > 0 {
        tracing::warn!(
            "{held} line{} of the call log in {} set aside as unreadable (listed with their bytes in {}); every other record is read",
            if held == 1 { "" } else { "s" },
            dir.display(),
            path.display()
        );
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::segment::Location;

    #[test]
    fn a_line_is_listed_once_with_its_bytes_and_reason() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(super::super::LOG_DIR);
        std::fs::create_dir_all(&log).unwrap();
        let bytes = b"{\"format\":2,\"number\":7,\"x\xff\n";
        std::fs::write(log.join(segment::segment_name(1)), bytes).unwrap();
        let aside = SetAside {
            path: log.join(segment::segment_name(1)),
            at: Location {
                segment: 1,
                offset: 0,
                len: bytes.len() as u32 - 1,
            },
            number: Some(7),
            reason: "not UTF-8".into(),
        };
        assert_eq!(keep(dir.path(), std::slice::from_ref(&aside)), 1);
        // Found again at the next open: still one.
        assert_eq!(keep(dir.path(), std::slice::from_ref(&aside)), 1);
        let list =
            std::fs::read_to_string(dir.path().join(QUARANTINE_DIR).join(QUARANTINE_FILE)).unwrap();
        assert_eq!(list.lines().count(), 1);
        let v: serde_json::Value = serde_json::from_str(list.trim()).unwrap();
        assert_eq!(v["file"], "llm_log/segment-000001.jsonl");
        assert_eq!(v["number"], 7);
        assert_eq!(v["reason"], "not UTF-8");
        assert_eq!(v["line"]["encoding"], "base64");
        assert_eq!(keep(dir.path(), &[]), 1, "the list is what is counted");
    }
}

#[cfg(test)]
mod opening {
    use crate::record::{
        read_log, read_record, record_numbers, Recorder, RecorderOptions, RunInfo, LOG_DIR,
        QUARANTINE_DIR, QUARANTINE_FILE,
    };
    use std::io::Write;

    /// A log of two records, then every kind of line that does not read, is opened by a
    /// recorder (as the gateway's store opens its data directory after a `kill -9`): the
    /// lines are listed and counted, the records read, and new calls numbered after the
    /// last numbered line.
    #[test]
    fn a_log_with_unreadable_lines_opens_reads_the_rest_and_lists_them() {
        let dir = tempfile::tempdir().unwrap();
        let recorder =
            Recorder::create(dir.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
        for _ in 0..2 {
            let r = crate::record::writer::tests::sample();
            futures::executor::block_on(recorder.record(r)).unwrap();
        }
        recorder.close().unwrap();
        drop(recorder);
        let segment = dir.path().join(LOG_DIR).join("segment-000001.jsonl");
        let good = std::fs::read(&segment).unwrap();
        let first = &good[..good.iter().position(|&b| b == b'\n').unwrap()];
        let as_number = |n: u64| {
            String::from_utf8_lossy(first)
                .replacen("\"number\":1,", &format!("\"number\":{n},"), 1)
                .into_bytes()
        };
        let mut bad: Vec<Vec<u8>> = Vec::new();
        // Cut short, then followed by another line.
        bad.push(as_number(3)[..first.len() / 2].to_vec());
        // Not UTF-8 inside a string.
        let mut not_utf8 = as_number(4);
        let at = not_utf8.windows(3).position(|w| w == b"\"ro").unwrap() + 1;
        not_utf8.insert(at, 0xff);
        bad.push(not_utf8);
        // Deeper than any record.
        bad.push(
            format!(
                "{{\"format\":2,\"number\":5,\"x\":{}7{}}}",
                "[".repeat(400),
                "]".repeat(400)
            )
            .into_bytes(),
        );
        // Wrong types.
        bad.push(br#"{"format":2,"number":6,"role":5,"reference":[],"stream":"yes"}"#.to_vec());
        // Garbage, no number.
        bad.push(b"\x00\x01 not json at all".to_vec());
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&segment)
            .unwrap();
        for line in &bad {
            f.write_all(line).unwrap();
            f.write_all(b"\n").unwrap();
        }
        drop(f);

        let read = read_log(dir.path()).unwrap();
        assert_eq!(read.records.len(), 2);
        assert_eq!(read.set_aside.len(), 5, "{:?}", read.set_aside);
        let reasons: Vec<String> = read.set_aside.iter().map(|s| s.to_string()).collect();
        assert!(
            reasons[0].contains("call 3") && reasons[0].contains("EOF"),
            "{reasons:?}"
        );
        assert!(
            reasons[1].contains("call 4") && reasons[1].contains("invalid unicode"),
            "{reasons:?}"
        );
        assert!(
            reasons[2].contains(&format!(
                "more than {} levels deep",
                crate::record::MAX_RECORD_DEPTH
            )),
            "{reasons:?}"
        );
        assert!(
            reasons[3].contains("call 6") && reasons[3].contains("invalid type"),
            "{reasons:?}"
        );
        assert!(
            reasons[4].contains("segment-000001.jsonl at offset"),
            "{reasons:?}"
        );

        // The index holds rows 1 and 2: opening catches up over the bad lines.
        let recorder = Recorder::create(
            dir.path(),
            &RunInfo::new(),
            RecorderOptions {
                resume: true,
                ..RecorderOptions::default()
            },
        )
        .unwrap();
        assert_eq!(recorder.quarantined(), 5);
        let r = crate::record::writer::tests::sample();
        assert_eq!(futures::executor::block_on(recorder.record(r)), Some(7));
        recorder.close().unwrap();
        drop(recorder);
        assert_eq!(
            record_numbers(dir.path()).unwrap(),
            vec![1, 2, 3, 4, 5, 6, 7]
        );
        assert_eq!(read_record(dir.path(), 7).unwrap().number, 7);
        assert!(read_record(dir.path(), 6).is_err());
        let list =
            std::fs::read_to_string(dir.path().join(QUARANTINE_DIR).join(QUARANTINE_FILE)).unwrap();
        assert_eq!(list.lines().count(), 5);
        // Opened again, nothing is listed twice.
        let recorder = Recorder::create(
            dir.path(),
            &RunInfo::new(),
            RecorderOptions {
                resume: true,
                ..RecorderOptions::default()
            },
        )
        .unwrap();
        assert_eq!(recorder.quarantined(), 5);
        recorder.close().unwrap();
    }
}

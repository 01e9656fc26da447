//! The record reader: on any segment, no panic; every whole record (a line, or a line of
//! format 4 and the raw bytes after it) is either read or set aside, the records read are
//! those that read alone (a bad one never keeps the others from being read); the records
//! are all the segment's bytes but an unterminated end; a record that reads, written
//! again, reads the same; and the depth cap keeps any text within its bound, changing
//! nothing already within it.
//! The first byte picks the cap's bound (1 to 32 levels); the rest is the segment.
#![no_main]

use serde_json::Value;
use switchyard::record::{
    cap_depth, first_too_deep, from_slice_bounded, line_of, parse_record_line, read_log,
    segment_name, segment_records, LOG_DIR, MAX_RECORD_DEPTH,
};

/// A run directory of this process's own, its segment rewritten for each input.
fn run_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("switchyard-fuzz-records-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(LOG_DIR)).expect("a temporary run directory");
        dir
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, segment)) = data.split_first() else {
        return;
    };
    let bound = usize::from(pick % 32) + 1;
    // The whole records: an unterminated last piece is not one. They follow each other
    // from the segment's start, each with its `\n`.
    let lines: Vec<&[u8]> = segment_records(segment).collect();
    let covered: usize = lines.iter().map(|l| l.len() + 1).sum();
    assert!(covered <= segment.len(), "records within the segment");
    if covered < segment.len() {
        assert!(
            segment_records(&segment[covered..]).next().is_none(),
            "what is left is no whole record"
        );
    }
    let mut expected = Vec::new();
    for record_bytes in &lines {
        if let Ok(record) = parse_record_line(record_bytes) {
            let once = serde_json::to_vec(&record).expect("a record serialises");
            let again = parse_record_line(&once).expect("a record written again reads");
            assert_eq!(
                serde_json::to_vec(&again).unwrap(),
                once,
                "a record written again reads the same"
            );
            expected.push(once);
        }
        let line = line_of(record_bytes);
        let capped = cap_depth(line, bound);
        assert_eq!(
            first_too_deep(&capped, bound),
            None,
            "capped past its bound"
        );
        if first_too_deep(line, bound).is_none() {
            assert_eq!(&capped, line, "a text within the bound is left alone");
        }
        if from_slice_bounded::<Value>(line, MAX_RECORD_DEPTH).is_ok() {
            from_slice_bounded::<Value>(&capped, MAX_RECORD_DEPTH)
                .expect("JSON capped is still JSON");
        }
    }
    let dir = run_dir();
    std::fs::write(dir.join(LOG_DIR).join(segment_name(1)), segment).expect("the segment");
    let read = read_log(dir).expect("a readable folder reads");
    assert_eq!(
        read.records.len() + read.set_aside.len(),
        lines.len(),
        "every whole line is a record or set aside"
    );
    let got: Vec<Vec<u8>> = read
        .records
        .iter()
        .map(|r| serde_json::to_vec(r).unwrap())
        .collect();
    assert_eq!(got, expected, "the records are the lines that read alone");
});

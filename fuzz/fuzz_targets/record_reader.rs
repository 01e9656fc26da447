//! The record reader: on any segment, no panic; every whole line is either a record or
//! set aside, the records are those of the lines that read alone (a bad line never keeps
//! the others from being read); a record that reads, written again, reads the same; and
//! the depth cap keeps any text within its bound, changing nothing already within it.
//! The first byte picks the cap's bound (1 to 32 levels); the rest is the segment.
#![no_main]

use serde_json::Value;
use switchyard::record::{
    cap_depth, first_too_deep, from_slice_bounded, parse_record_line, read_log, segment_name,
    LOG_DIR, MAX_RECORD_DEPTH,
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
    // The whole lines: an unterminated last piece is not one.
    let mut lines: Vec<&[u8]> = segment.split(|&b| b == b'\n').collect();
    lines.pop();
    let mut expected = Vec::new();
    for line in &lines {
        if let Ok(record) = parse_record_line(line) {
            let once = serde_json::to_vec(&record).expect("a record serialises");
            let again = parse_record_line(&once).expect("a record written again reads");
            assert_eq!(
                serde_json::to_vec(&again).unwrap(),
                once,
                "a record written again reads the same"
            );
            expected.push(once);
        }
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

//! What the tests of the typed readers share (a common body read as borrowed typed fields,
//! any other by the lenient reader of a map of values): a dialect's golden bodies, and the
//! check that the two readings give the same result.

use crate::codec::DecodeError;
use std::fmt::Debug;

/// The golden bodies under `tests/fixtures/<folder>` whose file names hold `part`, at
/// least `at_least` of them (fewer: the fixtures were not found).
pub(crate) fn golden(folder: &str, part: &str, at_least: usize) -> Vec<Vec<u8>> {
    let dir = format!("{}/tests/fixtures/{folder}", env!("CARGO_MANIFEST_DIR"));
    let bodies: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(part))
        })
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(
        bodies.len() >= at_least,
        "fewer than {at_least} golden bodies named *{part}* in {dir}"
    );
    bodies
}

/// Asserts that `read` (the typed reading, the lenient one when it declines) gives what
/// `lenient` gives for every body: the same value, or an error of the same text.
pub(crate) fn assert_agree<T: PartialEq + Debug>(
    bodies: &[Vec<u8>],
    read: impl Fn(&[u8]) -> Result<T, DecodeError>,
    lenient: impl Fn(&[u8]) -> Result<T, DecodeError>,
) {
    for body in bodies {
        let text = String::from_utf8_lossy(body);
        match (read(body), lenient(body)) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text}"),
            (a, b) => panic!("{text}: typed {a:?}, lenient {b:?}"),
        }
    }
}

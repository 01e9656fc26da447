//! How deep JSON nests, and the one bound that ties what the gateway accepts, what the
//! recorder writes and what every reader of records reads.
//!
//! A record wraps what it keeps of a call a few levels deeper than the call had it (the
//! body under `body`, a dialect's extra fields under `request.passthrough.fields`, a
//! tool's schema under `request.tools[i].parameters`…). A reader with serde_json's default
//! recursion limit (128) therefore could not read the record of a body the gateway
//! accepted at 125 levels, and that one record made the whole log unreadable. So the
//! bounds are decided here, in one place, one above the other:
//!
//! - [`MAX_BODY_DEPTH`]: the deepest JSON the gateway's parsers (serde_json's default
//!   limit) read, so the most `listen.max_json_depth` may be;
//! - [`MAX_RECORD_DEPTH`]: that plus [`RECORD_WRAPPING`], the deepest record line the
//!   recorder writes and the readers read. Readers scan a line's depth first
//!   ([`first_too_deep`], no recursion) and only then parse it with serde_json's own limit
//!   off ([`from_slice_bounded`]): the scan, not serde, bounds the recursion, so a line
//!   can be deeper than 128 and the reader's stack use stays bounded.
//!
//! The recorder checks every line it writes against the same bound. A call whose values
//! nest deeper still (a program's own request, an upstream's reply: nothing bounds
//! those) is not refused: each value that would open a level past the bound is written as
//! a string holding its JSON text ([`cap_depth`]; lossless, the record says
//! `depth_capped`), so the line stays readable.

use memchr::memchr2;
use serde::de::DeserializeOwned;

/// The deepest JSON (arrays and objects inside one another, counting the outermost value
/// as level one) that the gateway's parsers read: serde_json's default recursion limit of
/// 128 refuses the 128th level. `listen.max_json_depth` defaults to it and may not be set above it.
pub const MAX_BODY_DEPTH: usize = 127;

/// The levels a record may add around what it keeps of a body, with room to spare: the
/// deepest path a body's value takes in a record is about four levels deeper than in the
/// body (`request.passthrough.fields.<name>` for a value at the body's top level).
pub const RECORD_WRAPPING: usize = 33;

/// The deepest record line the recorder writes and a reader reads.
pub const MAX_RECORD_DEPTH: usize = MAX_BODY_DEPTH + RECORD_WRAPPING;

/// The offset of the first `[` or `{` that opens level `limit + 1`, if any does.
///
/// One pass, no allocation. Strings are skipped with `memchr2` (a body's bytes are mostly
/// string contents), so brackets and braces inside them are not counted; an escaped quote
/// (`\"`) does not end a string. Only the depth is judged: malformed JSON is left for the
/// parser to report (which stops at the first byte that is not JSON, never deeper than
/// counted here).
pub fn first_too_deep(json: &[u8], limit: usize) -> Option<usize> {
    // Each level takes at least one byte: a shorter text cannot go past the limit.
    if json.len() <= limit {
        return None;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return Some(i);
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => i = end_of_string(json, i + 1)?,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether `json` holds at most `limit` bytes that open a level (`{` or `[`, in strings or
/// not): then it cannot nest deeper than `limit`, which a writer learns in one pass over
/// its bytes that the compiler vectorises, a fraction of [`first_too_deep`]'s walk
/// through the strings (a record line of a few kilobytes holds a few dozen).
pub(crate) fn openers_at_most(json: &[u8], limit: usize) -> bool {
    let mut seen = 0usize;
    // Counted in bytes per block of 255 (no lane overflows), so the loop runs on vectors.
    for block in json.chunks(255) {
        // `[` is 0x5b, `{` 0x7b: the same byte but for bit 0x20, which no other one is.
        let n = block
            .iter()
            .fold(0u8, |n, &b| n + u8::from(b | 0x20 == b'{'));
        seen += usize::from(n);
        if seen > limit {
            return false;
        }
    }
    true
}

/// The offset of the quote closing the string whose contents start at `from`; `None`
/// when the string never ends (the parser will say so).
fn end_of_string(json: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let at = from + memchr2(b'"', b'\\', json.get(from..)?)?;
        if json[at] == b'"' {
            return Some(at);
        }
        // A backslash escapes the byte after it (`\"`, `\\`, `\u…`'s `u`).
        from = at + 2;
    }
}

/// Parses `json` as a `T` when it nests at most `limit` levels: the depth is scanned first,
/// then serde_json parses with its own recursion limit off (the scan bounds it). The error
/// says what was wrong and where.
pub fn from_slice_bounded<T: DeserializeOwned>(json: &[u8], limit: usize) -> Result<T, String> {
    if let Some(at) = first_too_deep(json, limit) {
        return Err(format!(
            "nests arrays and objects more than {limit} levels deep (at byte {at}), deeper than any record this version writes"
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(json);
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// `json` with every array or object that would open level `limit + 1` replaced by a
/// string holding its JSON text, so that the result nests at most `limit` levels and loses
/// nothing. `json` is serde_json's output (valid UTF-8 and JSON); a value that does not
/// end is kept as a string up to the end of the text.
pub fn cap_depth(json: &[u8], limit: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + 64);
    let (mut depth, mut i, mut copied) = (0usize, 0usize, 0usize);
    while i < json.len() {
        match json[i] {
            b'{' | b'[' if depth == limit => {
                let end = end_of_value(json, i);
                out.extend_from_slice(&json[copied..i]);
                let text = String::from_utf8_lossy(&json[i..end]);
                // Serialising a string cannot fail.
                let _ = serde_json::to_writer(&mut out, &text);
                (i, copied) = (end, end);
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => match end_of_string(json, i + 1) {
                Some(end) => i = end,
                None => break,
            },
            _ => {}
        }
        i += 1;
    }
    out.extend_from_slice(&json[copied..]);
    out
}

/// The offset just past the array or object opening at `open` (or the text's end).
fn end_of_value(json: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i < json.len() {
        match json[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b'"' => match end_of_string(json, i + 1) {
                Some(end) => i = end,
                None => return json.len(),
            },
            _ => {}
        }
        i += 1;
    }
    json.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn depth_is_counted_across_arrays_and_objects() {
        assert_eq!(first_too_deep(nested(128).as_bytes(), 128), None);
        assert_eq!(first_too_deep(nested(129).as_bytes(), 128), Some(128));
        let mixed = r#"{"a":[{"b":[{"c":1}]}]}"#;
        assert_eq!(first_too_deep(mixed.as_bytes(), 5), None);
        assert_eq!(
            first_too_deep(mixed.as_bytes(), 4),
            Some(r#"{"a":[{"b":["#.len())
        );
        // Siblings do not add up: depth is what is open at once.
        let wide = format!("[{}1]", "[1],".repeat(500));
        assert_eq!(first_too_deep(wide.as_bytes(), 2), None);
    }

    #[test]
    fn brackets_inside_strings_do_not_count() {
        let text = format!(r#"{{"content":"{}"}}"#, "[{".repeat(300));
        assert_eq!(first_too_deep(text.as_bytes(), 2), None);
        // An escaped quote does not end the string; an escaped backslash before a quote does.
        let escaped = format!(r#"{{"a":"\"{}"}}"#, "[".repeat(10));
        assert_eq!(first_too_deep(escaped.as_bytes(), 1), None);
        let ends = r#"{"a":"\\",  "b":[[1]]}"#;
        assert_eq!(
            first_too_deep(ends.as_bytes(), 2),
            Some(ends.find("[[").unwrap() + 1)
        );
        assert_eq!(first_too_deep(br#"["\u005b\u005b"]"#, 1), None);
    }

    #[test]
    fn openers_are_counted_exactly_and_bound_the_depth() {
        let count = |t: &[u8]| t.iter().filter(|&&b| b == b'{' || b == b'[').count();
        for text in [
            nested(MAX_RECORD_DEPTH),
            nested(MAX_RECORD_DEPTH + 1),
            format!("[{}1]", "[1],".repeat(500)),
            format!(
                r#"{{"a":"{}", "b":"{}"}}"#,
                "[{".repeat(300),
                "]};:".repeat(99)
            ),
            String::new(),
        ] {
            let n = count(text.as_bytes());
            for limit in [0, 1, n.saturating_sub(1), n, n + 1, MAX_RECORD_DEPTH] {
                assert_eq!(
                    openers_at_most(text.as_bytes(), limit),
                    n <= limit,
                    "{limit}"
                );
                if openers_at_most(text.as_bytes(), limit) {
                    assert_eq!(first_too_deep(text.as_bytes(), limit), None);
                }
            }
        }
    }

    #[test]
    fn malformed_text_is_left_to_the_parser() {
        assert_eq!(first_too_deep(b"]]]]]][[", 2), None);
        assert_eq!(first_too_deep(br#"[[["unterminated [[[[[["#, 3), None);
        assert_eq!(first_too_deep(br#"["trailing backslash \"#, 0), Some(0));
        assert_eq!(first_too_deep(br#""ends in a backslash \"#, 0), None);
        assert_eq!(first_too_deep(b"", 0), None);
    }

    #[test]
    fn the_bounded_parser_reads_past_serdes_own_limit_up_to_its_bound() {
        let deep = nested(MAX_RECORD_DEPTH);
        // serde_json's default limit refuses it; the bounded parser reads it.
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        let v: Value = from_slice_bounded(deep.as_bytes(), MAX_RECORD_DEPTH).unwrap();
        assert_eq!(v.to_string(), deep);
        let e =
            from_slice_bounded::<Value>(nested(MAX_RECORD_DEPTH + 1).as_bytes(), MAX_RECORD_DEPTH)
                .unwrap_err();
        let expected =
            format!("more than {MAX_RECORD_DEPTH} levels deep (at byte {MAX_RECORD_DEPTH})");
        assert!(e.contains(&expected), "{e}");
        let e = from_slice_bounded::<Value>(b"[1] x", 4).unwrap_err();
        assert!(e.contains("trailing characters"), "{e}");
    }

    /// The bound is also a bound on the stack: a record line at the deepest a reader
    /// accepts parses on a thread with a quarter of a tokio worker's stack (2 MiB), in
    /// this unoptimised build too.
    #[test]
    fn a_line_at_the_bound_parses_on_a_small_stack() {
        let line = format!(
            r#"{{"a":{{"b":[{}]}},"c":{}}}"#,
            nested(MAX_RECORD_DEPTH - 3),
            nested(MAX_RECORD_DEPTH - 1)
        );
        assert_eq!(first_too_deep(line.as_bytes(), MAX_RECORD_DEPTH), None);
        let parsed = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || from_slice_bounded::<Value>(line.as_bytes(), MAX_RECORD_DEPTH).is_ok())
            .unwrap()
            .join()
            .unwrap();
        assert!(parsed);
    }

    #[test]
    fn capping_keeps_every_value_as_text_within_the_bound() {
        let deep = format!(r#"{{"a":"[[x","b":{},"c":[1,{{"d":2}}]}}"#, nested(10));
        let capped = cap_depth(deep.as_bytes(), 4);
        assert_eq!(first_too_deep(&capped, 4), None);
        let v: Value = serde_json::from_slice(&capped).unwrap();
        // The value that would open level 5 is a string of its own text.
        let mut at = &v["b"];
        for _ in 0..3 {
            at = &at[0];
        }
        assert_eq!(at.as_str(), Some(nested(7).as_str()));
        assert_eq!(v["a"], "[[x");
        assert_eq!(v["c"], serde_json::json!([1, {"d": 2}]));
        // Within the bound, nothing changes.
        assert_eq!(cap_depth(deep.as_bytes(), 11), deep.as_bytes());
        // A value that never ends is kept as text to the end.
        let cut = cap_depth(b"[[[[1", 2);
        assert_eq!(cut, br#"[["[[1""#);
    }
}

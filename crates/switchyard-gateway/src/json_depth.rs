//! How deep a JSON text nests arrays and objects, found without parsing it: the gateway
//! refuses a body nested past `listen.max_json_depth` before it is forwarded (a provider,
//! the store's decoder or a client's parser may recurse once per level) or recorded.
//!
//! One pass, no allocation. Strings are skipped with `memchr2` (a body's bytes are mostly
//! string contents: prompts, tool outputs, base64 images), so brackets and braces inside
//! them are not counted; an escaped quote (`\"`) does not end a string. Only the depth is
//! judged: malformed JSON is left for the parser to report.

use memchr::memchr2;

/// The offset of the first `[` or `{` that opens level `limit + 1`, if any does.
pub(crate) fn first_too_deep(json: &[u8], limit: usize) -> Option<usize> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn malformed_text_is_left_to_the_parser() {
        assert_eq!(first_too_deep(b"]]]]]][[", 2), None);
        assert_eq!(first_too_deep(br#"[[["unterminated [[[[[["#, 3), None);
        assert_eq!(first_too_deep(br#"["trailing backslash \"#, 0), Some(0));
        assert_eq!(first_too_deep(br#""ends in a backslash \"#, 0), None);
        assert_eq!(first_too_deep(b"", 0), None);
    }
}

//! The values of one top-level key of a JSON object, found by a forward walk over its
//! structure — string bounds (memchr to the next quote or backslash) and nesting depth —
//! building and validating nothing. A reply renamed on its way through
//! ([`crate::call::client_model`]) runs this on every chunk of a stream, where a full
//! parse cost several thousand instructions a chunk.
//!
//! A fast pass, not a validation: on bytes that are not JSON it finds nothing, or a span a
//! parse would reject; either way the bytes go on as they came but for that span. A key
//! written with escapes (`"mod\u0065l"`) is not recognised: such a reply keeps the
//! upstream's name, which is all a hostile upstream can gain.

/// Where the value of the first top-level `key` of the object `json` stands; `None` when
/// `json` is no object, has no such key, or ends before it. The walk stops at the key: a
/// chat chunk's `model`, written before its `choices`, costs a few dozen bytes of walk.
/// (A parse keeps the last of a repeated key; an upstream that repeats it keeps its own
/// later ones.)
pub(crate) fn first(json: &[u8], key: &str) -> Option<(usize, usize)> {
    let key = key.as_bytes();
    let mut at = skip_whitespace(json, 0);
    if json.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_whitespace(json, at + 1);
    loop {
        if json.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(json, at)?;
        let name = &json[at + 1..key_end - 1];
        at = skip_whitespace(json, key_end);
        if json.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_whitespace(json, at + 1);
        let end = value_end(json, start)?;
        if name == key {
            return Some((start, end));
        }
        at = skip_whitespace(json, end);
        match json.get(at) {
            Some(b',') => at = skip_whitespace(json, at + 1),
            _ => return None,
        }
    }
}

/// Where the value of `inner` of the top-level object `outer` of `json` stands.
pub(crate) fn first_within(json: &[u8], outer: &str, inner: &str) -> Option<(usize, usize)> {
    let (start, end) = first(json, outer)?;
    let (s, e) = first(&json[start..end], inner)?;
    Some((start + s, start + e))
}

/// `json` with the value at `span` replaced by `value` (JSON text); `None` when it holds
/// `value` already.
pub(crate) fn replaced_at(
    json: &[u8],
    (start, end): (usize, usize),
    value: &str,
) -> Option<Vec<u8>> {
    if &json[start..end] == value.as_bytes() {
        return None;
    }
    let mut out = Vec::with_capacity(json.len() + value.len());
    out.extend_from_slice(&json[..start]);
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(&json[end..]);
    Some(out)
}

fn skip_whitespace(json: &[u8], mut at: usize) -> usize {
    while json
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}

/// Just past the string whose opening quote is at `open`. Keys and most values are a
/// few bytes long: they are read byte by byte, and only a long string goes to memchr
/// (whose setup costs more than a short string's bytes).
fn string_end(json: &[u8], open: usize) -> Option<usize> {
    let mut at = open + 1;
    loop {
        let rest = json.get(at..)?;
        let near = rest.len().min(32);
        let i = match rest[..near].iter().position(|b| matches!(b, b'"' | b'\\')) {
            Some(i) => at + i,
            None => at + memchr::memchr2(b'"', b'\\', rest)?,
        };
        if json[i] == b'\\' {
            at = i + 2;
            continue;
        }
        return Some(i + 1);
    }
}

/// Just past the value starting at `start`.
fn value_end(json: &[u8], start: usize) -> Option<usize> {
    match *json.get(start)? {
        b'"' => string_end(json, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = start;
            loop {
                match *json.get(at)? {
                    b'"' => {
                        at = string_end(json, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        _ => {
            let rest = json.get(start..)?;
            let len = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len());
            (len > 0).then_some(start + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn replace(json: &str, key: &str, value: &str) -> Option<String> {
        let span = first(json.as_bytes(), key)?;
        replaced_at(json.as_bytes(), span, value).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn only_the_top_level_key_is_replaced_every_other_byte_kept() {
        let json = r#"{ "id":"c","choices":[{"delta":{"content":"\"model\":\"x\"","model":"in"}}], "model" : "echo" ,"n":1}"#;
        assert_eq!(
            replace(json, "model", r#""mock/echo""#).unwrap(),
            r#"{ "id":"c","choices":[{"delta":{"content":"\"model\":\"x\"","model":"in"}}], "model" : "mock/echo" ,"n":1}"#
        );
        // Already the value, absent, or no object: nothing to do.
        assert_eq!(replace(r#"{"model":"a"}"#, "model", r#""a""#), None);
        assert_eq!(replace(r#"{"id":"x"}"#, "model", r#""a""#), None);
        for bad in [
            "[1]",
            "not json",
            "",
            "{\"model\":",
            "{\"model\":\"a",
            "{\"a\" 1}",
        ] {
            assert_eq!(replace(bad, "model", r#""a""#), None, "{bad}");
        }
    }

    #[test]
    fn a_key_nested_in_the_outer_object_is_found_there_only() {
        let json = br#"{"type":"message_start","model":"top","message":{"id":"m","content":[{"model":"no"}],"model":"echo"}}"#;
        let (s, e) = first_within(json, "message", "model").unwrap();
        assert_eq!(&json[s..e], br#""echo""#);
        assert_eq!(
            first_within(br#"{"message":"text"}"#, "message", "model"),
            None
        );
    }

    #[test]
    fn the_walk_agrees_with_a_parse_on_values_of_every_kind() {
        let json =
            r#"{"a":1.5e3,"b":true,"c":null,"d":"q\\\"","e":[{"f":["}"]}],"model":"m","g":-2}"#;
        let parsed: Value = serde_json::from_str(json).unwrap();
        let out = replace(json, "model", "\"n\"").unwrap();
        let mut expected = parsed.clone();
        expected["model"] = Value::from("n");
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), expected);
        for key in ["a", "b", "c", "d", "e", "g"] {
            let (start, end) = first(json.as_bytes(), key).unwrap();
            let value: Value = serde_json::from_slice(&json.as_bytes()[start..end]).unwrap();
            assert_eq!(value, parsed[key], "{key}");
        }
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;
        use serde_json::{Map, Value};

        fn value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                (-1e9f64..1e9).prop_map(Value::from),
                "(?s).{0,40}".prop_map(Value::from),
            ];
            leaf.prop_recursive(3, 16, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::vec(("[a-z\"\\\\}{]{1,6}", inner), 0..4).prop_map(|fields| {
                        Value::Object(fields.into_iter().collect::<Map<_, _>>())
                    }),
                ]
            })
        }

        proptest! {
            /// On any object (unique keys, as serde writes them), the walk finds each
            /// top-level key's value exactly as a parse reads it, and a replacement
            /// parses to the object with that one value changed.
            #[test]
            fn the_walk_reads_every_key_as_a_parse_does(
                fields in prop::collection::vec(("[a-z\"\\\\}{]{1,6}", value()), 0..6),
                pretty in any::<bool>(),
            ) {
                let object: Map<String, Value> = fields.into_iter().collect();
                let text = match pretty {
                    true => serde_json::to_string_pretty(&object).unwrap(),
                    false => serde_json::to_string(&object).unwrap(),
                };
                for (key, expected) in &object {
                    // Keys written with escapes are not recognised (documented above).
                    if key.contains(['"', '\\']) {
                        continue;
                    }
                    let (start, end) = first(text.as_bytes(), key).unwrap();
                    let got: Value = serde_json::from_slice(&text.as_bytes()[start..end]).unwrap();
                    prop_assert_eq!(&got, expected);
                    let out = replaced_at(text.as_bytes(), (start, end), "\"renamed\"");
                    if let Some(out) = out {
                        let mut changed = object.clone();
                        changed.insert(key.clone(), Value::from("renamed"));
                        let parsed: Map<String, Value> = serde_json::from_slice(&out).unwrap();
                        prop_assert_eq!(parsed, changed);
                    }
                }
            }

            /// An object cut short anywhere, or with a byte changed: no panic, and a
            /// span found lies within the bytes.
            #[test]
            fn a_cut_or_altered_object_is_walked_without_a_panic(
                fields in prop::collection::vec(("model|message|[a-z]{1,3}", value()), 1..5),
                cut in any::<prop::sample::Index>(),
                at in any::<prop::sample::Index>(),
                byte in any::<u8>(),
            ) {
                let object: Map<String, Value> = fields.into_iter().collect();
                let mut bytes = serde_json::to_vec(&object).unwrap();
                let i = at.index(bytes.len());
                bytes[i] = byte;
                let cut = cut.index(bytes.len() + 1);
                for bytes in [&bytes[..], &bytes[..cut]] {
                    for key in ["model", "message"] {
                        if let Some((start, end)) = first(bytes, key) {
                            prop_assert!(start <= end && end <= bytes.len());
                        }
                        if let Some((start, end)) = first_within(bytes, "message", key) {
                            prop_assert!(start <= end && end <= bytes.len());
                        }
                    }
                }
            }

            /// Any bytes at all: no panic, and a span found lies within the bytes.
            #[test]
            fn any_bytes_are_walked_without_a_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
                for key in ["model", "message"] {
                    if let Some((start, end)) = first(&bytes, key) {
                        prop_assert!(start <= end && end <= bytes.len());
                    }
                    if let Some((start, end)) = first_within(&bytes, "message", key) {
                        prop_assert!(start <= end && end <= bytes.len());
                    }
                }
            }
        }
    }
}

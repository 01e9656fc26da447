//! `RawBody`, the gateway's byte-splicing editor of pass-through request bodies.
//!
//! The input is a header then a body. The header's first byte says how many edits (1 to
//! 4) follow, two bytes each: which key (one of the body's own keys, or a fixed one that
//! may be absent) and which value. `RawBody` must accept exactly the JSON objects (numbers
//! too large for an f64 aside), read each field as `serde_json` reads it, and
//! the patched bytes must be JSON equal, key order included, to the parsed body with the
//! same edits inserted in order.
#![no_main]

use serde_json::{Map, Value};
use switchyard_gateway::raw::RawBody;

/// Keys an edit may name besides the body's own: absent ones are appended.
const KEYS: &[&str] = &["model", "stream", "seed", "max_tokens", "q\"uo\\te", "é"];

/// The values an edit may set, as JSON text.
const VALUES: &[&str] = &[
    "\"echo\"",
    "true",
    "7",
    "null",
    "{\"a\":[1,{\"b\":\"}\"}]}",
    "\"\\u00e9}\"",
    "[]",
    "-0.5e3",
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(head & 3) + 1;
    if rest.len() < 2 * n {
        return;
    }
    let (picks, body) = rest.split_at(2 * n);
    let parsed = serde_json::from_slice::<Value>(body);
    let raw = match RawBody::parse(body) {
        Ok(raw) => raw,
        Err(_) => {
            assert!(
                !matches!(parsed, Ok(Value::Object(_))),
                "a JSON object was refused"
            );
            return;
        }
    };
    let object = match parsed {
        Ok(Value::Object(object)) => object,
        // JSON's grammar has no limit on a number, serde_json's values do (`1e400`):
        // RawBody checks the grammar only and leaves the number to whoever reads it.
        Err(e) if e.to_string().starts_with("number out of range") => return,
        other => panic!("RawBody accepted what is not a JSON object: {other:?}"),
    };
    for (key, value) in &object {
        let text = raw.raw(key).expect("every key is found");
        assert_eq!(&serde_json::from_str::<Value>(text).unwrap(), value);
        assert_eq!(raw.string(key).as_deref(), value.as_str());
        assert_eq!(raw.bool(key), value.as_bool());
    }
    assert_eq!(raw.patched(&[]), body, "no edit leaves the bytes alone");

    let own: Vec<String> = object.keys().cloned().collect();
    let edits: Vec<(&str, String)> = picks
        .chunks(2)
        .map(|pick| {
            let key = match (pick[0] < 128, own.is_empty()) {
                (true, false) => own[usize::from(pick[0]) % own.len()].as_str(),
                _ => KEYS[usize::from(pick[0]) % KEYS.len()],
            };
            (key, VALUES[usize::from(pick[1]) % VALUES.len()].to_string())
        })
        .collect();
    let mut expected: Map<String, Value> = object;
    for (key, value) in &edits {
        expected.insert(key.to_string(), serde_json::from_str(value).unwrap());
    }
    let out = raw.patched(&edits);
    let got: Value = match serde_json::from_slice(&out) {
        Ok(v) => v,
        Err(e) => panic!(
            "patched body is not JSON ({e}): {}",
            String::from_utf8_lossy(&out)
        ),
    };
    // Compared as text so that key order counts too (`preserve_order`).
    assert_eq!(got.to_string(), Value::Object(expected).to_string());
});

//! Property tests of [`RawBody`]: on random JSON objects (duplicate keys, odd spacing,
//! escapes) and random edits, the patched bytes parse and equal, key order included, the
//! body parsed by `serde_json` with the same edits inserted in order.

use super::RawBody;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Keys from a small alphabet, so that a body repeats keys and edits hit them.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ab]{1,2}",
        Just("q\"\\}".to_string()),
        Just("é".to_string())
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        "(?s).{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..4)
                .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A body written by hand from its fields (so keys may repeat), with `space` between
/// tokens.
fn body(fields: &[(String, Value)], space: &str) -> String {
    let fields: Vec<String> = fields
        .iter()
        .map(|(k, v)| {
            format!(
                "{space}{}{space}:{space}{v}{space}",
                Value::from(k.as_str())
            )
        })
        .collect();
    format!("{space}{{{}}}{space}", fields.join(","))
}

proptest! {
    #[test]
    fn patched_bodies_equal_the_parsed_edit(
        fields in prop::collection::vec((key(), value()), 0..5),
        space in prop_oneof![Just(""), Just(" "), Just("\n\t")],
        edits in prop::collection::vec((key(), value()), 0..4),
    ) {
        let text = body(&fields, space);
        let raw = RawBody::parse(text.as_bytes()).unwrap();
        let Value::Object(mut expected) = serde_json::from_str::<Value>(&text).unwrap() else {
            unreachable!("the body is an object");
        };
        let edits: Vec<(&str, String)> =
            edits.iter().map(|(k, v)| (k.as_str(), v.to_string())).collect();
        for (k, v) in &edits {
            expected.insert(k.to_string(), serde_json::from_str(v).unwrap());
        }
        let out = raw.patched(&edits);
        let got: Value = serde_json::from_slice(&out).unwrap();
        prop_assert_eq!(got.to_string(), Value::Object(expected).to_string());
    }
}

//! Property test of the usage scan: on replies of every dialect whose top-level usage
//! object stands anywhere among the top-level keys, with decoy usage objects nested in
//! the content (a tool call's arguments, an extra field of a content object), the usage
//! the scan reads is the usage of the full decode.

use proptest::prelude::*;
use serde_json::{json, Value};
use switchyard_wire::usage_scan::{reply_usage, usage_key};
use switchyard_wire::{
    codec, Dialect, FinishReason, Part, Reply, ServerContext, ToolCall, ToolKind, Usage,
};

fn usage() -> impl Strategy<Value = Usage> {
    (0u64..1 << 20, 0u64..1 << 20).prop_map(|(input, output)| Usage {
        input,
        output,
        ..Usage::default()
    })
}

/// A usage object in `dialect`'s own terms, with counts no real reply of the test has.
fn decoy(dialect: Dialect) -> Value {
    match dialect {
        Dialect::Gemini => json!({"promptTokenCount": 999_999_999, "candidatesTokenCount": 1}),
        Dialect::Chat => json!({"prompt_tokens": 999_999_999, "completion_tokens": 1}),
        Dialect::Responses | Dialect::Messages => {
            json!({"input_tokens": 999_999_999, "output_tokens": 1})
        }
    }
}

/// A reply with text and a tool call whose arguments hold a decoy usage object.
fn reply(dialect: Dialect) -> impl Strategy<Value = Reply> {
    ("(?s).{0,16}", usage(), any::<bool>()).prop_map(move |(text, usage, with_call)| {
        let mut content = vec![Part::text(format!("{text} \"usage\": {{}}"))];
        if with_call {
            let key = usage_key(dialect);
            content.push(Part::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "f".into(),
                arguments: json!({ key: decoy(dialect) }).to_string(),
                kind: ToolKind::Function,
                namespace: None,
                state: None,
            }));
        }
        Reply {
            content,
            finish: if with_call {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            },
            usage: Some(usage),
            ..Reply::default()
        }
    })
}

/// The objects nested inside `value` (not `value` itself), counted.
fn count_nested(value: &Value) -> usize {
    let children: Vec<&Value> = match value {
        Value::Object(m) => m.values().collect(),
        Value::Array(a) => a.iter().collect(),
        _ => return 0,
    };
    children
        .into_iter()
        .map(|c| usize::from(c.is_object()) + count_nested(c))
        .sum()
}

/// Inserts `key: decoy` into the `n`-th nested object of `value` in the order
/// [`count_nested`] counts them; `n` counts down as objects are passed.
fn insert_nested(value: &mut Value, n: &mut usize, key: &str, decoy: &Value) {
    let children: Vec<&mut Value> = match value {
        Value::Object(m) => m.values_mut().collect(),
        Value::Array(a) => a.iter_mut().collect(),
        _ => return,
    };
    for child in children {
        if let Value::Object(m) = child {
            if *n == 0 {
                m.insert(key.to_string(), decoy.clone());
                *n = usize::MAX;
                return;
            }
            *n -= 1;
        }
        insert_nested(child, n, key, decoy);
        if *n == usize::MAX {
            return;
        }
    }
}

/// `body` with a decoy usage object added to its `pick`-th nested object (outside the
/// usage object itself), and its usage key moved to top-level position `at`.
fn disguise(dialect: Dialect, body: &[u8], pick: usize, at: usize) -> Vec<u8> {
    let key = usage_key(dialect);
    let Ok(Value::Object(mut top)) = serde_json::from_slice::<Value>(body) else {
        panic!("an encoded reply is a JSON object");
    };
    let usage = top.shift_remove(key).expect("the reply has usage");
    let mut content = Value::Object(top);
    let count = count_nested(&content);
    if count > 0 {
        insert_nested(&mut content, &mut (pick % count), key, &decoy(dialect));
    }
    let Value::Object(top) = content else {
        unreachable!()
    };
    let mut fields: Vec<(String, Value)> = top.into_iter().collect();
    fields.insert(at % (fields.len() + 1), (key.to_string(), usage));
    serde_json::to_vec(&Value::Object(fields.into_iter().collect())).unwrap()
}

fn any_reply() -> impl Strategy<Value = (Dialect, Reply)> {
    prop::sample::select(Dialect::ALL.to_vec())
        .prop_flat_map(|dialect| (Just(dialect), reply(dialect)))
}

proptest! {
    #[test]
    fn the_scan_reads_the_usage_a_full_decode_reads(
        (dialect, reply) in any_reply(),
        pick in any::<usize>(),
        at in any::<usize>(),
    ) {
        let c = codec(dialect);
        let body = c.encode_reply(&reply, &ServerContext::default());
        let body = disguise(dialect, &body, pick, at);
        let decoded = c.decode_reply(&body);
        // A decoy placed where the decoder reads a fixed shape may make the body no reply.
        prop_assume!(decoded.is_ok());
        let decoded = decoded.unwrap().usage;
        prop_assert_eq!(reply_usage(c, &body), decoded);
        prop_assert_eq!(decoded, reply.usage);
    }
}

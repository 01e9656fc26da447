//! A request body read only at its top level: each field's value is located in the bytes
//! (validated, not built), so pass-through can replace `model` or add `extra_body`
//! fields by splicing bytes instead of parsing and re-serialising the whole body.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;
use std::ops::Range;

/// A JSON object body and where each top-level value sits in it.
pub struct RawBody<'a> {
    bytes: &'a [u8],
    fields: Vec<(String, Range<usize>)>,
}

struct Fields<'a>(Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    let v: &'de RawValue = map.next_value()?;
                    out.push((k, v));
                }
                Ok(Fields(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> RawBody<'a> {
    /// Reads `bytes` as a JSON object; the error says what is wrong.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, String> {
        let fields: Fields<'a> = serde_json::from_slice(bytes).map_err(|e| {
            if e.is_data() {
                "the request body must be a JSON object".to_string()
            } else {
                format!("the request body is not valid JSON: {e}")
            }
        })?;
        let base = bytes.as_ptr() as usize;
        let fields = fields
            .0
            .into_iter()
            .map(|(k, v)| {
                let start = v.get().as_ptr() as usize - base;
                (k, start..start + v.get().len())
            })
            .collect();
        Ok(RawBody { bytes, fields })
    }

    /// The raw JSON text of a top-level field.
    pub fn raw(&self, key: &str) -> Option<&'a str> {
        self.fields
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .and_then(|(_, r)| std::str::from_utf8(&self.bytes[r.clone()]).ok())
    }

    /// A top-level string field.
    pub fn string(&self, key: &str) -> Option<String> {
        self.raw(key).and_then(|r| serde_json::from_str(r).ok())
    }

    /// A top-level boolean field.
    pub fn bool(&self, key: &str) -> Option<bool> {
        match self.raw(key) {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        }
    }

    /// The body with `edits` applied: each `(key, json text)` replaces that field's value
    /// where it stands, or is appended when absent. Everything else is copied byte for byte.
    /// A key edited twice takes its last value where its first edit put it, as inserting
    /// the edits in order into the parsed object would.
    pub fn patched(&self, edits: &[(&str, String)]) -> Vec<u8> {
        let mut replace: Vec<(Range<usize>, &str)> = Vec::new();
        let mut append: Vec<(&str, &str)> = Vec::new();
        for (i, (key, _)) in edits.iter().enumerate() {
            // Splicing one range twice would copy bytes backwards (a panic), and appending
            // a key twice would write it twice: each key is edited once.
            if edits[..i].iter().any(|(earlier, _)| earlier == key) {
                continue;
            }
            let value = edits[i..]
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map_or("", |(_, v)| v.as_str());
            let mut found = false;
            for (k, r) in &self.fields {
                if k == key {
                    replace.push((r.clone(), value));
                    found = true;
                }
            }
            if !found {
                append.push((key, value));
            }
        }
        replace.sort_by_key(|(r, _)| r.start);
        let extra: usize = edits.iter().map(|(k, v)| k.len() + v.len() + 6).sum();
        let mut out = Vec::with_capacity(self.bytes.len() + extra);
        let mut at = 0;
        for (r, v) in replace {
            out.extend_from_slice(&self.bytes[at..r.start]);
            out.extend_from_slice(v.as_bytes());
            at = r.end;
        }
        if append.is_empty() {
            out.extend_from_slice(&self.bytes[at..]);
            return out;
        }
        // Insert before the closing brace (the last `}` of the body).
        let close = self
            .bytes
            .iter()
            .rposition(|b| *b == b'}')
            .unwrap_or(self.bytes.len());
        let close = close.max(at);
        out.extend_from_slice(&self.bytes[at..close]);
        let mut empty = self.fields.is_empty();
        for (k, v) in append {
            if !empty {
                out.push(b',');
            }
            empty = false;
            out.extend_from_slice(switchyard_wire::json::quoted(k).as_bytes());
            out.push(b':');
            out.extend_from_slice(v.as_bytes());
        }
        out.extend_from_slice(&self.bytes[close..]);
        out
    }
}

impl<'a> fmt::Debug for RawBody<'a> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.fields.iter().map(|(k, _)| k))
            .finish()
    }
}

#[cfg(test)]
#[path = "raw_proptests.rs"]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn model_is_replaced_in_place_and_the_rest_is_untouched() {
        let body = br#"{ "model" : "mock/echo", "messages":[{"role":"user","content":"h\u00e9"}],"stream":true }"#;
        let raw = RawBody::parse(body).unwrap();
        assert_eq!(raw.string("model").as_deref(), Some("mock/echo"));
        assert_eq!(raw.bool("stream"), Some(true));
        let out = raw.patched(&[("model", "\"echo\"".into()), ("seed", "7".into())]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{ "model" : "echo", "messages":[{"role":"user","content":"h\u00e9"}],"stream":true ,"seed":7}"#
        );
    }

    #[test]
    fn an_empty_object_gets_fields_without_a_leading_comma() {
        let raw = RawBody::parse(b"{}").unwrap();
        let out = raw.patched(&[("model", "\"m\"".into())]);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["model"], "m");
    }

    #[test]
    fn a_key_edited_twice_takes_its_last_edit() {
        // Two edits of one field used to splice the same range twice and panic.
        let raw = RawBody::parse(br#"{"model":"a","n":1}"#).unwrap();
        let out = raw.patched(&[
            ("model", "\"b\"".into()),
            ("seed", "1".into()),
            ("model", "\"c\"".into()),
            ("seed", "2".into()),
        ]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"model":"c","n":1,"seed":2}"#
        );
    }

    #[test]
    fn malformed_bodies_are_named() {
        assert!(RawBody::parse(b"{\"model\": ")
            .unwrap_err()
            .contains("not valid JSON"));
        assert!(RawBody::parse(b"[1]")
            .unwrap_err()
            .contains("must be a JSON object"));
        assert!(RawBody::parse(b"null")
            .unwrap_err()
            .contains("must be a JSON object"));
    }
}

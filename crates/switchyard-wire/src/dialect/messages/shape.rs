//! The shape record: what a decoded request had that the canonical types cannot hold,
//! kept so that re-encoding in this dialect gives the same body.
//!
//! The hub has no room for per-block fields such as `cache_control` (on system blocks,
//! message blocks and tools), for block types it does not model (`document`,
//! `search_result`, server tools such as `web_search_20250305`, `server_tool_use`
//! blocks), or for the choice between a plain string and an array of one text block.
//! [`decode_request`](super::request) records these by position (a JSON pointer into
//! the body) and stores the record in `request.passthrough.fields` under
//! [`SHAPE_KEY`]; [`encode_request`](super::request) applies it to the body it built and
//! never sends the key itself. Other dialects drop it with the rest of this dialect's
//! passthrough.
//!
//! Applying is conservative: an added field never replaces one the encoder wrote, a
//! field is only added to a block of the recorded type, and a position that no longer
//! exists is skipped. Positions are positions, though: a gateway that removes or
//! reorders messages of a decoded request (compaction, say) should remove [`SHAPE_KEY`]
//! from the passthrough, or cache markers and unmodelled blocks (`document`…) land where
//! the old positions point.

use crate::json::Object;
use serde_json::{Map, Value};

/// The passthrough key holding the shape record. It is never sent.
pub const SHAPE_KEY: &str = "x-switchyard-messages-shape";

/// Per-position facts about a decoded body.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Shape {
    /// Pointers to values that were arrays of one text block where the encoder writes a
    /// plain string (`system`, a message's or tool result's `content`).
    arrays: Vec<String>,
    /// Blocks the hub does not model: (pointer to the array, index, the block verbatim).
    inserts: Vec<(String, usize, Value)>,
    /// Fields the hub does not model: (pointer to the object, its `type` if it has one,
    /// the fields).
    adds: Vec<(String, Option<String>, Object)>,
}

impl Shape {
    pub(super) fn is_empty(&self) -> bool {
        self.arrays.is_empty() && self.inserts.is_empty() && self.adds.is_empty()
    }

    pub(super) fn array(&mut self, pointer: String) {
        self.arrays.push(pointer);
    }

    pub(super) fn insert(&mut self, pointer: String, index: usize, block: Value) {
        self.inserts.push((pointer, index, block));
    }

    /// Records the fields of `object` not named in `known`.
    pub(super) fn extras(&mut self, pointer: String, object: &Object, known: &[&str]) {
        let extra: Object = object
            .iter()
            .filter(|(k, _)| !known.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self.add(pointer, object, extra);
    }

    /// Records `fields` to add back to `object` at `pointer`, only while the object
    /// there has the same `type`.
    pub(super) fn add(&mut self, pointer: String, object: &Object, fields: Object) {
        if !fields.is_empty() {
            let kind = object
                .get("type")
                .and_then(Value::as_str)
                .map(str::to_string);
            self.adds.push((pointer, kind, fields));
        }
    }

    /// Like [`Shape::extras`] for objects whose `type` the encoder does not write
    /// (tool declarations: `"type": "custom"` is itself an extra).
    pub(super) fn extras_any_type(&mut self, pointer: String, object: &Object, known: &[&str]) {
        let extra: Object = object
            .iter()
            .filter(|(k, _)| !known.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !extra.is_empty() {
            self.adds.push((pointer, None, extra));
        }
    }

    pub(super) fn to_value(&self) -> Value {
        let mut out = Map::new();
        if !self.arrays.is_empty() {
            out.insert("arrays".into(), self.arrays.clone().into());
        }
        if !self.inserts.is_empty() {
            let list = self
                .inserts
                .iter()
                .map(|(p, i, b)| Value::Array(vec![p.clone().into(), (*i).into(), b.clone()]))
                .collect();
            out.insert("inserts".into(), Value::Array(list));
        }
        if !self.adds.is_empty() {
            let list = self
                .adds
                .iter()
                .map(|(p, t, f)| {
                    Value::Array(vec![
                        p.clone().into(),
                        t.clone().map_or(Value::Null, Value::String),
                        Value::Object(f.clone()),
                    ])
                })
                .collect();
            out.insert("adds".into(), Value::Array(list));
        }
        Value::Object(out)
    }

    /// Reads a record; malformed entries (a hand-edited passthrough) are skipped.
    pub(super) fn from_value(value: &Value) -> Shape {
        let mut shape = Shape::default();
        let list = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
        };
        for p in list("arrays") {
            if let Some(p) = p.as_str() {
                shape.arrays.push(p.to_string());
            }
        }
        for entry in list("inserts") {
            if let Some([p, i, b]) = entry.as_array().map(Vec::as_slice) {
                if let (Some(p), Some(i)) = (p.as_str(), i.as_u64()) {
                    shape.inserts.push((p.to_string(), i as usize, b.clone()));
                }
            }
        }
        for entry in list("adds") {
            if let Some([p, t, f]) = entry.as_array().map(Vec::as_slice) {
                if let (Some(p), Some(f)) = (p.as_str(), f.as_object()) {
                    let t = t.as_str().map(str::to_string);
                    shape.adds.push((p.to_string(), t, f.clone()));
                }
            }
        }
        shape
    }

    /// Applies the record to a body built by the encoder.
    pub(super) fn apply(&self, body: &mut Object) {
        let mut root = Value::Object(std::mem::take(body));
        for pointer in &self.arrays {
            if let Some(slot) = root.pointer_mut(pointer) {
                if let Value::String(text) = slot {
                    let text = std::mem::take(text);
                    *slot = serde_json::json!([{"type": "text", "text": text}]);
                }
            }
        }
        for (pointer, index, block) in &self.inserts {
            match root.pointer_mut(pointer) {
                Some(Value::Array(list)) => list.insert((*index).min(list.len()), block.clone()),
                Some(slot @ Value::String(_)) => {
                    let text = slot.as_str().unwrap_or_default().to_string();
                    let mut list = vec![serde_json::json!({"type": "text", "text": text})];
                    list.insert((*index).min(1), block.clone());
                    *slot = Value::Array(list);
                }
                Some(Value::Null) | None => {
                    // A container the encoder left out (a tool list of only server
                    // tools, a message of only unmodelled blocks): create it when its
                    // parent is an object.
                    if let Some((parent, key)) = pointer.rsplit_once('/') {
                        if let Some(Value::Object(obj)) = root.pointer_mut(parent) {
                            let key = key.replace("~1", "/").replace("~0", "~");
                            let list = obj.entry(key).or_insert_with(|| Value::Array(vec![]));
                            if let Value::Array(list) = list {
                                list.insert((*index).min(list.len()), block.clone());
                            }
                        }
                    }
                }
                Some(_) => {}
            }
        }
        for (pointer, kind, fields) in &self.adds {
            if let Some(Value::Object(obj)) = root.pointer_mut(pointer) {
                let found = obj.get("type").and_then(Value::as_str);
                if kind.is_some() && found != kind.as_deref() {
                    continue;
                }
                for (k, v) in fields {
                    obj.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        if let Value::Object(map) = root {
            *body = map;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_survives_its_json_form_and_applies() {
        let mut shape = Shape::default();
        shape.array("/system".into());
        shape.insert("/messages/0/content".into(), 1, json!({"type": "document"}));
        let block = json!({"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}});
        shape.extras(
            "/messages/0/content/0".into(),
            block.as_object().unwrap(),
            &["type", "text"],
        );
        let shape = Shape::from_value(&shape.to_value());
        let mut body = json!({"system": "s", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "x"}]}]})
        .as_object()
        .unwrap()
        .clone();
        shape.apply(&mut body);
        assert_eq!(
            Value::Object(body),
            json!({"system": [{"type": "text", "text": "s"}], "messages": [{"role": "user",
                "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}},
                    {"type": "document"}]}]})
        );
    }

    #[test]
    fn fields_go_only_to_blocks_of_the_recorded_type_and_never_replace() {
        let mut shape = Shape::default();
        let block = json!({"type": "text", "text": "old", "cache_control": {"type": "ephemeral"}});
        shape.extras("/0".into(), block.as_object().unwrap(), &["type"]);
        let mut body = json!({"x": 1}).as_object().unwrap().clone();
        body.insert("list".into(), json!([]));
        shape.apply(&mut body); // pointer "/0" does not exist: nothing happens
        assert_eq!(Value::Object(body), json!({"x": 1, "list": []}));
        let mut root = json!({"a": {"type": "image", "text": "new"}})
            .as_object()
            .unwrap()
            .clone();
        let mut shape = Shape::default();
        shape.extras("/a".into(), block.as_object().unwrap(), &["type"]);
        shape.apply(&mut root);
        assert_eq!(root["a"], json!({"type": "image", "text": "new"}));
    }
}

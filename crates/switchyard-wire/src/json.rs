//! Small readers for JSON objects, shared by the codecs: each names what is missing or
//! of the wrong type, so a malformed body gets a message that says where.

use crate::codec::{json_type, DecodeError};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A JSON object.
pub type Object = Map<String, Value>;

/// `text` as a JSON string, quotes included, written straight from the text: a `Value`
/// built for it (a copy of the text) and formatted through `Display` cost more, on every
/// passed-through call (its model named for the upstream and for the client).
pub fn quoted(text: &str) -> String {
    // Writing a string into memory cannot fail.
    serde_json::to_string(text).unwrap_or_default()
}

/// Whether a value borrowed as raw JSON is an array, and an empty one (`[]`, `[ ]`).
pub fn is_empty_raw_array(value: &RawValue) -> bool {
    let text = value.get();
    text.starts_with('[') && text[1..].trim_start() == "]"
}

/// The string at `key`, if present and a string.
pub fn str_at<'a>(obj: &'a Object, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

/// The unsigned integer at `key`, if present and one.
pub fn u64_at(obj: &Object, key: &str) -> Option<u64> {
    obj.get(key).and_then(Value::as_u64)
}

/// The object at `key`, if present and an object.
pub fn obj_at<'a>(obj: &'a Object, key: &str) -> Option<&'a Object> {
    obj.get(key).and_then(Value::as_object)
}

/// The array at `key`, if present and an array.
pub fn arr_at<'a>(obj: &'a Object, key: &str) -> Option<&'a Vec<Value>> {
    obj.get(key).and_then(Value::as_array)
}

/// The string at `key`, or a `Malformed` error naming `where_` and the key.
pub fn require_str<'a>(obj: &'a Object, key: &str, where_: &str) -> Result<&'a str, DecodeError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(wrong_type(where_, key, "a string", other)),
        None => Err(missing(where_, key)),
    }
}

/// The object at `key`, or a `Malformed` error naming `where_` and the key.
pub fn require_obj<'a>(
    obj: &'a Object,
    key: &str,
    where_: &str,
) -> Result<&'a Object, DecodeError> {
    match obj.get(key) {
        Some(Value::Object(o)) => Ok(o),
        Some(other) => Err(wrong_type(where_, key, "an object", other)),
        None => Err(missing(where_, key)),
    }
}

/// The array at `key`, or a `Malformed` error naming `where_` and the key.
pub fn require_arr<'a>(
    obj: &'a Object,
    key: &str,
    where_: &str,
) -> Result<&'a Vec<Value>, DecodeError> {
    match obj.get(key) {
        Some(Value::Array(a)) => Ok(a),
        Some(other) => Err(wrong_type(where_, key, "an array", other)),
        None => Err(missing(where_, key)),
    }
}

/// A value that must be an object, or a `Malformed` error naming `where_`.
pub fn as_obj<'a>(value: &'a Value, where_: &str) -> Result<&'a Object, DecodeError> {
    value.as_object().ok_or_else(|| {
        DecodeError::Malformed(format!(
            "{where_} is a JSON {} where an object is required",
            json_type(value)
        ))
    })
}

/// The `Malformed` error for a missing field.
pub fn missing(where_: &str, key: &str) -> DecodeError {
    DecodeError::Malformed(format!("{where_} has no `{key}` field"))
}

/// The `Malformed` error for a field of the wrong type.
pub fn wrong_type(where_: &str, key: &str, expected: &str, found: &Value) -> DecodeError {
    DecodeError::Malformed(format!(
        "{where_}: `{key}` is a JSON {} where {expected} is required",
        json_type(found)
    ))
}

//! Small conversions shared by the request, reply and stream halves: usage, stop
//! reasons, error objects, tool inputs and numbers.

use crate::event::StreamError;
use crate::json::{obj_at, str_at, Object};
use crate::reply::{FinishReason, Usage};
use serde::Deserialize;
use serde_json::{Map, Value};

/// Anthropic's four usage counts as read so far; each is the latest value seen that was
/// present and not `null` (stream events repeat some counts and omit others). Also read
/// straight from a `usage` object as typed fields, by a plain reply's typed reading (a
/// count of another type refuses the object, where [`WireUsage::merge`] skips it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default, rename = "input_tokens")]
    pub input: Option<u64>,
    #[serde(default, rename = "cache_read_input_tokens")]
    pub cache_read: Option<u64>,
    #[serde(default, rename = "cache_creation_input_tokens")]
    pub cache_creation: Option<u64>,
    #[serde(default, rename = "output_tokens")]
    pub output: Option<u64>,
}

impl WireUsage {
    /// Takes the counts present in a wire `usage` object, keeping earlier ones it lacks.
    pub(super) fn merge(&mut self, usage: &Object) {
        let read = |key: &str| usage.get(key).and_then(Value::as_u64);
        self.input = read("input_tokens").or(self.input);
        self.cache_read = read("cache_read_input_tokens").or(self.cache_read);
        self.cache_creation = read("cache_creation_input_tokens").or(self.cache_creation);
        self.output = read("output_tokens").or(self.output);
    }

    /// Whether any count was seen.
    pub(super) fn seen(&self) -> bool {
        *self != WireUsage::default()
    }

    /// The canonical usage: Anthropic's input and cache counts are disjoint, the
    /// canonical `input` is their sum.
    pub(super) fn canonical(&self) -> Usage {
        let cache_read = self.cache_read.unwrap_or(0);
        let cache_creation = self.cache_creation.unwrap_or(0);
        Usage {
            input: self
                .input
                .unwrap_or(0)
                .saturating_add(cache_read)
                .saturating_add(cache_creation),
            cached_input: cache_read,
            cache_write: cache_creation,
            output: self.output.unwrap_or(0),
            reasoning: 0,
        }
    }
}

/// The wire usage object for a canonical usage (the inverse of [`WireUsage::canonical`];
/// `reasoning` has no Anthropic field and is dropped).
pub(super) fn usage_to_wire(usage: &Usage) -> Value {
    let mut out = Map::new();
    out.insert("input_tokens".into(), usage.uncached_input().into());
    out.insert(
        "cache_creation_input_tokens".into(),
        usage.cache_write.into(),
    );
    out.insert("cache_read_input_tokens".into(), usage.cached_input.into());
    out.insert("output_tokens".into(), usage.output.into());
    Value::Object(out)
}

/// The normalised reason for a `stop_reason`.
pub(super) fn finish_from_wire(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        // pause_turn, model_context_window_exceeded and anything newer.
        _ => FinishReason::Other,
    }
}

/// The `stop_reason` to send: the provider's own string when it is one this dialect
/// reads back as the same reason (so `stop_sequence` and `pause_turn` survive), else
/// the dialect's word for the normalised reason. Strings of other dialects (`stop`,
/// `STOP`, `tool_calls`) never leak: they read back as a different reason.
pub(super) fn finish_to_wire(finish: FinishReason, raw: Option<&str>) -> String {
    if let Some(raw) = raw {
        let plausible = !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        if plausible && finish_from_wire(raw) == finish {
            return raw.to_string();
        }
    }
    match finish {
        FinishReason::Stop => "end_turn",
        FinishReason::Length => "max_tokens",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::ContentFilter => "refusal",
        // Nothing better exists for an unknown reason of another dialect.
        FinishReason::Other => "end_turn",
    }
    .to_string()
}

/// The error of an Anthropic error body or `error` event:
/// `{"type":"error","error":{"type","message"}}`.
pub(super) fn error_from_object(body: &Object) -> StreamError {
    let error = obj_at(body, "error");
    let kind = error.and_then(|e| str_at(e, "type")).map(str::to_string);
    let message = error
        .and_then(|e| str_at(e, "message"))
        .map(str::to_string)
        .or_else(|| kind.clone())
        .unwrap_or_else(|| "unknown error".to_string());
    StreamError {
        kind,
        code: None,
        message,
        status: None,
    }
}

/// Whether a body is an error object rather than a message.
pub(super) fn is_error_body(body: &Object) -> bool {
    str_at(body, "type") == Some("error")
        || (body.get("content").is_none() && obj_at(body, "error").is_some())
}

/// The error event / body for a canonical error.
pub(super) fn error_to_wire(error: &StreamError) -> Value {
    serde_json::json!({
        "type": "error",
        "error": {
            "type": error.kind.as_deref().unwrap_or("api_error"),
            "message": error.message,
        }
    })
}

/// The key under which arguments that are not a JSON object are sent, so the call
/// stays in the transcript (Anthropic requires `input` to be an object).
pub const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

/// A tool call's `input` object from its canonical argument text: empty text is `{}`;
/// text that is not a JSON object (invalid, truncated, an array) is kept as
/// `{"_raw_arguments": "<text>"}`.
pub(super) fn input_object(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return Value::Object(Map::new());
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => {
            let mut map = Map::new();
            map.insert(RAW_ARGUMENTS_KEY.into(), Value::String(arguments.into()));
            Value::Object(map)
        }
    }
}

/// A tool call's canonical argument text from a wire `input` (compact JSON).
pub(super) fn arguments_text(input: Option<&Value>) -> String {
    match input {
        None | Some(Value::Null) => "{}".to_string(),
        Some(v) => v.to_string(),
    }
}

/// A float as JSON, written as an integer when it is one (`1`, not `1.0`), so a
/// client's `"temperature": 1` re-encodes byte for byte.
pub(super) fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Value::from(value as i64)
    } else {
        serde_json::Number::from_f64(value)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_round_trips_and_sums_cache_counts() {
        let mut w = WireUsage::default();
        w.merge(
            serde_json::json!({"input_tokens": 3, "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": 20, "output_tokens": 1})
            .as_object()
            .unwrap(),
        );
        // A later event repeating only output (and a null cache count) keeps the rest.
        w.merge(
            serde_json::json!({"output_tokens": 50, "cache_read_input_tokens": null})
                .as_object()
                .unwrap(),
        );
        let u = w.canonical();
        assert_eq!(
            (u.input, u.cached_input, u.cache_write, u.output),
            (123, 100, 20, 50)
        );
        let mut back = WireUsage::default();
        back.merge(usage_to_wire(&u).as_object().unwrap());
        assert_eq!(back.canonical(), u);
    }

    #[test]
    fn stop_reasons_keep_messages_strings_only() {
        assert_eq!(
            finish_to_wire(FinishReason::Stop, Some("stop_sequence")),
            "stop_sequence"
        );
        assert_eq!(finish_to_wire(FinishReason::Stop, Some("stop")), "end_turn");
        assert_eq!(
            finish_to_wire(FinishReason::ToolCalls, Some("tool_calls")),
            "tool_use"
        );
        assert_eq!(
            finish_to_wire(FinishReason::Other, Some("pause_turn")),
            "pause_turn"
        );
        assert_eq!(
            finish_to_wire(FinishReason::Other, Some("MALFORMED_FUNCTION_CALL")),
            "end_turn"
        );
        assert_eq!(finish_to_wire(FinishReason::Length, None), "max_tokens");
    }

    #[test]
    fn tool_inputs_are_always_objects() {
        assert_eq!(input_object(""), serde_json::json!({}));
        assert_eq!(input_object(r#"{"a":1}"#), serde_json::json!({"a":1}));
        assert_eq!(
            input_object(r#"{"a":"#),
            serde_json::json!({"_raw_arguments": "{\"a\":"})
        );
        assert_eq!(
            input_object("[1]"),
            serde_json::json!({"_raw_arguments": "[1]"})
        );
    }

    #[test]
    fn integral_floats_are_written_as_integers() {
        assert_eq!(number(1.0).to_string(), "1");
        assert_eq!(number(0.7).to_string(), "0.7");
    }
}

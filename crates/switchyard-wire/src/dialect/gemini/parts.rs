//! Gemini `Part` objects, both ways, shared by requests, replies and streams: reading a
//! wire part, the rule that folds reply parts into canonical parts, the synthesised
//! call ids, and writing canonical parts back.

use crate::codec::{json_type, DecodeError};
use crate::json::{obj_at, str_at, Object};
use crate::part::{Image, Opaque, Part, ToolCall, ToolKind, ToolResult};
use crate::reply::FinishReason;
use crate::Dialect;
use serde_json::{json, Map, Value};

/// The wire name of the signature field that may sit on any part.
pub(crate) const SIGNATURE: &str = "thoughtSignature";

/// A synthesised tool-call id, for a dialect whose calls have none.
///
/// The id is `call_` followed by 16 hex digits of a 64-bit FNV-1a hash of `turn`,
/// `position`, `name` and `args` (the arguments as the decoder serialises them). `turn`
/// is 0 for a reply (and for a stream) and the index of the model content inside
/// `contents` for a decoded request, so that ids are unique within a request;
/// `position` is the index of the call among the function calls of that content. The
/// same reply therefore always gives the same ids, and a streamed reply gives the ids
/// of its non-streamed twin.
pub fn synthetic_call_id(turn: usize, position: usize, name: &str, args: &str) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(PRIME);
        }
        // A separator no UTF-8 text contains, so ("ab","c") and ("a","bc") differ.
        hash ^= 0xff;
        hash = hash.wrapping_mul(PRIME);
    };
    feed(turn.to_string().as_bytes());
    feed(position.to_string().as_bytes());
    feed(name.as_bytes());
    feed(args.as_bytes());
    format!("call_{hash:016x}")
}

/// A wire part as read, before it is placed among canonical parts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WirePart {
    /// `text`, a thought summary when `thought` is true; a part holding only a
    /// `thoughtSignature` reads as empty text.
    Text {
        text: String,
        thought: bool,
        signature: Option<String>,
    },
    /// `functionCall`, its `args` serialised as compact JSON text.
    Call {
        name: String,
        args: String,
        id: Option<String>,
        signature: Option<String>,
    },
    /// `functionResponse`.
    Response(ToolResult),
    /// `inlineData` or `fileData`.
    Image(Image),
    /// A part the hub cannot hold (`executableCode`, `codeExecutionResult`,
    /// `videoMetadata` alone…): skipped.
    Other,
}

/// Reads one wire part; `where_` names it in errors.
pub(crate) fn read_part(value: &Value, where_: &str) -> Result<WirePart, DecodeError> {
    let obj = value.as_object().ok_or_else(|| {
        DecodeError::Malformed(format!(
            "{where_} is a JSON {} where a part object is required",
            json_type(value)
        ))
    })?;
    let signature = str_at(obj, SIGNATURE).map(str::to_string);
    if let Some(call) = obj.get("functionCall") {
        let call = expect_obj(call, &format!("{where_}.functionCall"))?;
        let name = expect_str(call, "name", &format!("{where_}.functionCall"))?;
        let args = match call.get("args") {
            None | Some(Value::Null) => "{}".to_string(),
            Some(v) => v.to_string(),
        };
        return Ok(WirePart::Call {
            name: name.to_string(),
            args,
            id: str_at(call, "id").map(str::to_string),
            signature,
        });
    }
    if let Some(resp) = obj.get("functionResponse") {
        let where_ = format!("{where_}.functionResponse");
        let resp = expect_obj(resp, &where_)?;
        return read_function_response(resp, &where_).map(WirePart::Response);
    }
    if let Some(data) = obj.get("inlineData") {
        return read_inline(data, &format!("{where_}.inlineData")).map(WirePart::Image);
    }
    if let Some(data) = obj.get("fileData") {
        let where_ = format!("{where_}.fileData");
        let data = expect_obj(data, &where_)?;
        let uri = expect_str(data, "fileUri", &where_)?;
        return Ok(WirePart::Image(Image::Url {
            url: uri.to_string(),
        }));
    }
    let thought = obj.get("thought").and_then(Value::as_bool).unwrap_or(false);
    match obj.get("text") {
        Some(Value::String(text)) => Ok(WirePart::Text {
            text: text.clone(),
            thought,
            signature,
        }),
        Some(other) => Err(DecodeError::Malformed(format!(
            "{where_}: `text` is a JSON {} where a string is required",
            json_type(other)
        ))),
        None if signature.is_some() => Ok(WirePart::Text {
            text: String::new(),
            thought,
            signature,
        }),
        None => Ok(WirePart::Other),
    }
}

fn read_inline(data: &Value, where_: &str) -> Result<Image, DecodeError> {
    let data = expect_obj(data, where_)?;
    Ok(Image::Base64 {
        media_type: expect_str(data, "mimeType", where_)?.to_string(),
        data: expect_str(data, "data", where_)?.to_string(),
    })
}

/// `functionResponse{name, response, parts?}` as a tool result whose `call_id` is still
/// empty (the caller matches it to a call by name).
fn read_function_response(resp: &Object, where_: &str) -> Result<ToolResult, DecodeError> {
    let name = expect_str(resp, "name", where_)?;
    let (text, is_error) = match resp.get("response") {
        None | Some(Value::Null) => (String::new(), false),
        Some(Value::Object(r)) => response_text(r),
        Some(other) => (other.to_string(), false),
    };
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(Part::text(text));
    }
    if let Some(parts) = resp.get("parts").and_then(Value::as_array) {
        for (i, p) in parts.iter().enumerate() {
            let where_ = format!("{where_}.parts[{i}]");
            if let Some(data) = p.get("inlineData") {
                content.push(Part::Image(read_inline(
                    data,
                    &format!("{where_}.inlineData"),
                )?));
            } else if let Some(uri) = p
                .get("fileData")
                .and_then(Value::as_object)
                .and_then(|f| str_at(f, "fileUri"))
            {
                content.push(Part::Image(Image::Url {
                    url: uri.to_string(),
                }));
            }
        }
    }
    Ok(ToolResult {
        call_id: str_at(resp, "id").unwrap_or_default().to_string(),
        name: Some(name.to_string()),
        content,
        is_error,
        kind: ToolKind::Function,
    })
}

/// The text and error flag of a `functionResponse.response` object: `{error: x}` alone
/// is an error whose text is `x` (a string as is, anything else as JSON);
/// `{content: "text"}` alone is that text; any other object is its JSON text.
fn response_text(response: &Object) -> (String, bool) {
    if response.len() == 1 {
        if let Some(e) = response.get("error") {
            let text = match e {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            return (text, true);
        }
        if let Some(Value::String(s)) = response.get("content") {
            return (s.clone(), false);
        }
    }
    (Value::Object(response.clone()).to_string(), false)
}

/// The `response` object for a tool result's text: a JSON object text is sent as that
/// object, any other text as `{content: text}`, and an error as `{error: …}`. An object
/// that would read back differently (`{error: …}` alone, `{content: "…"}` alone, or a
/// text whose JSON is written otherwise than compactly, `{\n}` or an escaped `\u00e9`)
/// is wrapped as text so that decoding gives the same text back.
pub(crate) fn response_object(text: &str, is_error: bool) -> Value {
    let parsed = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) if serde_json::to_string(&map).is_ok_and(|t| t == text) => Some(map),
        _ => None,
    };
    if is_error {
        return match parsed {
            Some(map) => json!({ "error": map }),
            None => json!({ "error": text }),
        };
    }
    match parsed {
        Some(map) if !is_ambiguous(&map) => Value::Object(map),
        _ => json!({ "content": text }),
    }
}

fn is_ambiguous(map: &Object) -> bool {
    map.len() == 1
        && (map.contains_key("error") || matches!(map.get("content"), Some(Value::String(_))))
}

/// A `functionResponse` part for `result`, answering the function `name`.
pub(crate) fn function_response_part(result: &ToolResult, name: &str) -> Value {
    let mut resp = Map::new();
    resp.insert("name".into(), Value::String(name.to_string()));
    resp.insert(
        "response".into(),
        response_object(&result.text(), result.is_error),
    );
    let media: Vec<Value> = result
        .content
        .iter()
        .filter_map(|p| match p {
            Part::Image(image) => Some(image_part(image)),
            _ => None,
        })
        .collect();
    if !media.is_empty() {
        resp.insert("parts".into(), Value::Array(media));
    }
    json!({ "functionResponse": resp })
}

/// Where a read text or thought part goes among the canonical parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Nothing to add (unsigned empty text).
    Skip,
    /// Extends the last canonical part.
    Extend,
    /// Starts a new canonical part.
    New,
}

/// What the last canonical part of a reply is, as far as folding cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Last {
    /// No part yet, or a part text cannot extend (a call, an image).
    #[default]
    Closed,
    /// Text; `signed` once a signature arrived for it.
    Text { signed: bool },
    /// Thinking; `signed` once a signature arrived for it.
    Thinking { signed: bool },
}

/// The folding rule shared by reply and stream decoding: a text (or thought) part
/// extends the last part when that is unsigned text (or unsigned thinking); a signature
/// closes a part, so whatever follows a signed part starts a new one. Streams arrive as
/// many small text chunks, and this rule is what makes a streamed reply assemble to the
/// same parts as its non-streamed twin.
pub(crate) fn placement(last: Last, text: &str, thought: bool, signed: bool) -> Placement {
    if text.is_empty() && !signed {
        return Placement::Skip;
    }
    let extends = match last {
        Last::Text { signed: false } => !thought,
        Last::Thinking { signed: false } => thought,
        _ => false,
    };
    if extends {
        Placement::Extend
    } else {
        Placement::New
    }
}

/// Folds a reply's wire parts into canonical parts (see [`placement`]). Function
/// responses in a reply are not content and are skipped.
pub(crate) fn fold_reply_parts(parts: &[Value], where_: &str) -> Result<Vec<Part>, DecodeError> {
    let mut out: Vec<Part> = Vec::new();
    let mut last = Last::Closed;
    let mut calls = 0;
    for (i, value) in parts.iter().enumerate() {
        match read_part(value, &format!("{where_}[{i}]"))? {
            WirePart::Text {
                text,
                thought,
                signature,
            } => {
                let signed = signature.is_some();
                let state = signature.map(|s| Opaque::new(Dialect::Gemini, s));
                match placement(last, &text, thought, signed) {
                    Placement::Skip => continue,
                    Placement::Extend => match out.last_mut() {
                        Some(Part::Text { text: t, state: s }) => {
                            t.push_str(&text);
                            if state.is_some() {
                                *s = state;
                            }
                        }
                        Some(Part::Thinking(t)) => {
                            t.text.push_str(&text);
                            if state.is_some() {
                                t.state = state;
                            }
                        }
                        _ => {}
                    },
                    Placement::New => out.push(if thought {
                        Part::Thinking(crate::part::Thinking {
                            text,
                            state,
                            ..Default::default()
                        })
                    } else {
                        Part::Text { text, state }
                    }),
                }
                last = if thought {
                    Last::Thinking { signed }
                } else {
                    Last::Text { signed }
                };
            }
            WirePart::Call {
                name,
                args,
                id,
                signature,
            } => {
                let id = id.unwrap_or_else(|| synthetic_call_id(0, calls, &name, &args));
                calls += 1;
                out.push(Part::ToolCall(ToolCall {
                    id,
                    name,
                    arguments: args,
                    kind: ToolKind::Function,
                    namespace: None,
                    state: signature.map(|s| Opaque::new(Dialect::Gemini, s)),
                }));
                last = Last::Closed;
            }
            WirePart::Image(image) => {
                out.push(Part::Image(image));
                last = Last::Closed;
            }
            WirePart::Response(_) | WirePart::Other => {}
        }
    }
    Ok(out)
}

/// The normalised finish reason of a Gemini `finishReason` (or prompt `blockReason`
/// value read as a finish reason).
pub(crate) fn finish_reason(raw: &str, has_calls: bool) -> FinishReason {
    match raw {
        "STOP" if has_calls => FinishReason::ToolCalls,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

/// The `finishReason` to write for a canonical finish: the provider's own string when it
/// is a Gemini one that reads back as `reason`, else the closest Gemini value.
pub(crate) fn finish_string(reason: FinishReason, raw: Option<&str>, has_calls: bool) -> String {
    if let Some(raw) = raw {
        let gemini_like = !raw.is_empty()
            && raw
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b == b'_' || b.is_ascii_digit());
        if gemini_like && finish_reason(raw, has_calls) == reason {
            return raw.to_string();
        }
    }
    match reason {
        FinishReason::Stop | FinishReason::ToolCalls => "STOP",
        FinishReason::Length => "MAX_TOKENS",
        FinishReason::ContentFilter => "SAFETY",
        FinishReason::Other => "OTHER",
    }
    .to_string()
}

/// A `{text}` part, with `thought:true` for reasoning and the signature when there is
/// one.
pub(crate) fn text_part(text: &str, thought: bool, signature: Option<&str>) -> Value {
    let mut part = Map::new();
    part.insert("text".into(), Value::String(text.to_string()));
    if thought {
        part.insert("thought".into(), Value::Bool(true));
    }
    if let Some(sig) = signature {
        part.insert(SIGNATURE.into(), Value::String(sig.to_string()));
    }
    Value::Object(part)
}

/// An `inlineData` part for inline bytes, a `fileData` part for a URL (its `mimeType`
/// guessed from the file extension when it has a known one).
pub(crate) fn image_part(image: &Image) -> Value {
    match image {
        Image::Base64 { media_type, data } => {
            json!({ "inlineData": { "mimeType": media_type, "data": data } })
        }
        Image::Url { url } => {
            let mut file = Map::new();
            if let Some(mime) = guess_mime(url) {
                file.insert("mimeType".into(), Value::String(mime.to_string()));
            }
            file.insert("fileUri".into(), Value::String(url.clone()));
            json!({ "fileData": file })
        }
    }
}

fn guess_mime(url: &str) -> Option<&'static str> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "heic" => "image/heic",
        "heif" => "image/heif",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

/// The `args` object of a call: its arguments parsed, `{}` when empty, and
/// `{"input": text}` for a custom (free-form) call. Arguments that are not a JSON object
/// give an error naming the call.
pub(crate) fn call_args(call: &ToolCall) -> Result<Value, String> {
    if call.kind == ToolKind::Custom {
        return Ok(json!({ "input": call.arguments }));
    }
    let text = call.arguments.trim();
    if text.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(Value::Object(map)),
        Ok(other) => Err(format!(
            "tool call `{}` ({}) has arguments that are a JSON {}, but Gemini's \
             functionCall.args must be an object",
            call.name,
            call.id,
            json_type(&other)
        )),
        Err(e) => Err(format!(
            "tool call `{}` ({}) has arguments that are not JSON ({e}); Gemini's \
             functionCall.args must be an object",
            call.name, call.id
        )),
    }
}

/// A `functionCall` part with the given `args`, signed when the call carries Gemini
/// state.
pub(crate) fn function_call_part(call: &ToolCall, args: Value) -> Value {
    let mut part = Map::new();
    part.insert(
        "functionCall".into(),
        json!({ "name": call.flat_name(), "args": args }),
    );
    if let Some(sig) = Opaque::for_dialect(&call.state, Dialect::Gemini) {
        part.insert(SIGNATURE.into(), Value::String(sig.to_string()));
    }
    Value::Object(part)
}

/// A canonical reply part as a wire part (server side): thinking keeps its text and only
/// a Gemini signature; a call whose arguments are not a JSON object is sent as
/// `{"input": <text>}` so nothing is lost; tool results are not reply content.
pub(crate) fn reply_part(part: &Part) -> Option<Value> {
    match part {
        Part::Text { text, state } => Some(text_part(
            text,
            false,
            Opaque::for_dialect(state, Dialect::Gemini),
        )),
        Part::Thinking(t) => {
            let sig = Opaque::for_dialect(&t.state, Dialect::Gemini);
            (!t.text.is_empty() || sig.is_some()).then(|| text_part(&t.text, true, sig))
        }
        Part::ToolCall(call) => {
            let args = call_args(call).unwrap_or_else(|_| json!({ "input": call.arguments }));
            Some(function_call_part(call, args))
        }
        Part::Image(image) => Some(image_part(image)),
        Part::ToolResult(_) => None,
    }
}

/// `value` as an object, or a `Malformed` error naming `where_`.
pub(crate) fn expect_obj<'a>(value: &'a Value, where_: &str) -> Result<&'a Object, DecodeError> {
    crate::json::as_obj(value, where_)
}

/// The string at `key`, or a `Malformed` error naming `where_`.
pub(crate) fn expect_str<'a>(
    obj: &'a Object,
    key: &str,
    where_: &str,
) -> Result<&'a str, DecodeError> {
    crate::json::require_str(obj, key, where_)
}

/// The parts array of a `Content` object (missing means none).
pub(crate) fn content_parts<'a>(
    content: &'a Object,
    where_: &str,
) -> Result<&'a [Value], DecodeError> {
    match content.get("parts") {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(other) => Err(crate::json::wrong_type(where_, "parts", "an array", other)),
    }
}

/// The first candidate's content object, if any.
pub(crate) fn candidate_content<'a>(
    candidate: &'a Object,
    where_: &str,
) -> Result<Option<&'a Object>, DecodeError> {
    match candidate.get("content") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(c)) => Ok(Some(c)),
        Some(other) => Err(crate::json::wrong_type(
            where_,
            "content",
            "an object",
            other,
        )),
    }
}

/// Whether a reply object has a blocked prompt (`promptFeedback.blockReason`).
pub(crate) fn block_reason(obj: &Object) -> Option<&str> {
    obj_at(obj, "promptFeedback").and_then(|f| str_at(f, "blockReason"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        let a = synthetic_call_id(0, 0, "get", "{}");
        assert_eq!(a, synthetic_call_id(0, 0, "get", "{}"));
        assert_ne!(a, synthetic_call_id(0, 1, "get", "{}"));
        assert_ne!(a, synthetic_call_id(2, 0, "get", "{}"));
        assert_ne!(
            synthetic_call_id(0, 0, "ab", "c"),
            synthetic_call_id(0, 0, "a", "bc")
        );
        assert!(a.starts_with("call_") && a.len() == 21, "{a}");
    }

    #[test]
    fn tool_result_text_survives_the_response_object() {
        for (text, err) in [
            ("plain", false),
            (r#"{"temp":21}"#, false),
            (r#"{"content":"x"}"#, false),
            (r#"{"error":"x"}"#, false),
            (r#"{"content":[1]}"#, false),
            ("{\n}", false),
            ("{ \"temp\": 21 }", false),
            (r#"{"t":"\u00e9"}"#, false),
            ("{\n \"code\": 7\n}", true),
            ("boom", true),
            (r#"{"code":7}"#, true),
            ("", false),
        ] {
            let obj = response_object(text, err);
            let (back, is_error) = response_text(obj.as_object().unwrap());
            assert_eq!((back.as_str(), is_error), (text, err), "{obj}");
        }
    }

    #[test]
    fn folding_extends_unsigned_runs_and_a_signature_closes_a_part() {
        let parts: Vec<Value> = serde_json::from_str(
            r#"[{"text":"th","thought":true},{"text":"ink","thought":true,"thoughtSignature":"s1"},
                {"text":"a"},{"text":""},{"text":"b","thoughtSignature":"s2"},{"text":"c"},
                {"functionCall":{"name":"f","args":{"x":1}}},{"text":"d"}]"#,
        )
        .unwrap();
        let out = fold_reply_parts(&parts, "parts").unwrap();
        assert_eq!(out.len(), 5, "{out:#?}");
        assert!(matches!(&out[0], Part::Thinking(t) if t.text == "think" && t.state.is_some()));
        assert!(matches!(&out[1], Part::Text { text, state: Some(_) } if text == "ab"));
        assert!(matches!(&out[2], Part::Text { text, state: None } if text == "c"));
        assert!(
            matches!(&out[3], Part::ToolCall(c) if c.arguments == r#"{"x":1}"#
                && c.id == synthetic_call_id(0, 0, "f", r#"{"x":1}"#))
        );
    }

    #[test]
    fn finish_strings_read_back() {
        for raw in [
            "STOP",
            "MAX_TOKENS",
            "SAFETY",
            "MALFORMED_FUNCTION_CALL",
            "SPII",
        ] {
            for calls in [false, true] {
                let reason = finish_reason(raw, calls);
                assert_eq!(finish_string(reason, Some(raw), calls), raw);
            }
        }
        assert_eq!(
            finish_string(FinishReason::Length, Some("length"), false),
            "MAX_TOKENS"
        );
        assert_eq!(
            finish_string(FinishReason::ToolCalls, Some("tool_use"), true),
            "STOP"
        );
    }
}

//! The common chat request read as borrowed typed fields: a model, messages of system,
//! developer and user text, and the few settings most clients send. Parsing the body into
//! a map of values first was 8,900 of a translated call's 122,000 instructions
//! (docs/performance.md, *Instructions per call*). A body with any other field, message
//! role or content shape is not plain, and [`super::request::decode_lenient`] reads it; a
//! test holds the two to the same request (or error) for every plain body.

use crate::codec::DecodedRequest;
use crate::part::Part;
use crate::request::{Message, Passthrough, Request, Role};
use crate::Dialect;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The fields a plain request may have; any other refuses the body
/// (`deny_unknown_fields`), as does a repeated one or a value of another type.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainRequest<'a> {
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(borrow)]
    messages: Vec<PlainMessage<'a>>,
    #[serde(default)]
    max_completion_tokens: Option<u64>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    top_p: Option<f64>,
    /// Passed through as it came, as the lenient reader passes it.
    #[serde(borrow, default)]
    stream_options: Option<&'a RawValue>,
}

/// A message of text: its role and its content as one string (or none). Other fields of
/// a message of these roles are not read by the lenient reader either.
#[derive(Deserialize)]
struct PlainMessage<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
}

/// The request, when `body` is a plain one.
pub(super) fn decode(body: &[u8]) -> Option<DecodedRequest> {
    let plain: PlainRequest<'_> = serde_json::from_slice(body).ok()?;
    let mut messages = Vec::with_capacity(plain.messages.len());
    for m in plain.messages {
        let role = match m.role.as_ref() {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            _ => return None,
        };
        let content = m.content.map(|t| vec![Part::text(t)]).unwrap_or_default();
        messages.push(Message { role, content });
    }
    let mut request = Request {
        messages,
        max_tokens: plain.max_completion_tokens.or(plain.max_tokens),
        temperature: plain.temperature,
        top_p: plain.top_p,
        ..Request::default()
    };
    if let Some(options) = plain.stream_options {
        let value = serde_json::from_str(options.get()).ok()?;
        let mut fields = serde_json::Map::new();
        fields.insert("stream_options".to_string(), value);
        request.passthrough = Passthrough {
            dialect: Some(Dialect::Chat),
            fields,
        };
    }
    Some(DecodedRequest {
        model: plain.model.map(Cow::into_owned),
        stream: plain.stream.unwrap_or(false),
        request,
    })
}

#[cfg(test)]
mod tests {
    use super::super::request::{decode, decode_lenient};

    /// The typed reading gives the lenient reading's request (or its error) for the
    /// golden requests and for bodies made to sit at the edge between the two; the plain
    /// ones among them are read by the typed reading itself.
    #[test]
    fn the_typed_reading_agrees_with_the_lenient_one() {
        let mut bodies = crate::typed_agrees::golden("chat", "request.json", 2);
        let plain = [
            r#"{"model":"m","messages":[{"role":"user","content":"hello \"you\" \u00e9"}]}"#,
            r#"{"messages":[{"role":"system","content":"be brief","name":"x"},{"role":"developer","content":null},{"role":"user","content":""}],"stream":true,"stream_options":{"include_usage":true,"b":[1,2]}}"#,
            r#"{"model":null,"stream":null,"messages":[],"max_tokens":5,"max_completion_tokens":null,"temperature":1,"top_p":0.25}"#,
            r#"{"model":"m","messages":[{"content":"x","role":"user"}],"max_tokens":7,"max_completion_tokens":9,"temperature":1e300,"stream_options":null}"#,
            r#" {"messages":[{"role":"user","content":"a"}],"top_p":123456789012345678901234567890} "#,
        ];
        let edge = [
            r#"{"model":"m","messages":[{"role":"assistant","content":"hi"}]}"#,
            r#"{"model":"m","messages":[{"role":"tool","tool_call_id":"c","content":"r"}]}"#,
            r#"{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[]}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"a"}],"user":"u"}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"a"}],"model":"n"}"#,
            r#"{"model":7,"messages":[{"role":"user","content":"a"}]}"#,
            r#"{"model":"m","stream":"yes","messages":[]}"#,
            r#"{"model":"m","messages":[],"max_tokens":-1}"#,
            r#"{"model":"m","messages":[],"max_tokens":1.5}"#,
            r#"{"model":"m","messages":[],"temperature":"hot"}"#,
            r#"{"model":"m","messages":[{"role":"robot","content":"a"}]}"#,
            r#"{"model":"m","messages":[{"content":"a"}]}"#,
            r#"{"model":"m","messages":[7]}"#,
            r#"{"model":"m","messages":null}"#,
            r#"{"model":"m"}"#,
            r#"{"model":"m","messages":[]"#,
            r#"[1]"#,
            r#"null"#,
        ];
        for body in &plain {
            assert!(super::decode(body.as_bytes()).is_some(), "{body}");
        }
        for body in &edge {
            assert!(super::decode(body.as_bytes()).is_none(), "{body}");
        }
        bodies.extend(plain.iter().chain(&edge).map(|b| b.as_bytes().to_vec()));
        crate::typed_agrees::assert_agree(&bodies, decode, decode_lenient);
    }
}

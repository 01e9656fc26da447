//! A whole reply's usage, read without decoding the reply.
//!
//! Metering a reply that passes through untouched needs its token counts only. Every
//! dialect closes a whole reply with its usage object (chat, Responses and Messages put
//! `usage` last, Gemini puts `usageMetadata` after the candidates), and a key can only be
//! matched outside string values (a quote inside a string is escaped), so the last
//! `"usage"` key of the body (`"usageMetadata"` for Gemini) is the reply's usage: a tool
//! call's arguments written as an object (Messages, Gemini) come before it. Only that
//! object is parsed; a body where none is found is decoded whole instead.

use crate::codec::Codec;
use crate::reply::Usage;
use crate::Dialect;
use serde_json::{Map, Value};

/// The key a whole reply's usage object sits under in `dialect`.
pub fn usage_key(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Gemini => "usageMetadata",
        Dialect::Chat | Dialect::Responses | Dialect::Messages => "usage",
    }
}

/// The usage object of a whole reply body in `dialect`, as the provider wrote it: the
/// value of the body's last usage key (see [`usage_key`]) when it is an object.
pub fn find_usage_object(dialect: Dialect, body: &[u8]) -> Option<Map<String, Value>> {
    let key = format!("\"{}\"", usage_key(dialect));
    let at = memchr::memmem::rfind(body, key.as_bytes())?;
    let rest = body[at + key.len()..]
        .trim_ascii_start()
        .strip_prefix(b":")?;
    match serde_json::Deserializer::from_slice(rest)
        .into_iter::<Value>()
        .next()
    {
        Some(Ok(Value::Object(usage))) => Some(usage),
        _ => None,
    }
}

/// The canonical usage of a whole (not streamed) reply body in `codec`'s dialect: from
/// its usage object alone when one is found, else from decoding the body (`None` when the
/// body is not a reply, or reports no usage).
pub fn reply_usage(codec: &dyn Codec, body: &[u8]) -> Option<Usage> {
    match find_usage_object(codec.dialect(), body) {
        Some(usage) => Some(codec.decode_usage(&usage)),
        None => codec.decode_reply(body).ok()?.usage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::ServerContext;
    use crate::dialect::codec;
    use crate::reply::{FinishReason, Reply};
    use crate::Part;

    fn reply_with(text: &str, usage: Usage) -> Reply {
        Reply {
            content: vec![Part::text(text)],
            finish: FinishReason::Stop,
            usage: Some(usage),
            ..Reply::default()
        }
    }

    #[test]
    fn every_dialect_reads_the_same_usage_as_a_whole_decode() {
        let usage = Usage {
            input: 120,
            cached_input: 20,
            cache_write: 0,
            output: 30,
            reasoning: 0,
        };
        // A text that mentions the keys, escaped as any string value is: not a match.
        let reply = reply_with(r#"the "usage": {"input_tokens": 1} key"#, usage);
        for dialect in Dialect::ALL {
            let c = codec(dialect);
            let body = c.encode_reply(&reply, &ServerContext::default());
            let decoded = c.decode_reply(&body).unwrap().usage;
            assert!(find_usage_object(dialect, &body).is_some(), "{dialect}");
            assert_eq!(reply_usage(c, &body), decoded, "{dialect}");
            assert_eq!(decoded, Some(usage), "{dialect}");
        }
    }

    #[test]
    fn a_body_without_a_usage_object_is_decoded_whole_or_has_none() {
        let chat = codec(Dialect::Chat);
        let body = br#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#;
        assert_eq!(find_usage_object(Dialect::Chat, body), None);
        assert_eq!(reply_usage(chat, body), None);
        assert_eq!(reply_usage(chat, b"not json"), None);
        assert_eq!(reply_usage(chat, br#"{"usage": 3}"#), None);
    }

    #[test]
    fn a_tool_argument_named_usage_is_not_the_reply_usage() {
        let gemini = codec(Dialect::Gemini);
        let body = br#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"usage":{"promptTokenCount":999}}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":3}}"#;
        let usage = reply_usage(gemini, body).unwrap();
        assert_eq!((usage.input, usage.output), (7, 3));
    }
}

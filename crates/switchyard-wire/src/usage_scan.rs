//! A whole reply's usage, read without decoding the reply.
//!
//! Metering a reply that passes through untouched needs its token counts only. Every
//! dialect keeps a whole reply's usage in one object under a top-level key (`usage`,
//! Gemini's `usageMetadata`). The body is walked backwards at the byte level, stepping
//! over strings and nested values without building them, to the last such key of the
//! top-level object (the one a full parse keeps); only that key's value is parsed. A key
//! of the same name nested deeper (a tool call's arguments written as an object, a
//! decoy in a message's content) is not the reply's usage, wherever it stands. A body
//! where none is found is decoded whole instead.

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
    let rest = &body[top_level_value(body, usage_key(dialect))?..];
    match serde_json::Deserializer::from_slice(rest)
        .into_iter::<Value>()
        .next()
    {
        Some(Ok(Value::Object(usage))) => Some(usage),
        _ => None,
    }
}

/// Where the value of the last top-level `key` of the JSON object `body` starts.
///
/// The body is walked backwards from its closing brace, following only its structure
/// (nesting depth and string bounds) without building anything: the usage object closes
/// a reply, so the walk mostly reads the usage object's own bytes and stops. Strings can
/// be bounded backwards because inside one every quote is escaped: a quote preceded by an
/// even number of backslashes opens or closes a string. This is a fast pass, not a
/// validation: on a body that is not JSON it may find something a parse would not, which
/// is harmless (the value is parsed, and must then be an object).
fn top_level_value(body: &[u8], key: &str) -> Option<usize> {
    let close = body.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if body[close] != b'}' {
        return None;
    }
    let mut depth = 1usize;
    // The token after the position being read, and where it is: a string followed by a
    // `:` at depth 1 is a top-level key.
    let mut next = (b'}', close);
    let mut at = close;
    while at > 0 {
        at -= 1;
        match body[at] {
            b'"' => {
                let open = string_start(body, at)?;
                if depth == 1 && next.0 == b':' && key_is(&body[open..=at], key) {
                    return Some(skip_whitespace(body, next.1 + 1));
                }
                next = (b'"', open);
                at = open;
            }
            b if b.is_ascii_whitespace() => {}
            b => {
                match b {
                    b'}' | b']' => depth += 1,
                    b'{' | b'[' => {
                        depth -= 1;
                        if depth == 0 {
                            return None;
                        }
                    }
                    _ => {}
                }
                next = (b, at);
            }
        }
    }
    None
}

/// The index of the quote opening the string whose closing quote is at `close`.
fn string_start(body: &[u8], close: usize) -> Option<usize> {
    let mut before = close;
    loop {
        let quote = memchr::memrchr(b'"', &body[..before])?;
        let backslashes = body[..quote]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return Some(quote);
        }
        before = quote;
    }
}

fn skip_whitespace(body: &[u8], from: usize) -> usize {
    from + body[from..]
        .iter()
        .take_while(|b| b.is_ascii_whitespace())
        .count()
}

/// Whether the quoted string `quoted` (quotes included) is `key`, escapes decoded as a
/// parse would decode them (`"\u0075sage"` is `usage`).
fn key_is(quoted: &[u8], key: &str) -> bool {
    let inner = &quoted[1..quoted.len() - 1];
    if !inner.contains(&b'\\') {
        return inner == key.as_bytes();
    }
    serde_json::from_slice::<String>(quoted).is_ok_and(|k| k == key)
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
    fn a_usage_key_nested_after_the_reply_usage_is_not_the_reply_usage() {
        // The reply's own usage first, a tool call's argument named `usage` after it: the
        // scan used to take the last `"usage"` of the body, wherever it was nested.
        let messages = codec(Dialect::Messages);
        let body = br#"{"id":"m","type":"message","role":"assistant","usage":{"input_tokens":7,"output_tokens":3},"content":[{"type":"tool_use","id":"t","name":"f","input":{"usage":{"input_tokens":999,"output_tokens":999}}}],"stop_reason":"tool_use"}"#;
        let usage = reply_usage(messages, body).unwrap();
        assert_eq!((usage.input, usage.output), (7, 3));
        assert_eq!(Some(usage), messages.decode_reply(body).unwrap().usage);
    }

    #[test]
    fn keys_are_matched_as_a_parse_reads_them() {
        // An escaped key is the same key; a later duplicate is the one a parse keeps.
        let body = br#"{"usage":{"prompt_tokens":1},"\u0075sage" : {"prompt_tokens":2}}"#;
        let found = find_usage_object(Dialect::Chat, body).unwrap();
        assert_eq!(found["prompt_tokens"], 2);
        // A string value that reads `usage`, and strings with escaped quotes, are skipped.
        let body = br#"{"a":"usage","b":"x\"usage\":{}","usage":{"prompt_tokens":3}}"#;
        let found = find_usage_object(Dialect::Chat, body).unwrap();
        assert_eq!(found["prompt_tokens"], 3);
        // Walking backwards: a string ending in an escaped backslash, a decoy after.
        let body = br#"{"t":"a\\","usage":{"prompt_tokens":5},"u":"\"usage\":{\"a\":1}"}"#;
        let found = find_usage_object(Dialect::Chat, body).unwrap();
        assert_eq!(found["prompt_tokens"], 5);
        assert_eq!(find_usage_object(Dialect::Chat, br#"[{"usage":{}}]"#), None);
        assert_eq!(
            find_usage_object(Dialect::Chat, br#"{"x":{"usage":{}}}"#),
            None
        );
        assert_eq!(find_usage_object(Dialect::Chat, br#"{"usage""#), None);
    }

    #[test]
    fn a_tool_argument_named_usage_is_not_the_reply_usage() {
        let gemini = codec(Dialect::Gemini);
        let body = br#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"usage":{"promptTokenCount":999}}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":3}}"#;
        let usage = reply_usage(gemini, body).unwrap();
        assert_eq!((usage.input, usage.output), (7, 3));
    }
}

//! A byte-level look at one event of a passed-through stream: whether it is a plain
//! delta of text or thinking — the bulk of every stream — and how many bytes of text it
//! carries, without parsing it. The watch gives every other event (the start, tool
//! calls, usage, the finish, errors, anything unusual) to the dialect's decoder; a plain
//! delta changes nothing the call needs but what output began and how much of it came.
//!
//! An event is plain only when it provably is: every field that could carry something
//! else (a finish, usage, a tool call, an error, a refusal) is absent or `null`, and its
//! text is one well-formed JSON string. Anything the scan is unsure of is not plain, and
//! is decoded as before. A key's pattern (`"content":`) cannot match inside a JSON string,
//! where every quote is escaped.

use switchyard::Dialect;
use switchyard_wire::sse::SseEvent;

/// What a plain delta carries: the bytes of thinking (`Some`, even empty: a thinking
/// delta) and of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Plain {
    pub thinking: Option<usize>,
    pub text: usize,
}

/// `event` as a plain delta of `dialect`, when it is one.
pub(super) fn plain(dialect: Dialect, event: &SseEvent) -> Option<Plain> {
    let data = event.data.as_bytes();
    match dialect {
        Dialect::Chat => chat(data),
        Dialect::Messages if event.event.as_deref() == Some("content_block_delta") => {
            messages(data)
        }
        _ => None,
    }
}

/// A chat completions chunk of one choice (index 0) whose delta holds text and reasoning
/// only.
fn chat(data: &[u8]) -> Option<Plain> {
    if data.first() != Some(&b'{') {
        return None;
    }
    for key in [
        "tool_calls",
        "function_call",
        "finish_reason",
        "usage",
        "error",
        "refusal",
        "audio",
    ] {
        if !null_or_absent(data, key)? {
            return None;
        }
    }
    // One choice, the first: others are not this call's output.
    if count(data, b"\"delta\":") != 1 || count(data, b"\"choices\":") != 1 {
        return None;
    }
    match value_at(data, "index") {
        None => {}
        Some(v) if v.first() == Some(&b'0') && !v.get(1).is_some_and(u8::is_ascii_digit) => {}
        Some(_) => return None,
    }
    let text = string_or_null(data, "content")?.unwrap_or_default();
    let reasoning = string_or_null(data, "reasoning_content")?;
    let other = string_or_null(data, "reasoning")?;
    let thinking = match (reasoning, other) {
        (Some(_), Some(_)) => return None,
        (r, o) => r.or(o),
    };
    Some(Plain { thinking, text })
}

/// A Messages `content_block_delta` of text or thinking.
fn messages(data: &[u8]) -> Option<Plain> {
    if !null_or_absent(data, "error")? || count(data, b"\"type\":") != 2 {
        return None;
    }
    if find(data, b"\"type\":\"text_delta\"").is_some() {
        let text = string_or_null(data, "text")??;
        return Some(Plain {
            thinking: None,
            text,
        });
    }
    if find(data, b"\"type\":\"thinking_delta\"").is_some() {
        let thinking = string_or_null(data, "thinking")??;
        return Some(Plain {
            thinking: Some(thinking),
            text: 0,
        });
    }
    None
}

fn find(data: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(data, needle)
}

fn count(data: &[u8], needle: &[u8]) -> usize {
    memchr::memmem::find_iter(data, needle).count()
}

/// The bytes after `"key":` (and any spaces), at its only occurrence; `None` when absent.
/// A key named twice is taken as its first (the unsure callers check `null` only).
fn value_at<'a>(data: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let mut pattern = Vec::with_capacity(key.len() + 3);
    pattern.push(b'"');
    pattern.extend_from_slice(key.as_bytes());
    pattern.extend_from_slice(b"\":");
    let at = find(data, &pattern)? + pattern.len();
    let rest = &data[at..];
    let start = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    Some(&rest[start..])
}

/// Whether `key` is absent or `null` (`None`: named more than once, which the scan does
/// not judge).
fn null_or_absent(data: &[u8], key: &str) -> Option<bool> {
    let pattern = format!("\"{key}\":");
    match count(data, pattern.as_bytes()) {
        0 => Some(true),
        1 => Some(value_at(data, key).is_some_and(|v| v.starts_with(b"null"))),
        _ => None,
    }
}

/// `key`'s string value's length once unescaped (`Some(None)`: absent or `null`; `None`:
/// anything else, or named more than once).
fn string_or_null(data: &[u8], key: &str) -> Option<Option<usize>> {
    let pattern = format!("\"{key}\":");
    match count(data, pattern.as_bytes()) {
        0 => return Some(None),
        1 => {}
        _ => return None,
    }
    let v = value_at(data, key)?;
    if v.starts_with(b"null") {
        return Some(None);
    }
    unescaped_len(v).map(Some)
}

/// The UTF-8 length of the JSON string literal `s` starts with, once unescaped; `None`
/// when it is not one.
fn unescaped_len(s: &[u8]) -> Option<usize> {
    if s.first() != Some(&b'"') {
        return None;
    }
    let mut len = 0;
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'"' => return Some(len),
            b'\\' => {
                let escape = *s.get(i + 1)?;
                match escape {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                        len += 1;
                        i += 2;
                    }
                    b'u' => {
                        let unit = hex4(s.get(i + 2..i + 6)?)?;
                        i += 6;
                        len += match unit {
                            0..=0x7f => 1,
                            0x80..=0x7ff => 2,
                            0xd800..=0xdbff => {
                                // A surrogate pair is one character of four bytes; a
                                // lone surrogate is not a string the scan judges.
                                if s.get(i..i + 2) != Some(b"\\u") {
                                    return None;
                                }
                                let low = hex4(s.get(i + 2..i + 6)?)?;
                                if !(0xdc00..=0xdfff).contains(&low) {
                                    return None;
                                }
                                i += 6;
                                4
                            }
                            0xdc00..=0xdfff => return None,
                            _ => 3,
                        };
                    }
                    _ => return None,
                }
            }
            // A control character is not allowed in a JSON string.
            b if b < 0x20 => return None,
            _ => {
                len += 1;
                i += 1;
            }
        }
    }
    None
}

fn hex4(h: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(h).ok()?;
    u32::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn event(name: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: name.map(str::to_string),
            data: data.to_string(),
            id: None,
        }
    }

    #[test]
    fn chat_text_and_reasoning_deltas_are_plain_and_all_else_is_not() {
        let chat = |d: &str| plain(Dialect::Chat, &event(None, d));
        assert_eq!(
            chat(
                r#"{"id":"c","choices":[{"index":0,"delta":{"content":"h\u00e9\n"},"logprobs":null,"finish_reason":null}],"usage":null}"#
            ),
            Some(Plain {
                thinking: None,
                text: 4
            })
        );
        assert_eq!(
            chat(r#"{"choices":[{"delta":{"reasoning_content":"\ud83d\ude00"}}]}"#),
            Some(Plain {
                thinking: Some(4),
                text: 0
            })
        );
        for not in [
            r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":1}}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#,
            r#"{"choices":[{"index":1,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"index":10,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}"#,
            r#"{"error":{"message":"x"}}"#,
            r#"{"choices":[{"delta":{"content":"a","refusal":"no"}}]}"#,
            r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":{"text":"a"}}}]}"#,
            r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#,
            r#"{"choices":[{"delta":{"content":"cut"#,
            "[DONE]",
        ] {
            assert_eq!(chat(not), None, "{not}");
        }
        // A key's pattern inside a string is escaped: not mistaken for the key.
        assert_eq!(
            chat(r#"{"choices":[{"delta":{"content":"say \"finish_reason\":\"stop\""}}]}"#),
            Some(Plain {
                thinking: None,
                text: 26
            })
        );
    }

    #[test]
    fn messages_text_and_thinking_deltas_are_plain_and_all_else_is_not() {
        let m = |name: &str, d: &str| plain(Dialect::Messages, &event(Some(name), d));
        assert_eq!(
            m(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#
            ),
            Some(Plain {
                thinking: None,
                text: 2
            })
        );
        assert_eq!(
            m(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}"#
            ),
            Some(Plain {
                thinking: Some(0),
                text: 0
            })
        );
        for (name, d) in [
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
            ),
        ] {
            assert_eq!(m(name, d), None, "{d}");
        }
        assert_eq!(plain(Dialect::Gemini, &event(None, "{}")), None);
    }

    proptest! {
        /// The length the scan gives a text is the length of the text a parse gives.
        #[test]
        fn an_unescaped_length_is_the_parsed_length(text in ".*") {
            let literal = serde_json::to_string(&text).unwrap();
            prop_assert_eq!(unescaped_len(literal.as_bytes()), Some(text.len()));
            let ascii = serde_json::to_string(&text).unwrap().replace('é', "\\u00e9");
            let parsed: String = serde_json::from_str(&ascii).unwrap();
            prop_assert_eq!(unescaped_len(ascii.as_bytes()), Some(parsed.len()));
        }

        /// Any bytes: no panic.
        #[test]
        fn any_bytes_are_judged_without_a_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let text = String::from_utf8_lossy(&data).into_owned();
            let _ = plain(Dialect::Chat, &event(None, &text));
            let _ = plain(Dialect::Messages, &event(Some("content_block_delta"), &text));
            let _ = unescaped_len(&data);
        }
    }
}

//! A byte-level look at one event of a passed-through stream: whether it is a plain
//! delta of text or thinking — the bulk of every stream — and how many bytes of text it
//! carries, without parsing it. The watch gives every other event (the start, tool
//! calls, usage, the finish, errors, anything unusual) to the dialect's decoder; a plain
//! delta changes nothing the call needs but what output began and how much of it came.
//!
//! An event is plain only when it provably is: it is JSON, every field that could carry
//! something else (a finish, usage, a tool call, an error, a refusal) is absent or
//! `null`, and its text is one well-formed JSON string. Anything the scan is unsure of is
//! not plain, and is decoded as before. A key's pattern (`"content":`) cannot match
//! inside a JSON string, where every quote is escaped.

use memchr::memmem::Finder;
use std::sync::LazyLock;
use switchyard::Dialect;

/// What a plain delta carries: the bytes of thinking (`Some`, even empty: a thinking
/// delta) and of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Plain {
    pub thinking: Option<usize>,
    pub text: usize,
    /// Where its one string of text or thinking stands in the data (from its opening
    /// quote to its closing one), when it has exactly one: the event's shape, which the
    /// next events of a stream repeat around their own text ([`Memo`]).
    pub literal: Option<(usize, usize)>,
}

/// The shape of the last plain delta judged in full: the bytes before its string and
/// after it. A stream repeats it event after event (`{"id":…,"choices":[{"index":0,
/// "delta":{"content":` … `},"finish_reason":null}]}`); an event with the same bytes
/// around one well-formed string is the same plain delta, judged by two comparisons and
/// the string's own length instead of a pass over its keys.
#[derive(Debug, Default)]
pub(super) struct Memo {
    event: Option<Vec<u8>>,
    prefix: Vec<u8>,
    suffix: Vec<u8>,
    thinking: bool,
}

impl Memo {
    /// The shape of the event named `event` with `data`, judged plain as `plain`
    /// (`None` without one string).
    pub(super) fn of(event: Option<&[u8]>, data: &[u8], plain: &Plain) -> Option<Memo> {
        let (start, end) = plain.literal?;
        Some(Memo {
            event: event.map(<[u8]>::to_vec),
            prefix: data.get(..start)?.to_vec(),
            suffix: data.get(end + 1..)?.to_vec(),
            thinking: plain.thinking.is_some(),
        })
    }

    /// The event named `event` with `data` as the same plain delta around another
    /// string, when it is one.
    pub(super) fn plain(&self, event: Option<&[u8]>, data: &[u8]) -> Option<Plain> {
        if event != self.event.as_deref()
            || data.len() < self.prefix.len() + self.suffix.len()
            || !data.starts_with(&self.prefix)
            || !data.ends_with(&self.suffix)
        {
            return None;
        }
        let middle = &data[self.prefix.len()..data.len() - self.suffix.len()];
        let (len, close) = literal_of(middle)?;
        // Exactly one string between the two: nothing after its closing quote.
        if close + 1 != middle.len() {
            return None;
        }
        Some(self.carrying(len, (self.prefix.len(), self.prefix.len() + close)))
    }

    /// The event `bytes` begin with, when it is a delta of this shape whose lines
    /// before its data and after it are `head` and `tail`, the bytes around the data
    /// of a delta of this shape already framed: what it carries (its string where it
    /// stands in `bytes`) and the event's length. It is what framing the event and
    /// asking [`Memo::plain`] of its data would judge, without the framing: no line
    /// end lies within the bytes around the string (they were one data line's) nor
    /// within the string (a line end is a control character, which no JSON string holds
    /// and [`literal_of`] refuses), so the event's lines are the framed delta's, and its
    /// data what lies between `head` and `tail`.
    pub(super) fn leading(&self, bytes: &[u8], head: &[u8], tail: &[u8]) -> Option<Leading> {
        let opens = head.len() + self.prefix.len();
        if !bytes.starts_with(head) || !bytes[head.len()..].starts_with(&self.prefix) {
            return None;
        }
        let (len, close) = literal_of(&bytes[opens..])?;
        let after = opens + close + 1;
        let rest = &bytes[after..];
        if !rest.starts_with(&self.suffix) || !rest[self.suffix.len()..].starts_with(tail) {
            return None;
        }
        Some(Leading {
            plain: self.carrying(len, (opens, after - 1)),
            end: after + self.suffix.len() + tail.len(),
        })
    }

    /// A delta of this shape whose string unescapes to `len` bytes and stands at
    /// `literal` (its quotes).
    fn carrying(&self, len: usize, literal: (usize, usize)) -> Plain {
        match self.thinking {
            true => Plain {
                thinking: Some(len),
                text: 0,
                literal: Some(literal),
            },
            false => Plain {
                thinking: None,
                text: len,
                literal: Some(literal),
            },
        }
    }
}

/// A delta of a remembered shape that a stream's bytes begin with ([`Memo::leading`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Leading {
    /// What it carries; its `literal` is where its string stands in the bytes.
    pub plain: Plain,
    /// The event's length, its blank line included.
    pub end: usize,
}

/// The event named `event` with `data` as a plain delta of `dialect`, when it is one.
pub(super) fn plain(dialect: Dialect, event: Option<&[u8]>, data: &[u8]) -> Option<Plain> {
    let plain = match dialect {
        Dialect::Chat => chat(data),
        Dialect::Messages if event == Some(b"content_block_delta") => messages(data),
        _ => None,
    }?;
    // JSON, as the decoder requires: the walk reads keys, not the syntax around them
    // (`{…}\n[DONE]`, two data lines of one event, is not a delta). Checked once for a
    // stream's deltas: the next ones of its shape ([`Memo`]) are its bytes around another
    // well-formed string.
    serde_json::from_slice::<serde::de::IgnoredAny>(data).ok()?;
    Some(plain)
}

/// A chat completions chunk of one choice (index 0) whose delta holds text and reasoning
/// only.
fn chat(data: &[u8]) -> Option<Plain> {
    if data.first() != Some(&b'{') || !names_a_text(data) {
        return None;
    }
    let (mut deltas, mut choices) = (0, 0);
    let (mut content, mut reasoning) = (None, None);
    // Each text key at most once (a second would be one the decoder judges).
    let mut seen = [false; 3];
    let mut texts = 0;
    // The string literals of text and thinking, where they stand.
    let (mut strings, mut literal) = (0, None);
    let base = data.as_ptr() as usize;
    each_key(data, |key, value| match key {
        b"tool_calls" | b"function_call" | b"finish_reason" | b"usage" | b"error" | b"refusal"
        | b"audio" => value.starts_with(b"null"),
        b"delta" => {
            deltas += 1;
            true
        }
        b"choices" => {
            choices += 1;
            true
        }
        // One choice, the first: others are not this call's output.
        b"index" => value.first() == Some(&b'0') && !value.get(1).is_some_and(u8::is_ascii_digit),
        b"content" | b"reasoning_content" | b"reasoning" => {
            let slot = match key {
                b"content" => 0,
                b"reasoning_content" => 1,
                _ => 2,
            };
            if std::mem::replace(&mut seen[slot], true) {
                return false;
            }
            texts += 1;
            let len = match value.starts_with(b"null") {
                true => None,
                false => match literal_of(value) {
                    Some((len, close)) => {
                        let start = value.as_ptr() as usize - base;
                        strings += 1;
                        literal = Some((start, start + close));
                        Some(len)
                    }
                    None => return false,
                },
            };
            match key {
                b"content" => content = len,
                _ if reasoning.is_some() && len.is_some() => return false,
                _ => reasoning = reasoning.or(len),
            }
            true
        }
        _ => true,
    })?;
    if deltas != 1 || choices != 1 || texts > 2 {
        return None;
    }
    Some(Plain {
        thinking: reasoning,
        text: content.unwrap_or_default(),
        literal: literal.filter(|_| strings == 1),
    })
}

/// Whether a chat chunk names a text or thinking key at all, looked for before its keys
/// are walked: the chunks that carry the finish or the usage name none, and are decoded
/// without a walk of their bytes that would only refuse them at their end.
fn names_a_text(data: &[u8]) -> bool {
    // Built once: `memmem::find` builds its searcher on every call.
    static CONTENT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"content\""));
    static REASONING: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"reasoning"));
    CONTENT.find(data).is_some() || REASONING.find(data).is_some()
}

/// A Messages `content_block_delta` of text or thinking.
fn messages(data: &[u8]) -> Option<Plain> {
    let (mut types, mut kind) = (0, None);
    let (mut text, mut thinking) = (None, None);
    let mut literal = None;
    let base = data.as_ptr() as usize;
    let mut string = |value: &[u8]| {
        let (len, close) = literal_of(value)?;
        let start = value.as_ptr() as usize - base;
        literal = Some((start, start + close));
        Some(len)
    };
    each_key(data, |key, value| match key {
        b"type" => {
            types += 1;
            if value.starts_with(b"\"text_delta\"") {
                kind = Some(false);
            } else if value.starts_with(b"\"thinking_delta\"") {
                kind = Some(true);
            }
            true
        }
        b"text" if text.is_none() => {
            text = string(value);
            text.is_some()
        }
        b"thinking" if thinking.is_none() => {
            thinking = string(value);
            thinking.is_some()
        }
        b"index" | b"delta" => true,
        _ => false,
    })?;
    if types != 2 {
        return None;
    }
    match kind? {
        false if thinking.is_none() => Some(Plain {
            thinking: None,
            text: text?,
            literal,
        }),
        true if text.is_none() => Some(Plain {
            thinking: Some(thinking?),
            text: 0,
            literal,
        }),
        _ => None,
    }
}

/// Calls `f` with every key of the JSON text `data`, at any depth, and the bytes of its
/// value (spaces skipped); `None` as soon as `f` refuses one, or when a string does not
/// close. One pass over the bytes, nothing parsed; a byte loop rather than `memchr`, whose
/// set-up costs more than the few bytes between two quotes of an event.
fn each_key(data: &[u8], mut f: impl FnMut(&[u8], &[u8]) -> bool) -> Option<()> {
    let mut i = 0;
    while i < data.len() {
        if data[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i + 1;
        let end = string_end(data, start)?;
        let mut after = end + 1;
        while data.get(after).is_some_and(u8::is_ascii_whitespace) {
            after += 1;
        }
        if data.get(after) == Some(&b':') {
            let mut value = after + 1;
            while data.get(value).is_some_and(u8::is_ascii_whitespace) {
                value += 1;
            }
            if !f(&data[start..end], &data[value..]) {
                return None;
            }
            i = value;
        } else {
            i = after;
        }
    }
    Some(())
}

/// Where the string whose content starts at `start` closes (its quote).
fn string_end(data: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    while i < data.len() {
        match data[i] {
            b'"' => return Some(i),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    None
}

/// The UTF-8 length of the JSON string literal `s` starts with, once unescaped; `None`
/// when it is not one.
#[cfg(test)]
fn unescaped_len(s: &[u8]) -> Option<usize> {
    literal_of(s).map(|(len, _)| len)
}

/// The UTF-8 length, once unescaped, of the JSON string literal `s` starts with, and
/// where its closing quote is; `None` when it is not one.
fn literal_of(s: &[u8]) -> Option<(usize, usize)> {
    if s.first() != Some(&b'"') {
        return None;
    }
    let mut len = 0;
    let mut i = 1;
    // Bytes past ASCII: the string must be UTF-8 (read in place, an event is not yet
    // checked; the decoder would see invalid bytes replaced, and another length).
    let mut wide = false;
    while i < s.len() {
        let run = copied_run(&s[i..]);
        len += run;
        i += run;
        let Some(&b) = s.get(i) else {
            break;
        };
        match b {
            b'"' if wide && std::str::from_utf8(&s[1..i]).is_err() => return None,
            b'"' => return Some((len, i)),
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
                wide = true;
                len += 1;
                i += 1;
            }
        }
    }
    None
}

/// How many bytes `s` begins with that a string's text holds as they are: ASCII, and
/// not a quote, a backslash or a control character. Eight bytes at a time, as one `u64`
/// (the bytes after `s` read as zeros, a control character that ends the run): a delta's
/// text is mostly such bytes, and a byte loop took a dozen instructions a byte.
fn copied_run(s: &[u8]) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    // The high bit of each byte of `v` that is zero (exact up to the first one; only
    // the first is read).
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let mut n = 0;
    loop {
        let rest = &s[n.min(s.len())..];
        let word = match rest.first_chunk::<8>() {
            Some(word) => u64::from_le_bytes(*word),
            None => {
                let mut word = [0u8; 8];
                word[..rest.len()].copy_from_slice(rest);
                u64::from_le_bytes(word)
            }
        };
        let stops = zero(word ^ (ONES * u64::from(b'"')))
            | zero(word ^ (ONES * u64::from(b'\\')))
            // Below 0x20 (exact up to the first, as for zeros), and past ASCII.
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGH)
            | (word & HIGH);
        if stops != 0 {
            return n + (stops.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
}

fn hex4(h: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(h).ok()?;
    u32::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use switchyard_wire::sse::SseEvent;

    /// [`super::plain`] of a parsed event.
    fn plain(dialect: Dialect, e: &SseEvent) -> Option<Plain> {
        super::plain(
            dialect,
            e.event.as_deref().map(str::as_bytes),
            e.data.as_bytes(),
        )
    }

    fn memo_of(e: &SseEvent, judged: &Plain) -> Option<Memo> {
        Memo::of(
            e.event.as_deref().map(str::as_bytes),
            e.data.as_bytes(),
            judged,
        )
    }

    fn memo_plain(memo: &Memo, e: &SseEvent) -> Option<Plain> {
        memo.plain(e.event.as_deref().map(str::as_bytes), e.data.as_bytes())
    }

    fn event(name: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: name.map(str::to_string),
            data: data.to_string(),
            id: None,
        }
    }

    #[test]
    fn chat_text_and_reasoning_deltas_are_plain_and_all_else_is_not() {
        let chat =
            |d: &str| plain(Dialect::Chat, &event(None, d)).map(|p| Plain { literal: None, ..p });
        assert_eq!(
            chat(
                r#"{"id":"c","choices":[{"index":0,"delta":{"content":"h\u00e9\n"},"logprobs":null,"finish_reason":null}],"usage":null}"#
            ),
            Some(Plain {
                thinking: None,
                text: 4,
                literal: None,
            })
        );
        assert_eq!(
            chat(r#"{"choices":[{"delta":{"reasoning_content":"\ud83d\ude00"}}]}"#),
            Some(Plain {
                thinking: Some(4),
                text: 0,
                literal: None,
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
                text: 26,
                literal: None,
            })
        );
    }

    #[test]
    fn messages_text_and_thinking_deltas_are_plain_and_all_else_is_not() {
        let m = |name: &str, d: &str| {
            plain(Dialect::Messages, &event(Some(name), d)).map(|p| Plain { literal: None, ..p })
        };
        assert_eq!(
            m(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#
            ),
            Some(Plain {
                thinking: None,
                text: 2,
                literal: None,
            })
        );
        assert_eq!(
            m(
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}"#
            ),
            Some(Plain {
                thinking: Some(0),
                text: 0,
                literal: None,
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

    #[test]
    fn an_event_of_the_last_shape_is_judged_by_its_string_alone() {
        let first = event(
            None,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"one"},"finish_reason":null}]}"#,
        );
        let judged = plain(Dialect::Chat, &first).unwrap();
        let memo = memo_of(&first, &judged).unwrap();
        let same = |d: &str| memo_plain(&memo, &event(None, d)).map(|p| (p.thinking, p.text));
        assert_eq!(
            same(
                r#"{"id":"c","choices":[{"index":0,"delta":{"content":"tw\u00f6"},"finish_reason":null}]}"#
            ),
            Some((None, 4))
        );
        for other in [
            // Not one string between the two: judged in full.
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"a","x":"b"},"finish_reason":null}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":null},"finish_reason":null}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
            r#"{"id":"d","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"a\"},"finish_reason":null}]}"#,
        ] {
            assert_eq!(same(other), None, "{other}");
        }
        // Another event name: not the same shape.
        let named = event(Some("x"), &first.data);
        assert!(memo_plain(&memo, &named).is_none());
        // Two strings (content and reasoning): no shape to repeat.
        let two = event(
            None,
            r#"{"choices":[{"delta":{"reasoning":"r","content":"c"}}]}"#,
        );
        assert!(memo_of(&two, &plain(Dialect::Chat, &two).unwrap()).is_none());
    }

    /// A string's bytes judged one at a time: what [`copied_run`] must find eight at a
    /// time.
    fn copied_run_bytewise(s: &[u8]) -> usize {
        s.iter()
            .position(|&b| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b))
            .unwrap_or(s.len())
    }

    #[test]
    fn a_run_stops_at_every_byte_a_string_does_not_copy() {
        for stop in [b'"', b'\\', 0, 0x1f, 0x80, 0xff] {
            for at in 0..20 {
                for len in at..24 {
                    let mut s = vec![b'a'; len];
                    if at < len {
                        s[at] = stop;
                    }
                    assert_eq!(copied_run(&s), copied_run_bytewise(&s), "{s:?}");
                }
            }
        }
        assert_eq!(copied_run(b" ~!#[]"), 6);
    }

    proptest! {
        /// Eight bytes at a time, a run ends where one byte at a time it does.
        #[test]
        fn a_run_is_the_bytewise_run(
            s in proptest::collection::vec(prop_oneof![12 => 0x20u8..0x7f, 1 => any::<u8>()], 0..40)
        ) {
            prop_assert_eq!(copied_run(&s), copied_run_bytewise(&s));
        }

        /// The length the scan gives a text is the length of the text a parse gives.
        #[test]
        fn an_unescaped_length_is_the_parsed_length(text in ".*") {
            let literal = serde_json::to_string(&text).unwrap();
            prop_assert_eq!(unescaped_len(literal.as_bytes()), Some(text.len()));
            let ascii = serde_json::to_string(&text).unwrap().replace('é', "\\u00e9");
            let parsed: String = serde_json::from_str(&ascii).unwrap();
            prop_assert_eq!(unescaped_len(ascii.as_bytes()), Some(parsed.len()));
        }

        /// An event of the remembered shape is judged as a pass over its keys judges it.
        #[test]
        fn a_remembered_shape_judges_as_the_full_scan(text in ".*", reasoning in any::<bool>()) {
            let key = if reasoning { "reasoning_content" } else { "content" };
            let template = |t: &str| format!(
                r#"{{"id":"c","choices":[{{"index":0,"delta":{{"{key}":{}}},"finish_reason":null}}]}}"#,
                serde_json::to_string(t).unwrap()
            );
            let first = event(None, &template("first"));
            let memo = memo_of(&first, &plain(Dialect::Chat, &first).unwrap()).unwrap();
            let next = event(None, &template(&text));
            prop_assert_eq!(memo_plain(&memo, &next), plain(Dialect::Chat, &next));
        }

        /// An event read from a stream's bytes by the remembered shape, unframed, is
        /// judged as its data once framed, and ends after its blank line: whatever its
        /// string holds (a line end in it refuses it), whatever follows the event, and
        /// only when its lines end as those given.
        #[test]
        fn a_leading_delta_is_judged_as_its_framed_data(
            text in ".*",
            after in "(data: x\n\n)?",
            end in prop_oneof![Just("\n\n"), Just("\r\n\r\n")],
            tail in prop_oneof![Just("\n\n"), Just("\r\n\r\n")],
        ) {
            let template = |t: &str| format!(
                r#"{{"id":"c","choices":[{{"index":0,"delta":{{"content":{}}},"finish_reason":null}}]}}"#,
                serde_json::to_string(t).unwrap()
            );
            let first = event(None, &template("first"));
            let memo = memo_of(&first, &plain(Dialect::Chat, &first).unwrap()).unwrap();
            // The string written unescaped too, so that its line ends stand in the bytes.
            for data in [template(&text), template("x").replace("\"x\"", &format!("\"{text}\""))] {
                let bytes = format!("data: {data}{end}{after}");
                // The event framed, and its lines those given (`tail`).
                let framed = memo_plain(&memo, &event(None, &data))
                    .filter(|_| !data.contains(['\n', '\r']) && end == tail);
                let leading = memo.leading(bytes.as_bytes(), b"data: ", tail.as_bytes());
                prop_assert_eq!(
                    leading.map(|l| (l.plain.text, l.plain.literal.map(|(a, b)| (a - 6, b - 6)), l.end)),
                    framed.map(|p| (p.text, p.literal, 6 + data.len() + end.len()))
                );
            }
        }

        /// Any bytes: no panic.
        #[test]
        fn any_bytes_are_judged_without_a_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = super::plain(Dialect::Chat, None, &data);
            let _ = super::plain(Dialect::Messages, Some(b"content_block_delta"), &data);
            let _ = unescaped_len(&data);
        }
    }
}

//! A model id is data, never path: the one rule every door (the gateway, `ask`, a run,
//! Python) applies to the id it is about to send, and the one escape that puts an id
//! into a URL.
//!
//! Real ids hold slashes (`accounts/fireworks/models/glm-5p3-flash`, `Qwen/Qwen3-30B`),
//! colons (`llama3:8b`), `@` (`claude-sonnet-4@20250514`), `+` (the mock's options) and
//! spaces (the mock's `say:Hello world`), so those are accepted. What no provider's id
//! holds and what would change a URL's or a path's meaning is refused where the id is
//! read ([`check`]): an id longer than [`MAX_MODEL_ID_BYTES`], control characters, `#`,
//! `?`, `%` (an id is percent-decoded exactly once, where it enters: a `%` left in it
//! would be decoded again by a proxy that decodes twice), `\` (a path separator to some
//! servers) and `.`, `..` or empty segments between its slashes (what a URL parser
//! resolves or collapses).
//!
//! Where an id goes into a URL (Gemini's and Vertex's `models/{id}:method`, embeddings'
//! `models/{id}:batchEmbedContents`) it fills exactly one path segment: every byte
//! that is not unreserved (RFC 3986: letters, digits, `-._~`) is percent-encoded,
//! `/` as `%2F` ([`escape_segment`]). Google's model resource names are one segment
//! (`models/{model}`), so no Google id is changed by this, and a server that decodes the
//! path once (Google's front end, the mock, another Switchyard gateway) reads the id as
//! it was sent.

use std::fmt;

/// The longest model id accepted, in bytes. The longest real ids (Bedrock ARNs, Fireworks
/// account paths) are under 200 bytes; the bound keeps a hostile id out of URLs, records
/// and error messages. Fixed in the library: raise it here if a provider ever needs more.
pub const MAX_MODEL_ID_BYTES: usize = 512;

/// The characters refused anywhere in an id (besides control characters).
const FORBIDDEN: [char; 4] = ['#', '?', '%', '\\'];

/// What is accepted, said in every refusal.
const ACCEPTED: &str = "a model id is 1 to 512 bytes with no control character, `#`, `?`, `%` or `\\`, and no empty, `.` or `..` segment between its `/`";

/// Why a model id was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// No characters at all.
    Empty,
    /// Longer than [`MAX_MODEL_ID_BYTES`].
    TooLong {
        /// Its length in bytes.
        bytes: usize,
    },
    /// A control character or one of `#`, `?`, `%`, `\`.
    Forbidden {
        /// The character.
        ch: char,
        /// Its byte offset in the id.
        at: usize,
    },
    /// A segment between slashes that is empty, `.` or `..`.
    Segment {
        /// The segment.
        segment: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Empty => write!(f, "is empty"),
            Problem::TooLong { bytes } => {
                write!(f, "is {bytes} bytes long (at most {MAX_MODEL_ID_BYTES})")
            }
            Problem::Forbidden { ch, at } if ch.is_control() => {
                write!(
                    f,
                    "holds the control character U+{:04X} at byte {at}",
                    *ch as u32
                )
            }
            Problem::Forbidden { ch, at } => write!(f, "holds `{ch}` at byte {at}"),
            Problem::Segment { segment } if segment.is_empty() => {
                write!(f, "has an empty segment (`//`, or `/` at its start or end)")
            }
            Problem::Segment { segment } => write!(f, "has a `{segment}` segment"),
        }
    }
}

/// A model id refused by [`check`]: the id (cut short and escaped when shown) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model id `{}` {problem}: {ACCEPTED}", shown(.id))]
pub struct BadModelId {
    /// The id as given.
    pub id: String,
    /// What is wrong with it.
    pub problem: Problem,
}

/// Accepts `id` as a model id, or says what is wrong with it (see the module's doc).
pub fn check(id: &str) -> Result<(), BadModelId> {
    problem(id).map_or(Ok(()), |problem| {
        Err(BadModelId {
            id: id.to_string(),
            problem,
        })
    })
}

fn problem(id: &str) -> Option<Problem> {
    if id.is_empty() {
        return Some(Problem::Empty);
    }
    if id.len() > MAX_MODEL_ID_BYTES {
        return Some(Problem::TooLong { bytes: id.len() });
    }
    // The first problem in the id's order, segment by segment.
    let mut start = 0;
    for segment in id.split('/') {
        if matches!(segment, "" | "." | "..") {
            return Some(Problem::Segment {
                segment: segment.to_string(),
            });
        }
        if let Some((i, ch)) = segment
            .char_indices()
            .find(|(_, c)| c.is_control() || FORBIDDEN.contains(c))
        {
            return Some(Problem::Forbidden { ch, at: start + i });
        }
        start += segment.len() + 1;
    }
    None
}

/// `id` as one URL path segment: every byte but the unreserved ones (letters, digits,
/// `-`, `.`, `_`, `~`) percent-encoded, so `/`, `?`, `#`, `%`, `:`, spaces and braces
/// can neither end the segment nor read as a placeholder of a URL template.
pub fn escape_segment(id: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
    out
}

/// At most 64 characters of `id`, control characters escaped, with its length when cut:
/// what an error message may repeat of a hostile id (or of any model name a client sent).
pub fn shown(id: &str) -> String {
    const SHOWN: usize = 64;
    let head: String = id.chars().take(SHOWN).collect();
    // Only control characters are escaped (`\n`, `\0`, `\u{85}`): quotes and
    // backslashes read as they were sent.
    let mut escaped = String::with_capacity(head.len());
    for c in head.chars() {
        if c.is_control() {
            escaped.extend(c.escape_debug());
        } else {
            escaped.push(c);
        }
    }
    if head.len() < id.len() {
        format!("{escaped}… ({} bytes)", id.len())
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_ids_are_accepted() {
        for id in [
            "gpt-5.4",
            "accounts/fireworks/models/glm-5p3-flash",
            "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8",
            "llama3:8b",
            "claude-sonnet-4@20250514",
            "anthropic.claude-3-5-sonnet-20240620-v1:0",
            "mock-large+cache+slow",
            "say:Hello, world!",
            "say:Hello {World} café",
            "..x",
            "a.b/..c/d..",
            &"x".repeat(MAX_MODEL_ID_BYTES),
        ] {
            assert_eq!(check(id), Ok(()), "{id}");
        }
    }

    #[test]
    fn each_kind_of_hostile_id_is_refused_with_its_reason() {
        let cases: [(&str, Problem); 14] = [
            ("", Problem::Empty),
            ("..", seg("..")),
            (".", seg(".")),
            ("a/../b", seg("..")),
            ("a/./b", seg(".")),
            ("a//b", seg("")),
            ("/a", seg("")),
            ("a/", seg("")),
            ("a#b", forbidden('#', 1)),
            ("jobs?x=1", forbidden('?', 4)),
            ("a%2Fb", forbidden('%', 1)),
            ("a\\..\\b", forbidden('\\', 1)),
            ("a\u{0}b", forbidden('\u{0}', 1)),
            ("é\u{85}", forbidden('\u{85}', 2)),
        ];
        for (id, problem) in cases {
            assert_eq!(check(id).unwrap_err().problem, problem, "{id:?}");
        }
        for c in ['\n', '\r', '\t', '\u{7f}', '\u{1b}'] {
            let id = format!("mock{c}x");
            assert_eq!(check(&id).unwrap_err().problem, forbidden(c, 4));
        }
        let long = "x".repeat(MAX_MODEL_ID_BYTES + 1);
        assert_eq!(
            check(&long).unwrap_err().problem,
            Problem::TooLong { bytes: 513 }
        );
    }

    #[test]
    fn the_message_names_the_id_the_problem_and_what_is_accepted() {
        let e = check("mock-small+x/../mock-large").unwrap_err().to_string();
        assert!(e.starts_with("model id `mock-small+x/../mock-large` has a `..` segment: a model id is 1 to 512 bytes"), "{e}");
        let e = check("a\u{0}\n").unwrap_err().to_string();
        assert!(
            e.contains("`a\\0\\n` holds the control character U+0000 at byte 1"),
            "{e}"
        );
        let e = check("say:\"hi\" a\\b#").unwrap_err().to_string();
        assert!(e.contains("`say:\"hi\" a\\b#` holds `\\`"), "{e}");
        // A long id is cut short in the message, its length said.
        let e = check(&"y".repeat(10_000)).unwrap_err().to_string();
        assert!(
            e.contains(&format!("`{}… (10000 bytes)`", "y".repeat(64))),
            "{e}"
        );
        assert!(e.len() < 400, "{e}");
    }

    #[test]
    fn escaping_keeps_only_unreserved_bytes() {
        assert_eq!(escape_segment("gemini-2.5-pro_x~1"), "gemini-2.5-pro_x~1");
        assert_eq!(
            escape_segment("mock-small+x/../mock-large"),
            "mock-small%2Bx%2F..%2Fmock-large"
        );
        assert_eq!(
            escape_segment("say:Hi {W}? #1 50% a\\b@c"),
            "say%3AHi%20%7BW%7D%3F%20%231%2050%25%20a%5Cb%40c"
        );
        assert_eq!(escape_segment("é\u{0}"), "%C3%A9%00");
        // Every byte is kept or escaped, and what is kept is only unreserved.
        let all: String = (0u8..=127).map(char::from).collect();
        let escaped = escape_segment(&all);
        assert!(escaped
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)));
        assert_eq!(escaped.len(), 66 + 3 * (128 - 66));
    }

    #[test]
    fn an_escaped_id_decodes_back_to_itself_and_stays_one_segment() {
        for id in ["a/b/c", "say:Hello {World}", "x y+z", "claude@1", "é/ü"] {
            let url = url::Url::parse(&format!(
                "http://h/v1beta/models/{}:generateContent",
                escape_segment(id)
            ))
            .unwrap();
            let segments: Vec<&str> = url.path_segments().unwrap().collect();
            assert_eq!(segments.len(), 3, "{url}");
            let last = segments[2].strip_suffix(":generateContent").unwrap();
            let decoded = percent_decode(last);
            assert_eq!(decoded, id);
        }
    }

    fn percent_decode(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    }

    fn seg(s: &str) -> Problem {
        Problem::Segment {
            segment: s.to_string(),
        }
    }

    fn forbidden(ch: char, at: usize) -> Problem {
        Problem::Forbidden { ch, at }
    }
}

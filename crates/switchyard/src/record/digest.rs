//! The prompt digest replay matches on, and the short diff a failed match shows.
//!
//! The prompt is the request's messages (system and developer ones included) and its
//! tools, serialised deterministically as canonical JSON (struct fields in declaration
//! order, objects in the order they were built). Parameters (max tokens, temperature…)
//! are not part of it.

use sha2::{Digest, Sha256};
use switchyard_wire::Request;

/// The digest of a request's prompt: the first 128 bits of SHA-256, in hex.
pub fn prompt_digest(request: &Request) -> String {
    let mut hasher = Sha256::new();
    // Serialising into the hasher avoids building the whole JSON text.
    let mut writer = HashWriter(&mut hasher);
    let ok = serde_json::to_writer(&mut writer, &(&request.messages, &request.tools)).is_ok();
    debug_assert!(ok, "canonical requests always serialise");
    lower_hex(&hasher.finalize()[..16])
}

/// The digest an embeddings call is matched on: its inputs (not its dimensions or
/// encoding), tagged so that no chat prompt can share it.
pub fn embed_digest(request: &switchyard_wire::embed::EmbedRequest) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"embeddings\0");
    let mut writer = HashWriter(&mut hasher);
    let ok = serde_json::to_writer(&mut writer, &request.input).is_ok();
    debug_assert!(ok, "embedding inputs always serialise");
    lower_hex(&hasher.finalize()[..16])
}

/// Bytes as lowercase hex, without a `format!` per byte (which cost more than the hash
/// itself on every recorded call).
pub(crate) fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    out
}

struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The prompt as lines for people: one per message (`[user] …` with the message's
/// content as JSON) and one per tool.
pub fn prompt_lines(request: &Request) -> Vec<String> {
    let mut lines = Vec::new();
    for m in &request.messages {
        let role = serde_json::to_value(m.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let text = if m.content.len() == 1 {
            match m.content[0].as_text() {
                Some(t) => serde_json::to_string(t).unwrap_or_default(),
                None => serde_json::to_string(&m.content).unwrap_or_default(),
            }
        } else {
            serde_json::to_string(&m.content).unwrap_or_default()
        };
        lines.push(format!("[{role}] {text}"));
    }
    for t in &request.tools {
        lines.push(format!(
            "[tool] {}",
            serde_json::to_string(t).unwrap_or_default()
        ));
    }
    lines
}

/// How alike two prompts are: lines in common, then the length of the common prefix.
pub fn likeness(a: &[String], b: &[String]) -> (usize, usize) {
    let same_lines = a.iter().zip(b).filter(|(x, y)| x == y).count();
    let prefix = a
        .iter()
        .flat_map(|l| l.bytes().chain(std::iter::once(b'\n')))
        .zip(
            b.iter()
                .flat_map(|l| l.bytes().chain(std::iter::once(b'\n'))),
        )
        .take_while(|(x, y)| x == y)
        .count();
    (same_lines, prefix)
}

/// A short diff from `recorded` to `now`: the first line that differs on each side, cut
/// around the first differing character.
pub fn short_diff(recorded: &[String], now: &[String]) -> String {
    let Some(i) = (0..recorded.len().max(now.len())).find(|&i| recorded.get(i) != now.get(i))
    else {
        return "the prompts are identical".to_string();
    };
    let old = recorded.get(i).map(String::as_str);
    let new = now.get(i).map(String::as_str);
    let common = match (old, new) {
        (Some(o), Some(n)) => o
            .char_indices()
            .zip(n.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map(|((i, c), _)| i + c.len_utf8())
            .unwrap_or(0),
        _ => 0,
    };
    let cut = |line: &str| -> String {
        let start = line
            .char_indices()
            .map(|(i, _)| i)
            .take_while(|&i| i + 40 <= common)
            .last()
            .unwrap_or(0);
        let start = if common > 40 { start } else { 0 };
        let shown: String = line[start..].chars().take(100).collect();
        let prefix = if start > 0 { "…" } else { "" };
        let suffix = if line[start..].chars().count() > 100 {
            "…"
        } else {
            ""
        };
        format!("{prefix}{shown}{suffix}")
    };
    format!(
        "line {}: - {} / + {}",
        i + 1,
        old.map(cut).unwrap_or_else(|| "(none)".to_string()),
        new.map(cut).unwrap_or_else(|| "(none)".to_string())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_hex_matches_format() {
        let bytes: Vec<u8> = (0..=255).collect();
        let expected: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(lower_hex(&bytes), expected);
    }

    #[test]
    fn digest_covers_the_prompt_not_the_parameters() {
        let a = Request::user("hello").with_system("be brief");
        let b = a.clone().with_max_tokens(5);
        assert_eq!(prompt_digest(&a), prompt_digest(&b));
        assert_eq!(prompt_digest(&a).len(), 32);
        assert_ne!(prompt_digest(&a), prompt_digest(&Request::user("hello")));
    }

    #[test]
    fn short_diff_names_the_line_and_both_sides() {
        let old = prompt_lines(&Request::user("what is the capital of France?").with_system("s"));
        let new = prompt_lines(&Request::user("what is the capital of Spain?").with_system("s"));
        let d = short_diff(&old, &new);
        assert_eq!(
            d,
            "line 2: - [user] \"what is the capital of France?\" / + [user] \"what is the capital of Spain?\""
        );
        assert!(likeness(&old, &new).1 > 20);
    }
}

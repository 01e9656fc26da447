//! A small index from key paths to their line and column in a YAML source, so that semantic
//! errors (a bad URL, a negative price, a key-looking value) can name `file:line:col`.
//!
//! It scans block mappings by indentation and the flow mappings written on one line
//! (`prices: {m: {input: 1}}`). A path it cannot place falls back to its nearest placed
//! ancestor, so every error still points at the right neighbourhood.

use std::collections::HashMap;

/// Key paths (`["backends", "vllm", "base_url"]`) mapped to 1-based `(line, column)`.
#[derive(Debug, Default, Clone)]
pub(crate) struct SpanIndex {
    spans: HashMap<Vec<String>, (usize, usize)>,
}

/// Removes a trailing comment (` # ...`) outside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev_space = true;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' && prev_space => return &line[..i],
            None => {}
        }
        prev_space = c.is_whitespace();
    }
    line
}

/// Splits `key: rest` into the unquoted key and the rest, if the text starts with a key.
fn split_key(text: &str) -> Option<(String, &str)> {
    let first = text.chars().next()?;
    if first == '"' || first == '\'' {
        let end = text[1..].find(first)? + 1;
        let key = text[1..end].to_string();
        let after = text[end + 1..].trim_start();
        let rest = after.strip_prefix(':')?;
        return Some((key, rest));
    }
    let bytes = text.as_bytes();
    for i in 0..bytes.len() {
        if bytes[i] == b':' && (i + 1 == bytes.len() || bytes[i + 1] == b' ') {
            let key = text[..i].trim_end();
            if key.is_empty() || key.starts_with(['{', '[', '-']) {
                return None;
            }
            return Some((key.to_string(), &text[i + 1..]));
        }
    }
    None
}

impl SpanIndex {
    /// Builds the index of `source`.
    pub(crate) fn build(source: &str) -> Self {
        let mut index = SpanIndex::default();
        let mut stack: Vec<(usize, String)> = Vec::new();
        for (n, raw) in source.lines().enumerate() {
            let line = strip_comment(raw);
            let content = line.trim_start();
            if content.is_empty() || content.starts_with("---") || content.starts_with("...") {
                continue;
            }
            let indent = line.len() - content.len();
            while stack.last().is_some_and(|(i, _)| *i >= indent) {
                stack.pop();
            }
            if content.starts_with("- ") || content == "-" {
                continue;
            }
            let Some((key, rest)) = split_key(content) else {
                continue;
            };
            let mut path: Vec<String> = stack.iter().map(|(_, k)| k.clone()).collect();
            path.push(key.clone());
            index
                .spans
                .entry(path.clone())
                .or_insert((n + 1, indent + 1));
            let rest_trim = rest.trim_start();
            if rest_trim.starts_with('{') {
                let offset = line.len() - rest_trim.len();
                index.scan_flow(&path, rest_trim, n + 1, offset);
            }
            stack.push((indent, key));
        }
        index
    }

    /// Records the keys of a one-line flow mapping starting at byte `offset` of its line.
    fn scan_flow(&mut self, base: &[String], text: &str, line: usize, offset: usize) {
        let mut path: Vec<String> = base.to_vec();
        // Depth of each open `{`: the length of `path` when it opened.
        let mut opens: Vec<usize> = Vec::new();
        let mut token_start: Option<usize> = None;
        let mut quote: Option<char> = None;
        let mut in_seq = 0usize;
        for (i, c) in text.char_indices() {
            if let Some(q) = quote {
                if c == q {
                    quote = None;
                }
                continue;
            }
            match c {
                '"' | '\'' => quote = Some(c),
                '{' => {
                    opens.push(path.len());
                    token_start = Some(i + 1);
                }
                '}' => {
                    if let Some(len) = opens.pop() {
                        path.truncate(len);
                        if opens.last().is_some() && path.len() > base.len() {
                            path.pop();
                        }
                    }
                    token_start = None;
                }
                '[' => in_seq += 1,
                ']' => in_seq = in_seq.saturating_sub(1),
                ',' if in_seq == 0 => {
                    if let Some(&len) = opens.last() {
                        path.truncate(len);
                    }
                    token_start = Some(i + 1);
                }
                ':' if in_seq == 0 => {
                    if let Some(start) = token_start.take() {
                        let raw = &text[start..i];
                        let key = raw.trim().trim_matches(['"', '\'']).to_string();
                        if !key.is_empty() {
                            let col = offset + start + (raw.len() - raw.trim_start().len()) + 1;
                            if let Some(&len) = opens.last() {
                                path.truncate(len);
                            }
                            path.push(key);
                            self.spans.entry(path.clone()).or_insert((line, col));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// The position of `path`, or of its nearest placed ancestor.
    pub(crate) fn find(&self, path: &[&str]) -> Option<(usize, usize)> {
        let mut owned: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        while !owned.is_empty() {
            if let Some(p) = self.spans.get(&owned) {
                return Some(*p);
            }
            owned.pop();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_and_flow_keys() {
        let src = "# c\nbackends:\n  vllm:   # x\n    base_url: http://a\n    prices: {m: {input: -1, output: 2}, n: {input: 1}}\n    apis:\n      - chat\n  other:\n    kind: http\n";
        let ix = SpanIndex::build(src);
        assert_eq!(ix.find(&["backends"]), Some((2, 1)));
        assert_eq!(ix.find(&["backends", "vllm", "base_url"]), Some((4, 5)));
        assert_eq!(
            ix.find(&["backends", "vllm", "prices", "m", "input"]),
            Some((5, 18))
        );
        assert_eq!(
            ix.find(&["backends", "vllm", "prices", "m", "output"]),
            Some((5, 29))
        );
        assert_eq!(ix.find(&["backends", "vllm", "prices", "n"]), Some((5, 41)));
        assert_eq!(ix.find(&["backends", "vllm", "apis", "0"]), Some((6, 5)));
        assert_eq!(ix.find(&["backends", "other", "kind"]), Some((9, 5)));
    }
}

//! Recognising keys written into configuration: by field name and by value.

/// True when a field's name says it holds a secret (`api_key`, `token`, `secret`...).
/// `api_key_env` (which names a variable) is not such a field.
pub(crate) fn is_key_field(name: &str) -> bool {
    let n: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if n == "apikeyenv" {
        return false;
    }
    n == "key"
        || n.ends_with("apikey")
        || n.ends_with("token")
        || n.ends_with("secret")
        || n.ends_with("secretkey")
        || n.ends_with("password")
        || n.ends_with("passwd")
        || n == "bearer"
        || n == "authorization"
        || n == "credential"
        || n == "credentials"
}

/// Known provider key prefixes and the minimum length of what follows them.
const PREFIXES: &[(&str, usize)] = &[
    ("sk-ant-", 16),
    ("sk-proj-", 16),
    ("sk-or-", 16),
    ("sk-", 16),
    ("AIza", 30),
    ("gsk_", 20),
    ("xai-", 20),
    ("fw_", 16),
    ("hf_", 20),
    ("ghp_", 20),
    ("github_pat_", 20),
    ("r8_", 20),
    ("pplx-", 20),
    ("nvapi-", 20),
    ("ya29.", 20),
];

fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// Shannon entropy in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = [0usize; 128];
    let mut n = 0usize;
    for b in s.bytes() {
        if let Some(slot) = counts.get_mut(usize::from(b)) {
            *slot += 1;
            n += 1;
        }
    }
    if n == 0 {
        return 0.0;
    }
    let n = n as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// True when a string value looks like a provider key or a long random bearer token.
pub(crate) fn looks_like_key(value: &str) -> bool {
    let v = value.trim();
    let v = v
        .strip_prefix("Bearer ")
        .or_else(|| v.strip_prefix("bearer "))
        .unwrap_or(v);
    if v.is_empty() || !v.chars().all(token_char) {
        return false;
    }
    for (prefix, min) in PREFIXES {
        if let Some(rest) = v.strip_prefix(prefix) {
            if rest.len() >= *min {
                return true;
            }
        }
    }
    // A long random-looking token: mixed case and digits, high entropy.
    v.len() >= 32
        && v.chars().any(|c| c.is_ascii_uppercase())
        && v.chars().any(|c| c.is_ascii_lowercase())
        && v.chars().any(|c| c.is_ascii_digit())
        && entropy(v) >= 4.0
}

/// What a problem shows in place of a key.
pub(crate) const REDACTED: &str = "<redacted>";

/// `text` with every word that looks like a key replaced by [`REDACTED`]: what a message
/// quoting a config value shows, so that a key written in a config is never printed back.
/// The keys the process holds are redacted too (`crate::internal::redact`), whatever
/// they look like.
pub(crate) fn redact_words(text: &str) -> String {
    let text = crate::internal::redact::redact(text);
    let text = text.as_ref();
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(if looks_like_key(word) { REDACTED } else { word });
        word.clear();
    };
    for c in text.chars() {
        if token_char(c) {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `value` with every string that looks like a key (or holds such a word), and every value
/// of a field named like a key (`api_key`, `token`…), redacted.
pub(crate) fn redact_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) if s.split(|c: char| !token_char(c)).any(looks_like_key) => {
            *s = redact_words(s);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_json),
        serde_json::Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                if is_key_field(k) && !v.is_null() {
                    *v = serde_json::Value::String(REDACTED.into());
                } else {
                    redact_json(v);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_fields() {
        for f in [
            "api_key",
            "apiKey",
            "key",
            "token",
            "secret",
            "password",
            "access_token",
            "openai_api_key",
        ] {
            assert!(is_key_field(f), "{f}");
        }
        for f in ["api_key_env", "base_url", "models", "keys", "key_required"] {
            assert!(!is_key_field(f), "{f}");
        }
    }

    #[test]
    fn redaction_keeps_the_words_around_a_key() {
        let key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123";
        assert_eq!(
            redact_words(&format!("unknown backend `{key}` in `role:x/{key}`")),
            "unknown backend `<redacted>` in `role:x/<redacted>`"
        );
        assert_eq!(redact_words("mock/echo, gpt-5.4"), "mock/echo, gpt-5.4");
        let mut v = serde_json::json!({
            "auth": key, "n": 1, "list": ["ok", format!("Bearer {key}")], "api_key": "hunter2"
        });
        redact_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "auth": "<redacted>", "n": 1, "list": ["ok", "Bearer <redacted>"],
                "api_key": "<redacted>"
            })
        );
    }

    #[test]
    fn key_values() {
        for v in [
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
            "sk-proj-abcdefghijklmnopqrstuvwx",
            "AIzaSyA1234567890abcdefghijklmnopqrstu",
            "gsk_abcdefghijklmnopqrstuvwxyz012345",
            "xai-abcdefghijklmnopqrstuvwxyz0123",
            "fw_3ZabcdefghijklmnopQRST",
            "Bearer aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE",
            "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dEf4Gh",
        ] {
            assert!(looks_like_key(v), "{v}");
        }
        for v in [
            "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8",
            "accounts/fireworks/models/glm-5p3-flash",
            "https://api.openai.com/v1",
            "OPENAI_API_KEY",
            "claude-sonnet-4-5-20250929",
            "sk-short",
            "gpt-5.4",
        ] {
            assert!(!looks_like_key(v), "{v}");
        }
    }
}

//! The cache key: a documented, deterministic digest of what a call asks for.
//!
//! SHA-256 over `"switchyard-cache-v1\0"`, the name the call resolves to (the route's
//! name, or the reference `<backend>/<model id>` a `models:` name stands for), `"\0"`,
//! and the canonical request (`switchyard_wire::Request`: messages, tools, tool choice,
//! every sampling setting, output limit, stop sequences, reasoning, response format and
//! the provider fields passed through, but for `stream_options`) serialised as canonical
//! JSON; the first 128 bits, in lowercase hex. The stream flag and the client's dialect are not in the key: they
//! decide whether an entry can be served (`docs/routing.md`, *The cache*).

use sha2::{Digest, Sha256};
use switchyard_wire::Request;

/// Provider fields that say how a reply is delivered, not what is asked: left out of the
/// key (`stream_options`, which a Chat Completions stream carries and a whole call not).
const DELIVERY_FIELDS: &[&str] = &["stream_options"];

/// The key of a call to `name` asking `request`.
pub fn cache_key(name: &str, request: &Request) -> String {
    let normalised;
    let request = if DELIVERY_FIELDS
        .iter()
        .any(|f| request.passthrough.fields.contains_key(*f))
    {
        let mut r = request.clone();
        for f in DELIVERY_FIELDS {
            r.passthrough.fields.remove(*f);
        }
        if r.passthrough.fields.is_empty() {
            r.passthrough.dialect = None;
        }
        normalised = r;
        &normalised
    } else {
        request
    };
    let mut hasher = Sha256::new();
    hasher.update(b"switchyard-cache-v1\0");
    hasher.update(name.as_bytes());
    hasher.update(b"\0");
    // A canonical request always serialises; an empty text would only make a key no
    // other request shares less often.
    hasher.update(serde_json::to_vec(request).unwrap_or_default());
    crate::record::lower_hex(&hasher.finalize()[..16])
}

/// The key of an embeddings call to `name` asking `request`: SHA-256 over
/// `"switchyard-cache-v1\0embeddings\0"`, the name, `"\0"` and the request (inputs,
/// `dimensions`, `encoding_format` and `task_type`) as canonical JSON; the first 128 bits
/// in hex. No chat call shares it.
pub fn embed_cache_key(name: &str, request: &switchyard_wire::embed::EmbedRequest) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"switchyard-cache-v1\0embeddings\0");
    hasher.update(name.as_bytes());
    hasher.update(b"\0");
    hasher.update(serde_json::to_vec(request).unwrap_or_default());
    crate::record::lower_hex(&hasher.finalize()[..16])
}

/// Whether a request may be cached: `temperature` unset or 0, unless the config allows
/// more.
pub fn cacheable(request: &Request, temperature_above_zero: bool) -> bool {
    temperature_above_zero || request.temperature.is_none_or(|t| t <= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_covers_name_prompt_and_settings() {
        let a = Request::user("hi");
        assert_eq!(
            cache_key("mock/echo", &a),
            cache_key("mock/echo", &a.clone())
        );
        assert_eq!(cache_key("mock/echo", &a).len(), 32);
        assert_ne!(cache_key("mock/echo", &a), cache_key("mock/other", &a));
        assert_ne!(
            cache_key("mock/echo", &a),
            cache_key("mock/echo", &a.clone().with_max_tokens(5))
        );
        let mut hot = a.clone();
        hot.temperature = Some(0.7);
        assert!(!cacheable(&hot, false) && cacheable(&hot, true));
        hot.temperature = Some(0.0);
        assert!(cacheable(&hot, false));
    }
}

//! The opaque values the mock issues — Anthropic thinking `signature` and
//! `redacted_thinking` `data`, Responses reasoning `encrypted_content`, Gemini
//! `thoughtSignature` — and their verification when a client sends them back.
//!
//! Every value is standard base64 (with padding) of 44 bytes: the magic `SYM`, a kind
//! byte, an 8-byte nonce, and an HMAC-SHA-256 (under a key compiled into the mock) over
//! the kind, the nonce and what the value binds. An Anthropic thinking signature binds the
//! thinking text, so a changed text or a changed signature no longer verifies; the other
//! kinds bind only their nonce. Verification recomputes the MAC from the value itself, so
//! it is stateless: a restarted mock accepts what an earlier one issued.
//!
//! The functions are public so that tests which hand-write a history can sign it the way
//! the mock would have.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};

const MAGIC: &[u8; 3] = b"SYM";
const KEY: &[u8] = b"switchyard-mock signing key, version 1";
const LEN: usize = 3 + 1 + 8 + 32;

/// What an issued value is for; each kind verifies only as itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// An Anthropic `thinking` block's `signature` (binds the thinking text).
    Thinking = 1,
    /// An Anthropic `redacted_thinking` block's `data`.
    Redacted = 2,
    /// A Responses `reasoning` item's `encrypted_content`.
    EncryptedContent = 3,
    /// A Gemini `thoughtSignature`.
    ThoughtSignature = 4,
}

fn hmac(kind: Kind, nonce: &[u8], bound: &[u8]) -> [u8; 32] {
    // HMAC (RFC 2104) with SHA-256; the key is shorter than the 64-byte block.
    let mut block = [0u8; 64];
    block[..KEY.len()].copy_from_slice(KEY);
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let mut inner = Sha256::new();
    inner.update(pad(0x36));
    inner.update([kind as u8]);
    inner.update(nonce);
    inner.update((bound.len() as u64).to_be_bytes());
    inner.update(bound);
    let mut outer = Sha256::new();
    outer.update(pad(0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// A value of `kind` with `nonce`, binding `bound`.
pub fn issue(kind: Kind, nonce: u64, bound: &[u8]) -> String {
    let nonce = nonce.to_be_bytes();
    let mut bytes = Vec::with_capacity(LEN);
    bytes.extend_from_slice(MAGIC);
    bytes.push(kind as u8);
    bytes.extend_from_slice(&nonce);
    bytes.extend_from_slice(&hmac(kind, &nonce, bound));
    STANDARD.encode(bytes)
}

/// Whether `value` is one the mock issued as `kind` for `bound`.
pub fn verify(kind: Kind, value: &str, bound: &[u8]) -> bool {
    STANDARD
        .decode(value)
        .is_ok_and(|bytes| verify_bytes(kind, &bytes, bound))
}

/// Whether `bytes`, a value already decoded from base64 (Gemini's `bytes` fields may come
/// back in either alphabet: the google-genai SDK re-encodes them URL-safe), are one the
/// mock issued as `kind` for `bound`.
pub fn verify_bytes(kind: Kind, bytes: &[u8], bound: &[u8]) -> bool {
    if bytes.len() != LEN || &bytes[..3] != MAGIC || bytes[3] != kind as u8 {
        return false;
    }
    let (nonce, mac) = bytes[4..].split_at(8);
    // Not constant-time: the mock guards nothing.
    hmac(kind, nonce, bound)[..] == *mac
}

/// The signature the mock gives an Anthropic thinking block with this text.
pub fn thinking_signature(text: &str, nonce: u64) -> String {
    issue(Kind::Thinking, nonce, text.as_bytes())
}

/// Whether `signature` is the mock's for a thinking block with this text.
pub fn verify_thinking(text: &str, signature: &str) -> bool {
    verify(Kind::Thinking, signature, text.as_bytes())
}

/// A `redacted_thinking` `data` value.
pub fn redacted_data(nonce: u64) -> String {
    issue(Kind::Redacted, nonce, b"")
}

/// A Responses `encrypted_content` value.
pub fn encrypted_content(nonce: u64) -> String {
    issue(Kind::EncryptedContent, nonce, b"")
}

/// A Gemini `thoughtSignature`.
pub fn thought_signature(nonce: u64) -> String {
    issue(Kind::ThoughtSignature, nonce, b"")
}

/// Whether a value of an unbound kind (every kind but [`Kind::Thinking`]) is the mock's.
pub fn verify_unbound(kind: Kind, value: &str) -> bool {
    verify(kind, value, b"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_values_are_padded_base64_and_verify() {
        let s = thinking_signature("I think.", 7);
        assert_eq!(s.len(), 60);
        assert!(s.ends_with('='), "{s}");
        assert_eq!(STANDARD.decode(&s).unwrap().len(), LEN);
        assert!(verify_thinking("I think.", &s));
        assert!(!verify_thinking("I think!", &s));
        assert!(!verify(Kind::Redacted, &s, b"I think."));
        let g = thought_signature(1);
        assert!(verify_unbound(Kind::ThoughtSignature, &g));
        assert!(!verify_unbound(Kind::EncryptedContent, &g));
        assert!(verify_unbound(
            Kind::EncryptedContent,
            &encrypted_content(2)
        ));
        assert!(verify_unbound(Kind::Redacted, &redacted_data(3)));
    }

    #[test]
    fn foreign_and_tampered_values_do_not_verify() {
        let s = thinking_signature("x", 1);
        let mut bytes = STANDARD.decode(&s).unwrap();
        bytes[20] ^= 1;
        assert!(!verify_thinking("x", &STANDARD.encode(&bytes)));
        for v in [
            "",
            "c2ln",
            "not base64!",
            "mock-signature-messages-01",
            "====",
        ] {
            assert!(!verify_thinking("x", v), "{v}");
            assert!(!verify_unbound(Kind::ThoughtSignature, v), "{v}");
        }
    }
}

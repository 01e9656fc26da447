//! The envelope's bytes: `"SY"`, a version byte, a 16-byte MAC, then the payload as JSON;
//! the whole carried as standard base64 with padding (valid wherever the carrying field
//! expects base64, as Gemini's `thoughtSignature` does). Every envelope's text starts with
//! [`TEXT_PREFIX`].

use super::key::StateKey;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};
use serde::{Deserialize, Serialize};
use switchyard_wire::Dialect;

/// `"SY"` and the format's version.
const MAGIC: &[u8; 3] = b"SY\x01";
/// Bytes of HMAC-SHA256 kept: 128 bits, as much as forging needs to guess.
const MAC_LEN: usize = 16;
/// The base64 of [`MAGIC`]: how an envelope is told apart from native state without
/// decoding it (the same in the URL-safe alphabet, which a client may re-encode into).
pub(crate) const TEXT_PREFIX: &str = "U1kB";

/// Which canonical slot the carried state belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Slot {
    /// The carrying thinking part itself (its text, id and redaction are in the payload).
    Thinking,
    /// The next tool call after the carrier, in the same message.
    Call,
    /// The last text part before the carrier, in the same message.
    Text,
}

/// What an envelope carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Payload {
    /// The dialect that issued the state.
    #[serde(rename = "d")]
    pub dialect: Dialect,
    /// The backend that issued it.
    #[serde(rename = "b", default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Where it goes back.
    #[serde(rename = "s")]
    pub slot: Slot,
    /// The state exactly as issued.
    #[serde(rename = "v")]
    pub value: String,
    /// For a thinking slot: the reasoning text as issued (a signature covers it).
    #[serde(rename = "t", default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// For a thinking slot: the provider's item id (Responses `rs_…`).
    #[serde(rename = "i", default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// For a thinking slot: an Anthropic `redacted_thinking` block.
    #[serde(rename = "r", default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

/// Why a value is not an envelope this gateway can open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unopened {
    /// Native state (or anything else): no envelope prefix.
    NotAnEnvelope,
    /// An envelope whose MAC does not verify under this gateway's key: forged, altered,
    /// or sealed by a gateway with another key.
    Forged,
    /// An envelope of a version this gateway does not read, or a payload it cannot parse.
    Unreadable,
}

/// Seals `payload` under `key`.
pub(crate) fn seal(key: &StateKey, payload: &Payload) -> String {
    let json = serde_json::to_vec(payload).unwrap_or_default();
    let mut bytes = Vec::with_capacity(MAGIC.len() + MAC_LEN + json.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&key.mac(MAGIC, &json)[..MAC_LEN]);
    bytes.extend_from_slice(&json);
    STANDARD.encode(bytes)
}

/// Opens `text` if it is an envelope sealed under `key`.
pub(crate) fn open(key: &StateKey, text: &str) -> Result<Payload, Unopened> {
    if !text.starts_with(TEXT_PREFIX) {
        return Err(Unopened::NotAnEnvelope);
    }
    let bytes = decode_any_base64(text).ok_or(Unopened::Unreadable)?;
    if bytes.len() < MAGIC.len() + MAC_LEN || !bytes.starts_with(MAGIC) {
        return Err(Unopened::Unreadable);
    }
    let (mac, json) = bytes[MAGIC.len()..].split_at(MAC_LEN);
    if !key.verify(MAGIC, json, mac) {
        return Err(Unopened::Forged);
    }
    serde_json::from_slice(json).map_err(|_| Unopened::Unreadable)
}

/// Standard or URL-safe base64, padded or not: a client may hand back the bytes it
/// decoded re-encoded in either (the google-genai SDK keeps `thoughtSignature` as bytes).
fn decode_any_base64(text: &str) -> Option<Vec<u8>> {
    let config =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    GeneralPurpose::new(&alphabet::STANDARD, config)
        .decode(text)
        .or_else(|_| GeneralPurpose::new(&alphabet::URL_SAFE, config).decode(text))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload() -> Payload {
        Payload {
            dialect: Dialect::Messages,
            backend: Some("anthropic".into()),
            slot: Slot::Thinking,
            value: "EqQBCkYIBxgCKkD".into(),
            text: "Let me think.".into(),
            id: None,
            redacted: false,
        }
    }

    #[test]
    fn sealed_opens_and_is_standard_base64() {
        let key = StateKey::from_bytes(b"0123456789abcdef0123456789abcdef".to_vec());
        let text = seal(&key, &payload());
        assert!(text.starts_with(TEXT_PREFIX), "{text}");
        assert!(STANDARD.decode(&text).is_ok());
        assert_eq!(open(&key, &text), Ok(payload()));
        // Re-encoded URL-safe without padding, as a client holding the bytes may send it.
        let bytes = STANDARD.decode(&text).unwrap();
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        assert_eq!(open(&key, &url), Ok(payload()));
    }

    #[test]
    fn forged_or_foreign_envelopes_do_not_open() {
        let key = StateKey::from_bytes(b"0123456789abcdef0123456789abcdef".to_vec());
        let other = StateKey::from_bytes(b"another key, another gateway....".to_vec());
        let text = seal(&other, &payload());
        assert_eq!(open(&key, &text), Err(Unopened::Forged));
        // A payload altered under a kept MAC.
        let mut bytes = STANDARD.decode(seal(&key, &payload())).unwrap();
        let last = bytes.len() - 3;
        bytes[last] ^= 1;
        assert_eq!(open(&key, &STANDARD.encode(bytes)), Err(Unopened::Forged));
        assert_eq!(open(&key, "EqQBCkYI"), Err(Unopened::NotAnEnvelope));
        assert_eq!(open(&key, "U1kB!!"), Err(Unopened::Unreadable));
        assert_eq!(open(&key, "U1kB"), Err(Unopened::Unreadable));
    }
}

//! Bytes in a JSON record: as text when they are UTF-8 (readable, and the usual case),
//! else base64; the encoding is written beside them so the same bytes come back.

use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Bytes exactly as received, in a form JSON can hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "encoding", content = "data", rename_all = "lowercase")]
pub enum RawBytes {
    /// The bytes were valid UTF-8: this is them.
    Utf8(String),
    /// The bytes were not UTF-8: standard base64 of them.
    Base64(String),
}

impl RawBytes {
    /// Encodes bytes.
    pub fn new(bytes: &[u8]) -> RawBytes {
        match std::str::from_utf8(bytes) {
            Ok(text) => RawBytes::Utf8(text.to_string()),
            Err(_) => RawBytes::Base64(base64::engine::general_purpose::STANDARD.encode(bytes)),
        }
    }

    /// The bytes back.
    pub fn to_bytes(&self) -> crate::Result<Bytes> {
        match self {
            RawBytes::Utf8(text) => Ok(Bytes::copy_from_slice(text.as_bytes())),
            RawBytes::Base64(data) => base64::engine::general_purpose::STANDARD
                .decode(data)
                .map(Bytes::from)
                .map_err(|e| {
                    crate::Error::Config(format!("a record's base64 raw bytes do not decode: {e}"))
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_and_binary_bytes_come_back_the_same() {
        for bytes in [
            b"{\"a\":1}\n".to_vec(),
            vec![0xff, 0x00, b'a', 0xc3],
            "héllo \u{1F600}".as_bytes().to_vec(),
        ] {
            let raw = RawBytes::new(&bytes);
            let json = serde_json::to_string(&raw).unwrap();
            let back: RawBytes = serde_json::from_str(&json).unwrap();
            assert_eq!(
                back.to_bytes().unwrap().as_ref(),
                bytes.as_slice(),
                "{json}"
            );
        }
        assert!(matches!(RawBytes::new(&[0xff]), RawBytes::Base64(_)));
        assert_eq!(
            serde_json::to_string(&RawBytes::new(b"hi")).unwrap(),
            r#"{"encoding":"utf8","data":"hi"}"#
        );
    }
}

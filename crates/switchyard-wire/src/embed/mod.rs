//! Embeddings: the canonical request and reply, and the two wire shapes that carry them —
//! OpenAI's `POST /v1/embeddings` ([`openai`]) and Gemini's `models/{m}:embedContent` /
//! `:batchEmbedContents` ([`gemini`]).
//!
//! Embeddings are not a chat [`Dialect`](crate::Dialect): they have no messages, no
//! stream and no tools, so they get their own small hub here instead of a variant that
//! every match on a dialect would have to handle. Like the codecs, everything here is
//! pure: bytes in, values out.
//!
//! The encoding a caller asked for is kept as asked: a request that says
//! `encoding_format: base64` is encoded upstream with it, and the reply a gateway writes
//! for it carries each vector as base64 of its little-endian `f32`s, as OpenAI writes it.
//!
//! ```
//! use switchyard_wire::embed::{openai, EmbedRequest, EncodingFormat};
//!
//! let request = EmbedRequest::texts(["hello"]).with_encoding(EncodingFormat::Base64);
//! let body = openai::encode_request(&request, "text-embedding-3-small");
//! assert_eq!(body["encoding_format"], "base64");
//! ```

pub mod gemini;
pub mod openai;

use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// What is embedded: a list of texts, or a list of token-id lists (OpenAI-compatible
/// servers take both; Gemini takes text only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EmbedInput {
    /// One vector per text.
    Texts(Vec<String>),
    /// One vector per list of token ids.
    Tokens(Vec<Vec<u32>>),
}

impl EmbedInput {
    /// How many vectors are asked for.
    pub fn len(&self) -> usize {
        match self {
            EmbedInput::Texts(t) => t.len(),
            EmbedInput::Tokens(t) => t.len(),
        }
    }

    /// True when nothing is to be embedded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Characters of text (or token ids) asked for, for estimates where a provider
    /// reports no usage.
    pub fn size(&self) -> usize {
        match self {
            EmbedInput::Texts(t) => t.iter().map(|s| s.chars().count()).sum(),
            // A token id stands for about four characters of text.
            EmbedInput::Tokens(t) => t.iter().map(|ids| ids.len() * 4).sum(),
        }
    }
}

/// How vectors travel in an OpenAI reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EncodingFormat {
    /// JSON arrays of numbers.
    Float,
    /// Base64 of the vector's little-endian `f32`s.
    Base64,
}

impl EncodingFormat {
    /// `float` or `base64`, as the field is written.
    pub fn as_str(self) -> &'static str {
        match self {
            EncodingFormat::Float => "float",
            EncodingFormat::Base64 => "base64",
        }
    }
}

/// The wire shape an embeddings backend speaks, chosen by its family (see
/// `docs/routing.md`, "Embeddings").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedShape {
    /// `POST {base}/embeddings`, OpenAI's shape (OpenAI, vLLM, and other compatible servers).
    Openai,
    /// `POST {root}/models/{model}:batchEmbedContents`, Gemini's shape.
    Gemini,
}

impl EmbedShape {
    /// `openai` or `gemini`.
    pub fn as_str(self) -> &'static str {
        match self {
            EmbedShape::Openai => "openai",
            EmbedShape::Gemini => "gemini",
        }
    }
}

impl fmt::Display for EmbedShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An embeddings request. The model is not part of it (as for a chat
/// [`Request`](crate::Request)): it is the encoder's argument, since Gemini carries it
/// in the URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbedRequest {
    /// What to embed.
    pub input: EmbedInput,
    /// The vectors' length, when the model may shorten them (OpenAI `dimensions`,
    /// Gemini `outputDimensionality`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<u32>,
    /// How the caller asked the vectors to travel (`None`: not said, OpenAI's default
    /// `float`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding_format: Option<EncodingFormat>,
    /// Gemini's `taskType` (`RETRIEVAL_QUERY`, `SEMANTIC_SIMILARITY`…), passed on to a
    /// Gemini backend; an OpenAI-shaped backend has no such field and is not sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    /// OpenAI's `user`, passed on to an OpenAI-shaped backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

impl EmbedRequest {
    /// A request embedding each of `texts`.
    pub fn texts<I, S>(texts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EmbedRequest::new(EmbedInput::Texts(
            texts.into_iter().map(Into::into).collect(),
        ))
    }

    /// A request embedding each list of token ids.
    pub fn tokens(tokens: Vec<Vec<u32>>) -> Self {
        EmbedRequest::new(EmbedInput::Tokens(tokens))
    }

    /// A request for `input` with nothing else said.
    pub fn new(input: EmbedInput) -> Self {
        EmbedRequest {
            input,
            dimensions: None,
            encoding_format: None,
            task_type: None,
            user: None,
        }
    }

    /// The same request asking for vectors of `dimensions`.
    pub fn with_dimensions(mut self, dimensions: u32) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// The same request asking the vectors to travel as `format`.
    pub fn with_encoding(mut self, format: EncodingFormat) -> Self {
        self.encoding_format = Some(format);
        self
    }

    /// The same request with Gemini's `taskType`.
    pub fn with_task_type(mut self, task_type: impl Into<String>) -> Self {
        self.task_type = Some(task_type.into());
        self
    }
}

/// The vectors that came back, in the order of the inputs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Embeddings {
    /// One vector per input.
    pub vectors: Vec<Vec<f32>>,
    /// Input tokens, as the provider reported them (`None`: it reported none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// The model the provider says answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The reply's bytes as received (empty for a reply built here).
    #[serde(skip)]
    pub raw: Bytes,
}

impl Embeddings {
    /// The same value without its raw bytes (records keep those apart).
    pub fn without_raw(&self) -> Embeddings {
        Embeddings {
            raw: Bytes::new(),
            ..self.clone()
        }
    }
}

/// A vector as OpenAI's `encoding_format: base64` carries it: base64 (standard, padded)
/// of its `f32`s in little-endian order.
pub fn vector_to_base64(vector: &[f32]) -> String {
    let mut bytes = Vec::with_capacity(vector.len() * 4);
    for v in vector {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A vector from OpenAI's base64 form; `where_` names it in the error.
pub fn vector_from_base64(text: &str, where_: &str) -> Result<Vec<f32>, crate::DecodeError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.as_bytes())
        .map_err(|e| {
            crate::DecodeError::Malformed(format!(
                "{where_} is not standard base64 ({e}); expected base64 of little-endian f32s"
            ))
        })?;
    if bytes.len() % 4 != 0 {
        return Err(crate::DecodeError::Malformed(format!(
            "{where_} decodes to {} bytes, not a whole number of 4-byte f32s",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// A vector from a JSON array of numbers; `where_` names it in the error.
pub(crate) fn vector_from_json(
    value: &Value,
    where_: &str,
) -> Result<Vec<f32>, crate::DecodeError> {
    let Value::Array(items) = value else {
        return Err(crate::DecodeError::Malformed(format!(
            "{where_} is a JSON {} where an array of numbers is required",
            crate::codec::json_type(value)
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            // Vectors are f32 on every provider's side; the JSON text is f32's own
            // shortest form, so the narrowing keeps the value.
            v.as_f64().map(|f| f as f32).ok_or_else(|| {
                crate::DecodeError::Malformed(format!(
                    "{where_}[{i}] is a JSON {} where a number is required",
                    crate::codec::json_type(v)
                ))
            })
        })
        .collect()
}

/// A positive integer that fits in `u32`, or the error naming `where_`.
pub(crate) fn dimensions_at(
    obj: &Map<String, Value>,
    key: &str,
    where_: &str,
) -> Result<Option<u32>, crate::DecodeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| {
                crate::DecodeError::Malformed(format!(
                    "{where_}: `{key}` is {v} where a positive whole number is required"
                ))
            }),
    }
}

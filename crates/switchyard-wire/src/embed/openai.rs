//! OpenAI's `POST /v1/embeddings`, both ways: the request a client sends (decoded by the
//! gateway, encoded by the library) and the `{"object":"list","data":[…]}` reply.

use super::{dimensions_at, vector_from_base64, vector_from_json, vector_to_base64};
use super::{EmbedInput, EmbedRequest, Embeddings, EncodingFormat};
use crate::codec::{json_type, parse_object, DecodeError};
use crate::json::{obj_at, str_at, u64_at};
use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};

/// A request body decoded on the server side: the model it names and the request.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedEmbedRequest {
    /// The body's `model`.
    pub model: String,
    /// The request.
    pub request: EmbedRequest,
}

/// The body to send for `request` to `model`. The input always goes as a list (one
/// vector per item, the reply's `index` order); `encoding_format` only when the caller
/// said it, so the provider's default stays the provider's.
pub fn encode_request(request: &EmbedRequest, model: &str) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.to_string()));
    let input = match &request.input {
        EmbedInput::Texts(texts) => texts.iter().cloned().map(Value::String).collect(),
        EmbedInput::Tokens(lists) => lists
            .iter()
            .map(|ids| Value::Array(ids.iter().map(|id| Value::from(*id)).collect()))
            .collect(),
    };
    body.insert("input".into(), Value::Array(input));
    if let Some(d) = request.dimensions {
        body.insert("dimensions".into(), Value::from(d));
    }
    if let Some(f) = request.encoding_format {
        body.insert("encoding_format".into(), Value::String(f.as_str().into()));
    }
    if let Some(u) = &request.user {
        body.insert("user".into(), Value::String(u.clone()));
    }
    body
}

/// A client's request body: `input` as a string, a list of strings, a list of token ids
/// or a list of such lists (the four forms OpenAI accepts).
pub fn decode_request(body: &[u8]) -> Result<DecodedEmbedRequest, DecodeError> {
    const WHERE: &str = "embeddings request";
    let obj = parse_object(body, WHERE)?;
    let model = crate::json::require_str(&obj, "model", WHERE)?.to_string();
    let input = match obj.get("input") {
        Some(v) => decode_input(v)?,
        None => return Err(crate::json::missing(WHERE, "input")),
    };
    let encoding_format = match obj.get("encoding_format") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s == "float" => Some(EncodingFormat::Float),
        Some(Value::String(s)) if s == "base64" => Some(EncodingFormat::Base64),
        Some(other) => {
            return Err(DecodeError::Malformed(format!(
                "{WHERE}: `encoding_format` is {other}; accepted: \"float\", \"base64\""
            )))
        }
    };
    Ok(DecodedEmbedRequest {
        model,
        request: EmbedRequest {
            input,
            dimensions: dimensions_at(&obj, "dimensions", WHERE)?,
            encoding_format,
            task_type: None,
            user: str_at(&obj, "user").map(str::to_string),
        },
    })
}

fn decode_input(value: &Value) -> Result<EmbedInput, DecodeError> {
    const ACCEPTED: &str =
        "accepted: a string, a list of strings, a list of token ids, or a list of token-id lists";
    let bad =
        |what: String| DecodeError::Malformed(format!("embeddings request: {what}; {ACCEPTED}"));
    let items = match value {
        Value::String(s) => return Ok(EmbedInput::Texts(vec![s.clone()])),
        Value::Array(items) => items,
        other => return Err(bad(format!("`input` is a JSON {}", json_type(other)))),
    };
    if items.is_empty() {
        return Err(bad("`input` is an empty list".into()));
    }
    let token = |v: &Value, at: String| {
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| bad(format!("{at} is {v}, not a token id (a whole number)")))
    };
    match &items[0] {
        Value::String(_) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(bad(format!(
                    "`input[{i}]` is a JSON {} in a list of strings",
                    json_type(other)
                ))),
            })
            .collect::<Result<_, _>>()
            .map(EmbedInput::Texts),
        Value::Number(_) => items
            .iter()
            .enumerate()
            .map(|(i, v)| token(v, format!("`input[{i}]`")))
            .collect::<Result<Vec<u32>, _>>()
            .map(|ids| EmbedInput::Tokens(vec![ids])),
        Value::Array(_) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::Array(ids) => ids
                    .iter()
                    .enumerate()
                    .map(|(j, id)| token(id, format!("`input[{i}][{j}]`")))
                    .collect::<Result<Vec<u32>, _>>(),
                other => Err(bad(format!(
                    "`input[{i}]` is a JSON {} in a list of token-id lists",
                    json_type(other)
                ))),
            })
            .collect::<Result<_, _>>()
            .map(EmbedInput::Tokens),
        other => Err(bad(format!("`input[0]` is a JSON {}", json_type(other)))),
    }
}

/// A reply body: vectors as arrays of numbers or as base64 (whichever came), put in
/// their `index` order; an `error` object is the provider's error.
pub fn decode_reply(body: &[u8]) -> Result<Embeddings, DecodeError> {
    const WHERE: &str = "embeddings reply";
    let obj = parse_object(body, WHERE)?;
    if let Some(error) = obj.get("error").filter(|e| !e.is_null()) {
        return Err(DecodeError::Provider(
            crate::dialect::chat::error_from_chat(error),
        ));
    }
    let data = crate::json::require_arr(&obj, "data", WHERE)?;
    let mut indexed = Vec::with_capacity(data.len());
    for (i, item) in data.iter().enumerate() {
        let at = format!("{WHERE} data[{i}]");
        let item = crate::json::as_obj(item, &at)?;
        let index = u64_at(item, "index")
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(i);
        let vector = match item.get("embedding") {
            Some(Value::String(text)) => vector_from_base64(text, &format!("{at}.embedding"))?,
            Some(v) => vector_from_json(v, &format!("{at}.embedding"))?,
            None => return Err(crate::json::missing(&at, "embedding")),
        };
        indexed.push((index, vector));
    }
    indexed.sort_by_key(|(index, _)| *index);
    Ok(Embeddings {
        vectors: indexed.into_iter().map(|(_, v)| v).collect(),
        input_tokens: obj_at(&obj, "usage").and_then(|u| u64_at(u, "prompt_tokens")),
        model: str_at(&obj, "model").map(str::to_string),
        raw: Bytes::copy_from_slice(body),
    })
}

#[derive(Serialize)]
struct ListOut<'a> {
    object: &'static str,
    data: Vec<ItemOut<'a>>,
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<UsageOut>,
}

#[derive(Serialize)]
struct ItemOut<'a> {
    object: &'static str,
    index: usize,
    embedding: VectorOut<'a>,
}

/// Serialised as a list of `f32`s (each in its shortest form, as OpenAI writes them) or
/// as base64.
#[derive(Serialize)]
#[serde(untagged)]
enum VectorOut<'a> {
    Float(&'a [f32]),
    Base64(String),
}

#[derive(Serialize)]
struct UsageOut {
    prompt_tokens: u64,
    total_tokens: u64,
}

/// The reply body a server writes for `embeddings`, its vectors as `format` (`base64`:
/// base64 of little-endian `f32`s, as OpenAI writes it), naming `model`. `usage` is
/// written when the input tokens are known.
pub fn encode_reply(embeddings: &Embeddings, format: EncodingFormat, model: &str) -> Bytes {
    let out = ListOut {
        object: "list",
        data: embeddings
            .vectors
            .iter()
            .enumerate()
            .map(|(index, v)| ItemOut {
                object: "embedding",
                index,
                embedding: match format {
                    EncodingFormat::Float => VectorOut::Float(v),
                    EncodingFormat::Base64 => VectorOut::Base64(vector_to_base64(v)),
                },
            })
            .collect(),
        model,
        usage: embeddings.input_tokens.map(|n| UsageOut {
            prompt_tokens: n,
            total_tokens: n,
        }),
    };
    // Serialising plain structs of strings and finite numbers cannot fail; a NaN (which
    // JSON cannot hold) is written as `null` by serde_json rather than failing.
    Bytes::from(serde_json::to_vec(&out).unwrap_or_default())
}

//! Gemini's embeddings, both ways: `models/{model}:batchEmbedContents` (what a Gemini
//! backend is called with: one request per input) and `models/{model}:embedContent` (one
//! input), their requests and replies. The model is in the URL; each batch item names it
//! again as `models/{model}`, as Google requires.
//!
//! Gemini embeds text only: token-id inputs cannot be sent. Its developer API reports no
//! usage for embeddings; a `usageMetadata.promptTokenCount` (Vertex writes one, so does
//! the mock) is read when present.

use super::{dimensions_at, vector_from_json, EmbedInput, EmbedRequest, Embeddings};
use crate::codec::{parse_object, DecodeError, EncodeError};
use crate::json::{as_obj, obj_at, str_at, u64_at, Object};
use bytes::Bytes;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// The `batchEmbedContents` body for `request` to `model`.
pub fn encode_batch_request(
    request: &EmbedRequest,
    model: &str,
) -> Result<Map<String, Value>, EncodeError> {
    let EmbedInput::Texts(texts) = &request.input else {
        return Err(EncodeError(
            "Gemini embeds text only: token-id inputs can be sent to an OpenAI-shaped embeddings backend".into(),
        ));
    };
    let name = format!("models/{model}");
    let requests: Vec<Value> = texts
        .iter()
        .map(|text| {
            let mut item = Map::new();
            item.insert("model".into(), Value::String(name.clone()));
            item.insert("content".into(), json!({"parts": [{"text": text}]}));
            if let Some(t) = &request.task_type {
                item.insert("taskType".into(), Value::String(t.clone()));
            }
            if let Some(d) = request.dimensions {
                item.insert("outputDimensionality".into(), Value::from(d));
            }
            Value::Object(item)
        })
        .collect();
    let mut body = Map::new();
    body.insert("requests".into(), Value::Array(requests));
    Ok(body)
}

/// A client's `batchEmbedContents` body: one text per item (an item's text parts joined),
/// its `taskType` and `outputDimensionality` (which must be the same on every item: the
/// canonical request has one of each).
pub fn decode_batch_request(body: &[u8]) -> Result<EmbedRequest, DecodeError> {
    const WHERE: &str = "batchEmbedContents request";
    let obj = parse_object(body, WHERE)?;
    let items = crate::json::require_arr(&obj, "requests", WHERE)?;
    if items.is_empty() {
        return Err(DecodeError::Malformed(format!(
            "{WHERE}: `requests` is empty; give one item per text to embed"
        )));
    }
    let mut texts = Vec::with_capacity(items.len());
    let mut first: Option<EmbedRequest> = None;
    for (i, item) in items.iter().enumerate() {
        let at = format!("{WHERE} requests[{i}]");
        let one = decode_item(as_obj(item, &at)?, &at)?;
        if let Some(f) = &first {
            if f.task_type != one.task_type || f.dimensions != one.dimensions {
                return Err(DecodeError::Malformed(format!(
                    "{at}: its taskType or outputDimensionality differs from requests[0]'s; every item of one call must ask the same"
                )));
            }
        }
        if let EmbedInput::Texts(t) = &one.input {
            texts.extend(t.iter().cloned());
        }
        first.get_or_insert(one);
    }
    let mut request = first.unwrap_or_else(|| EmbedRequest::texts(Vec::<String>::new()));
    request.input = EmbedInput::Texts(texts);
    Ok(request)
}

/// A client's `embedContent` body: one text.
pub fn decode_single_request(body: &[u8]) -> Result<EmbedRequest, DecodeError> {
    const WHERE: &str = "embedContent request";
    let obj = parse_object(body, WHERE)?;
    decode_item(&obj, WHERE)
}

/// One `EmbedContentRequest`, by its `lowerCamelCase` or `snake_case` names (Google
/// parses both).
fn decode_item(obj: &Object, at: &str) -> Result<EmbedRequest, DecodeError> {
    let content = crate::json::require_obj(obj, "content", at)?;
    let parts = crate::json::require_arr(content, "parts", &format!("{at}.content"))?;
    let mut text = String::new();
    for (j, part) in parts.iter().enumerate() {
        let where_ = format!("{at}.content.parts[{j}]");
        let part = as_obj(part, &where_)?;
        match str_at(part, "text") {
            Some(t) => text.push_str(t),
            None => {
                return Err(DecodeError::Malformed(format!(
                    "{where_} has no `text`; Gemini embeds text parts only"
                )))
            }
        }
    }
    let either = |camel: &str, snake: &str| {
        if obj.contains_key(camel) {
            camel.to_string()
        } else {
            snake.to_string()
        }
    };
    let dims_key = either("outputDimensionality", "output_dimensionality");
    let task_key = either("taskType", "task_type");
    Ok(EmbedRequest {
        input: EmbedInput::Texts(vec![text]),
        dimensions: dimensions_at(obj, &dims_key, at)?,
        encoding_format: None,
        task_type: str_at(obj, &task_key).map(str::to_string),
        user: None,
    })
}

/// A `batchEmbedContents` reply (`embeddings: [{values}]`) or an `embedContent` one
/// (`embedding: {values}`); an `error` object is the provider's error.
pub fn decode_reply(body: &[u8]) -> Result<Embeddings, DecodeError> {
    const WHERE: &str = "gemini embeddings reply";
    let obj = parse_object(body, WHERE)?;
    if let Some(error) = crate::dialect::gemini::provider_error(&obj) {
        return Err(DecodeError::Provider(error));
    }
    let vectors = if let Some(list) = obj.get("embeddings") {
        let Value::Array(list) = list else {
            return Err(crate::json::wrong_type(
                WHERE,
                "embeddings",
                "an array",
                list,
            ));
        };
        list.iter()
            .enumerate()
            .map(|(i, e)| values(e, &format!("{WHERE} embeddings[{i}]")))
            .collect::<Result<Vec<_>, _>>()?
    } else if let Some(one) = obj.get("embedding") {
        vec![values(one, &format!("{WHERE} embedding"))?]
    } else {
        return Err(DecodeError::Malformed(format!(
            "{WHERE} has neither `embeddings` (batchEmbedContents) nor `embedding` (embedContent)"
        )));
    };
    Ok(Embeddings {
        vectors,
        input_tokens: obj_at(&obj, "usageMetadata").and_then(|u| u64_at(u, "promptTokenCount")),
        model: None,
        raw: Bytes::copy_from_slice(body),
    })
}

fn values(embedding: &Value, at: &str) -> Result<Vec<f32>, DecodeError> {
    let e = as_obj(embedding, at)?;
    match e.get("values") {
        Some(v) => vector_from_json(v, &format!("{at}.values")),
        None => Err(crate::json::missing(at, "values")),
    }
}

#[derive(Serialize)]
struct ValuesOut<'a> {
    values: &'a [f32],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsageOut {
    prompt_token_count: u64,
    total_token_count: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BatchOut<'a> {
    embeddings: Vec<ValuesOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage_metadata: Option<UsageOut>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SingleOut<'a> {
    embedding: ValuesOut<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage_metadata: Option<UsageOut>,
}

fn usage(embeddings: &Embeddings) -> Option<UsageOut> {
    embeddings.input_tokens.map(|n| UsageOut {
        prompt_token_count: n,
        total_token_count: n,
    })
}

/// The `batchEmbedContents` reply a server writes (`usageMetadata` when the input tokens
/// are known, as Vertex writes it).
pub fn encode_batch_reply(embeddings: &Embeddings) -> Bytes {
    let out = BatchOut {
        embeddings: embeddings
            .vectors
            .iter()
            .map(|v| ValuesOut { values: v })
            .collect(),
        usage_metadata: usage(embeddings),
    };
    Bytes::from(serde_json::to_vec(&out).unwrap_or_default())
}

/// The `embedContent` reply a server writes: the first vector (a single request has
/// one).
pub fn encode_single_reply(embeddings: &Embeddings) -> Bytes {
    let out = SingleOut {
        embedding: ValuesOut {
            values: embeddings.vectors.first().map_or(&[], Vec::as_slice),
        },
        usage_metadata: usage(embeddings),
    };
    Bytes::from(serde_json::to_vec(&out).unwrap_or_default())
}

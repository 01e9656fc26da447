//! Token counting: Anthropic's `POST /v1/messages/count_tokens` (Claude Code's context
//! accounting, answered `{"input_tokens": N}`) and Gemini's `POST
//! /v1beta/models/{model}:countTokens` (answered `{"totalTokens": N}`). Asked of the
//! backend when it counts (a Messages backend's `count_tokens`, a Gemini backend's
//! `:countTokens`; the client's request translated when the dialects differ), else
//! estimated (about four characters a token), so a client never gets a 404 it would treat
//! as "no context information".

use crate::call::upstream::Target;
use crate::errors::{ApiError, Category};
use crate::meter::Meter;
use crate::raw::RawBody;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use switchyard::backend::http::RawRequest;
use switchyard::Dialect;
use switchyard_wire::{codec, EncodeOptions, Part, Request};

/// The fields Anthropic's `count_tokens` takes (it refuses `max_tokens`, `stream`…).
const MESSAGES_COUNT_FIELDS: &[&str] = &[
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
];

/// Answers a count asked in `client`'s dialect (Messages or Gemini).
pub(crate) async fn answer(
    target: &Target,
    raw: &RawBody<'_>,
    bytes: &Bytes,
    headers: &HeaderMap,
    client: Dialect,
    meter: &mut Meter,
) -> Result<Response, ApiError> {
    let body = client_request(client, raw, bytes)?;
    if client == target.dialect && client == Dialect::Messages {
        if let Some(url) = &target.count_tokens_url {
            let patched = raw.patched(&[("model", switchyard_wire::json::quoted(&target.model))]);
            if let Some(v) = ask_messages(target, url, patched, headers).await {
                meter.complete();
                return Ok(json_response(v));
            }
        }
    }
    let decoded = codec(client).decode_request(&body).map_err(|e| {
        ApiError::new(
            Category::BadRequest,
            format!("not a valid {client} request: {e}"),
        )
    })?;
    let request = decoded.request;
    let counted = match target.dialect {
        Dialect::Gemini if client == Dialect::Gemini => {
            ask_gemini(target, serde_json::from_slice(&body).ok()).await
        }
        Dialect::Gemini => ask_gemini(target, encoded(target, &request)).await,
        Dialect::Messages if client != Dialect::Messages => match &target.count_tokens_url {
            Some(url) => {
                let body = encoded(target, &request).map(|mut b| {
                    b.retain(|k, _| MESSAGES_COUNT_FIELDS.contains(&k.as_str()));
                    serde_json::to_vec(&b).unwrap_or_default()
                });
                match body {
                    Some(body) => ask_messages(target, url, body, headers)
                        .await
                        .and_then(|v| v["input_tokens"].as_u64()),
                    None => None,
                }
            }
            None => None,
        },
        _ => None,
    };
    meter.complete();
    let n = counted.unwrap_or_else(|| estimate(&request));
    Ok(json_response(match client {
        Dialect::Gemini => json!({"totalTokens": n}),
        _ => json!({"input_tokens": n}),
    }))
}

/// The request whose tokens are counted: for Gemini, `generateContentRequest` when the
/// body wraps one, else the body itself (`{contents: [...]}`).
fn client_request(client: Dialect, raw: &RawBody<'_>, bytes: &Bytes) -> Result<Bytes, ApiError> {
    if client != Dialect::Gemini {
        return Ok(bytes.clone());
    }
    let wrapped = raw
        .raw("generateContentRequest")
        .or_else(|| raw.raw("generate_content_request"));
    match wrapped {
        None => Ok(bytes.clone()),
        Some(inner) => {
            let Ok(Value::Object(mut inner)) = serde_json::from_str::<Value>(inner) else {
                return Err(ApiError::new(
                    Category::BadRequest,
                    "`generateContentRequest` must be a GenerateContentRequest object",
                ));
            };
            inner.remove("model");
            Ok(Bytes::from(serde_json::to_vec(&inner).unwrap_or_default()))
        }
    }
}

/// `request` as the backend's dialect writes it for the target's model.
fn encoded(target: &Target, request: &Request) -> Option<Map<String, Value>> {
    let options = EncodeOptions {
        model: &target.model,
        stream: false,
    };
    codec(target.dialect).encode_request(request, &options).ok()
}

/// The backend's own count, through the library's send path (its credential and
/// timeouts); `None` when it has none to give, and the estimate answers instead.
async fn ask_messages(
    target: &Target,
    url: &url::Url,
    body: Vec<u8>,
    headers: &HeaderMap,
) -> Option<Value> {
    let mut request = RawRequest::new(Bytes::from(body), false);
    if let Some(version) = headers.get("anthropic-version") {
        request.headers.push((
            HeaderName::from_static("anthropic-version"),
            version.clone(),
        ));
    }
    let response = target.http.send_raw_to(url.clone(), &request).await.ok()?;
    let v: Value = serde_json::from_slice(&response.bytes().await.ok()?).ok()?;
    v.get("input_tokens").and_then(Value::as_u64).map(|_| v)
}

/// A Gemini backend's `:countTokens` beside its `:generateContent`, asked with the
/// request wrapped as `generateContentRequest` (the form that carries system instruction,
/// tools and config) for the target's model.
async fn ask_gemini(target: &Target, request: Option<Map<String, Value>>) -> Option<u64> {
    let mut inner = request?;
    let url = gemini_count_url(target.http.config().endpoint.url(false))?;
    inner.insert(
        "model".into(),
        Value::String(format!("models/{}", target.model)),
    );
    let body = json!({ "generateContentRequest": inner });
    let request = RawRequest::new(Bytes::from(body.to_string()), false);
    let response = target.http.send_raw_to(url, &request).await.ok()?;
    let v: Value = serde_json::from_slice(&response.bytes().await.ok()?).ok()?;
    v.get("totalTokens").and_then(Value::as_u64)
}

/// `…/models/{m}:generateContent` → `…/models/{m}:countTokens`, the query kept.
fn gemini_count_url(generate: &url::Url) -> Option<url::Url> {
    let path = generate.path().strip_suffix(":generateContent")?;
    let mut url = generate.clone();
    url.set_path(&format!("{path}:countTokens"));
    Some(url)
}

/// Characters ÷ 4, rounded up, over every text, argument, result and tool declaration.
pub(crate) fn estimate(request: &Request) -> u64 {
    let mut chars = 0usize;
    for m in &request.messages {
        for p in &m.content {
            chars += match p {
                Part::Text { text, .. } => text.chars().count(),
                Part::Thinking(t) => t.text.chars().count(),
                Part::ToolCall(c) => c.name.len() + c.arguments.chars().count(),
                Part::ToolResult(r) => r.text().chars().count(),
                Part::Image(_) => 6000, // about 1,500 tokens, a typical image
            };
        }
    }
    for t in &request.tools {
        chars += t.name.len()
            + t.description.as_deref().map_or(0, str::len)
            + t.parameters.to_string().len();
    }
    (chars as u64).div_ceil(4).max(1)
}

fn json_response(v: Value) -> Response {
    let mut r = Response::new(Body::from(v.to_string()));
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_url_is_beside_generate_content() {
        let u = url::Url::parse("http://h/v1beta/models/a/b:generateContent?key=k").unwrap();
        assert_eq!(
            gemini_count_url(&u).unwrap().as_str(),
            "http://h/v1beta/models/a/b:countTokens?key=k"
        );
        let other = url::Url::parse("http://h/v1/chat/completions").unwrap();
        assert!(gemini_count_url(&other).is_none());
    }
}

//! `POST /v1/messages/count_tokens` (Claude Code's context accounting): asked of the
//! backend when it serves Messages, else estimated (about four characters a token), so a
//! client never gets a 404 it would treat as "no context information".

use crate::errors::{ApiError, Category};
use crate::meter::Meter;
use crate::raw::RawBody;
use crate::upstream::Target;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{json, Value};
use switchyard::backend::http::RawRequest;
use switchyard::Dialect;
use switchyard_wire::{codec, Part, Request};

/// Answers a count.
pub(crate) async fn answer(
    target: &Target,
    raw: &RawBody<'_>,
    bytes: &Bytes,
    headers: &HeaderMap,
    meter: &mut Meter,
) -> Result<Response, ApiError> {
    if let (Some(url), Dialect::Messages) = (&target.count_tokens_url, target.dialect) {
        if let Some(count) = ask(target, url, raw, headers).await {
            meter.complete();
            return Ok(json_response(count));
        }
    }
    let decoded = codec(Dialect::Messages)
        .decode_request(bytes)
        .map_err(|e| {
            ApiError::new(
                Category::BadRequest,
                format!("not a valid Messages request: {e}"),
            )
        })?;
    meter.complete();
    Ok(json_response(
        json!({"input_tokens": estimate(&decoded.request)}),
    ))
}

/// The backend's own count, through the library's send path (its credential and
/// timeouts); `None` when it has none to give, and the estimate answers instead.
async fn ask(
    target: &Target,
    url: &url::Url,
    raw: &RawBody<'_>,
    headers: &HeaderMap,
) -> Option<Value> {
    let body = raw.patched(&[("model", Value::from(target.model.as_str()).to_string())]);
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

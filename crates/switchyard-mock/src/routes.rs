//! The HTTP surface: one route per provider endpoint, request recording, the stored
//! responses' endpoints ([`crate::stateful`]), and the small endpoints (models list, token
//! counting, health).

use crate::answer;
use crate::call::{self, CallRoute};
use crate::embeddings::EmbedRoute;
use crate::faults;
use crate::recorder::RecordedRequest;
use crate::state::Shared;
use crate::stateful;
use axum::body::{to_bytes, Body};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use switchyard_wire::{codec, Dialect};

/// The largest body the mock reads.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Model names listed by `GET /v1/models` (scenario names are added).
pub const BUILT_IN_MODELS: &[&str] = &[
    "echo",
    "mock-small",
    "mock-large",
    "mock-free",
    "say:hello",
    "lorem-100",
    "tools",
    "think",
    "agent",
    "agent+think",
    "gemini-3-pro+agent+think",
    "cli-agent+think",
    "cache",
    "echo+think+cache",
    "slow",
    "slow-first-byte",
    "fault-429",
    "fault-429-retry-1",
    "fault-429-then-ok",
    "fault-500",
    "fault-503",
    "fault-529",
    "quota",
    "context-overflow",
    "null-body",
    "no-text",
    "no-usage",
    "not-json",
    "cut-stream",
    "error-mid-stream",
    "hang",
    "echo-key",
];

/// The mock's router.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(root).head(root))
        .route("/healthz", get(|| async { "ok" }))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/responses", post(responses))
        .route(
            "/v1/responses/{id}",
            get(stateful::responses_api::get).delete(stateful::responses_api::delete),
        )
        .route(
            "/v1/responses/{id}/input_items",
            get(stateful::responses_api::input_items),
        )
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/v1/embeddings", post(embeddings))
        .route("/v1beta/models/{*rest}", post(gemini))
        .route(
            "/v1/projects/{project}/locations/{location}/publishers/google/models/{*rest}",
            post(gemini),
        )
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(shared.clone(), record))
        .with_state(shared)
}

async fn record(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            let message = format!("switchyard-mock could not read the request body: {e}");
            return (StatusCode::PAYLOAD_TOO_LARGE, message).into_response();
        }
    };
    let headers = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    shared.recorder.push(RecordedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().map(str::to_string),
        headers,
        json: serde_json::from_slice(&bytes).ok(),
        body: bytes.clone(),
    });
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

async fn root() -> &'static str {
    "switchyard-mock"
}

async fn not_found(uri: Uri) -> Response {
    let message = format!(
        "switchyard-mock has no route for {}; it serves /v1/chat/completions, /v1/responses, \
         GET and DELETE /v1/responses/<id>, GET /v1/responses/<id>/input_items, /v1/messages, /v1/messages/count_tokens, /v1/embeddings, /v1beta/models/<model>:generateContent, \
         :streamGenerateContent, :embedContent, :batchEmbedContents, /v1/models and /healthz",
        uri.path()
    );
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "not_found"}})),
    )
        .into_response()
}

async fn models(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let data: Vec<Value> = BUILT_IN_MODELS
        .iter()
        .map(|s| s.to_string())
        .chain(shared.config.scenarios.keys().cloned())
        .map(|id| {
            json!({"id": id, "object": "model", "created": shared.config.created, "owned_by": "switchyard-mock"})
        })
        .collect();
    Json(json!({"object": "list", "data": data}))
}

async fn chat(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    call::serve_call(&shared, route(Dialect::Chat, &headers), body).await
}

async fn responses(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    stateful::responses::serve(&shared, route(Dialect::Responses, &headers), body).await
}

async fn messages(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    stateful::threads::serve(&shared, &headers, route(Dialect::Messages, &headers), body).await
}

async fn embeddings(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    crate::embeddings::serve(&shared, EmbedRoute::Openai, None, body).await
}

fn route(dialect: Dialect, headers: &HeaderMap) -> CallRoute {
    CallRoute {
        dialect,
        url_model: None,
        json_array: false,
        credential: call::credential(headers, None),
    }
}

/// Anthropic's token counting: `{"input_tokens": N}`, the same estimate replies report.
async fn count_tokens(body: Bytes) -> Response {
    let n = match codec(Dialect::Messages).decode_request(&body) {
        Ok(d) => answer::input_tokens(&d.request),
        Err(_) => match serde_json::from_slice::<Value>(&body) {
            Ok(v) => answer::tokens(json_text_chars(&v)),
            Err(e) => {
                let message = format!("the request body is not JSON: {e}");
                let e = faults::client_error(Dialect::Messages, 400, &message, "req_mock_count");
                return call::error_response(Dialect::Messages, "req_mock_count", e);
            }
        },
    };
    Json(json!({ "input_tokens": n })).into_response()
}

/// Characters of the prompt text in a request body the codec could not read.
fn json_text_chars(v: &Value) -> usize {
    fn walk(v: &Value) -> usize {
        match v {
            Value::String(s) => s.chars().count(),
            Value::Array(a) => a.iter().map(walk).sum(),
            Value::Object(o) => o
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "type" | "role" | "id" | "cache_control"))
                .map(|(_, v)| walk(v))
                .sum(),
            _ => 0,
        }
    }
    ["system", "messages", "tools"]
        .iter()
        .filter_map(|k| v.get(k))
        .map(walk)
        .sum()
}

/// Gemini and Vertex: `models/<model>:<method>`, the model possibly holding `:` or `/`.
async fn gemini(
    State(shared): State<Arc<Shared>>,
    Path(params): Path<HashMap<String, String>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let rest = params.get("rest").map(String::as_str).unwrap_or_default();
    let Some((model, method)) = rest.rsplit_once(':') else {
        return gemini_not_found(&format!(
            "`{rest}` names no method; expected models/<model>:generateContent or :streamGenerateContent"
        ));
    };
    let stream = match method {
        "generateContent" => false,
        "streamGenerateContent" => true,
        "embedContent" | "batchEmbedContents" => {
            let route = if method == "embedContent" {
                EmbedRoute::GeminiSingle
            } else {
                EmbedRoute::GeminiBatch
            };
            return crate::embeddings::serve(&shared, route, Some(model), body).await;
        }
        "countTokens" => {
            let n = match codec(Dialect::Gemini).decode_request(&body) {
                Ok(d) => answer::input_tokens(&d.request),
                Err(_) => serde_json::from_slice::<Value>(&body)
                    .map(|v| answer::tokens(json_text_chars(&v)))
                    .unwrap_or(1),
            };
            return Json(json!({ "totalTokens": n })).into_response();
        }
        other => {
            return gemini_not_found(&format!(
                "method `{other}` is not served; expected generateContent, streamGenerateContent, countTokens, embedContent or batchEmbedContents"
            ))
        }
    };
    let alt_sse = uri
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "alt=sse"));
    let route = CallRoute {
        dialect: Dialect::Gemini,
        url_model: Some((model.to_string(), stream)),
        json_array: stream && !alt_sse,
        credential: call::credential(&headers, uri.query()),
    };
    call::serve_call(&shared, route, body).await
}

fn gemini_not_found(message: &str) -> Response {
    let e = faults::client_error(Dialect::Gemini, 404, message, "");
    call::error_response(Dialect::Gemini, "", e)
}

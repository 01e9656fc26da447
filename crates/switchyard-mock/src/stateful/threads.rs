//! Anthropic message threads (`anthropic-beta: message-threads-2026-08-12`) on
//! `POST /v1/messages`.
//!
//! `"thread": {"type": "create"}` is served as any request and the conversation (its
//! messages and the reply) kept under the reply's id, with the request's `system` and
//! `tools`. `"thread": {"type": "continue", "previous_message_id": …}` carries only the
//! new messages: the kept conversation goes before them (and its `system` and `tools`
//! where the request leaves them out, as clients do), and the reply is kept under its own
//! id in turn. The reply's shape is unchanged (Anthropic's SDK documents "The response
//! shape is unchanged"). An id not held is a 404 `not_found_error` with
//! `error.details.error_code: "thread_not_found"`; the model-name component `no-threads`
//! refuses every thread request with the 400 `thread_unsupported_request` clients fall
//! back on. Without the beta header, `thread` is not read and the request is served as
//! before.

use super::{BuiltReply, StoredThread};
use crate::behaviour;
use crate::call::{self, CallRoute};
use crate::faults::ErrorResponse;
use crate::state::Shared;
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use switchyard_wire::{codec, Dialect, Reply, ServerContext};

/// The beta that turns threads on.
pub(crate) const THREADS_BETA: &str = "message-threads-2026-08-12";

/// Serves a Messages call, creating or continuing a thread when it asks to.
pub(crate) async fn serve(
    shared: &Shared,
    headers: &HeaderMap,
    route: CallRoute,
    body: Bytes,
) -> Response {
    if !asks_for_threads(headers) {
        return call::serve_call(shared, route, body).await;
    }
    let Ok(Value::Object(mut request)) = serde_json::from_slice::<Value>(&body) else {
        return call::serve_call(shared, route, body).await;
    };
    let Some(thread) = request.get("thread").cloned() else {
        return call::serve_call(shared, route, body).await;
    };
    let refuse = |e: ErrorResponse| {
        let request_id = super::request_id(shared);
        let mut body: Value = serde_json::from_slice(&e.body).unwrap_or_default();
        body["request_id"] = json!(request_id);
        let e = ErrorResponse {
            body: body.to_string().into_bytes(),
            ..e
        };
        call::error_response(Dialect::Messages, &request_id, e)
    };
    if refuses_threads(&request) {
        return refuse(unsupported());
    }
    let forwarded = match thread.get("type").and_then(Value::as_str) {
        Some("create") => body,
        Some("continue") => {
            let Some(id) = thread.get("previous_message_id").and_then(Value::as_str) else {
                return refuse(invalid(
                    "thread.previous_message_id: Field required (a string: the id of the reply the thread goes on from)",
                ));
            };
            let Some(held) = shared.state.thread(id) else {
                return refuse(not_found(id));
            };
            let new = match request.get("messages") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(m)) => m.clone(),
                Some(_) => return refuse(invalid("messages: Input should be a valid list")),
            };
            let mut messages = held.messages.clone();
            messages.extend(new);
            request.insert("messages".into(), Value::Array(messages));
            for (key, kept) in [("system", &held.system), ("tools", &held.tools)] {
                if let (None, Some(kept)) = (request.get(key), kept) {
                    request.insert(key.into(), kept.clone());
                }
            }
            request.remove("thread");
            Bytes::from(Value::Object(request.clone()).to_string())
        }
        _ => {
            return refuse(invalid(
                "thread.type: Input should be 'create' or 'continue'",
            ))
        }
    };
    let response = call::serve_call(shared, route, forwarded.clone()).await;
    if let Some(BuiltReply(reply)) = response.extensions().get::<BuiltReply>() {
        keep(shared, &forwarded, reply);
    }
    response
}

/// Whether an `anthropic-beta` header names the threads beta.
fn asks_for_threads(headers: &HeaderMap) -> bool {
    headers
        .get_all("anthropic-beta")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|beta| beta.trim() == THREADS_BETA)
}

/// Whether the model named says `no-threads`.
fn refuses_threads(request: &Map<String, Value>) -> bool {
    request
        .get("model")
        .and_then(Value::as_str)
        .and_then(|m| behaviour::parse(m).ok())
        .is_some_and(|b| b.no_threads)
}

/// Keeps the conversation a served request (`body`, expanded) and its reply make.
fn keep(shared: &Shared, body: &[u8], reply: &Reply) {
    let (Some(id), Ok(Value::Object(request))) =
        (reply.id.clone(), serde_json::from_slice::<Value>(body))
    else {
        return;
    };
    let context = ServerContext {
        created: shared.config.created,
        fallback_id: id.clone(),
    };
    let encoded = codec(Dialect::Messages).encode_reply(reply, &context);
    let Ok(message) = serde_json::from_slice::<Value>(&encoded) else {
        return;
    };
    let mut messages = match request.get("messages") {
        Some(Value::Array(m)) => m.clone(),
        _ => Vec::new(),
    };
    messages.push(json!({"role": "assistant", "content": message["content"].clone()}));
    shared.state.keep_thread(
        id,
        StoredThread {
            system: request.get("system").cloned(),
            tools: request.get("tools").cloned(),
            messages,
        },
    );
}

/// What a server that holds no threads answers: clients resend the whole history.
fn unsupported() -> ErrorResponse {
    error(
        400,
        json!({"type": "invalid_request_error",
            "message": "This server keeps no message threads (switchyard-mock model `no-threads`): \
                        resend the whole conversation without `thread`.",
            "details": {"error_code": "thread_unsupported_request"}}),
    )
}

/// A thread this server does not hold (never kept, or forgotten past the bound).
fn not_found(id: &str) -> ErrorResponse {
    error(
        404,
        json!({"type": "not_found_error",
            "message": format!("No thread state was found for the requested `previous_message_id` '{id}'. \
                                Replay the full conversation with `thread: {{\"type\": \"create\"}}` to start a new Thread."),
            "details": {"error_code": "thread_not_found"}}),
    )
}

fn invalid(message: &str) -> ErrorResponse {
    error(
        400,
        json!({"type": "invalid_request_error", "message": message}),
    )
}

/// Anthropic's envelope around `error` (the request id is added when it is sent).
fn error(status: u16, error: Value) -> ErrorResponse {
    ErrorResponse {
        status,
        headers: Vec::new(),
        body: json!({"type": "error", "error": error})
            .to_string()
            .into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_beta_is_found_in_any_header_and_list() {
        let mut h = HeaderMap::new();
        assert!(!asks_for_threads(&h));
        h.append("anthropic-beta", HeaderValue::from_static("a-1"));
        assert!(!asks_for_threads(&h));
        h.append(
            "anthropic-beta",
            HeaderValue::from_static("b-2, message-threads-2026-08-12"),
        );
        assert!(asks_for_threads(&h));
    }

    #[test]
    fn no_threads_is_read_from_the_model() {
        let with = |m: &str| json!({"model": m}).as_object().cloned().unwrap();
        assert!(refuses_threads(&with("mock/echo+no-threads")));
        assert!(!refuses_threads(&with("echo")));
        assert!(!refuses_threads(&with("bogus-name")));
    }
}

//! `GET /v1/models`: the models the caller may use — the gateway's `models:` names, and
//! the key's allowed references — in OpenAI's list shape, or Anthropic's when the client
//! sends `anthropic-version`.

use crate::errors::{ApiError, Category};
use crate::server::State;
use axum::extract::{Request, State as S};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;
use switchyard::Dialect;

/// Lists models.
pub async fn list(S(state): S<Arc<State>>, request: Request) -> Response {
    let anthropic = request.headers().contains_key("anthropic-version");
    let dialect = if anthropic {
        Dialect::Messages
    } else {
        Dialect::Chat
    };
    let key = if state.keys.is_empty() {
        None
    } else {
        match state
            .keys
            .authenticate(request.headers(), request.uri().query())
        {
            Ok(k) => Some(k),
            Err(_) => {
                return ApiError::new(Category::Unauthenticated, "a valid gateway key is required")
                    .into_response_for(dialect)
            }
        }
    };
    let mut ids: Vec<(String, String)> = Vec::new();
    for (name, reference) in state.upstreams.models() {
        if key.as_ref().is_none_or(|k| k.allows(name, reference)) {
            ids.push((name.clone(), reference.clone()));
        }
    }
    if let Some(k) = &key {
        for m in &k.models {
            if !m.ends_with('*') && !ids.iter().any(|(n, _)| n == m) {
                ids.push((m.clone(), m.clone()));
            }
        }
    }
    let body = if anthropic {
        let data: Vec<_> = ids
            .iter()
            .map(|(id, r)| json!({"type": "model", "id": id, "display_name": r, "created_at": "1970-01-01T00:00:00Z"}))
            .collect();
        json!({
            "data": data,
            "has_more": false,
            "first_id": ids.first().map(|(i, _)| i.clone()),
            "last_id": ids.last().map(|(i, _)| i.clone()),
        })
    } else {
        let data: Vec<_> = ids
            .iter()
            .map(|(id, r)| json!({"id": id, "object": "model", "created": 0, "owned_by": r.split('/').next().unwrap_or("")}))
            .collect();
        json!({"object": "list", "data": data})
    };
    ([("content-type", "application/json")], body.to_string()).into_response()
}

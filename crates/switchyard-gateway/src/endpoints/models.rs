//! `GET /v1/models` and Gemini's `GET /v1beta/models` (and one model,
//! `GET /v1/models/{model}` and `GET /v1beta/models/{model}`, what `google-genai`'s
//! `models.get` and OpenAI's `models.retrieve` ask): the models the caller may use —
//! the gateway's `models:` names, then every model the backends know by name (their
//! aliases and priced model ids, as references `<backend>/<model>`), less what the key may
//! not use — in OpenAI's list shape, Anthropic's when the client sends
//! `anthropic-version`, and Gemini's `models` list on the Gemini route or when the client
//! sends Gemini's key (`x-goog-api-key`, `?key=`). Any reference
//! routes whether listed or not: the list is what an SDK's `models.list()` can show.

use crate::errors::{ApiError, Category};
use crate::shared::Shared;
use axum::extract::{Path, Request, State as S};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::Arc;
use switchyard::registry::Kind;
use switchyard::Dialect;

/// One listed model: the name a client sends, and the reference it goes to.
struct Listed {
    id: String,
    reference: String,
}

/// `GET /v1/models`: Anthropic's shape when the client sends `anthropic-version`, Gemini's
/// when it speaks Gemini (`google-genai` with `api_version="v1"` asks this path), else
/// OpenAI's.
pub(crate) async fn list(S(state): S<Arc<Shared>>, request: Request) -> Response {
    let dialect = asking_dialect(&request);
    answer(&state, &request, dialect)
}

/// `GET /v1beta/models`.
pub(crate) async fn list_gemini(S(state): S<Arc<Shared>>, request: Request) -> Response {
    answer(&state, &request, Dialect::Gemini)
}

/// `GET /v1beta/models/{model}`.
pub(crate) async fn get_gemini(
    S(state): S<Arc<Shared>>,
    Path(rest): Path<String>,
    request: Request,
) -> Response {
    one(state, &rest, request, Dialect::Gemini).await
}

/// `GET /v1/models/{model}`, in the shape of the client's dialect as [`list`] tells it.
pub(crate) async fn get(
    S(state): S<Arc<Shared>>,
    Path(rest): Path<String>,
    request: Request,
) -> Response {
    let dialect = asking_dialect(&request);
    one(state, &rest, request, dialect).await
}

/// The dialect a models request is asked in: Anthropic's by `anthropic-version`, Gemini's
/// by its key header or `?key=`, else OpenAI's.
fn asking_dialect(request: &Request) -> Dialect {
    let headers = request.headers();
    if headers.contains_key("anthropic-version") {
        Dialect::Messages
    } else if headers.contains_key("x-goog-api-key")
        || request
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|kv| kv.starts_with("key=")))
    {
        Dialect::Gemini
    } else {
        Dialect::Chat
    }
}

/// One model (`models/` prefix optional): any name that routes, listed or not, that the
/// key may use; a method path (`…:generateContent`) asked with GET is a 405.
async fn one(state: Arc<Shared>, rest: &str, request: Request, dialect: Dialect) -> Response {
    if rest.contains(':') {
        return crate::endpoints::not_found::method_not_allowed(S(state), request).await;
    }
    let Ok(key) = caller(&state, &request) else {
        return unauthenticated(dialect);
    };
    let name = rest.strip_prefix("models/").unwrap_or(rest);
    let found = known(&state).into_iter().find(|m| m.id == name);
    let listed = match found {
        Some(m) => m,
        None => match state.upstreams.resolve(name) {
            Ok(reference) => Listed {
                id: name.to_string(),
                reference: reference.to_string(),
            },
            Err(e) => return e.into_response_for(dialect),
        },
    };
    if key
        .as_ref()
        .is_some_and(|k| !k.allows(&listed.id, &listed.reference))
    {
        return ApiError::new(
            Category::NotFound,
            format!("model `{name}` is not found or not available to this key"),
        )
        .into_response_for(dialect);
    }
    let body = match dialect {
        Dialect::Messages => anthropic_model(&listed),
        Dialect::Gemini => gemini_model(&listed),
        Dialect::Chat | Dialect::Responses => openai_model(&listed),
    };
    ([("content-type", "application/json")], body.to_string()).into_response()
}

/// The caller's key when the gateway has keys (`None` when it has none), or `Err` when
/// the key is missing or unknown (answered by [`unauthenticated`]).
fn caller(state: &Shared, request: &Request) -> Result<Option<Arc<crate::account::keys::Key>>, ()> {
    if state.keys.is_empty() {
        return Ok(None);
    }
    state
        .keys
        .authenticate(request.headers(), request.uri().query())
        .map(Some)
        .map_err(|_| ())
}

fn unauthenticated(dialect: Dialect) -> Response {
    ApiError::new(Category::Unauthenticated, "a valid gateway key is required")
        .into_response_for(dialect)
}

fn answer(state: &Shared, request: &Request, dialect: Dialect) -> Response {
    let Ok(key) = caller(state, request) else {
        return unauthenticated(dialect);
    };
    let listed: Vec<Listed> = known(state)
        .into_iter()
        .filter(|m| key.as_ref().is_none_or(|k| k.allows(&m.id, &m.reference)))
        .collect();
    let body = match dialect {
        Dialect::Messages => anthropic_shape(&listed),
        Dialect::Gemini => gemini_shape(&listed),
        Dialect::Chat | Dialect::Responses => openai_shape(&listed),
    };
    ([("content-type", "application/json")], body.to_string()).into_response()
}

/// The `models:` names first (in the table's order), then the routes, then each HTTP
/// backend's aliases and priced ids as references, once each.
fn known(state: &Shared) -> Vec<Listed> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut add = |id: String, reference: String| {
        if seen.insert(id.clone()) {
            out.push(Listed { id, reference });
        }
    };
    for (name, reference) in state.upstreams.models() {
        add(name.clone(), reference.clone());
    }
    let registry = state.upstreams.registry();
    for route in registry.routes() {
        add(route.name.clone(), route.name.clone());
    }
    for name in registry.names() {
        let Some(backend) = registry.backend(name) else {
            continue;
        };
        if backend.kind.value != Kind::Http {
            continue;
        }
        for (alias, id) in &backend.models {
            add(format!("{name}/{alias}"), format!("{name}/{}", id.value));
        }
        for id in backend.prices.keys() {
            add(format!("{name}/{id}"), format!("{name}/{id}"));
        }
    }
    out
}

fn openai_shape(listed: &[Listed]) -> Value {
    let data: Vec<_> = listed.iter().map(openai_model).collect();
    json!({"object": "list", "data": data})
}

fn openai_model(m: &Listed) -> Value {
    json!({
        "id": m.id,
        "object": "model",
        "created": 0,
        "owned_by": m.reference.split('/').next().unwrap_or(""),
    })
}

fn anthropic_model(m: &Listed) -> Value {
    json!({
        "type": "model",
        "id": m.id,
        "display_name": m.reference,
        "created_at": "1970-01-01T00:00:00Z",
    })
}

fn anthropic_shape(listed: &[Listed]) -> Value {
    let data: Vec<_> = listed.iter().map(anthropic_model).collect();
    json!({
        "data": data,
        "has_more": false,
        "first_id": listed.first().map(|m| m.id.clone()),
        "last_id": listed.last().map(|m| m.id.clone()),
    })
}

fn gemini_shape(listed: &[Listed]) -> Value {
    let models: Vec<_> = listed.iter().map(gemini_model).collect();
    json!({"models": models})
}

/// One Gemini `Model`.
fn gemini_model(m: &Listed) -> Value {
    json!({
        "name": format!("models/{}", m.id),
        "baseModelId": m.id,
        "version": "switchyard",
        "displayName": m.reference,
        "description": format!("{} through the Switchyard gateway", m.reference),
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
    })
}

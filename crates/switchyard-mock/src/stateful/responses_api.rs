//! Reading and removing stored responses: `GET /v1/responses/{id}`,
//! `GET /v1/responses/{id}/input_items` (OpenAI's cursor-paged list) and
//! `DELETE /v1/responses/{id}`, each a 404 in OpenAI's shape for an id not held.

use super::responses::refusal;
use crate::call;
use crate::state::Shared;
use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;
use switchyard_wire::kept::input_items_page;
use switchyard_wire::Dialect;

/// `GET /v1/responses/{id}`: the response as its non-streamed `POST` returned it.
pub(crate) async fn get(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    match shared.state.response(&id) {
        Some(stored) => Json(stored.object.clone()).into_response(),
        None => not_found(&shared, &id),
    }
}

/// `DELETE /v1/responses/{id}`.
pub(crate) async fn delete(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    if shared.state.delete_response(&id) {
        Json(json!({"id": id, "object": "response", "deleted": true})).into_response()
    } else {
        not_found(&shared, &id)
    }
}

/// `GET /v1/responses/{id}/input_items?limit&order&after&before`: the items used to
/// generate the response, `desc` (newest first) unless `order=asc`, 20 a page unless
/// `limit` (1 to 100) says otherwise.
pub(crate) async fn input_items(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    uri: Uri,
) -> Response {
    let Some(stored) = shared.state.response(&id) else {
        return not_found(&shared, &id);
    };
    match input_items_page(&stored.input, uri.query().unwrap_or_default()) {
        Ok(list) => Json(list).into_response(),
        Err(e) => {
            let request_id = super::request_id(&shared);
            let refused = refusal(400, &e.message, Some(e.param), Value::Null);
            call::error_response(Dialect::Responses, &request_id, refused)
        }
    }
}

fn not_found(shared: &Shared, id: &str) -> Response {
    let e = refusal(
        404,
        &format!("Response with id '{id}' not found."),
        None,
        Value::Null,
    );
    call::error_response(Dialect::Responses, &super::request_id(shared), e)
}

//! The stored responses of OpenAI's Responses API, as the gateway keeps them
//! (`crate::conversations`): `GET /v1/responses/{id}` (the response as a non-streamed
//! call returned it), `GET /v1/responses/{id}/input_items` (OpenAI's cursor-paged list of
//! the items used to generate it, the history before it included) and
//! `DELETE /v1/responses/{id}`. Each answers only the client key that made the response;
//! any other id, another key's included, is OpenAI's 404.

use crate::account::keys::Key;
use crate::conversations::chain::{self, Chain};
use crate::conversations::responses::response_not_found;
use crate::conversations::{Conversations, Kind};
use crate::errors::{ApiError, Category};
use crate::shared::Shared;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;
use switchyard::Dialect;
use switchyard_wire::kept::input_items_page;

/// `GET /v1/responses/{id}`.
pub(crate) async fn get(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    answer(async {
        let (kept, owner) = open(&shared, &headers, &uri)?;
        let turn = kept.get(Kind::Response, &owner, &id).await?;
        let response = turn
            .and_then(|t| t.response)
            .ok_or_else(|| response_not_found(&id))?;
        Ok(Json(response).into_response())
    })
    .await
}

/// `DELETE /v1/responses/{id}`.
pub(crate) async fn delete(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    answer(async {
        let (kept, owner) = open(&shared, &headers, &uri)?;
        if !kept.delete(Kind::Response, &owner, &id).await? {
            return Err(response_not_found(&id));
        }
        shared.books.metrics.kept.deleted(Kind::Response);
        Ok(Json(json!({"id": id, "object": "response", "deleted": true})).into_response())
    })
    .await
}

/// `GET /v1/responses/{id}/input_items?limit&order&after&before`.
pub(crate) async fn input_items(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    answer(async {
        let (kept, owner) = open(&shared, &headers, &uri)?;
        let max = shared.body.max_bytes;
        let Chain::Held(turns, _) = chain::load(kept, Kind::Response, &owner, &id, max).await?
        else {
            return Err(response_not_found(&id));
        };
        // Every item used to generate it: the earlier turns' input and output, then its
        // own input.
        let mut items: Vec<Value> = Vec::new();
        if let Some((last, earlier)) = turns.split_last() {
            for t in earlier {
                items.extend(t.input.iter().chain(&t.output).cloned());
            }
            items.extend(last.input.iter().cloned());
        }
        let query = uri.query().unwrap_or_default();
        let page = input_items_page(&items, query)
            .map_err(|e| ApiError::new(Category::BadRequest, e.message).with_param(e.param))?;
        Ok(Json(page).into_response())
    })
    .await
}

/// The kept conversations and the caller's name in them, or the refusal: a missing or
/// unknown key, or a gateway that keeps none.
fn open<'a>(
    shared: &'a Shared,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<(&'a Conversations, String), ApiError> {
    let key = crate::call::admission::caller(&shared.keys, headers, uri.query())?;
    let kept = shared.books.conversations.as_deref().ok_or_else(|| {
        ApiError::new(
            Category::NotFound,
            "this gateway keeps no responses: it has no store (`store:` or `--data-dir`), or `conversations: off`",
        )
        .with_error_code("response_not_found")
    })?;
    Ok((kept, Key::owner(key.as_deref()).to_string()))
}

async fn answer(work: impl std::future::Future<Output = Result<Response, ApiError>>) -> Response {
    match work.await {
        Ok(response) => response,
        Err(e) => e.into_response_for(Dialect::Responses),
    }
}

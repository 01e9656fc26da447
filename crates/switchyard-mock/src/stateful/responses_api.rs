//! Reading and removing stored responses: `GET /v1/responses/{id}`,
//! `GET /v1/responses/{id}/input_items` (OpenAI's cursor-paged list) and
//! `DELETE /v1/responses/{id}`, each a 404 in OpenAI's shape for an id not held.

use super::responses::refusal;
use crate::call;
use crate::faults::ErrorResponse;
use crate::state::Shared;
use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;
use switchyard_wire::Dialect;

/// The most items one page of `input_items` holds, and how many unless asked.
const MOST_ITEMS: usize = 100;
const DEFAULT_ITEMS: usize = 20;

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
    match page(&stored.input, uri.query().unwrap_or_default()) {
        Ok(list) => Json(list).into_response(),
        Err(e) => {
            let request_id = super::request_id(&shared);
            call::error_response(Dialect::Responses, &request_id, e)
        }
    }
}

/// One page of `items` (oldest first) as the query asks.
fn page(items: &[Value], query: &str) -> Result<Value, ErrorResponse> {
    let mut limit = DEFAULT_ITEMS;
    let mut descending = true;
    let (mut after, mut before) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "limit" => {
                limit = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=MOST_ITEMS).contains(n))
                    .ok_or_else(|| {
                        bad(
                            "limit",
                            &format!("Invalid 'limit': `{value}`; expected an integer from 1 to {MOST_ITEMS}."),
                        )
                    })?
            }
            "order" => {
                descending = match value {
                    "desc" => true,
                    "asc" => false,
                    other => {
                        return Err(bad(
                            "order",
                            &format!("Invalid 'order': `{other}`; expected 'asc' or 'desc'."),
                        ))
                    }
                }
            }
            "after" => after = Some(value),
            "before" => before = Some(value),
            // `include` and anything else change nothing the mock stores.
            _ => {}
        }
    }
    let mut ordered: Vec<&Value> = items.iter().collect();
    if descending {
        ordered.reverse();
    }
    let position = |cursor: &str, param: &str| {
        ordered
            .iter()
            .position(|item| item.get("id").and_then(Value::as_str) == Some(cursor))
            .ok_or_else(|| {
                bad(
                    param,
                    &format!(
                        "Invalid '{param}': no input item with id '{cursor}' in this response."
                    ),
                )
            })
    };
    let start = match after {
        Some(cursor) => position(cursor, "after")? + 1,
        None => 0,
    };
    let end = match before {
        Some(cursor) => position(cursor, "before")?,
        None => ordered.len(),
    };
    let window = ordered.get(start..end.max(start)).unwrap_or_default();
    // With only `before`, the page is the items just before the cursor.
    let data: Vec<&Value> = if before.is_some() && after.is_none() {
        window[window.len().saturating_sub(limit)..].to_vec()
    } else {
        window.iter().take(limit).copied().collect()
    };
    let id_of = |item: Option<&&Value>| item.and_then(|i| i.get("id")).cloned();
    Ok(json!({
        "object": "list",
        "data": data,
        "first_id": id_of(data.first()).unwrap_or(Value::Null),
        "last_id": id_of(data.last()).unwrap_or(Value::Null),
        "has_more": window.len() > data.len(),
    }))
}

fn bad(param: &str, message: &str) -> ErrorResponse {
    refusal(400, message, Some(param), Value::Null)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: usize) -> Vec<Value> {
        (0..n).map(|i| json!({"id": format!("i{i}")})).collect()
    }

    fn ids(list: &Value) -> Vec<&str> {
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn pages_in_either_order_with_cursors() {
        let all = items(5);
        let p = page(&all, "").unwrap();
        assert_eq!(ids(&p), ["i4", "i3", "i2", "i1", "i0"]);
        assert_eq!(
            (p["first_id"].as_str(), p["last_id"].as_str()),
            (Some("i4"), Some("i0"))
        );
        assert_eq!(p["has_more"], false);
        let p = page(&all, "order=asc&limit=2").unwrap();
        assert_eq!(ids(&p), ["i0", "i1"]);
        assert_eq!(p["has_more"], true);
        let p = page(&all, "order=asc&limit=2&after=i1").unwrap();
        assert_eq!(ids(&p), ["i2", "i3"]);
        let p = page(&all, "order=asc&limit=2&before=i3").unwrap();
        assert_eq!(ids(&p), ["i1", "i2"]);
        assert_eq!(p["has_more"], true);
        let p = page(&[], "").unwrap();
        assert_eq!(
            (p["first_id"].clone(), p["has_more"].clone()),
            (Value::Null, json!(false))
        );
    }

    #[test]
    fn bad_queries_say_what_is_accepted() {
        let all = items(2);
        for (query, param) in [
            ("limit=0", "limit"),
            ("limit=101", "limit"),
            ("order=up", "order"),
            ("after=zz", "after"),
        ] {
            let e = page(&all, query).unwrap_err();
            assert_eq!(e.status, 400);
            let body: Value = serde_json::from_slice(&e.body).unwrap();
            assert_eq!(body["error"]["param"], param, "{query}");
        }
    }
}

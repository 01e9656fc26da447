//! The JSON endpoints under `/console/api/`: each reads its parameters (refusing bad ones
//! with 400 naming the parameter), asks the source, and answers JSON that is never cached.

use crate::access::Refusal;
use crate::params::{self, BadParam};
use crate::source::{CallSource, SourceError};
use crate::Console;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Arc;

type Pairs = Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>;

/// An answer of the API: JSON, or an error as `{"error": {type, message, parameter?}}`.
pub(crate) fn json_answer(status: StatusCode, body: &Value) -> Response {
    let mut r = (status, body.to_string()).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

pub(crate) fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    json_answer(
        status,
        &json!({"error": {"type": kind, "message": message}}),
    )
}

fn bad_param(e: BadParam) -> Response {
    json_answer(
        StatusCode::BAD_REQUEST,
        &json!({"error": {"type": "invalid_parameter", "parameter": e.parameter, "message": format!("{}: {}", e.parameter, e.message)}}),
    )
}

fn source_failed(e: SourceError) -> Response {
    error(StatusCode::INTERNAL_SERVER_ERROR, "store_error", &e.0)
}

pub(crate) fn refused(r: Refusal) -> Response {
    let kind = if r.status == StatusCode::UNAUTHORIZED {
        "unauthorized"
    } else {
        "forbidden"
    };
    let mut out = error(r.status, kind, &r.message);
    if r.status == StatusCode::UNAUTHORIZED {
        out.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"switchyard console\""),
        );
    }
    out
}

/// A refusal to answer with (boxed: a response is large beside what succeeds).
type Refused = Box<Response>;

/// What a request that was let in has: the source and its parameters.
type Entered<'a> = (&'a Arc<dyn CallSource>, Vec<(String, String)>);

/// The access check, the source (or why there is none) and the parameters, in that order.
fn enter<'a>(
    console: &'a Console,
    headers: &HeaderMap,
    pairs: Pairs,
) -> Result<Entered<'a>, Refused> {
    console
        .access
        .api(headers)
        .map_err(|r| Box::new(refused(r)))?;
    let source = console.source.as_ref().ok_or_else(|| {
        Box::new(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "no_store",
            "this gateway records no calls, so the console has nothing to show: start it with --data-dir DIR (or `store:` in its config)",
        ))
    })?;
    let Query(pairs) = pairs.map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            &format!("the query string does not read as name=value pairs: {e}"),
        ))
    })?;
    Ok((source, pairs))
}

/// `GET /console/api/calls`.
pub(crate) async fn calls(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    pairs: Pairs,
) -> Response {
    let (source, pairs) = match enter(&console, &headers, pairs) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let query = match params::calls_query(&pairs) {
        Ok(q) => q,
        Err(e) => return bad_param(e),
    };
    let (limit, offset) = (query.limit, query.offset);
    match source.page(query).await {
        Ok(page) => json_answer(
            StatusCode::OK,
            &json!({"calls": page.calls, "total": page.total, "limit": limit, "offset": offset}),
        ),
        Err(e) => source_failed(e),
    }
}

async fn record_of(
    console: &Console,
    headers: &HeaderMap,
    pairs: Pairs,
    id: &str,
) -> Result<(Arc<dyn CallSource>, switchyard::record::CallRecord), Refused> {
    let (source, pairs) = enter(console, headers, pairs)?;
    params::none(&pairs).map_err(|e| Box::new(bad_param(e)))?;
    match source.record(id.to_string()).await {
        Ok(Some(r)) => Ok((source.clone(), r)),
        Ok(None) => Err(Box::new(error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("no call `{id}` in {}: a call is named by its number (or `<replica>-<number>` in a PostgreSQL store), as the calls table lists it", source.describe()),
        ))),
        Err(e) => Err(Box::new(source_failed(e))),
    }
}

/// `GET /console/api/calls/{id}`: the record, the request to send it again, and for a
/// `ReplayExhausted` failure the nearest recorded call's prompt beside its own.
pub(crate) async fn call(
    State(console): State<Arc<Console>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    pairs: Pairs,
) -> Response {
    let (source, record) = match record_of(&console, &headers, pairs, &id).await {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let nearest = match crate::detail::nearest_number(&record) {
        Some(n) => match source.replayed_record(&record, n).await {
            Ok(Some(recorded)) => crate::detail::nearest_diff(&record, &recorded),
            Ok(None) => {
                json!({"number": n, "missing": "the recorded call is not in the replayed run's log"})
            }
            Err(e) => json!({"number": n, "missing": e.0}),
        },
        None => Value::Null,
    };
    json_answer(
        StatusCode::OK,
        &json!({
            "id": id,
            "replay": crate::detail::replay(&record),
            "nearest": nearest,
            "record": record,
        }),
    )
}

/// `GET /console/api/calls/{id}/raw`: the reply's bytes exactly as received.
pub(crate) async fn raw(
    State(console): State<Arc<Console>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    pairs: Pairs,
) -> Response {
    let (_, record) = match record_of(&console, &headers, pairs, &id).await {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let Some(raw) = &record.raw else {
        return error(
            StatusCode::NOT_FOUND,
            "no_raw_bytes",
            &format!("call `{id}` kept no reply bytes (it failed before any came back)"),
        );
    };
    let bytes = match raw.to_bytes() {
        Ok(b) => b,
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "store_error",
                &e.to_string(),
            )
        }
    };
    let kind = match raw {
        switchyard::record::RawBytes::Utf8(_) => "text/plain; charset=utf-8",
        switchyard::record::RawBytes::Base64(_) => "application/octet-stream",
    };
    let mut r = bytes.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `GET /console/api/spend`.
pub(crate) async fn spend(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    pairs: Pairs,
) -> Response {
    let (source, pairs) = match enter(&console, &headers, pairs) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let query = match params::spend_query(&pairs) {
        Ok(q) => q,
        Err(e) => return bad_param(e),
    };
    let (by, bucket) = (query.by, query.bucket);
    match source.spend(query).await {
        Ok(points) => json_answer(
            StatusCode::OK,
            &json!({
                "by": format!("{by:?}").to_lowercase(),
                "bucket": format!("{bucket:?}").to_lowercase(),
                "points": points,
            }),
        ),
        Err(e) => source_failed(e),
    }
}

/// `GET /console/api/summary`.
pub(crate) async fn summary(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    pairs: Pairs,
) -> Response {
    let (source, pairs) = match enter(&console, &headers, pairs) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    if let Err(e) = params::none(&pairs) {
        return bad_param(e);
    }
    match source.summary().await {
        Ok(s) => json_answer(StatusCode::OK, &json!(s)),
        Err(e) => source_failed(e),
    }
}

/// `GET /console/api/budgets`: each gateway key's budget with its spend in the current
/// period, and the run's own `budget:`.
pub(crate) async fn budgets(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    pairs: Pairs,
) -> Response {
    let (source, pairs) = match enter(&console, &headers, pairs) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    if let Err(e) = params::none(&pairs) {
        return bad_param(e);
    }
    let mut keys = Vec::new();
    // Keys of one period share its start, and one query gives every key's spend since
    // then: asked once per start, not once per key (each is a pass over the calls).
    let mut spend_since: Vec<(Option<String>, std::collections::BTreeMap<String, f64>)> =
        Vec::new();
    for b in (console.key_budgets)() {
        let known = spend_since.iter().position(|(since, _)| *since == b.since);
        let at = match known {
            Some(i) => i,
            None => match source.key_spend(b.since.clone()).await {
                Ok(m) => {
                    spend_since.push((b.since.clone(), m));
                    spend_since.len() - 1
                }
                Err(e) => return source_failed(e),
            },
        };
        let spent = spend_since[at].1.get(&b.key).copied().unwrap_or(0.0);
        keys.push(json!({
            "key": b.key,
            "budget_usd": b.budget_usd,
            "period": b.period,
            "since": b.since,
            "spent_usd": spent,
            "left_usd": (b.budget_usd - spent).max(0.0),
        }));
    }
    let run = match source.run_budget().await {
        Ok(r) => r,
        Err(e) => return source_failed(e),
    };
    json_answer(StatusCode::OK, &json!({"keys": keys, "run": run}))
}

/// `GET /console/api/conversations`: a page of the conversation turns the gateway keeps,
/// the newest first; `kept: false` (and why) from a source that keeps none.
pub(crate) async fn conversations(
    State(console): State<Arc<Console>>,
    headers: HeaderMap,
    pairs: Pairs,
) -> Response {
    let (source, pairs) = match enter(&console, &headers, pairs) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let query = match params::kept_query(&pairs) {
        Ok(q) => q,
        Err(e) => return bad_param(e),
    };
    let (limit, offset) = (query.limit, query.offset);
    match source.kept(query).await {
        Ok(Some(page)) => json_answer(
            StatusCode::OK,
            &json!({"kept": true, "turns": page.turns, "total": page.total, "limit": limit, "offset": offset}),
        ),
        Ok(None) => json_answer(
            StatusCode::OK,
            &json!({
                "kept": false, "turns": [], "total": 0, "limit": limit, "offset": offset,
                "message": format!("{} keeps no conversations: a gateway keeps them (Responses with `store`, Anthropic threads) in its data directory's conversations.sqlite or its PostgreSQL store", source.describe()),
            }),
        ),
        Err(e) => source_failed(e),
    }
}

/// `GET /console/api/conversations/{kind}/{id}?key=NAME`: one kept turn, its JSON as
/// kept (redacted when it was kept).
pub(crate) async fn conversation(
    State(console): State<Arc<Console>>,
    Path((kind, id)): Path<(String, String)>,
    headers: HeaderMap,
    pairs: Pairs,
) -> Response {
    let (source, pairs) = match enter(&console, &headers, pairs) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let kind = match params::kept_kind("kind", &kind) {
        Ok(k) => k,
        Err(e) => return bad_param(e),
    };
    let key = match params::kept_key(&pairs) {
        Ok(k) => k,
        Err(e) => return bad_param(e),
    };
    let found = match source.kept_turn(kind, key.clone(), id.clone()).await {
        Ok(found) => found,
        Err(e) => return source_failed(e),
    };
    let Some(kept) = found else {
        let whose = if key.is_empty() {
            "kept without keys".to_string()
        } else {
            format!("of key `{key}`")
        };
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!(
                "no {} `{id}` {whose} is kept in {}: it expired, was deleted, or was never kept (a turn is named by its kind, its key's name and its id, as the conversations list shows them)",
                kind.as_str(),
                source.describe()
            ),
        );
    };
    let turn: Value = match serde_json::from_str(&kept.turn) {
        Ok(v) => v,
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "store_error",
                &format!(
                    "the kept {} `{id}` does not read as JSON: {e}",
                    kind.as_str()
                ),
            )
        }
    };
    let mut body = json!(kept.row);
    body["turn"] = turn;
    json_answer(StatusCode::OK, &body)
}

/// Any other path under `/console/api/`.
pub(crate) async fn unknown(State(console): State<Arc<Console>>, headers: HeaderMap) -> Response {
    if let Err(r) = console.access.api(&headers) {
        return refused(r);
    }
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such console endpoint; there are /console/api/calls, /console/api/calls/{id}, /console/api/calls/{id}/raw, /console/api/spend, /console/api/budgets, /console/api/summary, /console/api/conversations and /console/api/conversations/{kind}/{id}?key=NAME",
    )
}

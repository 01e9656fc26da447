//! A model call's request body, read whole under three bounds: its size
//! (`max_body_bytes`: 413), the time it may take (`listen.body_timeout_secs`: 408, so a
//! stalled or trickled body cannot hold a connection), and how deep its JSON nests
//! (`listen.max_json_depth`: 400), all judged before anything is forwarded.

use crate::errors::{ApiError, Category};
use crate::json_depth::first_too_deep;
use crate::listener_refusals::Reason;
use crate::state::State;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use bytes::Bytes;

/// Reads the body: refused when over the size limit (by its `Content-Length` before
/// reading anything, else as soon as the count passes the limit), when it has not all
/// arrived within the body deadline, or when it nests too deep.
pub(crate) async fn read(
    body: Body,
    headers: &HeaderMap,
    state: &State,
) -> Result<Bytes, ApiError> {
    let limit = state.max_body_bytes;
    let too_large = || {
        ApiError::new(
            Category::TooLarge,
            format!("the request body is larger than the gateway's limit of {limit} bytes"),
        )
    };
    if let Some(len) = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if len > limit as u64 {
            return Err(too_large());
        }
    }
    let deadline = state.body_timeout;
    // A body already in the connection's buffer is read on the first poll, before the
    // timer is ever registered: the deadline costs nothing to a client that sends promptly.
    let bytes = match tokio::time::timeout(deadline, axum::body::to_bytes(body, limit)).await {
        Err(_) => {
            state.metrics.refusals().count(Reason::BodyTimeout);
            // A 408 also closes the connection (the listener adds `connection: close`):
            // the rest of the body may still be on its way.
            let mut e = ApiError::new(
                Category::BadRequest,
                format!(
                    "the request body did not all arrive within the gateway's body deadline of {}; \
                     send the body as soon as its headers (listen.body_timeout_secs sets the deadline)",
                    seconds(deadline)
                ),
            );
            e.status = StatusCode::REQUEST_TIMEOUT;
            return Err(e);
        }
        Ok(Err(e)) => {
            return Err(
                if format!("{e:?}").contains("LengthLimit")
                    || e.to_string().contains("length limit")
                {
                    too_large()
                } else {
                    ApiError::new(
                        Category::BadRequest,
                        format!("could not read the request body: {e}"),
                    )
                },
            )
        }
        Ok(Ok(bytes)) => bytes,
    };
    if let Some(at) = first_too_deep(&bytes, state.max_json_depth) {
        state.metrics.refusals().count(Reason::JsonDepth);
        return Err(ApiError::new(
            Category::BadRequest,
            format!(
                "the request body nests arrays and objects more than {} levels deep (at byte {at}); \
                 the gateway accepts JSON up to that depth (listen.max_json_depth)",
                state.max_json_depth
            ),
        ));
    }
    Ok(bytes)
}

/// `30 s`, `0.25 s`.
pub(crate) fn seconds(d: std::time::Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

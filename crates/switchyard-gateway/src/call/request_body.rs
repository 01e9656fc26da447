//! A model call's request body, read whole under three bounds: its size
//! (`max_body_bytes`: 413), the time it may take (`listen.body_timeout_seconds`: 408, so a
//! stalled or trickled body cannot hold a connection), and how deep its JSON nests
//! (`listen.max_json_depth`: 400), all judged before anything is forwarded.

use crate::errors::{ApiError, Category};
use crate::meter::metrics::Metrics;
use crate::transport::refusals::Reason;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use std::time::Duration;
use switchyard::record::first_too_deep;

/// How much of a body refused as too large is still read and thrown away, and for how
/// long, before the connection closes. Closing a socket with bytes unread makes the kernel
/// answer with a reset, which can reach the client before it has read the 413 (it then sees
/// a broken pipe instead of the reason): a client still sending gets that long to finish,
/// as nginx's lingering close gives it. Bounded, so a refused body costs the gateway little.
const DRAIN_BYTES: u64 = 4 * 1024 * 1024;
const DRAIN_TIME: Duration = Duration::from_secs(2);

/// How large, slow and deep a request body may be.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimits {
    /// The largest body accepted (`listen.max_body_bytes`).
    pub max_bytes: usize,
    /// How long a body may take to arrive (`listen.body_timeout_seconds`).
    pub timeout: Duration,
    /// How deep a body may nest arrays and objects (`listen.max_json_depth`).
    pub max_json_depth: usize,
}

/// Reads the body: refused when over the size limit (by its `Content-Length` before
/// reading anything, else as soon as the count passes the limit), when it has not all
/// arrived within the body deadline, or when it nests too deep.
pub(crate) async fn read(
    body: Body,
    headers: &HeaderMap,
    limits: &BodyLimits,
    metrics: &Metrics,
) -> Result<Bytes, ApiError> {
    let limit = limits.max_bytes;
    let too_large = || {
        ApiError::new(
            Category::TooLarge,
            format!("the request body is larger than the gateway's limit of {limit} bytes"),
        )
    };
    let declared = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(len) = declared {
        if len > limit as u64 {
            // A client waiting for `100 Continue` has sent nothing, and reading would ask
            // it to; one that declared more than the drain takes is not waited for.
            if len <= DRAIN_BYTES && !headers.contains_key("expect") {
                drain_in_background(body);
            }
            return Err(too_large());
        }
    }
    let deadline = limits.timeout;
    // A body already in the connection's buffer is read on the first poll, before the
    // timer is ever registered: the deadline costs nothing to a client that sends promptly.
    let bytes = match tokio::time::timeout(deadline, read_up_to(body, limit)).await {
        Err(_) => {
            metrics.refusals().count(Reason::BodyTimeout);
            // A 408 also closes the connection (the listener adds `connection: close`):
            // the rest of the body may still be on its way.
            let mut e = ApiError::new(
                Category::BadRequest,
                format!(
                    "the request body did not all arrive within the gateway's body deadline of {}; \
                     send the body as soon as its headers (listen.body_timeout_seconds sets the deadline)",
                    seconds(deadline)
                ),
            );
            e.status = StatusCode::REQUEST_TIMEOUT;
            return Err(e);
        }
        Ok(Err(Unread::TooLarge)) => return Err(too_large()),
        Ok(Err(Unread::Failed(e))) => {
            return Err(ApiError::new(
                Category::BadRequest,
                format!("could not read the request body: {e}"),
            ))
        }
        Ok(Ok(bytes)) => bytes,
    };
    if let Some(at) = first_too_deep(&bytes, limits.max_json_depth) {
        metrics.refusals().count(Reason::JsonDepth);
        return Err(ApiError::new(
            Category::BadRequest,
            format!(
                "the request body nests arrays and objects more than {} levels deep (at byte {at}); \
                 the gateway accepts JSON up to that depth (listen.max_json_depth)",
                limits.max_json_depth
            ),
        ));
    }
    Ok(bytes)
}

/// Why a body was not read whole.
enum Unread {
    TooLarge,
    Failed(axum::Error),
}

/// The body's bytes, at most `limit` of them; past that the rest is drained in the
/// background (see [`DRAIN_BYTES`]). A body that comes in one piece is not copied.
async fn read_up_to(mut body: Body, limit: usize) -> Result<Bytes, Unread> {
    let mut pieces: Vec<Bytes> = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(Unread::Failed)?.into_data() else {
            continue; // trailers: nothing a model call reads
        };
        total += data.len();
        if total > limit {
            drain_in_background(body);
            return Err(Unread::TooLarge);
        }
        pieces.push(data);
    }
    Ok(match pieces.len() {
        0 => Bytes::new(),
        1 => pieces.pop().unwrap_or_default(),
        _ => {
            let mut whole = BytesMut::with_capacity(total);
            for piece in pieces {
                whole.extend_from_slice(&piece);
            }
            whole.freeze()
        }
    })
}

/// Reads and discards what is left of a refused body, up to [`DRAIN_BYTES`] and
/// [`DRAIN_TIME`], while the refusal is written; the connection is then closed or kept.
fn drain_in_background(mut body: Body) {
    tokio::spawn(async move {
        let drain = async {
            let mut thrown = 0u64;
            while let Some(Ok(frame)) = body.frame().await {
                thrown += frame.data_ref().map_or(0, |d| d.len() as u64);
                if thrown > DRAIN_BYTES {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
    });
}

/// `30 s`, `0.25 s`.
pub(crate) fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

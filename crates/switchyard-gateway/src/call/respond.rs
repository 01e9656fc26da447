//! A whole reply's response, its record kept in step: the call is closed as the reply
//! goes out, and when the store must have the record first (`durability: answered`, or
//! a fast store at its backlog bound) everything but the reply's last byte is sent at
//! once and the last byte once the record is written. The client cannot read a reply
//! it has not whole, so the wait costs it nothing it could have used, and a gateway
//! killed in between leaves a client without a whole reply rather than an answered call
//! without a record.

use crate::meter::Meter;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;

/// The response for a whole reply (or error) of `status`, closing `meter`'s call.
pub(crate) fn whole(
    status: StatusCode,
    mut headers: HeaderMap,
    body: Bytes,
    meter: &mut Meter,
) -> Response {
    meter.reply_body(&body);
    let written = meter.finish();
    if written.is_some() {
        // Sent in two frames, yet of a known length, as a whole reply is.
        headers.insert("content-length", HeaderValue::from(body.len()));
    }
    let body = match written {
        Some(written) if !body.is_empty() => {
            let last = body.len() - 1;
            let (head, tail) = (body.slice(..last), body.slice(last..));
            let frames = futures::stream::iter([Ok::<Bytes, std::io::Error>(head)]).chain(
                futures::stream::once(async move {
                    let _ = written.await;
                    Ok(tail)
                }),
            );
            Body::from_stream(frames)
        }
        Some(written) => {
            let wait = futures::stream::once(async move {
                let _ = written.await;
                Ok::<Bytes, std::io::Error>(Bytes::new())
            });
            Body::from_stream(wait)
        }
        None => Body::from(body),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// The JSON content type every whole reply of the gateway's own carries.
pub(crate) fn json_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers
}

//! Same dialect on both sides: the body goes up with minimal edits spliced into its bytes
//! ([`edits`]), through the library's own send path (`HttpBackend::send_raw`: the
//! backend's URL, credential and timeouts) under the library's own retry runner
//! (`Llm::retrying`), and the reply's bytes come back as they arrive.
//!
//! The failures issue's rules hold here as on every path: a whole reply is checked at
//! its top level (`shape::check_reply`: `null`, not JSON, cut short, an error object in a
//! 200, no answer, no usage are asked again on the malformed schedule, as a translated
//! call would be), a stream is watched until its output begins (a failure before it is
//! asked again), and a stream that breaks after it ends with the dialect's error event
//! ([`relay`]). A provider's refusal (4xx, 5xx) goes back to the client as the provider
//! wrote it, already in its dialect.

mod edits;
mod pass;
mod relay;
mod scan;
mod watch;

use crate::call::client_model::{self, InStream};
use crate::call::failure::{kept_header, Failure, UpstreamFailure};
use crate::call::respond;
use crate::call::upstream::Target;
use crate::meter::Meter;
use crate::raw::RawBody;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use pass::Pass;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Instant;
use switchyard::backend::http::{
    answers_whole, decode_error, stream_error, RawRequest, RawResponse,
};
use switchyard::internal::redact::Redacted;
use switchyard::Dialect;
use switchyard_wire::codec;

/// What one successful attempt gave.
enum Answer {
    /// A whole reply, checked, with its usage.
    Whole {
        status: u16,
        headers: HeaderMap,
        body: Bytes,
        usage: switchyard::Usage,
        answered: Instant,
        /// What the client gets when it is not `body`: a whole reply to a streamed
        /// request (a server that ignores `stream: true`), as the dialect's stream.
        relayed: Option<Bytes>,
        /// The keys `body` was redacted under as it entered.
        redacted: Redacted,
    },
    /// A stream whose output began (or that ended whole before any): the chunks read so
    /// far, and the rest still to read.
    Stream {
        status: u16,
        headers: HeaderMap,
        opening: Vec<Bytes>,
        /// The chunks read so far, watched and written for the client.
        pass: Box<Pass>,
        rest: Option<RawResponse>,
        answered: Instant,
        /// The keys the chunks were redacted under as they entered.
        redacted: Redacted,
    },
}

/// Forwards a call whose client speaks the backend's dialect.
pub(crate) async fn forward(
    target: &Target,
    raw: &RawBody<'_>,
    bytes: &Bytes,
    stream: bool,
    dialect: Dialect,
    headers: &HeaderMap,
    meter: &mut Meter,
) -> Result<Response, Failure> {
    let edited = edits::edit(target, raw, bytes, stream, dialect);
    let request = RawRequest {
        body: edited.body.clone(),
        stream,
        headers: client_headers(target, dialect, headers),
    };
    meter.set_sent_body(Some(edited.body));
    meter.sent();
    // The status of the last attempt's refusal, when the provider refused with one: only
    // such an answer goes back as the provider wrote it.
    let refusal = AtomicU16::new(0);
    let pass = || Pass::new(dialect, meter.requested(), edited.hide_usage);
    let outcome = target
        .llm
        .retrying(|| attempt(target, &request, dialect, pass, &refusal))
        .await;
    meter.attempts(&outcome.attempts);
    match outcome.result {
        Ok(Answer::Whole {
            status,
            headers,
            body,
            usage,
            answered,
            relayed,
            redacted,
        }) => {
            meter.answered_at(answered);
            // The record keeps the reply as it came; the client reads its own model name.
            meter.draft().keep_redacted(&body, redacted);
            let body = match relayed {
                Some(stream) => InStream::new(dialect, meter.requested()).events(stream),
                None => client_model::whole(dialect, body, meter.requested()),
            };
            let mut headers = headers;
            client_model::name_reference(&mut headers, &target.reference);
            meter.usage(usage);
            meter.outcome(status, None);
            meter.head();
            meter.first_byte();
            meter.complete();
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            Ok(respond::whole(status, headers, body, meter))
        }
        Ok(Answer::Stream {
            status,
            headers,
            opening,
            pass,
            rest,
            answered,
            redacted,
        }) => {
            meter.answered_at(answered);
            meter.head();
            // The record keeps the bytes as they came.
            for chunk in &opening {
                meter.draft().keep_redacted(chunk, redacted);
            }
            let relay = relay::Relay::new(
                rest,
                redacted,
                *pass,
                dialect,
                &target.backend,
                switchyard::backend::http::header_pairs(&headers),
                meter.detach(),
            );
            let body = futures::stream::unfold(relay, |mut r| async move {
                let out = r.next().await?;
                Some((Ok::<Bytes, std::io::Error>(out), r))
            });
            let mut response = Response::new(Body::from_stream(body));
            *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            *response.headers_mut() = headers;
            client_model::name_reference(response.headers_mut(), &target.reference);
            Ok(response)
        }
        Err(e) => Err(Failure::Upstream(UpstreamFailure::in_dialect(
            e,
            refusal.load(Ordering::Relaxed),
        ))),
    }
}

/// The headers of the client's that mean something upstream: `anthropic-version`, and
/// `anthropic-beta` for the first-party Anthropic API only (other Messages servers, and
/// Vertex, may refuse flags they do not know).
fn client_headers(
    target: &Target,
    dialect: Dialect,
    headers: &HeaderMap,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    if dialect == Dialect::Messages {
        if let Some(v) = headers.get("anthropic-version") {
            out.push((HeaderName::from_static("anthropic-version"), v.clone()));
        }
        if target.anthropic_first_party {
            if let Some(v) = headers.get("anthropic-beta") {
                out.push((HeaderName::from_static("anthropic-beta"), v.clone()));
            }
        }
    }
    out
}

/// One attempt: the bytes sent, the answer's head, then either the whole body checked
/// at its top level or the stream read (by a pass from `pass`) until its output begins.
/// Every failure is the library's typed error, for the retry runner to judge.
async fn attempt(
    target: &Target,
    request: &RawRequest,
    dialect: Dialect,
    pass: impl Fn() -> Pass,
    refusal: &AtomicU16,
) -> switchyard::Result<Answer> {
    let sent = target.http.send_raw(request).await;
    let status = match &sent {
        Err(e) => e.provider_details().map_or(0, |d| d.status),
        Ok(_) => 0,
    };
    refusal.store(status, Ordering::Relaxed);
    let mut response = sent?;
    let answered = Instant::now();
    let status = response.status;
    let redacted = response.redacted();
    // Only the headers worth passing back are kept (they hold what an error's details
    // need too: retry hints, request ids).
    let headers = kept(&response.headers);
    let whole_to_stream = request.stream && answers_whole(&response.headers);
    if !request.stream || whole_to_stream {
        let body = response.bytes().await?;
        // The headers as pairs only for an error's details: not built on a success.
        let failed = |e, body: &Bytes| {
            let pairs = switchyard::backend::http::header_pairs(&headers);
            decode_error(&target.backend, &pairs, e, body.clone())
        };
        let usage =
            switchyard_wire::shape::check_reply(dialect, &body).map_err(|e| failed(e, &body))?;
        let relayed = match whole_to_stream {
            // Off the usual path: the reply is decoded whole and written as the stream the
            // client asked for, in its own dialect.
            true => Some(as_stream(
                dialect,
                &codec(dialect)
                    .decode_reply(&body)
                    .map_err(|e| failed(e, &body))?,
            )),
            false => None,
        };
        let mut headers = headers;
        if relayed.is_some() {
            headers.insert(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("text/event-stream"),
            );
            headers.remove(axum::http::header::CONTENT_LENGTH);
        }
        return Ok(Answer::Whole {
            status,
            headers,
            body,
            usage,
            answered,
            relayed,
            redacted,
        });
    }
    let mut pass = pass();
    let mut opening = Vec::new();
    let pairs = || switchyard::backend::http::header_pairs(&headers);
    let received = |opening: &[Bytes]| Bytes::from(opening.concat());
    loop {
        match response.chunk().await {
            Some(Ok(bytes)) => {
                let pushed = pass.push(&bytes);
                opening.push(bytes);
                if let Err(e) = pushed {
                    return Err(decode_error(
                        &target.backend,
                        &pairs(),
                        e,
                        received(&opening),
                    ));
                }
                let watch = &mut pass.watch;
                if !watch.began {
                    if let Some(e) = watch.error.take() {
                        return Err(stream_error(
                            &target.backend,
                            &pairs(),
                            e,
                            received(&opening),
                        ));
                    }
                }
                if watch.began || watch.ended() {
                    break;
                }
            }
            Some(Err(e)) => return Err(e),
            None => {
                // Ended before any output: nothing reached the client, so what it lacks
                // is asked again like a malformed whole reply.
                let problem = match pass.finish() {
                    Err(e) => Some(e),
                    Ok(()) => pass
                        .watch
                        .problem()
                        .map(|p| switchyard_wire::DecodeError::Malformed(format!("stream: {p}"))),
                };
                if let Some(e) = problem {
                    return Err(decode_error(
                        &target.backend,
                        &pairs(),
                        e,
                        received(&opening),
                    ));
                }
                return Ok(Answer::Stream {
                    status,
                    headers,
                    opening,
                    pass: Box::new(pass),
                    rest: None,
                    answered,
                    redacted,
                });
            }
        }
    }
    Ok(Answer::Stream {
        status,
        headers,
        opening,
        pass: Box::new(pass),
        rest: Some(response),
        answered,
        redacted,
    })
}

/// A whole reply as the dialect's stream: its events through the dialect's stream encoder.
fn as_stream(dialect: Dialect, reply: &switchyard::Reply) -> Bytes {
    let mut encoder =
        codec(dialect).stream_encoder(&crate::call::translate::server_context(dialect));
    let mut out = Vec::new();
    for event in switchyard_wire::stream::reply_events(reply, 0) {
        encoder.event(&event, &mut out);
    }
    encoder.finish(&mut out);
    Bytes::from(out)
}

fn kept(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (k, v) in headers {
        if kept_header(k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

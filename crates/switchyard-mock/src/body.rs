//! Response bodies: a reply encoded by the dialect's codec, streamed event by event
//! (honouring per-delta delays), and the ways a body can go wrong on purpose.

use crate::faults;
use axum::body::Body;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use std::io;
use std::time::Duration;
use switchyard_wire::sse::SseParser;
use switchyard_wire::{
    codec, reply_events, ByteStreamDecoder, Dialect, Event, Reply, ServerContext,
};
use tokio::sync::watch;

/// How a streamed body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Every event and the dialect's end marker.
    Normal,
    /// Stops after about half the content, without the end marker; `reset` aborts the
    /// connection instead of ending the body cleanly.
    Cut {
        /// Abort the connection.
        reset: bool,
    },
    /// About half the content, then the dialect's in-stream error for this status.
    Error(u16),
    /// The first content event, then nothing until the server shuts down.
    Hang,
}

/// What a streamed body is made of.
pub(crate) struct StreamPlan<'a> {
    /// The client's dialect.
    pub dialect: Dialect,
    /// The reply to stream.
    pub reply: &'a Reply,
    /// Ids and time stamps for the encoder.
    pub context: &'a ServerContext,
    /// Characters per text delta.
    pub chunk_chars: usize,
    /// Wait before each delta.
    pub delay: Duration,
    /// How it ends.
    pub ending: Ending,
    /// The model the client named (for error events).
    pub model: &'a str,
    /// Gemini without `alt=sse`: a JSON array streamed element by element.
    pub json_array: bool,
}

fn is_content(event: &Event) -> bool {
    matches!(
        event,
        Event::TextDelta { .. }
            | Event::ThinkingDelta { .. }
            | Event::ToolCallStart { .. }
            | Event::ToolCallDelta { .. }
    )
}

fn is_delta(event: &Event) -> bool {
    matches!(
        event,
        Event::TextDelta { .. } | Event::ThinkingDelta { .. } | Event::ToolCallDelta { .. }
    )
}

/// How many content events a client decodes from `chunks`.
fn decoded_content(dialect: Dialect, chunks: &[(Duration, Bytes)]) -> usize {
    let mut decoder = ByteStreamDecoder::new(codec(dialect));
    chunks
        .iter()
        .map(|(_, bytes)| {
            decoder
                .push(bytes)
                .map(|events| events.iter().filter(|e| is_content(e)).count())
                .unwrap_or(0)
        })
        .sum()
}

/// The chunks of a streamed reply, each with the wait before it.
pub(crate) fn stream_chunks(plan: &StreamPlan) -> Vec<(Duration, Bytes)> {
    let events = reply_events(plan.reply, plan.chunk_chars);
    let content = events.iter().filter(|e| is_content(e)).count();
    let keep = match plan.ending {
        Ending::Normal => usize::MAX,
        Ending::Hang => 1,
        Ending::Cut { .. } | Ending::Error(_) => (content / 2).max(1),
    };
    let mut encoder = codec(plan.dialect).stream_encoder(plan.context);
    let mut chunks = Vec::new();
    let mut wait = Duration::ZERO;
    let mut seen = 0;
    for event in &events {
        // Some encoders (Gemini's) hold a delta back until the next event: past `keep`,
        // go on until the client will actually decode the content kept.
        if seen >= keep && decoded_content(plan.dialect, &chunks) >= keep.min(content) {
            break;
        }
        if is_content(event) {
            seen += 1;
        }
        if is_delta(event) {
            wait += plan.delay;
        }
        let mut out = Vec::new();
        encoder.event(event, &mut out);
        if !out.is_empty() {
            chunks.push((std::mem::take(&mut wait), Bytes::from(out)));
        }
    }
    match plan.ending {
        Ending::Normal => {
            let mut out = Vec::new();
            encoder.finish(&mut out);
            if !out.is_empty() {
                chunks.push((wait, Bytes::from(out)));
            }
        }
        Ending::Error(status) => {
            let mut parser = SseParser::new();
            let sent: usize = chunks.iter().map(|(_, b)| parser.push(b).len()).sum();
            let id = plan
                .reply
                .id
                .clone()
                .unwrap_or_else(|| plan.context.fallback_id.clone());
            chunks.push((
                wait,
                Bytes::from(faults::stream_error_event(
                    plan.dialect,
                    status,
                    plan.model,
                    &id,
                    plan.context.created,
                    sent as u64,
                )),
            ));
        }
        Ending::Cut { .. } | Ending::Hang => {}
    }
    if plan.json_array {
        chunks = as_json_array(chunks, plan.ending == Ending::Normal);
    }
    chunks
}

/// Gemini's stream without `alt=sse`: the SSE events' data as elements of one JSON array.
fn as_json_array(chunks: Vec<(Duration, Bytes)>, close: bool) -> Vec<(Duration, Bytes)> {
    let mut parser = SseParser::new();
    let mut first = true;
    let mut out = Vec::new();
    for (wait, bytes) in chunks {
        let mut piece = String::new();
        for event in parser.push(&bytes) {
            piece.push_str(if first { "[" } else { ",\r\n" });
            first = false;
            piece.push_str(&event.data);
        }
        if !piece.is_empty() {
            out.push((wait, Bytes::from(piece)));
        }
    }
    if close {
        out.push((
            Duration::ZERO,
            Bytes::from_static(if first { b"[]" } else { b"]" }),
        ));
    }
    out
}

/// The body for `chunks`, sent one by one with their waits, then the ending's tail.
pub(crate) fn chunked_body(
    chunks: Vec<(Duration, Bytes)>,
    ending: Ending,
    shutdown: watch::Receiver<bool>,
) -> Body {
    let head = stream::iter(chunks).then(|(wait, bytes)| async move {
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Ok::<Bytes, io::Error>(bytes)
    });
    let tail: BoxStream<'static, Result<Bytes, io::Error>> = match ending {
        Ending::Cut { reset: true } => stream::once(async {
            // Let the status line and the data before the cut reach the client first.
            tokio::time::sleep(Duration::from_millis(20)).await;
            Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "switchyard-mock: cut-stream-reset",
            ))
        })
        .boxed(),
        Ending::Hang => stream::once(async move {
            wait_for_shutdown(shutdown).await;
            Err(io::Error::other("switchyard-mock: shutting down"))
        })
        .boxed(),
        _ => stream::empty().boxed(),
    };
    Body::from_stream(head.chain(tail))
}

/// Waits until the server shuts down (or its sender is gone).
pub(crate) async fn wait_for_shutdown(mut shutdown: watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// Removes token usage from a JSON body: top-level `usage` / `usageMetadata`, and the
/// `usage` of a nested `message` (Anthropic `message_start`) or `response` (Responses).
/// Dialects whose encoders always write usage still get a reply without it (`no-usage`).
pub(crate) fn strip_usage_json(body: &[u8]) -> Option<Vec<u8>> {
    let mut value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let obj = value.as_object_mut()?;
    let mut changed = obj.remove("usage").is_some() | obj.remove("usageMetadata").is_some();
    for key in ["message", "response"] {
        if let Some(inner) = obj.get_mut(key).and_then(|v| v.as_object_mut()) {
            changed |= inner.remove("usage").is_some();
        }
    }
    changed.then(|| value.to_string().into_bytes())
}

/// [`strip_usage_json`] on every event of an SSE chunk list.
pub(crate) fn strip_usage_sse(chunks: Vec<(Duration, Bytes)>) -> Vec<(Duration, Bytes)> {
    let mut parser = SseParser::new();
    chunks
        .into_iter()
        .map(|(wait, bytes)| {
            let mut out = Vec::new();
            for event in parser.push(&bytes) {
                let data = strip_usage_json(event.data.as_bytes())
                    .and_then(|d| String::from_utf8(d).ok())
                    .unwrap_or(event.data);
                switchyard_wire::sse::write_event(&mut out, event.event.as_deref(), &data);
            }
            (wait, Bytes::from(out))
        })
        .filter(|(_, b)| !b.is_empty())
        .collect()
}

/// A non-streamed reply's body cut in half (`cut-stream` on a non-streamed call).
pub(crate) fn cut_body(full: &[u8]) -> Vec<(Duration, Bytes)> {
    let half = full.len() / 2;
    vec![(Duration::ZERO, Bytes::copy_from_slice(&full[..half]))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_array_wraps_events() {
        let mut a = Vec::new();
        switchyard_wire::sse::write_event(&mut a, None, "{\"a\":1}");
        let mut b = Vec::new();
        switchyard_wire::sse::write_event(&mut b, None, "{\"b\":2}");
        let out = as_json_array(
            vec![
                (Duration::ZERO, Bytes::from(a)),
                (Duration::ZERO, Bytes::from(b)),
            ],
            true,
        );
        let all: Vec<u8> = out.iter().flat_map(|(_, b)| b.to_vec()).collect();
        let v: serde_json::Value = serde_json::from_slice(&all).unwrap();
        assert_eq!(v, serde_json::json!([{"a":1},{"b":2}]));
        assert_eq!(as_json_array(vec![], true)[0].1, Bytes::from_static(b"[]"));
    }

    #[test]
    fn usage_is_stripped_at_every_level() {
        let out = strip_usage_json(br#"{"a":1,"usage":{"x":1},"message":{"usage":{}}}"#).unwrap();
        assert_eq!(out, br#"{"a":1,"message":{}}"#);
        assert_eq!(strip_usage_json(br#"{"a":1}"#), None);
    }

    #[test]
    fn cut_body_is_half() {
        assert_eq!(cut_body(b"abcdef")[0].1, Bytes::from_static(b"abc"));
    }
}

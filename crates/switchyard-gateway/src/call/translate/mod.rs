//! Different dialects: the client's body is decoded to the canonical request, prepared
//! for the target (see [`crate::call::translate::ids`]), sent by the library's HTTP backend, and the reply
//! or each streamed chunk's events are encoded in the client's dialect as they arrive.

pub mod envelope;
pub mod ids;

use crate::call::client_model;
use crate::call::failure::{Failure, UpstreamFailure};
use crate::call::upstream::Target;
use crate::errors::ApiError;
use crate::meter::Meter;
use crate::meter::SeenSoFar;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use envelope::{StateKey, StreamSealer};
use futures::{FutureExt, StreamExt};
use ids::Restore;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use switchyard::record::ErrorRecord;
use switchyard::{Dialect, Event, ReplyStream};
use switchyard_wire::{codec, ServerContext, StreamEncoder};

/// Translates a call between the client's dialect and the target's.
pub(crate) async fn forward(
    target: &Target,
    bytes: &Bytes,
    stream: bool,
    dialect: Dialect,
    key: &StateKey,
    meter: &mut Meter,
) -> Result<Response, Failure> {
    let decoded = codec(dialect).decode_request(bytes).map_err(|e| {
        ApiError::new(
            crate::errors::Category::BadRequest,
            format!("the request is not a valid {dialect} request: {e}"),
        )
    })?;
    let mut request = decoded.request;
    let client_wants_usage = wants_usage(dialect, &request);
    let opened = envelope::open_request(&mut request, dialect, key);
    if opened.dropped > 0 {
        // Forged, altered, or sealed under another key (a rotated `SWITCHYARD_STATE_KEY`).
        tracing::debug!(
            dropped = opened.dropped,
            "envelopes of opaque state that do not verify were dropped"
        );
    }
    let mut restore = ids::prepare(&mut request, target.dialect);
    let context = server_context(dialect);
    meter.sent();
    if !stream {
        let outcome = target.llm.complete_detailed(request).await;
        meter.set_sent_body(outcome.sent_body.clone());
        meter.attempts(&outcome.attempts);
        let mut reply = outcome
            .result
            .map_err(|e| Failure::Upstream(UpstreamFailure::new(e)))?;
        meter.answered();
        // The bytes as received (a reference count); the record decodes them itself.
        meter.draft().keep(&reply.raw);
        restore.reply(&mut reply);
        envelope::seal_reply(&mut reply, dialect, key);
        // The record decodes the bytes kept above: the upstream's id stays there.
        reply.model = Some(client_model::written(meter.requested()));
        if let Some(u) = reply.usage {
            meter.usage(u);
        }
        let body = codec(dialect).encode_reply(&reply, &context);
        meter.outcome(200, None);
        meter.head();
        meter.first_byte();
        meter.complete();
        let mut headers = crate::call::respond::json_headers();
        client_model::name_reference(&mut headers, &target.reference);
        return Ok(crate::call::respond::whole(
            StatusCode::OK,
            headers,
            Bytes::from(body),
            meter,
        ));
    }
    let outcome = target.llm.stream_detailed(request).await;
    meter.set_sent_body(outcome.sent_body.clone());
    meter.attempts(&outcome.attempts);
    // The record keeps at most its bound of the stream's bytes: no more is held.
    let upstream = outcome
        .result
        .map_err(|e| Failure::Upstream(UpstreamFailure::new(e)))?
        .keeping_raw_at_most(meter.draft().kept.limit);
    meter.answered();
    meter.head();
    let state = Relay {
        upstream: Some(upstream),
        generated: SeenSoFar::default(),
        encoder: codec(dialect).stream_encoder(&context),
        restore: std::mem::take(&mut restore),
        sealer: StreamSealer::new(dialect, key),
        dialect,
        client_wants_usage,
        model: Some(client_model::written(meter.requested())),
        started: false,
        meter: meter.detach(),
        ended: false,
    };
    let body = futures::stream::unfold(state, |mut s| async move {
        let out = s.next().await?;
        Some((Ok::<Bytes, std::io::Error>(out), s))
    });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = StatusCode::OK;
    let h = response.headers_mut();
    h.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    client_model::name_reference(h, &target.reference);
    Ok(response)
}

struct Relay {
    /// Dropped (closing its connection) when the stream is stopped at its reservation.
    upstream: Option<ReplyStream>,
    /// The latest usage and the bytes of output generated, checked against the call's
    /// budget reservation (`budget_stop.rs`).
    generated: SeenSoFar,
    encoder: Box<dyn StreamEncoder>,
    restore: Restore,
    sealer: Option<StreamSealer>,
    dialect: Dialect,
    client_wants_usage: bool,
    /// The model as the client named it: what the stream's start names.
    model: Option<String>,
    /// Whether the stream's start went to the encoder.
    started: bool,
    meter: Meter,
    ended: bool,
}

impl Relay {
    /// The next bytes for the client: `None` once the stream is over. Chunks whose events
    /// encode to nothing are skipped rather than sent empty. The stream's last bytes go
    /// out once the call is recorded, when the store must have the record first.
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if self.ended {
                return None;
            }
            let mut out = Vec::new();
            let upstream = self.upstream.as_mut()?;
            let first = upstream.next().await;
            self.take(first, &mut out);
            // Events already decoded from the same network chunk go out in one write.
            while !self.ended {
                let Some(upstream) = self.upstream.as_mut() else {
                    break;
                };
                match upstream.next().now_or_never() {
                    Some(item) => self.take(item, &mut out),
                    None => break,
                }
            }
            // What goes out, read for the turn kept of the call before it closes.
            self.meter.reply_chunk(&out);
            if self.ended {
                self.meter.first_byte();
                self.note_seen();
                if let Some(written) = self.meter.finish() {
                    let _ = written.await;
                }
                // Over: the upstream goes now (a stream stopped at its reservation closes
                // its connection here, which ends the generation).
                self.upstream = None;
            }
            if !out.is_empty() {
                self.meter.first_byte();
                return Some(Bytes::from(out));
            }
        }
    }

    fn take(&mut self, item: Option<switchyard::Result<Event>>, out: &mut Vec<u8>) {
        match item {
            Some(Ok(event)) => {
                if self.past_reservation(&event, out) {
                    return;
                }
                // Taken out for the loop, so that encoding may borrow the rest of `self`.
                let mut sealer = self.sealer.take();
                for event in self.restore.event(event) {
                    match &mut sealer {
                        Some(sealer) => sealer.event(event, |e| self.encode(e, out)),
                        None => self.encode(event, out),
                    }
                }
                self.sealer = sealer;
            }
            Some(Err(e)) => {
                let draft = self.meter.draft();
                draft.error = Some(ErrorRecord::new(&e));
                // The upstream stream is handed over once its output began: a cut.
                draft.cut = true;
                let error = ApiError::from_upstream(&e);
                self.meter
                    .outcome(error.status.as_u16(), Some(e.kind().as_str().to_string()));
                self.meter.complete();
                self.encoder
                    .event(&Event::Error(error.stream_error(self.dialect)), out);
                self.encoder.finish(out);
                self.ended = true;
            }
            None => {
                if let Some(mut sealer) = self.sealer.take() {
                    sealer.finish(|e| self.encode(e, out));
                }
                self.encoder.finish(out);
                self.meter.complete();
                self.ended = true;
            }
        }
    }

    /// Counts what `event` generated and, once the stream's cost passed what its key's
    /// budget reserved for it (`budget_stop.rs`), ends the stream there with the
    /// dialect's error event instead of `event` (true).
    fn past_reservation(&mut self, event: &Event, out: &mut Vec<u8>) -> bool {
        let g = &mut self.generated;
        match event {
            Event::TextDelta { text, .. } | Event::ThinkingDelta { text, .. } => {
                g.output_bytes += text.len()
            }
            Event::ToolCallStart { name, .. } => g.output_bytes += name.len(),
            Event::ToolCallDelta { arguments, .. } => g.output_bytes += arguments.len(),
            Event::Usage(u) => g.usage = Some(*u),
            _ => return false,
        }
        let Some(passed) = self.meter.over_reservation(self.generated) else {
            return false;
        };
        let error = self.meter.stop_at_reservation(passed, self.generated);
        self.encoder
            .event(&Event::Error(error.stream_error(self.dialect)), out);
        self.encoder.finish(out);
        self.ended = true;
        true
    }

    fn encode(&mut self, event: Event, out: &mut Vec<u8>) {
        if let Event::Usage(u) = &event {
            self.meter.usage(*u);
            if !self.client_wants_usage {
                return;
            }
        }
        let event = self.named(event, out);
        self.encoder.event(&event, out);
    }

    /// `event` with the start naming the client's model rather than the upstream's; a
    /// stream whose upstream said no start gets one before its first event (an error
    /// aside), as every encoder begins at its first event anyway.
    fn named(&mut self, event: Event, out: &mut Vec<u8>) -> Event {
        match event {
            Event::Start { id, .. } => {
                self.started = true;
                Event::Start {
                    id,
                    model: self.model.clone(),
                }
            }
            Event::Error(_) => event,
            event => {
                if !self.started {
                    self.started = true;
                    let start = Event::Start {
                        id: None,
                        model: self.model.clone(),
                    };
                    self.encoder.event(&start, out);
                }
                event
            }
        }
    }

    /// The reply assembled so far and every byte received go to the record; what was
    /// generated is what a client that leaves is billed on.
    fn note_seen(&mut self) {
        let Some(upstream) = &self.upstream else {
            return;
        };
        let mut reply = upstream.reply();
        let received = upstream.raw_received();
        let raw = std::mem::take(&mut reply.raw);
        let output_bytes = reply
            .content
            .iter()
            .map(|p| match p {
                switchyard::Part::Text { text, .. } => text.len(),
                switchyard::Part::Thinking(t) => t.text.len(),
                switchyard::Part::ToolCall(c) => c.name.len() + c.arguments.len(),
                _ => 0,
            })
            .sum();
        self.meter.seen_so_far(SeenSoFar {
            usage: reply.usage,
            output_bytes,
        });
        let draft = self.meter.draft();
        if !raw.is_empty() {
            // Already a copy of its own (`ReplyStream::reply`); kept as far as the
            // record's bound allows, with the count of every byte that came.
            draft.keep_all(raw);
            draft.kept.received = Some(received.max(draft.kept.bytes as u64));
        }
        // A record that kept only the first bytes keeps the reply they carry (decoded
        // from them when it is built), as a passed-through one does: not all of it.
        if draft.kept.truncated().is_none() {
            draft.reply = Some(reply);
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        // The client left (or the stream ended without its record yet): the record gets
        // what came.
        if self.meter.is_open() {
            self.note_seen();
        }
    }
}

/// Whether a streaming client is sent the usage event: a chat client only when it asked
/// (`stream_options.include_usage`), every other dialect always.
pub(crate) fn wants_usage(dialect: Dialect, request: &switchyard::Request) -> bool {
    dialect != Dialect::Chat
        || request
            .passthrough
            .fields_for(Dialect::Chat)
            .and_then(|f| f.get("stream_options"))
            .and_then(|o| o.get("include_usage"))
            .and_then(|v| v.as_bool())
            == Some(true)
}

/// The `created` time and a fallback response id in the client dialect's style.
pub(crate) fn server_context(dialect: Dialect) -> ServerContext {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let prefix = match dialect {
        Dialect::Chat => "chatcmpl-sy",
        Dialect::Responses => "resp_sy",
        Dialect::Messages => "msg_sy",
        Dialect::Gemini => "sy",
    };
    ServerContext {
        created,
        fallback_id: format!("{prefix}{created:x}{n:06x}"),
    }
}
